// Report writers: text table, JSON, CSV and HTML with inline SVG charts.
#include "client/loadgen/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gemm::loadgen {
namespace {

constexpr double kCurvePercentiles[] = {0,  10,   25,   50,    75,    90, 95,
                                        99, 99.5, 99.9, 99.95, 99.99, 100};

// ---------------------------------------------------------------- JSON helpers

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

// ---------------------------------------------------------------- HTML helpers

std::string Html(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Num(double v, int digits = 3) {
  if (!std::isfinite(v)) return "-";
  return absl::StrFormat("%.*f", digits, v);
}

// A "nice" step (1, 2 or 5 times a power of ten) giving about `target` intervals over `range`.
double NiceStep(double range, int target) {
  if (!(range > 0)) return 1;
  const double raw = range / target;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * p) return m * p;
  }
  return 10 * p;
}

std::string TickLabel(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 1e6) return absl::StrFormat("%gM", v / 1e6);
  if (a >= 1e4) return absl::StrFormat("%gk", v / 1e3);
  return absl::StrFormat("%g", v);
}

struct Series {
  std::string name;
  std::string color;
  std::vector<std::pair<double, double>> points;  // (x, y) in data units
  std::vector<std::string> point_labels;          // optional, one per point
};

struct Axis {
  std::string label;
  bool log = false;
  // Explicit ticks (value, label); empty: automatic.
  std::vector<std::pair<double, std::string>> ticks;
  double min = NAN, max = NAN;  // explicit range; NaN: from the data
};

