// What a client presents to a server: TLS (the CA that signed the server's certificate),
// optionally its own certificate for mutual TLS, and a bearer token sent with every call as
// "authorization: Bearer <token>". Shared by the client library, gemm_client and gemm_loadgen.
#pragma once

#include <grpcpp/security/credentials.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace gemm::client {

struct ChannelSecurity {
  // PEM CA bundle that signed the server's certificate; empty (default) with no other field set:
  // plaintext. With only a client certificate or token set, the system's CAs verify the server.
  std::string tls_ca_file;
  // PEM certificate and key the client presents (mutual TLS); both or neither. Default empty.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Bearer token sent with every call (needs TLS: gRPC sends no token in plaintext). Default
  // empty.
  std::string token;
  // A file holding the token (surrounding whitespace dropped); used when `token` is empty.
  std::string token_file;

  // Whether the channel speaks TLS.
  bool tls() const {
    return !tls_ca_file.empty() || !tls_cert_file.empty() || !token.empty() || !token_file.empty();
  }
};

// Channel credentials for `security`: insecure ones when it asks for nothing; INVALID_ARGUMENT
// naming the field for a file that cannot be read or a certificate without its key.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ChannelSecurity& security);

}  // namespace gemm::client
