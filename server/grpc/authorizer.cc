// Per-RPC authentication and the method -> role table.
#include "server/grpc/authorizer.h"

#include <grpc/grpc_security_constants.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gemm::service {

Role RequiredRole(absl::string_view method) {
  if (method == "Gemm" || method == "GemmStream" || method == "GemmStreamPacked" ||
      method == "GetServerInfo" || method == "ListMatrices") {
    return kRoleInfer;
  }
  if (method == "RegisterMatrix" || method == "ReleaseMatrix") return kRoleWeights;
  return kRoleAdmin;
}

Presented PresentedBy(const grpc::ServerContextBase& context) {
  Presented p;
  const auto& metadata = context.client_metadata();
  if (auto it = metadata.find("authorization"); it != metadata.end()) {
    p.authorization = std::string(it->second.data(), it->second.size());
  }
  if (const auto auth = context.auth_context(); auth != nullptr) {
    for (const grpc::string_ref& v : auth->FindPropertyValues(GRPC_X509_SUBJECT_PROPERTY_NAME)) {
      p.cert_subject = std::string(v.data(), v.size());
    }
  }
  return p;
}

absl::StatusOr<std::unique_ptr<Authorizer>> Authorizer::Create(const AuthOptions& options) {
  std::unique_ptr<WatchedCallerTable> tokens, subjects;
  if (!options.tokens_file.empty()) {
    auto t =
        WatchedCallerTable::Create(options.tokens_file, IdentityKind::kToken, options.reload_check);
    if (!t.ok()) return t.status();
    tokens = std::move(*t);
  }
  if (!options.cert_roles_file.empty()) {
    auto t = WatchedCallerTable::Create(options.cert_roles_file, IdentityKind::kCertSubject,
                                        options.reload_check);
    if (!t.ok()) return t.status();
    subjects = std::move(*t);
  }
  return std::unique_ptr<Authorizer>(new Authorizer(std::move(tokens), std::move(subjects)));
}

absl::StatusOr<KnownCaller> Authorizer::Identify(const Presented& presented,
                                                 absl::string_view method, Role role) const {
  const std::string needs = absl::StrCat(method, " needs role '", RoleName(role), "'");
  if (presented.authorization.has_value()) {
    absl::string_view value = *presented.authorization;
    if (value.size() < 7 || !absl::EqualsIgnoreCase(value.substr(0, 7), "Bearer ")) {
      return absl::UnauthenticatedError(
          absl::StrCat("authorization: expected 'Bearer <token>' (", needs, ")"));
    }
    if (tokens_ != nullptr) {
      const auto table = tokens_->Current();
      if (auto it = table->find(value.substr(7)); it != table->end()) return it->second;
    }
    return absl::UnauthenticatedError(
        absl::StrCat("authorization: the bearer token is not a known one (", needs, ")"));
  }
  if (subjects_ != nullptr && !presented.cert_subject.empty()) {
    const auto table = subjects_->Current();
    if (auto it = table->find(presented.cert_subject); it != table->end()) return it->second;
    return absl::UnauthenticatedError(
        absl::StrCat("client certificate '", presented.cert_subject,
                     "' is not in --auth_cert_roles and no bearer token was sent (", needs, ")"));
  }
  return absl::UnauthenticatedError(
      absl::StrCat("no credentials: send 'authorization: Bearer <token>' metadata (", needs, ")"));
}

absl::StatusOr<core::Caller> Authorizer::Authorize(const Presented& presented,
                                                   absl::string_view method) const {
  if (!enabled()) return core::Caller{};
  const Role role = RequiredRole(method);
  absl::StatusOr<KnownCaller> known = Identify(presented, method, role);
  if (!known.ok()) return known.status();
  if (!known->Has(role)) {
    return absl::PermissionDeniedError(absl::StrCat("caller '", known->caller.name,
                                                    "' lacks role '", RoleName(role), "', which ",
                                                    method, " needs"));
  }
  return known->caller;
}

}  // namespace gemm::service
