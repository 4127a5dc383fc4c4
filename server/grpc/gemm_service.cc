// GemmService: the unary methods, and the streams' and RegisterMatrix's reactors by name.
#include "server/grpc/gemm_service.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/grpc/convert.h"
#include "server/grpc/peer.h"
#include "server/grpc/register_reactor.h"
#include "server/grpc/status_util.h"
#include "server/grpc/stream_reactor.h"
#include "server/grpc/wire_message.h"

namespace gemm::service {

absl::StatusOr<std::unique_ptr<GemmServiceImpl>> GemmServiceImpl::Create(core::GemmEngine* engine,
                                                                         Options options) {
  absl::StatusOr<AnswerBudget::Options> answers = AnswerBudget::Resolve(options.answers);
  if (!answers.ok()) return answers.status();
  options.answers = *answers;
  if (options.upload_idle_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--upload_idle_timeout_s: must be > 0, got ",
                     absl::FormatDuration(options.upload_idle_timeout)));
  }
  return std::unique_ptr<GemmServiceImpl>(new GemmServiceImpl(engine, std::move(options)));
}

template <class Request, class Response, class Handler>
grpc::ServerUnaryReactor* GemmServiceImpl::Serve(absl::string_view method,
                                                 grpc::CallbackServerContext* context,
                                                 const grpc::ByteBuffer* request,
                                                 grpc::ByteBuffer* response, Handler handler) {
  Request in;
  Response out;
  absl::StatusOr<CallGrant> grant = state_.Enter(*context, method);
  absl::Status s = grant.status();
  if (s.ok()) s = ParseMessage(*request, method, &in);
  if (s.ok()) s = handler(grant->caller, in, &out);
  if (s.ok()) {
    absl::StatusOr<grpc::ByteBuffer> bytes = SerializeMessage(out);
    if (bytes.ok()) *response = std::move(*bytes);
    s = bytes.status();
  }
  state_.Observe(method, s.code(), nullptr);
  auto* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(s));
  return reactor;
}

