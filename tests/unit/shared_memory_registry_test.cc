// SharedMemoryRegistry with GPU memory (CUDA IPC) over a fake backend (no GPU): a range inside the
// exported allocation registers and resolves to device addresses; one past its end is refused and
// the mapping closed again; the name stays free; without a size from the driver the range is
// taken on trust; a key and a handle together are refused. Regions of one allocation share one
// mapping, closed with the last of them (a refused region does not close its neighbour's).
#include "server/core/shared_memory_registry.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace gemm::core {
namespace {

// Maps every handle to `memory` (a host buffer standing in for device memory) of `bytes` bytes.
class FakeDeviceBackend : public Backend {
 public:
  std::string Name() const override { return "fake"; }
  BackendDescription Describe() const override { return {}; }
  std::vector<int> Devices() const override { return {0}; }
  absl::Status Start(WorkSource*) override { return absl::OkStatus(); }
  void Stop() override {}
  absl::StatusOr<std::unique_ptr<MatrixUpload>> BeginUpload(ResidentMatrix::Desc) override {
    return absl::UnimplementedError("no uploads");
  }
  absl::StatusOr<DeviceMemory> OpenDeviceMemory(const std::string& /*ipc_handle*/,
                                                int device) override {
    if (device != 0) return absl::InvalidArgumentError("no such device");
    ++opened;
    return DeviceMemory{memory.data(), bytes};
  }
  void CloseDeviceMemory(char* base) override {
    EXPECT_EQ(base, memory.data());
    ++closed;
  }

  std::string memory = std::string(4096, '\0');
  int64_t bytes = 4096;
  int opened = 0, closed = 0;
};

SharedMemoryRegion::Desc Gpu(const std::string& name, int64_t offset, int64_t bytes) {
  return {.name = name,
          .offset = offset,
          .byte_size = bytes,
          .cuda_ipc_handle = std::string(64, '\1'),
          .device = 0};
}

TEST(SharedMemoryRegistryTest, GpuRangeInsideTheAllocationResolvesToDeviceAddresses) {
  FakeDeviceBackend backend;
  {
    SharedMemoryRegistry registry(&backend, 1 << 20, "/gemm");
    auto region = registry.Register(Gpu("g", 1024, 3072));
    ASSERT_TRUE(region.ok()) << region.status();
    EXPECT_TRUE((*region)->on_device());
    EXPECT_FALSE((*region)->pinned());
    std::vector<std::shared_ptr<const SharedMemoryRegion>> keep;
    auto r = registry.Resolve("a_shm", {"g", 16, 32}, &keep);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->on_device);
    EXPECT_EQ(r->bytes.data(), backend.memory.data() + 1024 + 16);
    EXPECT_EQ(r->bytes.size(), 32u);
    ASSERT_TRUE(registry.Unregister("g").ok());
    EXPECT_EQ(backend.closed, 0);  // `keep` still holds it
  }
  EXPECT_EQ(backend.closed, 1);
}

TEST(SharedMemoryRegistryTest, GpuRangePastTheAllocationIsRefusedAndClosed) {
  FakeDeviceBackend backend;
  SharedMemoryRegistry registry(&backend, 1 << 20, "/gemm");
  auto past = registry.Register(Gpu("g", 1024, 3073));
  EXPECT_EQ(past.status().code(), absl::StatusCode::kInvalidArgument) << past.status();
  EXPECT_NE(past.status().message().find("past the end of the exported allocation (4096 bytes)"),
            std::string::npos)
      << past.status();
  EXPECT_EQ(backend.opened, 1);
  EXPECT_EQ(backend.closed, 1);
  EXPECT_EQ(registry.bytes(), 0);
  EXPECT_TRUE(registry.Register(Gpu("g", 0, 4096)).ok());  // the name is free again
}

