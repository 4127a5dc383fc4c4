// Inline SVG charts for the load generator's HTML report: a line chart with markers, axes
// (linear or log), grid and legend, and the HTML escaping and axis-step helpers the report shares.
// Pure functions; no scripts, nothing fetched.
#pragma once

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace gemm::loadgen {

// One line of a chart.
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

// An SVG line chart titled `title`.
std::string SvgLineChart(const std::string& title, const Axis& x_axis, const Axis& y_axis,
                         const std::vector<Series>& series);

// `s` with &, <, > and " escaped for HTML text and attributes.
std::string HtmlEscape(const std::string& s);
// A "nice" step (1, 2 or 5 times a power of ten) giving about `target` intervals over `range`.
double NiceStep(double range, int target);
// A short axis label: 1500 -> "1500", 25000 -> "25k", 3e6 -> "3M".
std::string TickLabel(double v);

// Colors of successive series.
inline constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

}  // namespace gemm::loadgen
