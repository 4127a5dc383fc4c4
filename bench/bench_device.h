// Device helpers of gemm_bench (random fill, output comparison), compiled by nvcc; the host side
// of the benchmark includes only this header.
#pragma once

#include <cstdint>

typedef struct CUstream_st* cudaStream_t;

namespace gemm::bench {

// Fills `count` BF16 values at `p` with uniform values in [-1, 1) drawn from `seed`.
// Returns the CUDA error code of the launch (0 on success).
int FillRandomBf16(void* p, int64_t count, uint64_t seed, cudaStream_t stream);

// Enqueues a one-thread kernel that spins for `microseconds` on `stream`, so that the host can
// queue the timed launches behind it and the timings measure the GPU, not the launch path.
int LaunchDelay(double microseconds, cudaStream_t stream);

// Enqueues an empty kernel of `ctas` CTAs of 384 threads: what any launch costs in the timed
// loop (the floor under every row's time).
int LaunchEmpty(int ctas, cudaStream_t stream);

// Enqueues a kernel that reads `bytes` (a multiple of 16) at `p` once with 16-byte loads and
// writes one word to `sink` only in a practically impossible case (so the loads cannot be
// dropped): the device-memory read ceiling of read-only streams like the decode GEMMs.
int LaunchReadAll(const void* p, int64_t bytes, unsigned* sink, cudaStream_t stream);

// Accumulated comparison of two outputs: sum of squared differences, sum of squared reference
// values and the number of NaN / Inf values in either.
struct CompareSums {
  double err2 = 0;
  double ref2 = 0;
  unsigned long long bad = 0;
};

// Compares `rows` x `cols` elements (row pitch `ld` elements) of `got` against `ref`, both
// BF16 (f32 = false) or FP32, adding into `*sums` (device memory, zeroed by the caller).
int CompareAccumulate(const void* got, const void* ref, int64_t rows, int64_t cols, int64_t ld,
                      bool f32, CompareSums* sums, cudaStream_t stream);

}  // namespace gemm::bench
