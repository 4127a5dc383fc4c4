// Client channel credentials: plaintext, TLS, mutual TLS, bearer token.
#include "client/channel_security.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace gemm::client {
namespace {

// The contents of `path` (named by `field` in errors).
absl::StatusOr<std::string> ReadFile(const std::string& field, const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(field, ": cannot read '", path, "'"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ChannelSecurity& security) {
  if (!security.tls()) return grpc::InsecureChannelCredentials();
  if (security.tls_cert_file.empty() != security.tls_key_file.empty()) {
    return absl::InvalidArgumentError("tls_cert and tls_key: set both or neither");
  }
  grpc::SslCredentialsOptions ssl;
  for (const auto& [field, path, out] :
       {std::tuple{"tls_ca", &security.tls_ca_file, &ssl.pem_root_certs},
        {"tls_cert", &security.tls_cert_file, &ssl.pem_cert_chain},
        {"tls_key", &security.tls_key_file, &ssl.pem_private_key}}) {
    if (path->empty()) continue;
    absl::StatusOr<std::string> text = ReadFile(field, *path);
    if (!text.ok()) return text.status();
    *out = std::move(*text);
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::SslCredentials(ssl);
  std::string token = security.token;
  if (token.empty() && !security.token_file.empty()) {
    absl::StatusOr<std::string> text = ReadFile("token_file", security.token_file);
    if (!text.ok()) return text.status();
    token = std::string(absl::StripAsciiWhitespace(*text));
    if (token.empty()) return absl::InvalidArgumentError("token_file: is empty");
  }
  if (token.empty()) return credentials;
  return grpc::CompositeChannelCredentials(credentials, grpc::AccessTokenCredentials(token));
}

}  // namespace gemm::client
