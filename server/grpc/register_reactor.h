// The reactor of RegisterMatrix (raw: it parses the chunks itself).
#pragma once

#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include "server/grpc/service_state.h"

namespace gemm::service {

// A RegisterMatrix call: uploads a resident matrix chunk by chunk and answers its MatrixInfo into
// `response`. `state` must outlive the call.
grpc::ServerReadReactor<grpc::ByteBuffer>* NewRegisterMatrix(ServiceState* state,
                                                             grpc::CallbackServerContext* context,
                                                             grpc::ByteBuffer* response);

}  // namespace gemm::service
