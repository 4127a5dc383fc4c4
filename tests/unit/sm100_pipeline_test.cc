// Tests of the SM100 pipeline stage/phase bookkeeping (kernel/src/sm100/sm100_pipeline.h): the
// index/phase sequence, and a CPU model of mbarrier phases (PTX ISA: try_wait.parity(p) succeeds
// once the phase with parity p has completed; a barrier starts in phase 0) driving a producer and
// a consumer through the ring: neither passes early, neither deadlocks.
#include "sm100/sm100_pipeline.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace gemm::kernel::sm100 {
namespace {

TEST(Sm100Pipeline, IndexAndPhaseSequence) {
  PipelineState<3> st;
  const uint32_t expect_index[] = {0, 1, 2, 0, 1, 2, 0, 1, 2, 0};
  const uint32_t expect_phase[] = {0, 0, 0, 1, 1, 1, 0, 0, 0, 1};
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(st.index, expect_index[i]) << i;
    EXPECT_EQ(st.phase, expect_phase[i]) << i;
    EXPECT_EQ(st.ConsumerParity(), expect_phase[i]);
    EXPECT_EQ(st.ProducerParity(), expect_phase[i] ^ 1u);
    st.Advance();
  }
}

TEST(Sm100Pipeline, SingleStageFlipsEveryStep) {
  PipelineState<1> st;
  for (uint32_t i = 0; i < 6; ++i) {
    EXPECT_EQ(st.index, 0u);
    EXPECT_EQ(st.phase, i & 1u);
    st.Advance();
  }
}

// An mbarrier with `count` expected arrivals per phase.
struct FakeBarrier {
  uint32_t count = 1;
  uint32_t pending = 1;
  uint32_t completed_phases = 0;  // phases completed so far; current phase = completed_phases
  void Arrive() {
    if (--pending == 0) {
      ++completed_phases;
      pending = count;
    }
  }
  // try_wait.parity: the phase of parity p most recently due has completed, i.e. the current
  // (incomplete) phase has the other parity.
  bool TryWait(uint32_t parity) const { return (completed_phases & 1u) != parity; }
};

// Simulates producer/consumer on a kStages ring for `iters` items, alternating in the given
// schedule; checks every item is produced before consumed and the slot is free before reuse.
template <int kStages>
void Simulate(int iters, int producer_burst, int consumer_burst) {
  std::vector<FakeBarrier> full(kStages), empty(kStages);
  std::vector<int> slot_item(kStages, -1);
  PipelineState<kStages> prod, cons;
  int produced = 0, consumed = 0;
  int stalls = 0;
  while (consumed < iters) {
    bool progress = false;
    for (int b = 0; b < producer_burst && produced < iters; ++b) {
      if (!empty[prod.index].TryWait(prod.ProducerParity())) break;
      ASSERT_EQ(slot_item[prod.index], -1) << "overwrote an unconsumed slot";
      slot_item[prod.index] = produced++;
      full[prod.index].Arrive();
      prod.Advance();
      progress = true;
    }
    for (int b = 0; b < consumer_burst && consumed < produced; ++b) {
      if (!full[cons.index].TryWait(cons.ConsumerParity())) break;
      ASSERT_EQ(slot_item[cons.index], consumed) << "consumed out of order or early";
      slot_item[cons.index] = -1;
      ++consumed;
      empty[cons.index].Arrive();
      cons.Advance();
      progress = true;
    }
    if (!progress)
      ASSERT_LT(++stalls, 2) << "deadlock";
    else
      stalls = 0;
  }
  EXPECT_EQ(produced, iters);
}

TEST(Sm100Pipeline, ProducerConsumerModel) {
  Simulate<1>(50, 1, 1);
  Simulate<2>(100, 3, 1);
  Simulate<6>(1000, 7, 2);
  Simulate<6>(1000, 1, 9);
  Simulate<8>(999, 8, 8);
}

TEST(Sm100Pipeline, ProducerFirstLapDoesNotWait) {
  // A fresh "empty" barrier passes a wait for parity 1 at once (no initial arrive needed).
  FakeBarrier empty;
  PipelineState<4> prod;
  EXPECT_TRUE(empty.TryWait(prod.ProducerParity()));
  FakeBarrier full;
  PipelineState<4> cons;
  EXPECT_FALSE(full.TryWait(cons.ConsumerParity()));
}

}  // namespace
}  // namespace gemm::kernel::sm100
