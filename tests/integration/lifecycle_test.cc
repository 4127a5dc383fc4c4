// Integration: health checking and reflection answer, server info describes the backend,
// SIGTERM drains in-flight requests before the server exits 0, and a second SIGTERM during the
// drain changes nothing.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <atomic>
#include <thread>

#include "tests/integration/server_process.h"
#include "tests/integration/test_util.h"

namespace gemm::testing {
namespace {

// grpc.health.v1.Health/Check for `service` via a generic call (the health protos are not
// installed as C++ headers); returns the ServingStatus enum value or -1.
int HealthStatus(const std::string& target, const std::string& service) {
  auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  std::string req;  // HealthCheckRequest{service = 1}
  if (!service.empty()) {
    req.push_back(0x0a);
    req.push_back(static_cast<char>(service.size()));
    req += service;
  }
  grpc::Slice slice(req);
  grpc::ByteBuffer request(&slice, 1), response;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;
  stub.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                 [&](grpc::Status s) {
                   std::lock_guard<std::mutex> l(mu);
                   status = s;
                   done = true;
                   cv.notify_all();
                 });
  std::unique_lock<std::mutex> l(mu);
  cv.wait(l, [&] { return done; });
  if (!status.ok()) return -1;
  std::vector<grpc::Slice> slices;
  (void)response.Dump(&slices);
  std::string bytes;
  for (auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  if (bytes.size() == 2 && bytes[0] == 0x08) return bytes[1];  // status = 1 (varint)
  return bytes.empty() ? 0 : -1;
}

TEST(LifecycleTest, HealthServerInfoAndGracefulDrain) {
  auto server = ServerProcess::Start({"--backend=cpu", "--cpu_workers=1", "--drain_timeout_s=60"});
  ASSERT_TRUE(server.ok()) << server.status();
  ServerProcess& s = **server;
  EXPECT_EQ(HealthStatus(s.target(), ""), 1);  // SERVING
  EXPECT_EQ(HealthStatus(s.target(), "gemm.v1.GemmService"), 1);

  auto info = s.client().GetServerInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->backend(), "cpu");
  ASSERT_GE(info->kernels_size(), 1);
  EXPECT_TRUE(info->kernels(0).usable());
  EXPECT_GT(info->limits().max_message_bytes(), 4 << 20);

  // Queue several slow requests on one worker, then SIGTERM: all of them must still succeed.
  // NOTE: the requests are built before the callers start, so that the wait before the signal
  // only covers sending them. A caller that built its own (slow under ASan on two cores) could
  // send it after the signal, and the draining server rightly refuses a request that late.
  const int kInFlight = 6;
  absl::BitGen gen;
  std::vector<HostProblem> problems;
  std::vector<v1::GemmRequest> requests(kInFlight);
  for (int i = 0; i < kInFlight; ++i) {
    problems.push_back(RandomProblem(384, 384, 384, false, false, 1, 0, gen));
    FillProto(problems.back(), requests[i].mutable_problem());
  }
  std::atomic<int> ok{0}, failed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kInFlight; ++i) {
    threads.emplace_back([&, i] {
      auto resp = s.client().Gemm(requests[i], absl::Seconds(60));
      const bool right =
          resp.ok() && OutputError(problems[i], resp->outputs(0)) <= Tolerance(problems[i]);
      (right ? ok : failed)++;
      if (!resp.ok()) GTEST_LOG_(INFO) << "request " << i << ": " << resp.status();
    });
  }
  absl::SleepFor(absl::Milliseconds(300));  // let them arrive
  const int code = s.Stop(SIGTERM, absl::Seconds(60));
  for (auto& t : threads) t.join();
  EXPECT_EQ(code, 0);
  EXPECT_EQ(ok.load(), kInFlight);
  EXPECT_EQ(failed.load(), 0);
}

// A second SIGTERM while the server drains is ignored: the request in flight is answered and the
// process exits 0. OpenBLAS starts its thread pool while the library loads, before main; the
// child gets a pool of 4 threads whatever this machine's cores, so a pool thread that could take
// the signal exists here.
TEST(LifecycleTest, SecondSigtermDuringTheDrainIsIgnored) {
  ASSERT_EQ(setenv("OPENBLAS_NUM_THREADS", "4", 1), 0);
  // A request against a resident B waits --max_queue_delay_us (2 s) in the queue: the drain
  // lasts that long whatever the machine's speed.
  auto server =
      ServerProcess::Start({"--backend=cpu", "--cpu_workers=1", "--drain_timeout_s=60",
                            "--dispatch_when_idle=false", "--max_queue_delay_us=2000000"});
  unsetenv("OPENBLAS_NUM_THREADS");
  ASSERT_TRUE(server.ok()) << server.status();
  ServerProcess& s = **server;
  absl::BitGen gen;
  const HostProblem p = RandomProblem(8, 16, 32, /*b_nk=*/true, false, 1, 0, gen);
  auto weight = RegisterNkWeight(s.client(), "w", p.n, p.k, p.b);
  ASSERT_TRUE(weight.ok()) << weight.status();
  v1::GemmRequest request;
  FillProto(p, request.mutable_problem());
  request.mutable_problem()->clear_b();
  request.mutable_problem()->set_b_handle(weight->handle());
  absl::StatusOr<v1::GemmResponse> response;
  std::thread caller([&] { response = s.client().Gemm(request, absl::Seconds(60)); });
  absl::SleepFor(absl::Milliseconds(300));  // the request waits in the queue
  ASSERT_EQ(kill(s.pid(), SIGTERM), 0);
  absl::SleepFor(absl::Milliseconds(300));  // the drain waits for the request
  ASSERT_EQ(kill(s.pid(), SIGTERM), 0);
  const int code = s.Stop(0, absl::Seconds(60));  // signal 0: only waits for the exit
  caller.join();
  EXPECT_EQ(code, 0) << "128 + n: killed by signal n";
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_LE(OutputError(p, response->outputs(0)), Tolerance(p));
}

}  // namespace
}  // namespace gemm::testing
