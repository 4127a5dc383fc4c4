// Registry of client shared-memory regions (RegisterSharedMemory): name -> mapped byte range of a
// POSIX shared-memory object, page-locked by the backend where it can, or of a client's GPU
// allocation mapped through CUDA IPC, so operands and outputs travel by reference instead of
// inside gRPC messages. Requests hold their regions (shared_ptr) so an unregistered region stays
// mapped until they finish. Thread-safe.
//
// A client keeps its object and may shrink it (ftruncate) under the server's mapping. Then:
// Resolve() refuses a reference into a region whose object no longer backs it
// (FAILED_PRECONDITION naming the field and the region); a request that was admitted before the
// object shrank fails when its copy touches a vanished page, because every CPU access to region
// bytes runs under common/guarded_copy.h (a SIGBUS guard; see there why not pread/pwrite), and
// ShrunkError() words that failure. Page-locked regions are copied by DMA through the pages pinned
// at registration, which outlive the shrink: their copies never fault.
//
// Each region belongs to the caller that registered it: others (unless admin) neither list,
// unregister nor name it in a request, and the caller's own bytes are capped too.
//
// The registry caps the regions' count (each is one memory mapping: the kernel allows a process
// vm.max_map_count of them, and a process out of mappings fails its next large allocation) and
// their bytes, counting each host region as the whole pages it maps.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "common/posix_shm.h"
#include "server/core/backend.h"
#include "server/core/caller.h"
#include "server/core/device_mappings.h"
#include "server/core/limits.h"
#include "server/core/types.h"

namespace gemm::core {

// One registered region. Unpins and unmaps when the last holder drops it.
class SharedMemoryRegion {
 public:
  struct Desc {
    std::string name;
    std::string key;  // shm_open name; empty for GPU memory
    int64_t offset = 0;
    int64_t byte_size = 0;
    std::string cuda_ipc_handle;  // GPU memory: the exported allocation's handle
    int device = -1;              // GPU memory: the device it lives on
    std::string owner;            // Caller::name of the caller that registered it
  };
  // Host memory: a mapped POSIX shared-memory object, page-locked when `pinned`.
  SharedMemoryRegion(Desc desc, std::unique_ptr<PosixShm> map, Backend* backend, bool pinned);
  // GPU memory: an allocation mapped at `device_base` by `mappings` (one Open() this region
  // closes).
  SharedMemoryRegion(Desc desc, char* device_base, std::shared_ptr<DeviceMappings> mappings);
  ~SharedMemoryRegion();

  const Desc& desc() const { return desc_; }
  // Whether the object still backs the whole range (always true for GPU memory); see
  // PosixShm::Backed().
  bool Backed() const { return map_ == nullptr || map_->Backed(); }
  // The mapped bytes (byte_size of them); a device address for GPU memory.
  char* data() const { return map_ != nullptr ? map_->data() : device_base_ + desc_.offset; }
  // The backend page-locked the range.
  bool pinned() const { return pinned_; }
  // GPU memory (desc().device): only device copies may touch data().
  bool on_device() const { return device_base_ != nullptr; }

 private:
  Desc desc_;
  std::unique_ptr<PosixShm> map_;
  char* device_base_ = nullptr;
  std::shared_ptr<DeviceMappings> mappings_;  // GPU memory
  Backend* backend_ = nullptr;                // host memory
  bool pinned_ = false;
};

// A byte range of a registered region as a request names it.
struct SharedMemoryRef {
  std::string region;
  int64_t offset = 0;
  int64_t byte_size = 0;
};

class SharedMemoryRegistry {
 public:
  // Default cap on the number of registered regions.
  static constexpr int64_t kDefaultMaxRegions = kDefaultMaxSharedMemoryRegions;

