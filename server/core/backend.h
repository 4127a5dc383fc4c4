// The Backend seam: what the server core needs from a compute backend (CPU reference or CUDA).
// A backend pulls batches from a WorkSource (the batcher) on its own threads, runs them and
// completes every WorkItem exactly once. It also stores resident matrices.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/core/types.h"

namespace gemm::core {

// Requests the batcher released together. Items share (device, B, K, out dtype) when coalesced.
struct Batch {
  std::vector<std::shared_ptr<WorkItem>> items;
  absl::Time released;  // when the batcher handed it out; queue time ends here
  int64_t rows = 0;     // sum of M over the items' problems (for coalesced batches)
};

// Where backends take work from. Implemented by the batcher. Thread-safe.
class WorkSource {
 public:
  virtual ~WorkSource() = default;
  // Blocks until a batch runnable on `device` (-1: any/CPU) is ready; std::nullopt once the source
  // is shut down and drained.
  virtual std::optional<Batch> Next(int device) = 0;
  // Tells the source that `device` is idle (no work left of the first `batches_taken` batches
  // Next(device) handed out, or as little as the backend counts as idle), so that a batch waiting
  // for company is released at once rather than leaving the device without work. A report whose
  // count differs from the batches handed out (one was handed out since) is stale and ignored, so
  // callers need no lock around it. Non-blocking. Default: ignored.
  virtual void DeviceIdle(int device, uint64_t batches_taken) {
    (void)device;
    (void)batches_taken;
  }
};

// One GPU (or the CPU) as reported in ServerInfo.
struct DeviceDescription {
  int ordinal = -1;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int multiprocessors = 0;
  int64_t memory_bytes = 0;
  int64_t pool_capacity_bytes = 0;
  int64_t pool_used_bytes = 0;
  std::string kernel;  // kernel serving this device
};

struct KernelDescription {
  std::string name;
  bool usable = false;
  std::string detail;
  std::string reason;  // unusable kernel variants: why, one word (core::kFailureReasons)
};

// Pinned host staging and the inline answers sent from it (the CUDA backend; zero elsewhere).
struct StagingDescription {
  int64_t used_bytes = 0;        // staging handed out now (units in flight, answers held)
  int64_t answer_bytes = 0;      // of which inline answers waiting to be sent hold
  int64_t answer_max_bytes = 0;  // the most answers may hold
  // Inline answers (one per output D sent in a response message) since start: sent from the
  // pinned block the GPU wrote, or copied out of staging first (no room for a block of their own).
  int64_t pinned_answers = 0;
  int64_t copied_answers = 0;
  // Pinned memory set aside for requests' A copied on arrival (apart from staging): held by
  // requests now, and in all.
  int64_t request_bytes = 0;
  int64_t request_max_bytes = 0;
  // The pinned heap (an arena gemm_server's heap grows into): its size (0 without one), what
  // the heap has taken of it, and the requests' A received into it since start.
  int64_t heap_bytes = 0;
  int64_t heap_taken_bytes = 0;
  int64_t received_pinned_operands = 0;
};

struct BackendDescription {
  std::string name;  // "cpu" or "cuda"
  std::vector<DeviceDescription> devices;
  std::vector<KernelDescription> kernels;
  StagingDescription staging;
};

// Receives the bytes of one matrix being registered, in order.
class MatrixUpload {
 public:
  virtual ~MatrixUpload() = default;
  // Appends the next `data.size()` bytes. Called with consecutive ranges only.
  virtual absl::Status Append(absl::string_view data) = 0;
  // Called once all bytes arrived; returns the stored matrix.
  virtual absl::StatusOr<std::shared_ptr<ResidentMatrix>> Finish() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // "cpu" or "cuda".
  virtual std::string Name() const = 0;
  // Devices, kernels and pool usage now. Thread-safe.
  virtual BackendDescription Describe() const = 0;
  // Device ordinals work can be pulled for ({-1} for the CPU backend).
  virtual std::vector<int> Devices() const = 0;
  // Starts the worker threads, which pull from `source` until it returns nullopt.
  // `source` must outlive Stop().
  virtual absl::Status Start(WorkSource* source) = 0;
  // Joins the workers (after the source is shut down); every pulled item has completed.
  virtual void Stop() = 0;
  // Begins storing a matrix described by `desc` (rows*cols BF16 elements). RESOURCE_EXHAUSTED
  // when it does not fit. Thread-safe.
  virtual absl::StatusOr<std::unique_ptr<MatrixUpload>> BeginUpload(ResidentMatrix::Desc desc) = 0;
  // Page-locks host memory [data, data + bytes) (a shared-memory region) so device copies can
  // read and write it directly. An error only means copies go through staging. Thread-safe.
  virtual absl::Status PinHostMemory(void* /*data*/, size_t /*bytes*/) {
    return absl::UnimplementedError("this backend does not page-lock memory");
  }
  // Undoes a successful PinHostMemory(data, ...). Thread-safe.
  virtual void UnpinHostMemory(void* /*data*/) {}
  // Called once per admitted request before it is queued (not for a group split across devices,
  // whose parts are queued instead), on the submitting thread: may copy the operands `item`
  // carries in its message into memory its device copies read in place, changing their bytes and
  // HostMemory kind and what `item->keep_alive` holds. Must not wait. Thread-safe.
  virtual void PinMessageOperands(WorkItem* /*item*/) {}
  // An allocation of another process mapped by OpenDeviceMemory.
  struct DeviceMemory {
    char* base = nullptr;  // a device address
    int64_t bytes = -1;    // the allocation's size; -1 when the driver did not say
  };
  // Maps the device memory another process exported as `ipc_handle` (a cudaIpcMemHandle_t) on
  // device `device`, valid for device copies from any of the backend's threads until
  // CloseDeviceMemory(base). INVALID_ARGUMENT for a bad device or handle. Thread-safe.
  virtual absl::StatusOr<DeviceMemory> OpenDeviceMemory(const std::string& /*ipc_handle*/,
                                                        int /*device*/) {
    return absl::UnimplementedError(
        "this server's backend cannot map GPU memory (CUDA IPC needs the cuda backend)");
  }
  // Undoes a successful OpenDeviceMemory. Thread-safe.
  virtual void CloseDeviceMemory(char* /*base*/) {}
};

}  // namespace gemm::core
