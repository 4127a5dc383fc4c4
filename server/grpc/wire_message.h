// Protobuf messages to and from the raw bytes gRPC hands the service (grpc::ByteBuffer). The
// service registers its methods raw so that bytes which do not parse as the request message are
// its own to answer, with INVALID_ARGUMENT naming the message, instead of gRPC's bare
// UNIMPLEMENTED (unary) or a silent end of the stream (streams).
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message_lite.h"

namespace gemm::service {

// Parses `bytes` into `message` (cleared first). On failure INVALID_ARGUMENT:
// "<what>: the bytes received do not parse as a <message type> message". Does not consume
// `bytes` (the slices are shared, not copied).
absl::Status ParseMessage(const grpc::ByteBuffer& bytes, absl::string_view what,
                          google::protobuf::MessageLite* message);

// Serializes `message` into a fresh ByteBuffer; INTERNAL when it is larger than protobuf can
// serialize (2 GiB).
absl::StatusOr<grpc::ByteBuffer> SerializeMessage(const google::protobuf::MessageLite& message);

}  // namespace gemm::service
