// MetricsHttpServer: our own small HTTP server for /metrics, because CivetWeb's fixed 100 KiB
// thread stacks cannot hold the static TLS of a CUDA build (see metrics_http.h). Plain POSIX
// sockets and one thread that serves every connection at once with poll(): non-blocking reads
// and writes, a deadline per connection, and a bound on connections, so that no client (nor a
// crowd of silent ones) can hold a scrape back.
#include "server/core/metrics_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <list>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "common/thread_name.h"

namespace gemm::core {
namespace {

// How long a client may take to send its request head, and to take the answer.
constexpr absl::Duration kReadTimeout = absl::Seconds(2);
constexpr absl::Duration kWriteTimeout = absl::Seconds(5);
// Largest request head we read; a scrape's is a few hundred bytes.
constexpr size_t kMaxHeadBytes = 16 << 10;
// Most connections served at once; a new one past it takes the place of the oldest that has
// not sent its request yet.
constexpr size_t kMaxConnections = 64;
// How long accepting pauses when the process is out of descriptors or memory.
constexpr absl::Duration kAcceptPause = absl::Milliseconds(50);

std::string ErrnoText(int err) {
  char buf[128];
  return strerror_r(err, buf, sizeof(buf));  // GNU strerror_r: returns the message
}

// Closes the descriptor it owns, unless released.
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() {
    if (fd_ >= 0) close(fd_);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// ---- Sockets ----

absl::StatusOr<in_addr> ParseHost(const std::string& host) {
  in_addr addr{};
  if (host.empty() || host == "0.0.0.0") {
    addr.s_addr = htonl(INADDR_ANY);
    return addr;
  }
  if (inet_pton(AF_INET, host.c_str(), &addr) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics host '", host, "' is not an IPv4 address"));
  }
  return addr;
}

// A non-blocking TCP socket bound to `addr`:`port` and listening; `*bound_port` gets its port.
absl::StatusOr<int> Listen(const std::string& host, in_addr addr, int port, int* bound_port) {
  const std::string where = absl::StrCat(host.empty() ? "0.0.0.0" : host, ":", port);
  ScopedFd fd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) {
    return absl::UnavailableError(
        absl::StrCat("metrics on ", where, ": socket: ", ErrnoText(errno)));
  }
  const int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr = addr;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", where, ": bind: ", ErrnoText(errno)));
  }
  if (listen(fd.get(), 64) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", where, ": listen: ", ErrnoText(errno)));
  }
  socklen_t len = sizeof(sa);
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    return absl::UnavailableError(
        absl::StrCat("metrics on ", where, ": getsockname: ", ErrnoText(errno)));
  }
  *bound_port = ntohs(sa.sin_port);
  return fd.release();
}

// Where the request head ends ("\r\n\r\n", or the bare "\n\n" some clients send), or npos.
size_t HeadEnd(absl::string_view data) {
  const size_t crlf = data.find("\r\n\r\n");
  const size_t lf = data.find("\n\n");
  if (crlf == absl::string_view::npos) return lf;
  if (lf == absl::string_view::npos) return crlf;
  return std::min(crlf, lf);
}

enum class Read { kMore, kHead, kTooLarge, kGiveUp };

// Reads what has arrived on non-blocking `fd` into `*head`: kHead once the request head is
// complete, kTooLarge past kMaxHeadBytes, kGiveUp when the client closed or failed, kMore when
// the rest has not arrived yet.
Read ReadSome(int fd, std::string* head) {
  char buf[4096];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      head->append(buf, static_cast<size_t>(n));
      if (HeadEnd(*head) != std::string::npos) return Read::kHead;
      if (head->size() > kMaxHeadBytes) return Read::kTooLarge;
      continue;
    }
    if (n == 0) return Read::kGiveUp;  // closed before a whole head
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? Read::kMore : Read::kGiveUp;
  }
}

enum class Write { kMore, kDone, kGiveUp };

