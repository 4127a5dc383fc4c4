// Flags that bound what requests, streams and uploads may hold (see server/core/limits.h).
#include <cstdint>
#include <string>

#include "absl/flags/flag.h"
#include "server/options/flag_groups.h"

namespace {

const gemm::core::Limits kLimits;
const gemm::service::ServiceOptions kService;

}  // namespace

ABSL_FLAG(int64_t, max_dim, kLimits.max_dim, "Largest M, N or K accepted (at most 2147483647).");
ABSL_FLAG(int64_t, max_request_bytes, kLimits.max_request_bytes,
          "Largest operand payload of a request (bytes; lowered to --max_in_flight_bytes).");
ABSL_FLAG(int64_t, max_response_bytes, kLimits.max_response_bytes,
          "Largest output payload of one response (bytes; outputs written to shared memory "
          "excluded; lowered to --max_in_flight_bytes).");
ABSL_FLAG(int64_t, max_message_bytes, kLimits.max_message_bytes,
          "gRPC max send/receive message size (bytes, 4 MiB to 2147483647).");
ABSL_FLAG(int64_t, max_in_flight_bytes, kLimits.max_in_flight_bytes,
          "Admission budget: bytes of the requests the server is computing, from admission until "
          "the answer is handed to its call (operands in request messages plus response "
          "outputs); a request that does not fit gets RESOURCE_EXHAUSTED. Stream answers waiting "
          "to be written count under --max_answer_bytes (bytes; 0: 25% of the host's memory, "
          "physical RAM or the cgroup limit if smaller; at most 50% of it).");
ABSL_FLAG(int64_t, max_resident_bytes, kLimits.max_resident_bytes,
          "Cap on resident matrix bytes (bytes; with the cpu backend, which keeps them in host "
          "memory, lowered to 25% of host memory).");
ABSL_FLAG(int64_t, max_problems, kLimits.max_problems, "Largest batch count or group size.");
ABSL_FLAG(int64_t, max_shared_memory_bytes, kLimits.max_shared_memory_bytes,
          "Cap on bytes of registered client shared-memory regions (bytes; 0 turns them off).");
ABSL_FLAG(int64_t, max_shared_memory_regions, kLimits.max_shared_memory_regions,
          "Most registered client shared-memory regions at once (each is one memory mapping; "
          "lowered to half the mappings the process has left under vm.max_map_count).");
ABSL_FLAG(std::string, shared_memory_key_prefix, kLimits.shared_memory_key_prefix,
          "Clients may only register POSIX shared-memory objects whose names start with this.");
ABSL_FLAG(int32_t, upload_idle_timeout_s,
          static_cast<int32_t>(absl::ToInt64Seconds(kService.upload_idle_timeout)),
          "A RegisterMatrix upload that receives no chunk for this many seconds ends "
          "DEADLINE_EXCEEDED and gives its reserved bytes back.");
ABSL_FLAG(int64_t, max_stream_answer_bytes, kService.answers.per_stream_bytes,
          "Stream backpressure, never a refusal: bytes of response outputs one "
          "GemmStream/GemmStreamPacked call may hold, from handing a request to the engine until "
          "its answer is written to the client, before the server stops reading its requests "
          "(HTTP/2 flow control then holds the client back); a single larger answer still goes, "
          "alone (bytes).");
ABSL_FLAG(int64_t, max_answer_bytes, kService.answers.server_bytes,
          "The same backpressure over all streams together: while their answers hold this many "
          "bytes, every stream holding some stops reading until its answers are written (bytes; "
          "0: a quarter of the host's memory; at most half of it).");

namespace gemm::server {

void ApplyLimitsFlags(ServerOptions& options) {
  core::Limits& l = options.engine.limits;
  l.max_dim = absl::GetFlag(FLAGS_max_dim);
  l.max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  l.max_response_bytes = absl::GetFlag(FLAGS_max_response_bytes);
  l.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  l.max_in_flight_bytes = absl::GetFlag(FLAGS_max_in_flight_bytes);
  l.max_resident_bytes = absl::GetFlag(FLAGS_max_resident_bytes);
  l.max_problems = absl::GetFlag(FLAGS_max_problems);
  l.max_shared_memory_bytes = absl::GetFlag(FLAGS_max_shared_memory_bytes);
  l.max_shared_memory_regions = absl::GetFlag(FLAGS_max_shared_memory_regions);
  l.shared_memory_key_prefix = absl::GetFlag(FLAGS_shared_memory_key_prefix);
  service::ServiceOptions& s = options.service;
  s.upload_idle_timeout = absl::Seconds(absl::GetFlag(FLAGS_upload_idle_timeout_s));
  s.answers = {.per_stream_bytes = absl::GetFlag(FLAGS_max_stream_answer_bytes),
               .server_bytes = absl::GetFlag(FLAGS_max_answer_bytes)};
}

}  // namespace gemm::server
