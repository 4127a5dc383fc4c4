// Fuzz target: the RegisterMatrix upload state machine (MatrixRegistry::Begin,
// MatrixRegistration::Append/Finish, abandoning an upload, Release, Lookup) driven by a script,
// against a model of what each step must answer.
// Input: max_resident_bytes (U32) and max_dim (I64, any value), then operations, each an opcode
// byte and its operands:
//   0 Begin: rows (I64), cols (I64)
//   1 Append to upload #U8: an offset mode byte (even: the bytes received so far, odd: an I64
//     read next) and the chunk length (U16; chunk bytes derive from the offset)
//   2 Finish upload #U8      3 abandon upload #U8
//   4 Release matrix #U8 (255: an unknown handle)      5 Lookup matrix #U8
// Properties: Begin accepts exactly the headers with 1 <= rows, cols <= max_dim whose
// rows*cols*2 bytes fit under the cap; Append accepts exactly the chunk at the next offset that
// does not overrun; Finish succeeds exactly once all bytes arrived, and the published matrix
// holds them; resident_bytes() always equals what the open uploads reserve plus what the
// published matrices hold, and returns to zero when everything is released.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "server/core/matrix_registry.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/fuzz_support.h"

namespace gemm::fuzz {
namespace {

using Int = __int128;

char ChunkByte(int64_t offset) {
  return static_cast<char>((static_cast<uint64_t>(offset) * 29 + 11) & 0xff);
}

struct Upload {
  std::unique_ptr<core::MatrixRegistration> registration;
  int64_t total = 0;
  int64_t received = 0;
  bool finished = false;
};

class Script {
 public:
  explicit Script(FuzzInput& in)
      : in_(in), max_bytes_(in.U32()), max_dim_(in.I64()), registry_(&backend_, max_bytes_) {}

  void Run() {
    while (!in_.empty()) {
      switch (in_.U8() % 6) {
        case 0:
          Begin();
          break;
        case 1:
          Append();
          break;
        case 2:
          Finish();
          break;
        case 3:
          Abandon();
          break;
        case 4:
          Release();
          break;
        default:
          Lookup();
          break;
      }
      FUZZ_CHECK(registry_.resident_bytes() == Reserved(),
                 absl::StrCat("resident_bytes() ", registry_.resident_bytes(), ", expected ",
                              static_cast<int64_t>(Reserved())));
    }
    uploads_.clear();
    for (auto& m : published_) FUZZ_CHECK(registry_.Release(m->desc().handle).ok(), "release");
    published_.clear();
    FUZZ_CHECK(registry_.resident_bytes() == 0, "bytes left reserved after everything went");
  }

 private:
  Int Reserved() const {
    Int sum = 0;
    for (const Upload& u : uploads_) sum += u.finished ? 0 : u.total;
    for (const auto& m : published_) sum += m->bytes();
    return sum;
  }

  Upload* Pick() {
    const uint8_t i = in_.U8();
    return uploads_.empty() ? nullptr : &uploads_[i % uploads_.size()];
  }

  void Begin() {
    const int64_t rows = in_.I64(), cols = in_.I64();
    const bool valid = rows >= 1 && cols >= 1 && rows <= max_dim_ && cols <= max_dim_;
    // (Only for valid dimensions: two of INT64_MIN would overflow even the 128-bit product.)
    const Int bytes = valid ? Int{rows} * cols * 2 : 0;
    const bool fits = valid && Reserved() + bytes <= max_bytes_;
    auto reg = registry_.Begin({.name = "m", .rows = rows, .cols = cols}, max_dim_);
    FUZZ_CHECK(reg.ok() == fits,
               absl::StrCat("Begin(", rows, "x", cols, ", max_dim ", max_dim_, ", cap ", max_bytes_,
                            "): ", reg.status().ToString()));
    if (reg.ok()) uploads_.push_back({std::move(*reg), static_cast<int64_t>(bytes)});
  }

  void Append() {
    Upload* u = Pick();
    const bool next = in_.U8() % 2 == 0;
    const int64_t given = next ? 0 : in_.I64();
    const uint16_t length = in_.U16();
    if (u == nullptr) return;
    const int64_t offset = next ? u->received : given;
    std::string chunk(length, '\0');
    // The offset is fuzzed: the pattern index wraps instead of overflowing.
    for (uint16_t i = 0; i < length; ++i) {
      chunk[i] = ChunkByte(static_cast<int64_t>(static_cast<uint64_t>(offset) + i));
    }
    const bool ok = !u->finished && offset == u->received && Int{offset} + length <= u->total;
    const absl::Status s = u->registration->Append(offset, chunk);
    FUZZ_CHECK(s.ok() == ok, absl::StrCat("Append(", offset, ", ", length, ") after ", u->received,
                                          " of ", u->total, ": ", s.ToString()));
    if (ok) u->received += length;
  }

  void Finish() {
    Upload* u = Pick();
    if (u == nullptr) return;
    const bool ok = !u->finished && u->received == u->total;
    auto m = u->registration->Finish();
    FUZZ_CHECK(m.ok() == ok, absl::StrCat("Finish after ", u->received, " of ", u->total, ": ",
                                          m.status().ToString()));
    if (!ok) return;
    u->finished = true;
    const auto& stored = static_cast<const FuzzMatrix&>(**m).stored;
    FUZZ_CHECK(static_cast<int64_t>(stored.size()) == u->total, "published size");
    for (size_t i = 0; i < stored.size(); ++i) {
      FUZZ_CHECK(stored[i] == ChunkByte(static_cast<int64_t>(i)), "published bytes differ");
    }
    auto found = registry_.Lookup((*m)->desc().handle);
    FUZZ_CHECK(found.ok() && *found == *m, "a published matrix is not found");
    published_.push_back(std::move(*m));
  }

  void Abandon() {
    const uint8_t i = in_.U8();
    if (!uploads_.empty()) uploads_.erase(uploads_.begin() + i % uploads_.size());
  }

  void Release() {
    const uint8_t i = in_.U8();
    if (i == 255 || published_.empty()) {
      FUZZ_CHECK(registry_.Release("mat-unknown").code() == absl::StatusCode::kNotFound,
                 "released an unknown handle");
      return;
    }
    const size_t j = i % published_.size();
    const std::string handle = published_[j]->desc().handle;
    FUZZ_CHECK(registry_.Release(handle).ok(), "release of a published matrix");
    FUZZ_CHECK(registry_.Release(handle).code() == absl::StatusCode::kNotFound, "released twice");
    FUZZ_CHECK(!registry_.Lookup(handle).ok(), "a released matrix is still found");
    published_.erase(published_.begin() + j);
  }

  void Lookup() {
    const uint8_t i = in_.U8();
    if (published_.empty()) return;
    const auto& m = published_[i % published_.size()];
    auto found = registry_.Lookup(m->desc().handle);
    FUZZ_CHECK(found.ok() && *found == m, "lookup of a published matrix");
  }

  FuzzInput& in_;
  const int64_t max_bytes_;
  const int64_t max_dim_;
  FuzzBackend backend_;
  core::MatrixRegistry registry_;
  std::vector<Upload> uploads_;
  std::vector<std::shared_ptr<const core::ResidentMatrix>> published_;
};

}  // namespace
}  // namespace gemm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gemm::fuzz::FuzzInput in(data, size);
  gemm::fuzz::Script(in).Run();
  return 0;
}
