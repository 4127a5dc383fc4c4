// Integration: the real server (CPU backend) against clients that misuse shared memory: bad keys
// (embedded NUL, a symbolic link) get INVALID_ARGUMENT naming the key, never INTERNAL.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "tests/common/shm_util.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_util.h"

namespace gemm::testing {
namespace {

constexpr int64_t kRegionBytes = 1 << 20;

class SharedMemoryAbuseTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto s = ServerProcess::Start({"--backend=cpu", "--cpu_workers=1"});
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = s->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    auto shm = CreateTestShm("abuse", kRegionBytes);
    ASSERT_TRUE(shm.ok()) << shm.status();
    shm_ = std::move(*shm);
    name_ = shm_->key().substr(1);
    auto info = client().RegisterSharedMemory(name_, shm_->key(), 0, kRegionBytes);
    ASSERT_TRUE(info.ok()) << info.status();
  }
  void TearDown() override { (void)client().UnregisterSharedMemory(name_); }

  client::GemmClient& client() { return server_->client(); }

  // Expects the server to answer an inline m x n x k request correctly.
  void ExpectServing(int64_t m = 5, int64_t n = 6, int64_t k = 7) {
    HostProblem p = RandomProblem(m, n, k, false, false, 1, 0, gen_);
    v1::GemmRequest req;
    FillProto(p, req.mutable_problem());
    auto resp = client().Gemm(req, absl::Seconds(60));
    ASSERT_TRUE(resp.ok()) << resp.status();
    EXPECT_LE(OutputError(p, resp->outputs(0)), Tolerance(p));
  }

  static ServerProcess* server_;
  std::unique_ptr<PosixShm> shm_;
  std::string name_;
  absl::BitGen gen_;
};
ServerProcess* SharedMemoryAbuseTest::server_ = nullptr;

TEST_F(SharedMemoryAbuseTest, BadKeysNameTheKey) {
  auto nul = client().RegisterSharedMemory("nul", shm_->key() + std::string("\0x", 2), 0, 1);
  EXPECT_EQ(nul.status().code(), absl::StatusCode::kInvalidArgument) << nul.status();
  EXPECT_EQ(nul.status().message().rfind("key: ", 0), 0u) << nul.status();

  const std::string link = absl::StrCat(shm_->key(), "_link");
  ASSERT_EQ(symlink(("/dev/shm" + shm_->key()).c_str(), ("/dev/shm" + link).c_str()), 0);
  auto linked = client().RegisterSharedMemory("link", link, 0, 1);
  unlink(("/dev/shm" + link).c_str());
  EXPECT_EQ(linked.status().code(), absl::StatusCode::kInvalidArgument) << linked.status();
  EXPECT_EQ(linked.status().message().rfind("key: ", 0), 0u) << linked.status();
  ExpectServing();
}

}  // namespace
}  // namespace gemm::testing
