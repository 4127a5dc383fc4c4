// When the load generator's requests go out, and how many are in flight. Closed loop keeps
// `concurrency` requests in flight: the dispatcher thread fills the point's concurrency and
// refills after failures (pausing --error_backoff_ms), and a successful call's completion sends
// the next request itself. Open loop sends at `rate` requests/s (constant spacing or Poisson
// arrivals) from `dispatch_threads` threads that share the arrivals, each request stamped with its
// intended send time, whatever the completions do. Closed loop with sync callers runs one
// blocking caller thread per unit of concurrency instead.
//
// Thread-safety: Start/Stop from the point's thread; OnFinished and ClaimOne from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gemm::loadgen {

class Dispatcher {
 public:
  struct Options {
    bool open_loop = false;
    bool poisson = false;            // open loop: exponential gaps instead of constant spacing
    bool sync_callers = false;       // closed loop through blocking caller threads
    int dispatch_threads = 4;        // open loop: threads sharing the arrivals
    int64_t max_outstanding = 4096;  // open loop: cap on requests in flight
    double error_backoff_ms = 10;    // closed loop: pause after a failed request
    uint64_t seed = 1;               // arrivals
  };
  // Sends one request (already counted in flight), intended to leave at the given NowNs().
  using Issue = std::function<void(int64_t intended_ns)>;
  // Runs blocking caller `caller` until `stop` is set.
  using SyncCaller = std::function<void(int caller, const std::atomic<bool>& stop)>;

  Dispatcher(const Options& options, Issue issue, SyncCaller sync_caller);
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // Starts sending for a point: `level` is the concurrency (closed loop) or the rate in
  // requests/s (open loop).
  void Start(double level);
  // Stops sending and joins the point's threads; requests in flight carry on.
  void Stop();

  // Called once per finished request after it was recorded (`ok`: it succeeded): it leaves the
  // in-flight count; closed loop, a success sends the next request from here and a failure wakes
  // the dispatcher, which backs off.
  void OnFinished(bool ok);
  // Counts one more request in flight (a sync caller's).
  void ClaimOne() { in_flight_.fetch_add(1); }
  int64_t in_flight() const { return in_flight_.load(); }
  // Waits until nothing is in flight or `deadline` passes; false on timeout.
  bool WaitIdle(std::chrono::steady_clock::time_point deadline);

 private:
  // Closed loop: fills the concurrency, refills after failures, until stopped.
  void ClosedLoop(int64_t concurrency);
  // Open loop: dispatcher k of n sends its share (rate/n) of the arrivals until stopped.
  void OpenLoop(double rate, int k, int n);
  void StartSyncCallers(int64_t callers);
  // Counts one more request in flight if fewer than `limit` are.
  bool TryClaim(int64_t limit);
  // Pauses --error_backoff_ms unless stopped first (caller holds `lock` on mu_); false when
  // stopped.
  bool BackOff(std::unique_lock<std::mutex>& lock);

  const Options options_;
  const Issue issue_;
  const SyncCaller sync_caller_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = true;  // guarded by mu_
  std::vector<std::thread> threads_;
  std::atomic<bool> sync_stop_{false};
  std::atomic<int64_t> in_flight_{0};
  // Closed loop: the concurrency a successful completion refills inline; 0 otherwise.
  std::atomic<int64_t> inline_limit_{0};
  std::atomic<int64_t> failures_{0};
};

}  // namespace gemm::loadgen
