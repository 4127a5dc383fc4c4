// GPU tests of the CUDA backend (server/gpu), driven directly through a fake WorkSource: every
// request kind and both B layouts against a float64 CPU reference, coalesced batches against a
// resident 8192x8192 B, pool accounting back to idle, out-of-memory isolation, and the
// self-test fallback. Skipped at run time without a GPU.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/bf16.h"
#include "common/reference_gemm.h"
#include "gemm/kernel.h"
#include "gtest/gtest.h"
#include "server/gpu/cuda_backend.h"
#include "tests/gpu/engine_harness.h"
#include "tests/gpu/engine_test_util.h"

namespace gemm::gpu {
namespace {

using ::gemm::gpu::testing::CheckEntry;
using ::gemm::gpu::testing::FakeSource;
using ::gemm::gpu::testing::FastOptions;
using ::gemm::gpu::testing::FillRandom;
using ::gemm::gpu::testing::Harness;
using ::gemm::gpu::testing::HostOperands;
using ::gemm::gpu::testing::kWait;
using ::gemm::gpu::testing::MakeBatch;
using ::gemm::gpu::testing::MakeItem;
using ::gemm::gpu::testing::MakeProblem;
using ::gemm::gpu::testing::Outcome;
using ::gemm::gpu::testing::PushRouted;
using ::gemm::gpu::testing::Register;
using ::gemm::gpu::testing::RunOne;
using ::gemm::gpu::testing::Tolerance;

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override { SKIP_WITHOUT_GPU(); }
  absl::BitGen gen_;
};

TEST_F(EngineTest, SingleAndBatchInlineBothLayoutsMatchFloat64) {
  Harness h(FastOptions());
  ASSERT_NE(h.backend, nullptr);
  // Odd sizes: A rows of 2*100 bytes and D rows of 2*50 bytes are not 16-byte multiples, so the
  // pitched copies are exercised.
  for (core::BLayout layout : {core::BLayout::kKN, core::BLayout::kNK}) {
    for (core::DType dt : {core::DType::kBF16, core::DType::kFP32}) {
      for (bool with_c : {false, true}) {
        for (int64_t count : {1, 3}) {
          for (bool shared : {false, true}) {
            if (count == 1 && shared) continue;
            SCOPED_TRACE(absl::StrCat("layout=", core::BLayoutName(layout),
                                      " dtype=", core::DTypeName(dt), " c=", with_c,
                                      " count=", count, " shared=", shared));
            core::GemmRequest r;
            r.kind = count > 1 ? core::WorkKind::kBatch : core::WorkKind::kSingle;
            core::Problem p = MakeProblem(77, 50, 100, layout, dt, count);
            p.b_shared = shared;
            p.alpha = 0.75f;
            p.beta = with_c ? -0.5f : 0.0f;
            HostOperands ops;
            FillRandom(p, ops, gen_, with_c);
            r.problems = {p};
            auto res = RunOne(h, r);
            ASSERT_TRUE(res.ok()) << res.status();
            ASSERT_EQ(res->outputs.size(), 1u);
            const core::Output& o = res->outputs[0];
            std::vector<int64_t> shape =
                count > 1 ? std::vector<int64_t>{count, 77, 50} : std::vector<int64_t>{77, 50};
            EXPECT_EQ(o.shape, shape);
            EXPECT_EQ(o.dtype, dt);
            for (int64_t e = 0; e < count; ++e) {
              const double err = CheckEntry(p, o, e, ops.b);
              EXPECT_LE(err, Tolerance(dt)) << "entry " << e;
            }
            EXPECT_FALSE(res->kernel.empty());
            EXPECT_GE(res->timing.device, 0);
            EXPECT_LT(res->timing.device, CudaDeviceCount());
            EXPECT_GT(res->timing.compute, absl::ZeroDuration());
          }
        }
      }
    }
  }
}

TEST_F(EngineTest, GroupMixedShapesLayoutsDtypesMatchFloat64) {
  Harness h(FastOptions());
  ASSERT_NE(h.backend, nullptr);
  core::GemmRequest r;
  r.kind = core::WorkKind::kGroup;
  std::vector<HostOperands> ops(5);
  r.problems = {MakeProblem(64, 128, 256, core::BLayout::kNK, core::DType::kBF16),
                MakeProblem(33, 72, 40, core::BLayout::kKN, core::DType::kBF16),
                MakeProblem(300, 200, 104, core::BLayout::kNK, core::DType::kBF16),
                MakeProblem(17, 24, 1000, core::BLayout::kNK, core::DType::kFP32),
                MakeProblem(5, 9, 13, core::BLayout::kKN, core::DType::kFP32)};
  for (size_t i = 0; i < r.problems.size(); ++i) {
    FillRandom(r.problems[i], ops[i], gen_, i == 2);
    r.problems[i].beta = i == 2 ? 1.0f : 0.0f;
  }
  auto res = RunOne(h, r);
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_EQ(res->outputs.size(), r.problems.size());
  for (size_t i = 0; i < r.problems.size(); ++i) {
    const core::Problem& p = r.problems[i];
    EXPECT_EQ(res->outputs[i].shape, (std::vector<int64_t>{p.m, p.n})) << i;
    EXPECT_LE(CheckEntry(p, res->outputs[i], 0, ops[i].b), Tolerance(p.out_dtype)) << i;
  }
}

// A mixture-of-experts step: one group request whose members are a few tokens each against
// resident experts of both layouts (one expert twice). Few tiles: the grouped launches split along
// K through the unit's workspace.
TEST_F(EngineTest, GroupOverResidentExpertsMatchesFloat64) {
  Harness h(FastOptions());
  ASSERT_NE(h.backend, nullptr);
  const int64_t idle = h.PoolUsed();
  const int64_t N = 1024, K = 4096;
  const core::BLayout layouts[] = {core::BLayout::kNK, core::BLayout::kNK, core::BLayout::kKN};
  std::vector<std::string> bytes;
  std::vector<std::shared_ptr<core::ResidentMatrix>> experts;
  for (int e = 0; e < 3; ++e) {
    const bool kn = layouts[e] == core::BLayout::kKN;
    bytes.push_back(RandomBf16Bytes(N * K, gen_));
    // On one GPU: the backend runs a batch on one device (the engine splits groups over
    // several, DeviceSplit; EngineServiceTest.ExpertStepAcrossGpusIsSplitAndAnsweredAsOne).
    auto m = Register(*h.backend, absl::StrCat("expert-", e), kn ? K : N, kn ? N : K, layouts[e],
                      bytes.back(), {0});
    ASSERT_TRUE(m.ok()) << m.status();
    experts.push_back(*m);
  }
  core::GemmRequest r;
  r.kind = core::WorkKind::kGroup;
  const int64_t rows[] = {3, 1, 5, 2};
  const int expert_of[] = {0, 1, 2, 0};
  std::vector<HostOperands> ops(4);
  for (int i = 0; i < 4; ++i) {
    core::Problem p = MakeProblem(rows[i], N, K, layouts[expert_of[i]], core::DType::kBF16);
    p.b_resident = experts[expert_of[i]];
    p.b_handle = experts[expert_of[i]]->desc().handle;
    FillRandom(p, ops[i], gen_, false);
    r.problems.push_back(p);
  }
  auto res = RunOne(h, r);
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_EQ(res->outputs.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(res->outputs[i].shape, (std::vector<int64_t>{rows[i], N})) << i;
    EXPECT_LE(CheckEntry(r.problems[i], res->outputs[i], 0, bytes[expert_of[i]]),
              Tolerance(core::DType::kBF16))
        << "member " << i << " (expert " << expert_of[i] << ")";
  }
  r.problems.clear();
  experts.clear();  // the last references: freed
  EXPECT_EQ(h.PoolUsed(), idle);
}

// Sixteen mixture-of-experts steps (each two of eight resident experts, both layouts, 1-3 rows)
// handed over as one batch run as ONE unit: each expert's rows of all sixteen stacked, one
// grouped call per layout. Every output is checked against float64 and against the same
// request run alone.
TEST_F(EngineTest, ExpertGroupsOfManyRequestsRunAsOneUnit) {
  Harness h(FastOptions());
  ASSERT_NE(h.backend, nullptr);
  const int64_t idle = h.PoolUsed();
  const int64_t N = 1024, K = 4096;
  constexpr int kExperts = 8, kRequests = 16;
  std::vector<std::string> bytes;
  std::vector<std::shared_ptr<core::ResidentMatrix>> experts;
  auto layout_of = [](int e) { return e < kExperts / 2 ? core::BLayout::kNK : core::BLayout::kKN; };
  for (int e = 0; e < kExperts; ++e) {
    const bool kn = layout_of(e) == core::BLayout::kKN;
    bytes.push_back(RandomBf16Bytes(N * K, gen_));
    auto m = Register(*h.backend, absl::StrCat("moe-", e), kn ? K : N, kn ? N : K, layout_of(e),
                      bytes.back(), {0});  // one GPU, as above
    ASSERT_TRUE(m.ok()) << m.status();
    experts.push_back(*m);
  }
  std::vector<core::GemmRequest> reqs(kRequests);
  std::vector<std::vector<HostOperands>> ops(kRequests, std::vector<HostOperands>(2));
  std::vector<std::vector<int>> expert_of(kRequests);
  for (int r = 0; r < kRequests; ++r) {
    reqs[r].request_id = absl::StrCat("step", r);
    reqs[r].kind = core::WorkKind::kGroup;
    const int e1 = r % kExperts,
              e2 = (r * 3 + 1) % kExperts == e1 ? (e1 + 1) % kExperts : (r * 3 + 1) % kExperts;
    for (int e : {e1, e2}) {
      core::Problem p = MakeProblem(1 + r % 3, N, K, layout_of(e), core::DType::kBF16);
      p.b_resident = experts[e];
      p.b_handle = experts[e]->desc().handle;
      FillRandom(p, ops[r][reqs[r].problems.size()], gen_, false);
      reqs[r].problems.push_back(p);
      expert_of[r].push_back(e);
    }
    ASSERT_TRUE(core::IsExpertGroup(reqs[r]));
  }
  {
    // Warm-up of both paths (module loading, plans) so the timings logged below are steady-state.
    std::vector<Outcome> warm(2 * kRequests);
    std::vector<std::shared_ptr<core::WorkItem>> w_items;
    for (int r = 0; r < kRequests; ++r) w_items.push_back(MakeItem(reqs[r], &warm[r]));
    PushRouted(h, w_items);
    for (int r = 0; r < kRequests; ++r) PushRouted(h, {MakeItem(reqs[r], &warm[kRequests + r])});
    for (auto& o : warm) ASSERT_TRUE(o.done.WaitForNotificationWithTimeout(kWait));
  }
  std::vector<Outcome> together(kRequests), alone(kRequests);
  std::vector<std::shared_ptr<core::WorkItem>> items;
  for (int r = 0; r < kRequests; ++r) items.push_back(MakeItem(reqs[r], &together[r]));
  PushRouted(h, items);
  items.clear();
  for (int r = 0; r < kRequests; ++r) {
    ASSERT_TRUE(together[r].done.WaitForNotificationWithTimeout(kWait));
  }
  // Then one by one (each a unit of its own), after the batch has finished.
  for (int r = 0; r < kRequests; ++r) PushRouted(h, {MakeItem(reqs[r], &alone[r])});
  int64_t rows = 0;
  for (const auto& q : reqs) {
    for (const auto& p : q.problems) rows += p.m;
  }
  for (int r = 0; r < kRequests; ++r) {
    ASSERT_TRUE(together[r].done.WaitForNotificationWithTimeout(kWait));
    ASSERT_TRUE(alone[r].done.WaitForNotificationWithTimeout(kWait));
    ASSERT_TRUE(together[r].result.ok()) << together[r].result.status();
    ASSERT_TRUE(alone[r].result.ok()) << alone[r].result.status();
    const core::GemmResult& t = *together[r].result;
    EXPECT_EQ(t.timing.batch_requests, kRequests);
    EXPECT_EQ(t.timing.batch_rows, rows);
    ASSERT_EQ(t.outputs.size(), 2u);
    for (int j = 0; j < 2; ++j) {
      const core::Problem& p = reqs[r].problems[j];
      EXPECT_EQ(t.outputs[j].shape, (std::vector<int64_t>{p.m, N}));
      EXPECT_LE(CheckEntry(p, t.outputs[j], 0, bytes[expert_of[r][j]]),
                Tolerance(core::DType::kBF16))
          << "request " << r << " problem " << j << " (expert " << expert_of[r][j] << ")";
      std::vector<float> a = DecodeOutput(t.outputs[j].bytes(), false);
      std::vector<float> b = DecodeOutput(alone[r].result->outputs[j].bytes(), false);
      std::vector<double> bd(b.begin(), b.end());
      EXPECT_LE(RelativeError(a, bd), 8e-3) << "request " << r << " problem " << j;
    }
  }
  absl::Duration alone_sum;
  for (const auto& o : alone) alone_sum += o.result->timing.compute;
  GTEST_LOG_(INFO) << "GPU compute (CUDA events): 16 expert steps as one unit "
                   << together[0].result->timing.compute << "; run one by one " << alone_sum
                   << " in all";
  reqs.clear();
  together.clear();
  alone.clear();
  experts.clear();  // the last references (once the units have let go of their items): freed
  for (int i = 0; i < 100 && h.PoolUsed() != idle; ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_EQ(h.PoolUsed(), idle);
}

TEST_F(EngineTest, ResidentBBothLayoutsMatchFloat64AndReleaseFreesMemory) {
  Harness h(FastOptions());
  ASSERT_NE(h.backend, nullptr);
  const int64_t idle = h.PoolUsed();
  for (core::BLayout layout : {core::BLayout::kKN, core::BLayout::kNK}) {
    const int64_t K = 200, N = 90;  // N*2 = 180 bytes: a padded pitch for kKN
    const int64_t rows = layout == core::BLayout::kKN ? K : N;
    const int64_t cols = layout == core::BLayout::kKN ? N : K;
    std::string bytes = RandomBf16Bytes(rows * cols, gen_);
    auto m = Register(*h.backend, absl::StrCat("w-", core::BLayoutName(layout)), rows, cols, layout,
                      bytes);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_GT(h.PoolUsed(), idle);
    ASSERT_EQ((*m)->desc().devices.size(), 1u);  // placed on one GPU (no replication asked)
    core::GemmRequest r;
    core::Problem p = MakeProblem(31, N, K, layout, core::DType::kBF16);
    p.b_resident = *m;
    p.b_handle = (*m)->desc().handle;
    HostOperands ops;
    FillRandom(p, ops, gen_, false);
    r.problems = {p};
    auto res = RunOne(h, r);
    ASSERT_TRUE(res.ok()) << res.status();
    EXPECT_LE(CheckEntry(p, res->outputs[0], 0, bytes), Tolerance(p.out_dtype));
    r.problems[0].b_resident.reset();
    p.b_resident.reset();
    m->reset();  // last reference: freed
    EXPECT_EQ(h.PoolUsed(), idle);
  }
}

// Items on one resident B with C: stacked into one GEMM when they share alpha, beta and C's
// presence; items that differ in them (some with C, some without) do not coalesce
// (core::CoalescingKeyOf) and each runs as its own unit. Every item against float64.
TEST_F(EngineTest, StackedItemsWithCAndMixedScalarsMatchFloat64) {
  Harness h(FastOptions());
  ASSERT_NE(h.backend, nullptr);
  const int64_t K = 200, N = 90;  // N*2 = 180 bytes: pitched rows of B [K,N], C and D
  const std::vector<int64_t> ms = {3, 17, 1, 64, 9};
  for (core::BLayout layout : {core::BLayout::kKN, core::BLayout::kNK}) {
    const int64_t rows = layout == core::BLayout::kKN ? K : N;
    const int64_t cols = layout == core::BLayout::kKN ? N : K;
    const std::string w = RandomBf16Bytes(rows * cols, gen_);
    auto m =
        Register(*h.backend, absl::StrCat("wc-", core::BLayoutName(layout)), rows, cols, layout, w);
    ASSERT_TRUE(m.ok()) << m.status();
    for (core::DType dt : {core::DType::kBF16, core::DType::kFP32}) {
      for (bool mixed : {false, true}) {
        SCOPED_TRACE(absl::StrCat("layout=", core::BLayoutName(layout),
                                  " dtype=", core::DTypeName(dt), " mixed=", mixed));
        std::vector<HostOperands> ops(ms.size());
        std::vector<core::Problem> ps;
        std::vector<Outcome> outs(ms.size());
        std::vector<std::shared_ptr<core::WorkItem>> items;
        for (size_t i = 0; i < ms.size(); ++i) {
          core::Problem p = MakeProblem(ms[i], N, K, layout, dt);
          p.b_resident = *m;
          p.b_handle = (*m)->desc().handle;
          const bool with_c = !mixed || i % 2 == 0;
          p.alpha = mixed ? 0.25f * static_cast<float>(i + 1) : 0.5f;
          p.beta = with_c ? -1.0f : 0.0f;
          FillRandom(p, ops[i], gen_, with_c);
          core::GemmRequest r;
          r.request_id = absl::StrCat("s", i);
          r.problems = {p};
          ps.push_back(p);
          items.push_back(MakeItem(std::move(r), &outs[i]));
        }
        PushRouted(h, std::move(items));
        for (size_t i = 0; i < ms.size(); ++i) {
          ASSERT_TRUE(outs[i].done.WaitForNotificationWithTimeout(kWait));
          ASSERT_TRUE(outs[i].result.ok()) << outs[i].result.status();
          const core::GemmResult& res = *outs[i].result;
          EXPECT_EQ(res.timing.batch_requests, mixed ? 1 : static_cast<int>(ms.size()));
          ASSERT_EQ(res.outputs.size(), 1u);
          EXPECT_EQ(res.outputs[0].shape, (std::vector<int64_t>{ms[i], N}));
          EXPECT_LE(CheckEntry(ps[i], res.outputs[0], 0, w), Tolerance(dt)) << "item " << i;
        }
      }
    }
  }
}

TEST_F(EngineTest, ExecutorReportsIdleWithTheBatchesItTook) {
  Harness h(FastOptions());
  ASSERT_NE(h.backend, nullptr);
  // At start: nothing taken.
  EXPECT_GE(h.source.idle_reports.load(), 1);
  EXPECT_EQ(h.source.last_idle_taken[0].load(), 0u);
  for (int i = 1; i <= 3; ++i) {
    core::GemmRequest r;
    r.request_id = absl::StrCat("idle-", i);
    HostOperands ops;
    core::Problem p = MakeProblem(64, 256, 128, core::BLayout::kKN, core::DType::kBF16);
    FillRandom(p, ops, gen_, false);
    r.problems = {p};
    Outcome out;
    h.source.Push(MakeBatch({MakeItem(r, &out)}), 0);  // to GPU 0 (others may be present)
    ASSERT_TRUE(out.done.WaitForNotificationWithTimeout(kWait));
    ASSERT_TRUE(out.result.ok()) << out.result.status();
    // The unit's GPU work is over before it is answered, so the report is in: i batches taken.
    EXPECT_EQ(h.source.last_idle_taken[0].load(), static_cast<uint64_t>(i));
  }
  EXPECT_EQ(h.source.pulled.load(), 3);
}

TEST_F(EngineTest, CoalescedBatchOnResident8192EqualsPerItemResults) {
  Harness h(FastOptions());
  ASSERT_NE(h.backend, nullptr);
  const int64_t K = 8192, N = 8192, M = 16, kItems = 16;
  std::string w = RandomBf16Bytes(N * K, gen_);
  auto m = Register(*h.backend, "w8192", N, K, core::BLayout::kNK, w);
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<HostOperands> ops(kItems);
  std::vector<core::GemmRequest> reqs(kItems);
  for (int i = 0; i < kItems; ++i) {
    core::Problem p = MakeProblem(M, N, K, core::BLayout::kNK, core::DType::kBF16);
    p.b_resident = *m;
    p.b_handle = "w8192";
    FillRandom(p, ops[i], gen_, false);
    reqs[i].request_id = absl::StrCat("r", i);
    reqs[i].problems = {p};
  }
  {
    // Warm-up (module loading, cuBLASLt plans) so the timings logged below are steady-state.
    std::vector<Outcome> warm(kItems + 1);
    std::vector<std::shared_ptr<core::WorkItem>> w_items;
    for (int i = 0; i < kItems; ++i) w_items.push_back(MakeItem(reqs[i], &warm[i]));
    PushRouted(h, w_items);
    PushRouted(h, {MakeItem(reqs[0], &warm[kItems])});
    for (auto& o : warm) ASSERT_TRUE(o.done.WaitForNotificationWithTimeout(kWait));
  }
  // One batch of 16 items: ONE GEMM of M=256.
  std::vector<Outcome> together(kItems);
  std::vector<std::shared_ptr<core::WorkItem>> items;
  for (int i = 0; i < kItems; ++i) items.push_back(MakeItem(reqs[i], &together[i]));
  PushRouted(h, items);
  items.clear();
  // The same requests one by one.
  std::vector<Outcome> alone(kItems);
  for (int i = 0; i < kItems; ++i) PushRouted(h, {MakeItem(reqs[i], &alone[i])});
  for (int i = 0; i < kItems; ++i) {
    ASSERT_TRUE(together[i].done.WaitForNotificationWithTimeout(kWait));
    ASSERT_TRUE(alone[i].done.WaitForNotificationWithTimeout(kWait));
    ASSERT_TRUE(together[i].result.ok()) << together[i].result.status();
    ASSERT_TRUE(alone[i].result.ok()) << alone[i].result.status();
    const core::GemmResult& t = *together[i].result;
    EXPECT_EQ(t.timing.batch_requests, kItems);
    EXPECT_EQ(t.timing.batch_rows, M * kItems);
    EXPECT_EQ(alone[i].result->timing.batch_requests, 1);
    // Equal up to BF16 rounding of different accumulation orders (the kernel may split K
    // differently for M=16 and M=256): compare relative Frobenius error.
    std::vector<float> a = DecodeOutput(t.outputs[0].bytes(), false);
    std::vector<float> b = DecodeOutput(alone[i].result->outputs[0].bytes(), false);
    std::vector<double> bd(b.begin(), b.end());
    EXPECT_LE(RelativeError(a, bd), 8e-3) << "item " << i;
  }
  // Two items against float64 (16 x 8192 x 8192 each).
  for (int64_t i : {int64_t{0}, kItems - 1}) {
    EXPECT_LE(CheckEntry(reqs[i].problems[0], together[i].result->outputs[0], 0, w), 8e-3)
        << "item " << i;
  }
  absl::Duration alone_sum;
  for (const auto& o : alone) alone_sum += o.result->timing.compute;
  GTEST_LOG_(INFO) << "GPU compute (CUDA events): one coalesced M=256 GEMM "
                   << together[0].result->timing.compute << " for 16 items; 16 separate M=16 GEMMs "
                   << alone_sum << " in all (" << alone[0].result->timing.compute << " the first)";
}

// Many launch threads on ONE stream, alternating the two decode paths that pass partials through
// the stream's workspace: M=16 (small-M kernel + fixup kernel) and M=48 (SM90 kernel with tail
// split-K). Every result is checked against float64. Without the per-stream enqueue lock, another
// thread's M=48 kernel could land between an M=16 main kernel and its fixup and overwrite the
// partials (seen as ~1 wrong answer in 2,000 under a mixed decode load on an H200).
// Returns how many of 3000 alternating M=16 / M=48 requests (each its own unit) came back wrong.
int WrongOfMixedDecodeUnits(const CudaBackendOptions& o, absl::BitGen& gen_) {
  Harness h(o);
  EXPECT_NE(h.backend, nullptr);
  if (h.backend == nullptr) return -1;
  const int64_t N = 1024, K = 4096;
  const std::string w = RandomBf16Bytes(N * K, gen_);
  auto m = Register(*h.backend, "w1024", N, K, core::BLayout::kNK, w);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return -1;
  constexpr int kOperands = 3, kRequests = 3000;
  struct Case {
    int64_t rows;
    std::string a;
    std::vector<double> ref;
  };
  std::vector<Case> cases;
  for (int64_t rows : {16, 48}) {
    for (int i = 0; i < kOperands; ++i) {
      Case c{rows, RandomBf16Bytes(rows * K, gen_), {}};
      c.ref = ReferenceGemm(RefProblem{rows, N, K, true, 1.0f, 0.0f}, c.a, w, {});
      cases.push_back(std::move(c));
    }
  }
  std::vector<Outcome> outs(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    const Case& c = cases[i % cases.size()];
    core::Problem p = MakeProblem(c.rows, N, K, core::BLayout::kNK, core::DType::kBF16);
    p.b_resident = *m;
    p.b_handle = "w1024";
    p.a = c.a;
    core::GemmRequest r;
    r.problems = {p};
    PushRouted(h, {MakeItem(std::move(r), &outs[i])});  // one unit each
  }
  int wrong = 0;
  for (int i = 0; i < kRequests; ++i) {
    if (!outs[i].done.WaitForNotificationWithTimeout(kWait)) {
      ADD_FAILURE() << "request " << i << " not answered";
      return -1;
    }
    if (!outs[i].result.ok()) {
      ADD_FAILURE() << "request " << i << ": " << outs[i].result.status();
      ++wrong;
      continue;
    }
    const Case& c = cases[i % cases.size()];
    const double err =
        RelativeError(DecodeOutput(outs[i].result->outputs[0].bytes(), false), c.ref);
    if (!(err <= 8e-3)) {
      if (++wrong <= 5) ADD_FAILURE() << "request " << i << " (M=" << c.rows << "): error " << err;
    }
    // The compute time is the kernels' own: positive and far below the whole request's.
    if (outs[i].result->timing.compute <= absl::ZeroDuration()) ++wrong;
  }
  return wrong;
}

TEST_F(EngineTest, LaunchThreadsSharingOneCopyStreamNeverInterleaveUnits) {
  CudaBackendOptions o = FastOptions();
  o.executor.launch_threads_per_device = 8;
  o.streams_per_device = 1;  // every unit's copies on one stream
  EXPECT_EQ(WrongOfMixedDecodeUnits(o, gen_), 0) << "of 3000";
}

// The same with every unit's kernels on the device's compute stream (copies on 4 streams): the
// compute stream's workspace is shared by all units, so their kernels must not interleave there.
TEST_F(EngineTest, SerialKernelsOnTheComputeStreamNeverInterleaveUnits) {
  CudaBackendOptions o = FastOptions();
  o.executor.launch_threads_per_device = 8;
  o.streams_per_device = 4;
  EXPECT_EQ(WrongOfMixedDecodeUnits(o, gen_), 0) << "of 3000";
}

// Queues 48 GPU-heavy requests for device 0 at once (resident 28672x8192 B, M=256: ~0.2 ms of
// tensor work and 14 MiB of result per 4 MiB of A), each its own unit, with
// `max_units_in_flight_per_device` = `bound`; returns the most requests that were handed to the
// device and not yet answered whenever one of its 4 launch threads asked for more work.
int64_t MaxAheadOfAnswers(int bound, absl::BitGen& gen, double work_bound_ms = 0) {
  std::atomic<int64_t> answered{0};
  std::atomic<int64_t> most{0};
  std::atomic<FakeSource*> source{nullptr};  // set once the harness exists
  CudaBackendOptions o = FastOptions();
  o.executor.launch_threads_per_device = 4;
  o.executor.max_units_in_flight_per_device = bound;
  o.executor.max_work_in_flight_ms_per_device = work_bound_ms;
  o.staging_bytes = 1024 << 20;
  Harness h(o, [&] {
    FakeSource* s = source.load();
    if (s == nullptr) return;  // launch threads start asking before the harness is built
    const int64_t ahead = s->pulled.load() - answered.load();
    int64_t m = most.load();
    while (ahead > m && !most.compare_exchange_weak(m, ahead)) {
    }
  });
  source = &h.source;  // before any request is pushed
  EXPECT_NE(h.backend, nullptr);
  if (h.backend == nullptr) return -1;
  const int64_t N = 28672, K = 8192, M = 256;
  auto w = Register(*h.backend, "w", N, K, core::BLayout::kNK, RandomBf16Bytes(N * K, gen), {0});
  EXPECT_TRUE(w.ok()) << w.status();
  if (!w.ok()) return -1;
  const std::string a = RandomBf16Bytes(M * K, gen);
  constexpr int kRequests = 48;
  std::vector<Outcome> outs(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    core::Problem p = MakeProblem(M, N, K, core::BLayout::kNK, core::DType::kBF16);
    p.b_resident = *w;
    p.b_handle = "w";
    p.a = a;
    core::GemmRequest r;
    r.problems = {p};
    auto item = MakeItem(std::move(r), &outs[i]);
    item->done = [inner = item->done, &answered](absl::StatusOr<core::GemmResult> res) {
      answered.fetch_add(1);
      inner(std::move(res));
    };
    h.source.Push(MakeBatch({item}), 0);
  }
  for (int i = 0; i < kRequests; ++i) {
    EXPECT_TRUE(outs[i].done.WaitForNotificationWithTimeout(kWait)) << i;
    EXPECT_TRUE(outs[i].result.ok()) << outs[i].result.status();
  }
  h.Stop();
  return most.load();
}

TEST_F(EngineTest, LaunchThreadsPullOnlyWhileUnitsInFlightAreUnderTheBound) {
  // Without a bound the launch threads run ahead of the GPU (the test's premise: if they did not,
  // it could not tell the bound apart from no bound).
  const int64_t unbounded = MaxAheadOfAnswers(0, gen_);
  EXPECT_GT(unbounded, 2) << "the load never got ahead of the GPU";
  const int64_t bounded = MaxAheadOfAnswers(2, gen_);
  EXPECT_GE(bounded, 1);
  EXPECT_LE(bounded, 2);
  GTEST_LOG_(INFO) << "requests handed to the device and not answered, at most: " << unbounded
                   << " without a bound, " << bounded << " with max_units_in_flight_per_device=2";
}

// The bound on estimated work: each request (M=256 against 28672x8192) is ~0.11 ms at an H100's or
// H200's peak rates, so a 0.3 ms bound lets at most 3 run ahead of the answers (the third is
// pulled while 0.22 ms are in flight), and one thread pulls at a time.
TEST_F(EngineTest, LaunchThreadsPullOnlyWhileEstimatedWorkInFlightIsUnderTheBound) {
  const int64_t unbounded = MaxAheadOfAnswers(0, gen_);
  EXPECT_GT(unbounded, 3) << "the load never got ahead of the GPU";
  const int64_t bounded = MaxAheadOfAnswers(0, gen_, /*work_bound_ms=*/0.3);
  EXPECT_GE(bounded, 1);
  EXPECT_LE(bounded, 3);
  GTEST_LOG_(INFO) << "requests handed to the device and not answered, at most: " << unbounded
                   << " without a bound, " << bounded
                   << " with max_work_in_flight_ms_per_device=0.3";
}

TEST_F(EngineTest, PoolReturnsToIdleAfterConcurrentLoad) {
  Harness h(FastOptions());
  ASSERT_NE(h.backend, nullptr);
  const int64_t idle = h.PoolUsed();
  constexpr int kRequests = 64;
  std::vector<Outcome> outs(kRequests);
  std::vector<HostOperands> ops(kRequests);
  std::vector<core::Problem> probs;
  for (int i = 0; i < kRequests; ++i) {
    core::GemmRequest r;
    r.priority = i % 5 == 0 ? core::Priority::kHigh : core::Priority::kNormal;
    core::Problem p = MakeProblem(64 + i, 256, 512, i % 2 ? core::BLayout::kNK : core::BLayout::kKN,
                                  core::DType::kBF16);
    FillRandom(p, ops[i], gen_, false);
    r.problems = {p};
    probs.push_back(p);
    h.source.Push(MakeBatch({MakeItem(r, &outs[i])}));
  }
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_TRUE(outs[i].done.WaitForNotificationWithTimeout(kWait));
    ASSERT_TRUE(outs[i].result.ok()) << outs[i].result.status();
    EXPECT_LE(CheckEntry(probs[i], outs[i].result->outputs[0], 0, ops[i].b), 8e-3) << i;
  }
  EXPECT_EQ(h.PoolUsed(), idle);
}

TEST_F(EngineTest, OutOfMemoryIsResourceExhaustedAndOthersKeepSucceeding) {
  CudaBackendOptions o = FastOptions();
  o.pool_cap_bytes = int64_t{512} << 20;  // ~192 MiB of it are the streams' workspaces
  Harness h(o);
  ASSERT_NE(h.backend, nullptr);
  const int64_t idle = h.PoolUsed();
  // 8192^3 inline: A, B and D are 128 MiB each: over the cap.
  const int64_t big = 8192;
  std::string pattern(big * big * 2, '\x3f');
  core::GemmRequest huge;
  core::Problem hp = MakeProblem(big, big, big, core::BLayout::kKN, core::DType::kBF16);
  hp.a = pattern;
  hp.b = pattern;
  huge.problems = {hp};
  Outcome huge_out;
  std::vector<Outcome> small(8);
  std::vector<HostOperands> ops(8);
  std::vector<core::Problem> probs;
  h.source.Push(MakeBatch({MakeItem(huge, &huge_out)}));
  for (int i = 0; i < 8; ++i) {
    core::GemmRequest r;
    core::Problem p = MakeProblem(128, 128, 128, core::BLayout::kNK, core::DType::kBF16);
    FillRandom(p, ops[i], gen_, false);
    r.problems = {p};
    probs.push_back(p);
    h.source.Push(MakeBatch({MakeItem(r, &small[i])}));
  }
  ASSERT_TRUE(huge_out.done.WaitForNotificationWithTimeout(kWait));
  EXPECT_EQ(huge_out.result.status().code(), absl::StatusCode::kResourceExhausted)
      << huge_out.result.status();
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(small[i].done.WaitForNotificationWithTimeout(kWait));
    ASSERT_TRUE(small[i].result.ok()) << small[i].result.status();
    EXPECT_LE(CheckEntry(probs[i], small[i].result->outputs[0], 0, ops[i].b), 8e-3);
  }
  EXPECT_EQ(h.PoolUsed(), idle);
  // A resident matrix over the cap is refused too, and nothing leaks.
  core::ResidentMatrix::Desc d;
  d.handle = "too-big";
  d.rows = 16384;
  d.cols = 16384;
  EXPECT_EQ(h.backend->BeginUpload(d).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(h.PoolUsed(), idle);
}

TEST_F(EngineTest, UnknownKernelIsInvalidArgumentAndCublasLtCanBeAsked) {
  Harness h(FastOptions());
  ASSERT_NE(h.backend, nullptr);
  core::GemmRequest r;
  core::Problem p = MakeProblem(64, 64, 64, core::BLayout::kKN, core::DType::kBF16);
  HostOperands ops;
  FillRandom(p, ops, gen_, false);
  r.problems = {p};
  r.kernel = "no-such-kernel";
  EXPECT_EQ(RunOne(h, r).status().code(), absl::StatusCode::kInvalidArgument);
  r.kernel = "cublaslt";
  auto res = RunOne(h, r);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->kernel, "cublaslt");
  EXPECT_LE(CheckEntry(p, res->outputs[0], 0, ops.b), 8e-3);
}

