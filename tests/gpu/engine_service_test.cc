// Service test of the CUDA backend: the real gemm_server (--backend=cuda) on loopback, 64
// concurrent clients sending decode-style requests against a resident weight (coalesced by the
// batcher) mixed with inline requests, checked against float64; GetServerInfo names the serving
// kernel; releasing the weight returns the pool to its idle usage. The same through a registered
// shared-memory region (page-locked: copies read A and write D in place). A lone request at an
// idle GPU does not wait out the batching delay. Operands in the client's GPU memory (CUDA IPC).
// With two GPUs, a mixture-of-experts step over experts placed on both is split per GPU and
// answered as one, and operands in GPU 1's memory run on GPU 1. Skipped without a GPU.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/bf16.h"
#include "common/posix_shm.h"
#include "common/reference_gemm.h"
#include "gtest/gtest.h"
#include "server/gpu/cuda_backend.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_util.h"

namespace gemm::gpu {
namespace {

// Starts gemm_server --backend=cuda. GEMM_SERVER_BINARY overrides the build-tree path (e.g. when
// the tests run from a copy of the binaries on another machine).
absl::StatusOr<std::unique_ptr<gemm::testing::ServerProcess>> StartCudaServer(
    std::vector<std::string> flags = {}) {
  const char* binary = std::getenv("GEMM_SERVER_BINARY");
  flags.insert(flags.begin(), "--backend=cuda");
  return gemm::testing::ServerProcess::Start(std::move(flags), absl::Seconds(120),
                                             binary != nullptr ? binary : "");
}

// A reference to [off, off + bytes) of shared-memory region `region`.
void SetRef(v1::SharedMemoryRef* r, const std::string& region, int64_t off, int64_t bytes) {
  r->set_region(region);
  r->set_offset(off);
  r->set_byte_size(bytes);
}

// What concurrent clients saw: failures ("" is a success) and the largest batch they ran in.
class ClientTally {
 public:
  // Client `t`'s request `i` failed with `why` unless it is empty; it ran in a batch of `batch`.
  void Note(int t, int i, const std::string& why, int batch) {
    absl::MutexLock lock(&mu_);
    max_batch_ = std::max(max_batch_, batch);
    if (!why.empty()) failures_.push_back(absl::StrCat("client ", t, " request ", i, ": ", why));
  }
  // Fails the test on any failure (the first five shown) or when nothing was coalesced.
  void Check(const std::string& what) {
    absl::MutexLock lock(&mu_);
    for (size_t i = 0; i < failures_.size() && i < 5; ++i) ADD_FAILURE() << failures_[i];
    EXPECT_EQ(failures_.size(), 0u);
    EXPECT_GT(max_batch_, 1) << "no " << what << " request was coalesced";
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> failures_ ABSL_GUARDED_BY(mu_);
  int max_batch_ ABSL_GUARDED_BY(mu_) = 1;
};

TEST(EngineServiceTest, SixtyFourClientsResidentAndInlineMatchFloat64) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  auto server = StartCudaServer();
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
  auto reg = gemm::testing::RegisterNkWeight(c, "w", N, K, w);
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

// One caller at a time against a resident weight, with a batching delay of 300 ms: an idle GPU
// takes each request at once (--dispatch_when_idle, the default); with it off each one sits out
// the whole delay in the queue. Results checked against float64 both ways.
TEST(EngineServiceTest, IdleGpuServesALoneRequestWithoutTheBatchingDelay) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  const int64_t N = 1024, K = 1024, M = 16;
  constexpr int64_t kDelayUs = 300000;
  absl::BitGen gen;
  const std::string w = RandomBf16Bytes(N * K, gen);
  for (const bool idle_dispatch : {true, false}) {
    SCOPED_TRACE(absl::StrCat("dispatch_when_idle=", idle_dispatch));
    auto server =
        StartCudaServer({absl::StrCat("--max_queue_delay_us=", kDelayUs),
                         absl::StrCat("--dispatch_when_idle=", idle_dispatch ? "true" : "false")});
    ASSERT_TRUE(server.ok()) << server.status();
    client::GemmClient& c = (*server)->client();
    auto reg = gemm::testing::RegisterNkWeight(c, "w", N, K, w);
    ASSERT_TRUE(reg.ok()) << reg.status();
    gemm::testing::HostProblem hp;
    hp.m = M;
    hp.n = N;
    hp.k = K;
    hp.b_nk = true;
    hp.b = w;
    for (int i = 0; i < 3; ++i) {
      hp.a = RandomBf16Bytes(M * K, gen);
      v1::GemmRequest req;
      req.set_request_id(absl::StrCat("lone-", i));
      v1::Problem* p = req.mutable_problem();
      p->set_m(M);
      p->set_n(N);
      p->set_k(K);
      p->set_a(hp.a);
      p->set_b_handle(reg->handle());
      p->set_b_layout(v1::B_LAYOUT_NK);
      p->set_output_dtype(v1::DTYPE_BF16);
      auto resp = c.Gemm(req, absl::Seconds(60));
      ASSERT_TRUE(resp.ok()) << resp.status();
      ASSERT_EQ(resp->outputs_size(), 1);
      EXPECT_LE(gemm::testing::OutputError(hp, resp->outputs(0)), gemm::testing::Tolerance(hp));
      const double queue_us = resp->timing().queue_us();
      GTEST_LOG_(INFO) << "request " << i << ": queue " << queue_us << " us, total "
                       << resp->timing().total_us() << " us";
      if (idle_dispatch) {
        EXPECT_LT(queue_us, kDelayUs / 10) << "an idle GPU should not wait for company";
      } else {
        EXPECT_GE(queue_us, kDelayUs * 0.95) << "without idle dispatch the delay applies";
      }
    }
  }
}

TEST(EngineServiceTest, SharedMemoryOperandsCoalescedAndPinned) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  auto server = StartCudaServer();
  ASSERT_TRUE(server.ok()) << server.status();
  client::GemmClient& c = (*server)->client();
  auto info = c.GetServerInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  const int64_t idle_used = info->devices(0).pool_used_bytes();

