// Minimal .npy (NumPy format v1/v2) reader and writer for float32/float64 C-order arrays, used by
// the CLI to take operands from files and write results.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gemm {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;  // converted to float32, C order
};

// Reads `path`: dtype '<f4' or '<f8', fortran_order False. INVALID_ARGUMENT for anything else.
absl::StatusOr<NpyArray> ReadNpy(const std::string& path);

// Writes a float32 C-order array.
absl::Status WriteNpy(const std::string& path, const std::vector<int64_t>& shape,
                      const std::vector<float>& data);

}  // namespace gemm
