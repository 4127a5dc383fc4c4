// An operand's host bytes as the server core sees them: one contiguous range (a registered
// shared-memory region, a test's buffer), or pieces in order (the buffers a request message
// arrived in, read where they lie instead of copied into one string). Borrowed: whoever made the
// request keeps the memory alive until it completes (core::WorkItem::keep_alive).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace gemm::core {

class OperandBytes {
 public:
  OperandBytes() = default;
  // One contiguous range (implicit: wherever a string_view was taken, this is too).
  OperandBytes(absl::string_view bytes);  // NOLINT(google-explicit-constructor)
  OperandBytes(const char* bytes) : OperandBytes(absl::string_view(bytes)) {}         // NOLINT
  OperandBytes(const std::string& bytes) : OperandBytes(absl::string_view(bytes)) {}  // NOLINT
  OperandBytes(const char* data, size_t size) : OperandBytes(absl::string_view(data, size)) {}

  // The bytes of `pieces`, in order (empty pieces are dropped).
  static OperandBytes Pieces(absl::Span<const absl::string_view> pieces);

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Whether the bytes are one range (or none): data() points at them.
  bool contiguous() const { return pieces_.size() <= 1; }
  // The first byte when contiguous and not empty; nullptr otherwise.
  const char* data() const { return pieces_.size() == 1 ? pieces_[0].data() : nullptr; }
  // The pieces in order, none empty (one for a contiguous range, none when empty).
  absl::Span<const absl::string_view> pieces() const { return pieces_; }

  // Bytes [offset, offset + n) (within size()) as one range: a view into them when they lie in
  // one piece, else a copy made in `*scratch`.
  absl::string_view Range(size_t offset, size_t n, std::string* scratch) const;

 private:
  absl::InlinedVector<absl::string_view, 1> pieces_;
  size_t size_ = 0;
};

}  // namespace gemm::core