  const int64_t N = 4096, K = 4096, M = 16;
  absl::BitGen gen;
  const std::string w = RandomBf16Bytes(N * K, gen);
  auto reg = gemm::testing::RegisterNkWeight(c, "w", N, K, w);
  ASSERT_TRUE(reg.ok()) << reg.status();

  // One region: per client an A slot and a D slot, plus room for a batched problem.
  constexpr int kClients = 32, kPerClient = 8;
  const int64_t a_bytes = M * K * 2, d_bytes = M * N * 2;
  const int64_t slot = a_bytes + d_bytes;
  const int64_t extra = 64 << 20;
  auto shm =
      PosixShm::Create(absl::StrCat("/gemm_gpu_shm_test_", getpid()), kClients * slot + extra);
  ASSERT_TRUE(shm.ok()) << shm.status();
  char* base = (*shm)->data();
  std::memset(base, 0xff, (*shm)->size());  // poison: unwritten outputs read as NaN
  auto region = c.RegisterSharedMemory("r", (*shm)->key(), 0, (*shm)->size());
  ASSERT_TRUE(region.ok()) << region.status();
  EXPECT_TRUE(region->pinned()) << "the CUDA backend should page-lock registered regions";
  auto ref = [](v1::SharedMemoryRef* r, int64_t off, int64_t bytes) { SetRef(r, "r", off, bytes); };

