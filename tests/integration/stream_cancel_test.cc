// Integration: streams that end while their requests are still being read and run (the client
// cancels after its first answer, or the stream's deadline expires) must not take the server
// down, while one CPU worker is kept busy with large unary requests so that the stream requests
// wait in the queue when the stream ends.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_util.h"

namespace gemm::testing {
namespace {

constexpr int kRequestsPerStream = 200;

// A GemmStream request of 8x64x8 (operands made once and reused).
v1::GemmRequest SmallRequest() {
  absl::BitGen gen;
  v1::GemmRequest req;
  FillProto(RandomProblem(8, 8, 64, false, false, 1, 0, gen), req.mutable_problem());
  return req;
}

// Sends kRequestsPerStream requests on a GemmStream (Packed: one request per message), then
// either reads one answer and cancels, or (with `deadline`) just lets the deadline end it.
template <class Stub>
void AbandonStream(Stub* stub, bool packed, absl::Duration deadline, bool cancel, bool read_one) {
  static const v1::GemmRequest request = SmallRequest();
  grpc::ClientContext ctx;
  if (deadline != absl::InfiniteDuration()) {
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  }
  if (packed) {
    auto stream = stub->GemmStreamPacked(&ctx);
    v1::GemmRequestPack pack;
    *pack.add_requests() = request;
    for (int i = 0; i < kRequestsPerStream; ++i) {
      pack.mutable_requests(0)->set_request_id(absl::StrCat(i));
      if (!stream->Write(pack)) break;
    }
    v1::GemmResponsePack answer;
    if (read_one) stream->Read(&answer);
    if (cancel) ctx.TryCancel();
    (void)stream->Finish();
  } else {
    auto stream = stub->GemmStream(&ctx);
    v1::GemmRequest req = request;
    for (int i = 0; i < kRequestsPerStream; ++i) {
      req.set_request_id(absl::StrCat(i));
      if (!stream->Write(req)) break;
    }
    v1::GemmResponse answer;
    if (read_one) stream->Read(&answer);
    if (cancel) ctx.TryCancel();
    (void)stream->Finish();
  }
}

TEST(StreamCancelTest, StreamsEndingWhileTheirRequestsAreReadDoNotCrashTheServer) {
  auto server = ServerProcess::Start({"--backend=cpu", "--cpu_workers=1"});
  ASSERT_TRUE(server.ok()) << server.status();
  ServerProcess& s = **server;
  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  for (int t = 0; t < 2; ++t) {
    busy.emplace_back([&] {
      absl::BitGen gen;
      const HostProblem p = RandomProblem(512, 512, 512, false, false, 1, 0, gen);
      v1::GemmRequest req;
      FillProto(p, req.mutable_problem());
      while (!stop.load()) (void)s.client().Gemm(req, absl::Seconds(10));
    });
  }
  // Rounds of 4 cancelled streams and 2 expiring ones each, until the time is up or the server
  // stops answering.
  const absl::Time end = absl::Now() + absl::Seconds(12);
  int rounds = 0;
  bool alive = true;
  while (alive && absl::Now() < end) {
    std::vector<std::thread> clients;
    for (int t = 0; t < 6; ++t) {
      clients.emplace_back([&, t] {
        const bool cancel = t < 4;
        AbandonStream(s.client().stub(), /*packed=*/(rounds + t) % 2 == 1,
                      cancel ? absl::InfiniteDuration() : absl::Milliseconds(20), cancel,
                      /*read_one=*/t < 2);
      });
    }
    for (auto& c : clients) c.join();
    ++rounds;
    alive = s.client().GetServerInfo().ok();
  }
  stop = true;
  for (auto& b : busy) b.join();
  EXPECT_TRUE(alive) << "the server stopped answering after " << rounds << " rounds";
  EXPECT_EQ(s.Stop(SIGTERM), 0) << "after " << rounds << " rounds";
}

}  // namespace
}  // namespace gemm::testing
