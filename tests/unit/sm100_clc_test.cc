// Cluster Launch Control scheduling of the SM100 kernel (kernel/src/sm100/sm100_clc.h and the
// scheduler warp in sm100_kernel.cuh), checked on the CPU with a model of the protocol over a
// whole grid: one 2-CTA cluster per work unit, at most `slots` clusters resident at once, the
// "hardware" launching pending clusters in random order whenever a slot frees, and each running
// cluster's scheduler cancelling pending clusters through the kernel's response ring
// (kClcStages slots; clc_full armed with expect_tx(16) in both CTAs, the response written to both
// CTAs by separate asynchronous events that may land in any order, before or after the arming;
// clc_empty on the leader counting kClcConsumers arrivals). Which pending cluster a try_cancel
// takes is random, and it is decided when the response lands; one in eight fails although
// clusters are still pending. Each consumer role (producer of
// each CTA, the leader's MMA warp, the 4 epilogue warps of each CTA, the scheduler itself) runs
// its own ClcCursor + TileScheduler::TileAt over the responses, as the kernel does.
//
// Checked: every work unit of the problem(s) runs exactly once, on exactly one cluster, and all
// roles of a cluster see the same sequence; no response slot is overwritten before all consumers
// read it; no try_cancel after an observed failure; no deadlock; nothing in flight toward a
// cluster when it exits. Mutations (too small a clc_empty count, the peer's clc_full not armed,
// one role skipping the ring) are detected.
#include "sm100/sm100_clc.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "sm100/sm100_pipeline.h"
#include "sm100/sm100_scheduler.h"
#include "sm100_test_util.h"

namespace gemm::kernel::sm100 {
namespace {

using Sched = TileScheduler<256, 256, 64>;

using Barrier = testing::MbarrierModel;
using testing::Shape;

struct Mutation {
  uint32_t empty_count = kClcConsumers;  // arrivals the leader's clc_empty waits for
  bool arm_peer = true;                  // scheduler arms the peer CTA's clc_full
  bool mma_skips_ring = false;           // the MMA role walks the static schedule instead
};

using UnitKey = std::tuple<int32_t, int32_t, int32_t, int32_t>;  // problem, x, y, split

class GridModel {
 public:
  GridModel(std::vector<ProblemShape> shapes, bool uniform, int32_t problems, int slots,
            uint64_t seed, Mutation mut = {})
      : shapes_(std::move(shapes)),
        uniform_(uniform),
        problems_(problems),
        slots_(slots),
        rng_(seed),
        mut_(mut) {
    total_ = Sched::TotalTiles(shapes_.data(), problems_, uniform_);
    grid_clusters_ = ClcGridClusters(total_);
    for (int64_t c = 0; c < grid_clusters_; ++c) pending_.push_back(static_cast<int32_t>(c));
  }

