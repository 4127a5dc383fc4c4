// The load-generator engine: runs sweep points, each a warm-up followed by measurement windows
// until the last `stable_windows` agree within `stability_pct` or `max_windows` ran, and cleans
// up at the end. It wires the parts that do the work: the operands and request templates (with
// resident B registered per target, or an --shm region), the dispatcher that decides when
// requests go out (closed or open loop), the issuer that sends them through gRPC's callback API
// (or the sync callers), the judge of the answers (OutcomeRecorder), the window counters, and
// the measurement of a point (PointMeasurer).
//
// Closed loop keeps `concurrency` requests in flight; open loop sends at `rate` requests/s
// regardless of completions and measures latency from each request's intended send time, so a
// slow server cannot hide queueing delay (no coordinated omission).
//
// Thread-safety: RunPoint/Finish are called from one thread; `stop` may be set from anywhere
// (e.g. a SIGINT handler) and ends the current point early.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/loadgen/stats.h"
#include "client/loadgen/target.h"
#include "client/loadgen/workload.h"

namespace gemm::loadgen {

struct RunnerOptions {
  WorkloadSpec workload;
  bool open_loop = false;       // false: closed loop (concurrency); true: open loop (rate)
  bool poisson = false;         // open loop: exponential inter-arrival times instead of constant
  double warmup_s = 2.0;        // discarded time at the start of every point
  double window_s = 2.0;        // length of one measurement window
  int stable_windows = 3;       // how many consecutive windows must agree
  double stability_pct = 10.0;  // allowed deviation of each from their mean, percent
  double stability_percentile = 0;  // latency metric for stability: 0 = mean, else a percentile
  int max_windows = 10;             // bound on windows per point (reported as not stable)
  double verify_fraction = 0;       // share of responses checked against the local reference
  int64_t max_outstanding = 4096;   // open loop: cap on requests in flight
  // Open loop: threads sending requests, each a 1/N share of the arrivals. One thread sends
  // fewer than ~40k requests/s (it also serializes and writes them), so fast rates need several.
  int dispatch_threads = 4;
  double error_backoff_ms = 10;  // closed loop: pause after a failed request (avoids spinning)
  double rpc_timeout_s = 60;     // gRPC deadline of every request
  uint64_t seed = 1;             // operand data, shape mix, arrivals, verify sampling
  // --shm: output (D) slots per shape in the region; a request in flight writes a slot of its
  // own while one is free (else it shares one). Size it to the requests kept in flight.
  int64_t shm_output_slots = 1;
  bool progress = false;                    // live progress line on stderr
  const std::atomic<bool>* stop = nullptr;  // set to end the run early (Ctrl-C)
};

class Runner {
 public:
  // Builds the request templates and, for resident B, registers one matrix per shape on every
  // target (released by Finish or the destructor). Fails when a registration fails.
  static absl::StatusOr<std::unique_ptr<Runner>> Create(const RunnerOptions& options,
                                                        std::vector<Target> targets);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // Runs one sweep point: `level` is the concurrency (closed loop) or the rate in requests/s
  // (open loop). `index`/`total` only label the progress line. Blocks for the point's duration.
  PointResult RunPoint(double level, int index, int total);

  // Waits (up to `timeout_s`) for requests in flight, cancels what is left, closes the streams and
  // releases the resident matrices. Idempotent.
  void Finish(double timeout_s);

  // Requests sent so far over the whole run.
  int64_t issued() const;

 private:
  class Impl;
  explicit Runner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gemm::loadgen
