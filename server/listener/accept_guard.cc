// The accept guard (see accept_guard.h): an accept4() definition that calls libc's, sheds
// connections the process has no room for, and never hands gRPC an error that would stop its
// listener.
#include "server/listener/accept_guard.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "absl/base/attributes.h"
#include "absl/base/const_init.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "server/listener/open_connections.h"

namespace gemm::server {
namespace {

using Accept4Fn = int (*)(int, sockaddr*, socklen_t*, int);

// How often shedding is logged at most.
constexpr absl::Duration kLogEvery = absl::Seconds(10);

// NOTE: the guard's state is process-wide because accept4() is: constant-initialized, so it is
// valid whenever accept4() is called.
ABSL_CONST_INIT std::atomic<Accept4Fn> libc_accept4{nullptr};  // set by InstallAcceptGuard
ABSL_CONST_INIT std::atomic<int64_t> max_open{0};
ABSL_CONST_INIT std::atomic<int> capped_port{0};
ABSL_CONST_INIT std::atomic<int64_t> shed_for_cap{0};
ABSL_CONST_INIT std::atomic<int64_t> shed_for_descriptors{0};
ABSL_CONST_INIT std::atomic<int64_t> next_log_ns{0};
ABSL_CONST_INIT absl::Mutex spare_mu(absl::kConstInit);
int spare_fd ABSL_GUARDED_BY(spare_mu) = -1;

int OpenSpare() { return open("/dev/null", O_RDONLY | O_CLOEXEC); }

// Counts one shed connection in `counter`; logs the totals if the last log is kLogEvery old.
void CountShed(std::atomic<int64_t>& counter) {
  counter.fetch_add(1, std::memory_order_relaxed);
  const int64_t now = absl::GetCurrentTimeNanos();
  int64_t due = next_log_ns.load(std::memory_order_relaxed);
  if (now < due ||
      !next_log_ns.compare_exchange_strong(due, now + absl::ToInt64Nanoseconds(kLogEvery))) {
    return;
  }
  const ShedConnections shed = ConnectionsShed();
  GEMM_LOG(WARNING) << "closing new client connections the server has no room for: "
                    << shed.max_connections << " past --max_connections, "
                    << shed.out_of_descriptors
                    << " while out of descriptors, since start (logged at most every " << kLogEvery
                    << ")";
}

// Out of descriptors with a connection pending on `listener`: frees the spare descriptor to
// accept it, closes it, and takes the spare back. Returns libc's accept4 result (the descriptor,
// already closed, or -1 with errno: EAGAIN once the backlog is empty).
int ShedWithSpare(Accept4Fn libc, int listener) {
  absl::MutexLock lock(&spare_mu);
  if (spare_fd < 0) spare_fd = OpenSpare();
  if (spare_fd < 0) {
    errno = EMFILE;
    return -1;
  }
  close(spare_fd);
  const int fd = libc(listener, nullptr, nullptr, SOCK_CLOEXEC);
  const int accept_errno = errno;
  if (fd >= 0) close(fd);
  spare_fd = OpenSpare();
  errno = accept_errno;
  return fd;
}

// Errors Linux's accept4 reports for one pending connection (the listener itself is fine): the
// call is retried.
bool ConnectionError(int err) {
  switch (err) {
    case EINTR:
    case ECONNABORTED:
    case EPROTO:
    case EPERM:
    case ENETDOWN:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
      return true;
    default:
      return false;
  }
}

// The port `listener` is bound to, or -1.
int ListenerPort(int listener) {
  sockaddr_storage address{};
  socklen_t size = sizeof(address);
  if (getsockname(listener, reinterpret_cast<sockaddr*>(&address), &size) != 0) return -1;
  if (address.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
  }
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
  }
  return -1;
}

// Records connection `fd`, accepted on `listener`, as open; false when it is past the cap of
// the capped port (then the caller closes it).
bool Admit(int listener, int fd) {
  const int port = ListenerPort(listener);
  const bool capped = port == capped_port.load(std::memory_order_relaxed);
  return AdmitConnection(fd, port, capped ? max_open.load(std::memory_order_relaxed) : 0);
}

bool NonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && (flags & O_NONBLOCK) != 0;
}