// An SVG line chart with markers, axes, grid and a legend.
std::string SvgLineChart(const std::string& title, const Axis& x_axis, const Axis& y_axis,
                         const std::vector<Series>& series) {
  const double width = 660, height = 400, left = 70, right = 170, top = 36, bottom = 54;
  const double pw = width - left - right, ph = height - top - bottom;
  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  for (const Series& s : series) {
    for (auto [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      if (y_axis.log && y <= 0) continue;
      xmin = std::min(xmin, x);
      xmax = std::max(xmax, x);
      ymin = std::min(ymin, y);
      ymax = std::max(ymax, y);
    }
  }
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" viewBox=\"0 0 %g %g\" "
      "class=\"chart\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"%g\" height=\"%g\" fill=\"#fff\"/>\n"
      "<text x=\"%g\" y=\"22\" font-size=\"15\" font-weight=\"bold\">%s</text>\n",
      width, height, width, height, width, height, left, Html(title));
  if (!std::isfinite(xmin)) {
    absl::StrAppendFormat(&svg, "<text x=\"%g\" y=\"%g\" fill=\"#888\">no data</text></svg>\n",
                          left + pw / 2 - 30, top + ph / 2);
    return svg;
  }
  if (!std::isnan(x_axis.min)) xmin = x_axis.min;
  if (!std::isnan(x_axis.max)) xmax = x_axis.max;
  if (!std::isnan(y_axis.min)) ymin = y_axis.min;
  if (!std::isnan(y_axis.max)) ymax = y_axis.max;
  // Ranges: linear axes start at 0; log axes span whole decades around the data.
  auto fix_range = [](double& lo, double& hi, bool log) {
    if (log) {
      lo = std::pow(10.0, std::floor(std::log10(lo)));
      hi = std::pow(10.0, std::ceil(std::log10(hi)));
      if (hi <= lo) hi = lo * 10;
    } else {
      lo = std::min(0.0, lo);
      if (hi <= lo) hi = lo + 1;
      const double step = NiceStep(hi - lo, 5);
      hi = std::ceil(hi / step) * step;
    }
  };
  if (x_axis.ticks.empty()) fix_range(xmin, xmax, x_axis.log);
  if (y_axis.ticks.empty()) fix_range(ymin, ymax, y_axis.log);
  if (xmax <= xmin) xmax = xmin + 1;
  if (ymax <= ymin) ymax = ymin + 1;
  auto tx = [&](double x) {
    const double f =
        x_axis.log ? (std::log10(x) - std::log10(xmin)) / (std::log10(xmax) - std::log10(xmin))
                   : (x - xmin) / (xmax - xmin);
    return left + f * pw;
  };
  auto ty = [&](double y) {
    const double f =
        y_axis.log ? (std::log10(y) - std::log10(ymin)) / (std::log10(ymax) - std::log10(ymin))
                   : (y - ymin) / (ymax - ymin);
    return top + ph - f * ph;
  };
  auto auto_ticks = [](double lo, double hi, bool log) {
    std::vector<std::pair<double, std::string>> t;
    if (log) {
      for (double d = lo; d <= hi * 1.0001; d *= 10) {
        for (double m : {1.0, 2.0, 5.0}) {
          if (d * m <= hi * 1.0001) t.emplace_back(d * m, TickLabel(d * m));
        }
      }
    } else {
      const double step = NiceStep(hi - lo, 5);
      for (double v = lo; v <= hi + step * 1e-6; v += step) t.emplace_back(v, TickLabel(v));
    }
    return t;
  };
  const auto xt = x_axis.ticks.empty() ? auto_ticks(xmin, xmax, x_axis.log) : x_axis.ticks;
  const auto yt = y_axis.ticks.empty() ? auto_ticks(ymin, ymax, y_axis.log) : y_axis.ticks;
  for (const auto& [v, label] : xt) {
    const double x = tx(v);
    absl::StrAppendFormat(
        &svg,
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#444\">%s</text>\n",
        x, top, x, top + ph, x, top + ph + 16, Html(label));
  }
  for (const auto& [v, label] : yt) {
    const double y = ty(v);
    absl::StrAppendFormat(
        &svg,
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#444\">%s</text>\n",
        left, y, left + pw, y, left - 6, y + 4, Html(label));
  }
  absl::StrAppendFormat(&svg,
                        "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" "
                        "stroke=\"#888\"/>\n"
                        "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%s</text>\n"
                        "<text x=\"16\" y=\"%g\" text-anchor=\"middle\" "
                        "transform=\"rotate(-90 16 %g)\">%s</text>\n",
                        left, top, pw, ph, left + pw / 2, height - 12, Html(x_axis.label),
                        top + ph / 2, top + ph / 2, Html(y_axis.label));
  int legend_row = 0;
  std::vector<std::pair<double, double>> labels;  // positions of point labels drawn
  for (const Series& s : series) {
    std::string path;
    for (size_t i = 0; i < s.points.size(); ++i) {
      const auto [x, y] = s.points[i];
      if (!std::isfinite(x) || !std::isfinite(y) || (y_axis.log && y <= 0) ||
          (x_axis.log && x <= 0)) {
        continue;
      }
      absl::StrAppendFormat(&path, "%s%.1f,%.1f ", path.empty() ? "" : "", tx(x), ty(y));
    }
    if (!path.empty()) {
      absl::StrAppendFormat(&svg,
                            "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" "
                            "stroke-width=\"2\"/>\n",
                            path, s.color);
    }
    for (size_t i = 0; i < s.points.size(); ++i) {
      const auto [x, y] = s.points[i];
      if (!std::isfinite(x) || !std::isfinite(y) || (y_axis.log && y <= 0) ||
          (x_axis.log && x <= 0)) {
        continue;
      }
      absl::StrAppendFormat(&svg,
                            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\">"
                            "<title>%s: %s</title></circle>\n",
                            tx(x), ty(y), s.color, Html(s.name),
                            Html(absl::StrFormat("(%g, %g)", x, y)));
      // Labels that would overlap an earlier one are left out (the tooltip still has the point).
      const double lx = tx(x), ly = ty(y) + 15;
      const bool overlaps = std::any_of(labels.begin(), labels.end(), [&](const auto& l) {
        return std::fabs(l.first - lx) < 34 && std::fabs(l.second - ly) < 12;
      });
      if (i < s.point_labels.size() && !s.point_labels[i].empty() && !overlaps) {
        labels.emplace_back(lx, ly);
        absl::StrAppendFormat(&svg,
                              "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#555\" "
                              "text-anchor=\"middle\">%s</text>\n",
                              tx(x), ty(y) + 15, Html(s.point_labels[i]));
      }
    }
    const double ly = top + 8 + 18 * legend_row++;
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"%s\" "
                          "stroke-width=\"3\"/><text x=\"%g\" y=\"%g\">%s</text>\n",
                          left + pw + 12, ly, left + pw + 34, ly, s.color, left + pw + 40, ly + 4,
                          Html(s.name));
  }
  svg += "</svg>\n";
  return svg;
}

