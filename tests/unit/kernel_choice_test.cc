// kernel::ChooseKernel: the one place that decides which kernel serves a request on a device
// (requested name, the device's dispatch choice, its self-test outcome). Runs without a GPU.
#include "gemm/kernel_choice.h"

#include <gtest/gtest.h>

namespace gemm::kernel {
namespace {

DeviceKernels Hopper(bool usable) {
  return {.device = 1,
          .cc_major = 9,
          .cc_minor = 0,
          .selected = KernelKind::kSm90,
          .selected_usable = usable,
          .self_test_detail = "mismatch at (3, 4)"};
}

TEST(ChooseKernelTest, AutoIsTheDevicesKernelWhileItPassedItsSelfTest) {
  for (const char* name : {"", "auto"}) {
    auto c = ChooseKernel(name, Hopper(true));
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->kind, KernelKind::kAuto);
    EXPECT_EQ(c->name, "sm90_wgmma");
  }
}

TEST(ChooseKernelTest, AutoIsCublasLtWhenTheDevicesKernelFailedItsSelfTest) {
  auto c = ChooseKernel("auto", Hopper(false));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kind, KernelKind::kCublasLt);
  EXPECT_EQ(c->name, "cublaslt");
}

TEST(ChooseKernelTest, ExplicitKernels) {
  auto lt = ChooseKernel("cublaslt", Hopper(false));
  ASSERT_TRUE(lt.ok()) << lt.status();
  EXPECT_EQ(lt->kind, KernelKind::kCublasLt);

  auto native = ChooseKernel("sm90_wgmma", Hopper(true));
  ASSERT_TRUE(native.ok()) << native.status();
  EXPECT_EQ(native->kind, KernelKind::kSm90);
  EXPECT_EQ(native->name, "sm90_wgmma");
}

TEST(ChooseKernelTest, RefusalsSayWhy) {
  auto disabled = ChooseKernel("sm90_wgmma", Hopper(false));
  EXPECT_EQ(disabled.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(disabled.status().message(),
            "kernel sm90_wgmma failed its start-up self-test on device 1 and is disabled: "
            "mismatch at (3, 4)");

  auto other_generation = ChooseKernel("sm100_tcgen05", Hopper(true));
  EXPECT_EQ(other_generation.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(other_generation.status().message(),
            "kernel sm100_tcgen05 cannot run on device 1 (compute capability 9.0)");

  auto unknown = ChooseKernel("fast", Hopper(true));
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(unknown.status().message(), "unknown kernel \"fast\"");
}

}  // namespace
}  // namespace gemm::kernel