TEST(SharedMemoryRegistryTest, GpuRangeIsTakenOnTrustWhenTheSizeIsUnknown) {
  FakeDeviceBackend backend;
  backend.bytes = -1;
  SharedMemoryRegistry registry(&backend, 1 << 20, "/gemm");
  EXPECT_TRUE(registry.Register(Gpu("g", 1024, 8192)).ok());
}

TEST(SharedMemoryRegistryTest, RegionsOfOneAllocationShareOneMapping) {
  FakeDeviceBackend backend;
  SharedMemoryRegistry registry(&backend, 1 << 20, "/gemm");
  ASSERT_TRUE(registry.Register(Gpu("g", 0, 2048)).ok());
  ASSERT_TRUE(registry.Register(Gpu("h", 2048, 2048)).ok());
  EXPECT_EQ(backend.opened, 1);
  ASSERT_TRUE(registry.Unregister("g").ok());
  EXPECT_EQ(backend.closed, 0);
  std::vector<std::shared_ptr<const SharedMemoryRegion>> keep;
  auto r = registry.Resolve("d_shm", {"h", 0, 64}, &keep);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->bytes.data(), backend.memory.data() + 2048);
  keep.clear();
  ASSERT_TRUE(registry.Unregister("h").ok());
  EXPECT_EQ(backend.closed, 1);
  ASSERT_TRUE(registry.Register(Gpu("g", 0, 64)).ok());  // mapped afresh
  EXPECT_EQ(backend.opened, 2);
}

TEST(SharedMemoryRegistryTest, RefusedRangeDoesNotCloseAnotherRegionsMapping) {
  FakeDeviceBackend backend;
  SharedMemoryRegistry registry(&backend, 1 << 20, "/gemm");
  ASSERT_TRUE(registry.Register(Gpu("g", 0, 4096)).ok());
  EXPECT_EQ(registry.Register(Gpu("past", 0, 8192)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(backend.opened, 1);
  EXPECT_EQ(backend.closed, 0);
  std::vector<std::shared_ptr<const SharedMemoryRegion>> keep;
  EXPECT_TRUE(registry.Resolve("a_shm", {"g", 0, 4096}, &keep).ok());
  keep.clear();
  ASSERT_TRUE(registry.Unregister("g").ok());
  EXPECT_EQ(backend.closed, 1);
}

TEST(SharedMemoryRegistryTest, TwoHandlesOfOneAllocationCloseEveryBackendMapping) {
  FakeDeviceBackend backend;  // maps every handle to the same memory
  SharedMemoryRegistry registry(&backend, 1 << 20, "/gemm");
  ASSERT_TRUE(registry.Register(Gpu("g", 0, 64)).ok());
  SharedMemoryRegion::Desc other = Gpu("h", 64, 64);
  other.cuda_ipc_handle = std::string(64, '\2');
  ASSERT_TRUE(registry.Register(other).ok());
  EXPECT_EQ(backend.opened, 2);
  ASSERT_TRUE(registry.Unregister("h").ok());
  EXPECT_EQ(backend.closed, 0);
  ASSERT_TRUE(registry.Unregister("g").ok());
  EXPECT_EQ(backend.closed, 2);
}

TEST(SharedMemoryRegistryTest, KeyAndHandleTogetherOrABadDeviceAreRefused) {
  FakeDeviceBackend backend;
  SharedMemoryRegistry registry(&backend, 1 << 20, "/gemm");
  SharedMemoryRegion::Desc both = Gpu("g", 0, 64);
  both.key = "/gemm_x";
  EXPECT_EQ(registry.Register(both).status().code(), absl::StatusCode::kInvalidArgument);
  SharedMemoryRegion::Desc other = Gpu("g", 0, 64);
  other.device = 3;
  auto bad = registry.Register(other);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << bad.status();
  EXPECT_NE(bad.status().message().find("cuda_ipc_handle: "), std::string::npos);
  EXPECT_EQ(registry.bytes(), 0);
}

}  // namespace
}  // namespace gemm::core
