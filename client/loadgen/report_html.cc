// The HTML report: run description, charts, results and time-breakdown tables, errors.
#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/loadgen/report.h"
#include "client/loadgen/svg_chart.h"

namespace gemm::loadgen {
namespace {

constexpr char kStyle[] =
    "<style>\n"
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:1360px}\n"
    "h1{font-size:22px;margin:0 0 8px}h2{font-size:17px;margin:22px 0 8px}\n"
    "table{border-collapse:collapse;font-size:13px}\n"
    "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\n"
    "th{background:#f2f2f2}td.l,th.l{text-align:left}\n"
    ".meta td{text-align:left}.bad{color:#b00;font-weight:bold}.ok{color:#080}\n"
    ".charts{display:flex;flex-wrap:wrap;gap:12px}.chart{border:1px solid #ddd}\n"
    "</style>\n";

std::string Num(double v, int digits = 3) {
  if (!std::isfinite(v)) return "-";
  return absl::StrFormat("%.*f", digits, v);
}

// Table cells of times in ms.
std::string MsCells(std::initializer_list<double> values) {
  std::string cells;
  for (double ms : values) absl::StrAppend(&cells, "<td>", Num(ms), "</td>");
  return cells;
}

std::string PointLevel(const PointResult& p) {
  return p.open_loop ? absl::StrFormat("%g/s", p.target_rate)
                     : absl::StrFormat("c=%g", p.concurrency);
}

// The parts of a request's mean latency, in ms, as the breakdown chart stacks them.
struct TimeParts {
  static constexpr int kCount = 5;
  static constexpr const char* kNames[kCount] = {"client+transport", "queue", "copy in", "compute",
                                                 "copy out"};
  static constexpr const char* kColors[kCount] = {"#7f7f7f", "#d62728", "#1f77b4", "#2ca02c",
                                                  "#9467bd"};
  double ms[kCount];
  explicit TimeParts(const PointSummary& s)
      : ms{std::max(0.0, s.client_transport_ms), s.server_queue_ms, s.server_copy_in_ms,
           s.server_compute_ms, s.server_copy_out_ms} {}
  double Total() const { return ms[0] + ms[1] + ms[2] + ms[3] + ms[4]; }
};

// Stacked horizontal bars of the mean time per request, one bar per point.
std::string SvgBreakdownChart(const Report& report, const std::vector<PointSummary>& sums) {
  const double left = 110, right = 170, top = 36, bar = 18, gap = 8;
  const double width = 660, pw = width - left - right;
  const double height = top + sums.size() * (bar + gap) + 44;
  double max_total = 0;
  for (const PointSummary& s : sums) max_total = std::max(max_total, TimeParts(s).Total());
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" viewBox=\"0 0 %g %g\" "
      "class=\"chart\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"%g\" height=\"%g\" fill=\"#fff\"/>\n"
      "<text x=\"%g\" y=\"22\" font-size=\"15\" font-weight=\"bold\">Time per request "
      "(mean, ms)</text>\n",
      width, height, width, height, width, height, left);
  if (!(max_total > 0)) {
    absl::StrAppendFormat(&svg,
                          "<text x=\"%g\" y=\"%g\" fill=\"#888\">no timing data</text></svg>\n",
                          left, top + 20);
    return svg;
  }
  const double step = NiceStep(max_total, 5);
  const double xmax = std::ceil(max_total / step) * step;
  const double bottom_y = top + sums.size() * (bar + gap);
  for (double v = 0; v <= xmax + step * 1e-6; v += step) {
    const double x = left + v / xmax * pw;
    absl::StrAppendFormat(
        &svg,
        "<line x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\" stroke=\"#e4e4e4\"/>"
        "<text x=\"%.1f\" y=\"%g\" text-anchor=\"middle\" fill=\"#444\">%s</text>\n",
        x, top, x, bottom_y, x, bottom_y + 16, TickLabel(v));
  }
  for (size_t i = 0; i < sums.size(); ++i) {
    const TimeParts parts(sums[i]);
    const double y = top + i * (bar + gap);
    absl::StrAppendFormat(&svg, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%s</text>\n", left - 6,
                          y + bar - 4, HtmlEscape(PointLevel(report.points[i])));
    double x = left;
    for (int j = 0; j < TimeParts::kCount; ++j) {
      const double w = parts.ms[j] / xmax * pw;
      absl::StrAppendFormat(&svg,
                            "<rect x=\"%.1f\" y=\"%g\" width=\"%.1f\" height=\"%g\" fill=\"%s\">"
                            "<title>%s: %.3f ms</title></rect>\n",
                            x, y, std::max(0.0, w), bar, TimeParts::kColors[j],
                            TimeParts::kNames[j], parts.ms[j]);
      x += w;
    }
  }
  for (int j = 0; j < TimeParts::kCount; ++j) {
    const double ly = top + 8 + 18 * j;
    absl::StrAppendFormat(&svg,
                          "<rect x=\"%g\" y=\"%g\" width=\"14\" height=\"10\" fill=\"%s\"/>"
                          "<text x=\"%g\" y=\"%g\">%s</text>\n",
                          left + pw + 12, ly - 5, TimeParts::kColors[j], left + pw + 32, ly + 4,
                          TimeParts::kNames[j]);
  }
  absl::StrAppendFormat(&svg,
                        "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">milliseconds</text>\n",
                        left + pw / 2, bottom_y + 36);
  svg += "</svg>\n";
  return svg;
}