  ClientTally tally;
  std::vector<std::thread> threads;
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      absl::BitGen g;
      char* a_slot = base + t * slot;
      char* d_slot = a_slot + a_bytes;
      for (int i = 0; i < kPerClient; ++i) {
        gemm::testing::HostProblem hp;
        hp.m = M;
        hp.n = N;
        hp.k = K;
        hp.b_nk = true;
        hp.a = RandomBf16Bytes(M * K, g);
        std::memcpy(a_slot, hp.a.data(), a_bytes);
        std::memset(d_slot, 0xff, d_bytes);
        v1::GemmRequest req;
        v1::Problem* p = req.mutable_problem();
        p->set_m(M);
        p->set_n(N);
        p->set_k(K);
        ref(p->mutable_a_shm(), t * slot, a_bytes);
        ref(p->mutable_d_shm(), t * slot + a_bytes, d_bytes);
        p->set_b_handle(reg->handle());
        auto resp = c.Gemm(req, absl::Seconds(60));
        std::string why;
        if (!resp.ok()) {
          why = resp.status().ToString();
        } else if (resp->outputs_size() != 1 || !resp->outputs(0).data().empty()) {
          why = "the response must carry one output without data";
        } else if (i < 2) {
          v1::Output out = resp->outputs(0);
          out.set_data(std::string(d_slot, d_bytes));
          hp.b = w;
          const double err = gemm::testing::OutputError(hp, out);
          if (!(err <= gemm::testing::Tolerance(hp))) why = absl::StrCat("error ", err);
        }
        tally.Note(t, i, why, resp.ok() ? resp->timing().batch_requests() : 1);
      }
    });
  }
  for (auto& th : threads) th.join();
  tally.Check("shared-memory");

  // A batched problem with A, B (shared), C from the region and FP32 D into it.
  const int64_t count = 4, bm = 100, bn = 300, bk = 500;
  std::vector<gemm::testing::HostProblem> ps;
  for (int i = 0; i < count; ++i) {
    ps.push_back(gemm::testing::RandomProblem(bm, bn, bk, false, true, 0.5f, 2.0f, gen));
    if (i > 0) ps[i].b = ps[0].b;
  }
  int64_t off = kClients * slot;
  auto put = [&](const std::string& bytes) {
    std::memcpy(base + off, bytes.data(), bytes.size());
    const int64_t at = off;
    off += (bytes.size() + 4095) / 4096 * 4096;
    return at;
  };
  std::string a_all, c_all;
  for (const auto& hp : ps) {
    a_all += hp.a;
    c_all += hp.c;
  }
  v1::GemmRequest breq;
  breq.mutable_batch()->set_count(count);
  v1::Problem* bp = breq.mutable_batch()->mutable_problem();
  gemm::testing::FillProto(ps[0], bp);
  bp->clear_a();
  bp->clear_c();
  ref(bp->mutable_a_shm(), put(a_all), a_all.size());
  ref(bp->mutable_b_shm(), put(ps[0].b), ps[0].b.size());
  ref(bp->mutable_c_shm(), put(c_all), c_all.size());
  const int64_t d_off = off, d_all = count * bm * bn * 4;
  ref(bp->mutable_d_shm(), d_off, d_all);
  ASSERT_LE(d_off + d_all, (*shm)->size());
  auto bresp = c.Gemm(breq, absl::Seconds(60));
  ASSERT_TRUE(bresp.ok()) << bresp.status();
  v1::Output out = bresp->outputs(0);
  EXPECT_TRUE(out.data().empty());
  out.set_data(std::string(base + d_off, d_all));
  for (int i = 0; i < count; ++i) {
    EXPECT_LE(gemm::testing::OutputError(ps[i], out, i), gemm::testing::Tolerance(ps[i])) << i;
  }

  // A second region starting mid-page of the same object (pinned as a whole mapping): one
  // resident request through it.
  {
    const int64_t at = kClients * slot + 100;  // not page-aligned
    auto r2 = c.RegisterSharedMemory("r2", (*shm)->key(), at, a_bytes + d_bytes);
    ASSERT_TRUE(r2.ok()) << r2.status();
    EXPECT_TRUE(r2->pinned());
    gemm::testing::HostProblem hp;
    hp.m = M;
    hp.n = N;
    hp.k = K;
    hp.b_nk = true;
    hp.a = RandomBf16Bytes(M * K, gen);
    hp.b = w;
    std::memcpy(base + at, hp.a.data(), a_bytes);
    v1::GemmRequest req;
    v1::Problem* p = req.mutable_problem();
    p->set_m(M);
    p->set_n(N);
    p->set_k(K);
    p->set_b_handle(reg->handle());
    SetRef(p->mutable_a_shm(), "r2", 0, a_bytes);
    SetRef(p->mutable_d_shm(), "r2", a_bytes, d_bytes);
    auto resp = c.Gemm(req, absl::Seconds(60));
    ASSERT_TRUE(resp.ok()) << resp.status();
    v1::Output o = resp->outputs(0);
    o.set_data(std::string(base + at + a_bytes, d_bytes));
    EXPECT_LE(gemm::testing::OutputError(hp, o), gemm::testing::Tolerance(hp));
    ASSERT_TRUE(c.UnregisterSharedMemory("r2").ok());
  }

  ASSERT_TRUE(c.UnregisterSharedMemory("r").ok());
  ASSERT_TRUE(c.ReleaseMatrix(reg->handle()).ok());
  info = c.GetServerInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->devices(0).pool_used_bytes(), idle_used);
  EXPECT_EQ((*server)->Stop(SIGTERM), 0);
}

// Several GPUs, experts placed by the server (least-loaded GPU each, no replication): a
// mixture-of-experts step naming experts that live on different GPUs runs as one part per GPU and
// comes back as one answer with every output in its place, checked against float64; concurrent
// steps also coalesce per GPU. Skipped with fewer than two GPUs.
// One decode request whose A and D live in a CUDA IPC region of this process's memory at
// `base` (device memory of GPU `device`), against resident weight `handle` holding [N,K] bytes
// `w`.
struct IpcRun {
  client::GemmClient* c;
  int device;
  char* base;
  const std::string& w;
  std::string handle;
  int64_t m, n, k;

