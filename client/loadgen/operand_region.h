// --shm: the shared-memory region the load generator's requests read A (and inline B) from and
// write D into, so the messages carry references instead of matrices. Host POSIX shared memory,
// or GPU memory exported through CUDA IPC (--shm_device). Owns the region's layout, its
// registration on every target, and the D slots: each request in flight writes a slot of its
// own while one is free, as a real client's outputs would.
//
// Thread-safety: TakeSlot/ReturnSlot, Output and Poison may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/loadgen/device_region.h"
#include "client/loadgen/operands.h"
#include "client/loadgen/target.h"
#include "common/posix_shm.h"
#include "gemm/v1/gemm_service.pb.h"

namespace gemm::loadgen {

class OperandRegion {
 public:
  struct Options {
    bool inline_b = true;  // B lives in the region too (else it is resident on the servers)
    int output_slots = 1;  // D slots per shape
    int device = -1;       // >= 0: GPU memory of this device, shared through CUDA IPC
    uint64_t seed = 1;     // names the region (with the process id)
  };

  // Lays out every shape's A (and B) and D slots, creates the region, copies the operands in and
  // registers it on every target. The failure of any step is returned (what was registered is
  // unregistered).
  static absl::StatusOr<std::unique_ptr<OperandRegion>> Create(
      const Options& options, const std::vector<ShapeOperands>& shapes,
      const std::vector<Target>& targets);
  ~OperandRegion();
  OperandRegion(const OperandRegion&) = delete;
  OperandRegion& operator=(const OperandRegion&) = delete;

  // Unregisters the region from the targets (failures reported on stderr) and frees it.
  // Idempotent.
  void Release();

  // References into the region for a request of shape `shape` writing D into `slot`.
  v1::SharedMemoryRef RefA(int shape) const;
  v1::SharedMemoryRef RefB(int shape) const;
  v1::SharedMemoryRef RefD(int shape, int slot) const;

  int slots() const { return slots_; }
  // A free D slot, or -1 when every slot is taken (the request then writes slot 0, shared).
  int TakeSlot();
  // Gives back a slot from TakeSlot (-1 is ignored).
  void ReturnSlot(int slot);

  // The D bytes of `shape` in `slot` (-1: slot 0), copied out when the region is in GPU memory;
  // empty when that copy fails. The view lives until the calling thread's next call.
  absl::string_view Output(int shape, int slot) const;
  // Fills D of `shape` in `slot` with 0xFF bytes (NaN), so an answer that does not write D fails
  // verification instead of passing on an earlier request's result.
  void Poison(int shape, int slot);

 private:
  struct Layout {
    int64_t a_off = 0, b_off = 0, d_off = 0, d_stride = 0;
    int64_t a_bytes = 0, b_bytes = 0, d_bytes = 0;
  };
  OperandRegion(const Options& options, std::vector<Layout> layout, int64_t size,
                std::vector<Target> targets);
  absl::Status Fill(const std::vector<ShapeOperands>& shapes);
  absl::Status Register();
  v1::SharedMemoryRef Ref(int64_t offset, int64_t bytes) const;
  int64_t DOffset(int shape, int slot) const;

  const Options options_;
  const std::vector<Layout> layout_;
  const int64_t size_;
  const int slots_;
  std::vector<Target> targets_;
  std::string name_;
  std::unique_ptr<PosixShm> host_;        // host shared memory, or
  std::unique_ptr<DeviceRegion> device_;  // GPU memory
  std::vector<int> registered_;           // targets the region is registered on

  std::mutex slot_mu_;
  std::vector<int> free_slots_;  // guarded by slot_mu_
};

}  // namespace gemm::loadgen
