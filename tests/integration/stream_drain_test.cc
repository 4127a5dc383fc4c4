// Integration: SIGTERM while a GemmStream is open with requests in flight. Every request the
// server accepted before the signal is answered with its result; requests sent on the open stream
// afterwards are answered UNAVAILABLE, one by one, and the stream ends OK when the client is done;
// the server then exits 0.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_util.h"

namespace gemm::testing {
namespace {

TEST(StreamDrainTest, OpenStreamGetsUnavailableForNewRequestsAndAnswersAcceptedOnes) {
  auto server = ServerProcess::Start({"--backend=cpu", "--cpu_workers=1", "--drain_timeout_s=60"});
  ASSERT_TRUE(server.ok()) << server.status();
  ServerProcess& s = **server;
  absl::BitGen gen;
  grpc::ClientContext ctx;
  auto stream = s.client().stub()->GemmStream(&ctx);

  // Requests that take a while on one worker, then a small high-priority one that overtakes them
  // in the queue: its answer shows the server has read every request before it.
  constexpr int kBefore = 8, kAfter = 4;
  std::map<std::string, HostProblem> before;
  for (int i = 0; i < kBefore; ++i) {
    HostProblem p = RandomProblem(640, 640, 640, false, false, 1, 0, gen);
    v1::GemmRequest req;
    req.set_request_id(absl::StrCat("before", i));
    FillProto(p, req.mutable_problem());
    ASSERT_TRUE(stream->Write(req));
    before[req.request_id()] = std::move(p);
  }
  const HostProblem marker_problem = RandomProblem(4, 4, 4, false, false, 1, 0, gen);
  v1::GemmRequest marker;
  marker.set_request_id("marker");
  marker.set_priority(v1::PRIORITY_HIGH);
  FillProto(marker_problem, marker.mutable_problem());
  ASSERT_TRUE(stream->Write(marker));
  before["marker"] = marker_problem;
  v1::GemmResponse resp;
  std::map<std::string, v1::GemmResponse> answers;
  do {
    ASSERT_TRUE(stream->Read(&resp));
    answers[resp.request_id()] = resp;
  } while (resp.request_id() != "marker");

  ASSERT_EQ(kill(s.pid(), SIGTERM), 0);
  // The drain has begun once a new unary call is refused UNAVAILABLE. Until no request has been
  // refused for 100 ms the listener stays open (the drain's notice), so the requests below reach
  // the open stream inside that notice, as a client's next requests do; after it, gRPC's
  // shutdown decides what happens to them.
  // The probe's client does not retry, so the first refusal comes back at once.
  auto prober = client::GemmClient::Create({.target = s.target(), .retry_unavailable = false});
  ASSERT_TRUE(prober.ok()) << prober.status();
  v1::GemmRequest probe;
  FillProto(RandomProblem(2, 2, 2, false, false, 1, 0, gen), probe.mutable_problem());
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  absl::StatusOr<v1::GemmResponse> probed;
  do {
    probed = (*prober)->Gemm(probe, absl::Seconds(5));
  } while (probed.ok() && absl::Now() < give_up);
  ASSERT_EQ(probed.status().code(), absl::StatusCode::kUnavailable) << probed.status();
  for (int i = 0; i < kAfter; ++i) {
    v1::GemmRequest req;
    req.set_request_id(absl::StrCat("after", i));
    FillProto(RandomProblem(4, 4, 4, false, false, 1, 0, gen), req.mutable_problem());
    ASSERT_TRUE(stream->Write(req));
  }
  stream->WritesDone();
  while (stream->Read(&resp)) {
    EXPECT_TRUE(answers.emplace(resp.request_id(), resp).second) << "twice: " << resp.request_id();
  }
  const grpc::Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.error_code() << ": " << status.error_message();
  // Signalled already: the server exits 0 once the stream is done (128 + N: killed by signal N).
  EXPECT_EQ(s.Stop(/*signal=*/0, absl::Seconds(60)), 0);

  ASSERT_EQ(answers.size(), static_cast<size_t>(kBefore + 1 + kAfter));
  for (const auto& [id, p] : before) {
    const v1::GemmResponse& r = answers[id];
    EXPECT_EQ(r.error().code(), 0) << id << ": " << r.error().message();
    ASSERT_EQ(r.outputs_size(), 1) << id;
    EXPECT_LE(OutputError(p, r.outputs(0)), Tolerance(p)) << id;
  }
  for (int i = 0; i < kAfter; ++i) {
    const v1::GemmResponse& r = answers[absl::StrCat("after", i)];
    EXPECT_EQ(r.error().code(), grpc::StatusCode::UNAVAILABLE) << "after" << i;
    EXPECT_EQ(r.outputs_size(), 0);
  }
}

// A client that keeps its stream open through the whole drain: the requests accepted before the
// signal are still answered, the server ends the stream when the drain timeout is up and exits 0.
// (The work takes milliseconds; the timeout leaves it a wide margin even in sanitizer builds.)
TEST(StreamDrainTest, StreamKeptOpenPastTheDrainTimeoutGetsItsAnswersFirst) {
  auto server = ServerProcess::Start({"--backend=cpu", "--cpu_workers=1", "--drain_timeout_s=8"});
  ASSERT_TRUE(server.ok()) << server.status();
  ServerProcess& s = **server;
  absl::BitGen gen;
  grpc::ClientContext ctx;
  auto stream = s.client().stub()->GemmStreamPacked(&ctx);
  constexpr int kRequests = 6;
  std::map<std::string, HostProblem> sent;
  v1::GemmRequestPack pack;
  for (int i = 0; i < kRequests; ++i) {
    HostProblem p = RandomProblem(256, 256, 256, true, true, 1, 0, gen);
    v1::GemmRequest* req = pack.add_requests();
    req->set_request_id(absl::StrCat(i));
    FillProto(p, req->mutable_problem());
    sent[req->request_id()] = std::move(p);
  }
  ASSERT_TRUE(stream->Write(pack));
  v1::GemmResponsePack in;
  std::set<std::string> answered;
  auto take = [&](const v1::GemmResponsePack& m) {
    for (const v1::GemmResponse& r : m.responses()) {
      EXPECT_EQ(r.error().code(), 0) << r.request_id() << ": " << r.error().message();
      ASSERT_EQ(r.outputs_size(), 1);
      EXPECT_LE(OutputError(sent[r.request_id()], r.outputs(0)), Tolerance(sent[r.request_id()]));
      EXPECT_TRUE(answered.insert(r.request_id()).second) << "twice: " << r.request_id();
    }
  };
  ASSERT_TRUE(stream->Read(&in));  // the server has read the pack
  take(in);
  ASSERT_EQ(kill(s.pid(), SIGTERM), 0);
  while (stream->Read(&in)) take(in);  // no WritesDone: the server ends the call
  const grpc::Status status = stream->Finish();
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(answered.size(), static_cast<size_t>(kRequests));
  EXPECT_EQ(s.Stop(/*signal=*/0, absl::Seconds(60)), 0);  // signalled already: wait for the exit
}

}  // namespace
}  // namespace gemm::testing