  // Runs one request through `region_name` (which starts `at` bytes into `base`), A at `a_off`
  // and D at `d_off` of it; "" when its output matches float64, else what was wrong. `timing`
  // gets the response's timing.
  std::string operator()(const std::string& region_name, int64_t at, int64_t a_off, int64_t d_off,
                         absl::BitGen& g, v1::Timing* timing) const {
    const int64_t a_bytes = m * k * 2, d_bytes = m * n * 2;
    gemm::testing::HostProblem hp;
    hp.m = m;
    hp.n = n;
    hp.k = k;
    hp.b_nk = true;
    hp.b = w;
    hp.a = RandomBf16Bytes(m * k, g);
    if (cudaSetDevice(device) != cudaSuccess ||
        cudaMemcpy(base + at + a_off, hp.a.data(), a_bytes, cudaMemcpyHostToDevice) !=
            cudaSuccess ||
        cudaMemset(base + at + d_off, 0xff, d_bytes) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess) {
      return "cuda setup failed";
    }
    v1::GemmRequest req;
    v1::Problem* p = req.mutable_problem();
    p->set_m(m);
    p->set_n(n);
    p->set_k(k);
    SetRef(p->mutable_a_shm(), region_name, a_off, a_bytes);
    SetRef(p->mutable_d_shm(), region_name, d_off, d_bytes);
    p->set_b_handle(handle);
    auto resp = c->Gemm(req, absl::Seconds(60));
    if (!resp.ok()) return resp.status().ToString();
    if (resp->outputs_size() != 1 || !resp->outputs(0).data().empty()) {
      return "the response must carry one output without data";
    }
    *timing = resp->timing();
    v1::Output out = resp->outputs(0);
    std::string d(d_bytes, '\0');
    if (cudaMemcpy(d.data(), base + at + d_off, d_bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
      return "cudaMemcpy of D failed";
    }
    out.set_data(std::move(d));
    const double err = gemm::testing::OutputError(hp, out);
    return err <= gemm::testing::Tolerance(hp) ? "" : absl::StrCat("error ", err);
  }
};

TEST(EngineServiceTest, ExpertStepAcrossGpusIsSplitAndAnsweredAsOne) {
  if (CudaDeviceCount() < 2) GTEST_SKIP() << "needs two CUDA devices";
  auto server = StartCudaServer();
  ASSERT_TRUE(server.ok()) << server.status();
  client::GemmClient& c = (*server)->client();
  constexpr int kExperts = 4;
  const int64_t N = 512, K = 1024;
  absl::BitGen gen;
  std::vector<std::string> weights, handles;
  std::vector<int> devices_used;
  for (int e = 0; e < kExperts; ++e) {
    weights.push_back(RandomBf16Bytes(N * K, gen));
    auto reg = gemm::testing::RegisterNkWeight(c, absl::StrCat("expert-", e), N, K, weights[e]);
    ASSERT_TRUE(reg.ok()) << reg.status();
    ASSERT_EQ(reg->devices_size(), 1);
    handles.push_back(reg->handle());
    devices_used.push_back(reg->devices(0));
  }
  std::sort(devices_used.begin(), devices_used.end());
  ASSERT_GT(std::unique(devices_used.begin(), devices_used.end()) - devices_used.begin(), 1)
      << "the server placed every expert on one GPU: nothing to split";

  constexpr int kClients = 8, kSteps = 6;
  std::atomic<int> ok{0}, bad{0};
  absl::Mutex mu;
  std::vector<std::string> failures;
  std::vector<std::thread> threads;
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      absl::BitGen g;
      for (int s = 0; s < kSteps; ++s) {
        // Tokens of this step: a few rows for each expert, in a client-dependent order.
        v1::GemmRequest req;
        req.set_request_id(absl::StrCat(t, "-", s));
        std::vector<gemm::testing::HostProblem> hps;
        for (int i = 0; i < kExperts + 1; ++i) {
          const int e = (i + t + s) % kExperts;
          gemm::testing::HostProblem hp;
          hp.m = 1 + (i + s) % 5;
          hp.n = N;
          hp.k = K;
          hp.b_nk = true;
          hp.a = RandomBf16Bytes(hp.m * K, g);
          hp.b = weights[e];
          v1::Problem* p = req.mutable_group()->add_problems();
          p->set_m(hp.m);
          p->set_n(N);
          p->set_k(K);
          p->set_a(hp.a);
          p->set_b_handle(handles[e]);
          p->set_b_layout(v1::B_LAYOUT_NK);
          hps.push_back(std::move(hp));
        }
        auto resp = c.Gemm(req, absl::Seconds(60));
        std::string why;
        if (!resp.ok()) {
          why = resp.status().ToString();
        } else if (resp->outputs_size() != static_cast<int>(hps.size())) {
          why = absl::StrCat(resp->outputs_size(), " outputs for ", hps.size(), " problems");
        } else {
          for (size_t i = 0; i < hps.size() && why.empty(); ++i) {
            const double err = gemm::testing::OutputError(hps[i], resp->outputs(i));
            if (!(err <= gemm::testing::Tolerance(hps[i]))) {
              why = absl::StrCat("problem ", i, " (m=", hps[i].m, ") error ", err);
            }
          }
        }
        if (why.empty()) {
          ++ok;
        } else {
          ++bad;
          absl::MutexLock lock(&mu);
          failures.push_back(absl::StrCat("client ", t, " step ", s, ": ", why));
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (size_t i = 0; i < failures.size() && i < 5; ++i) ADD_FAILURE() << failures[i];
  EXPECT_EQ(ok.load(), kClients * kSteps);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ((*server)->Stop(SIGTERM), 0);
}

// Operands in the client's GPU memory (CUDA IPC): this process cudaMallocs a region, exports it
// and the server maps it; concurrent decode requests read A from it and write D into it (device
// to device, coalesced), also at a range that is not 16-byte aligned (the copy kernel's byte
// path). Every output against float64; unwritten outputs would read as NaN. NOTE: last in the file:
// this process keeps a CUDA context on GPU 0 afterwards, and the server started by a later test
// would see less free memory there (the expert test's placement put every expert on GPU 1).
TEST(EngineServiceTest, CudaIpcOperandsCoalescedAndMatchFloat64) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  auto server = StartCudaServer();
  ASSERT_TRUE(server.ok()) << server.status();
  client::GemmClient& c = (*server)->client();
  const int64_t N = 4096, K = 4096, M = 16;
  absl::BitGen gen;
  const std::string w = RandomBf16Bytes(N * K, gen);
  auto reg = gemm::testing::RegisterNkWeight(c, "w", N, K, w);
  ASSERT_TRUE(reg.ok()) << reg.status();

  constexpr int kClients = 16, kPerClient = 4;
  const int64_t a_bytes = M * K * 2, d_bytes = M * N * 2, slot = a_bytes + d_bytes;
  const int64_t size = kClients * slot + slot + 4096;
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  void* allocation = nullptr;
  ASSERT_EQ(cudaMalloc(&allocation, size), cudaSuccess);
  char* base = static_cast<char*>(allocation);
  ASSERT_EQ(cudaMemset(base, 0xff, size), cudaSuccess);  // poison: unwritten outputs are NaN
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaIpcMemHandle_t handle;
  ASSERT_EQ(cudaIpcGetMemHandle(&handle, base), cudaSuccess);
  const std::string h(reinterpret_cast<const char*>(&handle), sizeof(handle));
  auto region = c.RegisterDeviceMemory("g", h, 0, 0, size);
  ASSERT_TRUE(region.ok()) << region.status();
  EXPECT_TRUE(region->cuda());
  EXPECT_EQ(region->device(), 0);
  EXPECT_EQ(c.RegisterDeviceMemory("bad", "short", 0, 0, size).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Past the allocation (cudaMalloc rounds to 2 MiB at most): refused, not faulting later.
  auto past = c.RegisterDeviceMemory("past", h, 0, 0, size + (64 << 20));
  EXPECT_EQ(past.status().code(), absl::StatusCode::kInvalidArgument) << past.status();

  IpcRun run{&c, 0, base, w, reg->handle(), M, N, K};
  ClientTally tally;
  std::vector<std::thread> threads;
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      absl::BitGen g;
      for (int i = 0; i < kPerClient; ++i) {
        v1::Timing timing;
        const std::string why = run("g", 0, t * slot, t * slot + a_bytes, g, &timing);
        tally.Note(t, i, why, timing.batch_requests());
      }
    });
  }
  for (auto& th : threads) th.join();
  tally.Check("CUDA IPC");

