// The scaled output values of the SM90 kernel's epilogues (the plain tiles' and the swap-AB
// tiles'): one thread's share of two 8-column accumulator groups, times alpha, plus beta times C.
#pragma once

namespace gemm::kernel::sm90 {

// The eight values of accumulator groups g and g+1 of one thread: acc[g*4 .. g*4+7] in wgmma's
// D fragment order, i.e. (row_lo, col), (row_lo, col+1), (row_lo+8, col), (row_lo+8, col+1) of
// group g, then the same of group g+1, with col = g*8 + (lane%4)*2. Each is alpha times the
// accumulator (kPlain: the accumulator itself), plus beta times C where `use_c`; C is read
// through c_at(row, col, c0, c1), which sets the two values at (row, col) and (row, col+1).
template <bool kPlain, class CAt>
__device__ __forceinline__ void EpilogueValues(const float* acc, int g, int lane, int row_lo,
                                               float alpha, float beta, bool use_c, const CAt& c_at,
                                               float (&v)[8]) {
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    v[e] = kPlain ? acc[g * 4 + e] : alpha * acc[g * 4 + e];
    v[4 + e] = kPlain ? acc[(g + 1) * 4 + e] : alpha * acc[(g + 1) * 4 + e];
  }
  if (kPlain || !use_c) return;
  float c[8];
  const int col = g * 8 + (lane % 4) * 2;
  c_at(row_lo, col, c[0], c[1]);
  c_at(row_lo + 8, col, c[2], c[3]);
  c_at(row_lo, col + 8, c[4], c[5]);
  c_at(row_lo + 8, col + 8, c[6], c[7]);
#pragma unroll
  for (int e = 0; e < 8; ++e) v[e] += beta * c[e];
}

}  // namespace gemm::kernel::sm90
