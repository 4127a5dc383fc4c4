// Integration: tiny outputs on the CPU backend. Every M and N in 1..9 (K 1, 7, 64; BF16 and FP32
// outputs) on every request path of one real gemm_server: each answer holds exactly M*N*dtype
// bytes (or writes exactly them into a shared-memory region) and matches float64
// (tests/integration/output_size_sweep.h).
#include <gtest/gtest.h>

#include "tests/integration/output_size_sweep.h"

namespace gemm::testing {
namespace {

class OutputSizeTest : public OutputSizeSweepTest {
 protected:
  static void SetUpTestSuite() { StartSuite("cpu"); }
};

TEST_F(OutputSizeTest, Unary) { ExpectNoFailures(sweep_->Unary()); }

TEST_F(OutputSizeTest, Stream) { ExpectNoFailures(sweep_->Stream()); }

TEST_F(OutputSizeTest, PackedStream) { ExpectNoFailures(sweep_->Packed()); }

TEST_F(OutputSizeTest, SharedMemoryOperandsAndOutputs) {
  auto region = RegisterHostRegion(server_->client(), "sweep", SweepRegionBytes());
  ASSERT_TRUE(region.ok()) << region.status();
  ExpectNoFailures(sweep_->SharedMemory(**region));
}

TEST_F(OutputSizeTest, CoalescedAgainstResidentWeights) { ExpectNoFailures(sweep_->Coalesced()); }

TEST_F(OutputSizeTest, HeterogeneousGroups) { ExpectNoFailures(sweep_->Grouped()); }

TEST_F(OutputSizeTest, Batches) { ExpectNoFailures(sweep_->Batched()); }

}  // namespace
}  // namespace gemm::testing