grpc::ServerUnaryReactor* GemmServiceImpl::Gemm(grpc::CallbackServerContext* context,
                                                const grpc::ByteBuffer* request_bytes,
                                                grpc::ByteBuffer* response_bytes) {
  auto* reactor = context->DefaultReactor();
  const absl::Time arrival = absl::Now();
  // The request borrows its operands from the buffers it arrived in.
  auto received = std::make_shared<Received<v1::GemmRequest>>();
  const v1::GemmRequest* request = &received->message;
  absl::StatusOr<CallGrant> entered = state_.Enter(*context, "Gemm");
  absl::Status s = entered.status();
  if (s.ok()) s = received->Parse(*request_bytes, "Gemm");
  if (s.ok()) s = state_.Admit();
  absl::StatusOr<core::GemmRequest> domain =
      s.ok() ? FromProto(*request, arrival, RpcDeadline(*context), engine().limits(),
                         engine().shared_memory(), entered->caller, &received->bytes)
             : absl::StatusOr<core::GemmRequest>(s);
  if (!domain.ok()) {
    state_.Observe("Gemm", domain.status().code(), nullptr);
    reactor->Finish(ToGrpcStatus(domain.status()));
    return reactor;
  }
  auto item = std::make_shared<core::WorkItem>();
  item->request = std::move(*domain);
  item->arrival = arrival;
  item->cancelled = [context] { return context->IsCancelled(); };
  // The call's slot among its caller's open calls is held until the answer is sent.
  item->done = [this, reactor, response_bytes, id = request->request_id(),
                grant = std::make_shared<CallGrant>(std::move(*entered))](
                   absl::StatusOr<core::GemmResult> result) {
    grant->slot.Reset();
    absl::Status status = result.status();
    if (result.ok()) {
      OutgoingResponse response;
      response.message.set_request_id(id);
      const core::Timing timing = result->timing;
      ToOutgoing(std::move(*result), &response);
      absl::StatusOr<grpc::ByteBuffer> bytes = SerializeResponse(response);
      if (bytes.ok()) *response_bytes = std::move(*bytes);
      status = bytes.status();
      state_.Observe("Gemm", status.code(), status.ok() ? &timing : nullptr);
    } else {
      state_.Observe("Gemm", status.code(), nullptr);
    }
    reactor->Finish(ToGrpcStatus(status));
  };
  item->keep_alive = std::move(received);
  if (absl::Status submitted = engine().Submit(item); !submitted.ok()) {
    state_.Observe("Gemm", submitted.code(), nullptr);
    reactor->Finish(ToGrpcStatus(submitted));
  }
  return reactor;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* GemmServiceImpl::GemmStream(
    grpc::CallbackServerContext* context) {
  return NewGemmStream(&state_, context);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* GemmServiceImpl::GemmStreamPacked(
    grpc::CallbackServerContext* context) {
  return NewGemmStreamPacked(&state_, context);
}

grpc::ServerReadReactor<grpc::ByteBuffer>* GemmServiceImpl::RegisterMatrix(
    grpc::CallbackServerContext* context, grpc::ByteBuffer* response) {
  return NewRegisterMatrix(&state_, context, response);
}

grpc::ServerUnaryReactor* GemmServiceImpl::ReleaseMatrix(grpc::CallbackServerContext* context,
                                                         const grpc::ByteBuffer* request,
                                                         grpc::ByteBuffer* response) {
  return Serve<v1::ReleaseMatrixRequest, v1::ReleaseMatrixResponse>(
      "ReleaseMatrix", context, request, response,
      [this](const core::Caller& caller, const v1::ReleaseMatrixRequest& in,
             v1::ReleaseMatrixResponse* /*out*/) {
        if (in.handle().empty()) return absl::InvalidArgumentError("handle: is empty");
        return engine().registry().Release(in.handle(), caller);
      });
}

grpc::ServerUnaryReactor* GemmServiceImpl::ListMatrices(grpc::CallbackServerContext* context,
                                                        const grpc::ByteBuffer* request,
                                                        grpc::ByteBuffer* response) {
  return Serve<v1::ListMatricesRequest, v1::ListMatricesResponse>(
      "ListMatrices", context, request, response,
      [this](const core::Caller& caller, const v1::ListMatricesRequest& /*in*/,
             v1::ListMatricesResponse* out) {
        for (const auto& e : engine().registry().List(caller)) ToProto(e, out->add_matrices());
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* GemmServiceImpl::GetServerInfo(grpc::CallbackServerContext* context,
                                                         const grpc::ByteBuffer* request,
                                                         grpc::ByteBuffer* response) {
  return Serve<v1::GetServerInfoRequest, v1::ServerInfo>(
      "GetServerInfo", context, request, response,
      [this](const core::Caller& /*caller*/, const v1::GetServerInfoRequest& /*in*/,
             v1::ServerInfo* out) {
        ToProto(engine().backend().Describe(), engine().limits(), out);
        out->set_version(state_.options().version);
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* GemmServiceImpl::RegisterSharedMemory(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return Serve<v1::RegisterSharedMemoryRequest, v1::SharedMemoryInfo>(
      "RegisterSharedMemory", context, request, response,
      [this, context](const core::Caller& caller, const v1::RegisterSharedMemoryRequest& in,
                      v1::SharedMemoryInfo* out) {
        if (!IsLocalPeer(context->peer())) {
          // A remote caller cannot share memory with us; it must not map the host's objects.
          return absl::PermissionDeniedError(absl::StrCat(
              "RegisterSharedMemory is only for clients on the server's host; this call came "
              "from ",
              context->peer()));
        }
        // NOTE: maps and page-locks on this gRPC thread (pinning large ranges takes a while); a
        // registration is rare next to the requests it serves.
        auto region = engine().shared_memory().Register(FromProto(in), caller);
        if (region.ok()) ToProto(**region, 0, out);
        return region.status();
      });
}

grpc::ServerUnaryReactor* GemmServiceImpl::UnregisterSharedMemory(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return Serve<v1::UnregisterSharedMemoryRequest, v1::UnregisterSharedMemoryResponse>(
      "UnregisterSharedMemory", context, request, response,
      [this](const core::Caller& caller, const v1::UnregisterSharedMemoryRequest& in,
             v1::UnregisterSharedMemoryResponse* /*out*/) {
        if (in.name().empty()) return absl::InvalidArgumentError("name: is empty");
        return engine().shared_memory().Unregister(in.name(), caller);
      });
}

grpc::ServerUnaryReactor* GemmServiceImpl::ListSharedMemory(grpc::CallbackServerContext* context,
                                                            const grpc::ByteBuffer* request,
                                                            grpc::ByteBuffer* response) {
  return Serve<v1::ListSharedMemoryRequest, v1::ListSharedMemoryResponse>(
      "ListSharedMemory", context, request, response,
      [this](const core::Caller& caller, const v1::ListSharedMemoryRequest& /*in*/,
             v1::ListSharedMemoryResponse* out) {
        for (const auto& e : engine().shared_memory().List(caller)) {
          ToProto(*e.region, e.in_flight, out->add_regions());
        }
        return absl::OkStatus();
      });
}

}  // namespace gemm::service
