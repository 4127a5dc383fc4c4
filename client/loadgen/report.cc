// Report figures, the text table and the CSV.
#include "client/loadgen/report.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gemm::loadgen {
namespace {

constexpr double kCurvePercentiles[] = {0,  10,   25,   50,    75,    90, 95,
                                        99, 99.5, 99.9, 99.95, 99.99, 100};

// The server's mean times per response, in ms (see PointSummary).
void SummarizeServer(const WindowStats& m, PointSummary* s) {
  const ServerTimingSums& t = m.server;
  if (t.responses == 0) return;
  const double n = static_cast<double>(t.responses) * 1e3;  // us sums -> mean ms
  s->server_queue_ms = t.queue_us / n;
  if (t.gpu_timed > 0) {  // over the responses whose GPU phases were timed
    const double g = static_cast<double>(t.gpu_timed) * 1e3;
    s->server_copy_in_ms = t.copy_in_us / g;
    s->server_compute_ms = t.compute_us / g;
    s->server_copy_out_ms = t.copy_out_us / g;
  }
  s->server_total_ms = t.total_us / n;
  s->server_launch_ms = t.launch_us / n;
  s->server_completion_ms = t.completion_us / n;
  s->client_transport_ms = (t.latency_us - t.total_us) / n;
  s->server_batch_requests = t.batch_requests / static_cast<double>(t.responses);
}

}  // namespace

PointSummary Summarize(const PointResult& p) {
  PointSummary s;
  const WindowStats& m = p.measured;
  const double d = m.duration_s;
  if (d > 0) {
    s.throughput_rps = m.ok / d;
    s.tflops = m.flops / d / 1e12;
    s.payload_gbps = m.payload_bytes / d / 1e9;
    s.request_gbps = m.request_bytes / d / 1e9;
    s.response_gbps = m.response_bytes / d / 1e9;
  }
  const Histogram& h = m.latency_ns;
  s.lat_min_ms = h.min() / 1e6;
  s.lat_mean_ms = h.mean() / 1e6;
  s.lat_p50_ms = h.Percentile(50) / 1e6;
  s.lat_p90_ms = h.Percentile(90) / 1e6;
  s.lat_p95_ms = h.Percentile(95) / 1e6;
  s.lat_p99_ms = h.Percentile(99) / 1e6;
  s.lat_p999_ms = h.Percentile(99.9) / 1e6;
  s.lat_max_ms = h.max() / 1e6;
  s.errors = m.failed;
  SummarizeServer(m, &s);
  if (h.count() > 0) {
    for (double q : kCurvePercentiles) s.percentile_curve.emplace_back(q, h.Percentile(q) / 1e6);
  }
  return s;
}

std::string FormatErrors(const std::map<int, int64_t>& errors, const char* separator) {
  std::vector<std::string> parts;
  for (const auto& [code, n] : errors) parts.push_back(absl::StrCat(StatusCodeName(code), "=", n));
  return absl::StrJoin(parts, separator);
}

std::string ModeText(const RunInfo& info) {
  return info.open_loop
             ? absl::StrCat("open loop (", info.poisson ? "Poisson" : "constant", " arrivals)")
             : std::string("closed loop");
}

std::string ServerText(const RunInfo& info) {
  if (!info.server_error.empty()) return absl::StrCat("unknown (", info.server_error, ")");
  std::string s = absl::StrCat(info.server_backend, " backend, version ", info.server_version);
  if (!info.server_devices.empty()) absl::StrAppend(&s, ", ", info.server_devices);
  return s;
}

