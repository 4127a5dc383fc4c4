// EventWatcher (see event_watcher.h).
#include "server/gpu/event_watcher.h"

#include <sys/prctl.h>

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"
#include "common/thread_name.h"

namespace gemm::gpu {

cudaError_t EventWatcher::QueryCudaEvent(cudaEvent_t event) {
  const cudaError_t result = cudaEventQuery(event);
  if (result != cudaSuccess && result != cudaErrorNotReady) (void)cudaGetLastError();
  return result;
}

EventWatcher::EventWatcher(int device, std::string thread_name, Query query) : query_(query) {
  thread_ = std::thread([this, device, name = std::move(thread_name)] {
    SetCurrentThreadName(name);
    Loop(device);
  });
}

EventWatcher::~EventWatcher() { Stop(); }

void EventWatcher::Watch(cudaEvent_t event, Done done, void* arg) {
  absl::MutexLock lock(&mu_);
  incoming_.push_back({event, done, arg, absl::Now()});
  cv_.Signal();
}

void EventWatcher::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    cv_.Signal();
  }
  if (thread_.joinable()) thread_.join();
}

absl::Duration EventWatcher::PollInterval(absl::Duration age) {
  return std::clamp(age / 8, absl::Microseconds(2), absl::Microseconds(50));
}

void EventWatcher::Loop(int device) {
  if (device >= 0) (void)cudaSetDevice(device);
  // NOTE: sleeps between polls are 2-50 microseconds; Linux's default timer slack (50 us)
  // would stretch every one of them to ~60 us.
  (void)prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
  std::vector<Entry> watched;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      while (watched.empty() && incoming_.empty() && !stop_) cv_.Wait(&mu_);
      watched.insert(watched.end(), incoming_.begin(), incoming_.end());
      incoming_.clear();
      if (watched.empty() && stop_) return;
    }
    bool any = false;
    for (size_t i = 0; i < watched.size();) {
      const cudaError_t result = query_(watched[i].event);
      if (result == cudaErrorNotReady) {
        ++i;
        continue;
      }
      const Entry e = watched[i];
      watched.erase(watched.begin() + static_cast<std::ptrdiff_t>(i));
      e.done(e.arg, result);
      any = true;
    }
    if (!any && !watched.empty()) {
      // `watched` keeps the order of Watch() calls (erase keeps it): the front is the oldest.
      absl::SleepFor(PollInterval(absl::Now() - watched.front().since));
    }
  }
}

}  // namespace gemm::gpu
