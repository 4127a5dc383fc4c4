// Inline-PTX wrappers of Cluster Launch Control (PTX ISA 8.6+, sm_100a): cancel a cluster of
// this grid that has not launched yet and decode the opaque response. Device code only.
#pragma once

#include <cstdint>

namespace gemm::kernel::ptx {

#if defined(__CUDA_ARCH__)

// Asks to cancel a not-yet-launched cluster of this grid. The 16-byte response is written to
// `response` (shared::cta, 16-byte aligned) of EVERY CTA of this cluster (multicast::cluster::all)
// and each write completes 16 tx bytes on the mbarrier at offset `bar` of that CTA. It does not
// arrive on the barriers: the caller arms them with arrive.expect_tx(16) (PTX ISA: completion is a
// complete-tx only; CUDA Programming Guide 12.2.1 arms a count-1 barrier the same way). Must not be
// issued by a CTA that has already observed a failed response (PTX: undefined behaviour).
__device__ __forceinline__ void ClcTryCancelMulticast(uint32_t response, uint32_t bar) {
  asm volatile(
      "clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes"
      ".multicast::cluster::all.b128 [%0], [%1];" ::"r"(response),
      "r"(bar)
      : "memory");
}

// Reads the response at `response` (after its mbarrier phase completed) and decodes it:
// returns 1 when a cluster was cancelled and writes the x coordinate of its first CTA to
// `*first_ctaid_x` (left unchanged otherwise).
__device__ __forceinline__ uint32_t ClcQueryCancel(uint32_t response, uint32_t* first_ctaid_x) {
  uint32_t canceled = 0, x = 0;
  asm volatile(
      "{\n\t.reg .b128 resp;\n\t.reg .pred p;\n\t"
      "ld.shared.b128 resp, [%2];\n\t"
      "clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 p, resp;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t"
      "@p clusterlaunchcontrol.query_cancel.get_first_ctaid::x.b32.b128 %1, resp;\n\t}"
      : "=r"(canceled), "=r"(x)
      : "r"(response)
      : "memory");
  if (canceled) *first_ctaid_x = x;
  return canceled;
}

#endif  // __CUDA_ARCH__

}  // namespace gemm::kernel::ptx
