// Helpers of the kernel GPU tests: device buffers, random BF16 data, poisoning, a float64 CPU
// reference and the relative-error metric ||out - ref|| / ||ref|| (NaN never passes).
#pragma once

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gemm/kernel.h"

namespace gemm::kernel::testing {

inline uint16_t FloatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffff) > 0x7f800000) return 0x7fc0;
  u += 0x7fff + ((u >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}

inline float Bf16ToFloat(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// True when a GPU is present (tests GTEST_SKIP otherwise).
inline bool HaveGpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// Compute capability major*10+minor of device 0, or 0.
inline int ComputeCapability() {
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) != cudaSuccess) return 0;
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
  return major * 10 + minor;
}

// Owning device allocation.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (cudaMalloc(&ptr_, bytes == 0 ? 16 : bytes) != cudaSuccess) ptr_ = nullptr;
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Host BF16 values uniformly random in [-1, 1).
inline std::vector<uint16_t> RandomBf16(std::size_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<uint16_t> v(count);
  for (auto& x : v) x = FloatToBf16(dist(rng));
  return v;
}

// Reads `count` elements of dtype `t` from device memory as doubles.
inline std::vector<double> ReadBack(const void* dev, std::size_t count, DType t) {
  std::vector<double> out(count);
  if (t == DType::kBF16) {
    std::vector<uint16_t> h(count);
    cudaMemcpy(h.data(), dev, count * 2, cudaMemcpyDeviceToHost);
    for (std::size_t i = 0; i < count; ++i) out[i] = Bf16ToFloat(h[i]);
  } else {
    std::vector<float> h(count);
    cudaMemcpy(h.data(), dev, count * 4, cudaMemcpyDeviceToHost);
    for (std::size_t i = 0; i < count; ++i) out[i] = h[i];
  }
  return out;
}

// ||out - ref|| / ||ref|| over the [rows, cols] windows of pitch `ld` (out) and `ld_ref`; +inf
// when any value of `out` is not finite.
inline double RelError(const std::vector<double>& out, int64_t ld, const std::vector<double>& ref,
                       int64_t ld_ref, int64_t rows, int64_t cols) {
  double num = 0, den = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const double o = out[r * ld + c], e = ref[r * ld_ref + c];
      if (!std::isfinite(o)) return std::numeric_limits<double>::infinity();
      num += (o - e) * (o - e);
      den += e * e;
    }
  }
  if (den == 0) return num == 0 ? 0 : std::numeric_limits<double>::infinity();
  return std::sqrt(num / den);
}

// float64 CPU reference of one problem: returns alpha*A.op(B) + beta*C as a dense [m,n] array.
inline std::vector<double> CpuGemm(const std::vector<uint16_t>& a, int64_t lda,
                                   const std::vector<uint16_t>& b, int64_t ldb, BLayout layout,
                                   const std::vector<double>* c, int64_t ldc, int64_t m, int64_t n,
                                   int64_t k, double alpha, double beta) {
  std::vector<double> bf(static_cast<std::size_t>(k * n));
  for (int64_t kk = 0; kk < k; ++kk) {
    for (int64_t j = 0; j < n; ++j) {
      bf[kk * n + j] = Bf16ToFloat(layout == BLayout::kKN ? b[kk * ldb + j] : b[j * ldb + kk]);
    }
  }
  std::vector<double> out(static_cast<std::size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    double* row = &out[i * n];
    for (int64_t kk = 0; kk < k; ++kk) {
      const double av = Bf16ToFloat(a[i * lda + kk]);
      const double* brow = &bf[kk * n];
      for (int64_t j = 0; j < n; ++j) row[j] += av * brow[j];
    }
    for (int64_t j = 0; j < n; ++j) {
      row[j] = alpha * row[j] + (c != nullptr ? beta * (*c)[i * ldc + j] : 0.0);
    }
  }
  return out;
}

// Pitch (elements) rounded up so that a row is a multiple of 16 bytes.
inline int64_t Pitch(int64_t cols, std::size_t elem) {
  const int64_t per16 = static_cast<int64_t>(16 / elem);
  return (cols + per16 - 1) / per16 * per16;
}

}  // namespace gemm::kernel::testing
