// Fuzz target: shared-memory registration (SharedMemoryRegistry Register, Unregister, Resolve)
// with fuzzed names, keys, offsets and sizes against real POSIX objects of 1, 4096, 5000 and
// 65536 bytes that the target creates (filled with ShmPattern), driven by a script, against a
// model of the registrations.
// Input: the byte cap (U32), then operations, each an opcode byte and its operands:
//   0 Register: a name byte (name "r<byte % 8>", or for 255 a Bytes string), a key mode byte
//     (0-3 an object's key; 4 a key plus a Bytes suffix; 5 the prefix plus a Bytes string;
//     6 a Bytes string), an offset and a size (each: a mode byte, even: a U16, odd: an I64)
//   1 Unregister "r<byte % 8>"
//   2 Resolve "r<byte % 8>" at an offset and size (as for Register) and read the bytes
//   3 drop the regions resolved so far (as finished requests do)
// Properties: a registration that succeeds names exactly an existing object (the key as given,
// no other), lies inside it, fits under the cap and maps the object's bytes at its offset; a
// taken name is refused; Resolve gives exactly a range inside its region, mapped to the object's
// bytes, and it stays readable after its region is unregistered; bytes() always equals the sum
// of the registered sizes.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "server/core/shared_memory_registry.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/fuzz_support.h"

namespace gemm::fuzz {
namespace {

using Int = __int128;

FuzzShmObjects& Objects() {
  static FuzzShmObjects objects({1, 4096, 5000, 65536});  // unlinked at exit
  return objects;
}

struct Model {
  int object = -1;  // index into Objects()
  int64_t offset = 0, bytes = 0;
  int64_t charged = 0;  // what the byte cap counts: the whole pages the mapping covers
};

class Script {
 public:
  explicit Script(FuzzInput& in)
      : in_(in), max_bytes_(in.U32()), registry_(&backend_, max_bytes_, Objects().prefix()) {}

  void Run() {
    while (!in_.empty()) {
      switch (in_.U8() % 4) {
        case 0:
          Register();
          break;
        case 1:
          Unregister();
          break;
        case 2:
          Resolve();
          break;
        default:
          keep_.clear();
          resolved_.clear();
          break;
      }
      Int sum = 0;
      for (const auto& [name, m] : model_) sum += m.charged;
      FUZZ_CHECK(registry_.bytes() == sum, absl::StrCat("bytes() is ", registry_.bytes()));
    }
    // Regions resolved before their unregistration stay mapped until dropped.
    for (const auto& [span, offset] : resolved_) CheckBytes(span.data(), span.size(), offset);
  }

 private:
  int64_t Number() { return in_.U8() % 2 == 0 ? in_.U16() : in_.I64(); }
  std::string Name() {
    const uint8_t b = in_.U8();
    return b == 255 ? in_.Bytes(300) : absl::StrCat("r", b % 8);
  }

  std::string Key() {
    FuzzShmObjects& objects = Objects();
    const uint8_t mode = in_.U8() % 7;
    if (mode < 4) return objects.key(mode);
    if (mode == 4) return objects.key(in_.U8() % objects.count()) + in_.Bytes(64);
    if (mode == 5) return objects.prefix() + in_.Bytes(64);
    return in_.Bytes(256);
  }

  // Checks that [data, data + size) holds the pattern of an object's bytes from `offset`.
  static void CheckBytes(const char* data, size_t size, int64_t offset) {
    for (size_t i = 0; i < size; ++i) {
      FUZZ_CHECK(data[i] == ShmPattern(offset + static_cast<int64_t>(i)),
                 absl::StrCat("mapped byte ", i, " differs (object offset ", offset, ")"));
    }
  }

  void Register() {
    const std::string name = Name(), key = Key();
    const int64_t offset = Number(), size = Number();
    auto region =
        registry_.Register({.name = name, .key = key, .offset = offset, .byte_size = size});
    if (!region.ok()) {
      FUZZ_CHECK(!region.status().message().empty(), "a refusal without a message");
      return;
    }
    const std::string what = absl::StrCat("registered '", absl::CHexEscape(name), "' key '",
                                          absl::CHexEscape(key), "' [", offset, ", +", size, ")");
    int object = -1;
    for (size_t i = 0; i < Objects().count(); ++i) {
      if (Objects().key(i) == key) object = static_cast<int>(i);
    }
    FUZZ_CHECK(object >= 0, what + ": the key names no object the target created");
    FUZZ_CHECK(!name.empty() && !model_.contains(name), what + ": a bad or taken name");
    FUZZ_CHECK(offset >= 0 && size >= 1 && Int{offset} + size <= Objects().size(object),
               what + ": outside the object");
    const int64_t page = sysconf(_SC_PAGESIZE);
    const int64_t charged = (offset % page + size + page - 1) / page * page;
    Int sum = charged;
    for (const auto& [n, m] : model_) sum += m.charged;
    FUZZ_CHECK(sum <= max_bytes_, what + ": over the cap");
    FUZZ_CHECK((*region)->desc().byte_size == size, what + ": size differs");
    CheckBytes((*region)->data(), static_cast<size_t>(size), offset);
    model_[name] = {object, offset, size, charged};
  }

  void Unregister() {
    const std::string name = Name();
    const absl::Status s = registry_.Unregister(name);
    FUZZ_CHECK(s.ok() == model_.contains(name), absl::StrCat("Unregister: ", s.ToString()));
    model_.erase(name);
  }

  void Resolve() {
    const std::string name = Name();
    const int64_t offset = Number(), size = Number();
    auto r = registry_.Resolve("a_shm", {name, offset, size}, &keep_);
    auto it = model_.find(name);
    const bool ok =
        it != model_.end() && offset >= 0 && size >= 1 && Int{offset} + size <= it->second.bytes;
    FUZZ_CHECK(r.ok() == ok, absl::StrCat("Resolve('", absl::CHexEscape(name), "', ", offset, ", ",
                                          size, "): ", r.status().ToString()));
    if (!ok) return;
    FUZZ_CHECK(static_cast<int64_t>(r->bytes.size()) == size && !r->on_device, "resolved range");
    const int64_t object_offset = it->second.offset + offset;
    CheckBytes(r->bytes.data(), r->bytes.size(), object_offset);
    resolved_.push_back({r->bytes, object_offset});
  }

  FuzzInput& in_;
  const int64_t max_bytes_;
  FuzzBackend backend_;
  core::SharedMemoryRegistry registry_;
  std::map<std::string, Model> model_;
  std::vector<std::shared_ptr<const core::SharedMemoryRegion>> keep_;
  std::vector<std::pair<absl::Span<char>, int64_t>> resolved_;  // with its object offset
};

}  // namespace
}  // namespace gemm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gemm::fuzz::Objects();
  gemm::fuzz::FuzzInput in(data, size);
  gemm::fuzz::Script(in).Run();
  return 0;
}
