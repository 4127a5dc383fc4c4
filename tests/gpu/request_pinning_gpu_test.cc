// GPU tests of requests' A copied into pinned memory on arrival (server/gpu/request_pinning.h):
// while the pinned memory set aside has room, a request's message-borne A is pinned and its
// answer is exact in size and matches float64; past it the request keeps its message's bytes and
// is staged as before, also correct; once the requests are gone their memory can be taken again;
// an A larger than one host-copy chunk is never pinned.
// Skipped at run time without a GPU.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/gpu/cuda_backend.h"
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

}  // namespace
}  // namespace gemm::gpu
