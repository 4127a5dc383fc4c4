// Parser of gemm_bench's shape files.
#include "bench_shapes.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace gemm::bench {

absl::StatusOr<std::vector<Shape>> LoadShapes(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open shape file ", path));
  std::vector<Shape> shapes;
  std::string line;
  int group = 0;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::string first;
    if (!(fields >> first)) continue;  // blank or comment line
    if (first == "group") {
      if (!shapes.empty()) ++group;
      continue;
    }
    fields.clear();
    fields.str(line);
    Shape s;
    s.group = group;
    if (!(fields >> s.m)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": want M N K [batch]"));
    }
    if (!(fields >> s.n >> s.k)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": want M N K [batch]"));
    }
    if (!(fields >> s.batch)) s.batch = 1;
    if (s.m < 1 || s.n < 1 || s.k < 1 || s.batch < 1) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": sizes must be >= 1"));
    }
    shapes.push_back(s);
  }
  return shapes;
}

}  // namespace gemm::bench
