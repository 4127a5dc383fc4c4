// Names the calling thread, so top -H, perf and /proc show which pool a busy thread belongs to.
#pragma once

#include <string_view>

namespace gemm {

// Sets the calling thread's name (Linux keeps the first 15 characters). Best effort: does
// nothing where the platform has no thread names.
void SetCurrentThreadName(std::string_view name);

}  // namespace gemm
