// Integration: the gRPC listener's guards on real gemm_server processes: a port another server
// listens on is refused at start unless both pass --reuse_port.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tests/integration/server_process.h"

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

}  // namespace
}  // namespace gemm::testing
