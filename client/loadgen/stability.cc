// The stability rule.
#include "client/loadgen/stability.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gemm::loadgen {

double StabilityRule::LatencyMs(const Histogram& h) const {
  const double ns =
      latency_percentile > 0 ? static_cast<double>(h.Percentile(latency_percentile)) : h.mean();
  return ns / 1e6;
}

bool StabilityRule::IsStable(const PointResult& r) const {
  const int k = std::max(1, stable_windows);
  const int n =
      std::min<int>(r.windows, std::min(r.window_throughput.size(), r.window_latency_ms.size()));
  if (n < k) return false;
  auto agree = [&](const std::vector<double>& v) {
    double mean = 0;
    for (int i = n - k; i < n; ++i) mean += v[i];
    mean /= k;
    for (int i = n - k; i < n; ++i) {
      if (!(std::fabs(v[i] - mean) <= stability_pct / 100.0 * mean)) return false;
    }
    return true;
  };
  for (int i = n - k; i < n; ++i) {
    if (!(r.window_throughput[i] > 0)) return false;
  }
  return agree(r.window_throughput) && agree(r.window_latency_ms);
}

}  // namespace gemm::loadgen
