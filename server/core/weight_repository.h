// The weight repository: files and folders of .safetensors and .npy files whose 2-D tensors the
// server keeps as resident matrices named "<file stem>/<tensor>" (safetensors) or "<file stem>"
// (.npy). Scan() brings the registry in line with the files: it loads new tensors, replaces those
// of changed files once their upload finished (requests in flight finish on the old copy) and
// removes those whose file or tensor is gone (their storage is freed once idle). Files are read
// in large sequential chunks, the next chunk read while the last one is converted and uploaded.
// Thread-safe (scans run one at a time).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/core/matrix_registry.h"
#include "server/core/metrics.h"
#include "server/core/types.h"
#include "server/core/weight_repository_format.h"

namespace gemm::core {

class WeightRepository {
 public:
  struct Options {
    // Files or folders (searched recursively) of .safetensors and .npy files.
    std::vector<std::string> paths;
    // How every tensor is used as B: kNK (default) is PyTorch's Linear weight [out, in] = [N, K].
    BLayout layout = BLayout::kNK;
    // Tensors of another dtype or not 2-D are an error instead of a skip. Default false.
    bool strict = false;
    // Bytes read per chunk (two chunks are in memory at a time). Default 16 MiB.
    int64_t chunk_bytes = int64_t{16} << 20;
    // How often WeightRepositoryReloader rescans (zero: only when asked, e.g. on SIGHUP).
    // Default zero.
    absl::Duration poll_interval = absl::ZeroDuration();
    // Where scans are reported (may be null).
    Metrics* metrics = nullptr;
  };

  // What a scan did, and the errors it met (one line each: file, tensor, what).
  struct ScanReport {
    WeightsScanStats stats;
    std::vector<std::string> errors;
    std::vector<std::string> changes;  // "added x", "replaced x", "removed x", "skipped: ..."
  };

  // `registry` must outlive the repository; `max_dim` bounds each tensor's rows and cols.
  // INVALID_ARGUMENT for options that make no sense.
  static absl::StatusOr<std::unique_ptr<WeightRepository>> Create(Options options,
                                                                  MatrixRegistry* registry,
                                                                  int64_t max_dim);

  // Scans the paths and loads, replaces and removes tensors as described above. A file that
  // cannot be indexed or a tensor that cannot be loaded is an error in the report; the tensors it
  // held before stay. Blocks for the reads and uploads.
  ScanReport Scan();

  // Scan(), logging what changed, each error and the load time and rate. Returns whether the
  // scan met no error.
  bool ScanAndLog();

  const Options& options() const { return options_; }

 private:
  // What the repository knows of one file.
  struct FileState {
    int64_t size = -1;
    int64_t mtime_ns = -1;
    uint64_t inode = 0;
    std::vector<std::string> names;  // tensors loaded from it
  };

  WeightRepository(Options options, MatrixRegistry* registry, int64_t max_dim)
      : options_(std::move(options)), registry_(registry), max_dim_(max_dim) {}
  // The weight files under the paths, sorted; missing paths are errors in `report`.
  std::vector<std::string> Discover(ScanReport& report) const;
  // Waits until the backend's copy of every tensor of `files` is in place (so that a scan's end,
  // and the server's start, mean loaded); copy errors go to `report`.
  void WaitForCopies(const absl::flat_hash_map<std::string, FileState>& files,
                     ScanReport& report) const;
  // Which file each tensor name comes from.
  using NameOwners = absl::flat_hash_map<std::string, std::string>;
  // Indexes and loads `path` (changed or new) into `state`; a tensor whose name another file in
  // `owners` provides is an error. Errors go to `report`.
  void LoadFile(const std::string& path, FileState& state, NameOwners& owners, ScanReport& report);
  // What loading a tensor did to the registry.
  enum class Loaded { kAdded, kReplaced, kUnchanged };
  // Reads, converts and uploads one tensor (its bytes: t.file_bytes()).
  absl::StatusOr<Loaded> LoadTensor(const WeightTensor& t);

  const Options options_;
  MatrixRegistry* const registry_;
  const int64_t max_dim_;
  absl::Mutex mu_;  // one scan at a time
  absl::flat_hash_map<std::string, FileState> files_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gemm::core
