// HostCopier: a small pool of threads for large host-to-host copies (request bytes -> pinned
// staging, staging -> response bytes), shared by all executors. One thread copies ~10 GB/s at
// best, so a 64 MiB request costs a thread ~10 ms; splitting the copy into chunks of at least
// kMinChunkBytes and running them on the pool plus the calling thread cuts that several times.
//
// Copy() is blocking and may be called from any number of threads at once: the chunks of
// concurrent calls are served in arrival order, and every caller also works on its own chunks,
// so a call always makes progress even when the pool is busy with other calls. Every copy runs
// under common/guarded_copy.h: a job touching a vanished page of a client's shared memory is
// reported, not a crash. Plain CPU code: no CUDA, usable and tested without a GPU.
#pragma once

#include <cstddef>
#include <deque>
#include <span>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace gemm::gpu {

// Copy `bytes` bytes from `src` to `dst` (the ranges must not overlap; with bytes == 0 the
// pointers are not used and may be null).
struct CopyJob {
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
};

class HostCopier {
 public:
  // Smallest chunk (~0.1 ms of one thread's memcpy, well above a hand-off's cost; a coalesced
  // decode batch of ten 256 KiB requests is already worth splitting). A call whose total is below
  // two chunks is copied on the calling thread without touching the pool.
  static constexpr size_t kMinChunkBytes = size_t{1} << 20;

  // Starts `threads` worker threads (0: every Copy() runs on its calling thread only). Chunks
  // are at least `min_chunk_bytes` (rounded up to whole 4 KiB pages).
  explicit HostCopier(int threads, size_t min_chunk_bytes = kMinChunkBytes);
  // Stops and joins the workers. No Copy() may be running or start afterwards.
  ~HostCopier();

  HostCopier(const HostCopier&) = delete;
  HostCopier& operator=(const HostCopier&) = delete;

  // Copies every job and returns when all bytes are in place. The jobs are cut into chunks of at
  // least min_chunk_bytes() (small jobs share a chunk), run by the workers and the calling thread.
  // Returns the indices (ascending) of the jobs that touched a page with nothing behind it (a
  // client shrank the shared-memory object under it), whose destinations then hold unspecified
  // bytes; empty when every job was copied. Thread-safe; the jobs' memory must stay valid until
  // it returns.
  [[nodiscard]] std::vector<size_t> Copy(std::span<const CopyJob> jobs);

  // Worker threads (not counting callers).
  int threads() const { return static_cast<int>(workers_.size()); }
  // The smallest chunk a call is cut into.
  size_t min_chunk_bytes() const { return min_chunk_; }

 private:
  struct Call;  // one Copy() in progress (host_copier.cc)

  void WorkerLoop();
  // Claims the next chunk of `call` (nullptr: the oldest call with chunks left); false if none.
  bool ClaimLocked(Call* call, Call** claimed, size_t* chunk) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Copies one chunk (no lock held), then counts it done.
  void RunChunk(Call* call, size_t chunk) ABSL_LOCKS_EXCLUDED(mu_);

  absl::Mutex mu_;
  absl::CondVar work_;                            // a call was queued, or stopping_
  absl::CondVar done_;                            // a chunk finished
  std::deque<Call*> calls_ ABSL_GUARDED_BY(mu_);  // calls with chunks not yet claimed
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  size_t min_chunk_;
  std::vector<std::thread> workers_;
};

}  // namespace gemm::gpu