// --gpu_timing_every=3: units 0, 3, 6 of a device record their timing events; the others'
// answers carry no GPU phase times and say so. All of them are right.
TEST_F(EngineTest, OnlyEveryNthUnitTimesItsGpuPhases) {
  CudaBackendOptions o = FastOptions();
  o.executor.gpu_timing_every = 3;
  Harness h(o);
  ASSERT_NE(h.backend, nullptr);
  const int64_t K = 256, N = 192;
  std::string w = RandomBf16Bytes(N * K, gen_);
  auto m = Register(*h.backend, "timing", N, K, core::BLayout::kNK, w, {0});  // one device
  ASSERT_TRUE(m.ok()) << m.status();
  int timed = 0;
  for (int i = 0; i < 9; ++i) {
    core::GemmRequest r;
    core::Problem p = MakeProblem(16 + i, N, K, core::BLayout::kNK, core::DType::kBF16);
    p.b_resident = *m;
    p.b_handle = "timing";
    HostOperands ops;
    FillRandom(p, ops, gen_, false);
    r.problems = {p};
    auto res = RunOne(h, r);  // one unit each, in order
    ASSERT_TRUE(res.ok()) << res.status();
    EXPECT_LE(CheckEntry(p, res->outputs[0], 0, w), 8e-3) << i;
    const core::Timing& t = res->timing;
    EXPECT_EQ(t.gpu_timing_skipped, i % 3 != 0) << i;
    if (!t.gpu_timing_skipped) {
      ++timed;
      EXPECT_GT(t.compute, absl::ZeroDuration()) << i;
    } else {
      EXPECT_EQ(t.compute, absl::ZeroDuration()) << i;
    }
    EXPECT_GT(t.total, absl::ZeroDuration()) << i;
  }
  EXPECT_EQ(timed, 3);
}

