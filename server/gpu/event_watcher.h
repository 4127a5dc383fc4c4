// EventWatcher: one thread that polls CUDA events and runs each one's callback as soon as the
// event has completed. An alternative to cudaLaunchHostFunc for completion: a host function waits
// for CUDA's callback thread to be woken and holds its stream until it returns, while polling
// sees a completed event within a few microseconds and never blocks a stream. Between polls it
// sleeps an eighth of the oldest watched event's age, between 2 and 50 us: short units are
// polled every few microseconds, long ones (milliseconds) every 50 us instead of burning a core.
// NOTE: sleeping in cudaEventSynchronize on the oldest event instead (events created with
// cudaEventBlockingSync) was slower on every decode load (H200: CUDA IPC 0.95-0.96, shared
// memory 0.88-0.93, inline 0.95-0.98 of polling, two rounds each), and the waiting thread still
// used 53-70% of a core against polling's 68-84%.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gemm::gpu {

class EventWatcher {
 public:
  // Called once per watched event on the watcher thread, with cudaSuccess or the query's error.
  using Done = void (*)(void* arg, cudaError_t result);
  // Whether an event has completed: cudaSuccess, cudaErrorNotReady, or an error (which it has
  // cleared from the CUDA runtime, if it came from there).
  using Query = cudaError_t (*)(cudaEvent_t event);
  // cudaEventQuery, clearing a sticky error from the calling thread's runtime state.
  static cudaError_t QueryCudaEvent(cudaEvent_t event);

  // Starts the polling thread (named `thread_name`) with `device` current (device < 0: no CUDA
  // call at all, for tests with a fake `query`).
  EventWatcher(int device, std::string thread_name, Query query = &QueryCudaEvent);
  // Stop()s.
  ~EventWatcher();

  EventWatcher(const EventWatcher&) = delete;
  EventWatcher& operator=(const EventWatcher&) = delete;

  // Runs done(arg, result) once `event` (already recorded) has completed. Thread-safe.
  void Watch(cudaEvent_t event, Done done, void* arg);

  // Waits until every watched event has completed and its callback ran, then ends the thread.
  // Watch() must not be called afterwards.
  void Stop();

  // Sleep between two polls that found nothing, for an oldest watched event of age `age`: an
  // eighth of it, clamped to [2, 50] us.
  static absl::Duration PollInterval(absl::Duration age);

 private:
  struct Entry {
    cudaEvent_t event;
    Done done;
    void* arg;
    absl::Time since;  // when Watch() was called
  };
  void Loop(int device);

  const Query query_;

  absl::Mutex mu_;
  std::vector<Entry> incoming_ ABSL_GUARDED_BY(mu_);
  absl::CondVar cv_;  // signalled when incoming_ grows or on Stop()
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace gemm::gpu
