// The CUDA backend tests' harness: a started backend over a FakeSource (engine_test_util.h),
// the options the tests start it with, and running one request or a routed batch through it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/core/backend.h"
#include "server/core/types.h"
#include "server/gpu/cuda_backend.h"
#include "tests/gpu/engine_test_util.h"

namespace gemm::gpu::testing {

constexpr absl::Duration kWait = absl::Seconds(120);

#define SKIP_WITHOUT_GPU() \
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device"

// A started backend and its source; stops both at the end of the test.
struct Harness {
  std::unique_ptr<core::Backend> backend;
  FakeSource source;
  bool stopped = false;

  explicit Harness(CudaBackendOptions options, std::function<void()> before_next = nullptr) {
    source.before_next = std::move(before_next);
    auto b = CreateCudaBackend(options);
    EXPECT_TRUE(b.ok()) << b.status();
    if (!b.ok()) return;
    backend = std::move(*b);
    EXPECT_TRUE(backend->Start(&source).ok());
  }
  void Stop() {
    if (stopped || backend == nullptr) return;
    stopped = true;
    source.Shutdown();
    backend->Stop();
  }
  ~Harness() { Stop(); }
  // Pool bytes in use on `device`, or summed over every GPU when `device` is -1 (so the checks
  // hold whichever GPU a request or matrix was placed on).
  int64_t PoolUsed(int device = -1) const {
    int64_t used = 0;
    for (const auto& d : backend->Describe().devices) {
      if (device < 0 || d.ordinal == device) used += d.pool_used_bytes;
    }
    return used;
  }
  // The pinned staging in use and the inline answers sent from it.
  core::StagingDescription Staging() const { return backend->Describe().staging; }
};

inline CudaBackendOptions FastOptions() {
  CudaBackendOptions o;
  o.self_test = false;
  o.staging_bytes = 256 << 20;
  o.executor.gpu_timing_every = 1;  // the tests read every answer's GPU timing
  return o;
}

inline core::Problem MakeProblem(int64_t m, int64_t n, int64_t k, core::BLayout layout,
                                 core::DType out, int64_t count = 1) {
  core::Problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.count = count;
  p.b_layout = layout;
  p.out_dtype = out;
  return p;
}

// Where the batcher would send `items` (all in one batch): the device their resident B lives on
// (the first replica), or any device (-1) when they reference no resident matrix.
inline int HomeDevice(const std::vector<std::shared_ptr<core::WorkItem>>& items) {
  for (const auto& item : items) {
    for (const core::Problem& p : item->request.problems) {
      if (p.b_resident != nullptr && !p.b_resident->desc().devices.empty()) {
        return p.b_resident->desc().devices[0];
      }
    }
  }
  return -1;
}

// Queues `items` as one batch for the device the batcher would pick.
inline void PushRouted(Harness& h, std::vector<std::shared_ptr<core::WorkItem>> items) {
  const int device = HomeDevice(items);
  h.source.Push(MakeBatch(std::move(items)), device);
}

// Runs `request` alone and waits for it.
inline absl::StatusOr<core::GemmResult> RunOne(Harness& h, core::GemmRequest request) {
  Outcome out;
  PushRouted(h, {MakeItem(std::move(request), &out)});
  if (!out.done.WaitForNotificationWithTimeout(kWait)) return absl::DeadlineExceededError("hang");
  EXPECT_EQ(out.calls, 1);
  return std::move(out.result);
}

}  // namespace gemm::gpu::testing
