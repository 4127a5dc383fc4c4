// Host side of the bounded mbarrier waits (gemm/wait_timeout.h): site names, the registry of
// kernel modules built with them, arming, and the one-line description of a record.
#include "gemm/wait_timeout.h"

#include <array>
#include <mutex>
#include <vector>

#include "absl/strings/str_format.h"
#include "wait_timeout_registry.h"

namespace gemm::kernel {
namespace {

constexpr std::array<const char*, static_cast<size_t>(WaitSite::kCount)> kSiteNames = {
    "unnamed",
    "sm90.producer_empty",
    "sm90.consumer_full",
    "sm100.producer_empty",
    "sm100.producer_drain",
    "sm100.mma_tmem_empty",
    "sm100.mma_full",
    "sm100.epilogue_tmem_full",
    "sm100.epilogue_c",
    "sm100.clc_response",
    "sm100.clc_empty",
    "sm100.clc_full",
};

struct Registry {
  std::mutex mu;
  std::vector<detail::WaitTimeoutSetter> setters;
};

Registry& GetRegistry() {
  static Registry* r = new Registry;  // never destroyed: setters register during static init
  return *r;
}

}  // namespace

namespace detail {

bool RegisterWaitTimeoutSetter(WaitTimeoutSetter setter) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.setters.push_back(setter);
  return true;
}

}  // namespace detail

const char* WaitSiteName(uint32_t site) {
  return site < kSiteNames.size() ? kSiteNames[site] : kSiteNames[0];
}

WaitSite WaitSiteFromName(const std::string& name) {
  for (size_t i = 1; i < kSiteNames.size(); ++i) {
    if (name == kSiteNames[i]) return static_cast<WaitSite>(i);
  }
  return WaitSite::kUnnamed;
}

bool BoundedWaitsCompiledIn() { return WaitTimeoutNs() != 0; }

uint64_t WaitTimeoutNs() {
#if defined(GEMM_MBARRIER_TIMEOUT_NS)
  return GEMM_MBARRIER_TIMEOUT_NS;
#else
  return 0;
#endif
}

absl::Status ArmWaitTimeout(WaitTimeoutRecord* device_record, WaitSite inject) {
  if (!BoundedWaitsCompiledIn()) {
    return absl::UnimplementedError("kernel library built without GEMM_MBARRIER_TIMEOUT_NS");
  }
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  int armed = 0;
  for (detail::WaitTimeoutSetter set : r.setters) {
    // A module without an image for this device (e.g. sm_100a-only code on an SM90 GPU) cannot
    // launch here either: skip it.
    if (set(device_record, static_cast<uint32_t>(inject)) == 0) ++armed;
  }
  if (armed == 0) return absl::InternalError("no kernel module with bounded waits could be armed");
  return absl::OkStatus();
}

std::string DescribeWaitTimeout(const WaitTimeoutRecord& r) {
  return absl::StrFormat(
      "mbarrier wait %s%s timed out after %.3f s: barrier smem 0x%x, parity %u, tile %d, "
      "block (%u,%u,%u) thread %u",
      WaitSiteName(r.site), r.injected ? " (injected never-completing wait)" : "",
      static_cast<double>(r.waited_ns) * 1e-9, r.barrier, r.parity,
      r.tile == 0xffffffffu ? -1 : static_cast<int>(r.tile), r.block[0], r.block[1], r.block[2],
      r.thread);
}

}  // namespace gemm::kernel