// Sheds one pending connection of `listener` while out of descriptors; false when there was
// none to shed (or no way to), and the caller reports EAGAIN.
bool ShedPending(Accept4Fn libc, int listener) {
  for (;;) {
    const int shed = ShedWithSpare(libc, listener);
    if (shed >= 0) {
      CountShed(shed_for_descriptors);
      return true;
    }
    if (!ConnectionError(errno)) return false;
  }
}

// accept4() with the guard on (see accept_guard.h).
int GuardedAccept4(Accept4Fn libc, int listener, sockaddr* addr, socklen_t* addr_len, int flags) {
  const socklen_t addr_size = addr_len != nullptr ? *addr_len : 0;
  for (;;) {
    if (addr_len != nullptr) *addr_len = addr_size;
    const int fd = libc(listener, addr, addr_len, flags);
    if (fd >= 0) {
      if (Admit(listener, fd)) return fd;
      close(fd);
      CountShed(shed_for_cap);
      continue;
    }
    const int err = errno;
    if (ConnectionError(err)) continue;
    if (err == ENOBUFS || err == ENOMEM) {
      errno = EAGAIN;
      return -1;
    }
    // NOTE: a blocking listener would block the shedding accept on an empty backlog; gRPC's
    // listeners and ours are non-blocking.
    if ((err != EMFILE && err != ENFILE) || !NonBlocking(listener)) {
      errno = err;
      return -1;
    }
    if (!ShedPending(libc, listener)) {
      errno = EAGAIN;
      return -1;
    }
  }
}

}  // namespace

absl::Status InstallAcceptGuard() {
  const auto libc = reinterpret_cast<Accept4Fn>(dlsym(RTLD_NEXT, "accept4"));
  if (libc == nullptr) {
    return absl::FailedPreconditionError("accept guard: libc's accept4 not found");
  }
  rlimit files{};
  const int64_t max_descriptors =
      getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY
          ? static_cast<int64_t>(files.rlim_cur)
          : int64_t{1} << 20;
  {
    absl::MutexLock lock(&spare_mu);
    if (libc_accept4.load() != nullptr) {
      return absl::FailedPreconditionError("accept guard: installed twice");
    }
    spare_fd = OpenSpare();
    if (spare_fd < 0) {
      return absl::UnavailableError("accept guard: cannot open a spare descriptor (/dev/null)");
    }
  }
  if (absl::Status s = StartCountingConnections(max_descriptors); !s.ok()) return s;
  libc_accept4.store(libc, std::memory_order_release);
  return absl::OkStatus();
}

void SetConnectionCap(int64_t max_connections, int port) {
  capped_port.store(port, std::memory_order_relaxed);
  max_open.store(max_connections, std::memory_order_relaxed);
}

ShedConnections ConnectionsShed() {
  return {.max_connections = shed_for_cap.load(std::memory_order_relaxed),
          .out_of_descriptors = shed_for_descriptors.load(std::memory_order_relaxed)};
}

}  // namespace gemm::server

// The process's accept4(): the guard once installed, libc's before.
extern "C" int accept4(int fd, sockaddr* addr, socklen_t* addr_len, int flags) {
  using gemm::server::Accept4Fn;
  if (const Accept4Fn libc = gemm::server::libc_accept4.load(std::memory_order_acquire)) {
    return gemm::server::GuardedAccept4(libc, fd, addr, addr_len, flags);
  }
  static const auto passthrough = reinterpret_cast<Accept4Fn>(dlsym(RTLD_NEXT, "accept4"));
  if (passthrough == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  return passthrough(fd, addr, addr_len, flags);
}
