// Service test of the CUDA backend: tiny outputs. Every M and N in 1..9 (K 1, 7, 64; BF16 and
// FP32 outputs) on every request path of one real gemm_server --backend=cuda, plus operands and
// outputs in this process's GPU memory (CUDA IPC): each answer holds exactly M*N*dtype bytes (or
// writes exactly them into the region and nothing after them) and matches float64
// (tests/integration/output_size_sweep.h). Skipped without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "server/gpu/cuda_backend.h"
#include "tests/integration/output_size_sweep.h"

namespace gemm::gpu {
namespace {

absl::Status CudaStatus(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorString(e)));
}

// A cudaMalloc allocation on GPU 0, exported through CUDA IPC and registered as a region: the
// server reads operands from it and writes outputs into it with device copies.
class DeviceRegion : public gemm::testing::SweepRegion {
 public:
  // Allocates `bytes` on GPU 0 and registers them with `client`'s server as region `name`.
  static absl::StatusOr<std::unique_ptr<DeviceRegion>> Register(client::GemmClient& client,
                                                                const std::string& name,
                                                                int64_t bytes) {
    void* base = nullptr;
    if (auto s = CudaStatus(cudaSetDevice(0), "cudaSetDevice"); !s.ok()) return s;
    if (auto s = CudaStatus(cudaMalloc(&base, bytes), "cudaMalloc"); !s.ok()) return s;
    std::unique_ptr<DeviceRegion> region(new DeviceRegion(client, name, static_cast<char*>(base)));
    cudaIpcMemHandle_t handle;
    if (auto s = CudaStatus(cudaIpcGetMemHandle(&handle, base), "cudaIpcGetMemHandle"); !s.ok()) {
      return s;
    }
    auto info = client.RegisterDeviceMemory(
        name, std::string(reinterpret_cast<const char*>(&handle), sizeof(handle)), 0, 0, bytes);
    if (!info.ok()) return info.status();
    region->registered_ = true;
    return region;
  }
  ~DeviceRegion() override {
    if (registered_) (void)client_.UnregisterSharedMemory(name_);
    (void)cudaFree(base_);
  }

  const std::string& name() const override { return name_; }
  absl::Status Write(int64_t offset, absl::string_view bytes) override {
    // NOTE: a copy from pageable memory may still be in flight when cudaMemcpy returns.
    if (auto s = CudaStatus(cudaSetDevice(0), "cudaSetDevice"); !s.ok()) return s;
    if (auto s = CudaStatus(
            cudaMemcpy(base_ + offset, bytes.data(), bytes.size(), cudaMemcpyHostToDevice),
            "cudaMemcpy to the region");
        !s.ok()) {
      return s;
    }
    return CudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  absl::StatusOr<std::string> Read(int64_t offset, int64_t bytes) override {
    std::string out(bytes, '\0');
    if (auto s = CudaStatus(cudaSetDevice(0), "cudaSetDevice"); !s.ok()) return s;
    if (auto s = CudaStatus(cudaMemcpy(out.data(), base_ + offset, bytes, cudaMemcpyDeviceToHost),
                            "cudaMemcpy from the region");
        !s.ok()) {
      return s;
    }
    return out;
  }

 private:
  DeviceRegion(client::GemmClient& client, std::string name, char* base)
      : client_(client), name_(std::move(name)), base_(base) {}
  client::GemmClient& client_;
  std::string name_;
  char* base_;
  bool registered_ = false;
};

class OutputSizeGpuTest : public gemm::testing::OutputSizeSweepTest {
 protected:
  static void SetUpTestSuite() {
    if (CudaDeviceCount() > 0) StartSuite("cuda");
  }
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    OutputSizeSweepTest::SetUp();
  }
};

using gemm::testing::ExpectNoFailures;

TEST_F(OutputSizeGpuTest, Unary) { ExpectNoFailures(sweep_->Unary()); }

TEST_F(OutputSizeGpuTest, Stream) { ExpectNoFailures(sweep_->Stream()); }

TEST_F(OutputSizeGpuTest, PackedStream) { ExpectNoFailures(sweep_->Packed()); }

TEST_F(OutputSizeGpuTest, SharedMemoryOperandsAndOutputs) {
  auto region = gemm::testing::RegisterHostRegion(server_->client(), "sweep",
                                                  gemm::testing::SweepRegionBytes());
  ASSERT_TRUE(region.ok()) << region.status();
  ExpectNoFailures(sweep_->SharedMemory(**region));
}

TEST_F(OutputSizeGpuTest, CoalescedAgainstResidentWeights) {
  ExpectNoFailures(sweep_->Coalesced());
}

TEST_F(OutputSizeGpuTest, HeterogeneousGroups) { ExpectNoFailures(sweep_->Grouped()); }

TEST_F(OutputSizeGpuTest, Batches) { ExpectNoFailures(sweep_->Batched()); }

// NOTE: last: from here on this process holds a CUDA context on GPU 0.
TEST_F(OutputSizeGpuTest, CudaIpcOperandsAndOutputs) {
  auto region =
      DeviceRegion::Register(server_->client(), "sweep-ipc", gemm::testing::SweepRegionBytes());
  ASSERT_TRUE(region.ok()) << region.status();
  ExpectNoFailures(sweep_->SharedMemory(**region));
}

}  // namespace
}  // namespace gemm::gpu
