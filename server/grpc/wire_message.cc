// ParseMessage / SerializeMessage (see wire_message.h).
#include "server/grpc/wire_message.h"

#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/proto_buffer_writer.h>

#include <climits>

#include "absl/strings/str_cat.h"

namespace gemm::service {

absl::Status ParseMessage(const grpc::ByteBuffer& bytes, absl::string_view what,
                          google::protobuf::MessageLite* message) {
  message->Clear();
  if (!bytes.Valid()) return absl::OkStatus();  // no payload: the empty message
  grpc::ByteBuffer shared(bytes);  // the reader needs a mutable buffer; this one shares the slices
  grpc::ProtoBufferReader reader(&shared);
  if (reader.status().ok() && message->ParseFromZeroCopyStream(&reader)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(what, ": the bytes received do not parse as a ",
                                                 message->GetTypeName(), " message"));
}

absl::StatusOr<grpc::ByteBuffer> SerializeMessage(const google::protobuf::MessageLite& message) {
  const size_t size = message.ByteSizeLong();
  if (size > static_cast<size_t>(INT_MAX)) {
    return absl::InternalError(absl::StrCat("a ", message.GetTypeName(), " of ", size,
                                            " bytes is over protobuf's 2 GiB message limit"));
  }
  grpc::ByteBuffer out;
  bool own = false;
  grpc::Status s = grpc::GenericSerialize<grpc::ProtoBufferWriter, google::protobuf::MessageLite>(
      message, &out, &own);
  if (!s.ok()) {
    return absl::InternalError(
        absl::StrCat("serializing a ", message.GetTypeName(), ": ", s.error_message()));
  }
  return out;
}

}  // namespace gemm::service
