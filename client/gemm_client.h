// Client library for gemm.v1.GemmService: a channel with the right message limits plus
// convenience calls (unary GEMM, chunked RegisterMatrix, release/list, server info, shared-memory
// regions, waiting for the server's health). Thread-safe (one instance can serve many threads).
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/channel_security.h"
#include "client/retry_service_config.h"
#include "common/channel_args.h"
#include "common/transport_options.h"
#include "gemm/v1/gemm_service.grpc.pb.h"

namespace gemm::client {

class GemmClient {
 public:
  struct Options {
    // gRPC target: "host:port", "dns:///name:port", "ipv4:a:p,b:p", ...
    std::string target = "localhost:50051";
    // Max send/receive message size; match the server's --max_message_bytes. Default 1 GiB+16 MiB.
    int64_t max_message_bytes = (int64_t{1} << 30) + (int64_t{16} << 20);
    // Load-balancing policy ("pick_first", "round_robin").
    std::string lb_policy = "pick_first";
    // Distinct channels (separate TCP connections) used round-robin by Gemm(). Default 1.
    int channels = 1;
    // HTTP/2 and socket settings of every channel (the server takes the same struct); gRPC's
    // defaults unless set.
    TransportOptions transport;
    // Extra gRPC channel arguments, applied to every channel after `transport` (overriding it).
    std::vector<ChannelArg> channel_args;
    // Retry calls answered UNAVAILABLE (a replica draining, starting or gone) with gRPC's retry
    // policy (kRetryServiceConfig), so that a rolling restart of the servers behind the target
    // costs no failed call. Requests up to max_message_bytes are kept for a retry. Default true.
    bool retry_unavailable = true;
    // TLS, client certificate and bearer token; plaintext by default.
    ChannelSecurity security;
  };

  // The service config the channels get with retry_unavailable
  // (client/python/gemm_client/retry_service_config.json): every GemmService method is retried
  // on UNAVAILABLE, up to 5 attempts, with exponential backoff from 50 ms to 1 s (jittered). A
  // retry goes through load balancing again, so round_robin sends it to another server. With
  // round_robin, servers whose health check says NOT_SERVING (draining) get no new calls.
  static constexpr const char* kRetryServiceConfig = kRetryServiceConfigJson;

  // Creates the channel(s); does not connect until the first call. INVALID_ARGUMENT for a
  // security file that cannot be read or transport settings out of range.
  static absl::StatusOr<std::unique_ptr<GemmClient>> Create(const Options& options);

  // Unary Gemm with a deadline of `timeout` (InfiniteDuration: none). Thread-safe.
  absl::StatusOr<v1::GemmResponse> Gemm(const v1::GemmRequest& request,
                                        absl::Duration timeout = absl::InfiniteDuration());

  // Uploads a BF16 matrix ([rows, cols] row-major bytes) in chunks of `chunk_bytes`.
  absl::StatusOr<v1::MatrixInfo> RegisterMatrix(const v1::MatrixHeader& header,
                                                absl::string_view bf16_bytes,
                                                int64_t chunk_bytes = int64_t{4} << 20);

  // Releases a resident matrix.
  absl::Status ReleaseMatrix(const std::string& handle);

  // Lists resident matrices.
  absl::StatusOr<std::vector<v1::MatrixInfo>> ListMatrices();

  // Server description.
  absl::StatusOr<v1::ServerInfo> GetServerInfo();

  // Registers bytes [offset, offset + byte_size) of the POSIX shared-memory object `key` (see
  // gemm::PosixShm::Create) as region `name`; the server must run on this host.
  absl::StatusOr<v1::SharedMemoryInfo> RegisterSharedMemory(const std::string& name,
                                                            const std::string& key, int64_t offset,
                                                            int64_t byte_size);
  // RegisterSharedMemory for GPU memory: `ipc_handle` (a cudaIpcMemHandle_t's bytes) of an
  // allocation on GPU `device`, range [offset, offset + byte_size) of it.
  absl::StatusOr<v1::SharedMemoryInfo> RegisterDeviceMemory(const std::string& name,
                                                            const std::string& ipc_handle,
                                                            int device, int64_t offset,
                                                            int64_t byte_size);

  // Unregisters region `name`.
  absl::Status UnregisterSharedMemory(const std::string& name);

  // Blocks until the first channel is connected or `timeout` passes.
  bool WaitForConnected(absl::Duration timeout);

  // Blocks until the server reports gemm.v1.GemmService as SERVING through the standard health
  // check (grpc.health.v1), riding out refused connections while it starts, or `timeout`
  // passes. OK when serving (or when the server has no health service but answers);
  // UNAVAILABLE saying what the server or the connection last said otherwise.
  absl::Status WaitForServing(absl::Duration timeout);

  // Stub of channel `i % channels` (for streaming and async use).
  v1::GemmService::Stub* stub(int i = 0) { return stubs_[i % stubs_.size()].get(); }

 private:
  GemmClient(std::string target, std::vector<std::shared_ptr<grpc::Channel>> channels);
  // Sends a RegisterSharedMemory request.
  absl::StatusOr<v1::SharedMemoryInfo> RegisterRegion(
      const v1::RegisterSharedMemoryRequest& request);
  std::string target_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<v1::GemmService::Stub>> stubs_;
  std::atomic<uint64_t> next_{0};
};

// grpc::Status -> absl::Status (same code and message).
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace gemm::client
