// PointMeasurer (see point_measurer.h).
#include "client/loadgen/point_measurer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gemm::loadgen {
namespace {

constexpr int64_t kProgressEveryNs = 250'000'000;

}  // namespace

void PointMeasurer::Measure(const std::string& label, PointResult& r) {
  bool running = WaitFor(options_.warmup_s, label, "warm-up");
  WindowStats warmup = window_.TakeWindow();
  const std::vector<WindowStats> windows = MeasureWindows(label, r, &running);
  r.interrupted = !running;
  if (options_.progress) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  if (windows.empty()) {
    r.measured = std::move(warmup);  // interrupted during warm-up: report what there is
    return;
  }
  const size_t k = std::min<size_t>(windows.size(), std::max(1, options_.stability.stable_windows));
  for (size_t i = windows.size() - k; i < windows.size(); ++i) r.measured.Merge(windows[i]);
}

std::vector<WindowStats> PointMeasurer::MeasureWindows(const std::string& label, PointResult& r,
                                                       bool* running) {
  std::vector<WindowStats> windows;
  while (*running) {
    *running = WaitFor(options_.window_s, label, absl::StrCat("window ", r.windows + 1));
    WindowStats w = window_.TakeWindow();
    // A window cut short by Ctrl-C still counts when it covers a meaningful span.
    if (!*running && w.duration_s < 0.2 * options_.window_s && !windows.empty()) break;
    r.window_throughput.push_back(w.Throughput());
    r.window_latency_ms.push_back(options_.stability.LatencyMs(w.latency_ns));
    windows.push_back(std::move(w));
    ++r.windows;
    if (options_.stability.IsStable(r)) {
      r.stable = true;
      break;
    }
    if (r.windows >= options_.max_windows) break;
  }
  return windows;
}

bool PointMeasurer::WaitFor(double seconds, const std::string& label, const std::string& phase) {
  const int64_t end = NowNs() + static_cast<int64_t>(seconds * 1e9);
  int64_t next_progress = 0;
  for (;;) {
    if (Stopped()) return false;
    const int64_t now = NowNs();
    if (now >= end) return true;
    if (options_.progress && now >= next_progress) {
      next_progress = now + kProgressEveryNs;
      PrintProgress(label, phase);
    }
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(end - now, 50'000'000)));
  }
}

void PointMeasurer::PrintProgress(const std::string& label, const std::string& phase) {
  const WindowRecorder::Snapshot s = window_.Peek();
  std::fprintf(stderr,
               "\r\033[K[%s] %s  %.0f req/s  p99 %.3f ms  ok %lld  errors %lld  in flight %lld",
               label.c_str(), phase.c_str(), s.elapsed_s > 0 ? s.ok / s.elapsed_s : 0.0, s.p99_ms,
               static_cast<long long>(s.ok), static_cast<long long>(s.failed),
               static_cast<long long>(in_flight_()));
  std::fflush(stderr);
}

}  // namespace gemm::loadgen
