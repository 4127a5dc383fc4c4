// absl::Status -> grpc::Status.
#include "server/grpc/status_util.h"

#include <string>

namespace gemm::service {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace gemm::service
