// Integration: every kind of bad input gets the right status and a message naming the field
// (kept short however large the client strings it quotes), and the server keeps serving correct
// results afterwards.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <functional>

#include "absl/strings/str_cat.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_util.h"

namespace gemm::testing {
namespace {

class BadInputTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto s = ServerProcess::Start(
        {"--backend=cpu", "--max_dim=4096", "--max_request_bytes=1048576", "--max_problems=16"});
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = s->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void TearDown() override {
    // The server keeps serving correct results after each bad request.
    HostProblem p = RandomProblem(5, 6, 7, false, false, 1, 0, gen_);
    v1::GemmRequest req;
    FillProto(p, req.mutable_problem());
    auto resp = server_->client().Gemm(req, absl::Seconds(30));
    ASSERT_TRUE(resp.ok()) << resp.status();
    EXPECT_LE(OutputError(p, resp->outputs(0)), Tolerance(p));
  }

  // Sends a request made from a valid 8x8x8 problem by `mutate`; expects `code` and `field`.
  void ExpectGemmError(const std::function<void(v1::GemmRequest*)>& mutate, absl::StatusCode code,
                       const std::string& field) {
    HostProblem p = RandomProblem(8, 8, 8, false, false, 1, 0, gen_);
    v1::GemmRequest req;
    FillProto(p, req.mutable_problem());
    mutate(&req);
    auto resp = server_->client().Gemm(req, absl::Seconds(30));
    ASSERT_FALSE(resp.ok());
    EXPECT_EQ(resp.status().code(), code) << resp.status();
    EXPECT_NE(resp.status().message().find(field), std::string::npos)
        << "message '" << resp.status().message() << "' does not name " << field;
  }

