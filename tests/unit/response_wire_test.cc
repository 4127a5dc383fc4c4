// SerializeResponse / SerializeResponsePack: responses whose output data travel as slices of their
// own are, byte for byte, protobuf's serialization of the same response with the data in place
// (BF16 and FP32, tiny and large outputs, several outputs, none, packs), and the data's memory is
// freed once the last buffer holding it is gone.
#include "server/grpc/response_wire.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace gemm::service {
namespace {

std::string Flatten(const grpc::ByteBuffer& bytes) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(bytes.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices)
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

std::string Pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed) & 0xff);
  return s;
}

// A response with every field set and outputs of the given data sizes (0: no data).
v1::GemmResponse FullResponse(const std::vector<size_t>& sizes, v1::DType dtype) {
  v1::GemmResponse r;
  r.set_request_id("request-7");
  for (size_t i = 0; i < sizes.size(); ++i) {
    v1::Output* o = r.add_outputs();
    o->add_shape(static_cast<int64_t>(sizes[i] / (dtype == v1::DTYPE_FP32 ? 4 : 2)));
    o->add_shape(1);
    o->set_dtype(dtype);
    o->set_data(Pattern(sizes[i], static_cast<int>(i)));
  }
  r.mutable_timing()->set_queue_us(12);
  r.mutable_timing()->set_batch_requests(3);
  r.mutable_timing()->set_device(-1);
  r.set_kernel("cpu_openblas");
  return r;
}

// `full` with its data moved into slices.
OutgoingResponse Outgoing(const v1::GemmResponse& full) {
  OutgoingResponse out;
  out.message = full;
  for (v1::Output& o : *out.message.mutable_outputs()) {
    out.data.push_back(SliceOwning(std::move(*o.mutable_data())));
    o.clear_data();
  }
  return out;
}

class ResponseWireTest : public ::testing::TestWithParam<std::vector<size_t>> {};

TEST_P(ResponseWireTest, EqualsProtobufsSerialization) {
  for (v1::DType dtype : {v1::DTYPE_BF16, v1::DTYPE_FP32}) {
    const v1::GemmResponse full = FullResponse(GetParam(), dtype);
    OutgoingResponse out = Outgoing(full);
    const std::string before = out.message.SerializeAsString();
    auto bytes = SerializeResponse(out);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    EXPECT_EQ(Flatten(*bytes), full.SerializeAsString());
    EXPECT_EQ(out.ByteSize(), full.ByteSizeLong());
    EXPECT_EQ(out.message.SerializeAsString(), before) << "the message was changed";
  }
}

TEST_P(ResponseWireTest, PackEqualsProtobufsSerialization) {
  v1::GemmResponsePack pack;
  std::vector<OutgoingResponse> outs;
  for (int i = 0; i < 3; ++i) {
    *pack.add_responses() = FullResponse(GetParam(), i == 1 ? v1::DTYPE_FP32 : v1::DTYPE_BF16);
    outs.push_back(Outgoing(pack.responses(i)));
  }
  std::vector<OutgoingResponse*> order = {&outs[0], &outs[1], &outs[2]};
  auto bytes = SerializeResponsePack(order);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(Flatten(*bytes), pack.SerializeAsString());
}

// Tiny (1 element), over the 16 KiB HTTP/2 frame and a 3-byte length prefix, a 32 MiB output,
// several outputs with one without data, and no output at all.
INSTANTIATE_TEST_SUITE_P(Sizes, ResponseWireTest,
                         ::testing::Values(std::vector<size_t>{4}, std::vector<size_t>{300000},
                                           std::vector<size_t>{size_t{32} << 20},
                                           std::vector<size_t>{8, 0, 70000},
                                           std::vector<size_t>{}));

TEST(ResponseWire, ErrorResponseWithoutOutputs) {
  v1::GemmResponse full;
  full.set_request_id("x");
  full.mutable_error()->set_code(3);
  full.mutable_error()->set_message("problem.a: has 2 bytes");
  OutgoingResponse out{.message = full};
  auto bytes = SerializeResponse(out);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(Flatten(*bytes), full.SerializeAsString());
}

TEST(ResponseWire, DataInBothPlacesIsInternal) {
  OutgoingResponse out;
  out.message.add_outputs()->set_data("ab");
  out.data.push_back(SliceOwning("cd"));
  EXPECT_EQ(SerializeResponse(out).status().code(), absl::StatusCode::kInternal);
}

int g_freed = 0;
void CountFree(void* p) {
  ++g_freed;
  delete[] static_cast<char*>(p);
}

TEST(ResponseWire, DataIsFreedWithTheLastBufferHoldingIt) {
  g_freed = 0;
  auto* data = new char[1000]();
  std::optional<grpc::ByteBuffer> bytes;
  {
    OutgoingResponse out;
    out.message.add_outputs()->set_dtype(v1::DTYPE_BF16);
    out.data.push_back(grpc::Slice(data, 1000, &CountFree));
    auto serialized = SerializeResponse(out);
    ASSERT_TRUE(serialized.ok());
    bytes = *std::move(serialized);
  }
  EXPECT_EQ(g_freed, 0) << "freed while the response bytes still hold it";
  v1::GemmResponse full;
  full.add_outputs()->set_dtype(v1::DTYPE_BF16);
  full.mutable_outputs(0)->set_data(std::string(1000, '\0'));
  EXPECT_EQ(Flatten(*bytes), full.SerializeAsString());
  bytes.reset();
  EXPECT_EQ(g_freed, 1);
}

}  // namespace
}  // namespace gemm::service
