// RequestPinning: the A operands a request carries in its gRPC message, copied into pinned memory
// when the request arrives, on the thread that submits it, so the unit that later runs it reads
// them in place (HostMemory::kPinned) instead of copying every item into staging on its launch
// thread. The copy reads bytes the submitting thread has just received, and it happens while the
// request waits for company instead of between a coalesced unit's forming and its launch. The
// copies come from a pool of their own (CudaBackendOptions::pinned_request_bytes), apart from
// staging, so requests waiting to run never hold memory a unit waits for; when it has no free
// block at once, the request keeps its message's bytes and is staged as before. An A that was
// received into the pinned heap (pinned_arena.h) needs no copy: it is read where it arrived.
#pragma once

#include <cstdint>
#include <memory>

#include "server/core/types.h"
#include "server/gpu/pinned_answers.h"
#include "server/gpu/staging_pool.h"

namespace gemm::gpu {

// Marks every message-borne A of `item` whose bytes all lie in the pinned heap (the message was
// received there) and whose rows lie back to back on the device (K * 2 a multiple of 16) as
// pinned in place (a_mem = kPinned, its pieces kept): its unit's GPU copy reads the message's own
// buffers, which `item->keep_alive` holds. Leaves the others as they are. Returns how many it
// marked.
int UseReceivedPinnedBytes(core::WorkItem* item);

class RequestPinning {
 public:
  // Blocks from `pool`, at most `max_bytes` held by requests at once (0: never pins), for
  // requests whose message-borne A total at most `max_request_bytes`: a larger A is copied
  // faster by the host-copy threads in parallel than by the one receiving thread (a channel's
  // gRPC thread is already the limit of large requests).
  RequestPinning(std::shared_ptr<StagingPool> pool, int64_t max_bytes, int64_t max_request_bytes);

  // Copies every message-borne A of `item` into one pinned block and points its problems at the
  // copies (a_mem = kPinned), the block held by `item->keep_alive` until the item is gone; or
  // leaves `item` as it is when nothing is in its message, it is larger than max_request_bytes,
  // the bound would be passed or the pool has no free block now. Never waits. Thread-safe.
  void Pin(core::WorkItem* item);

  // Bytes held by requests now and the bound, in one snapshot.
  PinnedAnswerLimit::Stats stats() const { return blocks_->stats(); }

 private:
  // The bounded, never-waiting blocks of the pool (the same allocator inline answers use).
  std::shared_ptr<PinnedAnswers> blocks_;
  const int64_t max_request_bytes_;
};

}  // namespace gemm::gpu
