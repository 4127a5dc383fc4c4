// Integration: correct results for every request kind through the real server (CPU backend
// unless the build and machine have a GPU) and the real client library; idle dispatch.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/reference_gemm.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_util.h"

namespace gemm::testing {
namespace {

class GemmRequestsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto s = ServerProcess::Start({"--backend=cpu"});
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = s->release();
  }
  static void TearDownTestSuite() {
    if (server_) EXPECT_EQ(server_->Stop(SIGTERM), 0);
    delete server_;
    server_ = nullptr;
  }
  client::GemmClient& client() { return server_->client(); }
  static ServerProcess* server_;
  absl::BitGen gen_;
};
ServerProcess* GemmRequestsTest::server_ = nullptr;

struct Case {
  int64_t m, n, k;
  bool nk, fp32;
  float alpha, beta;
};

TEST_F(GemmRequestsTest, UnaryMatchesReferenceOverShapesLayoutsDtypes) {
  const Case cases[] = {
      {1, 1, 1, false, false, 1, 0},      {17, 33, 65, false, false, 1, 0},
      {17, 33, 65, true, false, 1, 0},    {1, 4096, 1, false, true, 1, 0},
      {64, 64, 64, true, true, 0.5f, 0},  {31, 47, 129, false, false, 2.0f, -0.5f},
      {31, 47, 129, true, true, 1, 1.0f}, {128, 96, 256, false, true, 1.5f, 0.25f},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.m, "x", c.n, "x", c.k, c.nk ? " nk" : " kn",
                              c.fp32 ? " fp32" : " bf16", " alpha=", c.alpha, " beta=", c.beta));
    const HostProblem p = RandomProblem(c.m, c.n, c.k, c.nk, c.fp32, c.alpha, c.beta, gen_);
    v1::GemmRequest req;
    req.set_request_id("u");
    FillProto(p, req.mutable_problem());
    auto resp = client().Gemm(req, absl::Seconds(60));
    ASSERT_TRUE(resp.ok()) << resp.status();
    EXPECT_EQ(resp->request_id(), "u");
    ASSERT_EQ(resp->outputs_size(), 1);
    EXPECT_EQ(resp->outputs(0).shape_size(), 2);
    EXPECT_LE(OutputError(p, resp->outputs(0)), Tolerance(p));
    EXPECT_FALSE(resp->kernel().empty());
    EXPECT_GE(resp->timing().total_us(), resp->timing().compute_us());
  }
}

TEST_F(GemmRequestsTest, BatchedWithPerEntryAndSharedB) {
  const int64_t count = 5, m = 9, n = 23, k = 40;
  for (bool shared : {false, true}) {
    SCOPED_TRACE(shared ? "shared B" : "per-entry B");
    std::vector<HostProblem> ps;
    v1::GemmRequest req;
    v1::Problem* bp = req.mutable_batch()->mutable_problem();
    req.mutable_batch()->set_count(count);
    std::string a, b;
    for (int i = 0; i < count; ++i) {
      ps.push_back(RandomProblem(m, n, k, true, false, 1, 0, gen_));
      if (shared) ps.back().b = ps[0].b;
      a += ps.back().a;
      if (!shared || i == 0) b += ps.back().b;
    }
    FillProto(ps[0], bp);
    bp->set_a(a);
    bp->set_b(b);
    auto resp = client().Gemm(req, absl::Seconds(60));
    ASSERT_TRUE(resp.ok()) << resp.status();
    ASSERT_EQ(resp->outputs_size(), 1);
    ASSERT_EQ(resp->outputs(0).shape_size(), 3);
    EXPECT_EQ(resp->outputs(0).shape(0), count);
    for (int i = 0; i < count; ++i) EXPECT_LE(OutputError(ps[i], resp->outputs(0), i), 8e-3) << i;
  }
}