std::string MetaTable(const RunInfo& info) {
  std::string h = "<table class=\"meta\">\n";
  auto meta = [&](const std::string& k, const std::string& v) {
    absl::StrAppend(&h, "<tr><th class=\"l\">", HtmlEscape(k), "</th><td>", HtmlEscape(v),
                    "</td></tr>\n");
  };
  meta("started (UTC)", info.started_utc);
  meta("targets", absl::StrCat(absl::StrJoin(info.targets, ", "), "  (lb ", info.lb_policy, ")"));
  meta("mode", ModeText(info));
  meta("workload", info.workload.Describe());
  meta("server", ServerText(info));
  meta("measurement",
       absl::StrFormat("warm-up %g ms, windows of %g ms until %d agree within %g%% (at most %d), "
                       "verify %g%% of responses",
                       info.warmup_s * 1e3, info.window_s * 1e3, info.stable_windows,
                       info.stability_pct, info.max_windows, 100 * info.verify_fraction));
  meta("command", info.command_line);
  meta("wall time", absl::StrFormat("%.0f ms", info.wall_s * 1e3));
  return h + "</table>\n";
}

// Latency percentiles against throughput, one series per percentile, a point per sweep point.
std::string LatencyThroughputChart(const Report& report, const std::vector<PointSummary>& sums) {
  std::vector<Series> lat_tp;
  const char* names[] = {"p50", "p90", "p99", "p99.9"};
  for (int j = 0; j < 4; ++j) {
    Series s{.name = names[j], .color = kPalette[j]};
    for (size_t i = 0; i < sums.size(); ++i) {
      const double y[] = {sums[i].lat_p50_ms, sums[i].lat_p90_ms, sums[i].lat_p99_ms,
                          sums[i].lat_p999_ms};
      if (report.points[i].measured.ok == 0) continue;
      s.points.emplace_back(sums[i].throughput_rps, y[j]);
      s.point_labels.push_back(j == 0 ? PointLevel(report.points[i]) : "");
    }
    lat_tp.push_back(std::move(s));
  }
  return SvgLineChart("Latency vs throughput", {.label = "throughput (successful requests/s)"},
                      {.label = "latency (ms)"}, lat_tp);
}

// Latency by percentile, one series per sweep point.
std::string PercentileChart(const Report& report, const std::vector<PointSummary>& sums) {
  Axis x{.label = "percentile", .log = true, .min = 1, .max = 1e5};
  // NOTE: x = 1/(1-q) on a log axis spreads the tail (90, 99, 99.9, 99.99) evenly; max is
  // plotted at 99.999.
  x.ticks = {{1, "0"}, {10, "90"}, {100, "99"}, {1e3, "99.9"}, {1e4, "99.99"}, {1e5, "max"}};
  std::vector<Series> pct;
  double ymin = INFINITY, ymax = 0;
  for (size_t i = 0; i < sums.size(); ++i) {
    Series s{.name = PointLevel(report.points[i]), .color = kPalette[i % 10]};
    for (auto [q, ms] : sums[i].percentile_curve) {
      s.points.emplace_back(q >= 100 ? 1e5 : 1.0 / (1.0 - q / 100.0), ms);
      if (ms > 0) ymin = std::min(ymin, ms);
      ymax = std::max(ymax, ms);
    }
    pct.push_back(std::move(s));
  }
  const Axis y{.label = "latency (ms)", .log = std::isfinite(ymin) && ymax / ymin > 20};
  return SvgLineChart("Latency by percentile", x, y, pct);
}

