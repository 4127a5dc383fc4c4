// gemm_qualify: the kernel qualification child. Runs the qualification cases of one device's
// native kernel family (gemm/qualification.h) from a given case on and writes the protocol of
// server/core/qualification.h to stdout. gemm_server starts it before serving and kills it when
// a case overstays its deadline, so a kernel that hangs or faults never touches the server's
// own CUDA context.
//
// Its kernels are gemm_kernel_bounded: an mbarrier wait that never completes records which wait
// was stuck (gemm/wait_timeout.h) in mapped pinned host memory and traps; the failed case's
// detail then names the barrier, the role, the tile and the phase.
//
// Usage: gemm_qualify <device> <first_case> [--force_mismatch]
// Environment (test hook): GEMM_QUALIFY_INJECT_HANG=<wait site, e.g. sm90.consumer_full> makes
// every wait at that site never complete.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gemm/kernel.h"
#include "gemm/qualification.h"
#include "gemm/wait_timeout.h"
#include "server/core/qualification.h"
#include "server/gpu/qualification_runner.h"

namespace {

void Say(const std::string& line) { (void)!write(2, line.data(), line.size()); }

// The timeout record in mapped pinned host memory (survives the trap's sticky error), armed in
// every kernel module; null when it cannot be set up (cases still run, hangs are still bounded).
gemm::kernel::WaitTimeoutRecord* ArmTimeoutRecord() {
  using namespace gemm::kernel;
  void* host = nullptr;
  if (cudaHostAlloc(&host, sizeof(WaitTimeoutRecord), cudaHostAllocMapped) != cudaSuccess) {
    Say("gemm_qualify: cudaHostAlloc(mapped) failed: no timeout record\n");
    return nullptr;
  }
  std::memset(host, 0, sizeof(WaitTimeoutRecord));
  void* dev = nullptr;
  if (cudaHostGetDevicePointer(&dev, host, 0) != cudaSuccess) return nullptr;
  const char* inject_name = std::getenv("GEMM_QUALIFY_INJECT_HANG");
  WaitSite inject = WaitSite::kUnnamed;
  if (inject_name != nullptr && *inject_name != '\0') {
    inject = WaitSiteFromName(inject_name);
    if (inject == WaitSite::kUnnamed) {
      Say(std::string("gemm_qualify: unknown wait site in GEMM_QUALIFY_INJECT_HANG: ") +
          inject_name + "\n");
    }
  }
  const absl::Status st = ArmWaitTimeout(static_cast<WaitTimeoutRecord*>(dev), inject);
  if (!st.ok()) Say("gemm_qualify: " + st.ToString() + "\n");
  return static_cast<WaitTimeoutRecord*>(host);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gemm;
  if (argc < 3) {
    Say("usage: gemm_qualify <device> <first_case> [--force_mismatch]\n");
    return 2;
  }
  const int device = std::atoi(argv[1]);
  const int first = std::atoi(argv[2]);
  const bool force_mismatch = argc > 3 && std::strcmp(argv[3], "--force_mismatch") == 0;
  int sm_count = 0;
  if (cudaSetDevice(device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    return 3;  // the parent sees no variants: nothing qualifies
  }
  auto kind = kernel::SelectKernel(device);
  if (!kind.ok()) return 3;
  // Only native kernels wait on mbarriers (cuBLASLt-only devices have no module to arm).
  const kernel::WaitTimeoutRecord* record =
      *kind == kernel::KernelKind::kCublasLt ? nullptr : ArmTimeoutRecord();
  // The SM100 case list switches Cluster Launch Control and M-waves per case (the launcher reads
  // them per call); this process is the only one that sees these settings.
  const std::vector<kernel::QualificationCase> cases = kernel::QualificationCases(*kind, sm_count);
  std::vector<core::CaseSpec> specs;
  for (const auto& c : cases) specs.push_back({c.name, c.variants});
  const std::vector<std::string> names = kernel::NativeVariantNames(*kind);
  const gpu::CaseRunOptions options{.kind = *kind, .force_mismatch = force_mismatch};
  core::RunCases(
      names, specs,
      [&](int i, std::string* detail) {
        setenv("GEMM_SM100_CLC", cases[i].clc ? "1" : "0", 1);
        setenv("GEMM_SM100_M_WAVES", std::to_string(cases[i].m_waves).c_str(), 1);
        absl::Status st = gpu::RunQualificationCase(cases[i], options, detail);
        if (!st.ok() && record != nullptr && record->fired != 0) {
          *detail += "; " + kernel::DescribeWaitTimeout(*record);
        }
        return st;
      },
      first, STDOUT_FILENO);
  return 0;
}
