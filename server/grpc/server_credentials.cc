// Plaintext, TLS and mutual-TLS server credentials.
#include "server/grpc/server_credentials.h"

#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

#include <fstream>

#include "absl/strings/str_cat.h"

namespace gemm::service {
namespace {

// OK when `path` (given by `flag`) can be opened and holds something.
absl::Status CheckReadable(const std::string& flag, const std::string& path) {
  std::ifstream in(path);
  if (!in || in.peek() == std::ifstream::traits_type::eof()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": '", path, "' cannot be read or is empty"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsOptions& options) {
  if (!options.enabled()) {
    if (!options.key_file.empty() || !options.client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls_key and --tls_client_ca need --tls_cert (the server's certificate)");
    }
    return grpc::InsecureServerCredentials();
  }
  if (options.key_file.empty()) {
    return absl::InvalidArgumentError("--tls_cert needs --tls_key (its private key)");
  }
  if (options.reload < absl::Seconds(1)) {
    return absl::InvalidArgumentError("--tls_reload_s: must be >= 1");
  }
  for (const auto& [flag, path] :
       {std::pair<std::string, std::string>{"tls_cert", options.cert_file},
        {"tls_key", options.key_file},
        {"tls_client_ca", options.client_ca_file}}) {
    if (path.empty()) continue;
    if (absl::Status s = CheckReadable(flag, path); !s.ok()) return s;
  }
  const bool mutual = !options.client_ca_file.empty();
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      options.key_file, options.cert_file, options.client_ca_file,
      static_cast<unsigned int>(absl::ToInt64Seconds(options.reload)));
  grpc::experimental::TlsServerCredentialsOptions tls(provider);
  tls.watch_identity_key_cert_pairs();
  if (mutual) {
    tls.watch_root_certs();
    tls.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    tls.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  return grpc::experimental::TlsServerCredentials(tls);
}

}  // namespace gemm::service
