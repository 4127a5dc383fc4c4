// Public entry point of the CUDA backend: the core::Backend that serves GEMMs on the visible
// NVIDIA GPUs. No CUDA headers here (main.cc and the server core include it).
//
// Start-up enumerates the GPUs, reads their properties, creates per GPU a capped stream-ordered
// memory pool, priority streams and an executor, and qualifies the device's kernel variants
// against cuBLASLt in child processes (a variant that fails is served through cuBLASLt).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/core/backend.h"
#include "server/gpu/executor_options.h"

namespace gemm::gpu {

struct CudaBackendOptions {
  // Per GPU device-pool cap in bytes; 0 = 90% of the memory free at start. Default 0.
  int64_t pool_cap_bytes = 0;
  // Pinned host staging pool, bytes in all (shared by the GPUs). Default 2 GiB.
  int64_t staging_bytes = int64_t{2} << 30;
  // One pinned slab of the staging pool, also the most staging one unit can take (clamped to
  // staging_bytes); a larger single request is copied from pageable memory. Default 512 MiB.
  int64_t staging_slab_bytes = int64_t{512} << 20;
  // The largest share of the staging pool (0 to 1) that inline answers waiting to be sent may
  // hold: a unit's inline results are copied from the GPU into a pinned block of their own and
  // sent from there, without a copy out of staging, while answers hold less than this; beyond
  // it (or when the pool has no free block at once) they are copied out as before. 0: always
  // copied. Default 0.25.
  double pinned_answer_fraction = 0.25;
  // Pinned host memory, apart from staging, for the A operands requests carry in their gRPC
  // messages: a request's A of at most host_copy_chunk_bytes is copied into a block of its own
  // when the request arrives, on the receiving thread, and its unit reads it in place. A larger
  // A, or one that finds no free block at once, is copied into the unit's staging as before.
  // Apart from staging so that requests waiting to run never hold memory a unit waits for.
  // 0: never. Default 128 MiB.
  int64_t pinned_request_bytes = int64_t{128} << 20;
  // A page-locked arena the server's heap grows into (gemm_server with tcmalloc), so that the
  // buffers gRPC receives request messages into are pinned and a request's A is read by the GPU
  // straight out of them, with no host copy. Locked with mlock: needs that much locked-memory
  // limit (ulimit -l) or CAP_IPC_LOCK; without it the server logs why and runs without the
  // arena. Beyond it the heap grows as usual and requests are copied as before. 0: none.
  // Default 1 GiB.
  int64_t pinned_heap_bytes = int64_t{1} << 30;
  // Threads that copy request bytes into staging and results out of it, shared by all GPUs
  // (0: each copy runs on the executor's own thread). Default 8.
  int host_copy_threads = 8;
  // The smallest piece a host copy is cut into for those threads (4 KiB to 1 GiB).
  int64_t host_copy_chunk_bytes = int64_t{1} << 20;
  // Normal-priority streams per GPU (two more serve high-priority requests). Default 4.
  int streams_per_device = 4;
  // The per-GPU executors: threads, work taken ahead, completion and timing.
  ExecutorOptions executor;
  // Place resident matrices on every GPU (else on the least-loaded one). Default false.
  bool replicate_resident = false;
  // Qualify each GPU's native kernel variants against cuBLASLt at start-up, in gemm_qualify child
  // processes under deadlines; unqualified variants are served through cuBLASLt. Default true.
  bool self_test = true;
  // Testing hook: make qualification see a mismatch, to exercise the cuBLASLt fallback.
  bool self_test_force_mismatch = false;
  // The gemm_qualify binary (empty: next to the running executable). Default empty.
  std::string qualify_binary;
  // Seconds one qualification case may take before its child is killed. Default 30.
  double qualification_case_deadline_s = 30;
  // Seconds the whole qualification of one GPU may take. Default 120.
  double qualification_deadline_s = 120;
};

// Number of CUDA devices visible (0 when no driver/GPU); never fails hard.
int CudaDeviceCount();

// Creates the backend on every visible GPU. FAILED_PRECONDITION when there is none; the CUDA
// error as a status when a device cannot be set up.
absl::StatusOr<std::unique_ptr<core::Backend>> CreateCudaBackend(const CudaBackendOptions& options);

}  // namespace gemm::gpu
