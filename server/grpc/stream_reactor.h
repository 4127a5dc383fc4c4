// The reactors of GemmStream and GemmStreamPacked (raw: they parse the messages themselves).
#pragma once

#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include "server/grpc/service_state.h"

namespace gemm::service {

// A GemmStream call (one request per message). `state` must outlive the call.
grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* NewGemmStream(
    ServiceState* state, grpc::CallbackServerContext* context);

// A GemmStreamPacked call (several requests per message). `state` must outlive the call.
grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* NewGemmStreamPacked(
    ServiceState* state, grpc::CallbackServerContext* context);

}  // namespace gemm::service
