// ProcessStats: /proc/<pid>/status, /proc/<pid>/fd and /proc/<pid>/stat.
#include "tests/chaos/process_stats.h"

#include <dirent.h>

#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gemm::testing {

ProcessStats ReadProcessStats(pid_t pid) {
  ProcessStats s;
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  for (std::string line; std::getline(status, line);) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, "VmRSS:")) continue;
    std::vector<absl::string_view> parts =
        absl::StrSplit(rest, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    int64_t kib = 0;
    if (!parts.empty() && absl::SimpleAtoi(parts[0], &kib)) s.rss_bytes = kib * 1024;
  }
  if (DIR* dir = opendir(absl::StrCat("/proc/", pid, "/fd").c_str())) {
    s.fds = 0;
    while (const dirent* e = readdir(dir)) {
      if (e->d_name[0] != '.') ++s.fds;
    }
    closedir(dir);
  }
  return s;
}

bool ProcessAlive(pid_t pid) {
  if (pid <= 0) return false;
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // "<pid> (<comm>) <state> ...": the state follows the last ')'.
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size()) return false;
  const char state = text[paren + 2];
  return state != 'Z' && state != 'X';
}

}  // namespace gemm::testing
