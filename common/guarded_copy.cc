// SIGBUS-guarded memory access (see guarded_copy.h).
#include "common/guarded_copy.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "absl/base/attributes.h"

namespace gemm {
namespace {

// The innermost RunGuarded() of this thread, or null. Constant-initialized, so reading it in the
// handler allocates nothing.
ABSL_CONST_INIT thread_local sigjmp_buf* t_guard = nullptr;

// The SIGBUS action installed before ours (SIG_IGN replaced by SIG_DFL: a fault cannot be
// ignored). Written once, before our handler can run.
struct sigaction g_previous;

// A SIGBUS that is not ours: hand it on as if this handler had never been installed.
void Chain(int sig, siginfo_t* info, void* context) {
  if ((g_previous.sa_flags & SA_SIGINFO) != 0) {
    g_previous.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous.sa_handler != SIG_DFL) {
    g_previous.sa_handler(sig);
    return;
  }
  // The default action: put it back. A fault re-executes its access on return and takes it; a
  // sent signal is sent again.
  sigaction(SIGBUS, &g_previous, nullptr);
  if (info->si_code <= 0) raise(SIGBUS);
}

void OnSigbus(int sig, siginfo_t* info, void* context) {
  sigjmp_buf* const guard = t_guard;
  // si_code > 0: raised by the kernel for a fault of this thread, not sent by kill().
  if (guard != nullptr && info->si_code > 0) {
    t_guard = nullptr;
    siglongjmp(*guard, 1);
  }
  Chain(sig, info, context);
}

void InstallHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = OnSigbus;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    struct sigaction previous {};
    sigaction(SIGBUS, nullptr, &previous);
    if ((previous.sa_flags & SA_SIGINFO) == 0 && previous.sa_handler == SIG_IGN) {
      previous.sa_handler = SIG_DFL;
    }
    g_previous = previous;
    sigaction(SIGBUS, &action, nullptr);
  });
}

}  // namespace

bool RunGuarded(absl::FunctionRef<void()> fn) {
  InstallHandler();
  sigjmp_buf buf;
  sigjmp_buf* const outer = t_guard;
  // NOTE: the signal mask is not saved (that costs a system call per guard): the handler ran
  // with SIGBUS blocked on top of this thread's mask, so unblocking it restores the mask.
  if (sigsetjmp(buf, 0) != 0) {
    t_guard = outer;
    sigset_t bus;
    sigemptyset(&bus);
    sigaddset(&bus, SIGBUS);
    pthread_sigmask(SIG_UNBLOCK, &bus, nullptr);
    return false;
  }
  t_guard = &buf;
  std::atomic_signal_fence(std::memory_order_seq_cst);  // the guard is set before fn's accesses
  fn();
  std::atomic_signal_fence(std::memory_order_seq_cst);  // and cleared after them
  t_guard = outer;
  return true;
}

bool GuardedCopy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return true;
  return RunGuarded([&] { std::memcpy(dst, src, bytes); });
}

}  // namespace gemm
