// ResizeUninitialized (see uninitialized_string.h). Built as C++23 (its own target) for
// std::string::resize_and_overwrite; std::string's layout is the same in every language mode
// of one standard library, so C++20 callers can use it.
#include "common/uninitialized_string.h"

namespace gemm {

void ResizeUninitialized(std::string* s, std::size_t n) {
#if defined(__cpp_lib_string_resize_and_overwrite)
  // NOTE: the operation keeps all n bytes and writes none; the caller's copy writes them before
  // anything reads them (the same contract as Abseil's STLStringResizeUninitialized).
  s->resize_and_overwrite(n, [](char*, std::size_t m) { return m; });
#else
  s->resize(n);
#endif
}

}  // namespace gemm
