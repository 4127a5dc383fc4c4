// Weight repository: discovery, change detection and loading into the registry.
#include "server/core/weight_repository.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <future>
#include <system_error>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "server/core/limits.h"

namespace gemm::core {
namespace {

bool IsWeightFile(const std::filesystem::path& p) {
  const std::string name = p.filename().string();
  return !absl::StartsWith(name, ".") &&
         (absl::EndsWith(name, ".safetensors") || absl::EndsWith(name, ".npy"));
}

// An open file descriptor, closed on destruction.
class FileHandle {
 public:
  explicit FileHandle(const std::string& path) : fd_(open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ >= 0) (void)posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  }
  ~FileHandle() {
    if (fd_ >= 0) close(fd_);
  }
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;
  int fd() const { return fd_; }

  // Reads exactly `n` bytes at `offset` into `dst`.
  absl::Status ReadAt(char* dst, int64_t offset, int64_t n) const {
    while (n > 0) {
      const ssize_t got = pread(fd_, dst, static_cast<size_t>(n), static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        return absl::DataLossError(got == 0 ? std::string("the file ended early")
                                            : absl::StrCat("read failed: ", std::strerror(errno)));
      }
      dst += got;
      offset += got;
      n -= got;
    }
    return absl::OkStatus();
  }

