// Fuzz target: request bytes from the wire, cut into slices wherever the input says, parsed by
// ReceivedMessage (the server's parse, which leaves bytes fields in gRPC's buffers) and by
// protobuf. Input: a type byte (even: GemmRequestPack, odd: GemmRequest), a cut count byte, that
// many 16-bit cut offsets (taken modulo the message's size), then the message's bytes.
// Properties: ReceivedMessage accepts exactly what protobuf accepts (except obsolete group
// fields, which it refuses, so it refuses nothing protobuf parses without unknown fields); what
// it accepts, with the received values put back, serializes to the same bytes as protobuf's
// message; a refusal is INVALID_ARGUMENT.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gemm/v1/gemm_service.pb.h"
#include "server/grpc/received_message.h"
#include "tests/common/received_message_util.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/fuzz_support.h"

namespace gemm::fuzz {
namespace {

// Parses `wire` cut at `cuts` both ways and checks the properties above for message type M.
template <class M>
void Compare(const std::string& wire, const std::vector<size_t>& cuts) {
  M want;
  const bool protobuf_ok = want.ParseFromString(wire);
  service::ReceivedMessage received;
  M got;
  const absl::Status s = received.Parse(testing::Sliced(wire, cuts), "fuzzed message", &got);
  if (!protobuf_ok) {
    FUZZ_CHECK(!s.ok(), "ReceivedMessage accepted bytes protobuf refuses");
    FUZZ_CHECK(s.code() == absl::StatusCode::kInvalidArgument, s.ToString());
    return;
  }
  if (!s.ok()) {
    // Only for obsolete group fields (wire types 3 and 4), which protobuf keeps as unknown
    // fields: a message without unknown fields at any depth must be accepted.
    M known = want;
    known.DiscardUnknownFields();
    FUZZ_CHECK(known.SerializeAsString() != want.SerializeAsString(),
               "ReceivedMessage refused a message protobuf parses without unknown fields: " +
                   s.ToString());
    FUZZ_CHECK(s.code() == absl::StatusCode::kInvalidArgument, s.ToString());
    return;
  }
  testing::PutBack(received, &got);
  FUZZ_CHECK(got.SerializeAsString() == want.SerializeAsString(),
             "the parse with its values put back differs from protobuf's");
}

}  // namespace
}  // namespace gemm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gemm::fuzz::FuzzInput in(data, size);
  const bool pack = in.U8() % 2 == 0;
  const int count = in.U8() % 9;
  std::vector<size_t> offsets;
  for (int i = 0; i < count; ++i) offsets.push_back(in.U16());
  const std::string wire(in.Rest());
  std::vector<size_t> cuts;
  for (size_t o : offsets) cuts.push_back(wire.empty() ? 0 : o % (wire.size() + 1));
  std::sort(cuts.begin(), cuts.end());
  if (pack) {
    gemm::fuzz::Compare<gemm::v1::GemmRequestPack>(wire, cuts);
  } else {
    gemm::fuzz::Compare<gemm::v1::GemmRequest>(wire, cuts);
  }
  return 0;
}
