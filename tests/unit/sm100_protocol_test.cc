// A CPU model of the SM100 kernel's barrier protocol for one 2-CTA cluster
// (kernel/src/sm100/sm100_kernel.cuh): producers in both CTAs, the leader's MMA issuer and the
// epilogues in both CTAs run as state machines, interleaved at random, over mbarriers modelled
// after the PTX ISA (arrival count + transaction count; a phase completes when both reach zero;
// try_wait.parity(p) passes once the phase of parity p has completed). TMA copies complete in any
// order, MMAs in issue order, and their multicast commit arrivals land in any order. Checked: no
// deadlock; the MMA reads the stage contents the producers loaded for that K block in both CTAs;
// TMA never overwrites a stage the MMA still reads; the MMA never overwrites an accumulator an
// epilogue still reads, and the epilogue sees all K blocks of its tile; nothing is in flight
// toward a CTA once all roles are done (the producer tail). Uses the kernel's own PipelineState
// and TileScheduler. Mutations (no producer tail, tmem_empty count 128, producer waiting the
// consumer parity) each make it fail.
#include <cstdint>
#include <deque>
#include <functional>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "sm100/sm100_pipeline.h"
#include "sm100/sm100_scheduler.h"
#include "sm100_test_util.h"

namespace gemm::kernel::sm100 {
namespace {

using Barrier = testing::MbarrierModel;
using testing::Shape;

constexpr int64_t kStageBytes = 100;

// kAccum: TMEM accumulators (2: the 1-M-wave kernel's double buffer; 1: the 2-M-wave kernel,
// whose two waves fill all 512 columns).
template <int kStages, int kAccum = 2>
class ClusterModel {
 public:
  ClusterModel(std::vector<ProblemShape> shapes, int32_t cluster_id, int32_t num_clusters,
               uint64_t seed)
      : shapes_(std::move(shapes)), rng_(seed) {
    for (int c = 0; c < 2; ++c) {
      for (int s = 0; s < kStages; ++s) {
        full_[c][s].Init(2);
        empty_[c][s].Init(1);
      }
      for (int b = 0; b < kAccum; ++b) {
        tmem_full_[c][b].Init(1);
        tmem_empty_[c][b].Init(2 * 128);
      }
      prod_[c].sched = MakeSched(cluster_id, num_clusters);
      epi_[c].sched = MakeSched(cluster_id, num_clusters);
    }
    mma_.sched = MakeSched(cluster_id, num_clusters);
  }

  // Runs to completion; returns the number of tiles the epilogues finished.
  int Run() {
    for (int64_t step = 0; step < 10'000'000; ++step) {
      std::vector<std::function<bool()>> actors = {
          [&] { return StepProducer(0); }, [&] { return StepProducer(1); },
          [&] { return StepMma(); }, [&] { return StepEpilogue(0); },
          [&] { return StepEpilogue(1); }};
      bool progress = false;
      // Deliver an async completion now and then, else let a random role try a step.
      if (Pending() && rng_() % 3 == 0) {
        DeliverOne();
        progress = true;
      } else {
        const int first = static_cast<int>(rng_() % actors.size());
        for (int i = 0; i < static_cast<int>(actors.size()) && !progress; ++i) {
          progress = actors[(first + i) % actors.size()]();
        }
      }
      if (::testing::Test::HasFailure()) return -1;
      const bool all_done =
          prod_[0].done && prod_[1].done && mma_.done && epi_[0].done && epi_[1].done;
      if (all_done) {
        // The cluster barrier at the end: nothing may still be in flight toward either CTA.
        EXPECT_FALSE(Pending()) << "async arrivals still in flight at the final cluster barrier";
        return tiles_done_;
      }
      if (!progress && !Pending()) {
        ADD_FAILURE() << "deadlock at step " << step;
        return -1;
      }
      if (!progress) DeliverOne();  // only async work left
    }
    ADD_FAILURE() << "did not finish";
    return -1;
  }

 private:
  using Sched = TileScheduler<256, 256, 64>;

