// Merging of measurement counters and naming of status codes.
#include "client/loadgen/stats.h"

#include "absl/strings/str_cat.h"

namespace gemm::loadgen {

void ServerTimingSums::AddBatchCompute(int64_t rows, int requests, double compute_us) {
  if (requests < 1) return;
  BatchCompute& b = compute_by_rows[rows];
  b.batches += 1.0 / requests;
  b.compute_us += compute_us / requests;
}

void ServerTimingSums::Merge(const ServerTimingSums& o) {
  responses += o.responses;
  gpu_timed += o.gpu_timed;
  queue_us += o.queue_us;
  copy_in_us += o.copy_in_us;
  compute_us += o.compute_us;
  copy_out_us += o.copy_out_us;
  total_us += o.total_us;
  launch_us += o.launch_us;
  completion_us += o.completion_us;
  batch_requests += o.batch_requests;
  batch_rows += o.batch_rows;
  latency_us += o.latency_us;
  for (const auto& [rows, b] : o.compute_by_rows) {
    compute_by_rows[rows].batches += b.batches;
    compute_by_rows[rows].compute_us += b.compute_us;
  }
}

void WindowStats::Merge(const WindowStats& o) {
  latency_ns.Merge(o.latency_ns);
  ok += o.ok;
  failed += o.failed;
  for (const auto& [code, n] : o.errors_by_code) errors_by_code[code] += n;
  flops += o.flops;
  payload_bytes += o.payload_bytes;
  request_bytes += o.request_bytes;
  response_bytes += o.response_bytes;
  server.Merge(o.server);
  verified += o.verified;
  mismatches += o.mismatches;
  duration_s += o.duration_s;
  for (const auto& [name, n] : o.kernels) kernels[name] += n;
}

std::string PointResult::Label() const {
  if (open_loop) return absl::StrCat("rate=", target_rate, "/s");
  return absl::StrCat("concurrency=", concurrency);
}

std::string StatusCodeName(int code) {
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  if (code >= 0 && code < static_cast<int>(sizeof(kNames) / sizeof(kNames[0]))) {
    return kNames[code];
  }
  return absl::StrCat("CODE_", code);
}

}  // namespace gemm::loadgen