TEST_F(GemmRequestsTest, GroupedProblemsOfDifferentShapes) {
  const Case cases[] = {{3, 5, 7, false, false, 1, 0},
                        {64, 32, 16, true, false, 1, 0},
                        {1, 100, 33, false, false, 1, 0},
                        {40, 8, 128, true, false, 1, 0}};
  std::vector<HostProblem> ps;
  v1::GemmRequest req;
  for (const Case& c : cases) {
    ps.push_back(RandomProblem(c.m, c.n, c.k, c.nk, c.fp32, c.alpha, c.beta, gen_));
    FillProto(ps.back(), req.mutable_group()->add_problems());
  }
  auto resp = client().Gemm(req, absl::Seconds(60));
  ASSERT_TRUE(resp.ok()) << resp.status();
  ASSERT_EQ(resp->outputs_size(), static_cast<int>(ps.size()));
  for (size_t i = 0; i < ps.size(); ++i) EXPECT_LE(OutputError(ps[i], resp->outputs(i)), 8e-3);
}

TEST_F(GemmRequestsTest, ResidentMatrixRegisterUseListRelease) {
  for (bool nk : {false, true}) {
    SCOPED_TRACE(nk ? "nk" : "kn");
    const int64_t k = 96, n = 80;
    HostProblem p = RandomProblem(12, n, k, nk, false, 1, 0, gen_);
    v1::MatrixHeader h;
    h.set_name("w");
    h.set_rows(nk ? n : k);
    h.set_cols(nk ? k : n);
    h.set_dtype(v1::DTYPE_BF16);
    h.set_layout(nk ? v1::B_LAYOUT_NK : v1::B_LAYOUT_KN);
    auto info = client().RegisterMatrix(h, p.b, /*chunk_bytes=*/1000);  // many chunks
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->bytes(), k * n * 2);
    auto list = client().ListMatrices();
    ASSERT_TRUE(list.ok());
    bool listed = false;
    for (const auto& m : *list) listed |= m.handle() == info->handle();
    EXPECT_TRUE(listed);

    for (int rep = 0; rep < 3; ++rep) {  // different activations, same resident B
      HostProblem q = RandomProblem(1 + rep * 7, n, k, nk, rep == 2, 1, 0, gen_);
      q.b = p.b;
      v1::GemmRequest req;
      FillProto(q, req.mutable_problem());
      req.mutable_problem()->set_b_handle(info->handle());
      req.mutable_problem()->clear_b_layout();
      auto resp = client().Gemm(req, absl::Seconds(60));
      ASSERT_TRUE(resp.ok()) << resp.status();
      EXPECT_LE(OutputError(q, resp->outputs(0)), Tolerance(q));
    }
    ASSERT_TRUE(client().ReleaseMatrix(info->handle()).ok());
    EXPECT_EQ(client().ReleaseMatrix(info->handle()).code(), absl::StatusCode::kNotFound);
  }
}

TEST_F(GemmRequestsTest, StreamingOutOfOrderIdsAndPerRequestErrors) {
  grpc::ClientContext ctx;
  auto stream = client().stub()->GemmStream(&ctx);
  std::map<std::string, HostProblem> sent;
  const int kRequests = 40;
  for (int i = 0; i < kRequests; ++i) {
    const int64_t m = 1 + (i * 37) % 150, n = 1 + (i * 11) % 70, k = 1 + (i * 53) % 200;
    HostProblem p = RandomProblem(m, n, k, i % 2, i % 3 == 0, 1, 0, gen_);
    v1::GemmRequest req;
    req.set_request_id(absl::StrCat("s", i));
    FillProto(p, req.mutable_problem());
    if (i == 7) req.mutable_problem()->set_m(0);  // one bad request mid-stream
    ASSERT_TRUE(stream->Write(req));
    sent[req.request_id()] = std::move(p);
  }
  stream->WritesDone();
  v1::GemmResponse resp;
  std::set<std::string> seen;
  while (stream->Read(&resp)) {
    ASSERT_TRUE(sent.count(resp.request_id())) << resp.request_id();
    EXPECT_TRUE(seen.insert(resp.request_id()).second) << "answered twice: " << resp.request_id();
    if (resp.request_id() == "s7") {
      EXPECT_EQ(resp.error().code(), grpc::StatusCode::INVALID_ARGUMENT);
      EXPECT_NE(resp.error().message().find("problem.m"), std::string::npos);
      continue;
    }
    EXPECT_EQ(resp.error().code(), 0) << resp.error().message();
    ASSERT_EQ(resp.outputs_size(), 1);
    const HostProblem& p = sent[resp.request_id()];
    EXPECT_LE(OutputError(p, resp.outputs(0)), Tolerance(p)) << resp.request_id();
  }
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(static_cast<int>(seen.size()), kRequests);
}

