// The server process's descriptor budget: raises the open-file limit (RLIMIT_NOFILE) to its hard
// limit at start, counts the descriptors in use, and derives how many client connections the
// limit leaves room for.
#pragma once

#include <cstdint>

namespace gemm::server {

struct OpenFileLimit {
  int64_t before = 0;  // the soft limit the process started with
  int64_t now = 0;     // the soft limit now: the hard limit, unless raising it was refused
};

// Raises the soft RLIMIT_NOFILE to the hard limit. Never fails: a limit that cannot be raised
// stays as it was (`now` == `before`). An unlimited (or unreadable) limit reads as INT64_MAX.
OpenFileLimit RaiseOpenFileLimit();

// Descriptors the process has open now.
int64_t CountOpenFiles();

// The default cap on client connections: `limit` less the `open` descriptors and a reserve of
// 1/8 of the limit (at least 32) for files, shared-memory regions, metrics scrapes and gRPC's
// own descriptors; at least 1.
int64_t DefaultMaxConnections(int64_t limit, int64_t open);

}  // namespace gemm::server
