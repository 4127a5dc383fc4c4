// gemm_qualify: the kernel qualification child. Runs the qualification cases of one device's
// native kernel family (gemm/qualification.h) from a given case on and writes the protocol of
// server/core/qualification.h to stdout. gemm_server starts it before serving and kills it when
// a case overstays its deadline, so a kernel that hangs or faults never touches the server's
// own CUDA context.
//
// Usage: gemm_qualify <device> <first_case> [--force_mismatch]
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gemm/kernel.h"
#include "gemm/qualification.h"
#include "server/core/qualification.h"
#include "server/gpu/qualification_runner.h"

int main(int argc, char** argv) {
  using namespace gemm;
  if (argc < 3) {
    const char usage[] = "usage: gemm_qualify <device> <first_case> [--force_mismatch]\n";
    (void)!write(2, usage, sizeof(usage) - 1);
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
  // The SM100 case list switches Cluster Launch Control and M-waves per case (the launcher reads
  // them per call); this process is the only one that sees these settings.
  const std::vector<kernel::QualificationCase> cases = kernel::QualificationCases(*kind, sm_count);
  std::vector<core::CaseSpec> specs;
  for (const auto& c : cases) specs.push_back({c.name, c.variants});
  const std::vector<std::string> names = kernel::NativeVariantNames(*kind);
  const gpu::CaseRunOptions options{.kind = *kind, .force_mismatch = force_mismatch};
  core::RunCases(names, specs,
                 [&](int i, std::string* detail) {
                   setenv("GEMM_SM100_CLC", cases[i].clc ? "1" : "0", 1);
                   setenv("GEMM_SM100_M_WAVES", std::to_string(cases[i].m_waves).c_str(), 1);
                   return gpu::RunQualificationCase(cases[i], options, detail);
                 },
                 first, STDOUT_FILENO);
  return 0;
}
