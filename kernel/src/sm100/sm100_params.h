// Launch parameters of the SM100 kernel, shared by the host launcher (sm100_gemm.cc) and the
// device code (sm100_kernel.cuh). Only the driver API's CUtensorMap type; no runtime headers.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "sm100/sm100_scheduler.h"
#include "sm100/sm100_variant.h"

namespace gemm::kernel::sm100 {

// Tensor maps of one problem: X / Y operands (see ProblemShape), C (read when beta != 0) and D.
// All rank 3 (inner, outer, batch).
struct ProblemMaps {
  CUtensorMap x;
  CUtensorMap y;
  CUtensorMap c;
  CUtensorMap d;
};

// Kernel parameters (passed as __grid_constant__).
struct KernelParams {
  ProblemMaps maps;                  // strided batch: the maps (batch = third dimension)
  ProblemShape shape;                // strided batch: the shape shared by all entries
  const ProblemMaps* group_maps;     // group: per-problem maps in device memory, else null
  const ProblemShape* group_shapes;  // group: per-problem shapes in device memory, else null
  int32_t num_problems;              // batch count, or group size
  int32_t group_x;                   // grouped-L2 width in cluster tiles
  int32_t use_clc;  // 1: Cluster Launch Control (grid = one cluster per work unit), 0: static
};

// Shared memory bytes the variant needs.
uint32_t SmemBytes(const VariantKey& key);

// Launches the variant as `num_clusters` 2-CTA clusters on `stream`; returns the CUDA runtime
// error code (0 = success) as an int, so this header needs no runtime include.
int LaunchVariant(const VariantKey& key, const KernelParams& params, int num_clusters,
                  CUstream_st* stream);

// Final pass of split-K: d = alpha * sum of `splits` FP32 partials [m, n] (pitch ldw, slices
// slice_elems apart) + beta * c, in d's dtype (c may be null).
struct SplitReduceArgs {
  const float* partials = nullptr;
  int32_t splits = 1, m = 0, n = 0;
  int64_t ldw = 0;
  int64_t slice_elems = 0;
  float alpha = 1.0f, beta = 0.0f;
  const void* c = nullptr;
  int64_t ldc = 0;
  void* d = nullptr;
  int64_t ldd = 0;
  bool out_f32 = false;
  int m_waves = 1;  // wide kernel only: 1 (256 x 256 cluster tiles) or 2 (512 x 256)
};

// Enqueues the split-K reduction on `stream`; returns the CUDA runtime error code.
int LaunchSplitReduce(const SplitReduceArgs& args, CUstream_st* stream);

// Number of 2-CTA clusters of the variant that can be co-resident on the current device (0 when
// it cannot be queried).
int MaxActiveClusters(const VariantKey& key);

}  // namespace gemm::kernel::sm100
