// Parsing of the tokens and certificate roles files.
#include "server/grpc/auth_table.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gemm::service {
namespace {

constexpr size_t kMinTokenChars = 16;

// A stable, non-reversible short name for a token (FNV-1a, 64 bits), so logs and owners never
// carry the token itself.
std::string TokenFingerprint(absl::string_view token) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : token) h = (h ^ c) * 1099511628211ull;
  return absl::StrFormat("token-%016x", h);
}

absl::StatusOr<uint8_t> ParseRoles(absl::string_view list) {
  uint8_t roles = 0;
  for (absl::string_view r : absl::StrSplit(list, ',')) {
    if (r == "infer") {
      roles |= kRoleInfer;
    } else if (r == "weights") {
      roles |= kRoleWeights;
    } else if (r == "admin") {
      roles |= kRoleAdmin;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("role '", r, "' is not one of infer, weights, admin"));
    }
  }
  return roles;
}

// Applies one "key=value" field to `known`.
absl::Status ApplyField(absl::string_view field, KnownCaller& known) {
  const std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(field, '=');
  if (kv.first == "name") {
    if (kv.second.empty()) return absl::InvalidArgumentError("name= is empty");
    known.caller.name = std::string(kv.second);
    return absl::OkStatus();
  }
  int64_t* target = kv.first == "max_calls"            ? &known.caller.limits.max_calls
                    : kv.first == "max_resident_bytes" ? &known.caller.limits.max_resident_bytes
                    : kv.first == "max_shared_memory_bytes"
                        ? &known.caller.limits.max_shared_memory_bytes
                        : nullptr;
  if (target == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", kv.first,
        "' is not one of name, max_calls, max_resident_bytes, max_shared_memory_bytes"));
  }
  if (!absl::SimpleAtoi(kv.second, target) || *target < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(kv.first, "=", kv.second, " is not a count >= 0"));
  }
  return absl::OkStatus();
}

// Splits `line` into its identity (quoted or not) and the fields after it.
absl::Status SplitLine(absl::string_view line, std::string* identity,
                       std::vector<absl::string_view>* fields) {
  if (absl::ConsumePrefix(&line, "\"")) {
    const size_t end = line.find('"');
    if (end == absl::string_view::npos) return absl::InvalidArgumentError("unclosed '\"'");
    *identity = std::string(line.substr(0, end));
    line.remove_prefix(end + 1);
  } else {
    const size_t end = line.find_first_of(" \t");
    *identity = std::string(line.substr(0, end));
    line.remove_prefix(end == absl::string_view::npos ? line.size() : end);
  }
  *fields = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (identity->empty()) return absl::InvalidArgumentError("empty identity");
  if (fields->empty()) return absl::InvalidArgumentError("no roles after the identity");
  return absl::OkStatus();
}

// Parses one non-comment line into `table`.
absl::Status ParseLine(absl::string_view line, IdentityKind kind, CallerTable& table) {
  std::string identity;
  std::vector<absl::string_view> fields;
  if (absl::Status s = SplitLine(line, &identity, &fields); !s.ok()) return s;
  if (kind == IdentityKind::kToken && identity.size() < kMinTokenChars) {
    return absl::InvalidArgumentError(
        absl::StrCat("a token must have at least ", kMinTokenChars, " characters"));
  }
  absl::StatusOr<uint8_t> roles = ParseRoles(fields[0]);
  if (!roles.ok()) return roles.status();
  KnownCaller known;
  known.roles = *roles;
  known.caller.admin = (*roles & kRoleAdmin) != 0;
  known.caller.name = kind == IdentityKind::kToken ? TokenFingerprint(identity) : identity;
  for (size_t i = 1; i < fields.size(); ++i) {
    if (absl::Status s = ApplyField(fields[i], known); !s.ok()) return s;
  }
  if (!table.emplace(std::move(identity), std::move(known)).second) {
    return absl::InvalidArgumentError("the identity is listed twice");
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view RoleName(Role role) {
  switch (role) {
    case kRoleInfer:
      return "infer";
    case kRoleWeights:
      return "weights";
    case kRoleAdmin:
      return "admin";
  }
  return "?";
}

absl::StatusOr<CallerTable> ParseCallerTable(absl::string_view text, absl::string_view source,
                                             IdentityKind kind) {
  CallerTable table;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    if (absl::Status s = ParseLine(line, kind, table); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", line_number, ": ", s.message()));
    }
  }
  return table;
}

}  // namespace gemm::service