// GemmStreamPacked: requests in packs of different sizes (an empty one included), one bad request
// in a pack; every request answered exactly once, with its own result or error.
TEST_F(GemmRequestsTest, PackedStreamAnswersEveryRequestOnce) {
  grpc::ClientContext ctx;
  auto stream = client().stub()->GemmStreamPacked(&ctx);
  std::map<std::string, HostProblem> sent;
  const int kPackSizes[] = {1, 8, 0, 17, 3, 11};
  int next = 0;
  for (int size : kPackSizes) {
    v1::GemmRequestPack pack;
    for (int j = 0; j < size; ++j, ++next) {
      const int64_t m = 1 + (next * 37) % 150, n = 1 + (next * 11) % 70, k = 1 + (next * 53) % 200;
      HostProblem p = RandomProblem(m, n, k, next % 2, next % 3 == 0, 1, 0, gen_);
      v1::GemmRequest* req = pack.add_requests();
      req->set_request_id(absl::StrCat("p", next));
      FillProto(p, req->mutable_problem());
      if (next == 12) req->mutable_problem()->set_k(-3);  // one bad request inside a pack
      sent[req->request_id()] = std::move(p);
    }
    ASSERT_TRUE(stream->Write(pack));
  }
  stream->WritesDone();
  v1::GemmResponsePack resp;
  std::set<std::string> seen;
  int packs = 0;
  while (stream->Read(&resp)) {
    ++packs;
    EXPECT_GE(resp.responses_size(), 1) << "an empty response pack";
    for (const v1::GemmResponse& r : resp.responses()) {
      ASSERT_TRUE(sent.count(r.request_id())) << r.request_id();
      EXPECT_TRUE(seen.insert(r.request_id()).second) << "answered twice: " << r.request_id();
      if (r.request_id() == "p12") {
        EXPECT_EQ(r.error().code(), grpc::StatusCode::INVALID_ARGUMENT);
        EXPECT_NE(r.error().message().find("problem.k"), std::string::npos) << r.error().message();
        continue;
      }
      EXPECT_EQ(r.error().code(), 0) << r.error().message();
      ASSERT_EQ(r.outputs_size(), 1);
      const HostProblem& p = sent[r.request_id()];
      EXPECT_LE(OutputError(p, r.outputs(0)), Tolerance(p)) << r.request_id();
    }
  }
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(static_cast<int>(seen.size()), next);
  EXPECT_LE(packs, next);
}

// A packed stream whose client is done before anything was answered, and one that sends only an
// empty pack: both end OK with every request answered.
TEST_F(GemmRequestsTest, PackedStreamsEndCleanly) {
  for (int requests : {0, 1, 40}) {
    SCOPED_TRACE(requests);
    grpc::ClientContext ctx;
    auto stream = client().stub()->GemmStreamPacked(&ctx);
    v1::GemmRequestPack pack;
    for (int i = 0; i < requests; ++i) {
      HostProblem p = RandomProblem(1 + i % 5, 8, 16, i % 2, false, 1, 0, gen_);
      v1::GemmRequest* req = pack.add_requests();
      req->set_request_id(absl::StrCat(i));
      FillProto(p, req->mutable_problem());
    }
    ASSERT_TRUE(stream->Write(pack));
    stream->WritesDone();
    v1::GemmResponsePack resp;
    std::set<std::string> seen;
    while (stream->Read(&resp)) {
      for (const v1::GemmResponse& r : resp.responses()) {
        EXPECT_EQ(r.error().code(), 0) << r.error().message();
        EXPECT_TRUE(seen.insert(r.request_id()).second) << "answered twice: " << r.request_id();
      }
    }
    EXPECT_TRUE(stream->Finish().ok());
    EXPECT_EQ(static_cast<int>(seen.size()), requests);
  }
  EXPECT_TRUE(client().GetServerInfo().ok());
}