std::string ResultsTable(const Report& report, const std::vector<PointSummary>& sums) {
  std::string h =
      "<h2>Results (times in ms)</h2>\n<table>\n<tr><th class=\"l\">point</th><th>stable</th>"
      "<th>windows</th><th>ok</th><th>errors</th><th>req/s</th><th>TFLOPS</th><th>GB/s</th>"
      "<th>in GB/s</th><th>out GB/s</th>"
      "<th>mean</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>p99.9</th><th>max</th>"
      "<th>verified</th><th>mismatches</th></tr>\n";
  for (size_t i = 0; i < sums.size(); ++i) {
    const PointResult& p = report.points[i];
    const PointSummary& s = sums[i];
    absl::StrAppend(&h, "<tr><td class=\"l\">", HtmlEscape(p.Label()), "</td><td>",
                    p.stable ? "<span class=\"ok\">yes</span>" : "<span class=\"bad\">no</span>",
                    "</td><td>", p.windows, "</td><td>", p.measured.ok, "</td><td",
                    p.measured.failed ? " class=\"bad\"" : "", ">", p.measured.failed, "</td><td>",
                    Num(s.throughput_rps, 1), "</td><td>", Num(s.tflops, 4), "</td><td>",
                    Num(s.payload_gbps, 3), "</td><td>", Num(s.request_gbps, 3), "</td><td>",
                    Num(s.response_gbps, 3), "</td>",
                    MsCells({s.lat_mean_ms, s.lat_p50_ms, s.lat_p90_ms, s.lat_p95_ms, s.lat_p99_ms,
                             s.lat_p999_ms, s.lat_max_ms}));
    absl::StrAppend(&h, "<td>", p.measured.verified, "</td><td",
                    p.measured.mismatches ? " class=\"bad\"" : "", ">", p.measured.mismatches,
                    "</td></tr>\n");
  }
  return h + "</table>\n";
}

std::string BreakdownTable(const Report& report, const std::vector<PointSummary>& sums) {
  std::string h =
      "<h2>Time per request (mean ms; the server's part from GemmResponse.timing)</h2>\n"
      "<table>\n<tr><th class=\"l\">point</th><th>latency</th><th>client+transport</th>"
      "<th>server total</th><th>queue</th><th>copy in</th><th>compute</th><th>copy out</th>"
      "<th>requests per batch</th><th class=\"l\">kernels</th></tr>\n";
  for (size_t i = 0; i < sums.size(); ++i) {
    const PointResult& p = report.points[i];
    const PointSummary& s = sums[i];
    std::vector<std::string> kernels;
    for (const auto& [name, n] : p.measured.kernels) {
      kernels.push_back(absl::StrCat(name, " (", n, ")"));
    }
    absl::StrAppend(
        &h, "<tr><td class=\"l\">", HtmlEscape(p.Label()), "</td>",
        MsCells({s.lat_mean_ms, s.client_transport_ms, s.server_total_ms, s.server_queue_ms,
                 s.server_copy_in_ms, s.server_compute_ms, s.server_copy_out_ms}),
        "<td>", Num(s.server_batch_requests, 2), "</td><td class=\"l\">",
        HtmlEscape(absl::StrJoin(kernels, ", ")), "</td></tr>\n");
  }
  return h + "</table>\n";
}

std::string ErrorsTable(const Report& report) {
  bool any_errors = false;
  for (const PointResult& p : report.points) any_errors |= !p.measured.errors_by_code.empty();
  if (!any_errors) return "";
  std::string h =
      "<h2>Errors by status code</h2>\n<table>\n<tr><th class=\"l\">point</th>"
      "<th class=\"l\">code</th><th>count</th></tr>\n";
  for (const PointResult& p : report.points) {
    for (const auto& [code, n] : p.measured.errors_by_code) {
      absl::StrAppend(&h, "<tr><td class=\"l\">", HtmlEscape(p.Label()), "</td><td class=\"l\">",
                      HtmlEscape(StatusCodeName(code)), "</td><td>", n, "</td></tr>\n");
    }
  }
  return h + "</table>\n";
}

}  // namespace

std::string FormatHtml(const Report& report) {
  const RunInfo& info = report.info;
  std::vector<PointSummary> sums;
  for (const PointResult& p : report.points) sums.push_back(Summarize(p));
  std::string h = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<title>gemm_loadgen report</title>\n",
      kStyle, "</head><body>\n<h1>gemm_loadgen report</h1>\n");
  if (info.interrupted) {
    h += "<p class=\"bad\">Interrupted (Ctrl-C): results cover what ran before.</p>\n";
  }
  if (!info.stopped_early.empty()) {
    absl::StrAppend(&h, "<p class=\"bad\">Stopped early: ", HtmlEscape(info.stopped_early),
                    "</p>\n");
  }
  h += MetaTable(info);
  absl::StrAppend(&h, "<h2>Charts</h2>\n<div class=\"charts\">\n",
                  LatencyThroughputChart(report, sums), PercentileChart(report, sums),
                  SvgBreakdownChart(report, sums), "</div>\n");
  h += ResultsTable(report, sums);
  h += BreakdownTable(report, sums);
  h += ErrorsTable(report);
  h += "<p style=\"color:#777;font-size:12px\">Latency is measured from each request's intended "
       "send time (open loop: its scheduled arrival, so queueing in the client counts). "
       "Client+transport is the latency less the server's own total. Percentiles are "
       "nearest-rank over the measured windows, resolved to 0.1%.</p>\n";
  h += "</body></html>\n";
  return h;
}

}  // namespace gemm::loadgen
