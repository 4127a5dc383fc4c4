// A caller table read from a file and read again when the file changes (a rotated Kubernetes
// Secret, an edited tokens file), checked at most once per interval. A file that no longer
// parses keeps the table in force and logs why. Thread-safe.
#pragma once

#include <sys/stat.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/grpc/auth_table.h"

namespace gemm::service {

class WatchedCallerTable {
 public:
  // Reads `path` (INVALID_ARGUMENT naming the path and line, NOT_FOUND when it cannot be read).
  // `check_interval` bounds how often Current() looks at the file again.
  static absl::StatusOr<std::unique_ptr<WatchedCallerTable>> Create(std::string path,
                                                                    IdentityKind kind,
                                                                    absl::Duration check_interval);

  // The table in force, first read again when the file changed since the last look.
  std::shared_ptr<const CallerTable> Current();

 private:
  // What tells one version of the file from the next.
  struct Version {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    int64_t mtime_ns = 0;
    bool operator==(const Version&) const = default;
  };
  WatchedCallerTable(std::string path, IdentityKind kind, absl::Duration check_interval)
      : path_(std::move(path)), kind_(kind), check_interval_(check_interval) {}
  // Reads and parses the file, noting its version.
  absl::Status LoadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const IdentityKind kind_;
  const absl::Duration check_interval_;
  absl::Mutex mu_;
  absl::Time last_check_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  Version version_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const CallerTable> table_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gemm::service
