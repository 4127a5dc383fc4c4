// What the load generator measures: per-window counters (latency histogram, successes, errors by
// gRPC status code, work done, bytes moved, the server's own timing breakdown, verification) and
// the result of one sweep point. Plain data; the runner fills it, the report writers read it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "client/loadgen/histogram.h"

namespace gemm::loadgen {

// Sums of the server's Timing fields over the successful responses that carry one
// (microseconds, as the server reports them); copy-in, compute and copy-out over the `gpu_timed`
// responses only (the server times every n-th batch's GPU phases). `latency_us` sums the
// client-measured latency of the same responses, so latency minus the server's total is the time
// spent in the client and on the wire.
struct ServerTimingSums {
  int64_t responses = 0;
  int64_t gpu_timed = 0;
  double queue_us = 0, copy_in_us = 0, compute_us = 0, copy_out_us = 0, total_us = 0;
  double launch_us = 0, completion_us = 0;
  double batch_requests = 0, batch_rows = 0;
  double latency_us = 0;
  // The GPU-timed compute by the rows of the batch (the M of its GEMM): batches, each response
  // counting 1/batch_requests of its batch, and their compute (us) weighted the same way.
  struct BatchCompute {
    double batches = 0, compute_us = 0;
  };
  std::map<int64_t, BatchCompute> compute_by_rows;

  // Adds one GPU-timed response's share of its batch (`rows` rows over `requests` requests)
  // to compute_by_rows; ignores a response with no batch (requests < 1).
  void AddBatchCompute(int64_t rows, int requests, double compute_us);
  void Merge(const ServerTimingSums& o);
};

// Counters of one measurement window (or of several merged).
struct WindowStats {
  Histogram latency_ns;  // successful requests only, from the intended send time
  int64_t ok = 0;
  int64_t failed = 0;
  std::map<int, int64_t> errors_by_code;  // grpc::StatusCode -> count
  double flops = 0;                       // 2*M*N*K of successful requests
  double payload_bytes = 0;               // operand + output bytes of successful requests
  // Bytes on the wire each way: operand bytes the request messages carried, output bytes the
  // response messages carried (both zero when the operands and D are in shared memory).
  double request_bytes = 0;
  double response_bytes = 0;
  ServerTimingSums server;
  int64_t verified = 0;                    // responses compared with the local reference
  int64_t mismatches = 0;                  // of those, how many were wrong
  double duration_s = 0;                   // wall time the window covered
  std::map<std::string, int64_t> kernels;  // GemmResponse.kernel -> count

  // Adds `o`'s counters and duration.
  void Merge(const WindowStats& o);
  // Successful requests per second over duration_s (0 when empty).
  double Throughput() const { return duration_s > 0 ? ok / duration_s : 0; }
};

// Result of one sweep point (one concurrency or one rate).
struct PointResult {
  bool open_loop = false;
  double concurrency = 0;    // closed loop: requests kept in flight
  double target_rate = 0;    // open loop: requests per second offered
  bool stable = false;       // the last `stable_windows` windows agreed within the tolerance
  bool interrupted = false;  // Ctrl-C ended this point early
  int windows = 0;           // measurement windows run (after warm-up)
  std::vector<double> window_throughput;  // ok/s of each window, in order
  std::vector<double> window_latency_ms;  // stability latency metric of each window
  WindowStats measured;                   // the windows the result is computed from, merged
  int64_t issued = 0;                     // requests sent during the point (warm-up included)
  // Streaming: messages written on the streams during the point and the requests they carried
  // (warm-up included); their ratio is how many requests shared a message (1 for GemmStream).
  int64_t stream_messages = 0;
  int64_t stream_requests = 0;

  // "concurrency=8" or "rate=500/s".
  std::string Label() const;
};

// Name of a grpc::StatusCode value, e.g. 14 -> "UNAVAILABLE".
std::string StatusCodeName(int code);

}  // namespace gemm::loadgen
