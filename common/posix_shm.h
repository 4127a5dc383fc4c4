// A mapped byte range of a POSIX shared-memory object (shm_open + mmap), unmapped when destroyed.
// Clients create objects to pass operands by reference; the server maps the ranges they register.
// The object's owner can shrink it under the mapping: touch the bytes with common/guarded_copy.h,
// and ask Backed() before use.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gemm {

class PosixShm {
 public:
  // Creates a new object `key` of `bytes` bytes (fails if it exists) and maps all of it read-write.
  // The object is unlinked when this mapping is destroyed.
  static absl::StatusOr<std::unique_ptr<PosixShm>> Create(const std::string& key, int64_t bytes);

  // Maps [offset, offset + bytes) of the existing object `key` read-write. The object must be a
  // regular shared-memory object (not a symbolic link, directory or device) owned by this
  // process's effective user, or else shared on purpose: readable and writable by its group or
  // by everyone (a privileged server does not map another user's private object). NOT_FOUND when
  // there is no such object, INVALID_ARGUMENT for a bad key, a range not inside the object or an
  // object of the wrong kind, PERMISSION_DENIED for one it may not map. Never INTERNAL for
  // anything a client did.
  static absl::StatusOr<std::unique_ptr<PosixShm>> Open(const std::string& key, int64_t offset,
                                                        int64_t bytes);

  // OK when `key` is a valid object name: "/" followed by 1 to NAME_MAX (255) bytes, none of them
  // "/" or NUL, and not "." or "..". INVALID_ARGUMENT otherwise (quoting at most 64 bytes of it).
  static absl::Status CheckKey(const std::string& key);

  ~PosixShm();
  PosixShm(const PosixShm&) = delete;
  PosixShm& operator=(const PosixShm&) = delete;

  // First byte of the range.
  char* data() const { return data_; }
  // Bytes in the range.
  int64_t size() const { return size_; }
  const std::string& key() const { return key_; }
  // The whole mapping (page-aligned; contains [data(), data() + size())).
  void* map_base() const { return map_; }
  size_t map_bytes() const { return map_bytes_; }
  // Whether the object still backs every page of the range: false once its owner has shrunk it
  // so that touching the range's end would fault (SIGBUS). Reads the range's last byte under
  // RunGuarded(). Thread-safe.
  bool Backed() const;

 private:
  PosixShm(std::string key, void* map, size_t map_bytes, char* data, int64_t size, bool owner)
      : key_(std::move(key)),
        map_(map),
        map_bytes_(map_bytes),
        data_(data),
        size_(size),
        owner_(owner) {}

  std::string key_;
  void* map_;
  size_t map_bytes_;
  char* data_;
  int64_t size_;
  bool owner_;  // created it: unlink on destruction
};

}  // namespace gemm
