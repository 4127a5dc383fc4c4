// RequestPinning: message-borne A operands copied into pinned memory on arrival (see the header).
#include "server/gpu/request_pinning.h"

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "server/gpu/cuda_util.h"
#include "server/gpu/pinned_arena.h"

namespace gemm::gpu {
namespace {

int64_t Aligned(int64_t bytes) {
  return (bytes + StagingPool::kAlign - 1) / StagingPool::kAlign * StagingPool::kAlign;
}

// What keeps a pinned request alive: the message its other operands still point into, and the
// pinned copies.
struct PinnedKeepAlive {
  std::shared_ptr<const void> message;
  std::shared_ptr<const void> copies;
};

// Whether every byte of `bytes` lies in the pinned heap.
bool InPinnedHeap(const core::OperandBytes& bytes) {
  for (absl::string_view piece : bytes.pieces()) {
    if (!PinnedArena::Holds(piece.data(), piece.size())) return false;
  }
  return !bytes.empty();
}

}  // namespace

int UseReceivedPinnedBytes(core::WorkItem* item) {
  int marked = 0;
  for (core::Problem& p : item->request.problems) {
    // Padded device rows (K * 2 not a multiple of 16) would be staged on the launch thread:
    // leave those to Pin(), which copies them on arrival.
    const bool rows_back_to_back = DevicePitchBytes(p.k * 2) == p.k * 2;
    if (p.a_mem == core::HostMemory::kMessage && rows_back_to_back && InPinnedHeap(p.a)) {
      p.a_mem = core::HostMemory::kPinned;
      ++marked;
    }
  }
  return marked;
}

RequestPinning::RequestPinning(std::shared_ptr<StagingPool> pool, int64_t max_bytes,
                               int64_t max_request_bytes)
    : blocks_(PinnedAnswers::Create(std::move(pool), max_bytes)),
      max_request_bytes_(max_request_bytes) {}

void RequestPinning::Pin(core::WorkItem* item) {
  std::vector<core::Problem>& problems = item->request.problems;
  int64_t total = 0;  // every message-borne A, each at an aligned offset
  for (const core::Problem& p : problems) {
    if (p.a_mem == core::HostMemory::kMessage && !p.a.empty()) {
      total += Aligned(static_cast<int64_t>(p.a.size()));
    }
  }
  if (total == 0 || total > max_request_bytes_) return;
  AnswerBlock block = blocks_->TryTake(total);
  if (!block.held()) return;
  int64_t off = 0;
  for (core::Problem& p : problems) {
    if (p.a_mem != core::HostMemory::kMessage || p.a.empty()) continue;
    char* dst = block.ptr() + off;
    size_t at = 0;
    for (absl::string_view piece : p.a.pieces()) {
      std::memcpy(dst + at, piece.data(), piece.size());
      at += piece.size();
    }
    p.a = core::OperandBytes(dst, at);
    p.a_mem = core::HostMemory::kPinned;
    off += Aligned(static_cast<int64_t>(at));
  }
  item->keep_alive = std::make_shared<const PinnedKeepAlive>(
      PinnedKeepAlive{std::move(item->keep_alive), block.Cut(block.bytes())});
}

}  // namespace gemm::gpu