// Many short streams from several threads, each closed right after its last request: the
// server must answer every request exactly once and end every stream OK, also when the client's
// "done" reaches the server while the last request is still being handled (a server that finished
// the call early lost that response and wrote through a deleted reactor).
TEST_F(GemmRequestsTest, ManyShortStreamsAnswerEveryRequestOnce) {
  constexpr int kThreads = 8, kStreamsPerThread = 24;
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      absl::BitGen gen;
      for (int s = 0; s < kStreamsPerThread; ++s) {
        grpc::ClientContext ctx;
        auto stream = client().stub()->GemmStream(&ctx);
        const int requests = 1 + (t + s) % 3;
        for (int i = 0; i < requests; ++i) {
          HostProblem p = RandomProblem(1 + (s * 7 + i) % 9, 8, 16, i % 2, false, 1, 0, gen);
          v1::GemmRequest req;
          req.set_request_id(absl::StrCat(i));
          FillProto(p, req.mutable_problem());
          if (!stream->Write(req)) bad++;
        }
        stream->WritesDone();
        v1::GemmResponse resp;
        std::set<std::string> seen;
        while (stream->Read(&resp)) {
          if (resp.error().code() != 0 || !seen.insert(resp.request_id()).second) bad++;
        }
        if (!stream->Finish().ok() || static_cast<int>(seen.size()) != requests) bad++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_TRUE(client().GetServerInfo().ok());  // the server is still up
}

// A lone request against a resident matrix, with a 300 ms batching delay: an idle server runs it
// at once (--dispatch_when_idle, the default); with that off it waits out the delay in the queue.
TEST(IdleDispatchTest, IdleServerRunsALoneRequestWithoutTheBatchingDelay) {
  constexpr int64_t kDelayUs = 300000;
  absl::BitGen gen;
  for (const bool idle_dispatch : {true, false}) {
    SCOPED_TRACE(absl::StrCat("dispatch_when_idle=", idle_dispatch));
    auto s = ServerProcess::Start(
        {"--backend=cpu", absl::StrCat("--max_queue_delay_us=", kDelayUs),
         absl::StrCat("--dispatch_when_idle=", idle_dispatch ? "true" : "false")});
    ASSERT_TRUE(s.ok()) << s.status();
    client::GemmClient& c = (*s)->client();
    const int64_t k = 64, n = 48;
    HostProblem p = RandomProblem(8, n, k, true, false, 1, 0, gen);
    auto info = RegisterNkWeight(c, "w", n, k, p.b);
    ASSERT_TRUE(info.ok()) << info.status();
    for (int rep = 0; rep < 3; ++rep) {
      HostProblem q = RandomProblem(8, n, k, true, false, 1, 0, gen);
      q.b = p.b;
      v1::GemmRequest req;
      FillProto(q, req.mutable_problem());
      req.mutable_problem()->set_b_handle(info->handle());
      auto resp = c.Gemm(req, absl::Seconds(60));
      ASSERT_TRUE(resp.ok()) << resp.status();
      EXPECT_LE(OutputError(q, resp->outputs(0)), Tolerance(q));
      EXPECT_EQ(resp->timing().batch_requests(), 1);
      if (idle_dispatch) {
        EXPECT_LT(resp->timing().queue_us(), kDelayUs / 10) << "an idle server waited";
      } else {
        EXPECT_GE(resp->timing().queue_us(), kDelayUs * 0.95) << "the delay did not apply";
      }
    }
    EXPECT_EQ((*s)->Stop(SIGTERM), 0);
  }
}

TEST_F(GemmRequestsTest, ThirtyTwoConcurrentClients) {
  const int kClients = 32, kPerClient = 6;
  std::atomic<int> ok{0}, bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      auto c = client::GemmClient::Create({.target = server_->target()});
      if (!c.ok()) {
        bad++;
        return;
      }
      absl::BitGen gen;
      for (int i = 0; i < kPerClient; ++i) {
        HostProblem p =
            RandomProblem(1 + (t * 7 + i) % 64, 8 + t, 16 + i * 5, (t + i) % 2, i % 2, 1, 0, gen);
        v1::GemmRequest req;
        FillProto(p, req.mutable_problem());
        auto resp = (*c)->Gemm(req, absl::Seconds(120));
        if (resp.ok() && resp->outputs_size() == 1 &&
            OutputError(p, resp->outputs(0)) <= Tolerance(p)) {
          ok++;
        } else {
          bad++;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(ok.load(), kClients * kPerClient);
}

}  // namespace
}  // namespace gemm::testing
