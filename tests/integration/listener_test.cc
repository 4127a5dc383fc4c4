// Integration: the gRPC listener's guards on real gemm_server processes. A port another server
// listens on is refused at start unless both pass --reuse_port; the listener keeps accepting
// after more idle connections than the process has descriptors for (closed at the connection
// cap, or shed once the process is out of descriptors); and --max_connections counts the client
// connections that are open.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tests/common/loopback_http.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_util.h"

#ifndef GEMM_SERVER_PATH
#define GEMM_SERVER_PATH "gemm_server"
#endif

namespace gemm::testing {
namespace {

// A gemm_server child (CPU backend, loopback, no metrics port) whose log the test reads.
class LoggedServer {
 public:
  // Starts the server with `flags` after the defaults, its stderr into a pipe; null on failure.
  static std::unique_ptr<LoggedServer> Start(const std::vector<std::string>& flags) {
    int err[2];
    if (pipe2(err, O_CLOEXEC) != 0) return nullptr;
    std::vector<std::string> args = {GEMM_SERVER_PATH, "--backend=cpu", "--cpu_workers=1",
                                     "--host=127.0.0.1", "--metrics_port=0"};
    args.insert(args.end(), flags.begin(), flags.end());
    const pid_t pid = fork();
    if (pid == 0) {
      dup2(err[1], STDERR_FILENO);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(err[1]);
    if (pid < 0) {
      close(err[0]);
      return nullptr;
    }
    return std::unique_ptr<LoggedServer>(new LoggedServer(pid, err[0]));
  }

  ~LoggedServer() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(log_fd_);
  }

  // Reads the log until it holds `text` (true), or the child closes it or `timeout` passes.
  bool AwaitLog(const std::string& text, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (log_.find(text) == std::string::npos) {
      if (!ReadLog(deadline)) return false;
    }
    return true;
  }

  // Waits up to `timeout` for the child to exit: its exit code, or -1 while it still runs.
  int AwaitExit(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (ReadLog(deadline)) {
    }
    int status = 0;
    while (absl::Now() < deadline) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    return -1;
  }

  const std::string& log() const { return log_; }

 private:
  LoggedServer(pid_t pid, int log_fd) : pid_(pid), log_fd_(log_fd) {}

  // Appends what the child wrote next; false at the end of its log or at `deadline`.
  bool ReadLog(absl::Time deadline) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    pollfd p = {log_fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1) <= 0) return false;
    char buf[4096];
    const ssize_t n = read(log_fd_, buf, sizeof(buf));
    if (n <= 0) return false;
    log_.append(buf, static_cast<size_t>(n));
    return true;
  }

  pid_t pid_;
  int log_fd_;
  std::string log_;
};

TEST(ListenerTest, SecondServerOnATakenPortExitsWithAClearError) {
  auto first = ServerProcess::Start({"--backend=cpu", "--cpu_workers=1"});
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = LoggedServer::Start({absl::StrCat("--port=", (*first)->port())});
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->AwaitExit(absl::Seconds(30)), 1) << second->log();
  EXPECT_NE(second->log().find(absl::StrCat("port ", (*first)->port(), " is in use")),
            std::string::npos)
      << second->log();
  EXPECT_TRUE((*first)->client().GetServerInfo().ok());  // the first one is undisturbed
}

TEST(ListenerTest, ServersThatAllPassReusePortShareAPort) {
  auto first = ServerProcess::Start({"--backend=cpu", "--cpu_workers=1", "--reuse_port"});
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = LoggedServer::Start({absl::StrCat("--port=", (*first)->port()), "--reuse_port"});
  ASSERT_NE(second, nullptr);
  EXPECT_TRUE(second->AwaitLog(absl::StrCat("listening on 127.0.0.1:", (*first)->port()),
                               absl::Seconds(30)))
      << second->log();
}

// Raises this process's open-file limit to at least `n`; whether it could.
bool AllowOpenFiles(rlim_t n) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return false;
  if (limit.rlim_cur >= n) return true;
  if (limit.rlim_max < n) return false;
  limit.rlim_cur = n;
  return setrlimit(RLIMIT_NOFILE, &limit) == 0;
}

