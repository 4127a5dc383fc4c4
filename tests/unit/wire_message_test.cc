// ParseMessage / SerializeMessage: raw request bytes to messages and back; bytes that do not
// parse are INVALID_ARGUMENT naming where they came from and the message type.
#include "server/grpc/wire_message.h"

#include <gtest/gtest.h>

#include "gemm/v1/gemm_service.pb.h"

namespace gemm::service {
namespace {

grpc::ByteBuffer Bytes(const std::string& s) {
  grpc::Slice slice(s);
  return grpc::ByteBuffer(&slice, 1);
}

TEST(WireMessageTest, ParsesWhatWasSerialized) {
  v1::GemmRequest in;
  in.set_request_id("r1");
  in.mutable_problem()->set_m(3);
  in.mutable_problem()->set_a(std::string(1 << 20, '\7'));  // several slices
  auto bytes = SerializeMessage(in);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  v1::GemmRequest out;
  out.set_request_id("stale");
  ASSERT_TRUE(ParseMessage(*bytes, "Gemm", &out).ok());
  EXPECT_EQ(out.SerializeAsString(), in.SerializeAsString());
  // The buffer is not consumed: it parses again.
  v1::GemmRequest again;
  EXPECT_TRUE(ParseMessage(*bytes, "Gemm", &again).ok());
  EXPECT_EQ(again.request_id(), "r1");
}

TEST(WireMessageTest, BytesThatDoNotParseAreInvalidArgumentNamingTheMessage) {
  v1::GemmRequestPack out;
  const absl::Status s =
      ParseMessage(Bytes(std::string("\x0a\x7f", 2) + "short"), "GemmStreamPacked message 3", &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "GemmStreamPacked message 3: the bytes received do not parse as a "
            "gemm.v1.GemmRequestPack message");
}

TEST(WireMessageTest, NoBytesAreTheEmptyMessage) {
  v1::GetServerInfoRequest out;
  EXPECT_TRUE(ParseMessage(grpc::ByteBuffer(), "GetServerInfo", &out).ok());
  EXPECT_TRUE(ParseMessage(Bytes(""), "GetServerInfo", &out).ok());
  v1::ListMatricesResponse empty;
  auto bytes = SerializeMessage(empty);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes->Length(), 0u);
}

}  // namespace
}  // namespace gemm::service
