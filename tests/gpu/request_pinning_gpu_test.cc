// GPU tests of requests' A copied into pinned memory on arrival (server/gpu/request_pinning.h):
// while the pinned memory set aside has room, a request's message-borne A is pinned and its
// answer is exact in size and matches float64; past it the request keeps its message's bytes and
// is staged as before, also correct; once the requests are gone their memory can be taken again;
// an A larger than one host-copy chunk is never pinned. An A received into the pinned heap
// (pinned_arena.h) in pieces at any alignment is read where it lies, by the device copy kernel, and
// answers as exactly; one whose rows are not back to back on the device goes through staging.
// Skipped at run time without a GPU.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/gpu/cuda_backend.h"
#include "server/gpu/pinned_arena.h"
#include "tests/gpu/engine_harness.h"
#include "tests/gpu/engine_test_util.h"

namespace gemm::gpu {
namespace {

using ::gemm::gpu::testing::CheckEntry;
using ::gemm::gpu::testing::FastOptions;
using ::gemm::gpu::testing::FillRandom;
using ::gemm::gpu::testing::Harness;
using ::gemm::gpu::testing::HostOperands;
using ::gemm::gpu::testing::kWait;
using ::gemm::gpu::testing::MakeItem;
using ::gemm::gpu::testing::MakeProblem;
using ::gemm::gpu::testing::Outcome;
using ::gemm::gpu::testing::PushRouted;
using ::gemm::gpu::testing::Tolerance;

// A of 256 x 512 BF16 = 256 KiB: four fill the 1 MiB set aside below; two make one chunk.
constexpr int64_t kM = 256, kN = 192, kK = 512;
constexpr int64_t kPinnedBytes = int64_t{1} << 20;
constexpr int64_t kChunkBytes = int64_t{512} << 10;

// A request of `rows` x kN x kK (B [K,N] inline, BF16 out), its operands kept in `ops`.
core::GemmRequest Single(HostOperands& ops, absl::BitGen& gen, int64_t rows = kM) {
  core::GemmRequest r;
  core::Problem p = MakeProblem(rows, kN, kK, core::BLayout::kKN, core::DType::kBF16);
  FillRandom(p, ops, gen, /*with_c=*/false);
  r.problems = {p};
  return r;
}

TEST(RequestPinningGpuTest, MessageOperandsArePinnedWhileRoomLastsAndAnswersMatchFloat64) {
  SKIP_WITHOUT_GPU();
  CudaBackendOptions options = FastOptions();
  options.pinned_request_bytes = kPinnedBytes;
  options.host_copy_chunk_bytes = kChunkBytes;
  Harness h(options);
  ASSERT_NE(h.backend, nullptr);
  absl::BitGen gen;
  constexpr int kRequests = 6;
  std::vector<HostOperands> ops(kRequests);
  std::vector<core::GemmRequest> reqs;
  std::vector<Outcome> outs(kRequests);
  std::vector<std::shared_ptr<core::WorkItem>> items;
  for (int i = 0; i < kRequests; ++i) {
    reqs.push_back(Single(ops[i], gen));
    items.push_back(MakeItem(reqs.back(), &outs[i]));
    h.backend->PinMessageOperands(items.back().get());
    const core::Problem& p = items.back()->request.problems[0];
    // The first four fill the memory set aside; the others keep their message's bytes.
    const bool pinned = i < kPinnedBytes / (kM * kK * 2);
    EXPECT_EQ(p.a_mem, pinned ? core::HostMemory::kPinned : core::HostMemory::kMessage) << i;
    EXPECT_EQ(p.a.size(), ops[i].a.size());
    EXPECT_EQ(p.a.data() != ops[i].a.data(), pinned) << i;
  }
  EXPECT_EQ(h.Staging().request_bytes, kPinnedBytes);
  EXPECT_EQ(h.Staging().request_max_bytes, kPinnedBytes);
  PushRouted(h, std::move(items));
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_TRUE(outs[i].done.WaitForNotificationWithTimeout(kWait)) << i;
    ASSERT_TRUE(outs[i].result.ok()) << outs[i].result.status();
    const core::Output& o = outs[i].result->outputs[0];
    EXPECT_EQ(static_cast<int64_t>(o.bytes().size()), kM * kN * 2) << i;
    EXPECT_LE(CheckEntry(reqs[i].problems[0], o, 0, ops[i].b), Tolerance(core::DType::kBF16)) << i;
  }
  // The finished requests give their pinned memory back once the backend has dropped the items
  // it answered; then two requests of one chunk each, the whole of it, are pinned again.
  for (absl::Time end = absl::Now() + absl::Seconds(10);
       h.Staging().request_bytes != 0 && absl::Now() < end;) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_EQ(h.Staging().request_bytes, 0)
      << "the answered requests' pinned memory did not come back";
  HostOperands chunk_ops[2];
  Outcome unused;
  auto first = MakeItem(Single(chunk_ops[0], gen, 2 * kM), &unused);
  auto second = MakeItem(Single(chunk_ops[1], gen, 2 * kM), &unused);
  h.backend->PinMessageOperands(first.get());
  h.backend->PinMessageOperands(second.get());
  EXPECT_EQ(first->request.problems[0].a_mem, core::HostMemory::kPinned);
  EXPECT_EQ(second->request.problems[0].a_mem, core::HostMemory::kPinned);
  first.reset();
  second.reset();
  EXPECT_EQ(h.Staging().request_bytes, 0);
  // With all of it free, an A of more than one chunk stays in its message.
  HostOperands large_ops;
  auto large = MakeItem(Single(large_ops, gen, 3 * kM), &unused);
  h.backend->PinMessageOperands(large.get());
  EXPECT_EQ(large->request.problems[0].a_mem, core::HostMemory::kMessage);
}

// Copies `bytes` into `arena` in pieces of 1 byte to 64 KiB, each at a random offset (any
// alignment), as a message received into the pinned heap lies; the pieces, in order.
std::vector<absl::string_view> InArenaPieces(PinnedArena& arena, const std::string& bytes,
                                             absl::BitGen& gen) {
  std::vector<absl::string_view> pieces;
  for (size_t at = 0; at < bytes.size();) {
    const size_t n =
        std::min(bytes.size() - at, absl::Uniform<size_t>(gen, 1, (size_t{64} << 10) + 1));
    char* dst = static_cast<char*>(arena.Take(n + 64, 1)) + absl::Uniform<size_t>(gen, 0, 48);
    std::memcpy(dst, bytes.data() + at, n);
    pieces.emplace_back(dst, n);
    at += n;
  }
  return pieces;
}

TEST(RequestPinningGpuTest, OperandsReceivedIntoThePinnedHeapAreReadInPlace) {
  SKIP_WITHOUT_GPU();
  CudaBackendOptions options = FastOptions();
  options.pinned_request_bytes = 0;  // nothing is copied on arrival: in place or staged
  Harness h(options);
  ASSERT_NE(h.backend, nullptr);
  // 4 MiB: within the usual locked-memory limit of an unprivileged user (8 MiB).
  absl::StatusOr<PinnedArena*> arena = PinnedArena::Create(int64_t{4} << 20);
  if (absl::IsFailedPrecondition(arena.status())) GTEST_SKIP() << arena.status();
  ASSERT_TRUE(arena.ok()) << arena.status();
  absl::BitGen gen;
  // K = 512: rows back to back on the device (read in place); K = 500: 1000-byte rows padded to
  // 1008 on the device (left in the message, staged); the A at 128 rows is not in the heap.
  struct Case {
    int64_t m, k;
    bool in_heap;
  };
  const std::vector<Case> cases = {{256, 512, true}, {1, 512, true},    {37, 512, true},
                                   {256, 500, true}, {128, 512, false}, {200, 512, true}};
  std::vector<HostOperands> ops(cases.size());
  std::vector<std::vector<absl::string_view>> pieces(cases.size());
  std::vector<core::GemmRequest> reqs;
  std::vector<Outcome> outs(cases.size());
  std::vector<std::shared_ptr<core::WorkItem>> items;
  for (size_t i = 0; i < cases.size(); ++i) {
    core::GemmRequest r;
    core::Problem p =
        MakeProblem(cases[i].m, kN, cases[i].k, core::BLayout::kKN, core::DType::kBF16);
    FillRandom(p, ops[i], gen, /*with_c=*/false);
    if (cases[i].in_heap) {
      pieces[i] = InArenaPieces(**arena, ops[i].a, gen);
      p.a = core::OperandBytes::Pieces(pieces[i]);
    }
    r.problems = {p};
    reqs.push_back(r);
    items.push_back(MakeItem(reqs.back(), &outs[i]));
    h.backend->PinMessageOperands(items.back().get());
    const core::Problem& q = items.back()->request.problems[0];
    const bool in_place = cases[i].in_heap && cases[i].k == 512;
    EXPECT_EQ(q.a_mem, in_place ? core::HostMemory::kPinned : core::HostMemory::kMessage) << i;
    ASSERT_EQ(q.a.size(), ops[i].a.size()) << i;
    if (cases[i].in_heap) EXPECT_EQ(q.a.pieces()[0].data(), pieces[i][0].data()) << i;
  }
  // Counted (gemm_request_operands_received_pinned_total): the four read in place.
  EXPECT_EQ(h.Staging().received_pinned_operands, 4);
  EXPECT_EQ(h.Staging().heap_bytes, int64_t{4} << 20);
  EXPECT_GT(h.Staging().heap_taken_bytes, 0);
  PushRouted(h, std::move(items));
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSERT_TRUE(outs[i].done.WaitForNotificationWithTimeout(kWait)) << i;
    ASSERT_TRUE(outs[i].result.ok()) << outs[i].result.status();
    const core::Output& o = outs[i].result->outputs[0];
    EXPECT_EQ(static_cast<int64_t>(o.bytes().size()), cases[i].m * kN * 2) << i;
    EXPECT_LE(CheckEntry(reqs[i].problems[0], o, 0, ops[i].b), Tolerance(core::DType::kBF16)) << i;
  }
  EXPECT_FALSE(PinnedArena::Holds(ops[0].a.data(), ops[0].a.size()));
  EXPECT_FALSE(PinnedArena::Create(int64_t{2} << 20).ok()) << "one arena per process";
}

}  // namespace
}  // namespace gemm::gpu
