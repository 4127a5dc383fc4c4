// GPU tests of inline answers sent from pinned staging (server/gpu/pinned_answers.h): answers of
// single and coalesced requests come back exact in size and correct, from pinned memory; when the
// bound leaves no room they are copied and still correct; the pool's used bytes return to 0 once
// every answer is dropped; an answer held by a slow reader neither stalls the requests after it
// nor sees its bytes overwritten. Skipped at run time without a GPU.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
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
using ::gemm::gpu::testing::Register;
using ::gemm::gpu::testing::RunOne;
using ::gemm::gpu::testing::Tolerance;

constexpr int64_t kN = 256, kK = 512;

class PinnedAnswersGpuTest : public ::testing::Test {
 protected:
  void SetUp() override { SKIP_WITHOUT_GPU(); }

  // An inline single request M x kN x kK (BF16 out), its operands kept in `ops`.
  core::GemmRequest Single(int64_t m, HostOperands& ops) {
    core::GemmRequest r;
    core::Problem p = MakeProblem(m, kN, kK, core::BLayout::kNK, core::DType::kBF16);
    FillRandom(p, ops, gen_, /*with_c=*/false);
    r.problems = {p};
    return r;
  }

  // Checks one answer: exactly M*N values, matching float64, sent from pinned memory or not.
  static void ExpectAnswer(const core::Problem& p, const core::Output& o, absl::string_view b,
                           bool pinned) {
    EXPECT_EQ(static_cast<int64_t>(o.bytes().size()), p.m * p.n * 2);
    EXPECT_LE(CheckEntry(p, o, 0, b), Tolerance(core::DType::kBF16));
    EXPECT_EQ(o.held_owner != nullptr, pinned);
    EXPECT_EQ(o.data.empty(), pinned);  // never both
  }

  absl::BitGen gen_;
};

TEST_F(PinnedAnswersGpuTest, InlineAnswersAreSentFromPinnedMemoryAndGiveItBack) {
  Harness h(FastOptions());
  ASSERT_NE(h.backend, nullptr);
  // Singles of odd sizes, then a coalesced batch over a resident B: one unit, one answer block
  // cut into one part per request.
  std::vector<HostOperands> ops(3);
  std::vector<absl::StatusOr<core::GemmResult>> kept;
  std::vector<core::GemmRequest> reqs;
  for (int64_t m : {1, 7, 33}) {
    reqs.push_back(Single(m, ops[reqs.size()]));
    kept.push_back(RunOne(h, reqs.back()));
    ASSERT_TRUE(kept.back().ok()) << kept.back().status();
  }
  const std::string w = RandomBf16Bytes(kN * kK, gen_);
  auto matrix = Register(*h.backend, "w", kN, kK, core::BLayout::kNK, w);
  ASSERT_TRUE(matrix.ok()) << matrix.status();
  std::vector<HostOperands> stacked_ops(5);
  std::vector<core::GemmRequest> stacked;
  std::vector<Outcome> outs(5);
  std::vector<std::shared_ptr<core::WorkItem>> items;
  for (int i = 0; i < 5; ++i) {
    core::GemmRequest r = Single(3 + i, stacked_ops[i]);
    r.problems[0].b = {};
    r.problems[0].b_resident = *matrix;
    stacked.push_back(r);
    items.push_back(MakeItem(r, &outs[i]));
  }
  PushRouted(h, std::move(items));
  for (Outcome& o : outs) ASSERT_TRUE(o.done.WaitForNotificationWithTimeout(kWait));

  for (size_t i = 0; i < kept.size(); ++i) {
    ExpectAnswer(reqs[i].problems[0], kept[i]->outputs[0], ops[i].b, /*pinned=*/true);
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    ASSERT_TRUE(outs[i].result.ok()) << outs[i].result.status();
    EXPECT_EQ(outs[i].result->timing.batch_requests, 5) << "the batch was not coalesced";
    ExpectAnswer(stacked[i].problems[0], outs[i].result->outputs[0], w, /*pinned=*/true);
  }
  core::StagingDescription s = h.Staging();
  EXPECT_EQ(s.pinned_answers, 8);
  EXPECT_EQ(s.copied_answers, 0);
  EXPECT_GT(s.answer_bytes, 0);
  EXPECT_EQ(s.used_bytes, s.answer_bytes);  // the units' own staging went back at completion
  kept.clear();
  for (Outcome& o : outs) o.result = absl::CancelledError("dropped");
  s = h.Staging();
  EXPECT_EQ(s.used_bytes, 0);
  EXPECT_EQ(s.answer_bytes, 0);
}

