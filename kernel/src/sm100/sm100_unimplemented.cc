// Temporary SM100 entry points: report UNIMPLEMENTED until the tcgen05 kernel lands.
#include "sm100/sm100_gemm.h"

namespace gemm::kernel::sm100 {

absl::Status Gemm(const StridedBatch&, cudaStream_t, const LaunchOptions&) {
  return absl::UnimplementedError("sm100 kernel not built");
}
absl::Status GemmGrouped(std::span<const Problem>, cudaStream_t, const LaunchOptions&) {
  return absl::UnimplementedError("sm100 kernel not built");
}
std::size_t WorkspaceBytes(const StridedBatch&) { return 0; }
std::size_t WorkspaceBytes(std::span<const Problem>) { return 0; }

}  // namespace gemm::kernel::sm100
