// gRPC peer classification.
#include "server/grpc/peer.h"

#include "absl/strings/match.h"
#include "absl/strings/strip.h"

namespace gemm::service {

bool IsLocalPeer(absl::string_view peer) {
  if (absl::ConsumePrefix(&peer, "unix:") || absl::ConsumePrefix(&peer, "unix-abstract:")) {
    return true;
  }
  if (absl::ConsumePrefix(&peer, "ipv4:")) return absl::StartsWith(peer, "127.");
  if (!absl::ConsumePrefix(&peer, "ipv6:")) return false;
  if (!absl::ConsumePrefix(&peer, "[") && !absl::ConsumePrefix(&peer, "%5B") &&
      !absl::ConsumePrefix(&peer, "%5b")) {
    return false;
  }
  return absl::StartsWith(peer, "::1]") || absl::StartsWith(peer, "::1%5D") ||
         absl::StartsWith(peer, "::1%5d") || absl::StartsWith(peer, "::ffff:127.");
}

}  // namespace gemm::service
