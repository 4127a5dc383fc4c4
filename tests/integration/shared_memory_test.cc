// Integration: operands and outputs through registered POSIX shared-memory regions (the real
// server on the CPU backend): results match the float64 reference for single, batched and grouped
// requests; bad references and registrations get the right status naming the field; an
// unregistered region stays usable by nobody and the server keeps serving.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <functional>

#include "absl/strings/str_cat.h"
#include "common/posix_shm.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_util.h"

namespace gemm::testing {
namespace {

constexpr int64_t kRegionBytes = 1 << 20;

class SharedMemoryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto s = ServerProcess::Start(
        {"--backend=cpu", "--max_shared_memory_bytes=" + std::to_string(4 * kRegionBytes)});
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = s->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    const std::string key = absl::StrCat("/gemm_shm_test_", getpid(), "_", next_++);
    auto shm = PosixShm::Create(key, kRegionBytes);
    ASSERT_TRUE(shm.ok()) << shm.status();
    shm_ = std::move(*shm);
    // Poison: a result that was not written reads as NaN.
    std::memset(shm_->data(), 0xff, kRegionBytes);
    name_ = key.substr(1);
    auto info = client().RegisterSharedMemory(name_, key, 0, kRegionBytes);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->byte_size(), kRegionBytes);
  }
  void TearDown() override {
    (void)client().UnregisterSharedMemory(name_);
    // The server keeps serving inline requests.
    HostProblem p = RandomProblem(5, 6, 7, false, false, 1, 0, gen_);
    v1::GemmRequest req;
    FillProto(p, req.mutable_problem());
    auto resp = client().Gemm(req, absl::Seconds(30));
    ASSERT_TRUE(resp.ok()) << resp.status();
    EXPECT_LE(OutputError(p, resp->outputs(0)), Tolerance(p));
  }

  client::GemmClient& client() { return server_->client(); }

  // Copies `bytes` into the region at the next free offset (4 KiB aligned) and returns a
  // reference to them.
  v1::SharedMemoryRef Put(const std::string& bytes) {
    v1::SharedMemoryRef r = Reserve(bytes.size());
    std::memcpy(shm_->data() + r.offset(), bytes.data(), bytes.size());
    return r;
  }
  v1::SharedMemoryRef Reserve(int64_t bytes) {
    v1::SharedMemoryRef r;
    r.set_region(name_);
    r.set_offset(used_);
    r.set_byte_size(bytes);
    used_ = (used_ + bytes + 4095) / 4096 * 4096;
    EXPECT_LE(used_, kRegionBytes);
    return r;
  }
  // The output `out` with its data taken from `ref` (D written to shared memory).
  v1::Output FromShm(const v1::Output& out, const v1::SharedMemoryRef& ref) {
    EXPECT_TRUE(out.data().empty()) << "D went to shared memory; the response must not carry it";
    v1::Output o = out;
    o.set_data(std::string(shm_->data() + ref.offset(), ref.byte_size()));
    return o;
  }
  // Expects `req` to fail with `code` and a message naming `field`.
  void ExpectError(const v1::GemmRequest& req, absl::StatusCode code, const std::string& field) {
    auto resp = client().Gemm(req, absl::Seconds(30));
    ASSERT_FALSE(resp.ok());
    EXPECT_EQ(resp.status().code(), code) << resp.status();
    EXPECT_NE(resp.status().message().find(field), std::string::npos)
        << "message '" << resp.status().message() << "' does not name " << field;
  }

  static ServerProcess* server_;
  static int next_;
  std::unique_ptr<PosixShm> shm_;
  std::string name_;
  int64_t used_ = 0;
  absl::BitGen gen_;
};
ServerProcess* SharedMemoryTest::server_ = nullptr;
int SharedMemoryTest::next_ = 0;

