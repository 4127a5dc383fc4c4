// Test helpers for ReceivedMessage (server/grpc/received_message.h), shared by its unit test and
// its fuzz target: wire bytes as a ByteBuffer cut into slices, the received values of bytes
// fields put back into a parsed message, and the comparison with protobuf's own parse.
#pragma once

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "gemm/v1/gemm_service.pb.h"
#include "server/grpc/received_message.h"

namespace gemm::testing {

// `wire` as a ByteBuffer of slices cut at `cuts` (ascending offsets, each <= wire.size()).
inline grpc::ByteBuffer Sliced(const std::string& wire, const std::vector<size_t>& cuts) {
  std::vector<grpc::Slice> slices;
  size_t from = 0;
  for (size_t cut : cuts) {
    slices.emplace_back(wire.data() + from, cut - from);
    from = cut;
  }
  slices.emplace_back(wire.data() + from, wire.size() - from);
  return grpc::ByteBuffer(slices.data(), slices.size());
}

// The pieces of a received value, joined.
inline std::string Join(const std::vector<absl::string_view>& pieces) {
  std::string out;
  for (absl::string_view p : pieces) out.append(p.data(), p.size());
  return out;
}

// Puts the received values of `p`'s bytes fields back into it.
inline void PutBack(const service::ReceivedMessage& received, v1::Problem* p) {
  if (const auto* a = received.Bytes(*p, v1::Problem::kAFieldNumber)) p->set_a(Join(*a));
  if (const auto* b = received.Bytes(*p, v1::Problem::kBFieldNumber)) p->set_b(Join(*b));
  if (const auto* c = received.Bytes(*p, v1::Problem::kCFieldNumber)) p->set_c(Join(*c));
}

// Puts the received values of every problem of `r` back into it.
inline void PutBack(const service::ReceivedMessage& received, v1::GemmRequest* r) {
  if (r->has_problem()) PutBack(received, r->mutable_problem());
  if (r->has_batch() && r->batch().has_problem()) {
    PutBack(received, r->mutable_batch()->mutable_problem());
  }
  if (r->has_group()) {
    for (v1::Problem& p : *r->mutable_group()->mutable_problems()) PutBack(received, &p);
  }
}

// Puts the received values of every request of `pack` back into it.
inline void PutBack(const service::ReceivedMessage& received, v1::GemmRequestPack* pack) {
  for (v1::GemmRequest& r : *pack->mutable_requests()) PutBack(received, &r);
}

}  // namespace gemm::testing
