// Device-side helpers of the kernel GPU tests (random fill, relative error).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <limits>

#include "kernel_test_device.h"

namespace gemm::kernel::testing {
namespace {

__device__ __forceinline__ float HashUniform(uint64_t seed, uint64_t i) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (i + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

__global__ void FillKernel(void* dst, std::size_t count, bool bf16, uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const float v = HashUniform(seed, i);
    if (bf16) {
      static_cast<__nv_bfloat16*>(dst)[i] = __float2bfloat16(v);
    } else {
      static_cast<float*>(dst)[i] = v;
    }
  }
}

__device__ __forceinline__ double Load(const void* p, int64_t i, bool bf16) {
  return bf16 ? static_cast<double>(__bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]))
              : static_cast<double>(static_cast<const float*>(p)[i]);
}

__global__ void ErrKernel(const void* out, const void* ref, bool bf16, int64_t rows, int64_t cols,
                          int64_t ld, int64_t batch, int64_t stride, double* sums,
                          unsigned long long* bad) {
  double num = 0, den = 0;
  unsigned long long nonfinite = 0;
  const int64_t total = rows * cols * batch;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t b = i / (rows * cols), r = (i / cols) % rows, c = i % cols;
    const int64_t off = b * stride + r * ld + c;
    const double o = Load(out, off, bf16), e = Load(ref, off, bf16);
    if (!isfinite(o)) ++nonfinite;
    num += (o - e) * (o - e);
    den += e * e;
  }
  for (int s = 16; s > 0; s /= 2) {
    num += __shfl_down_sync(0xffffffff, num, s);
    den += __shfl_down_sync(0xffffffff, den, s);
    nonfinite += __shfl_down_sync(0xffffffff, nonfinite, s);
  }
  if (threadIdx.x % 32 == 0) {
    atomicAdd(&sums[0], num);
    atomicAdd(&sums[1], den);
    atomicAdd(bad, nonfinite);
  }
}

}  // namespace

void FillRandom(void* dst, std::size_t count, DType t, uint64_t seed) {
  FillKernel<<<1024, 256>>>(dst, count, t == DType::kBF16, seed);
}

double DeviceRelError(const void* out, const void* ref, DType t, int64_t rows, int64_t cols,
                      int64_t ld, int64_t batch, int64_t stride) {
  double* sums = nullptr;
  unsigned long long* bad = nullptr;
  cudaMalloc(&sums, 2 * sizeof(double) + sizeof(unsigned long long));
  bad = reinterpret_cast<unsigned long long*>(sums + 2);
  cudaMemset(sums, 0, 2 * sizeof(double) + sizeof(unsigned long long));
  ErrKernel<<<1024, 256>>>(out, ref, t == DType::kBF16, rows, cols, ld, batch, stride, sums, bad);
  double h[2] = {0, 0};
  unsigned long long hb = 0;
  cudaError_t err = cudaDeviceSynchronize();
  cudaMemcpy(h, sums, sizeof(h), cudaMemcpyDeviceToHost);
  cudaMemcpy(&hb, bad, sizeof(hb), cudaMemcpyDeviceToHost);
  cudaFree(sums);
  if (err != cudaSuccess || hb != 0) return std::numeric_limits<double>::infinity();
  if (h[1] == 0) return h[0] == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::sqrt(h[0] / h[1]);
}

}  // namespace gemm::kernel::testing
