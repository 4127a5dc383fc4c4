// gemm_bench's measuring core: allocates rotating operand sets of fresh random data, optionally
// checks our kernel against cuBLASLt, and times both with CUDA events (warm-up, median).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench_shapes.h"
#include "gemm/kernel.h"

namespace gemm::bench {

// What to run and how (flags of gemm_bench, parsed in main).
struct BenchOptions {
  std::string shapes_dir = "bench/shapes";  // where <set>.txt live
  std::vector<kernel::BLayout> layouts = {kernel::BLayout::kNK, kernel::BLayout::kKN};
  kernel::DType d_dtype = kernel::DType::kBF16;  // output dtype
  int warmup = 5;                                // untimed runs per implementation
  int reps = 30;                                 // timed runs (median), >= 20
  bool check = false;                            // compare ours vs cuBLASLt first
  bool direct_small_m = false;  // call sm90::SmallMGemm directly for M <= 128 (skip dispatch)
  bool sm90_main = false;       // time sm90::Gemm (the WGMMA kernel) directly, bypassing small-M
  bool no_split = false;        // WGMMA kernel without its tail split-K (kDebugNoSplit)
  int tile_m = 0, tile_n = 0;   // > 0: force the WGMMA kernel's tile (tuning override)
  int stages = 0, cluster_m = 0, group_m = 0;  // > 0: force these WGMMA launch parameters
  int tail_splits = 0;     // > 0: K pieces per tile of the WGMMA kernel's last partial wave,
                           // -1: stream-K over that wave
  int swap_ab = 0;         // 1: force the swap-AB tiles (--tile 128xW picks the width), -1: never
  int debug_flags = 0;     // sm90 kDebug* bits (timing experiments; results may be wrong)
  int64_t force_ctas = 0;  // with direct_small_m: grid size override (0 = heuristic)
  bool stream_k = false;   // with direct_small_m: stream-K grid only (no cluster split-K)
  double mem_fraction = 0.6;  // share of free device memory the operand sets may use
  bool same_set = false;      // both implementations of a rep on one operand set (L2-warm cuBLAS)
  bool read_floor = false;    // also time a read-only kernel over each strided row's B
  // Time each call from an idle stream (synchronized before it, nothing holding it), so that
  // the span includes the host's launch path, as a server's unit on an idle GPU sees it.
  bool idle_stream = false;
};

// One measured line.
struct BenchRow {
  std::string set;
  Shape shape;
  int problems = 1;  // > 1 for the grouped set (shape then holds the sums / maxima)
  kernel::BLayout layout = kernel::BLayout::kNK;
  double ours_ms = std::numeric_limits<double>::quiet_NaN();
  double cublas_ms = std::numeric_limits<double>::quiet_NaN();
  double flops = 0;  // 2 M N K summed over the batch / group
  double bytes = 0;  // A, B and D once each
  double rel_err = std::numeric_limits<double>::quiet_NaN();  // with --check
  uint64_t bad = 0;                                           // NaN / Inf outputs with --check
  int64_t ctas = 0;  // small-M grid size (stream-K CTAs) when the small-M path runs
  // With read_floor: a read-only kernel's time over the row's B (same operand-set rotation), the
  // least time any kernel that reads the weight once can take at this size.
  double read_b_ms = std::numeric_limits<double>::quiet_NaN();
  int64_t read_b_bytes = 0;  // the bytes that kernel read
  std::string ours;          // what ran as "ours"
  std::string error;         // empty when the row is valid
};

// Owns the stream, cuBLAS handle and timing events of one benchmark process.
class Bench {
 public:
  // Sets up on the current device; FAILED_PRECONDITION without a usable GPU.
  static absl::StatusOr<std::unique_ptr<Bench>> Create(const BenchOptions& opts);
  ~Bench();
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;

  // Device-to-device cudaMemcpyAsync bandwidth in GB/s, counting bytes read plus written.
  absl::StatusOr<double> CopyGbps();

  // Device-memory read bandwidth in GB/s: one pass of 16-byte loads over 1 GiB of random data
  // (the ceiling of read-only streams such as the decode GEMMs' reading of B).
  absl::StatusOr<double> ReadGbps();

  // Time in microseconds of an empty kernel (one 384-thread CTA per SM) timed like the rows.
  absl::StatusOr<double> EmptyLaunchUs();

  // Runs every shape of `set` ("large", "decode", "batched", "grouped", "moe" or "m_sweep") for
  // every layout; the grouped sets as one grouped call per group of their file.
  // Per-shape failures are reported in BenchRow::error; a missing shape file is an error.
  absl::StatusOr<std::vector<BenchRow>> RunSet(const std::string& set);

  const std::string& device_name() const { return device_name_; }
  int sm_count() const { return sm_count_; }
  std::size_t l2_bytes() const { return l2_bytes_; }

 private:
  explicit Bench(const BenchOptions& opts) : opts_(opts) {}
  BenchRow RunStrided(const std::string& set, const Shape& shape, kernel::BLayout layout);
  // One grouped call over `shapes` (row set `set`); with `distinct_weights` every member has its
  // own B, else members of one (N, K) share one.
  BenchRow RunGrouped(const std::string& set, const std::vector<Shape>& shapes,
                      kernel::BLayout layout, bool distinct_weights);
  // Median milliseconds of each `launches[i](set_index)` over opts_.reps runs after
  // opts_.warmup, the launches alternating one by one (at most two).
  absl::StatusOr<std::vector<double>> TimeMedians(
      const std::vector<std::function<absl::Status(int)>>& launches, int nsets);
  // Ends a --check: after `st` (the status of the comparison so far) reads the device
  // CompareSums at `sums` into row->bad / rel_err, or records the error. Returns false after a
  // sticky CUDA error (the row is final).
  bool ReadCheck(absl::Status st, const void* sums, BenchRow* row);
  // Times both implementations, interleaved, into row->ours_ms / cublas_ms; failures go to
  // row->error.
  void TimeBoth(const std::function<absl::Status(int)>& ours,
                const std::function<absl::Status(int)>& cublas, int nsets, BenchRow* row);
  // Times LaunchReadAll over B of each operand set of `args` in turn into row->read_b_ms (left
  // NaN on failure).
  void TimeReadB(const std::vector<kernel::StridedBatch>& args, int64_t b_bytes, BenchRow* row);
  // Number of operand sets of `set_bytes` so that together they exceed L2 and fit memory.
  absl::StatusOr<int> RotationCount(double set_bytes);
  uint64_t NextSeed() { return seed_ += 0x9E3779B97F4A7C15ull; }

  BenchOptions opts_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::vector<cudaEvent_t> start_, stop_;
  std::string device_name_;
  int sm_count_ = 0;
  std::size_t l2_bytes_ = 0;
  uint64_t seed_ = 0;
};

}  // namespace gemm::bench
