// The gRPC transport's settings (HTTP/2 frames and flow control, socket writes and reads), one
// struct for every process that speaks GemmService: gemm_server, grpc_echo_server and the C++
// clients. Each field left at 0 (or bdp_probe at true) keeps gRPC's own default and adds no channel
// argument. Kept free of gRPC types: the settings become ChannelArgs, which the server builder
// and the client channels take as they take --grpc_arg.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "common/channel_args.h"

namespace gemm {

struct TransportOptions {
  // Largest HTTP/2 DATA frame the peer may send us, bytes (16384..16777215); 0: gRPC's default
  // (16 KiB). Default 0.
  int max_frame_bytes = 0;
  // Initial per-stream receive window (HTTP/2 lookahead), bytes; 0: gRPC's default (64 KiB, grown
  // by BDP probing while bdp_probe is on). Default 0.
  int stream_window_bytes = 0;
  // Grow the stream and connection windows by bandwidth-delay-product probing (gRPC's only
  // control of the connection window besides memory pressure). Default true.
  bool bdp_probe = true;
  // Bytes of outgoing frames gathered before one socket write; 0: gRPC's default. Default 0.
  int write_buffer_bytes = 0;
  // Socket read sizes, bytes: the first read, and the bounds it adapts within; 0: gRPC's
  // defaults (8 KiB grown to 4 MiB). Default 0.
  int read_chunk_bytes = 0;
  int min_read_chunk_bytes = 0;
  int max_read_chunk_bytes = 0;
};

// The channel arguments that `o` asks for (none for an all-default struct); INVALID_ARGUMENT
// naming the field for a negative size, a frame size outside HTTP/2's range or a minimum read
// chunk above the maximum.
absl::StatusOr<std::vector<ChannelArg>> TransportChannelArgs(const TransportOptions& o);

}  // namespace gemm