  // Runs the whole grid; returns "" or the first violation.
  std::string Run() {
    for (int64_t step = 0; step < 20'000'000 && error_.empty(); ++step) {
      // Launch pending clusters into free slots (random pending one, at random times).
      if (static_cast<int>(running_.size()) < slots_ && !pending_.empty() && rng_() % 4 == 0) {
        const std::size_t i = rng_() % pending_.size();
        const int32_t id = pending_[i];
        pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
        Launch(id);
        continue;
      }
      if (running_.empty()) {
        if (pending_.empty()) break;
        continue;
      }
      bool progress = false;
      if (!events_.empty() && rng_() % 3 == 0) {
        DeliverOne();
        progress = true;
      } else {
        // A random role of a random running cluster tries one step.
        const std::size_t first = rng_() % running_.size();
        for (std::size_t i = 0; i < running_.size() && !progress; ++i) {
          Cluster& c = *running_[(first + i) % running_.size()];
          const int n = static_cast<int>(c.roles.size()) + 1;
          const int r0 = static_cast<int>(rng_() % static_cast<uint64_t>(n));
          for (int j = 0; j < n && !progress; ++j) {
            const int r = (r0 + j) % n;
            progress = r == n - 1 ? StepScheduler(c) : StepConsumer(c, c.roles[r]);
          }
        }
      }
      if (!progress && !events_.empty()) {
        DeliverOne();
        progress = true;
      }
      RetireFinished();
      if (!progress && static_cast<int>(running_.size()) == slots_) {
        return "deadlock: " + std::to_string(running_.size()) + " clusters stuck";
      }
      if (!progress && pending_.empty() && !running_.empty()) {
        return "deadlock: no pending clusters, " + std::to_string(running_.size()) + " stuck";
      }
    }
    if (!error_.empty()) return error_;
    if (!running_.empty() || !pending_.empty()) return "did not finish";
    // Every work unit exactly once.
    if (static_cast<int64_t>(done_.size()) != total_) {
      return "ran " + std::to_string(done_.size()) + " distinct units of " + std::to_string(total_);
    }
    for (const auto& [key, n] : done_) {
      if (n != 1) return "a unit ran " + std::to_string(n) + " times";
    }
    return "";
  }

  int64_t total() const { return total_; }
  int64_t cancels() const { return cancels_; }

 private:
  struct Role {
    int cta = 0;
    bool static_walk = false;
    ClcCursor cursor{0};
    PipelineState<kClcStages> st;
    Sched sched{nullptr, 0, true, 1, 0, 1};
    std::vector<int64_t> seen;
    bool done = false;
  };
  struct Cluster {
    int32_t id = 0;
    std::vector<Role> roles;  // kClcConsumers - 1 consumers; the scheduler is separate
    Barrier full[2][kClcStages], empty[kClcStages];
    // Response slots per CTA: (sequence number, canceled, first ctaid x).
    struct Slot {
      int64_t seq = -1;
      bool canceled = false;
      uint32_t x = 0;
      uint32_t reads = 0;
    } slot[2][kClcStages];
    // Scheduler.
    PipelineState<kClcStages> sst;
    int sched_state = 0;  // 0 wait empty, 1 wait full, 2 done
    bool observed_failure = false;
    int64_t issued = 0;
    ClcCursor sched_cursor{0};
    std::vector<int64_t> sched_seen;
    int inflight = 0;  // events targeting this cluster
  };

  void Launch(int32_t id) {
    auto c = std::make_unique<Cluster>();
    c->id = id;
    for (int cta = 0; cta < 2; ++cta) {
      for (int s = 0; s < kClcStages; ++s) c->full[cta][s].Init(1);
    }
    for (int s = 0; s < kClcStages; ++s) c->empty[s].Init(mut_.empty_count);
    auto add = [&](int cta) {
      Role r;
      r.cta = cta;
      r.cursor = ClcCursor(id);
      r.sched =
          Sched(shapes_.data(), problems_, uniform_, 4, id, static_cast<int32_t>(grid_clusters_));
      c->roles.push_back(r);
    };
    add(0);  // producer, CTA 0
    add(1);  // producer, CTA 1
    add(0);  // MMA warp (leader)
    if (mut_.mma_skips_ring) c->roles.back().static_walk = true;
    for (int cta = 0; cta < 2; ++cta) {
      for (int w = 0; w < kNumEpilogueWarps; ++w) add(cta);  // epilogue warps
    }
    c->sched_cursor = ClcCursor(id);
    running_.push_back(std::move(c));
  }

  void Fail(const std::string& e) {
    if (error_.empty()) error_ = e;
  }

