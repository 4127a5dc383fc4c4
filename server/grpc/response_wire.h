// GemmResponse messages serialized with each output's data sent as a gRPC slice of its own (no copy
// of D into the message): the bytes on the wire are exactly protobuf's serialization of the message
// with the data in place, so any protobuf client reads them.
#pragma once

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "gemm/v1/gemm_service.pb.h"

namespace gemm::service {

// A response on its way out: the message with every Output.data left empty, and the data of
// output i in data[i] (an empty or missing slice: no data).
struct OutgoingResponse {
  v1::GemmResponse message;
  std::vector<grpc::Slice> data;

  // The serialized size of the message with its data in place.
  size_t ByteSize() const;
};

// A slice that owns `bytes` (moved in, not copied) and frees it when gRPC is done with it.
grpc::Slice SliceOwning(std::string bytes);

// A slice of `bytes`, which stay valid while `owner` lives: the slice holds `owner` until gRPC is
// done with it.
grpc::Slice SliceHolding(absl::string_view bytes, std::shared_ptr<const void> owner);

// Serializes `response` (INTERNAL when an output carries data both in the message and in a slice,
// or when the message is over 2 GiB, protobuf's limit). The message is left as it was.
absl::StatusOr<grpc::ByteBuffer> SerializeResponse(OutgoingResponse& response);

// Serializes a GemmResponsePack of `responses`, in order; errors as SerializeResponse.
absl::StatusOr<grpc::ByteBuffer> SerializeResponsePack(
    absl::Span<OutgoingResponse* const> responses);

}  // namespace gemm::service