const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string PointLevel(const PointResult& p) {
  return p.open_loop ? absl::StrFormat("%g/s", p.target_rate)
                     : absl::StrFormat("c=%g", p.concurrency);
}

// Stacked horizontal bars of the server's mean time per request, one bar per point.
std::string SvgBreakdownChart(const Report& report, const std::vector<PointSummary>& sums) {
  const double left = 110, right = 170, top = 36, bar = 18, gap = 8;
  const double width = 660, pw = width - left - right;
  const double height = top + sums.size() * (bar + gap) + 44;
  double max_total = 0;
  for (const PointSummary& s : sums) {
    max_total = std::max(max_total, s.server_queue_us + s.server_copy_in_us + s.server_compute_us +
                                        s.server_copy_out_us);
  }
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" viewBox=\"0 0 %g %g\" "
      "class=\"chart\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"%g\" height=\"%g\" fill=\"#fff\"/>\n"
      "<text x=\"%g\" y=\"22\" font-size=\"15\" font-weight=\"bold\">Server time per request "
      "(mean, us)</text>\n",
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
  const char* names[] = {"queue", "copy in", "compute", "copy out"};
  const char* colors[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd"};
  for (size_t i = 0; i < sums.size(); ++i) {
    const PointSummary& s = sums[i];
    const double parts[] = {s.server_queue_us, s.server_copy_in_us, s.server_compute_us,
                            s.server_copy_out_us};
    const double y = top + i * (bar + gap);
    absl::StrAppendFormat(&svg, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%s</text>\n", left - 6,
                          y + bar - 4, Html(PointLevel(report.points[i])));
    double x = left;
    for (int j = 0; j < 4; ++j) {
      const double w = parts[j] / xmax * pw;
      absl::StrAppendFormat(&svg,
                            "<rect x=\"%.1f\" y=\"%g\" width=\"%.1f\" height=\"%g\" fill=\"%s\">"
                            "<title>%s: %.1f us</title></rect>\n",
                            x, y, std::max(0.0, w), bar, colors[j], names[j], parts[j]);
      x += w;
    }
  }
  for (int j = 0; j < 4; ++j) {
    const double ly = top + 8 + 18 * j;
    absl::StrAppendFormat(&svg,
                          "<rect x=\"%g\" y=\"%g\" width=\"14\" height=\"10\" fill=\"%s\"/>"
                          "<text x=\"%g\" y=\"%g\">%s</text>\n",
                          left + pw + 12, ly - 5, colors[j], left + pw + 32, ly + 4, names[j]);
  }
  absl::StrAppendFormat(&svg,
                        "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">microseconds</text>\n",
                        left + pw / 2, bottom_y + 36);
  svg += "</svg>\n";
  return svg;
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

}  // namespace

PointSummary Summarize(const PointResult& p) {
  PointSummary s;
  const WindowStats& m = p.measured;
  const double d = m.duration_s;
  if (d > 0) {
    s.throughput_rps = m.ok / d;
    s.tflops = m.flops / d / 1e12;
    s.payload_gbps = m.payload_bytes / d / 1e9;
  }
  const Histogram& h = m.latency_ns;
  s.lat_min_ms = h.min() / 1e6;
  s.lat_mean_ms = h.mean() / 1e6;
  s.lat_p50_ms = h.Percentile(50) / 1e6;
  s.lat_p90_ms = h.Percentile(90) / 1e6;
  s.lat_p99_ms = h.Percentile(99) / 1e6;
  s.lat_p999_ms = h.Percentile(99.9) / 1e6;
  s.lat_max_ms = h.max() / 1e6;
  s.errors = m.failed;
  if (m.server.responses > 0) {
    const double n = static_cast<double>(m.server.responses);
    s.server_queue_us = m.server.queue_us / n;
    if (m.server.gpu_timed > 0) {  // over the responses whose GPU phases were timed
      const double g = static_cast<double>(m.server.gpu_timed);
      s.server_copy_in_us = m.server.copy_in_us / g;
      s.server_compute_us = m.server.compute_us / g;
      s.server_copy_out_us = m.server.copy_out_us / g;
    }
    s.server_total_us = m.server.total_us / n;
    s.server_launch_us = m.server.launch_us / n;
    s.server_completion_us = m.server.completion_us / n;
    s.server_batch_requests = m.server.batch_requests / n;
  }
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

std::string FormatTable(const Report& report) {
  const RunInfo& info = report.info;
  std::string out = absl::StrCat(
      "gemm_loadgen: ", ModeText(info), " against ", absl::StrJoin(info.targets, ","),
      "\n  workload: ", info.workload.Describe(), "\n  server:   ", ServerText(info), "\n");
  if (info.interrupted) out += "  INTERRUPTED (Ctrl-C): results cover what ran before\n";
  absl::StrAppendFormat(&out, "%-18s %-6s %10s %9s %8s %9s %9s %9s %9s %9s %9s %8s\n", "point",
                        "stable", "req/s", "TFLOPS", "GB/s", "mean ms", "p50 ms", "p90 ms",
                        "p99 ms", "p99.9 ms", "max ms", "errors");
  for (const PointResult& p : report.points) {
    const PointSummary s = Summarize(p);
    absl::StrAppendFormat(&out,
                          "%-18s %-6s %10.1f %9.4f %8.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %8d\n",
                          p.Label(), p.stable ? "yes" : (p.interrupted ? "int" : "no"),
                          s.throughput_rps, s.tflops, s.payload_gbps, s.lat_mean_ms, s.lat_p50_ms,
                          s.lat_p90_ms, s.lat_p99_ms, s.lat_p999_ms, s.lat_max_ms, s.errors);
  }
  out += "server time per request (mean us):\n";
  absl::StrAppendFormat(&out, "%-18s %9s %9s %9s %9s %9s %9s %9s %10s\n", "point", "queue",
                        "copy_in", "compute", "copy_out", "total", "batch", "launch", "completion");
  for (const PointResult& p : report.points) {
    const PointSummary s = Summarize(p);
    absl::StrAppendFormat(&out, "%-18s %9.1f %9.1f %9.1f %9.1f %9.1f %9.2f %9.1f %10.1f\n",
                          p.Label(), s.server_queue_us, s.server_copy_in_us, s.server_compute_us,
                          s.server_copy_out_us, s.server_total_us, s.server_batch_requests,
                          s.server_launch_us, s.server_completion_us);
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

std::string FormatJson(const Report& report) {
  const RunInfo& info = report.info;
  const WorkloadSpec& w = info.workload;
  std::string o = "{\n";
  absl::StrAppend(&o, "  \"tool\": \"gemm_loadgen\",\n  \"schema_version\": 1,\n");
  absl::StrAppend(&o, "  \"started_utc\": ", JsonString(info.started_utc), ",\n");
  absl::StrAppend(&o, "  \"command_line\": ", JsonString(info.command_line), ",\n");
  std::vector<std::string> targets;
  for (const auto& t : info.targets) targets.push_back(JsonString(t));
  absl::StrAppend(&o, "  \"targets\": [", absl::StrJoin(targets, ", "), "],\n");
  absl::StrAppend(&o, "  \"lb_policy\": ", JsonString(info.lb_policy), ",\n");
  absl::StrAppend(&o, "  \"mode\": ", JsonString(info.open_loop ? "open" : "closed"), ",\n");
  absl::StrAppend(&o, "  \"arrival\": ",
                  JsonString(info.open_loop ? (info.poisson ? "poisson" : "constant") : ""), ",\n");
  std::vector<std::string> shapes;
  for (const ShapeSpec& s : w.shapes) {
    shapes.push_back(absl::StrCat("{\"m\": ", s.m, ", \"n\": ", s.n, ", \"k\": ", s.k,
                                  ", \"weight\": ", JsonNumber(s.weight), "}"));
  }
  absl::StrAppend(
      &o, "  \"workload\": {\"shapes\": [", absl::StrJoin(shapes, ", "),
      "], \"b\": ", JsonString(w.b_source == BSource::kInline ? "inline" : "resident"),
      ", \"b_layout\": ", JsonString(w.b_nk ? "nk" : "kn"),
      ", \"output_dtype\": ", JsonString(w.output_fp32 ? "fp32" : "bf16"),
      ", \"priority\": ", JsonString(w.priority_high ? "high" : "normal"),
      ", \"deadline_us\": ", w.deadline_us,
      ", \"rpc\": ", JsonString(w.packed ? "packed" : (w.streaming ? "stream" : "unary")),
      ", \"channels\": ", w.channels, ", \"streams_per_channel\": ", w.streams_per_channel,
      ", \"client_api\": ", JsonString(w.sync_callers ? "sync" : "callback"),
      ", \"kernel\": ", JsonString(w.kernel), ", \"experts\": ", w.experts,
      ", \"experts_per_request\": ", w.experts_per_request, "},\n");
  absl::StrAppend(&o, "  \"measurement\": {\"warmup_s\": ", JsonNumber(info.warmup_s),
                  ", \"window_s\": ", JsonNumber(info.window_s),
                  ", \"stable_windows\": ", info.stable_windows,
                  ", \"stability_pct\": ", JsonNumber(info.stability_pct),
                  ", \"max_windows\": ", info.max_windows,
                  ", \"verify_fraction\": ", JsonNumber(info.verify_fraction), "},\n");
  absl::StrAppend(&o, "  \"server\": {\"version\": ", JsonString(info.server_version),
                  ", \"backend\": ", JsonString(info.server_backend),
                  ", \"devices\": ", JsonString(info.server_devices),
                  ", \"error\": ", JsonString(info.server_error), "},\n");
  absl::StrAppend(&o, "  \"interrupted\": ", JsonBool(info.interrupted), ",\n");
  absl::StrAppend(&o, "  \"wall_s\": ", JsonNumber(info.wall_s), ",\n");
  o += "  \"points\": [";
  for (size_t i = 0; i < report.points.size(); ++i) {
    const PointResult& p = report.points[i];
    const PointSummary s = Summarize(p);
    const WindowStats& m = p.measured;
    o += i ? ",\n    {" : "\n    {";
    absl::StrAppend(&o, "\"label\": ", JsonString(p.Label()));
    absl::StrAppend(&o, ", \"concurrency\": ", JsonNumber(p.concurrency),
                    ", \"target_rate\": ", JsonNumber(p.target_rate));
    absl::StrAppend(&o, ", \"stable\": ", JsonBool(p.stable),
                    ", \"interrupted\": ", JsonBool(p.interrupted), ", \"windows\": ", p.windows);
    std::vector<std::string> wt, wl;
    for (double v : p.window_throughput) wt.push_back(JsonNumber(v));
    for (double v : p.window_latency_ms) wl.push_back(JsonNumber(v));
    absl::StrAppend(&o, ", \"window_throughput_rps\": [", absl::StrJoin(wt, ", "), "]",
                    ", \"window_latency_ms\": [", absl::StrJoin(wl, ", "), "]");
    absl::StrAppend(
        &o, ",\n     \"duration_s\": ", JsonNumber(m.duration_s), ", \"issued\": ", p.issued,
        ", \"stream_messages\": ", p.stream_messages, ", \"stream_requests\": ", p.stream_requests,
        ", \"requests_ok\": ", m.ok, ", \"requests_failed\": ", m.failed,
        ", \"throughput_rps\": ", JsonNumber(s.throughput_rps),
        ", \"tflops\": ", JsonNumber(s.tflops), ", \"payload_gbps\": ", JsonNumber(s.payload_gbps));
    absl::StrAppend(
        &o, ",\n     \"latency_ms\": {\"min\": ", JsonNumber(s.lat_min_ms),
        ", \"mean\": ", JsonNumber(s.lat_mean_ms), ", \"p50\": ", JsonNumber(s.lat_p50_ms),
        ", \"p90\": ", JsonNumber(s.lat_p90_ms), ", \"p99\": ", JsonNumber(s.lat_p99_ms),
        ", \"p999\": ", JsonNumber(s.lat_p999_ms), ", \"max\": ", JsonNumber(s.lat_max_ms), "}");
    std::vector<std::string> curve;
    for (auto [q, ms] : s.percentile_curve) {
      curve.push_back(absl::StrCat("[", JsonNumber(q), ", ", JsonNumber(ms), "]"));
    }
    absl::StrAppend(&o, ",\n     \"latency_percentiles_ms\": [", absl::StrJoin(curve, ", "), "]");
    std::vector<std::string> errs;
    for (const auto& [code, n] : m.errors_by_code) {
      errs.push_back(absl::StrCat(JsonString(StatusCodeName(code)), ": ", n));
    }
    absl::StrAppend(&o, ",\n     \"errors\": {", absl::StrJoin(errs, ", "), "}");
    absl::StrAppend(&o, ",\n     \"server_timing_us\": {\"responses\": ", m.server.responses,
                    ", \"queue\": ", JsonNumber(s.server_queue_us),
                    ", \"copy_in\": ", JsonNumber(s.server_copy_in_us),
                    ", \"compute\": ", JsonNumber(s.server_compute_us),
                    ", \"copy_out\": ", JsonNumber(s.server_copy_out_us),
                    ", \"total\": ", JsonNumber(s.server_total_us),
                    ", \"batch_requests\": ", JsonNumber(s.server_batch_requests),
                    ", \"launch\": ", JsonNumber(s.server_launch_us),
                    ", \"completion\": ", JsonNumber(s.server_completion_us), "}");
    std::vector<std::string> kernels;
    for (const auto& [name, n] : m.kernels)
      kernels.push_back(absl::StrCat(JsonString(name), ": ", n));
    absl::StrAppend(&o, ",\n     \"kernels\": {", absl::StrJoin(kernels, ", "), "}");
    absl::StrAppend(&o, ",\n     \"verify\": {\"checked\": ", m.verified,
                    ", \"mismatches\": ", m.mismatches, "}}");
  }
  o += "\n  ]\n}\n";
  return o;
}

std::string FormatCsv(const Report& report) {
  std::string o =
      "label,mode,concurrency,target_rate,stable,interrupted,windows,duration_s,requests_ok,"
      "requests_failed,throughput_rps,tflops,payload_gbps,lat_min_ms,lat_mean_ms,lat_p50_ms,"
      "lat_p90_ms,lat_p99_ms,lat_p999_ms,lat_max_ms,server_queue_us,server_copy_in_us,"
      "server_compute_us,server_copy_out_us,server_total_us,server_batch_requests,verified,"
      "mismatches,errors\n";
  for (const PointResult& p : report.points) {
    const PointSummary s = Summarize(p);
    const WindowStats& m = p.measured;
    std::vector<std::string> f = {
        p.Label(), p.open_loop ? "open" : "closed", absl::StrFormat("%g", p.concurrency),
        absl::StrFormat("%g", p.target_rate), p.stable ? "1" : "0", p.interrupted ? "1" : "0",
        absl::StrCat(p.windows), absl::StrFormat("%.6f", m.duration_s), absl::StrCat(m.ok),
        absl::StrCat(m.failed), absl::StrFormat("%.3f", s.throughput_rps),
        absl::StrFormat("%.6f", s.tflops), absl::StrFormat("%.6f", s.payload_gbps),
        absl::StrFormat("%.6f", s.lat_min_ms), absl::StrFormat("%.6f", s.lat_mean_ms),
        absl::StrFormat("%.6f", s.lat_p50_ms), absl::StrFormat("%.6f", s.lat_p90_ms),
        absl::StrFormat("%.6f", s.lat_p99_ms), absl::StrFormat("%.6f", s.lat_p999_ms),
        absl::StrFormat("%.6f", s.lat_max_ms), absl::StrFormat("%.3f", s.server_queue_us),
        absl::StrFormat("%.3f", s.server_copy_in_us), absl::StrFormat("%.3f", s.server_compute_us),
        absl::StrFormat("%.3f", s.server_copy_out_us), absl::StrFormat("%.3f", s.server_total_us),
        absl::StrFormat("%.3f", s.server_batch_requests), absl::StrCat(m.verified),
        absl::StrCat(m.mismatches),
        // "UNAVAILABLE=3;DEADLINE_EXCEEDED=1": no commas or quotes, so no CSV quoting needed.
        FormatErrors(m.errors_by_code, ";")};
    o += absl::StrJoin(f, ",") + "\n";
  }
  return o;
}

std::string FormatHtml(const Report& report) {
  const RunInfo& info = report.info;
  std::vector<PointSummary> sums;
  for (const PointResult& p : report.points) sums.push_back(Summarize(p));

  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<title>gemm_loadgen report</title>\n<style>\n"
      "body{font-family:sans-serif;margin:24px;color:#222;max-width:1360px}\n"
      "h1{font-size:22px;margin:0 0 8px}h2{font-size:17px;margin:22px 0 8px}\n"
      "table{border-collapse:collapse;font-size:13px}\n"
      "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\n"
      "th{background:#f2f2f2}td.l,th.l{text-align:left}\n"
      ".meta td{text-align:left}.bad{color:#b00;font-weight:bold}.ok{color:#080}\n"
      ".charts{display:flex;flex-wrap:wrap;gap:12px}.chart{border:1px solid #ddd}\n"
      "</style></head><body>\n<h1>gemm_loadgen report</h1>\n";
  if (info.interrupted) {
    h += "<p class=\"bad\">Interrupted (Ctrl-C): results cover what ran before.</p>\n";
  }
  h += "<table class=\"meta\">\n";
  auto meta = [&](const std::string& k, const std::string& v) {
    absl::StrAppend(&h, "<tr><th class=\"l\">", Html(k), "</th><td>", Html(v), "</td></tr>\n");
  };
  meta("started (UTC)", info.started_utc);
  meta("targets", absl::StrCat(absl::StrJoin(info.targets, ", "), "  (lb ", info.lb_policy, ")"));
  meta("mode", ModeText(info));
  meta("workload", info.workload.Describe());
  meta("server", ServerText(info));
  meta("measurement",
       absl::StrFormat("warm-up %gs, windows of %gs until %d agree within %g%% (at most %d), "
                       "verify %g%% of responses",
                       info.warmup_s, info.window_s, info.stable_windows, info.stability_pct,
                       info.max_windows, 100 * info.verify_fraction));
  meta("command", info.command_line);
  meta("wall time", absl::StrFormat("%.1f s", info.wall_s));
  h += "</table>\n";

  // Charts.
  std::vector<Series> lat_tp;
  const char* names[] = {"p50", "p90", "p99", "p99.9"};
  for (int j = 0; j < 4; ++j) {
    Series s;
    s.name = names[j];
    s.color = kPalette[j];
    for (size_t i = 0; i < sums.size(); ++i) {
      const double y[] = {sums[i].lat_p50_ms, sums[i].lat_p90_ms, sums[i].lat_p99_ms,
                          sums[i].lat_p999_ms};
      if (report.points[i].measured.ok == 0) continue;
      s.points.emplace_back(sums[i].throughput_rps, y[j]);
      s.point_labels.push_back(j == 0 ? PointLevel(report.points[i]) : "");
    }
    lat_tp.push_back(std::move(s));
  }
  Axis tp_x, tp_y;
  tp_x.label = "throughput (successful requests/s)";
  tp_y.label = "latency (ms)";

  std::vector<Series> pct;
  Axis pct_x;
  pct_x.label = "percentile";
  pct_x.log = true;
  // NOTE: x = 1/(1-q) on a log axis spreads the tail (90, 99, 99.9, 99.99) evenly; max is
  // plotted at 99.999.
  for (auto [v, label] : std::vector<std::pair<double, std::string>>{
           {1, "0"}, {10, "90"}, {100, "99"}, {1e3, "99.9"}, {1e4, "99.99"}, {1e5, "max"}}) {
    pct_x.ticks.emplace_back(v, label);
  }
  pct_x.min = 1;
  pct_x.max = 1e5;
  double ymin = INFINITY, ymax = 0;
  for (size_t i = 0; i < sums.size(); ++i) {
    Series s;
    s.name = PointLevel(report.points[i]);
    s.color = kPalette[i % 10];
    for (auto [q, ms] : sums[i].percentile_curve) {
      const double x = q >= 100 ? 1e5 : 1.0 / (1.0 - q / 100.0);
      s.points.emplace_back(x, ms);
      if (ms > 0) ymin = std::min(ymin, ms);
      ymax = std::max(ymax, ms);
    }
    pct.push_back(std::move(s));
  }
  Axis pct_y;
  pct_y.label = "latency (ms)";
  pct_y.log = std::isfinite(ymin) && ymax / ymin > 20;

  h += "<h2>Charts</h2>\n<div class=\"charts\">\n";
  h += SvgLineChart("Latency vs throughput", tp_x, tp_y, lat_tp);
  h += SvgLineChart("Latency by percentile", pct_x, pct_y, pct);
  h += SvgBreakdownChart(report, sums);
  h += "</div>\n";

  // Results table.
  h += "<h2>Results</h2>\n<table>\n<tr><th class=\"l\">point</th><th>stable</th><th>windows</th>"
       "<th>ok</th><th>errors</th><th>req/s</th><th>TFLOPS</th><th>GB/s</th><th>mean ms</th>"
       "<th>p50 ms</th><th>p90 ms</th><th>p99 ms</th><th>p99.9 ms</th><th>max ms</th>"
       "<th>verified</th><th>mismatches</th></tr>\n";
  for (size_t i = 0; i < sums.size(); ++i) {
    const PointResult& p = report.points[i];
    const PointSummary& s = sums[i];
    absl::StrAppend(&h, "<tr><td class=\"l\">", Html(p.Label()), "</td><td>",
                    p.stable ? "<span class=\"ok\">yes</span>" : "<span class=\"bad\">no</span>",
                    "</td><td>", p.windows, "</td><td>", p.measured.ok, "</td><td",
                    p.measured.failed ? " class=\"bad\"" : "", ">", p.measured.failed, "</td><td>",
                    Num(s.throughput_rps, 1), "</td><td>", Num(s.tflops, 4), "</td><td>",
                    Num(s.payload_gbps, 3), "</td><td>", Num(s.lat_mean_ms), "</td><td>",
                    Num(s.lat_p50_ms), "</td><td>", Num(s.lat_p90_ms), "</td><td>",
                    Num(s.lat_p99_ms), "</td><td>", Num(s.lat_p999_ms), "</td><td>",
                    Num(s.lat_max_ms), "</td><td>", p.measured.verified, "</td><td",
                    p.measured.mismatches ? " class=\"bad\"" : "", ">", p.measured.mismatches,
                    "</td></tr>\n");
  }
  h += "</table>\n";

  h += "<h2>Server time breakdown (mean per request, from GemmResponse.timing)</h2>\n<table>\n"
       "<tr><th class=\"l\">point</th><th>queue us</th><th>copy in us</th><th>compute us</th>"
       "<th>copy out us</th><th>total us</th><th>requests per batch</th>"
       "<th class=\"l\">kernels</th></tr>\n";
  for (size_t i = 0; i < sums.size(); ++i) {
    const PointResult& p = report.points[i];
    const PointSummary& s = sums[i];
    std::vector<std::string> kernels;
    for (const auto& [name, n] : p.measured.kernels)
      kernels.push_back(absl::StrCat(name, " (", n, ")"));
    absl::StrAppend(&h, "<tr><td class=\"l\">", Html(p.Label()), "</td><td>",
                    Num(s.server_queue_us, 1), "</td><td>", Num(s.server_copy_in_us, 1),
                    "</td><td>", Num(s.server_compute_us, 1), "</td><td>",
                    Num(s.server_copy_out_us, 1), "</td><td>", Num(s.server_total_us, 1),
                    "</td><td>", Num(s.server_batch_requests, 2), "</td><td class=\"l\">",
                    Html(absl::StrJoin(kernels, ", ")), "</td></tr>\n");
  }
  h += "</table>\n";

  bool any_errors = false;
  for (const PointResult& p : report.points) any_errors |= !p.measured.errors_by_code.empty();
  if (any_errors) {
    h += "<h2>Errors by status code</h2>\n<table>\n<tr><th class=\"l\">point</th>"
         "<th class=\"l\">code</th><th>count</th></tr>\n";
    for (const PointResult& p : report.points) {
      for (const auto& [code, n] : p.measured.errors_by_code) {
        absl::StrAppend(&h, "<tr><td class=\"l\">", Html(p.Label()), "</td><td class=\"l\">",
                        Html(StatusCodeName(code)), "</td><td>", n, "</td></tr>\n");
      }
    }
    h += "</table>\n";
  }
  h += "<p style=\"color:#777;font-size:12px\">Latency is measured from each request's intended "
       "send time (open loop: its scheduled arrival, so queueing in the client counts). "
       "Percentiles are nearest-rank over the measured windows, resolved to 0.1%.</p>\n";
  h += "</body></html>\n";
  return h;
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
