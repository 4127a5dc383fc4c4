// Test helpers that write weight repository files: safetensors files from a tensor list (or from
// a raw header, for malformed ones) and float32 .npy files, in a folder of the test's own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gemm::testing {

// One tensor of a safetensors file: its dtype name ("BF16", "F16", "F32", ...), shape and the
// bytes of its data as stored.
struct SafetensorsTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string data;
};

// The bytes of a safetensors file holding `tensors` back to back, in order.
std::string SafetensorsFile(const std::vector<SafetensorsTensor>& tensors);

// The bytes of a safetensors file with header `json` (its length written as the 8-byte prefix)
// followed by `data`.
std::string SafetensorsFileWithHeader(const std::string& json, const std::string& data);

// BF16 bytes of `values` (round to nearest even).
std::string Bf16Bytes(const std::vector<float>& values);

// Float32 bytes of `values`.
std::string F32Bytes(const std::vector<float>& values);

// A fresh, empty folder under the test temporary folder, named for `name` and this process.
std::string FreshFolder(const std::string& name);

// Writes `bytes` to `path` (replacing it); aborts the test on failure.
void WriteBytes(const std::string& path, const std::string& bytes);

}  // namespace gemm::testing
