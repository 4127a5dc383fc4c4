// TakeResponsePack: how GemmStreamPacked groups ready responses into messages.
#include "server/grpc/response_pack.h"

#include <gtest/gtest.h>

#include <string>

namespace gemm::service {
namespace {

// `count` responses whose one output carries `data_bytes` bytes as a slice.
ReadyResponses Ready(int count, size_t data_bytes) {
  ReadyResponses ready;
  for (int i = 0; i < count; ++i) {
    auto r = std::make_unique<OutgoingResponse>();
    r->message.set_request_id(std::to_string(i));
    r->message.add_outputs();
    r->data.push_back(SliceOwning(std::string(data_bytes, 'x')));
    ready.push_back(std::move(r));
  }
  return ready;
}

// The serialized size of `pack` as one GemmResponsePack.
size_t PackBytes(const std::vector<std::unique_ptr<OutgoingResponse>>& pack) {
  std::vector<OutgoingResponse*> order;
  for (const auto& r : pack) order.push_back(r.get());
  auto bytes = SerializeResponsePack(order);
  EXPECT_TRUE(bytes.ok());
  return bytes.ok() ? bytes->Length() : 0;
}

TEST(ResponsePackTest, SmallResponsesAllGoInOnePackInOrder) {
  auto ready = Ready(50, 100);
  auto pack = TakeResponsePack(&ready);
  EXPECT_TRUE(ready.empty());
  ASSERT_EQ(pack.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(pack[i]->message.request_id(), std::to_string(i));
}

TEST(ResponsePackTest, LargeResponsesSplitAtTheByteLimit) {
  // 16 responses of 8 MiB: 7 fit under 64 MiB (with their framing), the rest wait.
  auto ready = Ready(16, size_t{8} << 20);
  int taken = 0, packs = 0;
  while (!ready.empty()) {
    auto pack = TakeResponsePack(&ready);
    ASSERT_GE(pack.size(), 1u);
    EXPECT_LE(PackBytes(pack), kMaxResponsePackBytes);
    EXPECT_EQ(pack[0]->message.request_id(), std::to_string(taken));  // oldest first
    taken += static_cast<int>(pack.size());
    ++packs;
  }
  EXPECT_EQ(taken, 16);
  EXPECT_EQ(packs, 3);
}

TEST(ResponsePackTest, OneResponseOverTheLimitStillGoesAlone) {
  auto ready = Ready(3, 2000);
  auto pack = TakeResponsePack(&ready, /*max_bytes=*/1000);
  EXPECT_EQ(pack.size(), 1u);
  EXPECT_EQ(ready.size(), 2u);
}

}  // namespace
}  // namespace gemm::service