TEST_F(SharedMemoryTest, EveryOperandThroughSharedMemory) {
  for (bool nk : {false, true}) {
    for (bool fp32 : {false, true}) {
      HostProblem p = RandomProblem(33, 47, 65, nk, fp32, 0.5f, 1.5f, gen_);
      v1::GemmRequest req;
      v1::Problem* pp = req.mutable_problem();
      FillProto(p, pp);
      *pp->mutable_a_shm() = Put(p.a);
      pp->clear_a();
      *pp->mutable_b_shm() = Put(p.b);  // replaces inline b (same oneof)
      *pp->mutable_c_shm() = Put(p.c);
      pp->clear_c();
      const v1::SharedMemoryRef d = Reserve(p.m * p.n * (fp32 ? 4 : 2));
      *pp->mutable_d_shm() = d;
      auto resp = client().Gemm(req, absl::Seconds(30));
      ASSERT_TRUE(resp.ok()) << resp.status();
      ASSERT_EQ(resp->outputs_size(), 1);
      EXPECT_LE(OutputError(p, FromShm(resp->outputs(0), d)), Tolerance(p))
          << "nk=" << nk << " fp32=" << fp32;
    }
  }
}

TEST_F(SharedMemoryTest, MixedInlineAndSharedMemory) {
  // A inline, D to shared memory; and A from shared memory, D in the response.
  HostProblem p = RandomProblem(16, 128, 96, false, false, 1, 0, gen_);
  v1::GemmRequest req;
  FillProto(p, req.mutable_problem());
  const v1::SharedMemoryRef d = Reserve(p.m * p.n * 2);
  *req.mutable_problem()->mutable_d_shm() = d;
  auto resp = client().Gemm(req, absl::Seconds(30));
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_LE(OutputError(p, FromShm(resp->outputs(0), d)), Tolerance(p));

  v1::GemmRequest req2;
  FillProto(p, req2.mutable_problem());
  *req2.mutable_problem()->mutable_a_shm() = Put(p.a);
  req2.mutable_problem()->clear_a();
  auto resp2 = client().Gemm(req2, absl::Seconds(30));
  ASSERT_TRUE(resp2.ok()) << resp2.status();
  EXPECT_LE(OutputError(p, resp2->outputs(0)), Tolerance(p));
}

TEST_F(SharedMemoryTest, BatchAndGroup) {
  // Batch of 3 with one shared B from shared memory, D ([3,M,N]) into shared memory.
  const int64_t count = 3, m = 9, n = 24, k = 40;
  std::vector<HostProblem> ps;
  std::string a_all;
  for (int i = 0; i < count; ++i) {
    ps.push_back(RandomProblem(m, n, k, true, false, 1, 0, gen_));
    if (i > 0) ps[i].b = ps[0].b;
    a_all += ps[i].a;
  }
  v1::GemmRequest req;
  v1::BatchedProblem* bp = req.mutable_batch();
  bp->set_count(count);
  FillProto(ps[0], bp->mutable_problem());
  bp->mutable_problem()->clear_a();
  *bp->mutable_problem()->mutable_a_shm() = Put(a_all);
  *bp->mutable_problem()->mutable_b_shm() = Put(ps[0].b);
  const v1::SharedMemoryRef d = Reserve(count * m * n * 2);
  *bp->mutable_problem()->mutable_d_shm() = d;
  auto resp = client().Gemm(req, absl::Seconds(30));
  ASSERT_TRUE(resp.ok()) << resp.status();
  const v1::Output out = FromShm(resp->outputs(0), d);
  ASSERT_EQ(out.shape_size(), 3);
  for (int i = 0; i < count; ++i) EXPECT_LE(OutputError(ps[i], out, i), Tolerance(ps[i])) << i;

  // Group: the first problem's D to shared memory, the second's in the response.
  HostProblem g0 = RandomProblem(7, 13, 29, false, true, 1, 0, gen_);
  HostProblem g1 = RandomProblem(21, 5, 3, true, false, 1, 0, gen_);
  v1::GemmRequest greq;
  FillProto(g0, greq.mutable_group()->add_problems());
  FillProto(g1, greq.mutable_group()->add_problems());
  const v1::SharedMemoryRef gd = Reserve(g0.m * g0.n * 4);
  *greq.mutable_group()->mutable_problems(0)->mutable_d_shm() = gd;
  auto gresp = client().Gemm(greq, absl::Seconds(30));
  ASSERT_TRUE(gresp.ok()) << gresp.status();
  ASSERT_EQ(gresp->outputs_size(), 2);
  EXPECT_LE(OutputError(g0, FromShm(gresp->outputs(0), gd)), Tolerance(g0));
  EXPECT_LE(OutputError(g1, gresp->outputs(1)), Tolerance(g1));
}

