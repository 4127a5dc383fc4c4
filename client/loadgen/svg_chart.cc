// SVG line charts.
#include "client/loadgen/svg_chart.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gemm::loadgen {
namespace {

using Ticks = std::vector<std::pair<double, std::string>>;

// Where a chart's data goes: the plot area and the data range on each axis.
struct Frame {
  static constexpr double kWidth = 660, kHeight = 400, kLeft = 70, kRight = 170, kTop = 36,
                          kBottom = 54;
  static constexpr double kPlotWidth = kWidth - kLeft - kRight;
  static constexpr double kPlotHeight = kHeight - kTop - kBottom;
  Axis x, y;
  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;

  bool Drawable(double px, double py) const {
    return std::isfinite(px) && std::isfinite(py) && !(y.log && py <= 0) && !(x.log && px <= 0);
  }
  static double Fraction(double v, double lo, double hi, bool log) {
    return log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo))
               : (v - lo) / (hi - lo);
  }
  double X(double v) const { return kLeft + Fraction(v, xmin, xmax, x.log) * kPlotWidth; }
  double Y(double v) const {
    return kTop + kPlotHeight - Fraction(v, ymin, ymax, y.log) * kPlotHeight;
  }
};

// Linear axes start at 0 and end on a nice step; log axes span whole decades around the data.
void FixRange(double& lo, double& hi, bool log) {
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
}

// The data range of `series` and the axes' explicit ranges; false when there is no data.
bool MakeFrame(const Axis& x_axis, const Axis& y_axis, const std::vector<Series>& series,
               Frame* f) {
  f->x = x_axis;
  f->y = y_axis;
  for (const Series& s : series) {
    for (auto [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y) || (y_axis.log && y <= 0)) continue;
      f->xmin = std::min(f->xmin, x);
      f->xmax = std::max(f->xmax, x);
      f->ymin = std::min(f->ymin, y);
      f->ymax = std::max(f->ymax, y);
    }
  }
  if (!std::isfinite(f->xmin)) return false;
  if (!std::isnan(x_axis.min)) f->xmin = x_axis.min;
  if (!std::isnan(x_axis.max)) f->xmax = x_axis.max;
  if (!std::isnan(y_axis.min)) f->ymin = y_axis.min;
  if (!std::isnan(y_axis.max)) f->ymax = y_axis.max;
  if (x_axis.ticks.empty()) FixRange(f->xmin, f->xmax, x_axis.log);
  if (y_axis.ticks.empty()) FixRange(f->ymin, f->ymax, y_axis.log);
  if (f->xmax <= f->xmin) f->xmax = f->xmin + 1;
  if (f->ymax <= f->ymin) f->ymax = f->ymin + 1;
  return true;
}

Ticks AutoTicks(double lo, double hi, bool log) {
  Ticks t;
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
}

// Grid lines, tick labels, the plot's border and the axis labels.
void DrawAxes(const Frame& f, std::string* svg) {
  const double left = Frame::kLeft, top = Frame::kTop;
  const double pw = Frame::kPlotWidth, ph = Frame::kPlotHeight;
  // The ticks of one axis: vertical grid lines labelled below (x) or horizontal ones labelled
  // on the left (y).
  auto grid = [&](const Axis& axis, double lo, double hi, bool x_axis) {
    for (const auto& [v, label] : axis.ticks.empty() ? AutoTicks(lo, hi, axis.log) : axis.ticks) {
      const double at = x_axis ? f.X(v) : f.Y(v);
      absl::StrAppendFormat(
          svg,
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" fill=\"#444\">%s</text>\n",
          x_axis ? at : left, x_axis ? top : at, x_axis ? at : left + pw, x_axis ? top + ph : at,
          x_axis ? at : left - 6, x_axis ? top + ph + 16 : at + 4, x_axis ? "middle" : "end",
          HtmlEscape(label));
    }
  };
  grid(f.x, f.xmin, f.xmax, true);
  grid(f.y, f.ymin, f.ymax, false);
  absl::StrAppendFormat(svg,
                        "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" "
                        "stroke=\"#888\"/>\n"
                        "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%s</text>\n"
                        "<text x=\"16\" y=\"%g\" text-anchor=\"middle\" "
                        "transform=\"rotate(-90 16 %g)\">%s</text>\n",
                        left, top, pw, ph, left + pw / 2, Frame::kHeight - 12,
                        HtmlEscape(f.x.label), top + ph / 2, top + ph / 2, HtmlEscape(f.y.label));
}

