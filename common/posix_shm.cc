// POSIX shared-memory mappings.
#include "common/posix_shm.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace gemm {
namespace {

absl::Status ErrnoStatus(int err, const std::string& what) {
  const std::string msg = absl::StrCat(what, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(msg);
    case EEXIST:
      return absl::AlreadyExistsError(msg);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(msg);
    case ENOMEM:
    case ENOSPC:
    case EMFILE:
    case ENFILE:
      return absl::ResourceExhaustedError(msg);
    case EINVAL:
    case ENAMETOOLONG:
      return absl::InvalidArgumentError(msg);
    default:
      return absl::InternalError(msg);
  }
}

}  // namespace

absl::Status PosixShm::CheckKey(const std::string& key) {
  if (key.size() < 2 || key.size() > 201 || key[0] != '/' ||
      key.find('/', 1) != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shared-memory key '", key, "' is not '/' followed by 1-200 characters without '/'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<PosixShm>> PosixShm::Create(const std::string& key, int64_t bytes) {
  if (auto s = CheckKey(key); !s.ok()) return s;
  if (bytes < 1) return absl::InvalidArgumentError("shared-memory size must be >= 1 byte");
  const int fd = shm_open(key.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("shm_open(", key, ")"));
  if (ftruncate(fd, bytes) != 0) {
    const int err = errno;
    close(fd);
    shm_unlink(key.c_str());
    return ErrnoStatus(err, absl::StrCat("ftruncate(", key, ", ", bytes, ")"));
  }
  void* map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  close(fd);
  if (map == MAP_FAILED) {
    shm_unlink(key.c_str());
    return ErrnoStatus(err, absl::StrCat("mmap(", key, ")"));
  }
  return std::unique_ptr<PosixShm>(
      new PosixShm(key, map, bytes, static_cast<char*>(map), bytes, /*owner=*/true));
}

absl::StatusOr<std::unique_ptr<PosixShm>> PosixShm::Open(const std::string& key, int64_t offset,
                                                         int64_t bytes) {
  if (auto s = CheckKey(key); !s.ok()) return s;
  if (offset < 0 || bytes < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shared-memory range: offset must be >= 0 and byte_size >= 1, got offset=", offset,
        " byte_size=", bytes));
  }
  const int fd = shm_open(key.c_str(), O_RDWR, 0);
  if (fd < 0) {
    return ErrnoStatus(errno,
                       absl::StrCat("shm_open(", key, ") (the object must exist on this host)"));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return ErrnoStatus(err, absl::StrCat("fstat(", key, ")"));
  }
  if (offset > st.st_size || bytes > st.st_size - offset) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat("shared-memory object ", key, " has ",
                                                   st.st_size, " bytes; offset ", offset,
                                                   " + byte_size ", bytes, " is past its end"));
  }
  const int64_t page = sysconf(_SC_PAGESIZE);
  const int64_t base = offset / page * page;
  const size_t map_bytes = static_cast<size_t>(offset - base + bytes);
  void* map = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, base);
  const int err = errno;
  close(fd);
  if (map == MAP_FAILED) return ErrnoStatus(err, absl::StrCat("mmap(", key, ")"));
  return std::unique_ptr<PosixShm>(new PosixShm(key, map, map_bytes,
                                                static_cast<char*>(map) + (offset - base), bytes,
                                                /*owner=*/false));
}

PosixShm::~PosixShm() {
  munmap(map_, map_bytes_);
  if (owner_) shm_unlink(key_.c_str());
}

}  // namespace gemm
