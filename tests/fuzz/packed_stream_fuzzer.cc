// Fuzz target: a GemmStreamPacked message from the wire to the messages that answer it. The
// bytes parse as a GemmRequestPack; each request is taken out of the pack as the stream does (an
// aliasing pointer that keeps the whole message alive) and converted and validated
// (RequestWorld); each gets a response: its outputs at their exact sizes, or its error. The
// responses (output data as slices of their own, as the server sends them) are then packed into
// messages by TakeResponsePack under a size cap the input picks and serialized by
// SerializeResponsePack, and each message is read back as a client does.
// Input: a limits byte (RequestWorld::ReadLimits), a cap byte, then the serialized pack.
// Properties: every request is answered exactly once, in order across the messages; every
// message carries at least one response and stays under the cap unless it carries one; every
// message is protobuf's serialization of the same responses with the data in place.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/grpc/response_pack.h"
#include "tests/fuzz/request_world.h"

namespace gemm::fuzz {
namespace {

// Most output bytes one input gets real responses for; beyond them requests are answered with
// an error (the packing only depends on the response sizes).
constexpr int64_t kMaxOutputBytes = int64_t{1} << 20;

size_t ReadCap(FuzzInput& in) {
  constexpr size_t kCaps[] = {0, 1, 64, 256, 4096, service::kMaxResponsePackBytes};
  const uint8_t b = in.U8();
  return b < 6 * 40 ? kCaps[b % 6] : size_t{b} * 16;
}

std::unique_ptr<service::OutgoingResponse> Answer(const v1::GemmRequest& request,
                                                  const absl::StatusOr<core::GemmRequest>& admitted,
                                                  int64_t* output_budget) {
  auto outgoing = std::make_unique<service::OutgoingResponse>();
  v1::GemmResponse* response = &outgoing->message;
  response->set_request_id(request.request_id());
  const int64_t bytes = admitted.ok() ? RequestWorld::ResponseBytes(*admitted) : 0;
  if (!admitted.ok() || bytes > *output_budget) {
    const absl::Status s =
        admitted.ok() ? absl::ResourceExhaustedError("fuzz budget") : admitted.status();
    response->mutable_error()->set_code(static_cast<int>(s.code()));
    response->mutable_error()->set_message(std::string(s.message()));
    return outgoing;
  }
  *output_budget -= bytes;
  for (const core::Problem& p : admitted->problems) {
    v1::Output* out = response->add_outputs();
    if (p.count > 1 || admitted->kind == core::WorkKind::kBatch) out->add_shape(p.count);
    out->add_shape(p.m);
    out->add_shape(p.n);
    out->set_dtype(p.out_dtype == core::DType::kFP32 ? v1::DTYPE_FP32 : v1::DTYPE_BF16);
    outgoing->data.push_back(
        p.d_dest.empty()
            ? service::SliceOwning(std::string(p.count * p.m * p.n * core::DTypeBytes(p.out_dtype),
                                               static_cast<char>(p.m)))
            : grpc::Slice());
  }
  return outgoing;
}

// The response messages' bytes as protobuf writes them, with every output's data in place.
std::string ProtobufBytes(const std::vector<std::unique_ptr<service::OutgoingResponse>>& pack) {
  v1::GemmResponsePack expected;
  for (const auto& r : pack) {
    v1::GemmResponse* e = expected.add_responses();
    *e = r->message;
    for (size_t i = 0; i < r->data.size(); ++i) {
      e->mutable_outputs(static_cast<int>(i))
          ->set_data(reinterpret_cast<const char*>(r->data[i].begin()), r->data[i].size());
    }
  }
  return expected.SerializeAsString();
}

std::string Flatten(const grpc::ByteBuffer& bytes) {
  std::vector<grpc::Slice> slices;
  (void)bytes.Dump(&slices);
  std::string out;
  for (const grpc::Slice& s : slices)
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

}  // namespace
}  // namespace gemm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gemm;
  fuzz::RequestWorld& world = fuzz::RequestWorld::Get();
  fuzz::FuzzInput in(data, size);
  const core::Limits limits = fuzz::RequestWorld::ReadLimits(in);
  const size_t cap = fuzz::ReadCap(in);
  const absl::string_view wire = in.Rest();
  auto message = std::make_shared<v1::GemmRequestPack>();
  if (!message->ParseFromArray(wire.data(), static_cast<int>(wire.size()))) return 0;

  service::ReadyResponses ready;
  std::vector<std::string> ids;
  int64_t output_budget = fuzz::kMaxOutputBytes;
  for (int i = 0; i < message->requests_size(); ++i) {
    std::shared_ptr<v1::GemmRequest> request(message, message->mutable_requests(i));
    auto admitted = world.Admit(*request, limits);
    ids.push_back(request->request_id());
    ready.push_back(fuzz::Answer(*request, admitted, &output_budget));
  }
  message.reset();  // the requests and their answers must not need the message any more

  size_t answered = 0;
  while (!ready.empty()) {
    const size_t before = ready.size();
    std::vector<std::unique_ptr<service::OutgoingResponse>> pack =
        service::TakeResponsePack(&ready, cap);
    FUZZ_CHECK(!pack.empty(), "an empty response message");
    FUZZ_CHECK(before - ready.size() == pack.size(), "responses lost or duplicated by packing");
    size_t bytes = 0;
    std::vector<service::OutgoingResponse*> order;
    for (const auto& r : pack) {
      bytes += r->ByteSize();
      order.push_back(r.get());
    }
    FUZZ_CHECK(pack.size() == 1 || bytes <= cap,
               absl::StrCat(pack.size(), " responses of ", bytes, " bytes, cap ", cap));
    absl::StatusOr<grpc::ByteBuffer> serialized = service::SerializeResponsePack(order);
    FUZZ_CHECK(serialized.ok(), "a response message does not serialize");
    const std::string sent = fuzz::Flatten(*serialized);
    FUZZ_CHECK(sent == fuzz::ProtobufBytes(pack),
               "a response message differs from protobuf's bytes");
    v1::GemmResponsePack received;
    FUZZ_CHECK(received.ParseFromString(sent), "a response message does not parse");
    for (const auto& r : received.responses()) {
      FUZZ_CHECK(answered < ids.size() && r.request_id() == ids[answered],
                 absl::StrCat("response ", answered, " out of order"));
      ++answered;
    }
  }
  FUZZ_CHECK(answered == ids.size(), absl::StrCat(answered, " of ", ids.size(), " answered"));
  return 0;
}
