// Epilogue store of the SM90 kernel's swap-AB tiles (TileConfig::swap_ab). The accumulators hold
// D transposed: a warp's 16 rows are 16 columns of D (N), its accumulator columns are rows of D
// (M). Each 16 x 16 piece is transposed into a shared-memory staging piece ([16 M rows][16 N],
// no swizzle; stmatrix .trans for BF16, element stores for FP32) and TMA-stored with a box of
// {16 N, 16 M}, so the hardware clips both edges of D.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>

#include <cstdint>

#include "ptx/cluster.cuh"
#include "ptx/tma.cuh"
#include "sm90/sm90_epilogue_values.cuh"

namespace gemm::kernel::sm90 {

// Stores one warp's accumulators `acc` (kCols columns of the m64 fragment: this warp's 16 rows)
// scaled by alpha and plus beta * C (`c_at(row, col, &c0, &c1)`: C at tile-local (row, col) and
// (row, col + 1), 0 outside) unless kPlain. `staging` is the warp's 4 KB, `n0` its first row
// (D's column), `m0` the tile's first column (D's row), `m_limit` D's rows; `tma_d` maps D as
// {N, M, batch} with box {16, 16, 1}. `row_lo` is the fragment row of this lane.
template <int kCols, bool kF32Out, bool kPlain, typename CAt>
__device__ __forceinline__ void SwapEpilogueStore(const float (&acc)[kCols / 2], uint32_t staging,
                                                  int lane, const CUtensorMap* tma_d, int n0,
                                                  int m0, int m_limit, int batch, float alpha,
                                                  float beta, bool use_c, int row_lo, CAt c_at) {
  using namespace gemm::kernel::ptx;
  static_assert(kCols % 16 == 0, "swap-AB tiles are multiples of 16 wide");
  constexpr int kPieces = kCols / 16;
  constexpr int kPieceBytes = kF32Out ? 16 * 16 * 4 : 16 * 16 * 2;
  constexpr int kSlots = 4096 / kPieceBytes;  // pieces staged per TMA-store round
#pragma unroll
  for (int p0 = 0; p0 < kPieces; p0 += kSlots) {
    if (m0 + p0 * 16 >= m_limit) break;
    if (lane == 0) BulkWaitGroupRead<0>();  // the last round's stores have read the staging
    __syncwarp();
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      const int piece = p0 + s;
      if (piece >= kPieces || m0 + piece * 16 >= m_limit) break;
      const uint32_t buf = staging + s * kPieceBytes;
      const int g = piece * 2;  // the piece's two 8-column accumulator groups
      float v[8];
      EpilogueValues<kPlain>(acc, g, lane, row_lo, alpha, beta, use_c, c_at, v);
      if constexpr (!kF32Out) {
        // Matrices: (N 0-7, M group g), (N 8-15, g), (N 0-7, g+1), (N 8-15, g+1); transposed,
        // row j of matrix i is M row (i/2)*8 + j of the piece, N half i%2 of its 32 bytes.
        uint32_t r[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          __nv_bfloat162 h = __floats2bfloat162_rn(v[2 * e], v[2 * e + 1]);
          r[e] = *reinterpret_cast<uint32_t*>(&h);
        }
        const int i = lane / 8, j = lane % 8;
        StMatrixX4Trans(buf + ((i / 2) * 8 + j) * 32 + (i % 2) * 16, r[0], r[1], r[2], r[3]);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          const int n_local = lane / 4 + 8 * ((e % 4) / 2);
          const int m_local = (e / 4) * 8 + (lane % 4) * 2 + (e % 2);
          asm volatile("st.shared.f32 [%0], %1;" ::"r"(buf + m_local * 64 + n_local * 4), "f"(v[e])
                       : "memory");
        }
      }
    }
    FenceProxyAsyncShared();
    __syncwarp();
    if (lane == 0) {
#pragma unroll
      for (int s = 0; s < kSlots; ++s) {
        const int piece = p0 + s;
        if (piece >= kPieces || m0 + piece * 16 >= m_limit) break;
        TmaStore3d(tma_d, staging + s * kPieceBytes, n0, m0 + piece * 16, batch);
      }
      BulkCommitGroup();
    }
  }
}

}  // namespace gemm::kernel::sm90
