// ParseChannelArgs: integer and string values, and the items it refuses.
#include "common/channel_args.h"

#include <gtest/gtest.h>

namespace gemm {
namespace {

TEST(ParseChannelArgs, IntegersAndStrings) {
  auto args = ParseChannelArgs({"grpc.http2.max_frame_size=1048576",
                                "grpc.primary_user_agent=gemm/1", "x=-3", "y=", "z=1e3"});
  ASSERT_TRUE(args.ok()) << args.status();
  ASSERT_EQ(args->size(), 5u);
  EXPECT_EQ((*args)[0].name, "grpc.http2.max_frame_size");
  EXPECT_EQ(std::get<int>((*args)[0].value), 1048576);
  EXPECT_EQ(std::get<std::string>((*args)[1].value), "gemm/1");
  EXPECT_EQ(std::get<int>((*args)[2].value), -3);
  EXPECT_EQ(std::get<std::string>((*args)[3].value), "");
  EXPECT_EQ(std::get<std::string>((*args)[4].value), "1e3");
}

TEST(ParseChannelArgs, ValueBeyondIntRangeStaysAString) {
  auto args = ParseChannelArgs({"a=4294967296"});
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(std::get<std::string>((*args)[0].value), "4294967296");
}

TEST(ParseChannelArgs, RefusesItemsWithoutNameOrEquals) {
  for (const char* bad : {"grpc.http2.max_frame_size", "=5", ""}) {
    auto args = ParseChannelArgs({bad});
    ASSERT_FALSE(args.ok()) << bad;
    EXPECT_EQ(args.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(args.status().message().find("name=value"), std::string::npos);
  }
  EXPECT_TRUE(ParseChannelArgs({}).ok());
}

}  // namespace
}  // namespace gemm