 private:
  int fd_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<WeightRepository>> WeightRepository::Create(Options options,
                                                                           MatrixRegistry* registry,
                                                                           int64_t max_dim) {
  if (options.paths.empty()) return absl::InvalidArgumentError("--weights: no path given");
  if (options.poll_interval < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--weights_poll_s: must be >= 0");
  }
  if (options.chunk_bytes < 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("weights chunk size: must be >= 4096 bytes, got ", options.chunk_bytes));
  }
  options.chunk_bytes -= options.chunk_bytes % 4;  // whole elements of every dtype
  return std::unique_ptr<WeightRepository>(
      new WeightRepository(std::move(options), registry, max_dim));
}

std::vector<std::string> WeightRepository::Discover(ScanReport& report) const {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const std::string& root : options_.paths) {
    std::error_code ec;
    if (fs::is_regular_file(root, ec)) {
      files.push_back(root);
      continue;
    }
    if (!fs::is_directory(root, ec)) {
      report.errors.push_back(absl::StrCat(root, ": no such file or folder (--weights)"));
      continue;
    }
    // NOTE: hidden entries are skipped: Kubernetes volumes keep their real files in "..data"
    // folders next to links of the same names, which would load every tensor twice.
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (absl::StartsWith(name, ".")) {
        if (it->is_directory(ec)) it.disable_recursion_pending();
        continue;
      }
      if (IsWeightFile(it->path()) && it->is_regular_file(ec)) files.push_back(it->path());
    }
    if (ec) report.errors.push_back(absl::StrCat(root, ": ", ec.message()));
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

absl::StatusOr<WeightRepository::Loaded> WeightRepository::LoadTensor(const WeightTensor& t) {
  const std::shared_ptr<const ResidentMatrix> before = registry_->Lookup(t.name).value_or(nullptr);
  auto reg =
      registry_->Begin({.name = t.name, .rows = t.rows, .cols = t.cols, .layout = options_.layout},
                       max_dim_, {.handle = t.name, .replace = true, .repository = true});
  if (!reg.ok()) return reg.status();
  const FileHandle file(t.path);
  if (file.fd() < 0) return absl::NotFoundError(absl::StrCat("cannot open: ", strerror(errno)));
  const int64_t total = t.file_bytes();
  const int64_t elem = WeightDTypeBytes(t.dtype);
  const int64_t chunk = std::min(options_.chunk_bytes, total);
  std::string buffers[2] = {std::string(chunk, '\0'), std::string(chunk, '\0')};
  std::string bf16(t.dtype == WeightDType::kBF16 ? 0 : chunk / elem * 2, '\0');
  // NOTE: the read of the next chunk runs while this one is converted and uploaded; `pending`
  // is declared after the buffers, so it is waited for before they go.
  auto read = [&file, &t](char* dst, int64_t at, int64_t n) {
    return file.ReadAt(dst, t.offset + at, n);
  };
  std::future<absl::Status> pending =
      std::async(std::launch::async, read, buffers[0].data(), 0, chunk);
  for (int64_t done = 0, i = 0; done < total; ++i) {
    const int64_t n = std::min(chunk, total - done);
    if (absl::Status s = pending.get(); !s.ok()) return s;
    if (done + n < total) {
      pending = std::async(std::launch::async, read, buffers[(i + 1) % 2].data(), done + n,
                           std::min(chunk, total - done - n));
    }
    const char* data = buffers[i % 2].data();
    absl::string_view out(data, n);
    if (t.dtype != WeightDType::kBF16) {
      ConvertToBf16(t.dtype, data, n / elem, bf16.data());
      out = absl::string_view(bf16.data(), n / elem * 2);
    }
    if (absl::Status s = (*reg)->Append(done / elem * 2, out); !s.ok()) return s;
    done += n;
  }
  auto m = (*reg)->Finish();
  if (!m.ok()) return m.status();
  if (*m == before) return Loaded::kUnchanged;
  return before == nullptr ? Loaded::kAdded : Loaded::kReplaced;
}

void WeightRepository::LoadFile(const std::string& path, FileState& state, NameOwners& owners,
                                ScanReport& report) {
  auto index = IndexWeightFile(path, options_.strict);
  if (!index.ok()) {
    report.errors.push_back(std::string(index.status().message()));
    ++report.stats.failed;
    return;  // its tensors loaded before stay
  }
  for (std::string& line : index->skipped) report.changes.push_back(std::move(line));
  report.stats.skipped += static_cast<int64_t>(index->skipped.size());
  std::vector<std::string> names;
  bool failed = false;
  for (const WeightTensor& t : index->tensors) {
    auto [owner, fresh] = owners.try_emplace(t.name, path);
    absl::StatusOr<Loaded> loaded =
        fresh || owner->second == path
            ? LoadTensor(t)
            : absl::AlreadyExistsError(absl::StrCat("the name comes from ", owner->second, " too"));
    if (!loaded.ok()) {
      report.errors.push_back(
          absl::StrCat(path, ": tensor '", t.name, "': ", loaded.status().message()));
      ++report.stats.failed;
      failed = true;
      // The copy loaded before (if any) stays.
      if (std::find(state.names.begin(), state.names.end(), t.name) != state.names.end()) {
        names.push_back(t.name);
      }
      continue;
    }
    names.push_back(t.name);
    report.stats.bytes_read += t.file_bytes();
    if (*loaded == Loaded::kUnchanged) continue;
    const bool replaced = *loaded == Loaded::kReplaced;
    ++(replaced ? report.stats.replaced : report.stats.added);
    report.changes.push_back(absl::StrCat(replaced ? "replaced " : "added ", t.name));
  }
  state.names = std::move(names);
  if (failed) state.mtime_ns = -1;  // retried by the next scan
}

void WeightRepository::WaitForCopies(const absl::flat_hash_map<std::string, FileState>& files,
                                     ScanReport& report) const {
  for (const auto& [path, state] : files) {
    for (const std::string& name : state.names) {
      auto m = registry_->Lookup(name);
      if (!m.ok()) continue;
      if (absl::Status s = (*m)->WaitReady(); !s.ok()) {
        report.errors.push_back(absl::StrCat(path, ": tensor '", name, "': ", s.message()));
      }
    }
  }
}

WeightRepository::ScanReport WeightRepository::Scan() {
  absl::MutexLock lock(&mu_);
  const absl::Time start = absl::Now();
  ScanReport report;
  const std::vector<std::string> paths = Discover(report);
  const bool complete = report.errors.empty();  // every --weights path was there
  NameOwners owners;                            // the files still there keep their names
  for (const std::string& path : paths) {
    if (auto it = files_.find(path); it != files_.end()) {
      for (const std::string& name : it->second.names) owners.try_emplace(name, path);
    }
  }
  absl::flat_hash_map<std::string, FileState> next;
  for (const std::string& path : paths) {
    FileState& state = next[path];
    if (auto it = files_.find(path); it != files_.end()) state = it->second;
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
      report.errors.push_back(absl::StrCat(path, ": ", std::strerror(errno)));
      continue;
    }
    const int64_t mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
    if (state.size == st.st_size && state.mtime_ns == mtime_ns && state.inode == st.st_ino) {
      continue;  // unchanged
    }
    state.size = st.st_size;
    state.mtime_ns = mtime_ns;
    state.inode = st.st_ino;
    LoadFile(path, state, owners, report);
  }
  WaitForCopies(next, report);
  // A folder that vanished for a moment (an unmounted volume) removes nothing.
  absl::flat_hash_set<std::string> kept;
  for (const auto& [path, state] : next) kept.insert(state.names.begin(), state.names.end());
  for (const auto& [path, state] : complete ? files_ : decltype(files_){}) {
    for (const std::string& name : state.names) {
      if (kept.contains(name) || !registry_->Remove(name).ok()) continue;
      ++report.stats.removed;
      report.changes.push_back(absl::StrCat("removed ", name));
    }
  }
  if (!complete) {
    for (auto& [path, state] : files_) next.try_emplace(path, std::move(state));
  }
  files_ = std::move(next);
  for (const auto& [path, state] : files_) report.stats.tensors += state.names.size();
  report.stats.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (options_.metrics != nullptr) options_.metrics->RecordWeightsScan(report.stats);
  return report;
}

}  // namespace gemm::core

namespace gemm::core {

bool WeightRepository::ScanAndLog() {
  const ScanReport r = Scan();
  for (const std::string& change : r.changes) GEMM_LOG(INFO) << "weights: " << change;
  for (const std::string& error : r.errors) GEMM_LOG(ERROR) << "weights: " << error;
  const WeightsScanStats& s = r.stats;
  GEMM_LOG(INFO) << "weights: " << s.tensors << " tensors; " << s.added << " added, " << s.replaced
                 << " replaced, " << s.removed << " removed, " << s.skipped << " skipped, "
                 << s.failed << " failed; read " << FormatBytes(s.bytes_read) << " in "
                 << absl::StrFormat("%.3f s", s.seconds)
                 << (s.bytes_read > 0 && s.seconds > 0
                         ? absl::StrFormat(" (%.2f GB/s)", s.bytes_read / s.seconds / 1e9)
                         : std::string());
  return r.errors.empty();
}

}  // namespace gemm::core
