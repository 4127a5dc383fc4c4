// The one place where absl::Status becomes grpc::Status.
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace gemm::service {

// Same code (the enums share numbering) and message.
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace gemm::service
