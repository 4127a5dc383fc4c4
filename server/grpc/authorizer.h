// Who may call what: the one place where the service decides, per RPC, who the caller is (a
// bearer token in the "authorization" metadata, else a verified client certificate's subject)
// and whether the caller holds the role the method needs (RequiredRole). Health checking and
// reflection are separate services and never come here. Thread-safe.
#pragma once

#include <grpcpp/server_context.h>

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/core/caller.h"
#include "server/grpc/auth_file.h"
#include "server/grpc/auth_table.h"

namespace gemm::service {

struct AuthOptions {
  // Bearer tokens with roles and limits (auth_table.h); empty: none. Default empty.
  std::string tokens_file;
  // Client-certificate subjects with roles and limits (needs mutual TLS); empty: none.
  std::string cert_roles_file;
  // How often the files are looked at again for changes. Default 1 s.
  absl::Duration reload_check = absl::Seconds(1);
};

// The role gemm.v1.GemmService method `method` needs: infer for Gemm, the streams, GetServerInfo
// and ListMatrices; weights for RegisterMatrix and ReleaseMatrix; admin for the shared-memory
// methods and any method not named here.
Role RequiredRole(absl::string_view method);

// What a call presents: the "authorization" metadata value, if any, and the verified client
// certificate's subject (empty without one).
struct Presented {
  std::optional<std::string> authorization;
  std::string cert_subject;
};

// What `context` presents.
Presented PresentedBy(const grpc::ServerContextBase& context);

class Authorizer {
 public:
  // Reads the files named in `options` (errors name the file and line). With neither file every
  // call is an anonymous admin (authentication off).
  static absl::StatusOr<std::unique_ptr<Authorizer>> Create(const AuthOptions& options);

  // Whether callers are authenticated at all.
  bool enabled() const { return tokens_ != nullptr || subjects_ != nullptr; }

  // The caller of `method` presenting `presented`: UNAUTHENTICATED when it presents no known
  // identity, PERMISSION_DENIED when the caller lacks the method's role; both name the role.
  absl::StatusOr<core::Caller> Authorize(const Presented& presented,
                                         absl::string_view method) const;

 private:
  Authorizer(std::unique_ptr<WatchedCallerTable> tokens,
             std::unique_ptr<WatchedCallerTable> subjects)
      : tokens_(std::move(tokens)), subjects_(std::move(subjects)) {}
  // The known caller `presented` stands for, or UNAUTHENTICATED.
  absl::StatusOr<KnownCaller> Identify(const Presented& presented, absl::string_view method,
                                       Role role) const;

  const std::unique_ptr<WatchedCallerTable> tokens_;
  const std::unique_ptr<WatchedCallerTable> subjects_;
};

}  // namespace gemm::service
