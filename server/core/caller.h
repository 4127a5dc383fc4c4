// Who sent a request, as the service layer established it (a token or a client certificate), and
// that caller's limits. The core records the caller as the owner of what it creates, lets it see
// and release only its own unless it is an admin, and enforces its byte caps; it knows nothing of
// how the caller was identified.
#pragma once

#include <cstdint>
#include <string>

namespace gemm::core {

// Per-caller caps; 0 in a field means no per-caller cap (the server-wide caps still hold).
struct CallerLimits {
  // Calls at once: each unary call and each open stream or upload holds one. Default 0.
  int64_t max_calls = 0;
  // Bytes of resident matrices the caller owns (reserved uploads included). Default 0.
  int64_t max_resident_bytes = 0;
  // Bytes of shared-memory regions the caller owns, counted as the registry counts them.
  // Default 0.
  int64_t max_shared_memory_bytes = 0;
};

struct Caller {
  // Owner recorded on what the caller creates; empty when the server authenticates no one.
  std::string name;
  // May see, use and release what other callers own. Default true (no authentication).
  bool admin = true;
  CallerLimits limits;

  // Whether this caller may see or release a resource owned by `owner`.
  bool Owns(const std::string& owner) const { return admin || owner == name; }
};

// The per-caller cap `cap` (0: none) as a byte count to compare against.
inline int64_t CapOrMax(int64_t cap) { return cap > 0 ? cap : INT64_MAX; }

}  // namespace gemm::core
