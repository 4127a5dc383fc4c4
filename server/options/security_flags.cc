// Flags for who may reach the server and what they may do: TLS and mutual TLS on the gRPC port,
// bearer tokens and client-certificate subjects with roles and per-caller limits, reflection, and
// the address the metrics port binds.
#include <cstdint>
#include <string>

#include "absl/flags/flag.h"
#include "server/options/flag_groups.h"

namespace {

const gemm::server::ProcessOptions kProcess;
const gemm::service::AuthOptions kAuth;

}  // namespace

ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate chain for TLS on the gRPC port (with --tls_key); read again when the "
          "file changes. Default empty: plaintext.");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert. Default empty.");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle for mutual TLS: every client must present a certificate it signed; read "
          "again when the file changes. Default empty: no client certificates.");
ABSL_FLAG(int32_t, tls_reload_s, static_cast<int32_t>(absl::ToInt64Seconds(kProcess.tls.reload)),
          "Seconds between looks at the TLS files for a rotated certificate, key or CA (>= 1).");
ABSL_FLAG(std::string, auth_tokens_file, kAuth.tokens_file,
          "Bearer tokens, one per line: TOKEN ROLES [name=NAME] [max_calls=N] "
          "[max_resident_bytes=N] [max_shared_memory_bytes=N] (roles: infer, weights, admin; "
          "limits in calls and bytes, 0: none). Callers send 'authorization: Bearer TOKEN'. Needs "
          "--tls_cert. Read again when the file changes. Default empty: no tokens.");
ABSL_FLAG(std::string, auth_cert_roles, kAuth.cert_roles_file,
          "Client-certificate subjects (RFC 2253, e.g. \"CN=alice,O=Example\", quoted when they "
          "hold spaces) with roles and limits, one per line in the --auth_tokens_file format; a "
          "caller without a token is known by its certificate. Needs --tls_client_ca. Default "
          "empty.");
ABSL_FLAG(bool, reflection, kProcess.reflection,
          "Serve gRPC server reflection (open to every caller, like health checking).");
ABSL_FLAG(int32_t, health_port, kProcess.health_port,
          "Plaintext port on --host serving only grpc.health.v1, for probes that cannot speak "
          "TLS (the kubelet's gRPC probes); 0: none.");
ABSL_FLAG(std::string, metrics_host, kProcess.metrics_host,
          "Address the --metrics_port HTTP endpoint binds (0.0.0.0 for a scraper on another "
          "host; the Kubernetes overlays set it).");

namespace gemm::server {

void ApplySecurityFlags(ServerOptions& options) {
  ProcessOptions& p = options.process;
  p.tls = {.cert_file = absl::GetFlag(FLAGS_tls_cert),
           .key_file = absl::GetFlag(FLAGS_tls_key),
           .client_ca_file = absl::GetFlag(FLAGS_tls_client_ca),
           .reload = absl::Seconds(absl::GetFlag(FLAGS_tls_reload_s))};
  p.reflection = absl::GetFlag(FLAGS_reflection);
  p.metrics_host = absl::GetFlag(FLAGS_metrics_host);
  p.health_port = absl::GetFlag(FLAGS_health_port);
  options.auth = {.tokens_file = absl::GetFlag(FLAGS_auth_tokens_file),
                  .cert_roles_file = absl::GetFlag(FLAGS_auth_cert_roles)};
}

}  // namespace gemm::server
