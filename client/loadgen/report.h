// Reports of a load-generator run: a human table (stdout), JSON, CSV and a self-contained HTML
// page with inline SVG charts (latency vs throughput, latency by percentile, the server's time
// breakdown). Every time in every report is in milliseconds. Pure functions of the run's data;
// no I/O except WriteTextFile.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "client/loadgen/stats.h"
#include "client/loadgen/workload.h"

namespace gemm::loadgen {

// How the run was set up, echoed in every report.
struct RunInfo {
  std::string started_utc;  // e.g. "2026-11-22T03:10:00Z"
  std::string command_line;
  std::vector<std::string> targets;
  std::string lb_policy;
  bool open_loop = false;
  bool poisson = false;
  WorkloadSpec workload;
  double warmup_s = 0, window_s = 0, stability_pct = 0;
  int stable_windows = 0, max_windows = 0;
  double verify_fraction = 0;
  std::string server_version;  // from GetServerInfo; empty when unknown
  std::string server_backend;
  std::string server_devices;  // e.g. "NVIDIA H200 (sm_90) x1"
  std::string server_error;    // why GetServerInfo failed, if it did
  bool interrupted = false;    // Ctrl-C
  std::string stopped_early;   // why the sweep ended before its last point (e.g. no server)
  double wall_s = 0;
};

struct Report {
  RunInfo info;
  std::vector<PointResult> points;
};

// Figures derived from a point's measured windows. Every time is in milliseconds.
struct PointSummary {
  double throughput_rps = 0;  // successful requests per second
  double tflops = 0;          // 2*M*N*K of successful requests per second / 1e12
  double payload_gbps = 0;    // operand + output bytes per second / 1e9
  // On the wire: operand bytes in the request messages, output bytes in the response messages,
  // per second / 1e9 (both 0 when the operands and D are in shared memory).
  double request_gbps = 0;
  double response_gbps = 0;
  double lat_min_ms = 0, lat_mean_ms = 0, lat_p50_ms = 0, lat_p90_ms = 0, lat_p95_ms = 0,
         lat_p99_ms = 0, lat_p999_ms = 0, lat_max_ms = 0;
  int64_t errors = 0;
  // Means over the responses that carry the server's timing: the server's breakdown (copy-in,
  // compute and copy-out over the responses whose GPU phases it timed), and what the client
  // measured beyond the server's total: time in the client (open loop: queueing behind the
  // schedule included) and on the wire.
  double server_queue_ms = 0, server_copy_in_ms = 0, server_compute_ms = 0, server_copy_out_ms = 0,
         server_total_ms = 0, server_launch_ms = 0, server_completion_ms = 0;
  double client_transport_ms = 0;
  double server_batch_requests = 0;  // requests per batch the server ran
  // (percentile, latency ms) from 0 to 100, for the percentile chart.
  std::vector<std::pair<double, double>> percentile_curve;
};

// Computes the derived figures of `p`.
PointSummary Summarize(const PointResult& p);

// "UNAVAILABLE=3 DEADLINE_EXCEEDED=1" (empty when none).
std::string FormatErrors(const std::map<int, int64_t>& errors, const char* separator = " ");
// "closed loop" or "open loop (Poisson arrivals)".
std::string ModeText(const RunInfo& info);
// The server's description, or why it is unknown.
std::string ServerText(const RunInfo& info);

// The human-readable table printed on stdout.
std::string FormatTable(const Report& report);
// JSON document (schema_version 2, in docs/loadgen.md).
std::string FormatJson(const Report& report);
// CSV: a header and one row per sweep point.
std::string FormatCsv(const Report& report);
// Self-contained HTML page (inline CSS and SVG, no scripts, nothing fetched from the network).
std::string FormatHtml(const Report& report);

// Writes `content` to `path` (replacing it).
absl::Status WriteTextFile(const std::string& path, const std::string& content);

}  // namespace gemm::loadgen
