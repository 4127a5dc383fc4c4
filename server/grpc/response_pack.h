// Building GemmStreamPacked's response messages from the responses that are ready.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <vector>

#include "server/grpc/response_wire.h"

namespace gemm::service {

// Responses waiting to be written, oldest first.
using ReadyResponses = std::deque<std::unique_ptr<OutgoingResponse>>;

// Largest serialized size of the responses one GemmResponsePack takes (a single larger response
// still goes, alone): keeps packs of large inline outputs far below the message size limit.
inline constexpr size_t kMaxResponsePackBytes = size_t{64} << 20;

// Moves the oldest responses of `ready` (not empty) into one pack, in order: at least one, then
// more while their serialized sizes sum to at most `max_bytes`.
std::vector<std::unique_ptr<OutgoingResponse>> TakeResponsePack(
    ReadyResponses* ready, size_t max_bytes = kMaxResponsePackBytes);

}  // namespace gemm::service
