// Closed- and open-loop sending of the load generator.
#include "client/loadgen/dispatcher.h"

#include <cmath>
#include <cstdio>
#include <random>
#include <system_error>

#include "client/loadgen/window_recorder.h"

namespace gemm::loadgen {
namespace {

std::chrono::steady_clock::time_point FromNs(int64_t ns) {
  return std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::nanoseconds(ns)));
}

}  // namespace

Dispatcher::Dispatcher(const Options& options, Issue issue, SyncCaller sync_caller)
    : options_(options), issue_(std::move(issue)), sync_caller_(std::move(sync_caller)) {}

Dispatcher::~Dispatcher() { Stop(); }

void Dispatcher::Start(double level) {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopped_ = false;
  }
  if (options_.open_loop) {
    const int n = std::max(1, options_.dispatch_threads);
    for (int k = 0; k < n; ++k)
      threads_.emplace_back([this, level, k, n] { OpenLoop(level, k, n); });
    return;
  }
  const int64_t concurrency = std::max<int64_t>(1, std::llround(level));
  if (options_.sync_callers) {
    StartSyncCallers(concurrency);
  } else {
    inline_limit_.store(concurrency);
    threads_.emplace_back([this, concurrency] { ClosedLoop(concurrency); });
  }
}

void Dispatcher::StartSyncCallers(int64_t callers) {
  sync_stop_.store(false);
  try {
    for (int64_t i = 0; i < callers; ++i) {
      threads_.emplace_back([this, i] { sync_caller_(static_cast<int>(i), sync_stop_); });
    }
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "\ngemm_loadgen: started %zu of %lld caller threads: %s\n",
                 threads_.size(), static_cast<long long>(callers), e.what());
  }
}

void Dispatcher::Stop() {
  inline_limit_.store(0);  // completions stop sending new requests
  sync_stop_.store(true);  // sync callers finish their call and stop
  {
    std::lock_guard<std::mutex> l(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

bool Dispatcher::TryClaim(int64_t limit) {
  int64_t n = in_flight_.load();
  while (n < limit) {
    if (in_flight_.compare_exchange_weak(n, n + 1)) return true;
  }
  return false;
}

bool Dispatcher::BackOff(std::unique_lock<std::mutex>& lock) {
  cv_.wait_for(lock,
               std::chrono::microseconds(static_cast<int64_t>(options_.error_backoff_ms * 1e3)),
               [&] { return stopped_; });
  return !stopped_;
}

void Dispatcher::ClosedLoop(int64_t concurrency) {
  int64_t failures_seen = failures_.load();
  for (;;) {
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stopped_ || in_flight_.load() < concurrency; });
      if (stopped_) return;
      const int64_t failures = failures_.load();
      if (failures != failures_seen && options_.error_backoff_ms > 0) {
        failures_seen = failures;
        if (!BackOff(l)) return;
      }
    }
    // Fills the point's concurrency at its start and refills after failed calls; successful
    // calls refill inline (OnFinished).
    if (TryClaim(concurrency)) issue_(NowNs());
  }
}

void Dispatcher::OpenLoop(double rate, int k, int n) {
  // This thread's share of the arrivals: Poisson streams of rate/n each add up to one Poisson
  // stream of `rate`; constant spacing interleaves the n threads, thread k offset by k/rate.
  const double my_rate = rate / n;
  std::exponential_distribution<double> exp_gap(my_rate);
  std::mt19937_64 gap_rng((options_.seed ^ 0x9e3779b97f4a7c15ull) + static_cast<uint64_t>(k));
  int64_t next = NowNs();
  if (!options_.poisson) next += static_cast<int64_t>(k / rate * 1e9);
  for (;;) {
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait_until(l, FromNs(next), [&] { return stopped_; });
      // Past the cap we wait, but the request keeps its intended time: the wait is latency.
      // The claim is made under mu_, so it is never made once the point has stopped.
      cv_.wait(l, [&] { return stopped_ || TryClaim(options_.max_outstanding); });
      if (stopped_) return;
    }
    issue_(next);
    const double gap_s = options_.poisson ? exp_gap(gap_rng) : 1.0 / my_rate;
    next += static_cast<int64_t>(gap_s * 1e9);
  }
}

void Dispatcher::OnFinished(bool ok) {
  if (!ok) failures_.fetch_add(1);
  const int64_t before = in_flight_.fetch_sub(1);
  // NOTE: closed loop, the caller whose request finished sends its next one right here, on the
  // callback thread. Through the single dispatcher thread, that thread was the limit (90% busy
  // at 51k req/s on an H200 host) and every request waited for it. Failed calls still go
  // through the dispatcher, which applies --error_backoff_ms.
  const int64_t limit = inline_limit_.load();
  if (ok && limit > 0 && TryClaim(limit)) {
    issue_(NowNs());
    return;
  }
  if (options_.sync_callers && before != 1) return;  // its caller thread sends the next one
  // Open loop: the dispatchers wait on the clock, not on completions; only a count leaving the
  // cap (--max_outstanding) or reaching zero (WaitIdle) has a waiter. Waking them on every answer
  // made each request cost the dispatchers a context switch.
  if (options_.open_loop && ok && before != 1 && before < options_.max_outstanding) return;
  { std::lock_guard<std::mutex> l(mu_); }  // a waiting dispatcher sees the new count
  cv_.notify_all();
}

bool Dispatcher::WaitIdle(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> l(mu_);
  return cv_.wait_until(l, deadline, [&] { return in_flight_.load() == 0; });
}

}  // namespace gemm::loadgen
