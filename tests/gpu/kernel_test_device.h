// Device-side helpers of the kernel GPU tests: fresh random fills and the relative error
// ||out - ref|| / ||ref|| computed on the GPU (+inf when `out` holds a NaN/Inf).
#pragma once

#include <cstddef>
#include <cstdint>

#include "gemm/kernel.h"

namespace gemm::kernel::testing {

// Fills `count` elements of dtype `t` with values uniform in [-1, 1) derived from `seed`.
void FillRandom(void* dst, std::size_t count, DType t, uint64_t seed);

// Relative error over `batch` [rows, cols] matrices of pitch `ld` and batch stride `stride`
// (elements), `out` and `ref` laid out alike. Synchronizes the device.
double DeviceRelError(const void* out, const void* ref, DType t, int64_t rows, int64_t cols,
                      int64_t ld, int64_t batch, int64_t stride);

}  // namespace gemm::kernel::testing
