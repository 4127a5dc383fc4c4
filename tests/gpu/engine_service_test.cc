// Service test of the CUDA backend: the real gemm_server (--backend=cuda) on loopback, 64
// concurrent clients sending decode-style requests against a resident weight (coalesced by the
// batcher) mixed with inline requests, checked against float64; GetServerInfo names the serving
// kernel; releasing the weight returns the pool to its idle usage. Skipped without a GPU.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/bf16.h"
#include "common/reference_gemm.h"
#include "gtest/gtest.h"
#include "server/gpu/cuda_backend.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_util.h"

namespace gemm::gpu {
namespace {

TEST(EngineServiceTest, SixtyFourClientsResidentAndInlineMatchFloat64) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  // GEMM_SERVER_BINARY overrides the build-tree path (e.g. when run from a device bundle).
  const char* binary = std::getenv("GEMM_SERVER_BINARY");
  auto server = gemm::testing::ServerProcess::Start({"--backend=cuda"}, absl::Seconds(120),
                                                    binary != nullptr ? binary : "");
  ASSERT_TRUE(server.ok()) << server.status();
  client::GemmClient& c = (*server)->client();

  auto info = c.GetServerInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->backend(), "cuda");
  ASSERT_GT(info->devices_size(), 0);
  for (const auto& d : info->devices()) {
    EXPECT_FALSE(d.kernel().empty());
    GTEST_LOG_(INFO) << "device " << d.ordinal() << " " << d.name() << " serves " << d.kernel()
                     << "; pool " << d.pool_used_bytes() << "/" << d.pool_capacity_bytes();
  }
  for (const auto& k : info->kernels()) {
    GTEST_LOG_(INFO) << "kernel " << k.name() << " usable=" << k.usable() << " " << k.detail();
  }
  const int64_t idle_used = info->devices(0).pool_used_bytes();

  // Resident weight W [N,K] (a Linear weight), N = K = 4096.
  const int64_t N = 4096, K = 4096;
  absl::BitGen gen;
  const std::string w = RandomBf16Bytes(N * K, gen);
  v1::MatrixHeader header;
  header.set_name("w");
  header.set_rows(N);
  header.set_cols(K);
  header.set_dtype(v1::DTYPE_BF16);
  header.set_layout(v1::B_LAYOUT_NK);
  auto reg = c.RegisterMatrix(header, w);
  ASSERT_TRUE(reg.ok()) << reg.status();
  const std::string handle = reg->handle();

  constexpr int kClients = 64, kPerClient = 12;
  std::atomic<int> ok{0}, bad{0}, max_batch{1};
  absl::Mutex mu;
  std::vector<std::string> failures;
  // Per client: latencies (ms), server timings of resident requests, and the first three
  // request/response pairs to verify after the load (float64 is slow for 16x4096x4096).
  struct ClientLog {
    std::vector<double> latency_ms;
    std::vector<double> compute_us, queue_us, total_us;
    std::vector<std::pair<gemm::testing::HostProblem, v1::Output>> to_check;
  };
  std::vector<ClientLog> logs(kClients);
  std::vector<std::thread> threads;
  const absl::Time start = absl::Now();
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      absl::BitGen g;
      ClientLog& log = logs[t];
      for (int i = 0; i < kPerClient; ++i) {
        const bool resident = (i + t) % 3 != 0;
        gemm::testing::HostProblem hp;
        v1::GemmRequest req;
        req.set_request_id(absl::StrCat(t, "-", i));
        if (resident) {
          hp.m = 16;
          hp.n = N;
          hp.k = K;
          hp.b_nk = true;
          hp.a = RandomBf16Bytes(hp.m * K, g);
          v1::Problem* p = req.mutable_problem();
          p->set_m(hp.m);
          p->set_n(N);
          p->set_k(K);
          p->set_a(hp.a);
          p->set_b_handle(handle);
          p->set_b_layout(v1::B_LAYOUT_NK);
          p->set_output_dtype(v1::DTYPE_BF16);
        } else {
          hp = gemm::testing::RandomProblem(40 + t, 72, 200, t % 2 == 0, t % 4 == 1, 1.0f,
                                            t % 3 == 0 ? 0.5f : 0.0f, g);
          gemm::testing::FillProto(hp, req.mutable_problem());
        }
        const absl::Time t0 = absl::Now();
        auto resp = c.Gemm(req, absl::Seconds(60));
        log.latency_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
        if (!resp.ok() || resp->outputs_size() != 1) {
          ++bad;
          absl::MutexLock lock(&mu);
          failures.push_back(resp.ok() ? "wrong output count" : resp.status().ToString());
          continue;
        }
        int prev = max_batch.load();
        while (resp->timing().batch_requests() > prev &&
               !max_batch.compare_exchange_weak(prev, resp->timing().batch_requests())) {
        }
        if (resident) {
          log.compute_us.push_back(resp->timing().compute_us());
          log.queue_us.push_back(resp->timing().queue_us());
          log.total_us.push_back(resp->timing().total_us());
        }
        if (i < 3) {
          if (resident) hp.b = w;
          log.to_check.emplace_back(std::move(hp), resp->outputs(0));
        }
        ++ok;
      }
    });
  }
  for (auto& th : threads) th.join();
  const double secs = absl::ToDoubleSeconds(absl::Now() - start);
  threads.clear();
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      for (const auto& [hp, out] : logs[t].to_check) {
        const double err = gemm::testing::OutputError(hp, out);
        if (!(err <= gemm::testing::Tolerance(hp))) {
          ++bad;
          absl::MutexLock lock(&mu);
          failures.push_back(absl::StrCat("client ", t, " m=", hp.m, " error ", err));
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  auto pct = [](std::vector<double> v, double q) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
  };
  std::vector<double> lat, comp, queue, total;
  for (const auto& l : logs) {
    lat.insert(lat.end(), l.latency_ms.begin(), l.latency_ms.end());
    comp.insert(comp.end(), l.compute_us.begin(), l.compute_us.end());
    queue.insert(queue.end(), l.queue_us.begin(), l.queue_us.end());
    total.insert(total.end(), l.total_us.begin(), l.total_us.end());
  }
  GTEST_LOG_(INFO) << ok.load() << " responses, " << bad.load() << " failures, "
                   << kClients * kPerClient << " requests from " << kClients << " clients in "
                   << secs << " s; largest coalesced batch " << max_batch.load()
                   << " requests; client latency ms p50 " << pct(lat, 0.5) << " p99 "
                   << pct(lat, 0.99) << "; resident requests server us: queue p50 "
                   << pct(queue, 0.5) << ", compute p50 " << pct(comp, 0.5) << ", total p50 "
                   << pct(total, 0.5) << " p99 " << pct(total, 0.99);
  for (size_t i = 0; i < failures.size() && i < 5; ++i) ADD_FAILURE() << failures[i];
  EXPECT_EQ(ok.load(), kClients * kPerClient);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(max_batch.load(), 1) << "no request was coalesced";

  ASSERT_TRUE(c.ReleaseMatrix(handle).ok());
  info = c.GetServerInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->devices(0).pool_used_bytes(), idle_used);
  EXPECT_EQ((*server)->Stop(SIGTERM), 0);
}

}  // namespace
}  // namespace gemm::gpu
