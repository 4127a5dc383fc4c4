// Shared pieces of the SM100 CPU tests: a ProblemShape builder and a model of an mbarrier after
// the PTX ISA (pending arrivals + transaction count; the tx-count may go below zero when a
// complete_tx lands before its expect_tx; a phase completes when both reach zero;
// try_wait.parity(p) passes once the phase of parity p has completed).
#pragma once

#include <cstdint>

#include "sm100/sm100_scheduler.h"

namespace gemm::kernel::sm100::testing {

inline ProblemShape Shape(int32_t x, int32_t y, int32_t k, int32_t splits = 1) {
  ProblemShape s;
  s.rows_x = x;
  s.rows_y = y;
  s.k = k;
  s.k_splits = splits;
  return s;
}

struct MbarrierModel {
  uint32_t count = 1;
  uint32_t pending = 1;
  int64_t tx = 0;
  uint32_t completed = 0;  // phases completed so far

  void Init(uint32_t c) { count = pending = c; }
  // `n` arrivals; false when the phase expects fewer (a protocol error the caller reports).
  [[nodiscard]] bool Arrive(uint32_t n = 1) {
    if (pending < n) return false;
    pending -= n;
    Check();
    return true;
  }
  void ExpectTx(int64_t bytes) { tx += bytes; }
  [[nodiscard]] bool ArriveExpectTx(int64_t bytes) {
    ExpectTx(bytes);
    return Arrive();
  }
  void CompleteTx(int64_t bytes) {
    tx -= bytes;
    Check();
  }
  bool TryWait(uint32_t parity) const { return (completed & 1u) != parity; }

 private:
  void Check() {
    if (pending == 0 && tx == 0) {
      ++completed;
      pending = count;
    }
  }
};

}  // namespace gemm::kernel::sm100::testing
