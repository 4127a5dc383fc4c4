// The load generator's stability rule (the rule of Triton's perf_analyzer): a point is stable when
// its last `stable_windows` measurement windows agree, throughput and latency of each within
// `stability_pct` percent of their mean, and every one of them had successful requests (windows of
// nothing but errors agree at 0 req/s, which says nothing about the server).
#pragma once

#include "client/loadgen/histogram.h"
#include "client/loadgen/stats.h"

namespace gemm::loadgen {

struct StabilityRule {
  int stable_windows = 3;
  double stability_pct = 10.0;
  double latency_percentile = 0;  // latency metric: 0 = mean, else this percentile

  // The latency metric of a window's histogram, in milliseconds.
  double LatencyMs(const Histogram& latency_ns) const;
  // Whether the last `stable_windows` windows of `r` (window_throughput, window_latency_ms)
  // agree.
  bool IsStable(const PointResult& r) const;
};

}  // namespace gemm::loadgen
