// TakeResponsePack (see response_pack.h).
#include "server/grpc/response_pack.h"

namespace gemm::service {

std::unique_ptr<v1::GemmResponsePack> TakeResponsePack(
    std::deque<std::unique_ptr<v1::GemmResponse>>* ready, size_t max_bytes) {
  auto out = std::make_unique<v1::GemmResponsePack>();
  size_t bytes = 0;
  while (!ready->empty()) {
    const size_t size = ready->front()->ByteSizeLong();
    if (out->responses_size() > 0 && bytes + size > max_bytes) break;
    bytes += size;
    out->mutable_responses()->AddAllocated(ready->front().release());
    ready->pop_front();
  }
  return out;
}

}  // namespace gemm::service
