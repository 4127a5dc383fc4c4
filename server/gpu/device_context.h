// Everything the CUDA backend keeps per GPU: its properties, the device memory pool, the
// non-blocking streams (normal and high priority, each with a persistent kernel workspace), a
// compute stream per priority (same) on which every unit's kernels run, an upload stream, a pool of
// timing events, and the kernel chosen for it by the start-up self-test. Shared (shared_ptr) by the
// executor and by resident matrices living on the device, so the pool outlives every allocation
// taken from it.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "gemm/kernel.h"
#include "server/core/backend.h"
#include "server/gpu/device_pool.h"

namespace gemm::gpu {

// One stream of a device with the kernel workspace reserved for work enqueued on it. Work on a
// stream is serialized, so one workspace per stream is enough PROVIDED that one unit's copies and
// kernels are enqueued back to back: hold `enqueue_mu` while enqueuing. (Interleaved by two launch
// threads, a unit's small-M main kernel and its fixup kernel had another unit's kernel between
// them that overwrote the shared workspace: ~1 wrong result in 2,000 on mixed decode batches.)
struct StreamSlot {
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  int64_t workspace_bytes = 0;
  bool high_priority = false;
  std::unique_ptr<absl::Mutex> enqueue_mu = std::make_unique<absl::Mutex>();
};

class DeviceContext {
 public:
  struct Options {
    int ordinal = 0;
    int64_t pool_cap_bytes = 0;  // 0: 90% of free memory now
    int streams = 4;             // normal-priority streams (>= 1)
    int high_priority_streams = 2;
  };

  // Reads the properties, creates pool, streams and workspaces. Makes the device current.
  static absl::StatusOr<std::shared_ptr<DeviceContext>> Create(const Options& options);
  // Synchronizes the device, then destroys streams, workspaces, events and the pool.
  ~DeviceContext();

  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  int ordinal() const { return ordinal_; }
  const std::string& name() const { return name_; }
  int cc_major() const { return cc_major_; }
  int cc_minor() const { return cc_minor_; }
  int multiprocessors() const { return sms_; }
  int64_t memory_bytes() const { return memory_bytes_; }
  // Nominal peaks from the clocks (BF16 dense tensor FLOP per microsecond, DRAM bytes per
  // microsecond), for estimating how long work will keep the device busy.
  double peak_flop_per_us() const { return peak_flop_per_us_; }
  double peak_bytes_per_us() const { return peak_bytes_per_us_; }
  DevicePool& pool() { return *pool_; }
  const DevicePool& pool() const { return *pool_; }
  cudaStream_t upload_stream() const { return upload_stream_; }

  // The next stream to use, round-robin within the priority class, preferring one that no thread
  // is enqueuing on at the moment. Lock its `enqueue_mu` while enqueuing. Thread-safe.
  const StreamSlot& NextStream(bool high_priority);

  // The device's compute stream of a priority class (with its own workspace), on which every
  // unit's kernels run. Lock its `enqueue_mu` while enqueuing.
  const StreamSlot& ComputeStream(bool high_priority) const {
    return high_priority ? compute_[1] : compute_[0];
  }

  // A timing event from the pool (created on demand). Thread-safe.
  absl::StatusOr<cudaEvent_t> GetEvent();
  // Returns an event to the pool. Thread-safe.
  void PutEvent(cudaEvent_t event);

  // Kernel selection (set once at start-up, before any work runs; read-only afterwards).
  void SetKernel(kernel::KernelKind selected, bool usable, std::string detail) {
    selected_ = selected;
    selected_usable_ = usable;
    self_test_detail_ = std::move(detail);
  }
  // The native variants that passed qualification (bit i: variant i of the selected kernel's
  // family, gemm/qualification.h) and one verdict per variant for GetServerInfo. Set once at
  // start-up, before any work runs.
  void SetVariants(uint64_t usable, std::vector<core::KernelDescription> verdicts) {
    usable_variants_ = usable;
    variant_verdicts_ = std::move(verdicts);
  }
  uint64_t usable_variants() const { return usable_variants_; }
  const std::vector<core::KernelDescription>& variant_verdicts() const { return variant_verdicts_; }
  // The kernel the dispatch picks for this device (kSm90, kSm100 or kCublasLt).
  kernel::KernelKind selected() const { return selected_; }
  // Whether any variant of the selected kernel passed qualification (kCublasLt always does).
  bool selected_usable() const { return selected_usable_; }
  const std::string& self_test_detail() const { return self_test_detail_; }
  // The kernel that serves requests: the selected one if usable, else cuBLASLt.
  kernel::KernelKind serving() const {
    return selected_usable_ ? selected_ : kernel::KernelKind::kCublasLt;
  }

 private:
  explicit DeviceContext(int ordinal) : ordinal_(ordinal) {}

  const int ordinal_;
  std::string name_;
  int cc_major_ = 0, cc_minor_ = 0, sms_ = 0;
  int64_t memory_bytes_ = 0;
  double peak_flop_per_us_ = 0, peak_bytes_per_us_ = 0;
  std::unique_ptr<DevicePool> pool_;
  std::vector<StreamSlot> normal_;
  std::vector<StreamSlot> high_;
  std::vector<StreamSlot> compute_;  // [0] normal, [1] high priority
  cudaStream_t upload_stream_ = nullptr;
  std::atomic<uint64_t> next_normal_{0};
  std::atomic<uint64_t> next_high_{0};
  absl::Mutex events_mu_;
  std::vector<cudaEvent_t> free_events_ ABSL_GUARDED_BY(events_mu_);
  std::vector<cudaEvent_t> all_events_ ABSL_GUARDED_BY(events_mu_);
  kernel::KernelKind selected_ = kernel::KernelKind::kCublasLt;
  bool selected_usable_ = true;
  std::string self_test_detail_;
  uint64_t usable_variants_ = ~uint64_t{0};
  std::vector<core::KernelDescription> variant_verdicts_;
};

}  // namespace gemm::gpu
