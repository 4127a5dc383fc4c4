// The byte format the fuzz targets read their operation scripts in, and the writer the seed
// corpus generator uses to produce it: little-endian integers and byte strings with a 16-bit
// length prefix, read front to back. Reads past the end give zeros and empty strings, so every
// input decodes to some script.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace gemm::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size)
      : data_(reinterpret_cast<const char*>(data)), size_(size) {}

  // True once every byte has been read.
  bool empty() const { return pos_ >= size_; }

  uint8_t U8() { return static_cast<uint8_t>(Unsigned(1)); }
  uint16_t U16() { return static_cast<uint16_t>(Unsigned(2)); }
  uint32_t U32() { return static_cast<uint32_t>(Unsigned(4)); }
  int64_t I64() { return static_cast<int64_t>(Unsigned(8)); }

  // A byte string: a U16 length, then that many bytes (fewer when the input ends first), at
  // most `max_bytes` of which are kept.
  std::string Bytes(size_t max_bytes) {
    const size_t want = U16();
    const size_t take = want < size_ - pos_ ? want : size_ - pos_;
    std::string out(data_ + pos_, take < max_bytes ? take : max_bytes);
    pos_ += take;
    return out;
  }

  // Everything not read yet (the input is then empty).
  absl::string_view Rest() {
    absl::string_view out(data_ + pos_, size_ - pos_);
    pos_ = size_;
    return out;
  }

 private:
  uint64_t Unsigned(int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes && pos_ < size_; ++i, ++pos_) {
      v |= uint64_t{static_cast<uint8_t>(data_[pos_])} << (8 * i);
    }
    return v;
  }

  const char* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Builds an input FuzzInput reads back field for field.
class FuzzScript {
 public:
  FuzzScript& U8(uint8_t v) { return Unsigned(v, 1); }
  FuzzScript& U16(uint16_t v) { return Unsigned(v, 2); }
  FuzzScript& U32(uint32_t v) { return Unsigned(v, 4); }
  FuzzScript& I64(int64_t v) { return Unsigned(static_cast<uint64_t>(v), 8); }
  // A byte string of at most 65535 bytes (FuzzInput::Bytes).
  FuzzScript& Bytes(absl::string_view s) {
    U16(static_cast<uint16_t>(s.size()));
    out_.append(s.data(), s.size());
    return *this;
  }
  // Raw bytes with no length (FuzzInput::Rest at the end of a script).
  FuzzScript& Raw(absl::string_view s) {
    out_.append(s.data(), s.size());
    return *this;
  }
  const std::string& str() const { return out_; }

 private:
  FuzzScript& Unsigned(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return *this;
  }
  std::string out_;
};

}  // namespace gemm::fuzz
