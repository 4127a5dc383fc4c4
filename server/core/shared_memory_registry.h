// Registry of client shared-memory regions (RegisterSharedMemory): name -> mapped byte range of a
// POSIX shared-memory object, page-locked by the backend where it can, so operands and outputs
// travel by reference instead of inside gRPC messages. Requests hold their regions (shared_ptr)
// so an unregistered region stays mapped until they finish. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "common/posix_shm.h"
#include "server/core/backend.h"

namespace gemm::core {

// One registered region. Unpins and unmaps when the last holder drops it.
class SharedMemoryRegion {
 public:
  struct Desc {
    std::string name;
    std::string key;  // shm_open name
    int64_t offset = 0;
    int64_t byte_size = 0;
  };
  SharedMemoryRegion(Desc desc, std::unique_ptr<PosixShm> map, Backend* backend, bool pinned);
  ~SharedMemoryRegion();

  const Desc& desc() const { return desc_; }
  // The mapped bytes (byte_size of them).
  char* data() const { return map_->data(); }
  // The backend page-locked the range.
  bool pinned() const { return pinned_; }

 private:
  Desc desc_;
  std::unique_ptr<PosixShm> map_;
  Backend* backend_;
  bool pinned_;
};

// A byte range of a registered region as a request names it.
struct SharedMemoryRef {
  std::string region;
  int64_t offset = 0;
  int64_t byte_size = 0;
};

class SharedMemoryRegistry {
 public:
  // `backend` pins and unpins ranges and must outlive every region. `max_bytes` caps the sum of
  // the registered ranges; 0 turns registration off. Only objects whose names start with
  // `key_prefix` may be registered.
  SharedMemoryRegistry(Backend* backend, int64_t max_bytes, std::string key_prefix);

  // Maps and pins `desc`'s range. INVALID_ARGUMENT (bad name/key/range), PERMISSION_DENIED (key
  // outside the prefix), ALREADY_EXISTS (name taken), NOT_FOUND (no such object on this host),
  // RESOURCE_EXHAUSTED (over the cap), FAILED_PRECONDITION (registration turned off).
  absl::StatusOr<std::shared_ptr<const SharedMemoryRegion>> Register(SharedMemoryRegion::Desc desc);

  // Forgets `name` (NOT_FOUND if unknown); requests holding it finish first.
  absl::Status Unregister(const std::string& name);

  // The bytes `ref` names, checked against its region (`field` prefixes error messages: NOT_FOUND
  // for an unknown region, INVALID_ARGUMENT for a bad range), and whether they are page-locked.
  // Appends the region to `keep`, which the request holds until it is destroyed.
  struct Resolved {
    absl::Span<char> bytes;
    bool pinned = false;
  };
  absl::StatusOr<Resolved> Resolve(const std::string& field, const SharedMemoryRef& ref,
                                   std::vector<std::shared_ptr<const void>>* keep) const;

  struct Entry {
    std::shared_ptr<const SharedMemoryRegion> region;
    int64_t in_flight = 0;  // requests holding it now
  };
  // All regions, ordered by name.
  std::vector<Entry> List() const;

  // Bytes of all registered ranges.
  int64_t bytes() const;

 private:
  Backend* const backend_;
  const int64_t max_bytes_;
  const std::string key_prefix_;
  mutable absl::Mutex mu_;
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, std::shared_ptr<const SharedMemoryRegion>> regions_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace gemm::core
