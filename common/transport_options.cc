// TransportChannelArgs (see transport_options.h).
#include "common/transport_options.h"

#include "absl/strings/str_cat.h"

namespace gemm {
namespace {

// gRPC's argument names (GRPC_ARG_* of grpc/impl/codegen/grpc_types.h; a unit test compares).
constexpr char kMaxFrameSize[] = "grpc.http2.max_frame_size";
constexpr char kLookaheadBytes[] = "grpc.http2.lookahead_bytes";
constexpr char kBdpProbe[] = "grpc.http2.bdp_probe";
constexpr char kWriteBufferSize[] = "grpc.http2.write_buffer_size";
constexpr char kReadChunkSize[] = "grpc.experimental.tcp_read_chunk_size";
constexpr char kMinReadChunkSize[] = "grpc.experimental.tcp_min_read_chunk_size";
constexpr char kMaxReadChunkSize[] = "grpc.experimental.tcp_max_read_chunk_size";

// HTTP/2's SETTINGS_MAX_FRAME_SIZE range (RFC 9113 6.5.2).
constexpr int kMinFrameBytes = 16384;
constexpr int kMaxFrameBytes = (1 << 24) - 1;

}  // namespace

absl::StatusOr<std::vector<ChannelArg>> TransportChannelArgs(const TransportOptions& o) {
  const std::pair<const char*, int> sizes[] = {{"max_frame_bytes", o.max_frame_bytes},
                                               {"stream_window_bytes", o.stream_window_bytes},
                                               {"write_buffer_bytes", o.write_buffer_bytes},
                                               {"read_chunk_bytes", o.read_chunk_bytes},
                                               {"min_read_chunk_bytes", o.min_read_chunk_bytes},
                                               {"max_read_chunk_bytes", o.max_read_chunk_bytes}};
  for (const auto& [field, value] : sizes) {
    if (value < 0) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": must be >= 0, got ", value));
    }
  }
  if (o.max_frame_bytes != 0 &&
      (o.max_frame_bytes < kMinFrameBytes || o.max_frame_bytes > kMaxFrameBytes)) {
    return absl::InvalidArgumentError(absl::StrCat("max_frame_bytes: must be 0 or in [",
                                                   kMinFrameBytes, ", ", kMaxFrameBytes, "], got ",
                                                   o.max_frame_bytes));
  }
  if (o.min_read_chunk_bytes > 0 && o.max_read_chunk_bytes > 0 &&
      o.min_read_chunk_bytes > o.max_read_chunk_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("min_read_chunk_bytes: ", o.min_read_chunk_bytes,
                                                   " is above max_read_chunk_bytes ",
                                                   o.max_read_chunk_bytes));
  }
  std::vector<ChannelArg> args;
  auto add = [&args](const char* name, int value) {
    if (value > 0) args.push_back({.name = name, .value = value});
  };
  add(kMaxFrameSize, o.max_frame_bytes);
  add(kLookaheadBytes, o.stream_window_bytes);
  if (!o.bdp_probe) args.push_back({.name = kBdpProbe, .value = 0});
  add(kWriteBufferSize, o.write_buffer_bytes);
  add(kReadChunkSize, o.read_chunk_bytes);
  add(kMinReadChunkSize, o.min_read_chunk_bytes);
  add(kMaxReadChunkSize, o.max_read_chunk_bytes);
  return args;
}

}  // namespace gemm
