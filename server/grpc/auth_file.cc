// Reading and re-reading a caller table file.
#include "server/grpc/auth_file.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace gemm::service {

absl::StatusOr<std::unique_ptr<WatchedCallerTable>> WatchedCallerTable::Create(
    std::string path, IdentityKind kind, absl::Duration check_interval) {
  std::unique_ptr<WatchedCallerTable> t(
      new WatchedCallerTable(std::move(path), kind, check_interval));
  absl::MutexLock lock(&t->mu_);
  if (absl::Status s = t->LoadLocked(); !s.ok()) return s;
  t->last_check_ = absl::Now();
  return t;
}

absl::Status WatchedCallerTable::LoadLocked() {
  struct stat st;
  if (stat(path_.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(path_, ": cannot be read"));
  }
  const Version version{.dev = st.st_dev,
                        .ino = st.st_ino,
                        .size = st.st_size,
                        .mtime_ns = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec};
  if (table_ != nullptr && version == version_) return absl::OkStatus();
  std::ifstream in(path_);
  if (!in) return absl::NotFoundError(absl::StrCat(path_, ": cannot be read"));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<CallerTable> table = ParseCallerTable(text.str(), path_, kind_);
  if (!table.ok()) return table.status();
  const bool reloaded = table_ != nullptr;
  table_ = std::make_shared<const CallerTable>(std::move(*table));
  version_ = version;
  if (reloaded) GEMM_LOG(INFO) << path_ << ": read again (" << table_->size() << " callers)";
  return absl::OkStatus();
}

std::shared_ptr<const CallerTable> WatchedCallerTable::Current() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = absl::Now();
  if (now - last_check_ >= check_interval_) {
    last_check_ = now;
    if (absl::Status s = LoadLocked(); !s.ok()) {
      GEMM_LOG(ERROR) << s << "; keeping the " << table_->size() << " callers read before";
    }
  }
  return table_;
}

}  // namespace gemm::service
