// CUDA backend tuning flags (see server/gpu/cuda_backend.h), listed by --helpfull only. They are
// defined in every build, so one command line (and the container's entrypoint) serves a build
// with or without CUDA; a build without it ignores them.
#include <cstdint>
#include <string>

#include "absl/flags/flag.h"
#include "server/gpu/cuda_backend.h"
#include "server/options/flag_groups.h"

namespace {

const gemm::gpu::CudaBackendOptions kCuda;

}  // namespace

ABSL_FLAG(int64_t, pool_cap_bytes, kCuda.pool_cap_bytes,
          "CUDA: device pool cap per GPU (bytes; 0: 90% of the memory free at start).");
ABSL_FLAG(int64_t, staging_bytes, kCuda.staging_bytes,
          "CUDA: pinned host staging in all, shared by the GPUs (bytes).");
ABSL_FLAG(int64_t, staging_slab_bytes, kCuda.staging_slab_bytes,
          "CUDA: one pinned staging slab (bytes; clamped to --staging_bytes); the most staging one "
          "request or coalesced batch takes. A larger request is copied from pageable memory.");
ABSL_FLAG(int32_t, host_copy_threads, kCuda.host_copy_threads,
          "CUDA: threads that copy request bytes into staging and results out of it, shared by "
          "the GPUs; 0 copies on each GPU's own executor threads.");
ABSL_FLAG(int64_t, host_copy_chunk_bytes, kCuda.host_copy_chunk_bytes,
          "CUDA: the smallest piece (bytes) a host copy (request bytes into staging, results out "
          "of it) is cut into for the host copy threads; a copy under two pieces runs on the "
          "calling thread alone.");
ABSL_FLAG(int32_t, streams_per_device, kCuda.streams_per_device, "CUDA: streams per GPU.");
ABSL_FLAG(int32_t, launch_threads_per_device, kCuda.executor.launch_threads_per_device,
          "CUDA: threads per GPU that pull batches and enqueue their GPU work.");
ABSL_FLAG(int32_t, completion_threads_per_device, kCuda.executor.completion_threads_per_device,
          "CUDA: threads per GPU that complete finished work and answer the requests.");
ABSL_FLAG(int32_t, idle_units_per_device, kCuda.executor.idle_units_per_device,
          "CUDA, with --dispatch_when_idle: a GPU counts as idle while at most this many of its "
          "units are unfinished on it (0: none; 1: the next batch's copies overlap the last "
          "unit's kernel).");
ABSL_FLAG(int64_t, watcher_completion_bytes, kCuda.executor.watcher_completion_bytes,
          "CUDA: a finished unit whose results copy at most this many "
          "bytes out of staging into the responses is completed, and its first request "
          "answered, on the polling thread itself (saves a hand-off); larger ones go to the "
          "completion threads so the polling goes on. -1: always the completion threads.");
ABSL_FLAG(int32_t, max_units_in_flight_per_device, kCuda.executor.max_units_in_flight_per_device,
          "CUDA: a GPU pulls more work from the queue only while fewer units (kernel-call groups: "
          "a coalesced batch or a request) than this are in flight on it; 0: no bound.");
ABSL_FLAG(double, max_work_in_flight_ms_per_device, kCuda.executor.max_work_in_flight_ms_per_device,
          "CUDA: a GPU pulls more work from the queue only while the work in flight on it, "
          "estimated from FLOPs and bytes at the GPU's peak rates, is under this many "
          "milliseconds or fewer than two units are in flight (one launch thread pulling at a "
          "time); 0: no bound. Keeps large requests in the shared queue for whichever GPU frees "
          "up first, and small ones there long enough to batch.");
ABSL_FLAG(bool, replicate_resident, kCuda.replicate_resident,
          "CUDA: place resident matrices on every GPU (else on the least-loaded one).");
ABSL_FLAG(int32_t, gpu_timing_every, kCuda.executor.gpu_timing_every,
          "CUDA: time the GPU phases (copy-in, compute, copy-out: CUDA events) of every n-th unit "
          "per GPU; 1 times every unit. The others' answers carry host times only and set "
          "Timing.gpu_timing_skipped; the Prometheus copy-in, compute and copy-out histograms "
          "observe the timed ones. Timing a unit costs about 10 us of host time.");
ABSL_FLAG(
    bool, self_test, kCuda.self_test,
    "CUDA: qualify each GPU's kernel variants against cuBLASLt at start-up, in child processes.");