// Sends what non-blocking `fd` takes of `data` past `*sent` (advanced): kDone once all is sent,
// kGiveUp when the client went away, kMore when its socket buffer is full.
Write WriteSome(int fd, absl::string_view data, size_t* sent) {
  while (*sent < data.size()) {
    const ssize_t n = send(fd, data.data() + *sent, data.size() - *sent, MSG_NOSIGNAL);
    if (n > 0) {
      *sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? Write::kMore : Write::kGiveUp;
  }
  return Write::kDone;
}

// Ends a connection whose answer was sent whole.
void FinishAnswer(int fd) {
  shutdown(fd, SHUT_WR);
  // Discard what already arrived unread (e.g. a body we ignore): closing with unread input
  // makes the kernel send RST, which can destroy our answer before the client has read it.
  // At most 64 KiB: a client that keeps sending must not hold the serving thread.
  char buf[4096];
  for (int i = 0; i < 16 && recv(fd, buf, sizeof(buf), 0) > 0; ++i) {
  }
}

// ---- HTTP ----

struct Response {
  int code = 200;
  std::string reason = "OK";
  std::string content_type = "text/plain; charset=utf-8";
  std::string extra_headers;  // each ending in "\r\n"
  std::string body;
  bool head_only = false;  // HEAD: headers (with the GET's Content-Length), no body
};

Response Error(int code, const std::string& reason) {
  Response r;
  r.code = code;
  r.reason = reason;
  r.body = absl::StrCat(reason, "\n");
  return r;
}

std::string Format(const Response& r) {
  std::string out = absl::StrCat(
      "HTTP/1.1 ", r.code, " ", r.reason, "\r\nContent-Type: ", r.content_type,
      "\r\nContent-Length: ", r.body.size(), "\r\nConnection: close\r\n", r.extra_headers, "\r\n");
  if (!r.head_only) out += r.body;
  return out;
}

bool IsToken(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < 'A' || c > 'Z') return false;
  }
  return true;
}

// The answer to a complete request head: "METHOD SP target SP HTTP/1.x" then headers, which we
// ignore (we always close the connection and never read a body).
Response Answer(absl::string_view head, const std::function<std::string()>& render) {
  absl::string_view line = head.substr(0, head.find('\n'));
  if (absl::EndsWith(line, "\r")) line.remove_suffix(1);
  const std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
  if (parts.size() != 3 || !IsToken(parts[0]) || !absl::StartsWith(parts[1], "/") ||
      !absl::StartsWith(parts[2], "HTTP/1.")) {
    return Error(400, "Bad Request");
  }
  const absl::string_view method = parts[0];
  if (method != "GET" && method != "HEAD") {
    Response r = Error(405, "Method Not Allowed");
    r.extra_headers = "Allow: GET, HEAD\r\n";
    return r;
  }
  const absl::string_view path = parts[1].substr(0, parts[1].find('?'));
  Response r;
  if (path == "/metrics") {
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";  // Prometheus text format
    r.body = render();
  } else {
    r = Error(404, "Not Found");
  }
  r.head_only = method == "HEAD";
  return r;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& host, int port, std::function<std::string()> render) {
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("metrics port ", port, " is out of range"));
  }
  absl::StatusOr<in_addr> addr = ParseHost(host);
  if (!addr.ok()) return addr.status();
  int bound_port = 0;
  absl::StatusOr<int> listen_fd = Listen(host, *addr, port, &bound_port);
  if (!listen_fd.ok()) return listen_fd.status();
  ScopedFd listener(*listen_fd);
  ScopedFd wake(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (wake.get() < 0) {
    return absl::UnavailableError(absl::StrCat("metrics: eventfd: ", ErrnoText(errno)));
  }
  std::unique_ptr<MetricsHttpServer> server(
      new MetricsHttpServer(listener.release(), wake.release(), bound_port, std::move(render)));
  // NOTE: std::thread reports failure by throwing; turn it into a Status here.
  try {
    server->thread_ = std::thread([s = server.get()] {
      SetCurrentThreadName("gemm-metrics");
      s->Serve();
    });
  } catch (const std::system_error& e) {
    return absl::UnavailableError(absl::StrCat("metrics: cannot start thread: ", e.what()));
  }
  return server;
}

MetricsHttpServer::MetricsHttpServer(int listen_fd, int wake_fd, int port,
                                     std::function<std::string()> render)
    : listen_fd_(listen_fd), wake_fd_(wake_fd), port_(port), render_(std::move(render)) {}