TEST_F(SharedMemoryTest, OutputOverlappingLaterInputs) {
  // Batch of 2 with N == K: D starts where A's second entry starts, so writing entry 0's result
  // in place would overwrite entry 1's input before it is read.
  const int64_t m = 8, n = 16, k = 16;
  HostProblem p0 = RandomProblem(m, n, k, false, false, 1, 0, gen_);
  HostProblem p1 = RandomProblem(m, n, k, false, false, 1, 0, gen_);
  p1.b = p0.b;
  v1::GemmRequest req;
  req.mutable_batch()->set_count(2);
  v1::Problem* bp = req.mutable_batch()->mutable_problem();
  FillProto(p0, bp);
  bp->clear_a();
  const v1::SharedMemoryRef a = Put(p0.a + p1.a);
  *bp->mutable_a_shm() = a;
  v1::SharedMemoryRef d = a;
  d.set_offset(a.offset() + m * k * 2);
  d.set_byte_size(2 * m * n * 2);
  Reserve(m * n * 2);  // D runs past A's end
  *bp->mutable_d_shm() = d;
  auto resp = client().Gemm(req, absl::Seconds(30));
  ASSERT_TRUE(resp.ok()) << resp.status();
  const v1::Output out = FromShm(resp->outputs(0), d);
  EXPECT_LE(OutputError(p0, out, 0), Tolerance(p0));
  EXPECT_LE(OutputError(p1, out, 1), Tolerance(p1));
}

TEST_F(SharedMemoryTest, BadReferences) {
  HostProblem p = RandomProblem(8, 8, 8, false, false, 1, 0, gen_);
  auto make = [&](const std::function<void(v1::Problem*)>& mutate) {
    v1::GemmRequest req;
    FillProto(p, req.mutable_problem());
    mutate(req.mutable_problem());
    return req;
  };
  const v1::SharedMemoryRef a = Put(p.a);
  ExpectError(make([&](v1::Problem* q) {
                *q->mutable_a_shm() = a;
                q->mutable_a_shm()->set_region("no-such-region");
                q->clear_a();
              }),
              absl::StatusCode::kNotFound, "problem.a_shm.region");
  ExpectError(make([&](v1::Problem* q) {
                *q->mutable_a_shm() = a;
                q->mutable_a_shm()->set_offset(kRegionBytes - 64);
                q->clear_a();
              }),
              absl::StatusCode::kInvalidArgument, "problem.a_shm");
  ExpectError(make([&](v1::Problem* q) {
                *q->mutable_a_shm() = a;
                q->mutable_a_shm()->set_offset(-1);
                q->clear_a();
              }),
              absl::StatusCode::kInvalidArgument, "problem.a_shm");
  ExpectError(make([&](v1::Problem* q) { *q->mutable_a_shm() = a; }),
              absl::StatusCode::kInvalidArgument, "set a or a_shm, not both");
  ExpectError(make([&](v1::Problem* q) {
                *q->mutable_a_shm() = a;
                q->mutable_a_shm()->set_byte_size(p.a.size() - 2);
                q->clear_a();
              }),
              absl::StatusCode::kInvalidArgument, "problem.a_shm");
  ExpectError(make([&](v1::Problem* q) { *q->mutable_d_shm() = Reserve(p.m * p.n * 4); }),
              absl::StatusCode::kInvalidArgument, "problem.d_shm");
  ExpectError(make([&](v1::Problem* q) {
                *q->mutable_b_shm() = Reserve(p.k * p.n * 2);
                q->mutable_b_shm()->set_byte_size(0);
              }),
              absl::StatusCode::kInvalidArgument, "problem.b_shm");
}

