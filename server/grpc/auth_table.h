// The callers a server knows: a tokens file (--auth_tokens_file) maps bearer tokens, a
// certificate roles file (--auth_cert_roles) maps client-certificate subjects, each to a caller
// with roles and per-caller limits. One caller per line:
//
//   IDENTITY ROLES [name=NAME] [max_calls=N] [max_resident_bytes=N] [max_shared_memory_bytes=N]
//
// IDENTITY is the token (at least 16 characters, no whitespace) or the certificate subject as
// gRPC reports it (RFC 2253, e.g. "CN=alice,O=Example"; in double quotes when it holds spaces).
// ROLES is a comma-separated list of infer, weights and admin. NAME (default: the subject, or
// "token-" and a fingerprint of the token) owns what the caller registers; the limits are
// core::CallerLimits (0 or absent: none). Lines starting with '#' and blank lines are skipped.
#pragma once

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/core/caller.h"

namespace gemm::service {

// What a caller may do. A role set is a bit mask of these; admin may do everything.
enum Role : uint8_t { kRoleInfer = 1, kRoleWeights = 2, kRoleAdmin = 4 };

// The role's name as the files and error messages spell it.
absl::string_view RoleName(Role role);

struct KnownCaller {
  core::Caller caller;
  uint8_t roles = 0;
  // Whether the caller has `role` (an admin has every role).
  bool Has(Role role) const { return (roles & (role | kRoleAdmin)) != 0; }
};

// Identity (token or subject) -> caller.
using CallerTable = absl::flat_hash_map<std::string, KnownCaller>;

// What the identities in a file are.
enum class IdentityKind { kToken, kCertSubject };

// Parses `text`, the contents of file `source`; INVALID_ARGUMENT naming "source:line" and what is
// wrong there (the token itself is never quoted in a message).
absl::StatusOr<CallerTable> ParseCallerTable(absl::string_view text, absl::string_view source,
                                             IdentityKind kind);

}  // namespace gemm::service
