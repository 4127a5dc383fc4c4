// Client security flags.
#include "client/security_flags.h"

#include <string>

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, tls_ca, "",
          "PEM CA bundle that signed the server's certificate: speak TLS. Default empty: "
          "plaintext (unless another TLS flag or a token is set; then the system's CAs).");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM client certificate for mutual TLS (with --tls_key). Default empty.");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert. Default empty.");
ABSL_FLAG(std::string, token, "",
          "Bearer token sent with every call ('authorization: Bearer TOKEN'; implies TLS). "
          "Default empty. Prefer --token_file: a flag shows in the process list.");
ABSL_FLAG(std::string, token_file, "",
          "File holding the bearer token (surrounding whitespace dropped). Default empty.");

namespace gemm::client {

ChannelSecurity ChannelSecurityFromFlags() {
  return {.tls_ca_file = absl::GetFlag(FLAGS_tls_ca),
          .tls_cert_file = absl::GetFlag(FLAGS_tls_cert),
          .tls_key_file = absl::GetFlag(FLAGS_tls_key),
          .token = absl::GetFlag(FLAGS_token),
          .token_file = absl::GetFlag(FLAGS_token_file)};
}

}  // namespace gemm::client
