// gemm.v1.GemmService on gRPC's callback API. Thin: converts protos to domain requests, hands them
// to the GemmEngine and finishes RPCs from the engine's completion callbacks (never blocking a
// gRPC thread on compute).
#pragma once

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "gemm/v1/gemm_service.grpc.pb.h"
#include "server/core/engine.h"

namespace gemm::service {

// Told about every finished RPC (for metrics). `timing` is null when the request did not run.
// Called from gRPC or engine threads; must be thread-safe and fast.
using RpcObserver = std::function<void(absl::string_view method, absl::StatusCode code,
                                       const core::Timing* timing)>;

class GemmServiceImpl final : public v1::GemmService::CallbackService {
 public:
  // `engine` must outlive the service. `version` is reported by GetServerInfo.
  GemmServiceImpl(core::GemmEngine* engine, std::string version, RpcObserver observer = nullptr);

  grpc::ServerUnaryReactor* Gemm(grpc::CallbackServerContext* context,
                                 const v1::GemmRequest* request,
                                 v1::GemmResponse* response) override;
  grpc::ServerBidiReactor<v1::GemmRequest, v1::GemmResponse>* GemmStream(
      grpc::CallbackServerContext* context) override;
  grpc::ServerBidiReactor<v1::GemmRequestPack, v1::GemmResponsePack>* GemmStreamPacked(
      grpc::CallbackServerContext* context) override;
  grpc::ServerReadReactor<v1::RegisterMatrixChunk>* RegisterMatrix(
      grpc::CallbackServerContext* context, v1::MatrixInfo* response) override;
  grpc::ServerUnaryReactor* ReleaseMatrix(grpc::CallbackServerContext* context,
                                          const v1::ReleaseMatrixRequest* request,
                                          v1::ReleaseMatrixResponse* response) override;
  grpc::ServerUnaryReactor* ListMatrices(grpc::CallbackServerContext* context,
                                         const v1::ListMatricesRequest* request,
                                         v1::ListMatricesResponse* response) override;
  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* context,
                                          const v1::GetServerInfoRequest* request,
                                          v1::ServerInfo* response) override;
  grpc::ServerUnaryReactor* RegisterSharedMemory(grpc::CallbackServerContext* context,
                                                 const v1::RegisterSharedMemoryRequest* request,
                                                 v1::SharedMemoryInfo* response) override;
  grpc::ServerUnaryReactor* UnregisterSharedMemory(
      grpc::CallbackServerContext* context, const v1::UnregisterSharedMemoryRequest* request,
      v1::UnregisterSharedMemoryResponse* response) override;
  grpc::ServerUnaryReactor* ListSharedMemory(grpc::CallbackServerContext* context,
                                             const v1::ListSharedMemoryRequest* request,
                                             v1::ListSharedMemoryResponse* response) override;

 private:
  template <class Messages>
  class StreamReactor;  // GemmStream and GemmStreamPacked
  class RegisterReactor;
  void Observe(absl::string_view method, absl::StatusCode code, const core::Timing* timing) const;

  core::GemmEngine* const engine_;
  const std::string version_;
  const RpcObserver observer_;
};

}  // namespace gemm::service
