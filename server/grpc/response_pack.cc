// TakeResponsePack (see response_pack.h).
#include "server/grpc/response_pack.h"

namespace gemm::service {

std::vector<std::unique_ptr<OutgoingResponse>> TakeResponsePack(ReadyResponses* ready,
                                                                size_t max_bytes) {
  std::vector<std::unique_ptr<OutgoingResponse>> out;
  size_t bytes = 0;
  while (!ready->empty()) {
    const size_t size = ready->front()->ByteSize();
    if (!out.empty() && bytes + size > max_bytes) break;
    bytes += size;
    out.push_back(std::move(ready->front()));
    ready->pop_front();
  }
  return out;
}

}  // namespace gemm::service
