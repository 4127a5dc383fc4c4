// ReceivedMessage: requests parsed from gRPC's received slices with their bytes fields left where
// they arrived. Whatever the slice boundaries (fields and values split across them, a value over
// three slices), the message with its values put back is exactly what protobuf parses from the
// same bytes; the values are read in place (no copy); protobuf's rules hold (last value wins, a
// later oneof member replaces a value); and bytes that are not the message (truncated, garbage)
// are INVALID_ARGUMENT naming where they came from.
#include "server/grpc/received_message.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "gemm/v1/gemm_service.pb.h"
#include "tests/common/received_message_util.h"

namespace gemm::service {
namespace {

using testing::Join;
using testing::PutBack;
using testing::Sliced;

v1::Problem SomeProblem(int seed, size_t a_bytes) {
  v1::Problem p;
  p.set_m(3 + seed);
  p.set_n(5);
  p.set_k(7);
  std::string a(a_bytes, '\0');
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<char>(i * 7 + seed);
  p.set_a(a);
  p.set_b(std::string(40 + seed, static_cast<char>('b' + seed)));
  p.set_c("cc");
  p.set_alpha(0.5f);
  p.set_output_dtype(v1::DTYPE_FP32);
  p.mutable_d_shm()->set_region("d");
  return p;
}

// A pack with every kind of work, shared-memory references and a resident handle.
v1::GemmRequestPack SomePack(size_t a_bytes) {
  v1::GemmRequestPack pack;
  v1::GemmRequest* single = pack.add_requests();
  single->set_request_id("single");
  *single->mutable_problem() = SomeProblem(0, a_bytes);
  single->set_timeout_us(99);
  v1::GemmRequest* batch = pack.add_requests();
  batch->set_request_id("batch");
  batch->mutable_batch()->set_count(2);
  *batch->mutable_batch()->mutable_problem() = SomeProblem(1, a_bytes);
  batch->mutable_batch()->mutable_problem()->set_b_handle("w");  // replaces b (oneof)
  v1::GemmRequest* group = pack.add_requests();
  group->set_request_id("group");
  *group->mutable_group()->add_problems() = SomeProblem(2, a_bytes);
  *group->mutable_group()->add_problems() = SomeProblem(3, 1);
  group->mutable_group()->mutable_problems(1)->mutable_a_shm()->set_region("r");
  return pack;
}

// Parses `buffer` both ways; expects the same outcome and, on success, the same message.
void ExpectSameAsProtobuf(const grpc::ByteBuffer& buffer, const std::string& wire) {
  v1::GemmRequestPack want;
  const bool protobuf_ok = want.ParseFromString(wire);
  ReceivedMessage received;
  v1::GemmRequestPack got;
  const absl::Status s = received.Parse(buffer, "GemmStreamPacked message 1", &got);
  ASSERT_EQ(s.ok(), protobuf_ok) << s;
  if (!s.ok()) return;
  PutBack(received, &got);
  EXPECT_EQ(got.SerializeAsString(), want.SerializeAsString());
}

TEST(ReceivedMessageTest, EverySingleCutParsesAsProtobufDoes) {
  const std::string wire = SomePack(20).SerializeAsString();
  for (size_t cut = 0; cut <= wire.size(); ++cut) {
    SCOPED_TRACE(cut);
    ExpectSameAsProtobuf(Sliced(wire, {cut}), wire);
  }
}

TEST(ReceivedMessageTest, ManyCutsParseAsProtobufDoes) {
  const std::string wire = SomePack(3000).SerializeAsString();
  std::mt19937 gen(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<size_t> cuts;
    for (size_t at = 0; at < wire.size(); at += 1 + gen() % 600) cuts.push_back(at);
    SCOPED_TRACE(round);
    ExpectSameAsProtobuf(Sliced(wire, cuts), wire);
  }
}

TEST(ReceivedMessageTest, ValueOverThreeSlicesIsReadInPlace) {
  v1::GemmRequest request;
  *request.mutable_problem() = SomeProblem(0, 300);
  const std::string wire = request.SerializeAsString();
  const size_t a_at = wire.find(request.problem().a());
  ASSERT_NE(a_at, std::string::npos);
  const grpc::ByteBuffer buffer = Sliced(wire, {a_at + 100, a_at + 200});
  ReceivedMessage received;
  v1::GemmRequest got;
  ASSERT_TRUE(received.Parse(buffer, "Gemm", &got).ok());
  const auto* a = received.Bytes(got.problem(), v1::Problem::kAFieldNumber);
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->size(), 3u);
  EXPECT_EQ(Join(*a), request.problem().a());
  // The pieces point into the buffer's own slices: nothing was copied.
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(buffer.Dump(&slices).ok());
  for (size_t i = 0; i < 3; ++i) {
    const char* begin = reinterpret_cast<const char*>(slices[i].begin());
    EXPECT_GE((*a)[i].data(), begin);
    EXPECT_LE((*a)[i].data() + (*a)[i].size(), begin + slices[i].size());
  }
  EXPECT_EQ(got.problem().a().size(), 5u) << "the message holds a marker, not the value";
  EXPECT_EQ(received.Bytes(got.problem(), v1::Problem::kBFieldNumber)->size(), 1u);
}

TEST(ReceivedMessageTest, LaterValuesAndOneofMembersWin) {
  v1::Problem first, second;
  first.set_a("first-a");
  first.set_b("inline-b");
  second.set_a("second-a");
  second.set_b_handle("resident");
  // Concatenated messages merge: `a` twice (the second wins), then b_handle after b.
  v1::GemmRequest request;
  std::string wire = "\x12";  // GemmRequest.problem, length-delimited
  const std::string body = first.SerializeAsString() + second.SerializeAsString();
  wire += static_cast<char>(body.size());
  wire += body;
  ReceivedMessage received;
  v1::GemmRequest got;
  ASSERT_TRUE(received.Parse(Sliced(wire, {wire.size() / 2}), "Gemm", &got).ok());
  ASSERT_NE(received.Bytes(got.problem(), v1::Problem::kAFieldNumber), nullptr);
  EXPECT_EQ(Join(*received.Bytes(got.problem(), v1::Problem::kAFieldNumber)), "second-a");
  EXPECT_EQ(received.Bytes(got.problem(), v1::Problem::kBFieldNumber), nullptr);
  EXPECT_EQ(got.problem().b_handle(), "resident");
  // And a problem replaced by a batch leaves nothing of the problem behind.
  v1::GemmRequest replaced;
  *replaced.mutable_problem() = first;
  std::string two = replaced.SerializeAsString();
  replaced.mutable_batch()->set_count(2);
  *replaced.mutable_batch()->mutable_problem() = second;
  two += replaced.SerializeAsString();
  ReceivedMessage again;
  v1::GemmRequest out;
  ASSERT_TRUE(again.Parse(Sliced(two, {3}), "Gemm", &out).ok());
  ASSERT_TRUE(out.has_batch());
  EXPECT_EQ(Join(*again.Bytes(out.batch().problem(), v1::Problem::kAFieldNumber)), "second-a");
}

TEST(ReceivedMessageTest, TruncatedBytesAreInvalidArgumentNamingTheMessage) {
  const std::string wire = SomePack(50).SerializeAsString();
  for (size_t len = 0; len < wire.size(); ++len) {
    SCOPED_TRACE(len);
    const std::string cut = wire.substr(0, len);
    ExpectSameAsProtobuf(Sliced(cut, {len / 3, 2 * len / 3}), cut);
  }
  ReceivedMessage received;
  v1::GemmRequestPack got;
  const absl::Status s = received.Parse(Sliced(wire.substr(0, wire.size() - 1), {}),
                                        "GemmStreamPacked message 3", &got);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "GemmStreamPacked message 3: the bytes received do not parse as a "
            "gemm.v1.GemmRequestPack message");
  EXPECT_EQ(got.requests_size(), 0) << "a message that does not parse is left empty";
}