// Kernel qualification (child processes under deadlines).
ABSL_FLAG(std::string, qualify_binary, kCuda.qualify_binary,
          "CUDA: the gemm_qualify binary that qualifies each GPU's kernel variants in a child "
          "process (path; default empty: gemm_qualify next to gemm_server).");
ABSL_FLAG(double, qualification_case_deadline_s, kCuda.qualification_case_deadline_s,
          "CUDA: seconds one qualification case may take before its child process is killed and "
          "the variant marked unusable (default 30).");
ABSL_FLAG(double, qualification_deadline_s, kCuda.qualification_deadline_s,
          "CUDA: seconds the whole qualification of one GPU may take; variants not qualified by "
          "then are served through cuBLASLt (default 120).");

// Inline answers sent from pinned staging.
ABSL_FLAG(double, pinned_answer_fraction, kCuda.pinned_answer_fraction,
          "CUDA: the largest share of the pinned staging pool (fraction, 0 to 1; default 0.25) "
          "that inline answers waiting to be sent may hold. Within it, inline results are sent "
          "from pinned memory without a copy out of staging; beyond it, or when the pool has no "
          "free block at once, they are copied out. 0: always copied.");

// Request operands copied into pinned memory on arrival.
ABSL_FLAG(int64_t, pinned_request_bytes, kCuda.pinned_request_bytes,
          "CUDA: pinned host memory, apart from staging, for the A operands requests carry in "
          "their gRPC messages (default 128 MiB): an A of at most --host_copy_chunk_bytes is "
          "copied there when its request arrives and its GPU copy reads it in place; a larger "
          "one, or one that finds none free at once, goes through staging. 0: never.");

ABSL_FLAG(int64_t, pinned_heap_bytes, kCuda.pinned_heap_bytes,
          "CUDA with tcmalloc: a page-locked arena of this many bytes that the server's heap "
          "grows into, so the GPU reads requests' A operands straight out of the buffers gRPC "
          "received them in, with no host copy (default 1 GiB; 0: none). Needs that much "
          "locked-memory limit (ulimit -l) or CAP_IPC_LOCK; without it the server logs why and "
          "starts without the arena.");

#ifdef GEMM_HAVE_CUDA_BACKEND
namespace gemm::server {

void ApplyCudaFlags(ServerOptions& options) {
  gpu::CudaBackendOptions& c = options.cuda;
  c.pool_cap_bytes = absl::GetFlag(FLAGS_pool_cap_bytes);
  c.staging_bytes = absl::GetFlag(FLAGS_staging_bytes);
  c.staging_slab_bytes = absl::GetFlag(FLAGS_staging_slab_bytes);
  c.pinned_answer_fraction = absl::GetFlag(FLAGS_pinned_answer_fraction);
  c.pinned_request_bytes = absl::GetFlag(FLAGS_pinned_request_bytes);
  c.pinned_heap_bytes = absl::GetFlag(FLAGS_pinned_heap_bytes);
  c.host_copy_threads = absl::GetFlag(FLAGS_host_copy_threads);
  c.host_copy_chunk_bytes = absl::GetFlag(FLAGS_host_copy_chunk_bytes);
  c.streams_per_device = absl::GetFlag(FLAGS_streams_per_device);
  c.executor.launch_threads_per_device = absl::GetFlag(FLAGS_launch_threads_per_device);
  c.executor.completion_threads_per_device = absl::GetFlag(FLAGS_completion_threads_per_device);
  c.executor.idle_units_per_device = absl::GetFlag(FLAGS_idle_units_per_device);
  c.executor.watcher_completion_bytes = absl::GetFlag(FLAGS_watcher_completion_bytes);
  c.executor.max_units_in_flight_per_device = absl::GetFlag(FLAGS_max_units_in_flight_per_device);
  c.executor.max_work_in_flight_ms_per_device =
      absl::GetFlag(FLAGS_max_work_in_flight_ms_per_device);
  c.replicate_resident = absl::GetFlag(FLAGS_replicate_resident);
  c.executor.gpu_timing_every = absl::GetFlag(FLAGS_gpu_timing_every);
  c.self_test = absl::GetFlag(FLAGS_self_test);
  c.qualify_binary = absl::GetFlag(FLAGS_qualify_binary);
  c.qualification_case_deadline_s = absl::GetFlag(FLAGS_qualification_case_deadline_s);
  c.qualification_deadline_s = absl::GetFlag(FLAGS_qualification_deadline_s);
}

}  // namespace gemm::server
#endif  // GEMM_HAVE_CUDA_BACKEND
