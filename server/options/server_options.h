// The server's options, one struct per layer (process, engine, service, backends), and the one
// function that builds them from the command-line flags (defined in this folder, by group).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/transport_options.h"
#include "server/core/engine.h"
#include "server/core/weight_repository.h"
#include "server/cpu/cpu_backend.h"
#include "server/grpc/authorizer.h"
#include "server/grpc/server_credentials.h"
#include "server/grpc/service_state.h"
#ifdef GEMM_HAVE_CUDA_BACKEND
#include "server/gpu/cuda_backend.h"
#endif

namespace gemm::server {

// What the process itself does: where it listens, which backend it picks, how it drains.
struct ProcessOptions {
  // Address the gRPC server listens on. Default "0.0.0.0".
  std::string host = "0.0.0.0";
  // gRPC port. Default 50051.
  int port = 50051;
  // Prometheus /metrics HTTP port; 0 disables it. Default 9464.
  int metrics_port = 9464;
  // "auto" (CUDA when a GPU is present), "cpu" or "cuda". Default "auto".
  std::string backend = "auto";
  // On SIGTERM/SIGINT, how long in-flight RPCs get to finish. Default 30 s.
  absl::Duration drain_timeout = absl::Seconds(30);
  // Client connections are closed after this long (zero: never). Default zero.
  absl::Duration max_connection_age = absl::ZeroDuration();
  // HTTP/2 and socket settings of the gRPC port (the clients take the same struct); gRPC's
  // defaults unless set.
  TransportOptions transport;
  // Extra gRPC server arguments, "name=value" each, parsed when the server is built; applied after
  // `transport`, so an item here overrides it.
  std::vector<std::string> grpc_args;
  // Share the port with other processes that ask for it too (SO_REUSEPORT). Default false.
  bool reuse_port = false;
  // Client connections held at once; 0 (default): what the open-file limit leaves.
  int64_t max_connections = 0;
  // Keep freed large buffers in the heap instead of unmapping them (glibc malloc only).
  // Default true.
  bool reuse_large_buffers = true;
  // Address the metrics HTTP port binds. Default "127.0.0.1" (this host only).
  std::string metrics_host = "127.0.0.1";
  // TLS or mutual TLS on the gRPC port; plaintext by default.
  service::TlsOptions tls;
  // Serve gRPC server reflection. Default true.
  bool reflection = true;
  // Plaintext port serving only grpc.health.v1 (for probes that speak no TLS), on --host; 0
  // (default): none.
  int health_port = 0;
};

// Everything gemm_server is configured with.
struct ServerOptions {
  ProcessOptions process;
  core::GemmEngine::Options engine;
  service::ServiceOptions service;
  // Who may call what (the service's authorizer is built from these files).
  service::AuthOptions auth;
  // The weight repository loaded at start-up (no paths: none).
  core::WeightRepository::Options weights;
  cpu::CpuBackendOptions cpu;
#ifdef GEMM_HAVE_CUDA_BACKEND
  gpu::CudaBackendOptions cuda;
#endif
};

// The options the parsed command-line flags ask for (call after gemm::ParseCommandLine).
ServerOptions ServerOptionsFromFlags();

// Whether --help lists the flags defined in `path` (a source path relative to the tree): the
// serving, limits and batching groups; the tuning flags are under --helpfull.
bool IsUserFlagFile(absl::string_view path);

}  // namespace gemm::server
