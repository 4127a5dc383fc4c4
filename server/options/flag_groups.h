// Each flag group's source file copies its flags into its part of ServerOptions.
#pragma once

#include "server/options/server_options.h"

namespace gemm::server {

// Listening, backend, drain and connection flags (serving_flags.cc).
void ApplyServingFlags(ServerOptions& options);
// Request, memory and stream limits (limits_flags.cc).
void ApplyLimitsFlags(ServerOptions& options);
// Request coalescing and queueing (batching_flags.cc).
void ApplyBatchingFlags(ServerOptions& options);
// TLS, callers and their roles, reflection and the metrics address (security_flags.cc).
void ApplySecurityFlags(ServerOptions& options);
// Transport and allocator tuning (tuning_flags.cc).
void ApplyTuningFlags(ServerOptions& options);
// The weight repository (weights_flags.cc).
void ApplyWeightsFlags(ServerOptions& options);
#ifdef GEMM_HAVE_CUDA_BACKEND
// CUDA backend tuning (cuda_flags.cc; defined in every build, read only in a CUDA build).
void ApplyCudaFlags(ServerOptions& options);
#endif

}  // namespace gemm::server
