// How much memory this process may use on its host: physical RAM, or the memory limit of its
// cgroup (v2 memory.max, v1 memory.limit_in_bytes) when one is set and smaller. The server's
// memory caps are derived from it (ResolveLimits).
#pragma once

#include <cstdint>
#include <string>

namespace gemm::core {

// The memory a process may use, and where the figure came from.
struct UsableMemory {
  int64_t bytes = 0;
  std::string source;  // e.g. "physical RAM", "cgroup memory.max"
};

// Where the cgroup figures are read from (tests point them at files of their own).
struct UsableMemoryFiles {
  std::string proc_self_cgroup = "/proc/self/cgroup";
  std::string cgroup_root = "/sys/fs/cgroup";
};

// The smaller of `physical_bytes` and the memory limits of the process's cgroup and its
// ancestors found under `files`; unreadable or absent files count as no limit.
UsableMemory UsableMemoryFrom(int64_t physical_bytes, const UsableMemoryFiles& files);

// UsableMemoryFrom() with this host's physical RAM (sysconf) and the real cgroup files.
UsableMemory DetectUsableMemory();

}  // namespace gemm::core
