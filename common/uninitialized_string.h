// Sizing a std::string without writing its bytes, for response buffers that a copy fills right
// after (megabytes of GEMM output, where std::string::resize's zero fill costs as much as the
// copy itself and runs on one thread before the copy is spread over several).
#pragma once

#include <cstddef>
#include <string>

namespace gemm {

// Makes `s` hold `n` bytes. Bytes past its old size are left unwritten (indeterminate) where the
// standard library allows it (C++23 resize_and_overwrite), else zero-filled; the caller must
// write every one of them before reading any.
void ResizeUninitialized(std::string* s, std::size_t n);

}  // namespace gemm