  // A second region 100 bytes into the allocation: A and D not 16-byte aligned.
  const int64_t at = kClients * slot + 100;
  auto r2 = c.RegisterDeviceMemory("g2", h, 0, at, slot);
  ASSERT_TRUE(r2.ok()) << r2.status();
  v1::Timing timing;
  EXPECT_EQ(run("g2", at, 0, a_bytes, gen, &timing), "");
  ASSERT_TRUE(c.UnregisterSharedMemory("g2").ok());
  ASSERT_TRUE(c.UnregisterSharedMemory("g").ok());
  ASSERT_TRUE(c.ReleaseMatrix(reg->handle()).ok());
  EXPECT_EQ((*server)->Stop(SIGTERM), 0);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_EQ(cudaFree(base), cudaSuccess);
}

// With two GPUs: operands in GPU 1's memory run on GPU 1, against a weight replicated on both;
// a weight only on GPU 0 cannot serve them (FAILED_PRECONDITION), and the server keeps serving.
// Last in the file for the same reason as the test above.
TEST(EngineServiceTest, CudaIpcOperandsOnSecondGpuRunThere) {
  if (CudaDeviceCount() < 2) GTEST_SKIP() << "needs two CUDA devices";
  auto server = StartCudaServer();
  ASSERT_TRUE(server.ok()) << server.status();
  client::GemmClient& c = (*server)->client();
  const int64_t N = 2048, K = 4096, M = 16;
  absl::BitGen gen;
  const std::string w = RandomBf16Bytes(N * K, gen);
  auto both = gemm::testing::RegisterNkWeight(c, "both", N, K, w, {0, 1});
  ASSERT_TRUE(both.ok()) << both.status();
  ASSERT_EQ(both->devices_size(), 2);
  auto first = gemm::testing::RegisterNkWeight(c, "first", N, K, w, {0});
  ASSERT_TRUE(first.ok()) << first.status();

  constexpr int kClients = 8, kPerClient = 4;
  const int64_t slot = M * K * 2 + M * N * 2, size = kClients * slot;
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  void* allocation = nullptr;
  ASSERT_EQ(cudaMalloc(&allocation, size), cudaSuccess);
  char* base = static_cast<char*>(allocation);
  cudaIpcMemHandle_t handle;
  ASSERT_EQ(cudaIpcGetMemHandle(&handle, base), cudaSuccess);
  const std::string h(reinterpret_cast<const char*>(&handle), sizeof(handle));
  auto region = c.RegisterDeviceMemory("g1", h, 1, 0, size);
  ASSERT_TRUE(region.ok()) << region.status();
  EXPECT_EQ(region->device(), 1);

  IpcRun run{&c, 1, base, w, both->handle(), M, N, K};
  ClientTally tally;
  absl::Mutex mu;
  std::vector<int> devices;
  std::vector<std::thread> threads;
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      absl::BitGen g;
      for (int i = 0; i < kPerClient; ++i) {
        v1::Timing timing;
        const std::string why = run("g1", 0, t * slot, t * slot + M * K * 2, g, &timing);
        tally.Note(t, i, why, timing.batch_requests());
        absl::MutexLock lock(&mu);
        if (why.empty()) devices.push_back(timing.device());
      }
    });
  }
  for (auto& th : threads) th.join();
  tally.Check("CUDA IPC on GPU 1");
  EXPECT_EQ(devices.size(), static_cast<size_t>(kClients * kPerClient));
  for (int d : devices) EXPECT_EQ(d, 1) << "a request on GPU 1's memory ran on GPU " << d;

  IpcRun wrong{&c, 1, base, w, first->handle(), M, N, K};
  v1::Timing timing;
  const std::string why = wrong("g1", 0, 0, M * K * 2, gen, &timing);
  EXPECT_NE(why.find("FAILED_PRECONDITION"), std::string::npos) << why;
  EXPECT_EQ(run("g1", 0, 0, M * K * 2, gen, &timing), "") << "the server stopped serving";
  EXPECT_EQ(timing.device(), 1);

  ASSERT_TRUE(c.UnregisterSharedMemory("g1").ok());
  ASSERT_TRUE(c.ReleaseMatrix(both->handle()).ok());
  ASSERT_TRUE(c.ReleaseMatrix(first->handle()).ok());
  EXPECT_EQ((*server)->Stop(SIGTERM), 0);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  EXPECT_EQ(cudaFree(base), cudaSuccess);
}

}  // namespace
}  // namespace gemm::gpu
