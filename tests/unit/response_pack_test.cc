// TakeResponsePack: how GemmStreamPacked groups ready responses into messages.
#include "server/grpc/response_pack.h"

#include <gtest/gtest.h>

#include <string>

namespace gemm::service {
namespace {

std::deque<std::unique_ptr<v1::GemmResponse>> Ready(int count, size_t data_bytes) {
  std::deque<std::unique_ptr<v1::GemmResponse>> ready;
  for (int i = 0; i < count; ++i) {
    auto r = std::make_unique<v1::GemmResponse>();
    r->set_request_id(std::to_string(i));
    r->add_outputs()->set_data(std::string(data_bytes, 'x'));
    ready.push_back(std::move(r));
  }
  return ready;
}

TEST(ResponsePackTest, SmallResponsesAllGoInOnePackInOrder) {
  auto ready = Ready(50, 100);
  auto pack = TakeResponsePack(&ready);
  EXPECT_TRUE(ready.empty());
  ASSERT_EQ(pack->responses_size(), 50);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(pack->responses(i).request_id(), std::to_string(i));
}

TEST(ResponsePackTest, LargeResponsesSplitAtTheByteLimit) {
  // 16 responses of 8 MiB: 7 fit under 64 MiB (with their framing), the rest wait.
  auto ready = Ready(16, size_t{8} << 20);
  int taken = 0, packs = 0;
  while (!ready.empty()) {
    auto pack = TakeResponsePack(&ready);
    ASSERT_GE(pack->responses_size(), 1);
    EXPECT_LE(pack->ByteSizeLong(), kMaxResponsePackBytes);
    EXPECT_EQ(pack->responses(0).request_id(), std::to_string(taken));  // oldest first
    taken += pack->responses_size();
    ++packs;
  }
  EXPECT_EQ(taken, 16);
  EXPECT_EQ(packs, 3);
}

TEST(ResponsePackTest, OneResponseOverTheLimitStillGoesAlone) {
  auto ready = Ready(3, 2000);
  auto pack = TakeResponsePack(&ready, /*max_bytes=*/1000);
  EXPECT_EQ(pack->responses_size(), 1);
  EXPECT_EQ(ready.size(), 2u);
}

}  // namespace
}  // namespace gemm::service
