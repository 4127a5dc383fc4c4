// The JSON report (schema_version 2: every time in milliseconds).
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/loadgen/report.h"

namespace gemm::loadgen {
namespace {

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += absl::StrFormat("\\u%04x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  return absl::StrFormat("%.9g", v);
}

std::string JsonBool(bool b) { return b ? "true" : "false"; }

// `"key": {"name": n, ...}` of a map of counts.
template <class Map, class Name>
std::string JsonCounts(const std::string& key, const Map& counts, Name name) {
  std::vector<std::string> parts;
  for (const auto& [k, n] : counts) parts.push_back(absl::StrCat(JsonString(name(k)), ": ", n));
  return absl::StrCat("\"", key, "\": {", absl::StrJoin(parts, ", "), "}");
}

std::string WorkloadJson(const WorkloadSpec& w) {
  std::vector<std::string> shapes;
  for (const ShapeSpec& s : w.shapes) {
    shapes.push_back(absl::StrCat("{\"m\": ", s.m, ", \"n\": ", s.n, ", \"k\": ", s.k,
                                  ", \"weight\": ", JsonNumber(s.weight), "}"));
  }
  return absl::StrCat(
      "{\"shapes\": [", absl::StrJoin(shapes, ", "),
      "], \"b\": ", JsonString(w.b_source == BSource::kInline ? "inline" : "resident"),
      ", \"b_layout\": ", JsonString(w.b_nk ? "nk" : "kn"),
      ", \"output_dtype\": ", JsonString(w.output_fp32 ? "fp32" : "bf16"),
      ", \"priority\": ", JsonString(w.priority_high ? "high" : "normal"),
      ", \"deadline_ms\": ", JsonNumber(w.deadline_us / 1e3),
      ", \"rpc\": ", JsonString(w.packed ? "packed" : (w.streaming ? "stream" : "unary")),
      ", \"channels\": ", w.channels, ", \"streams_per_channel\": ", w.streams_per_channel,
      ", \"client_api\": ", JsonString(w.sync_callers ? "sync" : "callback"),
      ", \"kernel\": ", JsonString(w.kernel), ", \"experts\": ", w.experts,
      ", \"experts_per_request\": ", w.experts_per_request, "}");
}

std::string RunInfoJson(const RunInfo& info) {
  std::vector<std::string> targets;
  for (const auto& t : info.targets) targets.push_back(JsonString(t));
  return absl::StrCat(
      "  \"started_utc\": ", JsonString(info.started_utc), ",\n",
      "  \"command_line\": ", JsonString(info.command_line), ",\n", "  \"targets\": [",
      absl::StrJoin(targets, ", "), "],\n", "  \"lb_policy\": ", JsonString(info.lb_policy), ",\n",
      "  \"mode\": ", JsonString(info.open_loop ? "open" : "closed"), ",\n",
      "  \"arrival\": ", JsonString(info.open_loop ? (info.poisson ? "poisson" : "constant") : ""),
      ",\n", "  \"workload\": ", WorkloadJson(info.workload), ",\n",
      "  \"measurement\": {\"warmup_ms\": ", JsonNumber(info.warmup_s * 1e3),
      ", \"window_ms\": ", JsonNumber(info.window_s * 1e3),
      ", \"stable_windows\": ", info.stable_windows,
      ", \"stability_pct\": ", JsonNumber(info.stability_pct),
      ", \"max_windows\": ", info.max_windows,
      ", \"verify_fraction\": ", JsonNumber(info.verify_fraction), "},\n",
      "  \"server\": {\"version\": ", JsonString(info.server_version),
      ", \"backend\": ", JsonString(info.server_backend),
      ", \"devices\": ", JsonString(info.server_devices),
      ", \"error\": ", JsonString(info.server_error), "},\n",
      "  \"interrupted\": ", JsonBool(info.interrupted), ",\n",
      "  \"stopped_early\": ", JsonString(info.stopped_early), ",\n",
      "  \"wall_ms\": ", JsonNumber(info.wall_s * 1e3), ",\n");
}

std::string LatencyJson(const PointSummary& s) {
  std::vector<std::string> curve;
  for (auto [q, ms] : s.percentile_curve) {
    curve.push_back(absl::StrCat("[", JsonNumber(q), ", ", JsonNumber(ms), "]"));
  }
  return absl::StrCat(
      "\"latency_ms\": {\"min\": ", JsonNumber(s.lat_min_ms),
      ", \"mean\": ", JsonNumber(s.lat_mean_ms), ", \"p50\": ", JsonNumber(s.lat_p50_ms),
      ", \"p90\": ", JsonNumber(s.lat_p90_ms), ", \"p95\": ", JsonNumber(s.lat_p95_ms),
      ", \"p99\": ", JsonNumber(s.lat_p99_ms), ", \"p999\": ", JsonNumber(s.lat_p999_ms),
      ", \"max\": ", JsonNumber(s.lat_max_ms), "}", ",\n     \"latency_percentiles_ms\": [",
      absl::StrJoin(curve, ", "), "]");
}

// [[rows, batches, mean compute ms], ...] by the batch's rows (ServerTimingSums).
std::string ComputeByRowsJson(const ServerTimingSums& t) {
  std::vector<std::string> rows;
  for (const auto& [m, b] : t.compute_by_rows) {
    rows.push_back(absl::StrCat("[", m, ", ", JsonNumber(b.batches), ", ",
                                JsonNumber(b.batches > 0 ? b.compute_us / b.batches / 1e3 : 0),
                                "]"));
  }
  return absl::StrCat("\"compute_ms_by_batch_rows\": [", absl::StrJoin(rows, ", "), "]");
}

std::string ServerTimingJson(const PointSummary& s, const ServerTimingSums& t) {
  return absl::StrCat("\"client_transport_ms\": ", JsonNumber(s.client_transport_ms),
                      ",\n     \"server_timing_ms\": {\"responses\": ", t.responses,
                      ", \"queue\": ", JsonNumber(s.server_queue_ms),
                      ", \"copy_in\": ", JsonNumber(s.server_copy_in_ms),
                      ", \"compute\": ", JsonNumber(s.server_compute_ms),
                      ", \"copy_out\": ", JsonNumber(s.server_copy_out_ms),
                      ", \"total\": ", JsonNumber(s.server_total_ms),
                      ", \"batch_requests\": ", JsonNumber(s.server_batch_requests),
                      ", \"launch\": ", JsonNumber(s.server_launch_ms),
                      ", \"completion\": ", JsonNumber(s.server_completion_ms), "},\n     ",
                      ComputeByRowsJson(t));
}

std::string PointJson(const PointResult& p) {
  const PointSummary s = Summarize(p);
  const WindowStats& m = p.measured;
  std::vector<std::string> wt, wl;
  for (double v : p.window_throughput) wt.push_back(JsonNumber(v));
  for (double v : p.window_latency_ms) wl.push_back(JsonNumber(v));
  return absl::StrCat(
      "{\"label\": ", JsonString(p.Label()), ", \"concurrency\": ", JsonNumber(p.concurrency),
      ", \"target_rate\": ", JsonNumber(p.target_rate), ", \"stable\": ", JsonBool(p.stable),
      ", \"interrupted\": ", JsonBool(p.interrupted), ", \"windows\": ", p.windows,
      ", \"window_throughput_rps\": [", absl::StrJoin(wt, ", "), "]", ", \"window_latency_ms\": [",
      absl::StrJoin(wl, ", "), "]", ",\n     \"duration_ms\": ", JsonNumber(m.duration_s * 1e3),
      ", \"issued\": ", p.issued, ", \"stream_messages\": ", p.stream_messages,
      ", \"stream_requests\": ", p.stream_requests, ", \"requests_ok\": ", m.ok,
      ", \"requests_failed\": ", m.failed, ", \"throughput_rps\": ", JsonNumber(s.throughput_rps),
      ", \"tflops\": ", JsonNumber(s.tflops), ", \"payload_gbps\": ", JsonNumber(s.payload_gbps),
      ", \"request_gbps\": ", JsonNumber(s.request_gbps),
      ", \"response_gbps\": ", JsonNumber(s.response_gbps), ",\n     ", LatencyJson(s), ",\n     ",
      JsonCounts("errors", m.errors_by_code, StatusCodeName), ",\n     ",
      ServerTimingJson(s, m.server), ",\n     ",
      JsonCounts("kernels", m.kernels, [](const std::string& k) { return k; }),
      ",\n     \"verify\": {\"checked\": ", m.verified, ", \"mismatches\": ", m.mismatches, "}}");
}

}  // namespace

std::string FormatJson(const Report& report) {
  std::string o = "{\n  \"tool\": \"gemm_loadgen\",\n  \"schema_version\": 2,\n";
  o += RunInfoJson(report.info);
  o += "  \"points\": [";
  for (size_t i = 0; i < report.points.size(); ++i) {
    absl::StrAppend(&o, i ? ",\n    " : "\n    ", PointJson(report.points[i]));
  }
  o += "\n  ]\n}\n";
  return o;
}

}  // namespace gemm::loadgen
