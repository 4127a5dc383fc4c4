// RLIMIT_NOFILE raising and descriptor counting (Linux: /proc/self/fd).
#include "server/listener/open_files.h"

#include <dirent.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <limits>

namespace gemm::server {
namespace {

int64_t AsInt64(rlim_t limit) {
  if (limit == RLIM_INFINITY || limit > static_cast<rlim_t>(std::numeric_limits<int64_t>::max())) {
    return std::numeric_limits<int64_t>::max();
  }
  return static_cast<int64_t>(limit);
}

}  // namespace

OpenFileLimit RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    constexpr int64_t kUnknown = std::numeric_limits<int64_t>::max();
    return {.before = kUnknown, .now = kUnknown};
  }
  OpenFileLimit result{.before = AsInt64(limit.rlim_cur), .now = AsInt64(limit.rlim_cur)};
  if (limit.rlim_cur == limit.rlim_max) return result;
  rlimit raised = limit;
  raised.rlim_cur = limit.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &raised) == 0) result.now = AsInt64(raised.rlim_cur);
  return result;
}

int64_t CountOpenFiles() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return 3;  // no /proc: assume stdin, stdout and stderr
  int64_t entries = 0;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') ++entries;
  }
  closedir(dir);
  return std::max<int64_t>(0, entries - 1);  // less the directory's own descriptor
}

int64_t DefaultMaxConnections(int64_t limit, int64_t open) {
  const int64_t reserve = std::max<int64_t>(32, limit / 8);
  if (limit - open <= reserve) return 1;
  return limit - open - reserve;
}

}  // namespace gemm::server
