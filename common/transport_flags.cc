// The transport flags (see transport_flags.h). Defaults are TransportOptions' own.
#include "common/transport_flags.h"

#include "absl/flags/flag.h"

ABSL_FLAG(int, http2_max_frame_bytes, gemm::TransportOptions{}.max_frame_bytes,
          "Largest HTTP/2 DATA frame the peer may send, bytes (16384..16777215); 0 (default): "
          "gRPC's 16 KiB.");
ABSL_FLAG(int, http2_stream_window_bytes, gemm::TransportOptions{}.stream_window_bytes,
          "Initial HTTP/2 per-stream receive window, bytes; 0 (default): gRPC's 64 KiB, grown by "
          "BDP probing.");
ABSL_FLAG(bool, http2_bdp_probe, gemm::TransportOptions{}.bdp_probe,
          "Grow the HTTP/2 stream and connection windows by bandwidth-delay-product probing. "
          "Default true.");
ABSL_FLAG(int, http2_write_buffer_bytes, gemm::TransportOptions{}.write_buffer_bytes,
          "Bytes of outgoing HTTP/2 frames gathered before one socket write; 0 (default): "
          "gRPC's default.");
ABSL_FLAG(int, tcp_read_chunk_bytes, gemm::TransportOptions{}.read_chunk_bytes,
          "Size of the first socket read, bytes; 0 (default): gRPC's 8 KiB.");
ABSL_FLAG(int, tcp_min_read_chunk_bytes, gemm::TransportOptions{}.min_read_chunk_bytes,
          "Smallest socket read, bytes; 0 (default): gRPC's default.");
ABSL_FLAG(int, tcp_max_read_chunk_bytes, gemm::TransportOptions{}.max_read_chunk_bytes,
          "Largest socket read, bytes; 0 (default): gRPC's 4 MiB.");

namespace gemm {

TransportOptions TransportOptionsFromFlags() {
  return {.max_frame_bytes = absl::GetFlag(FLAGS_http2_max_frame_bytes),
          .stream_window_bytes = absl::GetFlag(FLAGS_http2_stream_window_bytes),
          .bdp_probe = absl::GetFlag(FLAGS_http2_bdp_probe),
          .write_buffer_bytes = absl::GetFlag(FLAGS_http2_write_buffer_bytes),
          .read_chunk_bytes = absl::GetFlag(FLAGS_tcp_read_chunk_bytes),
          .min_read_chunk_bytes = absl::GetFlag(FLAGS_tcp_min_read_chunk_bytes),
          .max_read_chunk_bytes = absl::GetFlag(FLAGS_tcp_max_read_chunk_bytes)};
}

}  // namespace gemm
