// GemmService over an engine of this process, served on a loopback port, with a stub that calls
// it: in-process tests of the service layer with real gRPC (no server process).
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/server_builder.h>

#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gemm/v1/gemm_service.grpc.pb.h"
#include "server/core/engine.h"
#include "server/grpc/gemm_service.h"

namespace gemm::testing {

struct LoopbackService {
  // Serves `engine` (which must outlive the service) on 127.0.0.1, any free port.
  absl::Status Start(core::GemmEngine* engine) {
    auto created = service::GemmServiceImpl::Create(engine, {.version = "test"});
    if (!created.ok()) return created.status();
    impl = std::move(*created);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(impl.get());
    server = builder.BuildAndStart();
    if (server == nullptr) return absl::UnavailableError("the loopback server did not start");
    stub = v1::GemmService::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
    return absl::OkStatus();
  }
  // Ends every call (waiting for them); no-op when not started.
  void Shutdown() {
    if (server != nullptr) server->Shutdown();
  }

  std::unique_ptr<service::GemmServiceImpl> impl;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<v1::GemmService::Stub> stub;
};

}  // namespace gemm::testing
