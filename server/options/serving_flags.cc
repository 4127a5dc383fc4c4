// Flags for where and how the server serves: address, ports, backend, drain and connections.
#include <cstdint>
#include <string>

#include "absl/flags/flag.h"
#include "server/options/flag_groups.h"

namespace {

const gemm::server::ProcessOptions kProcess;

int32_t Seconds(absl::Duration d) { return static_cast<int32_t>(absl::ToInt64Seconds(d)); }

}  // namespace

ABSL_FLAG(std::string, host, kProcess.host, "Address to listen on.");
ABSL_FLAG(int32_t, port, kProcess.port, "gRPC port.");
ABSL_FLAG(int32_t, metrics_port, kProcess.metrics_port,
          "Prometheus /metrics HTTP port; 0 disables it.");
ABSL_FLAG(std::string, backend, kProcess.backend,
          "auto|cpu|cuda: auto uses CUDA when a GPU is present.");
ABSL_FLAG(int32_t, drain_timeout_s, Seconds(kProcess.drain_timeout),
          "On SIGTERM/SIGINT, seconds to let in-flight RPCs finish.");
ABSL_FLAG(int32_t, max_connection_age_s, Seconds(kProcess.max_connection_age),
          "Close client connections after this many seconds (0: never), so round_robin clients "
          "re-resolve DNS and reach new replicas after a scale-out.");
ABSL_FLAG(bool, reuse_port, kProcess.reuse_port,
          "Share --port with other processes that pass --reuse_port too (SO_REUSEPORT: the kernel "
          "spreads new connections over them). Without it a port another process listens on is "
          "refused at start (\"port N is in use\", exit 1). Each process still needs its own "
          "--metrics_port.");
ABSL_FLAG(int64_t, max_connections, kProcess.max_connections,
          "Most client connections open at once; one past it is closed as soon as accepted. 0: "
          "the open-file limit, which start-up raises to its hard limit, less the descriptors "
          "open once the server listens and a reserve of 1/8 of the limit (at least 32) for "
          "files, shared-memory regions and scrapes.");
ABSL_FLAG(int32_t, cpu_workers, gemm::cpu::CpuBackendOptions{}.workers,
          "CPU backend worker threads.");

namespace gemm::server {

void ApplyServingFlags(ServerOptions& options) {
  ProcessOptions& p = options.process;
  p.host = absl::GetFlag(FLAGS_host);
  p.port = absl::GetFlag(FLAGS_port);
  p.metrics_port = absl::GetFlag(FLAGS_metrics_port);
  p.backend = absl::GetFlag(FLAGS_backend);
  p.drain_timeout = absl::Seconds(absl::GetFlag(FLAGS_drain_timeout_s));
  p.max_connection_age = absl::Seconds(absl::GetFlag(FLAGS_max_connection_age_s));
  p.reuse_port = absl::GetFlag(FLAGS_reuse_port);
  p.max_connections = absl::GetFlag(FLAGS_max_connections);
  options.cpu.workers = absl::GetFlag(FLAGS_cpu_workers);
}

}  // namespace gemm::server
