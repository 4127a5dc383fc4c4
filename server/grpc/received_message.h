// Request messages parsed from the bytes gRPC received (grpc::ByteBuffer) without copying their
// large payloads: the value of every singular `bytes` field, at any depth, stays in gRPC's
// buffers and is read from there (as pieces, one per buffer it spans) by whoever needs it, e.g.
// straight into the backend's staging. Everything else is parsed by protobuf, with protobuf's
// semantics (the last value of a field wins, a oneof holds its last member, unknown fields are
// kept).
#pragma once

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace gemm::service {

// The received bytes of one parsed message: holds gRPC's buffers (shared, not copied) and where
// each bytes field's value lies in them. Not copyable (the message refers to it).
class ReceivedMessage {
 public:
  ReceivedMessage() = default;
  ReceivedMessage(const ReceivedMessage&) = delete;
  ReceivedMessage& operator=(const ReceivedMessage&) = delete;

  // Parses `bytes` into `message` (cleared first), keeping the buffers. Each singular bytes field
  // whose value arrived is left holding a short marker instead of its value; Bytes() gives the
  // value. INVALID_ARGUMENT "<what>: the bytes received do not parse as a <type> message" for
  // bytes protobuf would not parse, or an (obsolete) group field. Call once.
  absl::Status Parse(const grpc::ByteBuffer& bytes, absl::string_view what,
                     google::protobuf::Message* message);

  // The received value of bytes field number `field` of `owner` (the parsed message or one inside
  // it), in pieces in order; null when `owner` holds no received value for it (not sent, or
  // replaced by a later member of its oneof).
  const std::vector<absl::string_view>* Bytes(const google::protobuf::Message& owner,
                                              int field) const;

 private:
  struct View {
    const google::protobuf::Message* owner = nullptr;
    int field = 0;
    std::vector<absl::string_view> pieces;
  };
  class Scanner;  // received_message.cc

  std::vector<grpc::Slice> slices_;
  std::vector<View> views_;
};

// A message of type M parsed by a ReceivedMessage, with it (the message's bytes fields refer to
// its buffers, so the two live and go together).
template <class M>
struct Received {
  M message;
  ReceivedMessage bytes;

  // ReceivedMessage::Parse into `message`.
  absl::Status Parse(const grpc::ByteBuffer& in, absl::string_view what) {
    return bytes.Parse(in, what, &message);
  }
};

}  // namespace gemm::service