// Backend options that qualify each GPU with the gemm_qualify of this build (or the one
// $GEMM_QUALIFY_BINARY names, for binaries copied to another machine).
CudaBackendOptions QualifyingOptions() {
  CudaBackendOptions o;
  o.self_test = true;
  const char* binary = std::getenv("GEMM_QUALIFY_BINARY");
  o.qualify_binary = binary != nullptr ? binary : GEMM_QUALIFY_BINARY;
  o.staging_bytes = 64 << 20;
  return o;
}

// Runs one 128x256x512 BF16 problem with B `layout` through `h`; checks it against float64 and,
// when `kernel` is set, that `kernel` served it.
void ExpectServes(Harness& h, core::BLayout layout, absl::BitGen& gen, const char* kernel) {
  core::GemmRequest r;
  core::Problem p = MakeProblem(128, 256, 512, layout, core::DType::kBF16);
  HostOperands ops;
  FillRandom(p, ops, gen, false);
  r.problems = {p};
  auto res = RunOne(h, r);
  ASSERT_TRUE(res.ok()) << res.status();
  if (kernel != nullptr) EXPECT_EQ(res->kernel, kernel);
  EXPECT_LE(CheckEntry(p, res->outputs[0], 0, ops.b), 8e-3);
}

// The native variants in a description (names "family.variant"), by name.
std::vector<core::KernelDescription> Variants(const core::BackendDescription& d) {
  std::vector<core::KernelDescription> out;
  for (const auto& k : d.kernels) {
    if (k.name.find('.') != std::string::npos) out.push_back(k);
  }
  return out;
}

