// absl::Status -> grpc::Status.
#include "server/grpc/status_util.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace gemm::service {

std::string CappedStatusMessage(absl::string_view message) {
  if (message.size() <= kMaxStatusMessageBytes) return std::string(message);
  const std::string tail = absl::StrCat("... (", message.size(), " bytes)");
  size_t keep = kMaxStatusMessageBytes - tail.size();
  // Back off UTF-8 continuation bytes (10xxxxxx) so no character is cut in half.
  while (keep > 0 && (static_cast<unsigned char>(message[keep]) & 0xC0) == 0x80) --keep;
  return absl::StrCat(message.substr(0, keep), tail);
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      CappedStatusMessage(status.message()));
}

}  // namespace gemm::service
