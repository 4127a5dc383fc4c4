// Temporary SM90 entry points until the WGMMA kernel lands: Supports() says no, so kAuto
// routes to cuBLASLt.
#include "sm90/sm90_gemm.h"

namespace gemm::kernel::sm90 {

bool Supports(const StridedBatch&) { return false; }
bool Supports(std::span<const Problem>) { return false; }
absl::Status Gemm(const StridedBatch&, cudaStream_t, const LaunchOptions&) {
  return absl::UnimplementedError("sm90 kernel not built");
}
absl::Status GemmGrouped(std::span<const Problem>, cudaStream_t, const LaunchOptions&) {
  return absl::UnimplementedError("sm90 kernel not built");
}
std::size_t WorkspaceBytes(const StridedBatch&) { return 0; }
std::size_t WorkspaceBytes(std::span<const Problem>) { return 0; }

}  // namespace gemm::kernel::sm90
