// Test harness: starts the real gemm_server binary on a free loopback port as a child process,
// waits until it answers, and stops it with a signal. Used by integration, loadgen and GPU tests.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/gemm_client.h"

namespace gemm::testing {

class ServerProcess {
 public:
  // Starts `binary` (default: the path compiled in as GEMM_SERVER_PATH) with --port=<port> (0:
  // a free one), --host=127.0.0.1, --metrics_port=0 and `flags`; waits up to `ready_timeout` for
  // GetServerInfo. `max_open_files` > 0 sets the child's RLIMIT_NOFILE (soft and hard) before it
  // starts. client() connects with `client_options` (its target replaced by the server's).
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      std::vector<std::string> flags = {}, absl::Duration ready_timeout = absl::Seconds(20),
      std::string binary = "", int max_open_files = 0,
      client::GemmClient::Options client_options = {}, int port = 0);
  // Sends SIGKILL if still running.
  ~ServerProcess();

  // "127.0.0.1:<port>".
  std::string target() const;
  int port() const { return port_; }
  // The server's process id (-1 once it has exited and been reaped).
  pid_t pid() const { return pid_; }
  // A client connected to this server.
  client::GemmClient& client() { return *client_; }
  // Sends `signal` and waits up to `timeout` for exit; returns the exit code (-1 on timeout,
  // 128+n when killed by signal n).
  int Stop(int signal, absl::Duration timeout = absl::Seconds(30));

  // A free TCP port on 127.0.0.1 (bound and released).
  static int FreePort();

 private:
  ServerProcess(pid_t pid, int port) : pid_(pid), port_(port) {}
  pid_t pid_;
  int port_;
  std::unique_ptr<client::GemmClient> client_;
};

}  // namespace gemm::testing
