// Quoting of client strings in error messages.
#include "server/core/client_string.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace gemm::core {

std::string QuoteClientString(absl::string_view s) {
  if (s.size() <= kMaxQuotedClientBytes) return absl::StrCat("'", absl::CHexEscape(s), "'");
  return absl::StrCat("'", absl::CHexEscape(s.substr(0, kMaxQuotedClientBytes)), "...' (", s.size(),
                      " bytes)");
}

}  // namespace gemm::core