  static ServerProcess* server_;
  absl::BitGen gen_;
};
ServerProcess* BadInputTest::server_ = nullptr;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

TEST_F(BadInputTest, ZeroDimension) {
  ExpectGemmError([](v1::GemmRequest* r) { r->mutable_problem()->set_m(0); }, kInvalid,
                  "problem.m");
}

TEST_F(BadInputTest, NegativeDimension) {
  ExpectGemmError([](v1::GemmRequest* r) { r->mutable_problem()->set_k(-3); }, kInvalid,
                  "problem.k");
}

TEST_F(BadInputTest, DimensionOverLimit) {
  ExpectGemmError([](v1::GemmRequest* r) { r->mutable_problem()->set_n(5000); }, kInvalid,
                  "problem.n");
}

TEST_F(BadInputTest, OperandLengthDoesNotMatchShape) {
  ExpectGemmError([](v1::GemmRequest* r) { r->mutable_problem()->mutable_a()->pop_back(); },
                  kInvalid, "problem.a");
  ExpectGemmError([](v1::GemmRequest* r) { r->mutable_problem()->mutable_b()->append("xx"); },
                  kInvalid, "problem.b");
}

TEST_F(BadInputTest, UnknownHandleIsNotFound) {
  ExpectGemmError([](v1::GemmRequest* r) { r->mutable_problem()->set_b_handle("mat-nope"); },
                  absl::StatusCode::kNotFound, "problem.b_handle");
}

TEST_F(BadInputTest, ReleasedHandleIsNotFound) {
  HostProblem w = RandomProblem(1, 8, 8, false, false, 1, 0, gen_);
  v1::MatrixHeader h;
  h.set_rows(8);
  h.set_cols(8);
  auto info = server_->client().RegisterMatrix(h, w.b);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_TRUE(server_->client().ReleaseMatrix(info->handle()).ok());
  const std::string handle = info->handle();
  ExpectGemmError([&](v1::GemmRequest* r) { r->mutable_problem()->set_b_handle(handle); },
                  absl::StatusCode::kNotFound, "problem.b_handle");
}

TEST_F(BadInputTest, UnsupportedDtypeAndLayout) {
  ExpectGemmError(
      [](v1::GemmRequest* r) { r->mutable_problem()->set_output_dtype(static_cast<v1::DType>(9)); },
      kInvalid, "problem.output_dtype");
  ExpectGemmError(
      [](v1::GemmRequest* r) { r->mutable_problem()->set_b_layout(static_cast<v1::BLayout>(7)); },
      kInvalid, "problem.b_layout");
}

TEST_F(BadInputTest, RequestOverSizeLimitIsResourceExhausted) {
  ExpectGemmError(
      [](v1::GemmRequest* r) {
        auto* p = r->mutable_problem();
        p->set_m(1024);
        p->set_k(1024);
        p->set_a(std::string(1024 * 1024 * 2, '\x01'));  // 2 MiB > 1 MiB limit
        p->set_b(std::string(1024 * 8 * 2, '\x01'));
      },
      absl::StatusCode::kResourceExhausted, "max_request_bytes");
}

TEST_F(BadInputTest, EmptyBatchGroupAndRequest) {
  ExpectGemmError([](v1::GemmRequest* r) { r->clear_problem(); }, kInvalid, "no work");
  ExpectGemmError([](v1::GemmRequest* r) { r->mutable_group(); }, kInvalid, "group.problems");
  ExpectGemmError(
      [](v1::GemmRequest* r) {
        v1::Problem p = r->problem();
        *r->mutable_batch()->mutable_problem() = p;
        r->mutable_batch()->set_count(0);
      },
      kInvalid, "batch.count");
  ExpectGemmError(
      [](v1::GemmRequest* r) {
        v1::Problem p = r->problem();
        for (int i = 0; i < 17; ++i) *r->mutable_group()->add_problems() = p;
      },
      kInvalid, "group.problems");
}

TEST_F(BadInputTest, CWithWrongShapeAndBetaWithoutC) {
  ExpectGemmError(
      [](v1::GemmRequest* r) {
        r->mutable_problem()->set_beta(1.0f);
        r->mutable_problem()->set_c(std::string(8 * 7 * 2, '\0'));
      },
      kInvalid, "problem.c");
  ExpectGemmError([](v1::GemmRequest* r) { r->mutable_problem()->set_beta(1.0f); }, kInvalid,
                  "problem.beta");
}

TEST_F(BadInputTest, UnknownKernelAndPriority) {
  ExpectGemmError([](v1::GemmRequest* r) { r->set_kernel("warp_drive"); }, kInvalid, "kernel");
  ExpectGemmError([](v1::GemmRequest* r) { r->set_priority(static_cast<v1::Priority>(5)); },
                  kInvalid, "priority");
  ExpectGemmError([](v1::GemmRequest* r) { r->set_timeout_us(-1); }, kInvalid, "timeout_us");
}

TEST_F(BadInputTest, BadGroupEntryNamesItsIndex) {
  ExpectGemmError(
      [](v1::GemmRequest* r) {
        v1::Problem p = r->problem();
        *r->mutable_group()->add_problems() = p;
        p.set_k(0);
        *r->mutable_group()->add_problems() = p;
      },
      kInvalid, "group.problems[1].k");
}

// Sends raw chunks on RegisterMatrix and returns the final status.
grpc::Status SendChunks(ServerProcess* server, const std::vector<v1::RegisterMatrixChunk>& chunks) {
  grpc::ClientContext ctx;
  v1::MatrixInfo info;
  auto writer = server->client().stub()->RegisterMatrix(&ctx, &info);
  for (const auto& c : chunks) {
    if (!writer->Write(c)) break;
  }
  writer->WritesDone();
  return writer->Finish();
}

TEST_F(BadInputTest, MalformedRegisterMatrixStreams) {
  v1::RegisterMatrixChunk header;
  header.mutable_header()->set_rows(4);
  header.mutable_header()->set_cols(4);
  header.set_data(std::string(16, '\x3f'));  // first 16 of 32 bytes
  v1::RegisterMatrixChunk rest;
  rest.set_offset(16);
  rest.set_data(std::string(16, '\x3f'));

  struct Bad {
    std::string what;
    std::vector<v1::RegisterMatrixChunk> chunks;
    std::string field;
  };
  v1::RegisterMatrixChunk no_header = rest;
  no_header.set_offset(0);
  v1::RegisterMatrixChunk gap = rest;
  gap.set_offset(20);
  v1::RegisterMatrixChunk overrun = rest;
  overrun.set_data(std::string(40, '\x3f'));
  v1::RegisterMatrixChunk second_header = rest;
  *second_header.mutable_header() = header.header();
  v1::RegisterMatrixChunk zero_rows = header;
  zero_rows.mutable_header()->set_rows(0);
  v1::RegisterMatrixChunk bad_dtype = header;
  bad_dtype.mutable_header()->set_dtype(v1::DTYPE_FP32);
  const std::vector<Bad> cases = {
      {"no header", {no_header}, "header"},
      {"offset gap", {header, gap}, "offset"},
      {"overrun", {header, overrun}, "chunk.data"},
      {"short", {header}, "16 of 32"},
      {"header twice", {header, second_header}, "header"},
      {"zero rows", {zero_rows}, "header.rows"},
      {"fp32 dtype", {bad_dtype}, "header.dtype"},
      {"empty stream", {}, "header"},
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.what);
    grpc::Status s = SendChunks(server_, b.chunks);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_NE(s.error_message().find(b.field), std::string::npos) << s.error_message();
  }
  EXPECT_TRUE(SendChunks(server_, {header, rest}).ok());  // the well-formed stream works
  auto list = server_->client().ListMatrices();
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 1u);  // none of the failed uploads was published
  for (const auto& m : *list) EXPECT_TRUE(server_->client().ReleaseMatrix(m.handle()).ok());
}

