// Resolution of the server's limits against the host's memory.
#include "server/core/limits.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gemm::core {
namespace {

// INVALID_ARGUMENT unless lo <= value <= hi, naming `flag`.
absl::Status CheckRange(const char* flag, int64_t value, int64_t lo, int64_t hi,
                        const char* why = "") {
  if (value >= lo && value <= hi) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, ": ", value, " is out of range [", lo, ", ", hi, "]", why));
}

// Refuses values no host makes sense of (checked before any is derived or clamped).
absl::Status CheckFlags(const Limits& l) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (const absl::Status& s : {
           CheckRange("max_dim", l.max_dim, 1, kMaxDimLimit,
                      " (the GEMM calls take 32-bit dimensions)"),
           CheckRange("max_problems", l.max_problems, 1, kMaxProblemsLimit),
           CheckRange("max_message_bytes", l.max_message_bytes, kMinMessageBytes, kMaxMessageBytes,
                      " (gRPC takes an int; a response needs room for its overhead)"),
           CheckRange("max_request_bytes", l.max_request_bytes, 1, kMax),
           CheckRange("max_response_bytes", l.max_response_bytes, 1, kMax),
           CheckRange("max_in_flight_bytes", l.max_in_flight_bytes, 0, kMax,
                      " (0: derived from host memory)"),
           CheckRange("max_resident_bytes", l.max_resident_bytes, 0, kMax),
           CheckRange("max_shared_memory_bytes", l.max_shared_memory_bytes, 0, kMax),
       }) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// `share` of the host's memory, and how to say so: "25% of 23.4 GiB host memory (physical RAM)".
struct Share {
  int64_t bytes;
  std::string text;
};
Share ShareOf(const UsableMemory& host, double share) {
  return {static_cast<int64_t>(std::floor(static_cast<double>(host.bytes) * share)),
          absl::StrCat(std::lround(share * 100), "% of ", FormatBytes(host.bytes), " host memory (",
                       host.source, ")")};
}

// Lowers `*value` (of `flag`) to `cap` (`why`: what the cap is) if above it, with a note.
void Clamp(const char* flag, int64_t cap, const std::string& why, int64_t* value,
           std::vector<std::string>* notes) {
  if (*value <= cap) return;
  notes->push_back(absl::StrCat("limits: --", flag, " ", FormatBytes(*value), " lowered to ", why,
                                " = ", FormatBytes(cap)));
  *value = cap;
}

}  // namespace

std::string FormatBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  double v = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (v >= 1024 && unit < 5) {
    v /= 1024;
    ++unit;
  }
  return absl::StrFormat("%.1f %s", v, kUnits[unit]);
}

absl::StatusOr<Limits> ResolveLimits(const Limits& asked, const UsableMemory& host,
                                     bool resident_in_host_memory,
                                     std::vector<std::string>* notes) {
  if (auto s = CheckFlags(asked); !s.ok()) return s;
  if (host.bytes <= 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("limits: the host's memory is unknown (", host.source,
                     "), so the memory caps cannot be derived from it"));
  }
  Limits l = asked;
  const Share most = ShareOf(host, kMaxInFlightShare);
  if (l.max_in_flight_bytes == 0) {
    const Share derived = ShareOf(host, kInFlightShare);
    l.max_in_flight_bytes = std::max<int64_t>(derived.bytes, 1);
    notes->push_back(absl::StrCat("limits: in-flight bytes (--max_in_flight_bytes) ", derived.text,
                                  " = ", FormatBytes(l.max_in_flight_bytes)));
  } else {
    Clamp("max_in_flight_bytes", most.bytes, most.text, &l.max_in_flight_bytes, notes);
  }
  const std::string budget = "the in-flight budget (--max_in_flight_bytes)";
  Clamp("max_request_bytes", l.max_in_flight_bytes, budget, &l.max_request_bytes, notes);
  Clamp("max_response_bytes", l.max_in_flight_bytes, budget, &l.max_response_bytes, notes);
  if (resident_in_host_memory) {
    const Share resident = ShareOf(host, kResidentShare);
    Clamp("max_resident_bytes", resident.bytes,
          absl::StrCat(resident.text, ", the backend keeping them in host memory"),
          &l.max_resident_bytes, notes);
  }
  return l;
}

}  // namespace gemm::core
