// ResizeUninitialized (see uninitialized_string.h). Built as C++23 (its own target) for
// std::string::resize_and_overwrite; std::string's layout is the same in every language mode
// of one standard library, so C++20 callers can use it.
#include "common/uninitialized_string.h"

namespace gemm {

void ResizeUninitialized(std::string* s, std::size_t n) {
#if defined(__cpp_lib_string_resize_and_overwrite)
  // NOTE: the operation keeps all n bytes and writes none; the caller's copy writes them before
  // anything reads them (the same contract as Abseil's STLStringResizeUninitialized). It returns
  // n, not the size it is handed: GCC 12's libstdc++ hands it the grown capacity (growing a
  // small string to 16..29 bytes hands 30), and returning that would keep bytes past n.
  s->resize_and_overwrite(n, [n](char*, std::size_t) { return n; });
#else
  s->resize(n);
#endif
}

}  // namespace gemm
