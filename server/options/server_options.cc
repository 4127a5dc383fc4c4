// Builds ServerOptions from the flag groups and names the groups --help shows.
#include "server/options/server_options.h"

#include "server/options/flag_groups.h"

#ifndef GEMM_VERSION
#define GEMM_VERSION "dev"
#endif

namespace gemm::server {

ServerOptions ServerOptionsFromFlags() {
  ServerOptions options;
  options.service.version = GEMM_VERSION;
  ApplyServingFlags(options);
  ApplyLimitsFlags(options);
  ApplyBatchingFlags(options);
  ApplySecurityFlags(options);
  ApplyTuningFlags(options);
  ApplyWeightsFlags(options);
#ifdef GEMM_HAVE_CUDA_BACKEND
  ApplyCudaFlags(options);
#endif
  return options;
}

bool IsUserFlagFile(absl::string_view path) {
  return path == "server/options/serving_flags.cc" || path == "server/options/limits_flags.cc" ||
         path == "server/options/batching_flags.cc" || path == "server/options/security_flags.cc" ||
         path == "server/options/weights_flags.cc";
}

}  // namespace gemm::server
