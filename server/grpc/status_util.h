// The one place where absl::Status becomes grpc::Status, and where the size of a status message
// a client receives is bounded.
#pragma once

#include <grpcpp/support/status.h>

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gemm::service {

// Most bytes of a status message sent to a client (gRPC carries it percent-encoded in a trailer,
// and clients refuse trailers over their metadata limit, 8 KiB by default).
inline constexpr size_t kMaxStatusMessageBytes = 2048;

// `message`, or when longer than kMaxStatusMessageBytes its start (cut at a UTF-8 character
// boundary) followed by "... (N bytes)" within kMaxStatusMessageBytes.
std::string CappedStatusMessage(absl::string_view message);

// Same code (the enums share numbering) and the message capped by CappedStatusMessage().
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace gemm::service
