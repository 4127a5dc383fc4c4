// Opt-in timing table of the SM90 kernel vs cuBLASLt on the same device in the same process
// (run with --gtest_also_run_disabled_tests --gtest_filter='Sm90Perf.*'). Fresh random inputs,
// rotating operand sets larger than L2, CUDA-event median of many runs, calls interleaved.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "gemm/kernel.h"
#include "gtest/gtest.h"
#include "kernel_test_device.h"
#include "kernel_test_util.h"
#include "sm90/sm90_gemm.h"

namespace gemm::kernel {
namespace {

using testing::DeviceBuffer;

struct Shape {
  int64_t m, n, k, batch;
};

// One operand set per rotation slot; `problems` holds one Problem per group member.
struct Set {
  std::vector<std::unique_ptr<DeviceBuffer>> bufs;
  std::vector<Problem> problems;
  std::vector<Problem> ref_problems;
};

Set MakeSet(const std::vector<Shape>& group, BLayout layout, uint64_t seed) {
  Set s;
  for (const Shape& sh : group) {
    const int64_t b_rows = layout == BLayout::kKN ? sh.k : sh.n;
    const int64_t b_cols = layout == BLayout::kKN ? sh.n : sh.k;
    auto a = std::make_unique<DeviceBuffer>(sh.m * sh.k * sh.batch * 2);
    auto b = std::make_unique<DeviceBuffer>(b_rows * b_cols * sh.batch * 2);
    auto d = std::make_unique<DeviceBuffer>(sh.m * sh.n * sh.batch * 2);
    auto r = std::make_unique<DeviceBuffer>(sh.m * sh.n * sh.batch * 2);
    testing::FillRandom(a->get(), sh.m * sh.k * sh.batch, DType::kBF16, seed++);
    testing::FillRandom(b->get(), b_rows * b_cols * sh.batch, DType::kBF16, seed++);
    Problem p;
    p.m = sh.m, p.n = sh.n, p.k = sh.k;
    p.a = a->get(), p.lda = sh.k, p.b = b->get(), p.ldb = b_cols, p.b_layout = layout;
    p.d = d->get(), p.ldd = sh.n;
    s.problems.push_back(p);
    p.d = r->get();
    s.ref_problems.push_back(p);
    s.bufs.push_back(std::move(a));
    s.bufs.push_back(std::move(b));
    s.bufs.push_back(std::move(d));
    s.bufs.push_back(std::move(r));
  }
  return s;
}

absl::Status Launch(const Set& s, const Shape& sh, KernelKind kind, bool grouped, bool ref,
                    void* ws, std::size_t ws_bytes) {
  LaunchOptions o;
  o.kind = kind, o.workspace = ws, o.workspace_bytes = ws_bytes;
  const auto& probs = ref ? s.ref_problems : s.problems;
  if (grouped) return GemmGrouped(probs, nullptr, o);
  StridedBatch args;
  args.problem = probs[0];
  args.batch = sh.batch;
  args.stride_a = sh.m * sh.k, args.stride_b = sh.k * sh.n, args.stride_d = sh.m * sh.n;
  return Gemm(args, nullptr, o);
}

struct Result {
  double ours_ms, ref_ms, err;
};

Result Measure(const std::vector<Shape>& group, BLayout layout, bool grouped) {
  double flops = 0, bytes = 0;
  for (const Shape& s : group) {
    flops += 2.0 * s.m * s.n * s.k * s.batch;
    bytes += 2.0 * (s.m * s.k + s.k * s.n + 2 * s.m * s.n) * s.batch;
  }
  const int sets = static_cast<int>(std::clamp(std::ceil(400e6 / bytes), 1.0, 8.0));
  std::vector<Set> rot;
  for (int i = 0; i < sets; ++i) rot.push_back(MakeSet(group, layout, 1000 * i + 17));
  const std::size_t ws_bytes = std::size_t{32} << 20;
  DeviceBuffer ws(ws_bytes);
  const int reps = std::clamp(static_cast<int>(2e13 / flops), 30, 300);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> ours, ref;
  for (int i = 0; i < reps + 3; ++i) {
    for (int which = 0; which < 2; ++which) {
      const Set& s = rot[i % sets];
      cudaEventRecord(e0, nullptr);
      absl::Status st = Launch(s, group[0], which == 0 ? KernelKind::kSm90 : KernelKind::kCublasLt,
                               grouped, which == 1, ws.get(), ws_bytes);
      cudaEventRecord(e1, nullptr);
      EXPECT_TRUE(st.ok()) << st;
      cudaEventSynchronize(e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      if (i >= 3) (which == 0 ? ours : ref).push_back(ms);
    }
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(ours.begin(), ours.end());
  std::sort(ref.begin(), ref.end());
  double err = 0;
  for (std::size_t i = 0; i < group.size(); ++i) {
    const Shape& sh = group[i];
    err = std::max(
        err, testing::DeviceRelError(rot[0].problems[i].d, rot[0].ref_problems[i].d, DType::kBF16,
                                     sh.m, sh.n, sh.n, sh.batch, sh.m * sh.n));
  }
  return {ours[ours.size() / 2], ref[ref.size() / 2], err};
}

void Row(const char* label, const std::vector<Shape>& group, BLayout layout, bool grouped,
         std::vector<double>* ratios, bool check = true) {
  double flops = 0;
  for (const Shape& s : group) flops += 2.0 * s.m * s.n * s.k * s.batch;
  const Result r = Measure(group, layout, grouped);
  const double ratio = r.ref_ms / r.ours_ms;
  if (ratios) ratios->push_back(ratio);
  std::printf(
      "%-34s %s  ours %8.3f ms %7.1f TFLOPS | cublasLt %8.3f ms %7.1f TFLOPS | ratio %.3f | err "
      "%.2e | %s\n",
      label, layout == BLayout::kKN ? "KN" : "NK", r.ours_ms, flops / r.ours_ms / 1e9, r.ref_ms,
      flops / r.ref_ms / 1e9, ratio, r.err, sm90::LastLaunchDescription().c_str());
  std::fflush(stdout);
  if (check) EXPECT_LE(r.err, 8e-3) << label;
}

double GeoMean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / v.size());
}

TEST(Sm90Perf, DISABLED_LargeSet) {
  if (!testing::HaveGpu() || testing::ComputeCapability() != 90) GTEST_SKIP();
  std::vector<double> ratios;
  char label[96];
  for (int64_t s : {2048, 4096, 6144, 8192, 12288, 16384}) {
    std::snprintf(label, sizeof(label), "square %lld", static_cast<long long>(s));
    Row(label, {{s, s, s, 1}}, BLayout::kNK, false, &ratios);
  }
  for (auto nk :
       std::vector<std::pair<int64_t, int64_t>>{{8192, 8192}, {28672, 8192}, {8192, 28672}}) {
    for (int64_t m : {512, 1024, 2048, 4096, 8192}) {
      std::snprintf(label, sizeof(label), "M=%lld N=%lld K=%lld", static_cast<long long>(m),
                    static_cast<long long>(nk.first), static_cast<long long>(nk.second));
      Row(label, {{m, nk.first, nk.second, 1}}, BLayout::kNK, false, &ratios);
    }
  }
  std::printf("large set geomean ratio (cublasLt time / ours): %.3f over %zu shapes\n",
              GeoMean(ratios), ratios.size());
  Row("square 8192", {{8192, 8192, 8192, 1}}, BLayout::kKN, false, nullptr);
  Row("M=2048 N=28672 K=8192", {{2048, 28672, 8192, 1}}, BLayout::kKN, false, nullptr);
}

TEST(Sm90Perf, DISABLED_BatchedAndGrouped) {
  if (!testing::HaveGpu() || testing::ComputeCapability() != 90) GTEST_SKIP();
  Row("batched 1024^3 x32", {{1024, 1024, 1024, 32}}, BLayout::kNK, false, nullptr);
  Row("batched 256^3 x256", {{256, 256, 256, 256}}, BLayout::kNK, false, nullptr);
  // bench/shapes/grouped.txt-like group: 64 problems, M log-spaced 64..4096, cycling (N, K).
  std::vector<Shape> group;
  const std::pair<int64_t, int64_t> nk[3] = {{8192, 8192}, {28672, 8192}, {8192, 28672}};
  for (int i = 0; i < 64; ++i) {
    const double m = 64.0 * std::pow(64.0, i / 63.0);
    group.push_back({std::max<int64_t>(64, static_cast<int64_t>(m / 64) * 64), nk[i % 3].first,
                     nk[i % 3].second, 1});
  }
  Row("grouped 64 (M 64..4096)", group, BLayout::kNK, true, nullptr);
  for (int type = 0; type < 3; ++type) {  // the same group split by (N, K) pair
    std::vector<Shape> part;
    for (int i = type; i < 64; i += 3) part.push_back(group[i]);
    char label[64];
    std::snprintf(label, sizeof(label), "grouped 64 part (N=%lld K=%lld)",
                  static_cast<long long>(nk[type].first), static_cast<long long>(nk[type].second));
    Row(label, part, BLayout::kNK, true, nullptr);
  }
  Row("grouped 64 first 32 (M<=448)", std::vector<Shape>(group.begin(), group.begin() + 32),
      BLayout::kNK, true, nullptr);
  Row("grouped 64 last 16", std::vector<Shape>(group.end() - 16, group.end()), BLayout::kNK, true,
      nullptr);
  std::vector<Shape> small;
  for (int i = 0; i < 32; ++i) small.push_back({128 + 64 * (i % 8), 1024 + 512 * (i % 3), 1024, 1});
  Row("grouped 32 small", small, BLayout::kNK, true, nullptr);
  Row("grouped 1 x 4096x8192x8192", {{4096, 8192, 8192, 1}}, BLayout::kNK, true, nullptr);
  Row("plain    4096x8192x8192", {{4096, 8192, 8192, 1}}, BLayout::kNK, false, nullptr);
  Row("grouped 8 x 1024x8192x8192", std::vector<Shape>(8, Shape{1024, 8192, 8192, 1}), BLayout::kNK,
      true, nullptr);
  std::vector<Shape> mixed;
  for (int i = 0; i < 16; ++i) mixed.push_back({512 + 256 * (i % 4), 8192, 8192, 1});
  Row("grouped 16 mixed M, 8192^2", mixed, BLayout::kNK, true, nullptr);
}

// Timing experiments: configurations forced through the SM90 tuning hook, and debug switches
// that remove the loads or the epilogue (their results are wrong by design; not checked).
TEST(Sm90Perf, DISABLED_Variants) {
  if (!testing::HaveGpu() || testing::ComputeCapability() != 90) GTEST_SKIP();
  struct V {
    const char* name;
    sm90::TuningOverride o;
  };
  auto ov = [](int bm, int bn, int cluster, int group, int flags) {
    sm90::TuningOverride o;
    o.block_m = bm, o.block_n = bn, o.cluster_m = cluster, o.group_m = group;
    o.debug_flags = flags;
    return o;
  };
  const V variants[] = {
      {"heuristic", {}},
      {"128x256 c2 g8", ov(128, 256, 2, 8, 0)},
      {"256x128 c2 g4", ov(256, 128, 2, 4, 0)},
      {"256x128 c2 g8", ov(256, 128, 2, 8, 0)},
      {"256x128 c1 g8", ov(256, 128, 1, 8, 0)},
      {"128x256 c1 g16", ov(128, 256, 1, 16, 0)},
      {"256x128 c2 no-epilogue", ov(256, 128, 2, 4, 1)},
  };
  const Shape shapes[] = {
      {8192, 8192, 8192, 1}, {512, 28672, 8192, 1}, {2048, 8192, 28672, 1}, {4096, 4096, 4096, 1}};
  for (const Shape& sh : shapes) {
    for (const V& v : variants) {
      sm90::SetTuningOverride(v.o);
      char label[96];
      std::snprintf(label, sizeof(label), "%lldx%lldx%lld %s", static_cast<long long>(sh.m),
                    static_cast<long long>(sh.n), static_cast<long long>(sh.k), v.name);
      Row(label, {sh}, BLayout::kNK, false, nullptr, v.o.debug_flags == 0);
    }
  }
  sm90::ClearTuningOverride();
}

}  // namespace
}  // namespace gemm::kernel
