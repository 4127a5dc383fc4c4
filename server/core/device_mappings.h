// The client GPU allocations the backend has mapped (CUDA IPC), one mapping per allocation, shared
// by every registered region that names it and closed when the last of them goes. Opening the
// same handle again per region leans on the driver's reference count of IPC mappings, which
// compute-sanitizer does not follow: a refused or unregistered second region looked like the end
// of the first's memory to it. Thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/core/backend.h"

namespace gemm::core {

class DeviceMappings {
 public:
  // `backend` maps and unmaps; it must outlive this object.
  explicit DeviceMappings(Backend* backend) : backend_(backend) {}

  // The mapping of the allocation exported as `ipc_handle` on `device`: opened through the
  // backend the first time, else the one already open (counted once more). The backend's error
  // otherwise.
  absl::StatusOr<Backend::DeviceMemory> Open(const std::string& ipc_handle, int device);

  // Undoes one successful Open() that returned `base`; the last one unmaps it.
  void Close(char* base);

 private:
  struct Mapping {
    Backend::DeviceMemory memory;
    int64_t holders = 0;        // successful Open()s not yet closed
    int64_t backend_opens = 0;  // the backend's mappings of it (two handles may name one base)
  };
  Backend* const backend_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, char*> base_of_ ABSL_GUARDED_BY(mu_);  // handle + device
  absl::flat_hash_map<char*, Mapping> mappings_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gemm::core
