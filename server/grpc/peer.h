// Classifies gRPC peer strings (ServerContext::peer()): whether a call comes from the server's
// own host, which same-host-only features (shared-memory registration) require.
#pragma once

#include "absl/strings/string_view.h"

namespace gemm::service {

// True for "unix:..." peers and loopback TCP peers ("ipv4:127.x.x.x:port", "ipv6:[::1]:port",
// also URI-escaped "ipv6:%5B::1%5D:port" and IPv4-mapped "ipv6:[::ffff:127.x.x.x]:port").
bool IsLocalPeer(absl::string_view peer);

}  // namespace gemm::service