MetricsHttpServer::~MetricsHttpServer() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    if (write(wake_fd_, &one, sizeof(one)) != sizeof(one)) {
      GEMM_LOG(ERROR) << "metrics: cannot wake the HTTP thread: " << ErrnoText(errno);
    }
    thread_.join();
  }
  close(listen_fd_);
  close(wake_fd_);
}

// One client connection: reading its request head, then writing the answer.
struct MetricsHttpServer::Connection {
  int fd = -1;          // owned: closed when the connection is dropped from the list
  absl::Time deadline;  // of the current phase (kReadTimeout, then kWriteTimeout)
  std::string in;       // the request head so far
  std::string out;      // the whole answer, once the head is in
  size_t sent = 0;      // bytes of `out` sent
  bool writing() const { return !out.empty(); }
};

void MetricsHttpServer::Serve() {
  std::list<Connection> connections;
  absl::Time accept_paused_until = absl::InfinitePast();
  std::vector<pollfd> fds;
  for (;;) {
    const absl::Time now = absl::Now();
    const bool accepting = now >= accept_paused_until;
    fds.assign(
        {{wake_fd_, POLLIN, 0}, {listen_fd_, static_cast<short>(accepting ? POLLIN : 0), 0}});
    absl::Time wake_at = accepting ? absl::InfiniteFuture() : accept_paused_until;
    for (const Connection& c : connections) {
      fds.push_back({c.fd, static_cast<short>(c.writing() ? POLLOUT : POLLIN), 0});
      wake_at = std::min(wake_at, c.deadline);
    }
    const int timeout_ms =
        wake_at == absl::InfiniteFuture()
            ? -1
            : static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(wake_at - now)) + 1);
    if (poll(fds.data(), fds.size(), timeout_ms) < 0) {
      if (errno == EINTR) continue;
      GEMM_LOG(ERROR) << "metrics: poll: " << ErrnoText(errno) << "; /metrics no longer served";
      break;
    }
    if (fds[0].revents != 0) break;  // shutdown
    size_t i = 2;
    for (auto it = connections.begin(); it != connections.end(); ++i) {
      const bool open = (fds[i].revents == 0 || Progress(*it)) && absl::Now() < it->deadline;
      if (open) {
        ++it;
      } else {
        close(it->fd);
        it = connections.erase(it);
      }
    }
    if ((fds[1].revents & POLLIN) != 0 && !AcceptAll(connections)) {
      accept_paused_until = absl::Now() + kAcceptPause;  // do not spin on the backlog
    }
  }
  for (const Connection& c : connections) close(c.fd);
}

bool MetricsHttpServer::AcceptAll(std::list<Connection>& connections) {
  for (;;) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return errno != EMFILE && errno != ENFILE && errno != ENOBUFS && errno != ENOMEM;
    }
    if (connections.size() >= kMaxConnections) {
      auto silent = std::find_if(connections.begin(), connections.end(),
                                 [](const Connection& c) { return !c.writing(); });
      if (silent == connections.end()) {  // every one is taking an answer: refuse the new one
        close(fd);
        continue;
      }
      close(silent->fd);
      connections.erase(silent);
    }
    connections.push_back({.fd = fd, .deadline = absl::Now() + kReadTimeout});
  }
}

bool MetricsHttpServer::Progress(Connection& c) {
  if (!c.writing()) {
    switch (ReadSome(c.fd, &c.in)) {
      case Read::kMore:
        return true;
      case Read::kGiveUp:
        return false;
      case Read::kTooLarge:
        c.out = Format(Error(400, "Bad Request"));
        break;
      case Read::kHead:
        c.out = Format(Answer(c.in, render_));
        break;
    }
    c.in.clear();
    c.deadline = absl::Now() + kWriteTimeout;
  }
  switch (WriteSome(c.fd, c.out, &c.sent)) {
    case Write::kMore:
      return true;
    case Write::kGiveUp:
      return false;
    case Write::kDone:
      FinishAnswer(c.fd);
      return false;
  }
  return false;
}

}  // namespace gemm::core