TEST_F(BadInputTest, ResidentShapeMismatchNamesHandle) {
  HostProblem w = RandomProblem(1, 8, 16, false, false, 1, 0, gen_);
  v1::MatrixHeader h;
  h.set_rows(16);  // K=16, N=8
  h.set_cols(8);
  auto info = server_->client().RegisterMatrix(h, w.b);
  ASSERT_TRUE(info.ok()) << info.status();
  const std::string handle = info->handle();
  ExpectGemmError([&](v1::GemmRequest* r) { r->mutable_problem()->set_b_handle(handle); }, kInvalid,
                  "problem.b_handle");  // problem is 8x8x8, matrix is K=16
  EXPECT_TRUE(server_->client().ReleaseMatrix(handle).ok());
}

// Most bytes of a status message the server sends (server/grpc/status_util.h).
constexpr size_t kMaxStatusMessageBytes = 2048;

TEST_F(BadInputTest, MatrixOnADeviceTheServerLacksIsInvalid) {
  auto before = server_->client().ListMatrices();
  ASSERT_TRUE(before.ok());
  v1::MatrixHeader h;
  h.set_rows(4);
  h.set_cols(4);
  h.add_devices(77);
  auto info = server_->client().RegisterMatrix(h, std::string(32, '\x3f'));
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), absl::StatusCode::kInvalidArgument) << info.status();
  EXPECT_NE(info.status().message().find("header.devices[0]"), std::string::npos) << info.status();
  auto after = server_->client().ListMatrices();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->size(), before->size());  // nothing was published
}

TEST_F(BadInputTest, HugeClientStringsDoNotSwellErrorMessages) {
  const std::string huge(4 << 20, 'x');
  HostProblem p = RandomProblem(8, 8, 8, false, false, 1, 0, gen_);
  v1::GemmRequest req;
  FillProto(p, req.mutable_problem());
  req.set_kernel(huge);
  auto resp = server_->client().Gemm(req, absl::Seconds(30));
  ASSERT_FALSE(resp.ok());
  EXPECT_EQ(resp.status().code(), absl::StatusCode::kInvalidArgument) << resp.status().code();
  EXPECT_LE(resp.status().message().size(), kMaxStatusMessageBytes);
  EXPECT_EQ(resp.status().message().rfind("kernel: 'xxx", 0), 0u)
      << resp.status().message().substr(0, 80);

  req.set_kernel("");
  req.mutable_problem()->set_b_handle(huge);
  resp = server_->client().Gemm(req, absl::Seconds(30));
  ASSERT_FALSE(resp.ok());
  EXPECT_EQ(resp.status().code(), absl::StatusCode::kNotFound) << resp.status().code();
  EXPECT_LE(resp.status().message().size(), kMaxStatusMessageBytes);

  // Whatever component quotes it (here the key check, which echoes the key whole), the message
  // a client gets is capped and keeps its code.
  auto shm = server_->client().RegisterSharedMemory("r", "/gemm" + huge, 0, 64);
  ASSERT_FALSE(shm.ok());
  EXPECT_EQ(shm.status().code(), absl::StatusCode::kInvalidArgument) << shm.status().code();
  EXPECT_LE(shm.status().message().size(), kMaxStatusMessageBytes);
  EXPECT_EQ(shm.status().message().rfind("key: ", 0), 0u) << shm.status().message().substr(0, 80);
}

TEST_F(BadInputTest, GroupOverTheLimitIsRefusedBeforeConversion) {
  v1::GemmRequest req;
  for (int i = 0; i < 17; ++i) {
    v1::Problem* p = req.mutable_group()->add_problems();
    p->set_output_dtype(static_cast<v1::DType>(9));  // conversion would refuse each
  }
  auto resp = server_->client().Gemm(req, absl::Seconds(30));
  ASSERT_FALSE(resp.ok());
  EXPECT_EQ(resp.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(resp.status().message().find("group.problems: has 17 entries"), std::string::npos)
      << resp.status();

  // A million empty problems (a 2 MB message) meet the same answer.
  req.Clear();
  for (int i = 0; i < 1'000'000; ++i) req.mutable_group()->add_problems();
  resp = server_->client().Gemm(req, absl::Seconds(60));
  ASSERT_FALSE(resp.ok());
  EXPECT_NE(resp.status().message().find("group.problems: has 1000000 entries"), std::string::npos)
      << resp.status();
}

}  // namespace
}  // namespace gemm::testing
