// POSIX shared-memory mappings.
#include "common/posix_shm.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/guarded_copy.h"

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
    case EISDIR:
    case ENOTDIR:
    case ENXIO:
    case ENODEV:
    case ETXTBSY:
    case EOVERFLOW:
      return absl::InvalidArgumentError(msg);
    default:
      return absl::InternalError(msg);
  }
}

// `key` as it may appear in a message: C-escaped, at most 64 bytes of it.
std::string Quoted(const std::string& key) {
  constexpr size_t kMax = 64;
  return absl::StrCat("'", absl::CHexEscape(key.substr(0, kMax)), "'",
                      key.size() > kMax ? absl::StrCat(" (", key.size(), " bytes)") : "");
}

// OK when the object behind `fd` (named `key`) is one this process may map for a client: a
// regular shared-memory object, owned by this process's effective user or shared on purpose.
absl::Status CheckObject(int fd, const std::string& key, struct stat* st) {
  if (fstat(fd, st) != 0) return ErrnoStatus(errno, absl::StrCat("fstat(", Quoted(key), ")"));
  if (!S_ISREG(st->st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(Quoted(key), " is not a shared-memory object (not a regular file)"));
  }
  constexpr mode_t kGroupRw = S_IRGRP | S_IWGRP, kOtherRw = S_IROTH | S_IWOTH;
  if (st->st_uid != geteuid() && (st->st_mode & kGroupRw) != kGroupRw &&
      (st->st_mode & kOtherRw) != kOtherRw) {
    return absl::PermissionDeniedError(
        absl::StrCat(Quoted(key), " belongs to user ", st->st_uid, ", not to the server's user ",
                     geteuid(), ", and is not shared with its group or with everyone (mode 0",
                     (st->st_mode >> 6) & 7, (st->st_mode >> 3) & 7, st->st_mode & 7, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status PosixShm::CheckKey(const std::string& key) {
  const std::string name = key.empty() ? key : key.substr(1);
  if (key.empty() || key[0] != '/' || name.empty() || name.size() > NAME_MAX ||
      name.find_first_of(std::string("/\0", 2)) != std::string::npos || name == "." ||
      name == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat("shared-memory key ", Quoted(key), " is not '/' followed by 1-", NAME_MAX,
                     " bytes without '/' or NUL (and not '.' or '..')"));
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
  // NOTE: O_NOFOLLOW: a symbolic link is refused, not followed to whatever it names; O_NOCTTY
  // and O_NONBLOCK: opening a special file (refused below) has no side effect and never waits.
  const int fd = shm_open(key.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0);
  if (fd < 0 && errno == ELOOP) {
    return absl::InvalidArgumentError(
        absl::StrCat(Quoted(key), " is a symbolic link; register the object itself"));
  }
  if (fd < 0) {
    return ErrnoStatus(
        errno, absl::StrCat("shm_open(", Quoted(key), ") (the object must exist on this host)"));
  }
  struct stat st {};
  if (absl::Status s = CheckObject(fd, key, &st); !s.ok()) {
    close(fd);
    return s;
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

bool PosixShm::Backed() const {
  const volatile char* last = data_ + size_ - 1;
  return RunGuarded([last] { (void)*last; });
}

PosixShm::~PosixShm() {
  munmap(map_, map_bytes_);
  if (owner_) shm_unlink(key_.c_str());
}

}  // namespace gemm
