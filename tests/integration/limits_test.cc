// Integration: the server's limits seen from a client, each on a server of its own flags: flags
// that make no sense stop the server at start-up; a small request cannot ask for a response over
// --max_response_bytes.
#include <gtest/gtest.h>

#include <string>

#include "tests/integration/server_process.h"

namespace gemm::testing {
namespace {

TEST(LimitsStartupTest, FlagsThatMakeNoSenseStopTheServer) {
  // A dimension past 32 bits (products of such dimensions used to wrap around), a message size
  // gRPC's int cannot hold, no problems at all.
  for (const std::string flag :
       {"--max_dim=4294967296", "--max_message_bytes=4294967296", "--max_problems=0"}) {
    SCOPED_TRACE(flag);
    auto s = ServerProcess::Start({"--backend=cpu", flag});
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("exited during start-up"), std::string::npos) << s.status();
  }
}

TEST(LimitsResponseTest, SmallRequestCannotAskForAHugeResponse) {
  auto server = ServerProcess::Start({"--backend=cpu", "--max_response_bytes=1048576"});
  ASSERT_TRUE(server.ok()) << server.status();
  // 64 KiB of operands asking for a 1 GiB FP32 response.
  v1::GemmRequest req;
  v1::Problem* p = req.mutable_problem();
  p->set_m(16384);
  p->set_n(16384);
  p->set_k(1);
  p->set_a(std::string(16384 * 2, '\x01'));
  p->set_b(std::string(16384 * 2, '\x01'));
  p->set_output_dtype(v1::DTYPE_FP32);
  auto resp = (*server)->client().Gemm(req, absl::Seconds(30));
  ASSERT_FALSE(resp.ok());
  EXPECT_EQ(resp.status().code(), absl::StatusCode::kResourceExhausted) << resp.status();
  EXPECT_NE(resp.status().message().find("--max_response_bytes"), std::string::npos)
      << resp.status();
}

}  // namespace
}  // namespace gemm::testing