TEST_F(EngineTest, SelfTestPassesOrFallsBackAndDescribeSaysWhichKernelServes) {
  Harness h(QualifyingOptions());
  ASSERT_NE(h.backend, nullptr);
  core::BackendDescription d = h.backend->Describe();
  ASSERT_FALSE(d.devices.empty());
  for (const auto& k : d.kernels) {
    GTEST_LOG_(INFO) << "kernel " << k.name << " usable=" << k.usable << ": " << k.detail;
  }
  for (const auto& dev : d.devices) {
    GTEST_LOG_(INFO) << "device " << dev.ordinal << " " << dev.name << " cc " << dev.cc_major << "."
                     << dev.cc_minor << " serves " << dev.kernel;
  }
  core::GemmRequest r;
  core::Problem p = MakeProblem(256, 512, 384, core::BLayout::kNK, core::DType::kBF16);
  HostOperands ops;
  FillRandom(p, ops, gen_, false);
  r.problems = {p};
  auto res = RunOne(h, r);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->kernel, d.devices[0].kernel);
  EXPECT_LE(CheckEntry(p, res->outputs[0], 0, ops.b), 8e-3);
}

TEST_F(EngineTest, QualificationPassesForEveryVariantOfThisGpu) {
  Harness h(QualifyingOptions());
  ASSERT_NE(h.backend, nullptr);
  const std::vector<core::KernelDescription> variants = Variants(h.backend->Describe());
  if (variants.empty()) GTEST_SKIP() << "this GPU has no native kernel";
  for (const auto& v : variants) {
    GTEST_LOG_(INFO) << "variant " << v.name << " usable=" << v.usable << ": " << v.detail;
    EXPECT_TRUE(v.usable) << v.name << " (" << v.reason << "): " << v.detail;
  }
}

