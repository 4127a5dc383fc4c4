// Weight repository reloader thread.
#include "server/core/weight_repository_reloader.h"

#include "common/log.h"
#include "common/thread_name.h"

namespace gemm::core {

WeightRepositoryReloader::WeightRepositoryReloader(WeightRepository* repository)
    : repository_(repository), thread_([this] { Loop(); }) {}

WeightRepositoryReloader::~WeightRepositoryReloader() { Stop(); }

void WeightRepositoryReloader::Trigger() {
  absl::MutexLock lock(&mu_);
  wanted_ = true;
}

void WeightRepositoryReloader::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void WeightRepositoryReloader::Loop() {
  SetCurrentThreadName("gemm-weights");
  const absl::Duration poll = repository_->options().poll_interval;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto asked = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return wanted_ || stop_; };
      if (poll > absl::ZeroDuration()) {
        mu_.AwaitWithTimeout(absl::Condition(&asked), poll);
      } else {
        mu_.Await(absl::Condition(&asked));
      }
      if (stop_) return;
      if (wanted_) GEMM_LOG(INFO) << "weights: rescanning (asked)";
      wanted_ = false;
    }
    repository_->ScanAndLog();
  }
}

}  // namespace gemm::core
