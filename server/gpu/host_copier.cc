// HostCopier: chunked host copies on a shared thread pool plus the caller (see host_copier.h).
#include "server/gpu/host_copier.h"

#include <algorithm>
#include <cstring>

#include "common/guarded_copy.h"
#include "common/thread_name.h"

namespace gemm::gpu {
namespace {

constexpr size_t kPageBytes = 4096;  // chunk sizes are whole pages

// A job's bytes, or part of them, and the job's index in its call.
struct Piece {
  CopyJob copy;
  size_t job = 0;
};

// Copies `pieces`; appends to `*faulted` the jobs of those that touched a vanished page.
void CopyAll(std::span<const Piece> pieces, std::vector<size_t>* faulted) {
  for (const Piece& p : pieces) {
    if (!GuardedCopy(p.copy.dst, p.copy.src, p.copy.bytes)) faulted->push_back(p.job);
  }
}

}  // namespace

// One Copy() in progress, on its caller's stack. The jobs are seen as one stream of bytes cut
// into chunks of `chunk_bytes` (the last may be shorter); `pieces` are the jobs cut at chunk
// boundaries, chunk i being pieces[first[i], first[i + 1]). `next`, `remaining` and `faulted`
// are guarded by HostCopier::mu_; the rest is written before the call is queued and only read
// afterwards.
struct HostCopier::Call {
  std::vector<Piece> pieces;
  std::vector<size_t> first;
  size_t chunks = 0;
  size_t next = 0;              // first chunk not yet claimed
  size_t remaining = 0;         // chunks not yet copied
  std::vector<size_t> faulted;  // jobs that touched a vanished page

  Call(std::span<const CopyJob> jobs, size_t chunk_bytes) {
    first.push_back(0);
    size_t filled = 0;  // bytes in the current chunk
    for (size_t i = 0; i < jobs.size(); ++i) {
      const CopyJob& j = jobs[i];
      for (size_t off = 0; off < j.bytes;) {
        if (filled == chunk_bytes) {
          first.push_back(pieces.size());
          filled = 0;
        }
        const size_t n = std::min(j.bytes - off, chunk_bytes - filled);
        pieces.push_back(
            {{static_cast<char*>(j.dst) + off, static_cast<const char*>(j.src) + off, n}, i});
        off += n;
        filled += n;
      }
    }
    first.push_back(pieces.size());
    chunks = pieces.empty() ? 0 : first.size() - 1;
    remaining = chunks;
  }
};

HostCopier::HostCopier(int threads, size_t min_chunk_bytes)
    : min_chunk_((std::max(min_chunk_bytes, kPageBytes) + kPageBytes - 1) / kPageBytes *
                 kPageBytes) {
  for (int i = 0; i < threads; ++i)
    workers_.emplace_back([this] {
      SetCurrentThreadName("gemm-hostcopy");
      WorkerLoop();
    });
}

HostCopier::~HostCopier() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    work_.SignalAll();
  }
  for (std::thread& t : workers_) t.join();
}

std::vector<size_t> HostCopier::Copy(std::span<const CopyJob> jobs) {
  size_t total = 0;
  for (const CopyJob& j : jobs) total += j.bytes;
  if (workers_.empty() || total < 2 * min_chunk_) {  // one chunk at most: not worth a hand-off
    std::vector<Piece> pieces;
    pieces.reserve(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) pieces.push_back({jobs[i], i});
    std::vector<size_t> faulted;
    CopyAll(pieces, &faulted);
    return faulted;
  }
  // About two chunks per thread (callers and workers), so a thread that joins late or a chunk
  // that copies slowly (page faults) delays the call by a fraction of a chunk.
  const size_t participants = workers_.size() + 1;
  size_t chunk_bytes = std::max(min_chunk_, (total + 2 * participants - 1) / (2 * participants));
  chunk_bytes = (chunk_bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
  Call call(jobs, chunk_bytes);
  {
    absl::MutexLock lock(&mu_);
    calls_.push_back(&call);
    work_.SignalAll();
  }
  while (true) {
    Call* claimed = nullptr;
    size_t chunk = 0;
    {
      absl::MutexLock lock(&mu_);
      if (!ClaimLocked(&call, &claimed, &chunk)) break;
    }
    RunChunk(claimed, chunk);
  }
  // Chunks the workers claimed may still be copying.
  absl::MutexLock lock(&mu_);
  while (call.remaining > 0) done_.Wait(&mu_);
  std::sort(call.faulted.begin(), call.faulted.end());
  call.faulted.erase(std::unique(call.faulted.begin(), call.faulted.end()), call.faulted.end());
  return std::move(call.faulted);
}

bool HostCopier::ClaimLocked(Call* call, Call** claimed, size_t* chunk) {
  if (call == nullptr) {
    if (calls_.empty()) return false;
    call = calls_.front();
  }
  if (call->next >= call->chunks) return false;
  *claimed = call;
  *chunk = call->next++;
  if (call->next == call->chunks) {  // nothing left to claim: leave the queue
    calls_.erase(std::find(calls_.begin(), calls_.end(), call));
  }
  return true;
}

void HostCopier::RunChunk(Call* call, size_t chunk) {
  std::vector<size_t> faulted;
  CopyAll(std::span<const Piece>(call->pieces.data() + call->first[chunk],
                                 call->first[chunk + 1] - call->first[chunk]),
          &faulted);
  absl::MutexLock lock(&mu_);
  call->faulted.insert(call->faulted.end(), faulted.begin(), faulted.end());
  if (--call->remaining == 0) done_.SignalAll();  // under mu_: the caller cannot return before
}

void HostCopier::WorkerLoop() {
  while (true) {
    Call* call = nullptr;
    size_t chunk = 0;
    {
      absl::MutexLock lock(&mu_);
      while (calls_.empty() && !stopping_) work_.Wait(&mu_);
      if (!ClaimLocked(nullptr, &call, &chunk)) return;  // stopping, nothing queued
    }
    RunChunk(call, chunk);
  }
}

}  // namespace gemm::gpu