// GEMM_QUALIFY_INJECT_HANG makes one mbarrier wait of the bounded-wait kernels in gemm_qualify
// never complete: every variant whose cases reach it must come back as a precise timeout record
// (not a dead GPU), start-up must finish within the deadline, and the device must serve
// correct results through cuBLASLt.
TEST_F(EngineTest, InjectedNeverCompletingBarrierIsReportedAndServedThroughCublasLt) {
  const auto sel = kernel::SelectKernel(0);
  ASSERT_TRUE(sel.ok()) << sel.status();
  const char* site = *sel == kernel::KernelKind::kSm90    ? "sm90.consumer_full"
                     : *sel == kernel::KernelKind::kSm100 ? "sm100.mma_full"
                                                          : nullptr;
  if (site == nullptr) GTEST_SKIP() << "this GPU has no native kernel";
  setenv("GEMM_QUALIFY_INJECT_HANG", site, 1);  // inherited by the gemm_qualify children
  CudaBackendOptions o = QualifyingOptions();
  o.qualification_case_deadline_s = 20;
  o.qualification_deadline_s = 90;
  const absl::Time start = absl::Now();
  Harness h(o);
  unsetenv("GEMM_QUALIFY_INJECT_HANG");
  ASSERT_NE(h.backend, nullptr);
  EXPECT_LT(absl::Now() - start, absl::Seconds(100));
  int reported = 0, injected = 0;
  for (const auto& v : Variants(h.backend->Describe())) {
    GTEST_LOG_(INFO) << "variant " << v.name << " usable=" << v.usable << " (" << v.reason
                     << "): " << v.detail;
    if (v.usable) continue;  // e.g. sm90.small_m: no mbarrier
    // Every failure is a timeout record; usually the injected wait's own (it starts waiting
    // first), but a waiter it starves (e.g. the producer) may time out first.
    EXPECT_NE(v.detail.find("mbarrier wait "), std::string::npos) << v.detail;
    EXPECT_NE(v.detail.find("timed out after"), std::string::npos) << v.detail;
    const bool own = v.detail.find(std::string("mbarrier wait ") + site +
                                   " (injected never-completing wait)") != std::string::npos;
    injected += own ? 1 : 0;
    ++reported;
  }
  EXPECT_GT(reported, 0);
  EXPECT_GT(injected, 0);
  // 128 rows is past the small-M kernel: a timed-out variant's shape, which cuBLASLt serves.
  ExpectServes(h, core::BLayout::kNK, gen_, "cublaslt");
}

