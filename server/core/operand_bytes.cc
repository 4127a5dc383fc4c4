// OperandBytes (see operand_bytes.h).
#include "server/core/operand_bytes.h"

#include <algorithm>
#include <cstring>

namespace gemm::core {

OperandBytes::OperandBytes(absl::string_view bytes) : size_(bytes.size()) {
  if (!bytes.empty()) pieces_.push_back(bytes);
}

OperandBytes OperandBytes::Pieces(absl::Span<const absl::string_view> pieces) {
  OperandBytes out;
  for (absl::string_view p : pieces) {
    if (p.empty()) continue;
    out.pieces_.push_back(p);
    out.size_ += p.size();
  }
  return out;
}

absl::string_view OperandBytes::Range(size_t offset, size_t n, std::string* scratch) const {
  size_t i = 0;
  while (i < pieces_.size() && offset >= pieces_[i].size()) offset -= pieces_[i++].size();
  if (n == 0 || i == pieces_.size()) return {};
  if (offset + n <= pieces_[i].size()) return pieces_[i].substr(offset, n);
  scratch->resize(n);
  size_t done = 0;
  for (; i < pieces_.size() && done < n; ++i, offset = 0) {
    const size_t take = std::min(pieces_[i].size() - offset, n - done);
    std::memcpy(scratch->data() + done, pieces_[i].data() + offset, take);
    done += take;
  }
  scratch->resize(done);
  return *scratch;
}

}  // namespace gemm::core
