// Fuzz target: the .npy reader (ReadNpy) on arbitrary file contents, which the target writes to
// an in-memory file. Properties: it answers (no crash, no allocation beyond what the file can
// fill); an array it accepts holds exactly product(shape) values, and writing it (WriteNpy) and
// reading that back gives the same shape and the same bits.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/npy.h"
#include "tests/fuzz/fuzz_support.h"

namespace gemm::fuzz {
namespace {

// An in-memory file reachable by path (/proc/self/fd/N), rewritten for every input.
class MemoryFile {
 public:
  explicit MemoryFile(const char* name) : fd_(memfd_create(name, 0)) {
    FUZZ_CHECK(fd_ >= 0, "memfd_create");
    path_ = absl::StrCat("/proc/self/fd/", fd_);
  }
  void Write(const uint8_t* data, size_t size) {
    FUZZ_CHECK(ftruncate(fd_, 0) == 0, "ftruncate");
    size_t done = 0;
    while (done < size) {
      const ssize_t n = pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      FUZZ_CHECK(n > 0, "pwrite");
      done += static_cast<size_t>(n);
    }
  }
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

}  // namespace
}  // namespace gemm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using gemm::fuzz::MemoryFile;
  static MemoryFile input("npy_fuzz_input"), copy("npy_fuzz_copy");
  input.Write(data, size);
  auto array = gemm::ReadNpy(input.path());
  if (!array.ok()) return 0;
  // product(shape), saturated: a zero dimension empties the array whatever the others hold.
  bool has_zero = false, overflow = false;
  int64_t count = 1;
  for (int64_t d : array->shape) {
    FUZZ_CHECK(d >= 0, absl::StrCat("negative dimension ", d));
    has_zero = has_zero || d == 0;
    overflow = overflow || __builtin_mul_overflow(count, d, &count);
  }
  if (has_zero) count = 0;
  FUZZ_CHECK((has_zero || !overflow) && count == static_cast<int64_t>(array->data.size()),
             absl::StrCat(array->data.size(), " values for the shape"));
  FUZZ_CHECK(gemm::WriteNpy(copy.path(), array->shape, array->data).ok(), "WriteNpy");
  auto back = gemm::ReadNpy(copy.path());
  FUZZ_CHECK(back.ok(), back.status().ToString());
  FUZZ_CHECK(back->shape == array->shape, "shape changed in a round trip");
  FUZZ_CHECK(back->data.size() == array->data.size() &&
                 (array->data.empty() ||
                  std::memcmp(back->data.data(), array->data.data(), array->data.size() * 4) == 0),
             "values changed in a round trip");
  return 0;
}
