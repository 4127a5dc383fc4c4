// The transport flags every binary that speaks GemmService shares (gemm_server, grpc_echo_server,
// gemm_client, gemm_loadgen), defined once: --http2_max_frame_bytes, --http2_stream_window_bytes,
// --http2_bdp_probe, --http2_write_buffer_bytes, --tcp_read_chunk_bytes,
// --tcp_min_read_chunk_bytes, --tcp_max_read_chunk_bytes.
#pragma once

#include "common/transport_options.h"

namespace gemm {

// What the parsed transport flags ask for (call after the command line is parsed).
TransportOptions TransportOptionsFromFlags();

}  // namespace gemm