  // One step of a consumer role; false when blocked or done.
  bool StepConsumer(Cluster& c, Role& r) {
    if (r.done) return false;
    if (r.static_walk) {
      WorkTile t;
      if (r.sched.Next(&t)) {
        r.seen.push_back(-2);  // cannot agree with the ring's sequence
      } else {
        r.done = true;
      }
      return true;
    }
    ClcResponse resp;
    if (r.cursor.NeedsResponse()) {
      const uint32_t s = r.st.index;
      if (!c.full[r.cta][s].TryWait(r.st.ConsumerParity())) return false;
      Cluster::Slot& sl = c.slot[r.cta][s];
      resp.canceled = sl.canceled;
      resp.first_ctaid_x = sl.x;
      ++sl.reads;
      if (!c.empty[s].Arrive()) Fail("clc_empty over-arrived");
      r.st.Advance();
    }
    const int64_t id = r.cursor.Next(resp);
    if (id < 0) {
      r.done = true;
      return true;
    }
    WorkTile t;
    if (!r.sched.TileAt(id, &t)) {
      Fail("cluster id past the last unit: " + std::to_string(id));
      return true;
    }
    r.seen.push_back(id);
    return true;
  }

  bool StepScheduler(Cluster& c) {
    if (c.sched_state == 2) return false;
    // The scheduler is also a consumer of its own ring (first: its own unit, no response).
    if (!c.sched_cursor.NeedsResponse() && !c.sched_cursor.Finished()) {
      c.sched_seen.push_back(c.sched_cursor.Next({}));
      return true;
    }
    const uint32_t s = c.sst.index;
    if (c.sched_state == 0) {
      if (!c.empty[s].TryWait(c.sst.ProducerParity())) return false;
      if (c.observed_failure) Fail("try_cancel after an observed failure");
      // Arm both CTAs' clc_full (the peer's through mapa: a remote arrive, modelled as a
      // delayed event), then issue the multicast try_cancel.
      if (!c.full[0][s].ArriveExpectTx(kClcResponseBytes)) Fail("clc_full over-arrived");
      if (mut_.arm_peer) {
        Post(c, [&c, s, this] {
          if (!c.full[1][s].ArriveExpectTx(kClcResponseBytes)) Fail("clc_full over-arrived (peer)");
        });
      }
      const int64_t seq = c.issued++;
      // The cancellation is decided when the response lands; each CTA's copy lands separately.
      auto decided = std::make_shared<std::pair<bool, uint32_t>>(false, 0);
      auto decide = std::make_shared<bool>(false);
      for (int cta = 0; cta < 2; ++cta) {
        Post(c, [&c, s, cta, seq, decided, decide, this] {
          if (!*decide) {
            *decide = true;
            // A cancel may also fail while clusters are pending (the PTX ISA promises no
            // success): those clusters then launch and run their own unit.
            if (!pending_.empty() && rng_() % 8 != 0) {
              const std::size_t i = rng_() % pending_.size();
              *decided = {true, 2u * static_cast<uint32_t>(pending_[i])};
              pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
              ++cancels_;
            }
          }
          Cluster::Slot& sl = c.slot[cta][s];
          // Every consumer of this CTA must have read the slot's previous response.
          const uint32_t readers = CtaConsumers(c, cta);
          if (sl.seq >= 0 && sl.reads != readers) {
            Fail("response slot overwritten before all consumers read it");
          }
          sl.seq = seq;
          sl.canceled = decided->first;
          sl.x = decided->second;
          sl.reads = 0;
          c.full[cta][s].CompleteTx(kClcResponseBytes);
        });
      }
      c.sched_state = 1;
      return true;
    }
    // sched_state == 1: wait for this CTA's copy of the response, read it, release the slot.
    if (!c.full[0][s].TryWait(c.sst.ConsumerParity())) return false;
    Cluster::Slot& sl = c.slot[0][s];
    ++sl.reads;
    ClcResponse r{sl.canceled, sl.x};
    if (!c.empty[s].Arrive()) Fail("clc_empty over-arrived");
    c.sst.Advance();
    const int64_t id = c.sched_cursor.Next(r);
    if (id >= 0) c.sched_seen.push_back(id);
    if (!r.canceled) {
      c.observed_failure = true;
      c.sched_state = 2;
    } else {
      c.sched_state = 0;
    }
    return true;
  }

