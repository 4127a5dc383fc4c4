// mbarrier parity waits, unbounded or bounded. Built with GEMM_MBARRIER_TIMEOUT_NS=<ns> (the
// qualification child's kernel library only), a wait that has not completed after that much
// %globaltimer time writes a WaitTimeoutRecord (gemm/wait_timeout.h) to mapped pinned host
// memory and traps, so a hang comes back as a report instead of a stuck GPU; a test hook makes
// the waits of one WaitSite never complete. Without the option the waits are the plain
// try_wait loops, and the site/tile arguments compile away.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "gemm/wait_timeout.h"

#if defined(GEMM_MBARRIER_TIMEOUT_NS)
#include "wait_timeout_registry.h"
#endif

namespace gemm::kernel::ptx {

// Parity try_wait; kClusterAcquire: acquire at cluster scope (arrivals from the peer CTA).
template <bool kClusterAcquire>
__device__ __forceinline__ bool MbarTryWaitParity(uint32_t bar, uint32_t parity) {
  uint32_t done;
  if constexpr (kClusterAcquire) {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } else {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  }
  return done != 0;
}

#if defined(GEMM_MBARRIER_TIMEOUT_NS)

// This module's copy of the timeout configuration (set by ArmWaitTimeout through the registry).
struct WaitTimeoutConfig {
  WaitTimeoutRecord* record;  // mapped pinned host memory; null: trap without a record
  uint32_t inject_site;       // WaitSite whose waits never complete (0: none)
};
static __device__ WaitTimeoutConfig g_wait_timeout_config;
static __device__ uint32_t g_wait_timeout_claimed;  // the first timed-out thread writes the record

#if !defined(__CUDA_ARCH__)
static int SetWaitTimeoutConfig(WaitTimeoutRecord* record, uint32_t inject_site) {
  const WaitTimeoutConfig config{record, inject_site};
  const cudaError_t err = cudaMemcpyToSymbol(g_wait_timeout_config, &config, sizeof(config));
  if (err != cudaSuccess) (void)cudaGetLastError();
  return static_cast<int>(err);
}
[[maybe_unused]] static const bool g_wait_timeout_registered =
    detail::RegisterWaitTimeoutSetter(&SetWaitTimeoutConfig);
#endif

static __device__ __forceinline__ uint64_t GlobalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Writes the record (first timed-out thread of the grid only), makes it visible to the host and
// traps. Other timed-out threads give the writer a moment before trapping themselves.
static __device__ __forceinline__ void WaitTimedOut(uint32_t bar, uint32_t parity, uint32_t site,
                                                    uint32_t tile, uint64_t waited_ns,
                                                    bool injected) {
  WaitTimeoutRecord* r = g_wait_timeout_config.record;
  if (r != nullptr && atomicCAS(&g_wait_timeout_claimed, 0u, 1u) == 0u) {
    volatile WaitTimeoutRecord* v = r;
    v->site = site;
    v->barrier = bar;
    v->parity = parity;
    v->tile = tile;
    v->block[0] = blockIdx.x;
    v->block[1] = blockIdx.y;
    v->block[2] = blockIdx.z;
    v->thread = threadIdx.x;
    v->injected = injected ? 1u : 0u;
    v->waited_ns = waited_ns;
    __threadfence_system();
    v->fired = 1u;
    __threadfence_system();
  } else {
    const uint64_t until = GlobalTimerNs() + 1000000;  // 1 ms
    while (GlobalTimerNs() < until) {
    }
  }
  __trap();
}

static_assert(GEMM_MBARRIER_TIMEOUT_NS > 0 && GEMM_MBARRIER_TIMEOUT_NS < (1ull << 32),
              "the bounded wait measures with the low 32 bits of %globaltimer");

// The timed spin, in one asm block so the kernels keep their register budget (the SM90
// consumers hold 232 registers of accumulators; a call would cost their setmaxnreg split).
// Returns 0 once the phase completed, else the nanoseconds waited (past the bound). An injected
// site never sees its phase complete.
// The timed spin with TRY_WAIT (an mbarrier.try_wait.parity form) as its wait instruction.
#define GEMM_BOUNDED_SPIN(TRY_WAIT)                                               \
  asm volatile(                                                                   \
      "{\n\t.reg .pred p, inj;\n\t.reg .u32 t0, now;\n\t"                         \
      "setp.eq.u32 inj, %3, %4;\n\t"                                              \
      "mov.u32 t0, %%globaltimer_lo;\n\t"                                         \
      "W%=:\n\t" TRY_WAIT                                                         \
      " p, [%1], %2;\n\t"                                                         \
      "@inj bra T%=;\n\t"                                                         \
      "@p bra D%=;\n\t"                                                           \
      "T%=:\n\t"                                                                  \
      "mov.u32 now, %%globaltimer_lo;\n\t"                                        \
      "sub.u32 %0, now, t0;\n\t"                                                  \
      "setp.le.u32 p, %0, %5;\n\t"                                                \
      "@p bra W%=;\n\t"                                                           \
      "bra E%=;\n\t"                                                              \
      "D%=:\n\t"                                                                  \
      "mov.u32 %0, 0;\n\t"                                                        \
      "E%=:\n\t}"                                                                 \
      : "=r"(waited)                                                              \
      : "r"(bar), "r"(parity), "r"(g_wait_timeout_config.inject_site), "r"(site), \
        "n"(static_cast<uint32_t>(GEMM_MBARRIER_TIMEOUT_NS))                      \
      : "memory")

template <bool kClusterAcquire>
static __device__ __forceinline__ uint32_t MbarSpinBounded(uint32_t bar, uint32_t parity,
                                                           uint32_t site) {
  uint32_t waited;
  if constexpr (kClusterAcquire) {
    GEMM_BOUNDED_SPIN("mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64");
  } else {
    GEMM_BOUNDED_SPIN("mbarrier.try_wait.parity.shared::cta.b64");
  }
  return waited;
}

#undef GEMM_BOUNDED_SPIN

template <bool kClusterAcquire>
static __device__ __forceinline__ void MbarWaitParity(uint32_t bar, uint32_t parity, WaitSite site,
                                                      uint32_t tile) {
  const uint32_t s = site == WaitSite::kUnnamed ? 0xffffffffu : static_cast<uint32_t>(site);
  const uint32_t waited = MbarSpinBounded<kClusterAcquire>(bar, parity, s);
  if (waited != 0) {
    WaitTimedOut(bar, parity, static_cast<uint32_t>(site), tile, waited,
                 g_wait_timeout_config.inject_site == s);
  }
}

#else  // unbounded

// NOTE: the spin stays inside one asm block (as before the bounded option existed), so the
// server's kernels are unchanged by it.
template <bool kClusterAcquire>
__device__ __forceinline__ void MbarWaitParity(uint32_t bar, uint32_t parity, WaitSite, uint32_t) {
  if constexpr (kClusterAcquire) {
    asm volatile(
        "{\n\t.reg .pred done;\n\t"
        "WAIT_%=:\n\t"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n\t"
        "@!done bra WAIT_%=;\n\t}" ::"r"(bar),
        "r"(parity)
        : "memory");
  } else {
    asm volatile(
        "{\n.reg .pred done;\n"
        "WAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT_%=;\n}" ::"r"(bar),
        "r"(parity)
        : "memory");
  }
}

#endif  // GEMM_MBARRIER_TIMEOUT_NS

}  // namespace gemm::kernel::ptx