  bool Pending() const { return !tma_events_.empty() || !mma_events_.empty(); }
  // TMA copies and barrier arrivals land in any order; MMAs complete in issue order.
  void DeliverOne() {
    const bool tma = !tma_events_.empty() && (mma_events_.empty() || rng_() % 2 == 0);
    if (tma) {
      const std::size_t i = rng_() % tma_events_.size();
      auto ev = std::move(tma_events_[i]);
      tma_events_.erase(tma_events_.begin() + static_cast<std::ptrdiff_t>(i));
      ev();
    } else {
      auto ev = std::move(mma_events_.front());
      mma_events_.pop_front();
      ev();
    }
  }
  Sched MakeSched(int32_t c, int32_t n) {
    return Sched(shapes_.data(), static_cast<int32_t>(shapes_.size()), false, 2, c, n);
  }
  static int64_t TileId(const WorkTile& t) {
    return (int64_t{t.problem} << 40) | (int64_t{t.block_x} << 20) | t.block_y;
  }

  struct Producer {
    Sched sched{nullptr, 0, false, 1, 0, 1};
    PipelineState<kStages> st;
    WorkTile tile;
    bool have_tile = false, tail = false, done = false;
    int32_t kb = 0, tail_left = kStages;
  };
  struct Mma {
    Sched sched{nullptr, 0, false, 1, 0, 1};
    PipelineState<kStages> st;
    PipelineState<kAccum> acc;
    WorkTile tile;
    bool have_tile = false, acc_ready = false, done = false;
    int32_t kb = 0;
  };
  struct Epilogue {
    Sched sched{nullptr, 0, false, 1, 0, 1};
    PipelineState<kAccum> acc;
    WorkTile tile;
    bool have_tile = false, reading = false, done = false;
  };

  bool StepProducer(int c) {
    Producer& p = prod_[c];
    if (p.done) return false;
    if (p.tail) {
      if (!empty_[c][p.st.index].TryWait(p.st.ProducerParity())) return false;
      p.st.Advance();
      if (--p.tail_left == 0) p.done = true;
      return true;
    }
    if (!p.have_tile) {
      p.have_tile = p.sched.Next(&p.tile);
      p.kb = 0;
      if (!p.have_tile) p.tail = true;
      return true;
    }
    const uint32_t s = p.st.index;
    if (!empty_[c][s].TryWait(p.st.ProducerParity())) return false;
    EXPECT_TRUE(full_[0][s].ArriveExpectTx(kStageBytes));  // the leader's full barrier
    const int64_t id = TileId(p.tile), kb = p.kb;
    tma_events_.push_back([this, c, s, id, kb] {
      EXPECT_FALSE(stage_in_use_[s]) << "TMA overwrote a stage the MMA is reading";
      stage_content_[c][s] = {id, kb};
      full_[0][s].CompleteTx(kStageBytes);
    });
    p.st.Advance();
    if (++p.kb == p.tile.num_k_blocks) p.have_tile = false;
    return true;
  }

  bool StepMma() {
    Mma& m = mma_;
    if (m.done) return false;
    if (!m.have_tile) {
      m.have_tile = m.sched.Next(&m.tile);
      m.kb = 0;
      m.acc_ready = false;
      if (!m.have_tile) m.done = true;
      return true;
    }
    if (!m.acc_ready) {
      if (!tmem_empty_[0][m.acc.index].TryWait(m.acc.ProducerParity())) return false;
      m.acc_ready = true;
      return true;
    }
    const uint32_t s = m.st.index;
    if (!full_[0][s].TryWait(m.st.ConsumerParity())) return false;
    const int64_t id = TileId(m.tile);
    for (int c = 0; c < 2; ++c) {
      EXPECT_EQ(stage_content_[c][s].first, id) << "MMA read a stage of another tile, CTA " << c;
      EXPECT_EQ(stage_content_[c][s].second, m.kb) << "MMA read the wrong K block, CTA " << c;
    }
    stage_in_use_[s] = true;
    const uint32_t b = m.acc.index;
    const int32_t kb = m.kb;
    // MMA execution + commit to empty[s] of both CTAs (multicast), in issue order.
    mma_events_.push_back([this, s, b, id, kb] {
      for (int c = 0; c < 2; ++c) EXPECT_FALSE(epi_reading_[c][b]) << "MMA overwrote a TMEM buffer";
      if (kb == 0) accum_[b] = {id, 0};
      EXPECT_EQ(accum_[b].first, id);
      ++accum_[b].second;
      stage_in_use_[s] = false;
      // The multicast arrivals land in each CTA in no particular order.
      for (int c = 0; c < 2; ++c)
        tma_events_.push_back([this, c, s] { ASSERT_TRUE(empty_[c][s].Arrive()); });
    });
    m.st.Advance();
    if (++m.kb == m.tile.num_k_blocks) {
      mma_events_.push_back([this, b] {
        for (int c = 0; c < 2; ++c) {
          tma_events_.push_back([this, c, b] { ASSERT_TRUE(tmem_full_[c][b].Arrive()); });
        }
      });
      m.acc.Advance();
      m.have_tile = false;
    }
    return true;
  }

