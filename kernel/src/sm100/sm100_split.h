// Split-K choice of the SM100 small-M (swap-AB) kernel. With M <= 128 the GEMM is bound by
// reading B, but a 256-wide N tile per cluster leaves most SMs idle (N = 4096: 16 tiles for 74
// clusters on a GB200), so each tile's K range is split across clusters; FP32 partials go to the
// workspace and a reduction applies alpha/beta. Pure host code, unit-tested on the CPU
// (tests/unit/sm100_split_test.cc).
#pragma once

#include <cstdint>

#include "sm100/sm100_hd.h"

namespace gemm::kernel::sm100 {

inline constexpr int32_t kMaxKSplits = 16;
inline constexpr int32_t kMinKBlocksPerSplit = 4;            // >= 256 of K per work unit
inline constexpr uint64_t kMaxSplitWorkspace = 64ull << 20;  // bytes of FP32 partials

// Row pitch (elements) of the FP32 partials: N rounded up to 16 bytes.
SM100_HD constexpr int64_t SplitPitch(int64_t n) { return (n + 3) / 4 * 4; }

// Bytes of one FP32 partial [m, n].
SM100_HD constexpr uint64_t SplitSliceBytes(int64_t m, int64_t n) {
  return static_cast<uint64_t>(m) * static_cast<uint64_t>(SplitPitch(n)) * 4u;
}

// Most splits a workspace budget allows (at most kMaxKSplits).
SM100_HD constexpr int32_t MaxSplitsFor(uint64_t workspace_bytes, int64_t m, int64_t n) {
  const uint64_t slice = SplitSliceBytes(m, n);
  if (slice == 0) return 1;
  const uint64_t fit = workspace_bytes / slice;
  return fit >= static_cast<uint64_t>(kMaxKSplits) ? kMaxKSplits : static_cast<int32_t>(fit);
}

// Workspace the small-M kernel asks for: room for the most splits it may use.
SM100_HD constexpr uint64_t SplitWorkspaceBytes(int64_t m, int64_t n) {
  const int32_t splits = MaxSplitsFor(kMaxSplitWorkspace, m, n);
  return splits >= 2 ? static_cast<uint64_t>(splits) * SplitSliceBytes(m, n) : 0;
}

// K splits for `tiles` output tiles on `clusters` co-resident clusters with `k_blocks` K blocks
// of 64, given room for `max_splits` partials: enough work units to fill the clusters, each with
// at least kMinKBlocksPerSplit K blocks. 1 means no split.
SM100_HD constexpr int32_t ChooseKSplits(int64_t tiles, int32_t clusters, int32_t k_blocks,
                                         int32_t max_splits) {
  if (tiles <= 0 || clusters <= 0 || tiles >= clusters) return 1;
  int64_t splits = clusters / tiles;
  const int32_t by_k = k_blocks / kMinKBlocksPerSplit;
  if (splits > by_k) splits = by_k;
  if (splits > max_splits) splits = max_splits;
  if (splits > kMaxKSplits) splits = kMaxKSplits;
  return splits < 2 ? 1 : static_cast<int32_t>(splits);
}

}  // namespace gemm::kernel::sm100
