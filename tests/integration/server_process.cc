// ServerProcess: fork/exec of gemm_server for tests.
#include "tests/integration/server_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

#ifndef GEMM_SERVER_PATH
#define GEMM_SERVER_PATH "gemm_server"
#endif

namespace gemm::testing {

int ServerProcess::FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(
    std::vector<std::string> flags, absl::Duration ready_timeout, std::string binary,
    int max_open_files, client::GemmClient::Options client_options, int port) {
  if (binary.empty()) binary = GEMM_SERVER_PATH;
  if (port == 0) port = FreePort();
  std::vector<std::string> args = {binary, absl::StrCat("--port=", port), "--host=127.0.0.1",
                                   "--metrics_port=0"};
  args.insert(args.end(), flags.begin(), flags.end());
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (max_open_files > 0) {
      const rlimit limit = {static_cast<rlim_t>(max_open_files),
                            static_cast<rlim_t>(max_open_files)};
      if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(126);
    }
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  std::unique_ptr<ServerProcess> p(new ServerProcess(pid, port));
  client_options.target = p->target();
  auto client = client::GemmClient::Create(client_options);
  if (!client.ok()) return client.status();
  p->client_ = std::move(*client);
  const absl::Time deadline = absl::Now() + ready_timeout;
  while (absl::Now() < deadline) {
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      p->pid_ = -1;
      return absl::InternalError(absl::StrCat(binary, " exited during start-up"));
    }
    if (p->client_->WaitForConnected(absl::Milliseconds(200)) && p->client_->GetServerInfo().ok()) {
      return p;
    }
  }
  return absl::DeadlineExceededError(absl::StrCat(binary, " did not become ready"));
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

std::string ServerProcess::target() const { return absl::StrCat("127.0.0.1:", port_); }

int ServerProcess::Stop(int signal, absl::Duration timeout) {
  if (pid_ <= 0) return -1;
  kill(pid_, signal);
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      return 128 + WTERMSIG(status);
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return -1;
}

}  // namespace gemm::testing
