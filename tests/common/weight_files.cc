// Weight file test helpers.
#include "tests/common/weight_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/bf16.h"

namespace gemm::testing {

std::string SafetensorsFileWithHeader(const std::string& json, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return absl::StrCat(out, json, data);
}

std::string SafetensorsFile(const std::vector<SafetensorsTensor>& tensors) {
  std::vector<std::string> entries = {R"("__metadata__": {"format": "pt"})"};
  std::string data;
  for (const SafetensorsTensor& t : tensors) {
    entries.push_back(absl::StrCat("\"", t.name, "\": {\"dtype\": \"", t.dtype, "\", \"shape\": [",
                                   absl::StrJoin(t.shape, ", "), "], \"data_offsets\": [",
                                   data.size(), ", ", data.size() + t.data.size(), "]}"));
    data += t.data;
  }
  return SafetensorsFileWithHeader(absl::StrCat("{", absl::StrJoin(entries, ", "), "}"), data);
}

std::string Bf16Bytes(const std::vector<float>& values) { return FloatsToBf16Bytes(values); }

std::string F32Bytes(const std::vector<float>& values) {
  std::string out(values.size() * 4, '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

std::string FreshFolder(const std::string& name) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/", name, "-", getpid());
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

}  // namespace gemm::testing