  // Readers of CTA `cta`'s response copy: its consumer roles (+ the scheduler in the leader).
  uint32_t CtaConsumers(const Cluster& c, int cta) const {
    uint32_t n = cta == 0 ? 1u : 0u;
    for (const Role& r : c.roles) n += (r.cta == cta && !r.static_walk) ? 1u : 0u;
    return n;
  }

  void Post(Cluster& c, std::function<void()> f) {
    ++c.inflight;
    Cluster* cp = &c;
    events_.push_back([cp, f = std::move(f)] {
      --cp->inflight;
      f();
    });
  }

  void DeliverOne() {
    const std::size_t i = rng_() % events_.size();
    auto ev = std::move(events_[i]);
    events_.erase(events_.begin() + static_cast<std::ptrdiff_t>(i));
    ev();
  }

  void RetireFinished() {
    for (std::size_t i = 0; i < running_.size();) {
      Cluster& c = *running_[i];
      bool done = c.sched_state == 2;
      for (const Role& r : c.roles) done = done && r.done;
      if (!done) {
        ++i;
        continue;
      }
      // The kernel's final cluster barrier: nothing may still be in flight toward it.
      if (c.inflight != 0) Fail("async CLC traffic in flight at cluster exit");
      // All roles saw the same sequence (the scheduler's included).
      for (const Role& r : c.roles) {
        if (r.seen != c.sched_seen) Fail("roles of a cluster disagree on the tile sequence");
      }
      for (int64_t id : c.sched_seen) {
        WorkTile t;
        Sched s(shapes_.data(), problems_, uniform_, 4, 0, 1);
        if (!s.TileAt(id, &t)) {
          Fail("bad id");
          continue;
        }
        ++done_[{t.problem, t.block_x, t.block_y, t.split}];
      }
      running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }

  std::vector<ProblemShape> shapes_;
  bool uniform_;
  int32_t problems_;
  int slots_;
  std::mt19937_64 rng_;
  Mutation mut_;
  int64_t total_ = 0, grid_clusters_ = 0, cancels_ = 0;
  std::vector<int32_t> pending_;
  std::vector<std::unique_ptr<Cluster>> running_;
  std::vector<std::function<void()>> events_;
  std::map<UnitKey, int> done_;
  std::string error_;
};

TEST(Sm100Clc, Decoding) {
  // The first CTA of cluster c is CTA 2c (clusters of 2 along x).
  EXPECT_EQ(ClcClusterIdOf(0), 0);
  EXPECT_EQ(ClcClusterIdOf(2), 1);
  EXPECT_EQ(ClcClusterIdOf(146), 73);
  EXPECT_EQ(ClcClusterIdOf(2u * 1000000u), 1000000);
  for (int32_t block = 0; block < 1000; block += 2) {
    EXPECT_EQ(ClcClusterIdOf(static_cast<uint32_t>(block)), ClusterIdOf(block));
    EXPECT_EQ(ClcClusterIdOf(static_cast<uint32_t>(block)), ClusterIdOf(block + 1));
  }
  EXPECT_EQ(ClcGridClusters(0), 0);
  EXPECT_EQ(ClcGridClusters(1024), 1024);
  EXPECT_EQ(kClcResponseBytes, 16u);  // the .b128 response
  EXPECT_EQ(kClcConsumers, 12u);      // 2 producers + MMA + 8 epilogue warps + scheduler
}

TEST(Sm100Clc, CursorSequence) {
  ClcCursor c(5);
  EXPECT_FALSE(c.NeedsResponse());
  EXPECT_EQ(c.Next({}), 5);  // own unit first, no response needed
  EXPECT_TRUE(c.NeedsResponse());
  EXPECT_EQ(c.Next({true, 2 * 40}), 40);
  EXPECT_EQ(c.Next({true, 2 * 7}), 7);  // any order
  EXPECT_EQ(c.Next({false, 0}), -1);    // failure ends the sequence
  EXPECT_TRUE(c.Finished());
  EXPECT_FALSE(c.NeedsResponse());
  EXPECT_EQ(c.Next({true, 2}), -1);  // stays finished
}

// Grouped-L2 order kept: cluster id c maps to the same unit as the static schedule's linear c.
TEST(Sm100Clc, CancelledIdKeepsGroupedOrder) {
  const std::vector<ProblemShape> shapes = {Shape(64 * 256, 8 * 256, 64)};
  Sched walk(shapes.data(), 1, true, 16, 0, 1);
  Sched at(shapes.data(), 1, true, 16, 0, 1);
  for (int32_t id = 0; id < 64 * 8; ++id) {
    WorkTile a, b;
    ASSERT_TRUE(walk.Next(&a));
    ClcCursor cur(0);
    cur.Next({});
    const int64_t got = cur.Next({true, 2u * static_cast<uint32_t>(id)});
    ASSERT_TRUE(at.TileAt(got, &b));
    EXPECT_EQ(a.block_x, b.block_x);
    EXPECT_EQ(a.block_y, b.block_y);
  }
}

void RunGrid(const std::vector<ProblemShape>& shapes, bool uniform, int32_t problems, int seeds) {
  for (int slots : {1, 2, 5, 16}) {
    for (int seed = 0; seed < seeds; ++seed) {
      GridModel m(shapes, uniform, problems, slots, 7919u * static_cast<uint64_t>(seed) + slots);
      const std::string err = m.Run();
      ASSERT_EQ(err, "") << "slots " << slots << " seed " << seed;
    }
  }
}

TEST(Sm100Clc, EveryUnitOnceSingleProblem) {
  RunGrid({Shape(256, 256, 64)}, true, 1, 20);        // one unit
  RunGrid({Shape(1000, 700, 64 * 13)}, true, 1, 20);  // 4 x 3
  RunGrid({Shape(3000, 2000, 640)}, true, 1, 8);      // 12 x 8 = 96 units
}

TEST(Sm100Clc, EveryUnitOnceBatchSplitsAndGroups) {
  RunGrid({Shape(700, 300, 640)}, true, 3, 10);          // strided batch
  RunGrid({Shape(128, 1024, 64 * 40, 5)}, true, 1, 10);  // split-K units
  RunGrid({Shape(600, 300, 128), Shape(300, 900, 576), Shape(256, 256, 1)}, false, 3, 10);
}

TEST(Sm100Clc, CancellationsHappen) {
  // With few slots most units must be taken by cancelling (the point of CLC).
  GridModel m({Shape(3000, 2000, 640)}, true, 1, 2, 42);
  ASSERT_EQ(m.Run(), "");
  EXPECT_GT(m.cancels(), m.total() / 2);
}

// The model can fail: each mutation is caught for some seed.
bool AnyFails(Mutation mut) {
  for (int seed = 0; seed < 40; ++seed) {
    GridModel m({Shape(1000, 700, 64 * 3), Shape(300, 900, 64)}, false, 2, 3,
                static_cast<uint64_t>(seed), mut);
    if (!m.Run().empty()) return true;
  }
  return false;
}

TEST(Sm100Clc, MutationsAreCaught) {
  Mutation few;
  few.empty_count = kClcConsumers - 1;  // e.g. forgetting the scheduler's own read
  EXPECT_TRUE(AnyFails(few));
  Mutation unarmed;
  unarmed.arm_peer = false;
  EXPECT_TRUE(AnyFails(unarmed));
  Mutation skip;
  skip.mma_skips_ring = true;
  skip.empty_count = kClcConsumers - 1;
  EXPECT_TRUE(AnyFails(skip));
  EXPECT_FALSE(AnyFails(Mutation{}));
}

}  // namespace
}  // namespace gemm::kernel::sm100
