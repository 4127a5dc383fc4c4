// TerminationSignals (see termination_signals.h).
#include "server/process/termination_signals.h"

#include <pthread.h>
#include <signal.h>

#include <ctime>

#include "common/log.h"
#include "common/thread_name.h"

namespace gemm::server {
namespace {

// How long the watcher waits for a signal before it looks at its stop flag.
constexpr timespec kWatchSlice = {.tv_sec = 0, .tv_nsec = 100'000'000};

sigset_t Termination() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  return signals;
}

// Blocks the signals in the process's first thread. Every thread inherits its creator's mask.
void BlockTermination(int /*argc*/, char** /*argv*/, char** /*envp*/) {
  const sigset_t signals = Termination();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

// NOTE: the executable's .preinit_array runs before the constructors of the shared libraries it
// loads (a constructor in the executable, or the first line of main, runs after them), and
// libopenblas's constructor already starts its thread pool. A pool thread with the signals
// unblocked took any SIGTERM that arrived while the main thread was not in sigwait (during the
// drain) and the default action ended the process.
__attribute__((section(".preinit_array"),
               used)) void (*const kBlockTerminationAtLoad)(int, char**, char**) = BlockTermination;

}  // namespace

TerminationSignals::TerminationSignals() : watcher_([this] { Watch(); }) {}

TerminationSignals::~TerminationSignals() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  watcher_.join();
}

int TerminationSignals::AwaitFirst() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](int* first) { return *first != 0; }, &first_));
  return first_;
}

void TerminationSignals::OnHangup(std::function<void()> handler) {
  absl::MutexLock lock(&mu_);
  on_hangup_ = std::move(handler);
}

void TerminationSignals::Watch() {
  SetCurrentThreadName("gemm-signals");
  const sigset_t signals = Termination();
  for (;;) {
    const int sig = sigtimedwait(&signals, nullptr, &kWatchSlice);
    absl::MutexLock lock(&mu_);
    if (stop_) return;
    if (sig <= 0) continue;  // timed out or interrupted
    if (sig == SIGHUP) {
      if (on_hangup_) {
        on_hangup_();
      } else {
        GEMM_LOG(INFO) << "SIGHUP: nothing to do (no weight repository, --weights)";
      }
      continue;
    }
    if (first_ == 0) {
      first_ = sig;
      continue;
    }
    GEMM_LOG(WARNING) << "signal " << sig
                      << " while draining: ignored, the drain goes on (SIGKILL stops the process "
                         "at once)";
  }
}

}  // namespace gemm::server
