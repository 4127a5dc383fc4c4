// Parsing of the workload spec, the shape mix and the sweep lists.
#include "client/loadgen/workload.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gemm::loadgen {
namespace {

absl::StatusOr<int64_t> ParseDim(absl::string_view s, absl::string_view what) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(s), &v) || v < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad ", what, " '", s, "': need an integer >= 1"));
  }
  return v;
}

std::string Lower(absl::string_view s) {
  return absl::AsciiStrToLower(absl::StripAsciiWhitespace(s));
}

}  // namespace

std::string ShapeSpec::Name() const { return absl::StrCat(m, "x", n, "x", k); }

int64_t WorkloadSpec::RequestBytes(const ShapeSpec& s) const {
  int64_t bytes = s.m * s.k * 2;
  if (b_source == BSource::kInline) bytes += s.k * s.n * 2;
  return bytes * std::max(1, experts_per_request);
}

int64_t WorkloadSpec::ResponseBytes(const ShapeSpec& s) const {
  return s.m * s.n * (output_fp32 ? 4 : 2) * std::max(1, experts_per_request);
}

std::string WorkloadSpec::Describe() const {
  std::vector<std::string> mix;
  for (const ShapeSpec& s : shapes) mix.push_back(absl::StrCat(s.Name(), "@", s.weight));
  std::string d = absl::StrCat(
      absl::StrJoin(mix, ","), " b=", b_source == BSource::kInline ? "inline" : "resident",
      " layout=", b_nk ? "nk" : "kn", " out=", output_fp32 ? "fp32" : "bf16",
      " prio=", priority_high ? "high" : "normal",
      packed ? " packed" : (streaming ? " stream" : " unary"), " ch=", channels);
  if (sync_callers) {
    absl::StrAppend(&d, " sync");
  } else if (streaming) {
    absl::StrAppend(&d, " streams/ch=", streams_per_channel);
  }
  if (deadline_us > 0) absl::StrAppend(&d, " deadline=", deadline_us, "us");
  if (experts > 0) absl::StrAppend(&d, " experts=", experts, ":", experts_per_request);
  if (!kernel.empty()) absl::StrAppend(&d, " kernel=", kernel);
  if (shared_memory) absl::StrAppend(&d, " shm");
  if (shared_memory && shm_device >= 0) absl::StrAppend(&d, " on GPU ", shm_device, " (CUDA IPC)");
  return d;
}

absl::StatusOr<std::vector<ShapeSpec>> ParseShapes(absl::string_view text) {
  std::vector<ShapeSpec> out;
  for (absl::string_view entry : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    entry = absl::StripAsciiWhitespace(entry);
    ShapeSpec s;
    std::vector<absl::string_view> at = absl::StrSplit(entry, '@');
    if (at.size() > 2) return absl::InvalidArgumentError(absl::StrCat("bad shape '", entry, "'"));
    if (at.size() == 2) {
      if (!absl::SimpleAtod(absl::StripAsciiWhitespace(at[1]), &s.weight) || !(s.weight > 0) ||
          !std::isfinite(s.weight)) {
        return absl::InvalidArgumentError(
            absl::StrCat("bad weight in shape '", entry, "': need a number > 0"));
      }
    }
    const std::string lowered = absl::AsciiStrToLower(at[0]);
    std::vector<absl::string_view> dims = absl::StrSplit(lowered, 'x');
    if (dims.size() != 3) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad shape '", entry, "': expected MxNxK[@weight], e.g. 64x64x64@2"));
    }
    auto m = ParseDim(dims[0], "M");
    auto n = ParseDim(dims[1], "N");
    auto k = ParseDim(dims[2], "K");
    if (!m.ok()) return m.status();
    if (!n.ok()) return n.status();
    if (!k.ok()) return k.status();
    s.m = *m;
    s.n = *n;
    s.k = *k;
    out.push_back(s);
  }
  if (out.empty()) return absl::InvalidArgumentError("no shapes given");
  return out;
}

