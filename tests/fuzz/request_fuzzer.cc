// Fuzz target: wire bytes of a GemmRequest -> ParseFromArray -> FromProto -> ValidateRequest, as
// the Gemm RPC admits a request, under limits the input picks (RequestWorld::ReadLimits; any
// --max_dim and byte limits, since every size computation must be overflow-safe whatever the
// flags). Input: one limits byte (then four int64 when it picks fuzzed limits), then the
// serialized request. RequestWorld checks what an accepted or refused request must satisfy.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/request_world.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gemm::fuzz::RequestWorld& world = gemm::fuzz::RequestWorld::Get();
  gemm::fuzz::FuzzInput in(data, size);
  const gemm::core::Limits limits = gemm::fuzz::RequestWorld::ReadLimits(in);
  const absl::string_view wire = in.Rest();
  gemm::v1::GemmRequest proto;
  if (!proto.ParseFromArray(wire.data(), static_cast<int>(wire.size()))) return 0;
  (void)world.Admit(proto, limits);
  return 0;
}
