// CPU unit tests of the CUDA backend's unit planner (server/gpu/unit_plan.cc): device and staging
// layout, copies and launches for the four unit shapes, two-pass consistency, and the errors for
// operands that do not match their shapes. No GPU: pointers are offsets from a made-up base.
#include "server/gpu/unit_plan.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "server/gpu/resident.h"
#include "server/gpu/unit.h"

namespace gemm::gpu {
namespace {

constexpr uintptr_t kBase = uintptr_t{1} << 40;

// A resident matrix "on" device 0 at a made-up address (never dereferenced or freed: ptr stays
// null, so the destructor frees nothing).
std::shared_ptr<CudaResidentMatrix> Resident(const std::string& handle, int64_t rows, int64_t cols,
                                             core::BLayout layout) {
  core::ResidentMatrix::Desc d;
  d.handle = handle;
  d.rows = rows;
  d.cols = cols;
  d.layout = layout;
  d.devices = {0};
  return std::make_shared<CudaResidentMatrix>(
      d, std::vector<CudaResidentMatrix::Replica>{
             {nullptr, 0, nullptr, (cols * 2 + 15) / 16 * 16, rows * cols * 2}});
}

// Owns the operand bytes the problems borrow.
struct Fixture {
  std::vector<std::unique_ptr<std::string>> bytes;
  StreamSlot slot;  // workspace_bytes 0: every launch needing one gets it in the allocation
  absl::string_view Bytes(int64_t n) {
    bytes.push_back(std::make_unique<std::string>(static_cast<size_t>(n), '\1'));
    return *bytes.back();
  }
  std::shared_ptr<core::WorkItem> Item(core::GemmRequest r) {
    auto item = std::make_shared<core::WorkItem>();
    item->request = std::move(r);
    return item;
  }
  // A single-problem request, resident or inline B.
  core::GemmRequest Single(int64_t m, int64_t n, int64_t k,
                           std::shared_ptr<const core::ResidentMatrix> b = nullptr,
                           core::BLayout layout = core::BLayout::kNK, float alpha = 1.0f) {
    core::GemmRequest r;
    core::Problem p;
    p.m = m;
    p.n = n;
    p.k = k;
    p.a = Bytes(m * k * 2);
    if (b != nullptr) {
      p.b_resident = std::move(b);
    } else {
      p.b = Bytes(k * n * 2);
    }
    p.b_layout = layout;
    p.alpha = alpha;
    r.problems.push_back(p);
    return r;
  }
  Unit MakeUnit(UnitShape shape, std::vector<core::GemmRequest> requests) {
    Unit u;
    u.shape = shape;
    u.kslot = &slot;
    for (auto& r : requests) u.items.push_back(Item(std::move(r)));
    return u;
  }
};

// Measures, then plans again at kBase (as the executor does).
absl::Status Plan(Unit& u) {
  if (absl::Status st = BuildPlan(u, 0, 0, /*measure=*/true); !st.ok()) return st;
  return BuildPlan(u, kBase, 0, /*measure=*/false);
}

int64_t Off(const void* p) { return static_cast<int64_t>(reinterpret_cast<uintptr_t>(p) - kBase); }

TEST(UnitPlan, InlineProblemPitchesRowsTo16BytesAndStagesEveryOperand) {
  Fixture f;
  // K = 7, N = 9: rows of 14 and 18 bytes, pitched to 16 and 32 on the device.
  Unit u = f.MakeUnit(UnitShape::kStacked, {f.Single(5, 9, 7, nullptr, core::BLayout::kKN)});
  ASSERT_TRUE(Plan(u).ok());
  // A single request runs as a stack of one: B is placed first, then A.
  ASSERT_EQ(u.ins.size(), 2u);
  const InCopy& b = u.ins[0];
  const InCopy& a = u.ins[1];
  EXPECT_EQ(a.rows, 5);
  EXPECT_EQ(a.row_bytes, 14);
  EXPECT_EQ(a.dpitch, 16);
  EXPECT_EQ(b.rows, 7);  // B [K,N]: K rows of N
  EXPECT_EQ(b.row_bytes, 18);
  EXPECT_EQ(b.dpitch, 32);
  ASSERT_EQ(u.outs.size(), 1u);
  EXPECT_EQ(u.outs[0].rows, 5);
  EXPECT_EQ(u.outs[0].row_bytes, 18);
  EXPECT_EQ(u.outs[0].dpitch, 32);
  for (const InCopy& in : u.ins) {
    EXPECT_FALSE(in.pinned);
    EXPECT_EQ(in.dev_off % 256, 0);
    EXPECT_EQ(in.stage_off % 256, 0);
    EXPECT_LE(in.stage_off + in.rows * in.row_bytes, u.staging_bytes);
  }
  // D, sent inline, lies in the answer region (apart from staging), not in staging.
  EXPECT_EQ(u.outs[0].stage_off, -1);
  EXPECT_EQ(u.outs[0].answer_off, 0);
  EXPECT_EQ(u.answer_bytes, 256);         // 90 bytes, rounded to the staging alignment
  EXPECT_EQ(u.staging_bytes, 256 + 256);  // A and B
  // One launch whose pointers are the planned offsets from the base.
  ASSERT_EQ(u.launches.size(), 1u);
  const kernel::Problem& kp = u.launches[0].batch.problem;
  EXPECT_FALSE(u.launches[0].grouped);
  EXPECT_EQ(Off(kp.a), a.dev_off);
  EXPECT_EQ(Off(kp.b), b.dev_off);
  EXPECT_EQ(Off(kp.d), u.outs[0].dev_off);
  EXPECT_EQ(kp.lda, 8);  // elements
  EXPECT_EQ(kp.ldb, 16);
  EXPECT_EQ(kp.ldd, 16);
  EXPECT_EQ(u.batch_rows, 5);
  ASSERT_EQ(u.outputs.size(), 1u);
  EXPECT_EQ(u.outputs[0][0].shape, (std::vector<int64_t>{5, 9}));
}

TEST(UnitPlan, StackedItemsShareOneBAndLieBackToBack) {
  Fixture f;
  auto w = Resident("w", 256, 512, core::BLayout::kNK);  // N = 256, K = 512
  Unit u = f.MakeUnit(UnitShape::kStacked, {f.Single(16, 256, 512, w), f.Single(3, 256, 512, w),
                                            f.Single(8, 256, 512, w)});
  ASSERT_TRUE(Plan(u).ok());
  EXPECT_EQ(u.batch_rows, 27);
  // The resident B is not copied: three A copies, three D copies.
  ASSERT_EQ(u.ins.size(), 3u);
  ASSERT_EQ(u.outs.size(), 3u);
  // A rows back to back on the device and in staging (1 KiB rows: no padding between parts).
  EXPECT_EQ(u.ins[1].dev_off, u.ins[0].dev_off + 16 * 1024);
  EXPECT_EQ(u.ins[2].dev_off, u.ins[1].dev_off + 3 * 1024);
  EXPECT_EQ(u.ins[1].stage_off, u.ins[0].stage_off + 16 * 1024);
  EXPECT_EQ(u.ins[2].stage_off, u.ins[1].stage_off + 3 * 1024);
  EXPECT_EQ(u.outs[1].dev_off, u.outs[0].dev_off + 16 * 512);
  EXPECT_EQ(u.outs[2].item, 2u);
  // D rows back to back in the answer region too (one copy out), each answer at an aligned start
  // so it can be returned on its own.
  EXPECT_EQ(u.outs[0].answer_off, 0);
  EXPECT_EQ(u.outs[1].answer_off, 16 * 512);
  EXPECT_EQ(u.outs[2].answer_off, 19 * 512);
  EXPECT_EQ(u.answer_bytes, 27 * 512);
  EXPECT_EQ(u.staging_bytes, 27 * 1024);  // the A rows only
  // One GEMM over all 27 rows, reading the resident B in place.
  ASSERT_EQ(u.launches.size(), 1u);
  ASSERT_FALSE(u.launches[0].grouped);
  const kernel::Problem& kp = u.launches[0].batch.problem;
  EXPECT_EQ(kp.m, 27);
  EXPECT_EQ(kp.b, nullptr);  // the replica's (made-up, null) address
  EXPECT_EQ(Off(kp.a), u.ins[0].dev_off);
  EXPECT_EQ(Off(kp.d), u.outs[0].dev_off);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(u.outputs[i][0].shape[0], u.items[i]->request.problems[0].m);
  }
}

TEST(UnitPlan, StackedItemsWithDifferentAlphaRunAsOneGroupedCall) {
  Fixture f;
  auto w = Resident("w", 128, 64, core::BLayout::kNK);
  Unit u = f.MakeUnit(UnitShape::kStacked, {f.Single(4, 128, 64, w, core::BLayout::kNK, 1.0f),
                                            f.Single(2, 128, 64, w, core::BLayout::kNK, 0.5f)});
  ASSERT_TRUE(Plan(u).ok());
  ASSERT_EQ(u.launches.size(), 1u);
  ASSERT_TRUE(u.launches[0].grouped);
  ASSERT_EQ(u.launches[0].group.size(), 2u);
  EXPECT_EQ(u.launches[0].group[0].m, 4);
  EXPECT_EQ(u.launches[0].group[1].m, 2);
  EXPECT_EQ(u.launches[0].group[1].alpha, 0.5f);
  EXPECT_EQ(Off(u.launches[0].group[1].a), Off(u.launches[0].group[0].a) + 4 * 128);
}

TEST(UnitPlan, ExpertGroupsStackEachMatrixRowsAcrossRequests) {
  Fixture f;
  auto e0 = Resident("e0", 512, 256, core::BLayout::kNK);  // N = 512, K = 256
  auto e1 = Resident("e1", 512, 256, core::BLayout::kNK);
  auto step = [&](int64_t m0, int64_t m1) {
    core::GemmRequest r;
    r.kind = core::WorkKind::kGroup;
    for (auto [m, e] : {std::pair{m0, e0}, std::pair{m1, e1}}) {
      core::Problem p;
      p.m = m;
      p.n = 512;
      p.k = 256;
      p.a = f.Bytes(m * 256 * 2);
      p.b_resident = e;
      p.b_layout = core::BLayout::kNK;
      r.problems.push_back(p);
    }
    return r;
  };
  Unit u = f.MakeUnit(UnitShape::kExperts, {step(2, 1), step(3, 4)});
  ASSERT_TRUE(core::IsExpertGroup(u.items[0]->request));
  ASSERT_TRUE(Plan(u).ok());
  EXPECT_EQ(u.batch_rows, 10);
  // One grouped call of two members: e0 with 2 + 3 rows, e1 with 1 + 4.
  ASSERT_EQ(u.launches.size(), 1u);
  ASSERT_TRUE(u.launches[0].grouped);
  ASSERT_EQ(u.launches[0].group.size(), 2u);
  EXPECT_EQ(u.launches[0].group[0].m, 5);
  EXPECT_EQ(u.launches[0].group[1].m, 5);
  // Each request gets both of its outputs back, with its own rows.
  ASSERT_EQ(u.outputs.size(), 2u);
  EXPECT_EQ(u.outputs[1][0].shape, (std::vector<int64_t>{3, 512}));
  EXPECT_EQ(u.outputs[1][1].shape, (std::vector<int64_t>{4, 512}));
  // Request 1's rows of e0 follow request 0's in the member's D.
  const OutCopy* r1e0 = nullptr;
  for (const OutCopy& o : u.outs) {
    if (o.item == 1 && o.output == 0) r1e0 = &o;
  }
  ASSERT_NE(r1e0, nullptr);
  EXPECT_EQ(r1e0->dev_off, Off(u.launches[0].group[0].d) + 2 * 512 * 2);
}

TEST(UnitPlan, OneExpertMatrixRunsAsASingleProblem) {
  Fixture f;
  auto e0 = Resident("e0", 64, 32, core::BLayout::kNK);
  core::GemmRequest r;
  r.kind = core::WorkKind::kGroup;
  core::Problem p;
  p.m = 1;
  p.n = 64;
  p.k = 32;
  p.a = f.Bytes(32 * 2);
  p.b_resident = e0;
  p.b_layout = core::BLayout::kNK;
  r.problems = {p};
  Unit u = f.MakeUnit(UnitShape::kExperts, {r});
  ASSERT_TRUE(Plan(u).ok());
  ASSERT_EQ(u.launches.size(), 1u);
  EXPECT_FALSE(u.launches[0].grouped);
  EXPECT_EQ(u.launches[0].batch.problem.m, 1);
}

TEST(UnitPlan, PinnedSharedMemoryIsCopiedInPlace) {
  Fixture f;
  core::GemmRequest r = f.Single(4, 32, 16);
  core::Problem& p = r.problems[0];
  p.a_mem = core::HostMemory::kSharedPinned;
  std::string d(4 * 32 * 2, '\0');
  p.d_dest = absl::Span<char>(d.data(), d.size());
  p.d_mem = core::HostMemory::kSharedPinned;
  Unit u = f.MakeUnit(UnitShape::kStacked, {r});
  ASSERT_TRUE(Plan(u).ok());
  ASSERT_EQ(u.ins.size(), 2u);
  EXPECT_FALSE(u.ins[0].pinned);  // inline B through staging
  EXPECT_TRUE(u.ins[1].pinned);   // A read in place
  ASSERT_EQ(u.outs.size(), 1u);
  EXPECT_TRUE(u.outs[0].pinned);
  EXPECT_EQ(u.outs[0].dest, d.data());
  EXPECT_EQ(u.outs[0].answer_off, -1);  // not an inline answer
  EXPECT_EQ(u.answer_bytes, 0);
  // Staging holds B only (K x N BF16).
  EXPECT_EQ(u.staging_bytes, 16 * 32 * 2);
}

TEST(UnitPlan, SharedMemoryNotPageLockedGoesThroughStagingNotTheAnswerRegion) {
  Fixture f;
  core::GemmRequest r = f.Single(4, 32, 16);
  core::Problem& p = r.problems[0];
  std::string d(4 * 32 * 2, '\0');
  p.d_dest = absl::Span<char>(d.data(), d.size());
  p.d_mem = core::HostMemory::kShared;
  Unit u = f.MakeUnit(UnitShape::kStacked, {r});
  ASSERT_TRUE(Plan(u).ok());
  ASSERT_EQ(u.outs.size(), 1u);
  EXPECT_FALSE(u.outs[0].pinned);
  EXPECT_EQ(u.outs[0].answer_off, -1);
  EXPECT_EQ(u.outs[0].stage_off % 256, 0);
  EXPECT_LE(u.outs[0].stage_off + 4 * 32 * 2, u.staging_bytes);
  EXPECT_EQ(u.answer_bytes, 0);
}

TEST(UnitPlan, GroupsSplitByOutputDtypeAndLayoutAndBatchesExpand) {
  Fixture f;
  core::GemmRequest r;
  r.kind = core::WorkKind::kGroup;
  auto add = [&](int64_t count, core::DType dt, core::BLayout l) {
    core::Problem p;
    p.m = 8;
    p.n = 16;
    p.k = 32;
    p.count = count;
    p.a = f.Bytes(count * 8 * 32 * 2);
    p.b = f.Bytes(count * 32 * 16 * 2);
    p.out_dtype = dt;
    p.b_layout = l;
    r.problems.push_back(p);
  };
  add(1, core::DType::kBF16, core::BLayout::kKN);
  add(3, core::DType::kBF16, core::BLayout::kKN);
  add(1, core::DType::kFP32, core::BLayout::kKN);
  add(1, core::DType::kBF16, core::BLayout::kNK);
  Unit u = f.MakeUnit(UnitShape::kGroup, {r});
  ASSERT_TRUE(Plan(u).ok());
  ASSERT_EQ(u.launches.size(), 3u);
  EXPECT_EQ(u.launches[0].group.size(), 4u);  // 1 + 3 batch entries
  EXPECT_EQ(u.launches[1].group.size(), 1u);
  EXPECT_EQ(u.launches[2].group.size(), 1u);
  EXPECT_EQ(u.outputs[0][1].shape, (std::vector<int64_t>{3, 8, 16}));
  EXPECT_EQ(u.outputs[0][2].dtype, core::DType::kFP32);
  EXPECT_EQ(u.batch_rows, 8 * 6);
}

TEST(UnitPlan, OperandsOfTheWrongSizeAreRefused) {
  Fixture f;
  core::GemmRequest r = f.Single(4, 32, 16);
  r.problems[0].a = f.Bytes(4 * 16 * 2 - 2);
  Unit u = f.MakeUnit(UnitShape::kStacked, {r});
  absl::Status st = Plan(u);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("A of problem 0 has 126 bytes, expected 128"), std::string::npos)
      << st;

  auto w = Resident("w", 32, 16, core::BLayout::kNK);
  Unit s = f.MakeUnit(UnitShape::kStacked, {f.Single(4, 32, 16, w), f.Single(2, 32, 16, w)});
  s.items[1]->request.problems[0].a = f.Bytes(10);
  st = Plan(s);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("has 10 bytes"), std::string::npos) << st;

  // A resident matrix that does not match the problem.
  Unit m = f.MakeUnit(UnitShape::kStacked, {f.Single(4, 64, 16, w)});
  st = Plan(m);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("does not match"), std::string::npos) << st;
}

TEST(UnitPlan, ResidentMatrixOnAnotherDeviceIsAFailedPrecondition) {
  Fixture f;
  auto w = Resident("w", 32, 16, core::BLayout::kNK);
  Unit u = f.MakeUnit(UnitShape::kStacked, {f.Single(4, 32, 16, w)});
  EXPECT_EQ(BuildPlan(u, 0, /*device=*/1, true).code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace gemm::gpu
