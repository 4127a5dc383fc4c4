// Cluster Launch Control (CLC) scheduling of the SM100 kernel: the pure parts. With CLC the grid
// has one 2-CTA cluster per work unit (tile x K split), cluster c's own unit being linear id c of
// TileScheduler::TileAt (grouped-L2 order). A running cluster's scheduler thread (leader CTA, warp
// kClcWarp) asks the hardware to cancel a cluster that has not launched yet
// (clusterlaunchcontrol.try_cancel ... multicast::cluster::all) and, on success, takes that
// cluster's unit: its first CTA id maps back through ClcClusterIdOf and TileAt, so the grouped L2
// order of the static schedule is kept. A failed cancel (every cluster already launched or taken)
// ends the cluster's loop; PTX forbids another try_cancel after a CTA has observed a failure.
//
// The 16-byte response is opaque (PTX ISA: decoded only by clusterlaunchcontrol.query_cancel,
// device code in ptx/sm100_clc.cuh); everything after that decoding is here, unit-tested on the
// CPU together with a model of the protocol (tests/unit/sm100_clc_test.cc).
//
// Response ring: kClcStages slots of (response, clc_full, clc_empty) at the same shared offsets
// in both CTAs. The scheduler waits the leader's clc_empty[s] (all consumers of both CTAs read
// the slot's previous response), arms clc_full[s] of BOTH CTAs with arrive.expect_tx(16) (the
// peer's through mapa), then issues the multicast try_cancel, whose write completes 16 tx bytes
// on clc_full[s] of each CTA. Every consumer (see kClcConsumers) waits its CTA's clc_full[s],
// reads the response, then arrives once on the leader's clc_empty[s].
#pragma once

#include <cstdint>

#include "sm100/sm100_config.h"
#include "sm100/sm100_hd.h"

namespace gemm::kernel::sm100 {

// Warp that runs the CLC scheduler (the otherwise idle warp 3, leader CTA only).
inline constexpr int kClcWarp = 3;

// Bytes of one try_cancel response (the .b128 operand); the complete_tx count on clc_full.
inline constexpr uint32_t kClcResponseBytes = 16;

// Arrivals on the leader's clc_empty per response: the producer thread of each CTA (2), the
// leader's MMA warp (1, lane 0 after the warp read), each epilogue warp of both CTAs (lane 0
// after the warp read: 2 * 4) and the scheduler thread itself (1).
inline constexpr uint32_t kClcConsumers = 2 + 1 + 2 * kNumEpilogueWarps + 1;

// Cluster id of a cancelled cluster from the x coordinate of its first CTA
// (clusterlaunchcontrol.query_cancel.get_first_ctaid::x): clusters are (2, 1, 1) in a 1-D grid,
// so the first CTA of cluster c is CTA 2c, the same id ClusterIdOf gives both CTAs of c.
SM100_HD constexpr int32_t ClcClusterIdOf(uint32_t first_ctaid_x) {
  return static_cast<int32_t>(first_ctaid_x / 2u);
}

// Clusters to launch with CLC: one per work unit (a running cluster takes the units of clusters
// it cancels; clusters that launch normally start with their own).
SM100_HD constexpr int64_t ClcGridClusters(int64_t work_units) {
  return work_units > 0 ? work_units : 0;
}

// Decoded response of one try_cancel.
struct ClcResponse {
  bool canceled = false;
  uint32_t first_ctaid_x = 0;  // valid when canceled
};

// The work a role of a cluster runs next under CLC: its own cluster id first, then the id of
// each cluster the scheduler cancelled, in response order; -1 once a response says "not
// cancelled" (the end of this cluster's work). Every role of both CTAs runs its own copy over
// the same responses, so all see the same sequence.
class ClcCursor {
 public:
  SM100_HD explicit ClcCursor(int32_t own_cluster_id) : own_(own_cluster_id) {}
  // True when the next id comes from a response (the caller must wait for and read one).
  SM100_HD bool NeedsResponse() const { return started_ && !finished_; }
  SM100_HD bool Finished() const { return finished_; }
  // Next cluster id, or -1 when done. `r` is used only when NeedsResponse() was true.
  SM100_HD int64_t Next(const ClcResponse& r) {
    if (finished_) return -1;
    if (!started_) {
      started_ = true;
      return own_;
    }
    if (!r.canceled) {
      finished_ = true;
      return -1;
    }
    return ClcClusterIdOf(r.first_ctaid_x);
  }

 private:
  int32_t own_;
  bool started_ = false;
  bool finished_ = false;
};

}  // namespace gemm::kernel::sm100