TEST_F(EngineTest, MissingQualifyBinaryStartsAndServesThroughCublasLt) {
  CudaBackendOptions o = QualifyingOptions();
  o.qualify_binary = "/nonexistent/gemm_qualify";
  Harness h(o);
  ASSERT_NE(h.backend, nullptr);  // the server starts
  core::BackendDescription d = h.backend->Describe();
  ASSERT_FALSE(d.devices.empty());
  bool native = false;
  for (const auto& k : d.kernels) {
    if (k.name.find('.') == std::string::npos) continue;
    native = true;
    EXPECT_FALSE(k.usable) << k.name;
    EXPECT_EQ(k.reason, "not_run") << k.name << ": " << k.detail;
  }
  if (native) EXPECT_EQ(d.devices[0].kernel, "cublaslt");
  ExpectServes(h, core::BLayout::kNK, gen_, "cublaslt");
}

TEST_F(EngineTest, ForcedSelfTestMismatchServesThroughCublasLt) {
  CudaBackendOptions o = QualifyingOptions();
  o.self_test_force_mismatch = true;
  Harness h(o);
  ASSERT_NE(h.backend, nullptr);
  core::BackendDescription d = h.backend->Describe();
  // The family entry (e.g. "sm90_wgmma") and one entry per variant ("sm90.small_m", ...).
  std::string selected;
  int variants = 0;
  for (const auto& k : d.kernels) {
    if (k.name == "cublaslt") continue;
    if (k.name.find('.') == std::string::npos) {
      selected = k.name;
      continue;
    }
    ++variants;
    EXPECT_FALSE(k.usable) << k.name << ": " << k.detail;
    EXPECT_EQ(k.reason, "mismatch") << k.name << ": " << k.detail;
    EXPECT_NE(k.detail.find("mismatch forced"), std::string::npos) << k.detail;
  }
  if (selected.empty()) GTEST_SKIP() << "this GPU has no native kernel; cuBLASLt serves anyway";
  EXPECT_GT(variants, 0);
  EXPECT_EQ(d.devices[0].kernel, "cublaslt");
  ExpectServes(h, core::BLayout::kKN, gen_, "cublaslt");
  core::GemmRequest r;
  core::Problem p = MakeProblem(128, 256, 512, core::BLayout::kKN, core::DType::kBF16);
  HostOperands ops;
  FillRandom(p, ops, gen_, false);
  r.problems = {p};
  r.kernel = selected;  // asking for the disabled kernel explicitly is refused
  EXPECT_EQ(RunOne(h, r).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(EngineTest, MultiGpuReplicatedResidentRunsWhereRouted) {
  if (CudaDeviceCount() < 2) GTEST_SKIP() << "needs 2 GPUs";
  CudaBackendOptions o = FastOptions();
  o.replicate_resident = true;
  Harness h(o);
  ASSERT_NE(h.backend, nullptr);
  const int devices = static_cast<int>(h.backend->Devices().size());
  const int64_t K = 512, N = 384;
  std::string w = RandomBf16Bytes(N * K, gen_);
  auto m = Register(*h.backend, "w-rep", N, K, core::BLayout::kNK, w);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(static_cast<int>((*m)->desc().devices.size()), devices);
  std::vector<Outcome> outs(devices);
  std::vector<HostOperands> ops(devices);
  std::vector<core::Problem> probs;
  for (int d = 0; d < devices; ++d) {
    core::GemmRequest r;
    core::Problem p = MakeProblem(48, N, K, core::BLayout::kNK, core::DType::kBF16);
    p.b_resident = *m;
    FillRandom(p, ops[d], gen_, false);
    r.problems = {p};
    probs.push_back(p);
    h.source.Push(MakeBatch({MakeItem(r, &outs[d])}), d);
  }
  for (int d = 0; d < devices; ++d) {
    ASSERT_TRUE(outs[d].done.WaitForNotificationWithTimeout(kWait));
    ASSERT_TRUE(outs[d].result.ok()) << outs[d].result.status();
    EXPECT_EQ(outs[d].result->timing.device, d);
    EXPECT_LE(CheckEntry(probs[d], outs[d].result->outputs[0], 0, w), 8e-3);
  }
}

TEST(EngineNoGpuTest, CreateFailsCleanlyWithoutGpu) {
  if (CudaDeviceCount() > 0) GTEST_SKIP() << "a GPU is present";
  EXPECT_EQ(CreateCudaBackend({}).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace gemm::gpu
