// Minimal .npy (NumPy format v1/v2) reader and writer for float32/float64 C-order arrays, used by
// the CLI to take operands from files and write results, and the header reader the server's
// weight repository indexes .npy files with.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gemm {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;  // converted to float32, C order
};

// The header of a .npy file.
struct NpyHeader {
  std::string descr;  // e.g. "<f4", without quotes
  bool fortran_order = false;
  std::vector<int64_t> shape;
  int64_t data_offset = 0;  // where the array's bytes start; <= the file's size
};

// Reads the header at the start of `in`, a .npy file of `file_bytes` bytes named `path` (for
// messages). INVALID_ARGUMENT for a file that is not .npy or whose header does not parse or does
// not fit in the file. Does not check that the data fits.
absl::StatusOr<NpyHeader> ReadNpyHeader(std::istream& in, int64_t file_bytes,
                                        const std::string& path);

// Reads `path`: dtype '<f4' or '<f8', fortran_order False. INVALID_ARGUMENT for anything else.
absl::StatusOr<NpyArray> ReadNpy(const std::string& path);

// Writes a float32 C-order array.
absl::Status WriteNpy(const std::string& path, const std::vector<int64_t>& shape,
                      const std::vector<float>& data);

}  // namespace gemm
