// Quoting of client-provided strings (names, handles, keys, kernel names) in error messages: a
// client may send megabytes there, and an error message that echoes them whole would be too
// large to deliver (gRPC carries the message in a trailer of bounded size).
#pragma once

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace gemm::core {

// Most bytes of a client string QuoteClientString() keeps.
inline constexpr size_t kMaxQuotedClientBytes = 128;

// `s` in single quotes with non-printable bytes C-escaped; when longer than
// kMaxQuotedClientBytes, its first kMaxQuotedClientBytes bytes followed by "..." and its length,
// e.g. 'abc...' (5000000 bytes).
std::string QuoteClientString(absl::string_view s);

}  // namespace gemm::core
