// The weight files the repository reads: the index of a .safetensors or .npy file (which tensors
// it holds, where their bytes are, in what dtype and shape), every offset and size checked against
// the file's size with overflow-safe arithmetic, and the conversion of FP16/FP32 tensors to BF16
// (round to nearest even). Parsing never trusts the file: a hostile header gives an error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gemm::core {

// Element types the repository loads (others are skipped).
enum class WeightDType : int { kBF16 = 0, kF16 = 1, kF32 = 2 };

// Bytes per element of `t` in the file.
inline constexpr int64_t WeightDTypeBytes(WeightDType t) { return t == WeightDType::kF32 ? 4 : 2; }

// One 2-D tensor of a weight file, loadable as a resident matrix.
struct WeightTensor {
  std::string name;    // "<file stem>/<tensor>" (safetensors) or "<file stem>" (.npy)
  std::string path;    // the file
  int64_t offset = 0;  // of its first byte in the file
  int64_t rows = 0, cols = 0;
  WeightDType dtype = WeightDType::kBF16;
  // Bytes in the file: rows * cols * WeightDTypeBytes(dtype).
  int64_t file_bytes() const { return rows * cols * WeightDTypeBytes(dtype); }
};

// What a file holds: the tensors to load and one line per tensor skipped (and why).
struct WeightFileIndex {
  std::vector<WeightTensor> tensors;
  std::vector<std::string> skipped;
};

// The longest safetensors JSON header accepted (100 MiB, as the format's reference reader).
inline constexpr int64_t kMaxSafetensorsHeaderBytes = int64_t{100} << 20;

// The header length of a safetensors file of `file_bytes` bytes whose first 8 bytes are
// `prefix`: INVALID_ARGUMENT when the file is shorter than 8 bytes, or the length is past the
// end of the file or above kMaxSafetensorsHeaderBytes.
absl::StatusOr<int64_t> SafetensorsHeaderLength(absl::string_view prefix, int64_t file_bytes);

// Indexes the JSON header `json` of safetensors file `path` (`file_bytes` long, data area starting
// at 8 + json.size()), naming tensors "<stem>/<tensor>". INVALID_ARGUMENT (naming the file and
// tensor) when the header is not a JSON object of tensors or an entry's offsets are out of the data
// area, overlap, or disagree with its shape and dtype. A tensor of another dtype (or an unknown
// one) or not 2-D is skipped, or INVALID_ARGUMENT when `strict`.
absl::StatusOr<WeightFileIndex> ParseSafetensorsHeader(absl::string_view json,
                                                       const std::string& path,
                                                       absl::string_view stem, int64_t file_bytes,
                                                       bool strict);

// Indexes the weight file `path` (.safetensors or .npy by its extension), reading only its
// header. Errors as ParseSafetensorsHeader; NOT_FOUND when it cannot be opened.
absl::StatusOr<WeightFileIndex> IndexWeightFile(const std::string& path, bool strict);

// Converts `count` elements of `dtype` (little-endian, as in the file) at `in` into BF16 at `out`
// (2 * count bytes): BF16 is copied, FP16 and FP32 rounded to nearest even; NaN stays NaN.
void ConvertToBf16(WeightDType dtype, const char* in, int64_t count, char* out);

}  // namespace gemm::core
