// Fuzz target: the safetensors header parser (SafetensorsHeaderLength, ParseSafetensorsHeader) on
// arbitrary file contents, in memory. Properties: it answers (no crash, no allocation beyond the
// header the input holds); every tensor it accepts is 2-D and non-empty, lies inside the data
// area after the header, and no two accepted tensors overlap.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/core/weight_repository_format.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gemm::core;
  const absl::string_view file(reinterpret_cast<const char*>(data), size);
  const int64_t file_bytes = static_cast<int64_t>(size);
  absl::StatusOr<int64_t> n = SafetensorsHeaderLength(file.substr(0, 8), file_bytes);
  if (!n.ok()) return 0;
  FUZZ_CHECK(*n >= 0 && 8 + *n <= file_bytes, absl::StrCat("header length ", *n));
  const bool strict = size > 8 && (data[size - 1] & 1);
  auto index =
      ParseSafetensorsHeader(file.substr(8, *n), "fuzz.safetensors", "fuzz", file_bytes, strict);
  if (!index.ok()) return 0;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const WeightTensor& t : index->tensors) {
    FUZZ_CHECK(t.rows >= 1 && t.cols >= 1, absl::StrCat(t.name, ": ", t.rows, "x", t.cols));
    FUZZ_CHECK(t.offset >= 8 + *n, absl::StrCat(t.name, ": offset ", t.offset, " in the header"));
    FUZZ_CHECK(t.file_bytes() <= file_bytes - t.offset,
               absl::StrCat(t.name, ": ", t.file_bytes(), " bytes at ", t.offset, " of ", size));
    ranges.push_back({t.offset, t.offset + t.file_bytes()});
  }
  FUZZ_CHECK(!strict || index->skipped.empty(), "strict parsing skipped a tensor");
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    FUZZ_CHECK(ranges[i].first >= ranges[i - 1].second, "accepted tensors overlap");
  }
  return 0;
}
