// The load generator's measurement of one sweep point while its load runs: a warm-up that is
// discarded, then measurement windows until the last `stable_windows` agree (StabilityRule),
// `max_windows` ran or the run is stopped, with a live progress line on stderr. Called from one
// thread; `stop` may be set from anywhere.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "client/loadgen/stability.h"
#include "client/loadgen/stats.h"
#include "client/loadgen/window_recorder.h"

namespace gemm::loadgen {

class PointMeasurer {
 public:
  struct Options {
    double warmup_s = 2.0;  // discarded time at the start of every point
    double window_s = 2.0;  // length of one measurement window
    int max_windows = 10;   // bound on windows per point (reported as not stable)
    StabilityRule stability;
    bool progress = false;                    // live progress line on stderr
    const std::atomic<bool>* stop = nullptr;  // set to end the point early
  };

  // `window` (where finished requests are counted) must outlive the measurer; `in_flight` tells
  // the progress line how many requests are in flight.
  PointMeasurer(const Options& options, WindowRecorder& window, std::function<int64_t()> in_flight)
      : options_(options), window_(window), in_flight_(std::move(in_flight)) {}

  // Measures the point whose load has just started: fills `r`'s windows, their figures, `stable`,
  // `interrupted` and `measured` (the last `stable_windows` windows merged; the warm-up when the
  // run was stopped before a window). `label` names the point on the progress line. Blocks for
  // the point's duration.
  void Measure(const std::string& label, PointResult& r);

 private:
  // Runs measurement windows until they agree, max_windows ran or the run is stopped; the
  // windows' figures go into `r`. False in *running when stopped.
  std::vector<WindowStats> MeasureWindows(const std::string& label, PointResult& r, bool* running);
  // Sleeps `seconds` (interruptible by `stop`), refreshing the progress line. False if stopped.
  bool WaitFor(double seconds, const std::string& label, const std::string& phase);
  void PrintProgress(const std::string& label, const std::string& phase);
  bool Stopped() const { return options_.stop != nullptr && options_.stop->load(); }

  const Options options_;
  WindowRecorder& window_;
  const std::function<int64_t()> in_flight_;
};

}  // namespace gemm::loadgen
