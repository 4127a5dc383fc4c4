// gemm.v1.GemmService on gRPC's callback API. Thin: converts protos to domain requests, hands them
// to the GemmEngine and finishes RPCs from the engine's completion callbacks (never blocking a
// gRPC thread on compute). Every method is registered raw (grpc::ByteBuffer in and out) and
// parses its messages itself (wire_message.h), so bytes that are not the request message are
// answered INVALID_ARGUMENT naming the message. Every method first admits its caller
// (ServiceState::Enter: authentication, the method's role, the caller's open calls); reflection
// and health are separate services and unaffected.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "gemm/v1/gemm_service.grpc.pb.h"
#include "server/core/engine.h"
#include "server/grpc/service_state.h"

namespace gemm::service {

// v1::GemmService with every method raw.
using RawGemmService =
    v1::GemmService::WithRawCallbackMethod_Gemm<v1::GemmService::WithRawCallbackMethod_GemmStream<
        v1::GemmService::WithRawCallbackMethod_GemmStreamPacked<
            v1::GemmService::WithRawCallbackMethod_RegisterMatrix<
                v1::GemmService::WithRawCallbackMethod_ReleaseMatrix<
                    v1::GemmService::WithRawCallbackMethod_ListMatrices<
                        v1::GemmService::WithRawCallbackMethod_GetServerInfo<
                            v1::GemmService::WithRawCallbackMethod_RegisterSharedMemory<
                                v1::GemmService::WithRawCallbackMethod_UnregisterSharedMemory<
                                    v1::GemmService::WithRawCallbackMethod_ListSharedMemory<
                                        v1::GemmService::Service>>>>>>>>>>;

class GemmServiceImpl final : public RawGemmService {
 public:
  using Options = ServiceOptions;

  // `engine` must outlive the service. INVALID_ARGUMENT for options out of range (see
  // AnswerBudget::Resolve); a zero server answer cap becomes a quarter of physical memory.
  static absl::StatusOr<std::unique_ptr<GemmServiceImpl>> Create(core::GemmEngine* engine,
                                                                 Options options);

  // From now on requests are answered UNAVAILABLE, also those arriving on streams already open
  // (each answered on its stream, which stays open); requests accepted before are answered.
  // Call before grpc::Server::Shutdown on SIGTERM. Thread-safe.
  void StartDrain() { state_.StartDrain(); }
  // Requests refused since the drain started (clients still sending here).
  int64_t RefusedWhileDraining() const { return state_.refused(); }

  // The options in force (the answer caps resolved).
  const Options& options() const { return state_.options(); }

  // Each method: the gemm.v1 RPC of that name (see the proto), over raw bytes.
  grpc::ServerUnaryReactor* Gemm(grpc::CallbackServerContext* context,
                                 const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* GemmStream(
      grpc::CallbackServerContext* context) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* GemmStreamPacked(
      grpc::CallbackServerContext* context) override;
  grpc::ServerReadReactor<grpc::ByteBuffer>* RegisterMatrix(grpc::CallbackServerContext* context,
                                                            grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ReleaseMatrix(grpc::CallbackServerContext* context,
                                          const grpc::ByteBuffer* request,
                                          grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ListMatrices(grpc::CallbackServerContext* context,
                                         const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* context,
                                          const grpc::ByteBuffer* request,
                                          grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* RegisterSharedMemory(grpc::CallbackServerContext* context,
                                                 const grpc::ByteBuffer* request,
                                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* UnregisterSharedMemory(grpc::CallbackServerContext* context,
                                                   const grpc::ByteBuffer* request,
                                                   grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ListSharedMemory(grpc::CallbackServerContext* context,
                                             const grpc::ByteBuffer* request,
                                             grpc::ByteBuffer* response) override;

 private:
  GemmServiceImpl(core::GemmEngine* engine, Options options) : state_(engine, std::move(options)) {}

  // A unary RPC that completes on the calling thread: admits the caller (ServiceState::Enter),
  // parses `request` as a Request, runs `handler` on the caller and it, and answers its Response
  // (or its error).
  template <class Request, class Response, class Handler>
  grpc::ServerUnaryReactor* Serve(absl::string_view method, grpc::CallbackServerContext* context,
                                  const grpc::ByteBuffer* request, grpc::ByteBuffer* response,
                                  Handler handler);

  core::GemmEngine& engine() { return state_.engine(); }

  ServiceState state_;
};

}  // namespace gemm::service
