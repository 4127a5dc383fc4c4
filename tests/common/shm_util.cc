// Shared-memory test helpers (see shm_util.h).
#include "tests/common/shm_util.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace gemm::testing {

absl::StatusOr<std::unique_ptr<PosixShm>> CreateTestShm(const std::string& tag, int64_t bytes) {
  static std::atomic<int> next{0};
  return PosixShm::Create(absl::StrCat("/gemm_", tag, "_", getpid(), "_", next++), bytes);
}

absl::Status ResizeShm(const std::string& key, int64_t bytes) {
  const int fd = shm_open(key.c_str(), O_RDWR, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("shm_open(", key, "): ", strerror(errno)));
  const int rc = ftruncate(fd, bytes);
  const int err = errno;
  close(fd);
  if (rc != 0) return absl::InternalError(absl::StrCat("ftruncate(", key, "): ", strerror(err)));
  return absl::OkStatus();
}

}  // namespace gemm::testing
