// Host/device qualifier for the SM100 kernel's pure pieces (descriptors, scheduler, pipeline
// phases, epilogue address math): `__host__ __device__` under nvcc, plain `inline` in host C++,
// so the same headers are unit-tested on the CPU without any CUDA header.
#pragma once

#if defined(__CUDACC__)
#define SM100_HD __host__ __device__ __forceinline__
#else
#define SM100_HD inline
#endif
