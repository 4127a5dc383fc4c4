// Resident matrices of the CUDA backend: a B matrix uploaded once into device-pool memory (one
// replica per device it is placed on, rows padded to a 16-byte pitch), referenced by requests as
// B, freed when the last reference (registry or in-flight request) drops it. Uploads run on a
// background uploader thread, so no gRPC thread waits for the copy.
#pragma once

#include <cuda_runtime_api.h>

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/core/backend.h"
#include "server/core/types.h"
#include "server/gpu/device_context.h"

namespace gemm::gpu {

// A FIFO of tasks run by one thread. Thread-safe. The destructor runs what is queued, then joins.
class TaskThread {
 public:
  TaskThread();
  ~TaskThread();
  // Queues `task`; never blocks.
  void Post(std::function<void()> task);

 private:
  void Loop();
  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

class CudaResidentMatrix final : public core::ResidentMatrix {
 public:
  // Storage on one device.
  struct Replica {
    std::shared_ptr<DeviceContext> device;
    int ordinal = 0;          // device->ordinal(), kept apart for lookups without the context
    void* ptr = nullptr;      // rows x pitch bytes
    int64_t pitch_bytes = 0;  // multiple of 16
    int64_t alloc_bytes = 0;  // accounted against the device pool
  };

  CudaResidentMatrix(Desc desc, std::vector<Replica> replicas)
      : ResidentMatrix(std::move(desc)), replicas_(std::move(replicas)) {}
  // Frees every replica (stream-ordered) and returns its bytes to the pool accounting. Runs once
  // no request holds the matrix, so the GPU is done with it.
  ~CudaResidentMatrix() override;

  // The replica on `device`, or nullptr when the matrix does not live there.
  const Replica* OnDevice(int device) const;

  // Blocks until the upload has finished on every replica; returns its status. Executors call it
  // before their first use (their own threads, never a gRPC thread).
  absl::Status WaitReady() const override;
  // Non-blocking: whether the upload finished (successfully or not).
  bool ready() const;

  // Called once by the uploader.
  void SetReady(absl::Status status);

 private:
  const std::vector<Replica> replicas_;
  mutable absl::Mutex mu_;
  bool ready_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

// Begins an upload of `desc` onto `devices` (already chosen): checks the bytes fit under each
// device's pool cap (RESOURCE_EXHAUSTED), then returns the MatrixUpload that collects the bytes
// in host memory. Finish() allocates device memory (RESOURCE_EXHAUSTED, nothing leaked), returns
// the matrix at once and hands the copy to `uploader`, which must outlive the upload's tasks.
absl::StatusOr<std::unique_ptr<core::MatrixUpload>> BeginCudaUpload(
    core::ResidentMatrix::Desc desc, std::vector<std::shared_ptr<DeviceContext>> devices,
    TaskThread* uploader);

}  // namespace gemm::gpu
