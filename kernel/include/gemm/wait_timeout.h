// Bounded mbarrier waits, host side. A kernel library compiled with GEMM_MBARRIER_TIMEOUT_NS=<ns>
// (the qualification child's, never the server's) gives up on any mbarrier wait that has not
// completed after that many nanoseconds of %globaltimer: one waiting thread writes a
// WaitTimeoutRecord (which wait, the barrier, the phase, the tile) to mapped pinned host memory,
// which outlives the context, and the kernel traps. Plain host C++, no CUDA include.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace gemm::kernel {

// The mbarrier waits of the native kernels (the role that waits and the barrier it waits on).
enum class WaitSite : uint32_t {
  kUnnamed = 0,
  kSm90ProducerEmpty,      // SM90 producer: a free pipeline slot
  kSm90ConsumerFull,       // SM90 consumer: a slot's TMA bytes
  kSm100ProducerEmpty,     // SM100 producer: a free pipeline slot
  kSm100ProducerDrain,     // SM100 producer: the last commits before exit
  kSm100MmaTmemEmpty,      // SM100 MMA warp: a free TMEM accumulator
  kSm100MmaFull,           // SM100 MMA warp: a slot's TMA bytes
  kSm100EpilogueTmemFull,  // SM100 epilogue: a finished accumulator
  kSm100EpilogueC,         // SM100 epilogue: a C chunk (beta != 0)
  kSm100ClcResponse,       // SM100 tile source: a Cluster Launch Control response
  kSm100ClcEmpty,          // SM100 CLC scheduler: a free response slot
  kSm100ClcFull,           // SM100 CLC scheduler: its own response
  kCount,
};

// "sm90.consumer_full" etc.; "unnamed" for kUnnamed or an out-of-range value.
const char* WaitSiteName(uint32_t site);
// The site named `name` (WaitSiteName spelling), or kUnnamed.
WaitSite WaitSiteFromName(const std::string& name);

// What the first timed-out wait wrote. Lives in mapped pinned host memory.
struct WaitTimeoutRecord {
  uint32_t fired;      // 1 once a wait timed out
  uint32_t site;       // WaitSite
  uint32_t barrier;    // the barrier's shared-memory address
  uint32_t parity;     // the phase parity it waited for
  uint32_t tile;       // the kernel's tile/work-unit id at the wait (0xffffffff: none)
  uint32_t block[3];   // blockIdx
  uint32_t thread;     // threadIdx.x
  uint32_t injected;   // 1: the wait was made to never complete (test hook)
  uint64_t waited_ns;  // how long it waited
};

// Whether this kernel library was compiled with bounded waits.
bool BoundedWaitsCompiledIn();

// The bound in nanoseconds (0 when not compiled in).
uint64_t WaitTimeoutNs();

// Points every kernel module of this library at `device_record` (the device address of a mapped
// pinned WaitTimeoutRecord) and makes the waits at `inject` never complete (kUnnamed: none).
// Call on the current device before the first launch. UNIMPLEMENTED without bounded waits.
absl::Status ArmWaitTimeout(WaitTimeoutRecord* device_record, WaitSite inject);

// One line: "mbarrier wait sm90.consumer_full timed out after 1.0 s: barrier 0x..., parity 1,
// tile 3, block (0,0,0) thread 128".
std::string DescribeWaitTimeout(const WaitTimeoutRecord& record);

}  // namespace gemm::kernel
