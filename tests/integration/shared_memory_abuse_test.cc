// Integration: the real server (CPU backend) against clients that misuse shared memory. A client
// that shrinks (ftruncate) an object it registered gets FAILED_PRECONDITION naming the field and
// the region for requests that read it and that write into it, whether it shrank before they
// came or while they waited in the queue, and the server keeps serving everyone; registrations
// are capped in number; bad keys (embedded NUL, a symbolic link) get INVALID_ARGUMENT naming the
// key, never INTERNAL.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/common/shm_util.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_util.h"

namespace gemm::testing {
namespace {

constexpr int64_t kRegionBytes = 1 << 20;

class SharedMemoryAbuseTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Requests against a resident B wait 2 s to be coalesced; the others run at once.
    auto s = ServerProcess::Start({"--backend=cpu", "--cpu_workers=1", "--dispatch_when_idle=false",
                                   "--max_queue_delay_us=2000000"});
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

  // A request for `p` with A read from the region at offset 0 (copied there now).
  v1::GemmRequest ReadingRequest(const HostProblem& p) {
    std::memcpy(shm_->data(), p.a.data(), p.a.size());
    v1::GemmRequest req;
    FillProto(p, req.mutable_problem());
    req.mutable_problem()->clear_a();
    v1::SharedMemoryRef* a = req.mutable_problem()->mutable_a_shm();
    a->set_region(name_);
    a->set_byte_size(p.a.size());
    return req;
  }
  // A request for `p` with D written into the region at its second half.
  v1::GemmRequest WritingRequest(const HostProblem& p) {
    v1::GemmRequest req;
    FillProto(p, req.mutable_problem());
    v1::SharedMemoryRef* d = req.mutable_problem()->mutable_d_shm();
    d->set_region(name_);
    d->set_offset(kRegionBytes / 2);
    d->set_byte_size(p.m * p.n * 2);
    return req;
  }
  // Expects `resp` to be the error of a shrunk region, naming `field` and the region.
  void ExpectShrunk(const absl::StatusOr<v1::GemmResponse>& resp, const std::string& field) {
    ASSERT_FALSE(resp.ok());
    EXPECT_EQ(resp.status().code(), absl::StatusCode::kFailedPrecondition) << resp.status();
    EXPECT_NE(
        resp.status().message().find(absl::StrCat(field, ": shared-memory region '", name_, "'")),
        std::string::npos)
        << resp.status();
  }
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

TEST_F(SharedMemoryAbuseTest, ShrunkBeforeTheRequests) {
  HostProblem p = RandomProblem(8, 8, 8, false, false, 1, 0, gen_);
  const v1::GemmRequest reading = ReadingRequest(p), writing = WritingRequest(p);
  auto good = client().Gemm(reading, absl::Seconds(60));
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_LE(OutputError(p, good->outputs(0)), Tolerance(p));
  // NOTE: from here on this process must not touch the region's bytes either.
  ASSERT_TRUE(ResizeShm(shm_->key(), 0).ok());
  ExpectShrunk(client().Gemm(reading, absl::Seconds(60)), "problem.a_shm");
  ExpectShrunk(client().Gemm(writing, absl::Seconds(60)), "problem.d_shm");
  ExpectServing();
  ASSERT_TRUE(client().GetServerInfo().ok());
}

TEST_F(SharedMemoryAbuseTest, ShrunkWhileQueued) {
  // Requests against a resident B wait --max_queue_delay_us (2 s here) for others to join them:
  // both are admitted, the object shrinks, then they run.
  HostProblem p = RandomProblem(8, 16, 32, /*b_nk=*/true, false, 1, 0, gen_);
  auto weight = RegisterNkWeight(client(), "w", p.n, p.k, p.b);
  ASSERT_TRUE(weight.ok()) << weight.status();
  v1::GemmRequest reading = ReadingRequest(p), writing = WritingRequest(p);
  reading.mutable_problem()->set_b_handle(weight->handle());
  writing.mutable_problem()->set_b_handle(weight->handle());
  const absl::Time sent = absl::Now();
  absl::StatusOr<v1::GemmResponse> read_resp, write_resp;
  std::thread read_thread([&] { read_resp = client().Gemm(reading, absl::Seconds(60)); });
  std::thread write_thread([&] { write_resp = client().Gemm(writing, absl::Seconds(60)); });
  absl::SleepFor(absl::Milliseconds(300));
  ASSERT_TRUE(ResizeShm(shm_->key(), 0).ok());
  const absl::Duration shrunk_after = absl::Now() - sent;
  read_thread.join();
  write_thread.join();
  ASSERT_TRUE(client().ReleaseMatrix(weight->handle()).ok());
  if (shrunk_after > absl::Milliseconds(1500)) {
    GTEST_SKIP() << "this process stalled for " << shrunk_after
                 << ": the requests may have run before the object shrank";
  }
  ExpectShrunk(read_resp, "problem.a_shm");
  ExpectShrunk(write_resp, "problem.d_shm");
  ExpectServing();
}

TEST_F(SharedMemoryAbuseTest, RegionCountIsCapped) {
  // One region is registered by SetUp; fill up to the default cap with one-byte regions.
  constexpr int kCap = 1024;
  int registered = 1;
  for (; registered < kCap; ++registered) {
    auto r = client().RegisterSharedMemory(absl::StrCat(name_, "_", registered), shm_->key(),
                                           registered, 1);
    ASSERT_TRUE(r.ok()) << "region " << registered << ": " << r.status();
  }
  auto over = client().RegisterSharedMemory(name_ + "_over", shm_->key(), 0, 1);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted) << over.status();
  EXPECT_NE(over.status().message().find("--max_shared_memory_regions"), std::string::npos)
      << over.status();
  ASSERT_TRUE(client().UnregisterSharedMemory(absl::StrCat(name_, "_1")).ok());
  EXPECT_TRUE(client().RegisterSharedMemory(name_ + "_over", shm_->key(), 0, 1).ok());
  ExpectServing(512, 512, 512);  // a large GEMM still has the memory it needs
  for (int i = 2; i < kCap; ++i) {
    ASSERT_TRUE(client().UnregisterSharedMemory(absl::StrCat(name_, "_", i)).ok());
  }
  ASSERT_TRUE(client().UnregisterSharedMemory(name_ + "_over").ok());
}

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