// One series: its line, its markers (with tooltips), the point labels that do not overlap an
// earlier one (`labels` holds those drawn) and its legend entry (row `row`).
void DrawSeries(const Frame& f, const Series& s, int row,
                std::vector<std::pair<double, double>>* labels, std::string* svg) {
  std::string path;
  for (auto [x, y] : s.points) {
    if (f.Drawable(x, y)) absl::StrAppendFormat(&path, "%.1f,%.1f ", f.X(x), f.Y(y));
  }
  if (!path.empty()) {
    absl::StrAppendFormat(
        svg, "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>\n", path,
        s.color);
  }
  for (size_t i = 0; i < s.points.size(); ++i) {
    const auto [x, y] = s.points[i];
    if (!f.Drawable(x, y)) continue;
    absl::StrAppendFormat(svg,
                          "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\">"
                          "<title>%s: %s</title></circle>\n",
                          f.X(x), f.Y(y), s.color, HtmlEscape(s.name),
                          HtmlEscape(absl::StrFormat("(%g, %g)", x, y)));
    // Labels that would overlap an earlier one are left out (the tooltip still has the point).
    const double lx = f.X(x), ly = f.Y(y) + 15;
    const bool overlaps = std::any_of(labels->begin(), labels->end(), [&](const auto& l) {
      return std::fabs(l.first - lx) < 34 && std::fabs(l.second - ly) < 12;
    });
    if (i < s.point_labels.size() && !s.point_labels[i].empty() && !overlaps) {
      labels->emplace_back(lx, ly);
      absl::StrAppendFormat(svg,
                            "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#555\" "
                            "text-anchor=\"middle\">%s</text>\n",
                            lx, ly, HtmlEscape(s.point_labels[i]));
    }
  }
  const double legend_x = Frame::kLeft + Frame::kPlotWidth + 12;
  const double legend_y = Frame::kTop + 8 + 18 * row;
  absl::StrAppendFormat(svg,
                        "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"%s\" "
                        "stroke-width=\"3\"/><text x=\"%g\" y=\"%g\">%s</text>\n",
                        legend_x, legend_y, legend_x + 22, legend_y, s.color, legend_x + 28,
                        legend_y + 4, HtmlEscape(s.name));
}

}  // namespace

std::string HtmlEscape(const std::string& s) {
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

std::string SvgLineChart(const std::string& title, const Axis& x_axis, const Axis& y_axis,
                         const std::vector<Series>& series) {
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" viewBox=\"0 0 %g %g\" "
      "class=\"chart\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"%g\" height=\"%g\" fill=\"#fff\"/>\n"
      "<text x=\"%g\" y=\"22\" font-size=\"15\" font-weight=\"bold\">%s</text>\n",
      Frame::kWidth, Frame::kHeight, Frame::kWidth, Frame::kHeight, Frame::kWidth, Frame::kHeight,
      Frame::kLeft, HtmlEscape(title));
  Frame f;
  if (!MakeFrame(x_axis, y_axis, series, &f)) {
    absl::StrAppendFormat(&svg, "<text x=\"%g\" y=\"%g\" fill=\"#888\">no data</text></svg>\n",
                          Frame::kLeft + Frame::kPlotWidth / 2 - 30,
                          Frame::kTop + Frame::kPlotHeight / 2);
    return svg;
  }
  DrawAxes(f, &svg);
  std::vector<std::pair<double, double>> labels;  // positions of point labels drawn
  for (size_t i = 0; i < series.size(); ++i) {
    DrawSeries(f, series[i], static_cast<int>(i), &labels, &svg);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace gemm::loadgen