// A server limited to 256 descriptors gets 300 idle connections; once they close, a new client
// must be served, and gemm_connections_shed_total{reason=`reason`} must have counted the ones
// it had no room for.
void FloodThenServe(const std::vector<std::string>& extra_flags, const std::string& reason) {
  constexpr int kMaxOpenFiles = 256;
  constexpr int kIdle = 300;
  if (!AllowOpenFiles(kIdle + 64)) GTEST_SKIP() << "this test process cannot open enough files";
  const int metrics_port = ServerProcess::FreePort();
  std::vector<std::string> flags = {"--backend=cpu", "--cpu_workers=1",
                                    absl::StrCat("--metrics_port=", metrics_port)};
  flags.insert(flags.end(), extra_flags.begin(), extra_flags.end());
  auto server = ServerProcess::Start(flags, absl::Seconds(20), "", kMaxOpenFiles);
  ASSERT_TRUE(server.ok()) << server.status();

  std::vector<int> idle;
  for (int i = 0; i < kIdle; ++i) {
    const int fd = ConnectLoopback((*server)->port());
    if (fd >= 0) idle.push_back(fd);
  }
  EXPECT_EQ(static_cast<int>(idle.size()), kIdle);
  absl::SleepFor(absl::Seconds(1));  // the server has taken them in (or shed them)
  const std::string series = absl::StrCat("gemm_connections_shed_total{reason=\"", reason, "\"}");
  if (reason == "max_connections") {
    // Scrapes are not client connections: they draw on the reserve and go on meanwhile.
    EXPECT_GT(ScrapeMetric(metrics_port, series), 0) << series;
  }
  for (int fd : idle) close(fd);
  absl::SleepFor(absl::Milliseconds(500));

  // A client with a connection of its own (not the process-wide subchannel pool, which would
  // hand it the harness client's connection, made before the idle ones).
  auto fresh = client::GemmClient::Create(
      {.target = (*server)->target(),
       .channel_args = {{.name = GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, .value = 1}}});
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  absl::BitGen gen;
  const HostProblem p = RandomProblem(8, 8, 8, false, false, 1, 0, gen);
  v1::GemmRequest request;
  FillProto(p, request.mutable_problem());
  auto response = (*fresh)->Gemm(request, absl::Seconds(10));
  ASSERT_TRUE(response.ok()) << "the listener no longer accepts: " << response.status();
  EXPECT_LE(OutputError(p, response->outputs(0)), Tolerance(p));

  double shed = -1;
  for (int i = 0; i < 50 && shed <= 0; ++i) {  // published every 500 ms
    shed = ScrapeMetric(metrics_port, series);
    if (shed <= 0) absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_GT(shed, 0) << series;
}

// A client with a connection of its own to `server` (not the process-wide subchannel pool, which
// would hand it a connection made earlier).
std::unique_ptr<client::GemmClient> OwnConnection(ServerProcess& server) {
  auto c = client::GemmClient::Create(
      {.target = server.target(),
       .channel_args = {{.name = GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, .value = 1}}});
  return c.ok() ? std::move(*c) : nullptr;
}

// One small GEMM through `c`: its status.
absl::Status SmallGemm(client::GemmClient& c) {
  absl::BitGen gen;
  const HostProblem p = RandomProblem(8, 8, 8, false, false, 1, 0, gen);
  v1::GemmRequest request;
  FillProto(p, request.mutable_problem());
  auto response = c.Gemm(request, absl::Seconds(10));
  if (!response.ok()) return response.status();
  if (OutputError(p, response->outputs(0)) > Tolerance(p)) return absl::DataLossError("wrong D");
  return absl::OkStatus();
}

// --max_connections=3 with three client connections open (the harness's and two more): a fourth
// is refused at once while the three keep working; once one closes, a new one gets in, even
// when the descriptor number it freed went to something else (an idle /metrics connection).
TEST(ListenerTest, ConnectionCapCountsOpenConnections) {
  const int metrics_port = ServerProcess::FreePort();
  auto server = ServerProcess::Start({"--backend=cpu", "--cpu_workers=1", "--max_connections=3",
                                      absl::StrCat("--metrics_port=", metrics_port)});
  ASSERT_TRUE(server.ok()) << server.status();
  ServerProcess& s = **server;
  auto first = OwnConnection(s);
  auto second = OwnConnection(s);
  ASSERT_TRUE(first != nullptr && second != nullptr);
  ASSERT_TRUE(SmallGemm(*first).ok());
  ASSERT_TRUE(SmallGemm(*second).ok());

  auto refused = OwnConnection(s);
  ASSERT_NE(refused, nullptr);
  const absl::Status past_cap = SmallGemm(*refused);
  EXPECT_EQ(past_cap.code(), absl::StatusCode::kUnavailable) << past_cap;
  refused.reset();
  EXPECT_TRUE(SmallGemm(*first).ok());
  EXPECT_TRUE(SmallGemm(*second).ok());
  EXPECT_TRUE(s.client().GetServerInfo().ok());

  first.reset();                            // closes its connection
  absl::SleepFor(absl::Milliseconds(300));  // the server sees it close
  const int idle_scrape = ConnectLoopback(metrics_port);
  ASSERT_GE(idle_scrape, 0);
  absl::SleepFor(absl::Milliseconds(300));  // the metrics server accepts it
  absl::Status admitted = absl::UnknownError("not tried");
  for (int attempt = 0; attempt < 20 && !admitted.ok(); ++attempt) {
    if (attempt > 0) absl::SleepFor(absl::Milliseconds(250));
    auto fresh = OwnConnection(s);
    ASSERT_NE(fresh, nullptr);
    admitted = SmallGemm(*fresh);
  }
  EXPECT_TRUE(admitted.ok()) << "a connection closed but no new one gets in: " << admitted;
  EXPECT_TRUE(SmallGemm(*second).ok());
  close(idle_scrape);
}

TEST(ListenerTest, AcceptsAgainAfterConnectionsPastTheCap) {
  FloodThenServe({}, "max_connections");
}

TEST(ListenerTest, AcceptsAgainAfterRunningOutOfDescriptors) {
  // A cap past what the descriptors allow: the process itself runs out (EMFILE).
  FloodThenServe({"--max_connections=1000000"}, "out_of_descriptors");
}

}  // namespace
}  // namespace gemm::testing
