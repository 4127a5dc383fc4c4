// The load generator's stability rule: the last windows must agree on throughput and latency,
// and windows without a successful request (0 req/s) are never stable; NaN never agrees.
#include "client/loadgen/stability.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace gemm::loadgen {
namespace {

PointResult Windows(std::vector<double> throughput, std::vector<double> latency_ms) {
  PointResult r;
  r.windows = static_cast<int>(throughput.size());
  r.window_throughput = std::move(throughput);
  r.window_latency_ms = std::move(latency_ms);
  return r;
}

TEST(StabilityTest, LastWindowsWithinThePercentAgree) {
  const StabilityRule rule{.stable_windows = 3, .stability_pct = 10};
  EXPECT_TRUE(rule.IsStable(Windows({50, 100, 104, 96}, {9, 1, 1.05, 0.97})));
  EXPECT_FALSE(rule.IsStable(Windows({100, 104, 80}, {1, 1, 1})));   // throughput off by 17%
  EXPECT_FALSE(rule.IsStable(Windows({100, 100, 100}, {1, 1, 2})));  // latency off
  EXPECT_FALSE(rule.IsStable(Windows({100, 100}, {1, 1})));          // too few windows
}

TEST(StabilityTest, WindowsWithoutSuccessAreNotStable) {
  const StabilityRule rule{.stable_windows = 3, .stability_pct = 10};
  // Every request failed (e.g. no server): equal zeros say nothing about the server.
  EXPECT_FALSE(rule.IsStable(Windows({0, 0, 0}, {0, 0, 0})));
  EXPECT_FALSE(rule.IsStable(Windows({100, 100, 0}, {1, 1, 0})));
}

TEST(StabilityTest, NanNeverAgrees) {
  const StabilityRule rule{.stable_windows = 2, .stability_pct = 50};
  EXPECT_FALSE(rule.IsStable(Windows({100, 100}, {NAN, NAN})));
  EXPECT_FALSE(rule.IsStable(Windows({NAN, NAN}, {1, 1})));
}

TEST(StabilityTest, LatencyMetricIsMeanOrPercentile) {
  Histogram h;
  for (int i = 1; i <= 100; ++i) h.Record(i * 1'000'000);  // 1..100 ms
  EXPECT_DOUBLE_EQ(StabilityRule{}.LatencyMs(h), 50.5);
  const double p99 = StabilityRule{.latency_percentile = 99}.LatencyMs(h);
  EXPECT_GE(p99, 99.0);
  EXPECT_LE(p99, 99.0 * 1.001);
}

}  // namespace
}  // namespace gemm::loadgen
