// What a process holds, read from /proc: resident memory and open descriptors, and whether it
// has died (a zombie waiting to be reaped, or gone).
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace gemm::testing {

struct ProcessStats {
  int64_t rss_bytes = -1;  // VmRSS of /proc/<pid>/status
  int fds = -1;            // entries of /proc/<pid>/fd
};

// The stats of `pid` now (fields -1 when it cannot be read).
ProcessStats ReadProcessStats(pid_t pid);

// True while `pid` exists and has not exited (a zombie counts as exited).
bool ProcessAlive(pid_t pid);

}  // namespace gemm::testing
