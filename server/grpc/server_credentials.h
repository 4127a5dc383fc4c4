// The gRPC port's credentials: plaintext, TLS, or mutual TLS, built on gRPC's own TLS stack. The
// certificate, key and client CA files are watched by gRPC (FileWatcherCertificateProvider) and
// read again when they change, so a rotated certificate is served to the next new connection
// without a restart.
#pragma once

#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gemm::service {

struct TlsOptions {
  // PEM certificate chain the server presents; empty (default): plaintext.
  std::string cert_file;
  // PEM private key of that certificate; set with cert_file.
  std::string key_file;
  // PEM CA bundle that must have signed every client's certificate (mutual TLS); empty
  // (default): clients present none.
  std::string client_ca_file;
  // How often the files are looked at for changes (at least 1 s). Default 10 s.
  absl::Duration reload = absl::Seconds(10);

  // Whether the port speaks TLS.
  bool enabled() const { return !cert_file.empty(); }
};

// Credentials for `options`: InsecureServerCredentials without a certificate; INVALID_ARGUMENT
// naming the flag for an incomplete set (a key without a certificate, a client CA without
// either) or a file that cannot be read.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsOptions& options);

}  // namespace gemm::service