std::string FormatTable(const Report& report) {
  const RunInfo& info = report.info;
  std::string out =
      absl::StrCat("gemm_loadgen: ", ModeText(info), " against ", absl::StrJoin(info.targets, ","),
                   "\n  workload: ", info.workload.Describe(), "\n  server:   ", ServerText(info),
                   "\n  times in ms\n");
  if (info.interrupted) out += "  INTERRUPTED (Ctrl-C): results cover what ran before\n";
  if (!info.stopped_early.empty()) {
    absl::StrAppend(&out, "  STOPPED EARLY: ", info.stopped_early, "\n");
  }
  absl::StrAppendFormat(&out, "%-18s %-6s %10s %9s %8s %8s %8s %9s %9s %9s %9s %9s %9s %9s %8s\n",
                        "point", "stable", "req/s", "TFLOPS", "GB/s", "in GB/s", "out GB/s", "mean",
                        "p50", "p90", "p95", "p99", "p99.9", "max", "errors");
  for (const PointResult& p : report.points) {
    const PointSummary s = Summarize(p);
    absl::StrAppendFormat(
        &out,
        "%-18s %-6s %10.1f %9.4f %8.3f %8.3f %8.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %8d\n",
        p.Label(), p.stable ? "yes" : (p.interrupted ? "int" : "no"), s.throughput_rps, s.tflops,
        s.payload_gbps, s.request_gbps, s.response_gbps, s.lat_mean_ms, s.lat_p50_ms, s.lat_p90_ms,
        s.lat_p95_ms, s.lat_p99_ms, s.lat_p999_ms, s.lat_max_ms, s.errors);
  }
  out +=
      "GB/s: operand + output bytes; in / out: those carried by the request / response "
      "messages\n";
  out += "time per request (mean): latency = client+transport + server total\n";
  absl::StrAppendFormat(&out, "%-18s %9s %9s %9s %9s %9s %9s %9s %9s %10s %9s\n", "point",
                        "latency", "client+tr", "server", "queue", "copy_in", "compute", "copy_out",
                        "launch", "completion", "req/batch");
  for (const PointResult& p : report.points) {
    const PointSummary s = Summarize(p);
    absl::StrAppendFormat(
        &out, "%-18s %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %10.3f %9.2f\n", p.Label(),
        s.lat_mean_ms, s.client_transport_ms, s.server_total_ms, s.server_queue_ms,
        s.server_copy_in_ms, s.server_compute_ms, s.server_copy_out_ms, s.server_launch_ms,
        s.server_completion_ms, s.server_batch_requests);
  }
  for (const PointResult& p : report.points) {
    const WindowStats& m = p.measured;
    if (!m.errors_by_code.empty()) {
      absl::StrAppend(&out, "errors at ", p.Label(), ": ", FormatErrors(m.errors_by_code), "\n");
    }
    if (m.verified > 0 || info.verify_fraction > 0) {
      absl::StrAppend(&out, "verify at ", p.Label(), ": ", m.verified, " responses checked, ",
                      m.mismatches, " mismatches\n");
    }
  }
  return out;
}

std::string FormatCsv(const Report& report) {
  std::string o =
      "label,mode,concurrency,target_rate,stable,interrupted,windows,duration_ms,requests_ok,"
      "requests_failed,throughput_rps,tflops,payload_gbps,request_gbps,response_gbps,lat_min_ms,"
      "lat_mean_ms,lat_p50_ms,"
      "lat_p90_ms,lat_p95_ms,lat_p99_ms,lat_p999_ms,lat_max_ms,client_transport_ms,"
      "server_total_ms,server_queue_ms,server_copy_in_ms,server_compute_ms,server_copy_out_ms,"
      "server_launch_ms,server_completion_ms,server_batch_requests,verified,mismatches,errors\n";
  auto ms = [](double v) { return absl::StrFormat("%.6f", v); };
  for (const PointResult& p : report.points) {
    const PointSummary s = Summarize(p);
    const WindowStats& m = p.measured;
    const std::vector<std::string> f = {
        p.Label(), p.open_loop ? "open" : "closed", absl::StrFormat("%g", p.concurrency),
        absl::StrFormat("%g", p.target_rate), p.stable ? "1" : "0", p.interrupted ? "1" : "0",
        absl::StrCat(p.windows), absl::StrFormat("%.3f", m.duration_s * 1e3), absl::StrCat(m.ok),
        absl::StrCat(m.failed), absl::StrFormat("%.3f", s.throughput_rps),
        absl::StrFormat("%.6f", s.tflops), absl::StrFormat("%.6f", s.payload_gbps),
        absl::StrFormat("%.6f", s.request_gbps), absl::StrFormat("%.6f", s.response_gbps),
        ms(s.lat_min_ms), ms(s.lat_mean_ms), ms(s.lat_p50_ms), ms(s.lat_p90_ms), ms(s.lat_p95_ms),
        ms(s.lat_p99_ms), ms(s.lat_p999_ms), ms(s.lat_max_ms), ms(s.client_transport_ms),
        ms(s.server_total_ms), ms(s.server_queue_ms), ms(s.server_copy_in_ms),
        ms(s.server_compute_ms), ms(s.server_copy_out_ms), ms(s.server_launch_ms),
        ms(s.server_completion_ms), absl::StrFormat("%.3f", s.server_batch_requests),
        absl::StrCat(m.verified), absl::StrCat(m.mismatches),
        // "UNAVAILABLE=3;DEADLINE_EXCEEDED=1": no commas or quotes, so no CSV quoting needed.
        FormatErrors(m.errors_by_code, ";")};
    o += absl::StrJoin(f, ",") + "\n";
  }
  return o;
}

absl::Status WriteTextFile(const std::string& path, const std::string& content) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return absl::UnavailableError(absl::StrCat("cannot open ", path, " for writing"));
  f << content;
  f.close();
  if (!f) return absl::DataLossError(absl::StrCat("writing ", path, " failed"));
  return absl::OkStatus();
}

}  // namespace gemm::loadgen