TEST_F(PinnedAnswersGpuTest, WithoutRoomForAnswersTheyAreCopiedAndCorrect) {
  CudaBackendOptions o = FastOptions();
  o.pinned_answer_fraction = 0;
  Harness h(o);
  ASSERT_NE(h.backend, nullptr);
  for (int64_t m : {1, 16, 100}) {
    HostOperands ops;
    core::GemmRequest r = Single(m, ops);
    auto res = RunOne(h, r);
    ASSERT_TRUE(res.ok()) << res.status();
    ExpectAnswer(r.problems[0], res->outputs[0], ops.b, /*pinned=*/false);
  }
  const core::StagingDescription s = h.Staging();
  EXPECT_EQ(s.pinned_answers, 0);
  EXPECT_EQ(s.copied_answers, 3);
  EXPECT_EQ(s.used_bytes, 0);
}

TEST_F(PinnedAnswersGpuTest, AHeldAnswerNeitherStallsOthersNorIsOverwritten) {
  // A small pool the requests below go through many times over; answers may hold a quarter.
  CudaBackendOptions o = FastOptions();
  o.staging_bytes = 8 << 20;
  o.staging_slab_bytes = 8 << 20;
  o.pinned_answer_fraction = 0.25;
  Harness h(o);
  ASSERT_NE(h.backend, nullptr);
  HostOperands held_ops;
  core::GemmRequest held_req = Single(1024, held_ops);  // a 512 KiB answer a client is slow to read
  absl::StatusOr<core::GemmResult> held = RunOne(h, held_req);
  ASSERT_TRUE(held.ok()) << held.status();
  ASSERT_NE(held->outputs[0].held_owner, nullptr);
  const std::string before(held->outputs[0].bytes());

  // 64 MiB of answers and 128 MiB of operands through an 8 MiB pool, 16 requests at a time.
  constexpr int kRounds = 8, kAtOnce = 16;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<HostOperands> ops(kAtOnce);
    std::vector<core::GemmRequest> reqs;
    std::vector<Outcome> outs(kAtOnce);
    for (int i = 0; i < kAtOnce; ++i) {
      reqs.push_back(Single(1024, ops[i]));
      PushRouted(h, {MakeItem(reqs.back(), &outs[i])});
    }
    for (int i = 0; i < kAtOnce; ++i) {
      ASSERT_TRUE(outs[i].done.WaitForNotificationWithTimeout(kWait)) << "round " << round;
      ASSERT_TRUE(outs[i].result.ok()) << outs[i].result.status();
      const core::Output& out = outs[i].result->outputs[0];
      EXPECT_EQ(static_cast<int64_t>(out.bytes().size()), 1024 * kN * 2);
      EXPECT_LE(CheckEntry(reqs[i].problems[0], out, 0, ops[i].b), 8e-3) << "round " << round;
    }
  }
  EXPECT_EQ(held->outputs[0].bytes(), before);  // its part was never handed out again
  ExpectAnswer(held_req.problems[0], held->outputs[0], held_ops.b, /*pinned=*/true);
  const core::StagingDescription s = h.Staging();
  EXPECT_EQ(s.pinned_answers + s.copied_answers, 1 + kRounds * kAtOnce);
  EXPECT_EQ(s.used_bytes, s.answer_bytes);
  EXPECT_LE(s.answer_bytes, s.answer_max_bytes);
  held = absl::CancelledError("dropped");
  EXPECT_EQ(h.Staging().used_bytes, 0);
}

}  // namespace
}  // namespace gemm::gpu
