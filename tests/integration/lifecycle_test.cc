// Integration: health checking and reflection answer, server info describes the backend, and
// SIGTERM drains in-flight requests before the server exits 0.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

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
  const int kInFlight = 6;
  std::atomic<int> ok{0}, failed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kInFlight; ++i) {
    threads.emplace_back([&] {
      absl::BitGen gen;
      HostProblem p = RandomProblem(384, 384, 384, false, false, 1, 0, gen);
      v1::GemmRequest req;
      FillProto(p, req.mutable_problem());
      auto resp = s.client().Gemm(req, absl::Seconds(60));
      (resp.ok() && OutputError(p, resp->outputs(0)) <= Tolerance(p) ? ok : failed)++;
    });
  }
  absl::SleepFor(absl::Milliseconds(300));  // let them arrive
  const int code = s.Stop(SIGTERM, absl::Seconds(60));
  for (auto& t : threads) t.join();
  EXPECT_EQ(code, 0);
  EXPECT_EQ(ok.load(), kInFlight);
  EXPECT_EQ(failed.load(), 0);
}

}  // namespace
}  // namespace gemm::testing
