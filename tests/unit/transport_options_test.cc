// TransportChannelArgs: gRPC's argument names and values for the transport settings, nothing for
// the defaults, and the settings it refuses.
#include "common/transport_options.h"

#include <grpc/impl/codegen/grpc_types.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

namespace gemm {
namespace {

std::map<std::string, int> AsMap(const std::vector<ChannelArg>& args) {
  std::map<std::string, int> m;
  for (const ChannelArg& a : args) m[a.name] = std::get<int>(a.value);
  return m;
}

TEST(TransportChannelArgs, DefaultsAddNothing) {
  auto args = TransportChannelArgs({});
  ASSERT_TRUE(args.ok());
  EXPECT_TRUE(args->empty());
}

TEST(TransportChannelArgs, EverySettingUnderGrpcsName) {
  auto args = TransportChannelArgs({.max_frame_bytes = 1 << 20,
                                    .stream_window_bytes = 8 << 20,
                                    .bdp_probe = false,
                                    .write_buffer_bytes = 4 << 20,
                                    .read_chunk_bytes = 1 << 20,
                                    .min_read_chunk_bytes = 256 << 10,
                                    .max_read_chunk_bytes = 16 << 20});
  ASSERT_TRUE(args.ok()) << args.status();
  const std::map<std::string, int> want = {{GRPC_ARG_HTTP2_MAX_FRAME_SIZE, 1 << 20},
                                           {GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 8 << 20},
                                           {GRPC_ARG_HTTP2_BDP_PROBE, 0},
                                           {GRPC_ARG_HTTP2_WRITE_BUFFER_SIZE, 4 << 20},
                                           {GRPC_ARG_TCP_READ_CHUNK_SIZE, 1 << 20},
                                           {GRPC_ARG_TCP_MIN_READ_CHUNK_SIZE, 256 << 10},
                                           {GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE, 16 << 20}};
  EXPECT_EQ(AsMap(*args), want);
}

TEST(TransportChannelArgs, RefusesSettingsOutOfRange) {
  EXPECT_EQ(TransportChannelArgs({.max_frame_bytes = 1000}).status().message(),
            "max_frame_bytes: must be 0 or in [16384, 16777215], got 1000");
  EXPECT_EQ(TransportChannelArgs({.max_frame_bytes = 1 << 24}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TransportChannelArgs({.write_buffer_bytes = -1}).status().message(),
            "write_buffer_bytes: must be >= 0, got -1");
  EXPECT_EQ(TransportChannelArgs({.min_read_chunk_bytes = 2 << 20, .max_read_chunk_bytes = 1 << 20})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gemm
