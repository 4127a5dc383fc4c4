// Request limits the server enforces and the memory it lets requests hold. Each default is
// defined here once (main.cc's flags take theirs from Limits{}); ResolveLimits() fills in the
// ones derived from the host's memory and refuses values that make no sense.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/core/usable_memory.h"

namespace gemm::core {

// Default of Limits::max_shared_memory_regions (also SharedMemoryRegistry's).
inline constexpr int64_t kDefaultMaxSharedMemoryRegions = 1024;

struct Limits {
  // Largest M, N or K accepted, at most kMaxDimLimit. Default 65536.
  int64_t max_dim = 65536;
  // Largest operand payload (A + B + C bytes) of one request. Default 1 GiB; at most the
  // in-flight budget.
  int64_t max_request_bytes = int64_t{1} << 30;
  // Largest output payload of one response (outputs written to shared memory excluded).
  // Default 1 GiB; at most the in-flight budget.
  int64_t max_response_bytes = int64_t{1} << 30;
  // gRPC max send/receive message size; also bounds the response size. Default 1 GiB + 16 MiB;
  // between kMinMessageBytes and kMaxMessageBytes.
  int64_t max_message_bytes = (int64_t{1} << 30) + (int64_t{16} << 20);
  // Largest batch count or group size, at most kMaxProblemsLimit. Default 1024.
  int64_t max_problems = 1024;
  // The engine's admission budget (WorkBudget; --max_in_flight_bytes says what it counts). 0
  // (default): kInFlightShare of host memory; at most kMaxInFlightShare of it.
  int64_t max_in_flight_bytes = 0;
  // Cap on bytes of resident matrices (all of them). Default 64 GiB; at most kResidentShare of
  // host memory where the backend keeps them in host memory.
  int64_t max_resident_bytes = int64_t{64} << 30;
  // Cap on bytes of registered shared-memory regions (all of them); 0 turns them off. 64 GiB.
  int64_t max_shared_memory_bytes = int64_t{64} << 30;
  // Most registered shared-memory regions at once (each one memory mapping); lowered to half the
  // mappings the process has left under vm.max_map_count. Default 1024.
  int64_t max_shared_memory_regions = kDefaultMaxSharedMemoryRegions;
  // Shared-memory objects clients may register must have names starting with this. "/gemm".
  std::string shared_memory_key_prefix = "/gemm";
};

// Largest max_dim: the GEMM calls (BLAS, the kernels' tensor maps) take 32-bit dimensions.
inline constexpr int64_t kMaxDimLimit = std::numeric_limits<int32_t>::max();
// Largest max_problems: a group is a protobuf repeated field (int-indexed).
inline constexpr int64_t kMaxProblemsLimit = std::numeric_limits<int32_t>::max();
// Bounds of max_message_bytes: room for a response's overhead, and gRPC's int.
inline constexpr int64_t kMinMessageBytes = int64_t{4} << 20;
inline constexpr int64_t kMaxMessageBytes = std::numeric_limits<int32_t>::max();
// Shares of host memory: the default and largest in-flight budget, and the largest resident cap
// of a backend that keeps resident matrices in host memory.
inline constexpr double kInFlightShare = 0.25;
inline constexpr double kMaxInFlightShare = 0.5;
inline constexpr double kResidentShare = 0.25;

// `asked` with max_in_flight_bytes derived from `host` when 0, and the byte caps clamped to what
// the host can hold: the in-flight budget to kMaxInFlightShare of it, max_request_bytes and
// max_response_bytes to the budget, and max_resident_bytes to kResidentShare of it when
// `resident_in_host_memory` (the backend keeps resident matrices in host memory).
// INVALID_ARGUMENT naming the flag for a value that makes no sense (out of its bounds above, or
// negative). Appends a line saying how each derived or clamped limit came about to `notes`.
absl::StatusOr<Limits> ResolveLimits(const Limits& asked, const UsableMemory& host,
                                     bool resident_in_host_memory, std::vector<std::string>* notes);

// `bytes` for people: "512 B", "64.0 KiB", "5.8 GiB".
std::string FormatBytes(int64_t bytes);

}  // namespace gemm::core
