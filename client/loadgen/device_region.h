// DeviceRegion: the load generator's operands and outputs in GPU memory, exported to the server
// through CUDA IPC (--shm --shm_device=N): one cudaMalloc allocation the server maps with
// RegisterSharedMemory(cuda_ipc_handle), so A and D never cross PCIe. Without a CUDA build,
// Create() answers UNIMPLEMENTED.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gemm::loadgen {

class DeviceRegion {
 public:
  // Allocates `bytes` on GPU `device` and exports the allocation.
  static absl::StatusOr<std::unique_ptr<DeviceRegion>> Create(int device, int64_t bytes);
  ~DeviceRegion();

  // The cudaIpcMemHandle_t of the allocation, as bytes.
  const std::string& ipc_handle() const { return handle_; }
  int device() const { return device_; }
  // Copies `bytes` bytes from host `src` to offset `off` (synchronous: done when it returns).
  absl::Status Upload(int64_t off, const void* src, int64_t bytes);
  // Copies `bytes` bytes at offset `off` into `*dst` (synchronous).
  absl::Status Download(int64_t off, int64_t bytes, std::string* dst) const;
  // Sets `bytes` bytes at offset `off` to `value` (synchronous).
  absl::Status Fill(int64_t off, int64_t bytes, uint8_t value);

 private:
  DeviceRegion(int device, char* base, std::string handle)
      : device_(device), base_(base), handle_(std::move(handle)) {}
  int device_;
  char* base_;
  std::string handle_;
};

}  // namespace gemm::loadgen
