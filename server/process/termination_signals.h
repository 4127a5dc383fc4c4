// SIGTERM, SIGINT and SIGHUP in the server process. All three are blocked in every thread from
// before the first shared-library constructor runs, so no thread can take one by the default action
// (which ends the process): libraries that start threads while they load (OpenBLAS starts its pool
// in its constructor) inherit the mask. A watcher thread takes them with sigtimedwait: the first
// starts the drain, each later one is logged and changes nothing (the drain goes on and the
// process exits 0 once it is over; SIGKILL ends it at once). SIGHUP calls the hang-up handler
// (a rescan of the weight repository) on the watcher thread.
#pragma once

#include <csignal>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace gemm::server {

class TerminationSignals {
 public:
  // Starts the watcher thread. Thread-compatible: one instance per process.
  TerminationSignals();
  // Stops the watcher and waits for it; signals arriving later stay pending (blocked).
  ~TerminationSignals();
  TerminationSignals(const TerminationSignals&) = delete;
  TerminationSignals& operator=(const TerminationSignals&) = delete;

  // Blocks until the first SIGTERM or SIGINT has arrived; returns its number. Thread-safe.
  int AwaitFirst();

  // What a SIGHUP does from now on (none: it is logged and ignored). Thread-safe.
  void OnHangup(std::function<void()> handler);

 private:
  void Watch();

  absl::Mutex mu_;
  int first_ ABSL_GUARDED_BY(mu_) = 0;      // the first signal taken; 0 before
  bool stop_ ABSL_GUARDED_BY(mu_) = false;  // set by the destructor
  std::function<void()> on_hangup_ ABSL_GUARDED_BY(mu_);
  std::thread watcher_;  // last: starts once the state above is set up
};

}  // namespace gemm::server