  bool StepEpilogue(int c) {
    Epilogue& e = epi_[c];
    if (e.done) return false;
    if (!e.have_tile) {
      e.have_tile = e.sched.Next(&e.tile);
      e.reading = false;
      if (!e.have_tile) e.done = true;
      return true;
    }
    const uint32_t b = e.acc.index;
    if (!e.reading) {
      if (!tmem_full_[c][b].TryWait(e.acc.ConsumerParity())) return false;
      EXPECT_EQ(accum_[b].first, TileId(e.tile)) << "epilogue read another tile's accumulator";
      EXPECT_EQ(accum_[b].second, e.tile.num_k_blocks) << "epilogue read an unfinished sum";
      e.reading = true;
      epi_reading_[c][b] = true;
      return true;
    }
    // Done reading TMEM: all 128 threads arrive on the leader's tmem_empty (remote for CTA 1).
    epi_reading_[c][b] = false;
    EXPECT_TRUE(tmem_empty_[0][b].Arrive(128)) << "tmem_empty over-arrived";
    e.acc.Advance();
    e.have_tile = false;
    if (c == 0) ++tiles_done_;
    return true;
  }

  std::vector<ProblemShape> shapes_;
  std::mt19937_64 rng_;
  Barrier full_[2][kStages], empty_[2][kStages], tmem_full_[2][kAccum], tmem_empty_[2][kAccum];
  std::pair<int64_t, int64_t> stage_content_[2][kStages] = {};
  bool stage_in_use_[kStages] = {};
  std::pair<int64_t, int32_t> accum_[kAccum] = {};
  bool epi_reading_[2][kAccum] = {};
  std::vector<std::function<void()>> tma_events_;
  std::deque<std::function<void()>> mma_events_;
  Producer prod_[2];
  Mma mma_;
  Epilogue epi_[2];
  int tiles_done_ = 0;
};

using Sched = TileScheduler<256, 256, 64>;

template <int kStages, int kAccum = 2>
void RunMany(int seeds) {
  const std::vector<std::vector<ProblemShape>> groups = {
      {Shape(256, 256, 64)},        // one tile, one K block
      {Shape(1000, 700, 64 * 13)},  // 4 x 3 tiles, 13 K blocks
      {Shape(600, 300, 64 * 2), Shape(300, 900, 64 * 9), Shape(256, 256, 1)},
  };
  for (const auto& g : groups) {
    for (int32_t clusters : {1, 3}) {
      for (int32_t cid = 0; cid < clusters; ++cid) {
        for (int seed = 0; seed < seeds; ++seed) {
          ClusterModel<kStages, kAccum> model(g, cid, clusters, 1000 * seed + cid);
          const int done = model.Run();
          ASSERT_FALSE(::testing::Test::HasFailure()) << "seed " << seed << " cluster " << cid;
          // This cluster's share of the tiles.
          Sched count_sched(g.data(), static_cast<int32_t>(g.size()), false, 2, cid, clusters);
          WorkTile t;
          int expected = 0;
          while (count_sched.Next(&t)) ++expected;
          EXPECT_EQ(done, expected);
        }
      }
    }
  }
}
TEST(Sm100Protocol, TwoStages) { RunMany<2>(30); }
TEST(Sm100Protocol, SixStages) { RunMany<6>(30); }
TEST(Sm100Protocol, EightStages) { RunMany<8>(10); }
// The 2-M-wave configuration: 4 stages, one TMEM accumulator.
TEST(Sm100Protocol, FourStagesOneAccumulator) { RunMany<4, 1>(30); }

}  // namespace
}  // namespace gemm::kernel::sm100