TEST(ReceivedMessageTest, GarbageParsesOnlyWhereProtobufParsesIt) {
  std::mt19937 gen(11);
  int parsed = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string wire(gen() % 64, '\0');
    for (char& c : wire) c = static_cast<char>(gen());
    v1::GemmRequestPack want;
    const bool protobuf_ok = want.ParseFromString(wire);
    ReceivedMessage received;
    v1::GemmRequestPack got;
    const absl::Status s = received.Parse(Sliced(wire, {wire.size() / 2}), "x", &got);
    if (!protobuf_ok) {
      EXPECT_FALSE(s.ok()) << round;
      continue;
    }
    // Protobuf also takes (obsolete) group fields, which are refused here.
    if (!s.ok()) continue;
    ++parsed;
    for (v1::GemmRequest& r : *got.mutable_requests()) PutBack(received, &r);
    EXPECT_EQ(got.SerializeAsString(), want.SerializeAsString()) << round;
  }
  EXPECT_GT(parsed, 0);
}

TEST(ReceivedMessageTest, InvalidUtf8InAStringIsRefusedAsProtobufDoes) {
  v1::GemmRequest request;
  request.set_request_id("ok");
  std::string wire = request.SerializeAsString();
  wire[2] = '\xc3';                               // a lone lead byte
  ExpectSameAsProtobuf(Sliced(wire, {1}), wire);  // both refuse it
}

TEST(ReceivedMessageTest, NoBytesAreTheEmptyMessage) {
  ReceivedMessage received;
  v1::GemmRequest got;
  got.set_request_id("stale");
  EXPECT_TRUE(received.Parse(grpc::ByteBuffer(), "Gemm", &got).ok());
  EXPECT_EQ(got.request_id(), "");
}

}  // namespace
}  // namespace gemm::service