  // `backend` pins and unpins ranges and must outlive every region. `max_bytes` caps the bytes
  // of the registered regions (each host region counted as the whole pages it maps); 0 turns
  // registration off. Only objects whose names start with `key_prefix` may be registered. At most
  // `max_regions` regions, and no more than half the memory mappings this process has left
  // (vm.max_map_count less those in use when the registry is made); see max_regions().
  SharedMemoryRegistry(Backend* backend, int64_t max_bytes, std::string key_prefix,
                       int64_t max_regions = kDefaultMaxRegions);

  // Maps and pins `desc`'s range, or maps its GPU allocation (cuda_ipc_handle set, key empty).
  // INVALID_ARGUMENT (bad name/key/range/handle/device, or an object that is not a regular
  // shared-memory object), PERMISSION_DENIED (key outside the prefix, or another user's private
  // object), ALREADY_EXISTS (name taken), NOT_FOUND (no such object on this host),
  // RESOURCE_EXHAUSTED (over the byte or count cap), FAILED_PRECONDITION (registration turned
  // off), UNIMPLEMENTED (GPU memory on a backend without CUDA). The region belongs to `caller`,
  // whose own byte cap holds too (RESOURCE_EXHAUSTED).
  absl::StatusOr<std::shared_ptr<const SharedMemoryRegion>> Register(SharedMemoryRegion::Desc desc,
                                                                     const Caller& caller = {});

  // Forgets `name` (NOT_FOUND if unknown or, unless `caller` is admin, another caller's);
  // requests holding it finish first.
  absl::Status Unregister(const std::string& name, const Caller& caller = {});

  // The bytes `ref` names, checked against its region (`field` prefixes error messages: NOT_FOUND
  // for an unknown region, INVALID_ARGUMENT for a bad range, FAILED_PRECONDITION for a region
  // whose object has shrunk), and whether they are page-locked. Appends the region to `keep`,
  // which the request holds until it is destroyed. A region `caller` does not own is NOT_FOUND.
  struct Resolved {
    absl::Span<char> bytes;
    bool pinned = false;
    bool on_device = false;  // device addresses (a CUDA IPC region)
    int device = -1;         // with on_device: the GPU they are on
  };
  absl::StatusOr<Resolved> Resolve(const std::string& field, const SharedMemoryRef& ref,
                                   std::vector<std::shared_ptr<const SharedMemoryRegion>>* keep,
                                   const Caller& caller = {}) const;

  // The error of `request`, whose copy of the byte at `where` (in one of its operands or outputs
  // in shared memory) touched a page that vanished: FAILED_PRECONDITION naming the operand's
  // field and the region whose object has shrunk.
  static absl::Status ShrunkError(const GemmRequest& request, const void* where);

  struct Entry {
    std::shared_ptr<const SharedMemoryRegion> region;
    int64_t in_flight = 0;  // requests holding it now
  };
  // The regions `caller` owns (all for an admin), ordered by name.
  std::vector<Entry> List(const Caller& caller = {}) const;

  // Bytes of all registered regions, as counted against the cap (whole pages for host regions).
  int64_t bytes() const;

  // The most regions registered at once: the constructor's max_regions, or less when this
  // process has fewer memory mappings to spare.
  int64_t max_regions() const { return max_regions_; }

 private:
  // Reserves `desc`'s name and `counted` bytes for `caller` (the caps checked).
  absl::Status ReserveLocked(const SharedMemoryRegion::Desc& desc, int64_t counted,
                             const Caller& caller) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Returns `counted` bytes of `owner`'s and the name of region `name`.
  void UnreserveLocked(const std::string& name, const std::string& owner, int64_t counted)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Maps `desc`'s range of its host object or GPU allocation (the name and bytes are reserved).
  absl::StatusOr<std::shared_ptr<const SharedMemoryRegion>> Map(
      const SharedMemoryRegion::Desc& desc);

  Backend* const backend_;
  const std::shared_ptr<DeviceMappings> mappings_;  // held by GPU regions too
  const int64_t max_bytes_;
  const std::string key_prefix_;
  const int64_t max_regions_;
  mutable absl::Mutex mu_;
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, int64_t> owner_bytes_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<const SharedMemoryRegion>> regions_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace gemm::core