absl::StatusOr<std::vector<double>> ParseSweep(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  std::vector<double> out;
  auto parse_value = [](absl::string_view s) -> absl::StatusOr<double> {
    double v = 0;
    if (!absl::SimpleAtod(absl::StripAsciiWhitespace(s), &v) || !(v > 0) || !std::isfinite(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad sweep value '", s, "': need a number > 0"));
    }
    return v;
  };
  if (absl::StrContains(text, ':')) {
    std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
    if (parts.size() != 3) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bad sweep '", text, "': expected start:end:step, e.g. 1:64:x2 or 100:1000:+100"));
    }
    auto start = parse_value(parts[0]);
    auto end = parse_value(parts[1]);
    if (!start.ok()) return start.status();
    if (!end.ok()) return end.status();
    absl::string_view step = absl::StripAsciiWhitespace(parts[2]);
    bool multiply = false;
    if (absl::ConsumePrefix(&step, "x") || absl::ConsumePrefix(&step, "*")) {
      multiply = true;
    } else {
      absl::ConsumePrefix(&step, "+");
    }
    auto by = parse_value(step);
    if (!by.ok()) return by.status();
    if (multiply && *by <= 1.0) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad sweep step '", parts[2], "': factor must be > 1"));
    }
    if (*end < *start) {
      return absl::InvalidArgumentError(absl::StrCat("bad sweep '", text, "': end < start"));
    }
    double v = *start;
    // Tolerance so that 0.1-steps reach the end despite rounding.
    const double slack = 1e-9 * *end;
    while (v <= *end + slack) {
      out.push_back(v);
      if (out.size() > 1000) return absl::InvalidArgumentError("sweep has more than 1000 points");
      v = multiply ? v * *by : v + *by;
    }
    return out;
  }
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    auto v = parse_value(item);
    if (!v.ok()) return v.status();
    out.push_back(*v);
  }
  if (out.empty()) return absl::InvalidArgumentError("empty sweep");
  if (out.size() > 1000) return absl::InvalidArgumentError("sweep has more than 1000 points");
  return out;
}

absl::StatusOr<std::map<std::string, std::string>> ParseKeyValueText(absl::string_view text) {
  std::map<std::string, std::string> out;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    const size_t hash = line.find('#');
    if (hash != absl::string_view::npos) line = line.substr(0, hash);
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("workload line ", line_no, ": expected 'key = value', got '", line, "'"));
    }
    std::string key = Lower(line.substr(0, eq));
    for (char& c : key) {
      if (c == '-') c = '_';
    }
    const std::string value(absl::StripAsciiWhitespace(line.substr(eq + 1)));
    if (key.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("workload line ", line_no, ": empty key"));
    }
    if (out.count(key)) {
      return absl::InvalidArgumentError(
          absl::StrCat("workload line ", line_no, ": key '", key, "' given twice"));
    }
    out[key] = value;
  }
  return out;
}

absl::StatusOr<BSource> ParseBSource(absl::string_view text) {
  const std::string s = Lower(text);
  if (s == "inline") return BSource::kInline;
  if (s == "resident") return BSource::kResident;
  return absl::InvalidArgumentError(absl::StrCat("bad b source '", text, "': inline|resident"));
}

absl::StatusOr<bool> ParseLayoutNk(absl::string_view text) {
  const std::string s = Lower(text);
  if (s == "kn") return false;
  if (s == "nk") return true;
  return absl::InvalidArgumentError(absl::StrCat("bad b layout '", text, "': kn|nk"));
}

absl::StatusOr<bool> ParseOutputFp32(absl::string_view text) {
  const std::string s = Lower(text);
  if (s == "bf16") return false;
  if (s == "fp32") return true;
  return absl::InvalidArgumentError(absl::StrCat("bad output dtype '", text, "': bf16|fp32"));
}

absl::StatusOr<bool> ParsePriorityHigh(absl::string_view text) {
  const std::string s = Lower(text);
  if (s == "normal") return false;
  if (s == "high") return true;
  return absl::InvalidArgumentError(absl::StrCat("bad priority '", text, "': normal|high"));
}

absl::StatusOr<bool> ParseSyncCallers(absl::string_view text) {
  const std::string s = Lower(text);
  if (s == "callback") return false;
  if (s == "sync") return true;
  return absl::InvalidArgumentError(absl::StrCat("bad client_api '", text, "': callback|sync"));
}

absl::Status ParseRpc(absl::string_view text, WorkloadSpec* w) {
  const std::string s = Lower(text);
  if (s != "unary" && s != "stream" && s != "streaming" && s != "packed") {
    return absl::InvalidArgumentError(absl::StrCat("bad rpc '", text, "': unary|stream|packed"));
  }
  w->streaming = s != "unary";
  w->packed = s == "packed";
  return absl::OkStatus();
}

absl::Status ParseExperts(absl::string_view text, WorkloadSpec* w) {
  w->experts = 0;
  w->experts_per_request = 0;
  if (text.empty() || text == "0") return absl::OkStatus();
  const std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  int e = 0, t = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &e) || !absl::SimpleAtoi(parts[1], &t) ||
      e < 1 || e > 4096 || t < 1 || t > e) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--experts: want E:T with 1 <= T <= E <= 4096 (experts, experts per request), got '", text,
        "'"));
  }
  w->experts = e;
  w->experts_per_request = t;
  return absl::OkStatus();
}

}  // namespace gemm::loadgen
