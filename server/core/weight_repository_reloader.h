// Keeps a weight repository in line with its files while the server runs: a thread that rescans
// when asked (SIGHUP) and every poll interval of the repository's options, one scan at a time.
#pragma once

#include <thread>

#include "absl/synchronization/mutex.h"
#include "server/core/weight_repository.h"

namespace gemm::core {

class WeightRepositoryReloader {
 public:
  // Starts the thread; `repository` must outlive the reloader.
  explicit WeightRepositoryReloader(WeightRepository* repository);
  // Stops the thread (a scan in progress finishes first).
  ~WeightRepositoryReloader();

  // Asks for a rescan soon (several requests before it starts make one scan). Non-blocking;
  // safe to call from any thread.
  void Trigger();

  // Stops the thread and waits for it. Idempotent.
  void Stop();

 private:
  void Loop();

  WeightRepository* const repository_;
  absl::Mutex mu_;
  bool wanted_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts once the state above is set up
};

}  // namespace gemm::core
