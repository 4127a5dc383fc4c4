// Stage/phase bookkeeping of the SM100 kernel's mbarrier rings (SMEM stages TMA -> MMA, TMEM
// accumulators MMA -> epilogue). Pure, unit-tested on the CPU (tests/unit/sm100_pipeline_test.cc).
#pragma once

#include <cstdint>

#include "sm100/sm100_hd.h"

namespace gemm::kernel::sm100 {

// Position in a ring of kStages slots. `phase` flips every time `index` wraps to 0.
// NOTE: an mbarrier starts in phase 0, and try_wait.parity(p) succeeds once the phase with
// parity p has completed. A consumer waits for "full" with parity `phase`; a producer waits for
// "empty" with parity `phase ^ 1`, which passes at once on the first lap (no initial arrive).
template <int kStages>
struct PipelineState {
  static_assert(kStages >= 1, "at least one stage");
  uint32_t index = 0;
  uint32_t phase = 0;

  // Moves to the next slot.
  SM100_HD void Advance() {
    if (++index == static_cast<uint32_t>(kStages)) {
      index = 0;
      phase ^= 1u;
    }
  }
  // Parity a consumer waits for on the "full" barrier of `index`.
  SM100_HD uint32_t ConsumerParity() const { return phase; }
  // Parity a producer waits for on the "empty" barrier of `index`.
  SM100_HD uint32_t ProducerParity() const { return phase ^ 1u; }
};

}  // namespace gemm::kernel::sm100
