// IsLocalPeer: which gRPC peers count as the server's own host.
#include "server/grpc/peer.h"

#include <gtest/gtest.h>

namespace gemm::service {
namespace {

TEST(PeerTest, LocalPeers) {
  EXPECT_TRUE(IsLocalPeer("ipv4:127.0.0.1:50432"));
  EXPECT_TRUE(IsLocalPeer("ipv4:127.1.2.3:1"));
  EXPECT_TRUE(IsLocalPeer("ipv6:[::1]:50432"));
  EXPECT_TRUE(IsLocalPeer("ipv6:%5B::1%5D:50432"));
  EXPECT_TRUE(IsLocalPeer("ipv6:[::ffff:127.0.0.1]:9"));
  EXPECT_TRUE(IsLocalPeer("unix:/tmp/gemm.sock"));
  EXPECT_TRUE(IsLocalPeer("unix-abstract:gemm"));
}

TEST(PeerTest, RemotePeers) {
  EXPECT_FALSE(IsLocalPeer("ipv4:10.0.0.7:50432"));
  EXPECT_FALSE(IsLocalPeer("ipv4:128.0.0.1:1"));
  EXPECT_FALSE(IsLocalPeer("ipv6:[::2]:50432"));
  EXPECT_FALSE(IsLocalPeer("ipv6:[::10]:50432"));
  EXPECT_FALSE(IsLocalPeer("ipv6:[fe80::1]:1"));
  EXPECT_FALSE(IsLocalPeer("ipv6:[::ffff:10.0.0.1]:9"));
  EXPECT_FALSE(IsLocalPeer(""));
  EXPECT_FALSE(IsLocalPeer("127.0.0.1:1"));
}

}  // namespace
}  // namespace gemm::service