TEST_F(SharedMemoryTest, Registration) {
  // Name taken, missing object, bad key, key outside the prefix, range past the object, over
  // the cap.
  auto again = client().RegisterSharedMemory(name_, shm_->key(), 0, 4096);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists) << again.status();
  auto missing = client().RegisterSharedMemory("x", "/gemm_shm_test_does_not_exist", 0, 4096);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
  auto bad_key = client().RegisterSharedMemory("y", "../etc/passwd", 0, 4096);
  EXPECT_EQ(bad_key.status().code(), absl::StatusCode::kInvalidArgument) << bad_key.status();
  auto foreign = client().RegisterSharedMemory("w", "/not_gemm_object", 0, 4096);
  EXPECT_EQ(foreign.status().code(), absl::StatusCode::kPermissionDenied) << foreign.status();
  EXPECT_NE(foreign.status().message().find("--shared_memory_key_prefix"), std::string::npos);
  auto past = client().RegisterSharedMemory("z", shm_->key(), 4096, kRegionBytes);
  EXPECT_EQ(past.status().code(), absl::StatusCode::kInvalidArgument) << past.status();
  auto big = PosixShm::Create(absl::StrCat(shm_->key(), "_big"), 4 * kRegionBytes);
  ASSERT_TRUE(big.ok()) << big.status();
  auto over = client().RegisterSharedMemory("big", (*big)->key(), 0, 4 * kRegionBytes);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted) << over.status();

  // GPU memory (CUDA IPC) on the CPU backend: UNIMPLEMENTED, saying why; a key and a handle
  // together: INVALID_ARGUMENT. Neither takes the name.
  auto ipc = client().RegisterDeviceMemory("ipc", std::string(64, '\1'), 0, 0, 4096);
  EXPECT_EQ(ipc.status().code(), absl::StatusCode::kUnimplemented) << ipc.status();
  EXPECT_NE(ipc.status().message().find("cuda_ipc_handle"), std::string::npos) << ipc.status();
  v1::RegisterSharedMemoryRequest both;
  both.set_name("ipc");
  both.set_key(shm_->key());
  both.set_cuda_ipc_handle(std::string(64, '\1'));
  both.set_byte_size(4096);
  grpc::ClientContext both_ctx;
  v1::SharedMemoryInfo both_info;
  const grpc::Status both_status =
      client().stub()->RegisterSharedMemory(&both_ctx, both, &both_info);
  EXPECT_EQ(both_status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << both_status.error_message();
  EXPECT_TRUE(client().RegisterSharedMemory("ipc", shm_->key(), 0, 4096).ok());
  EXPECT_TRUE(client().UnregisterSharedMemory("ipc").ok());

  // A second region at an unaligned offset of the same object works and is listed.
  auto second = client().RegisterSharedMemory(name_ + "_2", shm_->key(), 100, 5000);
  ASSERT_TRUE(second.ok()) << second.status();
  grpc::ClientContext ctx;
  v1::ListSharedMemoryResponse list;
  ASSERT_TRUE(client().stub()->ListSharedMemory(&ctx, v1::ListSharedMemoryRequest(), &list).ok());
  ASSERT_EQ(list.regions_size(), 2);
  EXPECT_EQ(list.regions(1).name(), name_ + "_2");
  EXPECT_EQ(list.regions(1).offset(), 100);
  EXPECT_EQ(list.regions(1).byte_size(), 5000);
  EXPECT_EQ(list.regions(1).in_flight(), 0);
  // Bytes at offset 0 of the second region are bytes 100.. of the object.
  HostProblem p = RandomProblem(4, 4, 4, false, false, 1, 0, gen_);
  std::memcpy(shm_->data() + 100, p.a.data(), p.a.size());
  v1::GemmRequest req;
  FillProto(p, req.mutable_problem());
  req.mutable_problem()->clear_a();
  v1::SharedMemoryRef* ar = req.mutable_problem()->mutable_a_shm();
  ar->set_region(name_ + "_2");
  ar->set_byte_size(p.a.size());
  auto resp = client().Gemm(req, absl::Seconds(30));
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_LE(OutputError(p, resp->outputs(0)), Tolerance(p));

  // Unregistered: later references get NOT_FOUND; unregistering twice too.
  ASSERT_TRUE(client().UnregisterSharedMemory(name_ + "_2").ok());
  ExpectError(req, absl::StatusCode::kNotFound, "problem.a_shm.region");
  EXPECT_EQ(client().UnregisterSharedMemory(name_ + "_2").code(), absl::StatusCode::kNotFound);
}

TEST(SharedMemoryOffTest, RegistrationTurnedOff) {
  auto s = ServerProcess::Start({"--backend=cpu", "--max_shared_memory_bytes=0"});
  ASSERT_TRUE(s.ok()) << s.status();
  auto shm = PosixShm::Create(absl::StrCat("/gemm_shm_test_off_", getpid()), 4096);
  ASSERT_TRUE(shm.ok()) << shm.status();
  auto r = (*s)->client().RegisterSharedMemory("r", (*shm)->key(), 0, 4096);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
}

}  // namespace
}  // namespace gemm::testing
