// Host memory detection: sysconf for physical RAM, /proc/self/cgroup and the cgroup filesystem for
// a container's limit.
#include "server/core/usable_memory.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace gemm::core {
namespace {

// The first line of `path` parsed as a byte count; nullopt when absent, unreadable or "max".
std::optional<int64_t> ReadLimit(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  int64_t v = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &v) || v <= 0) return std::nullopt;
  return v;
}

// `dir`/`file` for the cgroup `path` ("/a/b") and each of its ancestors up to the root.
std::vector<std::string> CgroupFiles(const std::string& dir, absl::string_view path,
                                     const std::string& file) {
  std::vector<std::string> out;
  std::string p(absl::StripSuffix(path, "/"));
  while (true) {
    out.push_back(dir + p + "/" + file);
    if (p.empty()) break;
    p = p.substr(0, p.rfind('/'));
  }
  return out;
}

}  // namespace

UsableMemory UsableMemoryFrom(int64_t physical_bytes, const UsableMemoryFiles& files) {
  UsableMemory host{physical_bytes, "physical RAM"};
  std::ifstream in(files.proc_self_cgroup);
  std::string line;
  while (std::getline(in, line)) {
    // hierarchy-id:controllers:path; cgroup v2 has id 0 and no controllers.
    std::vector<std::string> f = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (f.size() != 3) continue;
    std::vector<std::string> paths;
    std::string name;
    if (f[0] == "0" && f[1].empty()) {
      // Mounted at the root (unified) or, next to v1 controllers, under unified/ (hybrid).
      name = "cgroup memory.max";
      paths = CgroupFiles(files.cgroup_root, f[2], "memory.max");
      for (std::string& p : CgroupFiles(files.cgroup_root + "/unified", f[2], "memory.max")) {
        paths.push_back(std::move(p));
      }
    } else if (std::vector<absl::string_view> c = absl::StrSplit(f[1], ',');
               std::find(c.begin(), c.end(), "memory") != c.end()) {
      name = "cgroup memory.limit_in_bytes";
      paths = CgroupFiles(files.cgroup_root + "/memory", f[2], "memory.limit_in_bytes");
    }
    for (const std::string& path : paths) {
      if (std::optional<int64_t> v = ReadLimit(path); v.has_value() && *v < host.bytes) {
        host = {*v, name};
      }
    }
  }
  return host;
}

UsableMemory DetectUsableMemory() {
  const int64_t pages = sysconf(_SC_PHYS_PAGES);
  const int64_t page = sysconf(_SC_PAGESIZE);
  return UsableMemoryFrom(pages > 0 && page > 0 ? pages * page : 0, UsableMemoryFiles{});
}

}  // namespace gemm::core
