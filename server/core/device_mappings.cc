// Shared mappings of client GPU allocations (see device_mappings.h).
#include "server/core/device_mappings.h"

#include "absl/strings/str_cat.h"

namespace gemm::core {

absl::StatusOr<Backend::DeviceMemory> DeviceMappings::Open(const std::string& ipc_handle,
                                                           int device) {
  const std::string key = absl::StrCat(device, ":", ipc_handle);
  // NOTE: the backend maps under the lock, so two registrations of one handle cannot both map
  // it; registrations are rare.
  absl::MutexLock lock(&mu_);
  if (auto it = base_of_.find(key); it != base_of_.end()) {
    Mapping& m = mappings_.at(it->second);
    ++m.holders;
    return m.memory;
  }
  absl::StatusOr<Backend::DeviceMemory> memory = backend_->OpenDeviceMemory(ipc_handle, device);
  if (!memory.ok()) return memory.status();
  base_of_[key] = memory->base;
  Mapping& m = mappings_[memory->base];
  if (m.holders == 0) m.memory = *memory;
  ++m.holders;
  ++m.backend_opens;
  return m.memory;
}

void DeviceMappings::Close(char* base) {
  int64_t unmaps = 0;
  {
    absl::MutexLock lock(&mu_);
    auto it = mappings_.find(base);
    if (it == mappings_.end() || --it->second.holders > 0) return;
    unmaps = it->second.backend_opens;
    mappings_.erase(it);
    absl::erase_if(base_of_, [base](const auto& kv) { return kv.second == base; });
  }
  for (int64_t i = 0; i < unmaps; ++i) backend_->CloseDeviceMemory(base);
}

}  // namespace gemm::core
