// Shape sets of gemm_bench: plain-text files under bench/shapes/, one problem per line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gemm::bench {

// One line of a shape file: "M N K [batch]" ('#' starts a comment). In the files of grouped
// sets a line "group" starts the next group (the lines before the first one are group 0).
struct Shape {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int group = 0;
};

// Reads `path`; INVALID_ARGUMENT naming the line on a malformed or non-positive entry,
// NOT_FOUND when the file cannot be opened.
absl::StatusOr<std::vector<Shape>> LoadShapes(const std::string& path);

}  // namespace gemm::bench
