// Options of the CUDA backend's per-GPU executors (server/gpu/executor.h): how many threads pull
// and complete work, how much work a GPU takes ahead, and how completion and timing run. No CUDA
// headers: embedded in CudaBackendOptions (cuda_backend.h), which main.cc and the core include.
#pragma once

#include <cstdint>

namespace gemm::gpu {

struct ExecutorOptions {
  // Threads per GPU that pull batches and enqueue their GPU work (1 to 64). Default 4.
  // NOTE: several of each kind. Measured on the H200 (decode M=16, 64 callers, --shm): with one
  // of each, the completion thread was the limit when batching (1.2 ms from the GPU finishing to
  // completion; 22.9k req/s) and the launch thread without (~60 us of CUDA calls per unit; 11.4k
  // req/s); 4 launch + 8 completion threads: 30.0k and 17.9k req/s.
  int launch_threads_per_device = 4;
  // Threads per GPU that complete finished units and answer their requests (1 to 64). Default 8.
  int completion_threads_per_device = 8;
  // A launch thread pulls its next batch only while fewer units than this are in flight on the
  // GPU (pulled and not completed; a batch being pulled counts as one), so work waits in the
  // batcher, where any GPU (and more coalescing) can take it, instead of queuing on one GPU's
  // streams. 0: no bound. Default 0.
  int max_units_in_flight_per_device = 0;
  // A launch thread pulls the next batch only while the GPU work in flight on the GPU (units
  // pulled and not completed, each estimated from its FLOPs and bytes at the GPU's peak rates)
  // is under this many milliseconds or fewer than two units are in flight, and one thread at a
  // time. Keeps a few large units per GPU (the rest waits in the shared queue for whichever GPU
  // frees up first, and for company to batch with) while small ones stay effectively unbounded.
  // 0: no bound. Default 1 ms.
  double max_work_in_flight_ms_per_device = 1;
  // A finished unit that copies or sends at most this many result bytes into its responses is
  // completed, and its first request answered, on the event-polling thread itself (no hand-off
  // to a completion thread); larger ones go to the completion threads, so the polling goes on.
  // < 0: every unit goes to the completion threads. Default 64 KiB.
  int64_t watcher_completion_bytes = int64_t{64} << 10;
  // With the batcher's idle dispatch (core::WorkSource::DeviceIdle): a GPU counts as idle while
  // at most this many of the units it took are unfinished on it: 0 waits for all of them; 1
  // releases the next batch while the last unit runs, so its copies overlap that unit's work.
  // Default 1.
  // NOTE: 1 read 8-24% faster than 0 on decode over --shm at 8, 16 and 64 callers with the
  // default delay, and the same at 64 callers with 50 us (H200 and H100).
  int idle_units_per_device = 1;
  // Only every n-th unit per GPU (<= 1: every unit) records the CUDA events that time its
  // copy-in, kernels and copy-out; the others record just the event completion polls, and their
  // answers say the GPU phases were not timed (core::Timing::gpu_timing_skipped). Default 8.
  // NOTE: the three timing records and three cudaEventElapsedTime reads cost ~10 us of host time
  // per unit on the launch and completion path; decode at 64 callers ran 7% faster untimed and
  // 4-5% at every 4th unit (H100).
  int gpu_timing_every = 8;
};

}  // namespace gemm::gpu
