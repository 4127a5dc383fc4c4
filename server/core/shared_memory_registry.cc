// Shared-memory region registry.
#include "server/core/shared_memory_registry.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "server/core/validation.h"

namespace gemm::core {
namespace {

constexpr size_t kMaxNameBytes = 256;

// Memory mappings this process may still make (vm.max_map_count less those in use), or -1 when
// /proc does not say.
int64_t MappingsLeft() {
  std::ifstream limit("/proc/sys/vm/max_map_count");
  int64_t max_maps = -1;
  if (!(limit >> max_maps)) return -1;
  std::ifstream maps("/proc/self/maps");
  if (!maps) return -1;
  int64_t used = 0;
  for (std::string line; std::getline(maps, line);) ++used;
  return std::max<int64_t>(0, max_maps - used);
}

// `wanted`, or half the mappings left when that is less (the rest of the process needs some:
// thread stacks, allocator arenas, staging).
int64_t BoundedMaxRegions(int64_t wanted) {
  wanted = std::max<int64_t>(0, wanted);
  const int64_t left = MappingsLeft();
  if (left < 0 || wanted <= left / 2) return wanted;
  GEMM_LOG(WARNING) << "at most " << left / 2 << " shared-memory regions, not " << wanted
                    << ": this process has " << left
                    << " memory mappings left under vm.max_map_count, and keeps half of them";
  return left / 2;
}

// Bytes `desc` counts against the byte cap: a host region's whole mapped pages, a GPU region's
// range. Saturates at the int64 maximum (more than any cap leaves room for).
int64_t CountedBytes(const SharedMemoryRegion::Desc& desc) {
  if (!desc.cuda_ipc_handle.empty()) return desc.byte_size;
  static const int64_t page = sysconf(_SC_PAGESIZE);
  const int64_t lead = desc.offset % page;  // bytes of the first page before the range
  if (desc.byte_size > std::numeric_limits<int64_t>::max() - lead - page) {
    return std::numeric_limits<int64_t>::max();
  }
  return (lead + desc.byte_size + page - 1) / page * page;
}

// Why `field` may not use `region` any more: its object shrank.
absl::Status Shrunk(const std::string& field, const SharedMemoryRegion& region) {
  const SharedMemoryRegion::Desc& d = region.desc();
  return absl::FailedPreconditionError(absl::StrCat(
      field, ": shared-memory region '", d.name, "' is no longer backed: its object ", d.key,
      " was shrunk below offset ", d.offset, " + byte_size ", d.byte_size,
      " after registration (unregister the region, and register it again once the object has "
      "its size)"));
}

// Whether [data, data + size) holds `p`.
bool Holds(const char* data, size_t size, const char* p) { return p >= data && p < data + size; }

// The wire field of the operand or output of `request` that holds `p` ("group.problems[2].a_shm"),
// or "shared memory" when none does.
std::string OperandField(const GemmRequest& request, const char* p) {
  for (size_t i = 0; i < request.problems.size(); ++i) {
    const Problem& q = request.problems[i];
    // Shared memory is always one range (pieces are a message's buffers).
    for (const auto& [name, bytes] : {std::pair<const char*, OperandBytes>{"a", q.a},
                                      {"b", q.b},
                                      {"c", q.c},
                                      {"d", {q.d_dest.data(), q.d_dest.size()}}}) {
      if (bytes.contiguous() && Holds(bytes.data(), bytes.size(), p)) {
        return absl::StrCat(ProblemField(request.kind, i), ".", name, "_shm");
      }
    }
  }
  return "shared memory";
}

}  // namespace

SharedMemoryRegion::SharedMemoryRegion(Desc desc, std::unique_ptr<PosixShm> map, Backend* backend,
                                       bool pinned)
    : desc_(std::move(desc)), map_(std::move(map)), backend_(backend), pinned_(pinned) {}

SharedMemoryRegion::SharedMemoryRegion(Desc desc, char* device_base,
                                       std::shared_ptr<DeviceMappings> mappings)
    : desc_(std::move(desc)), device_base_(device_base), mappings_(std::move(mappings)) {}

SharedMemoryRegion::~SharedMemoryRegion() {
  if (pinned_) backend_->UnpinHostMemory(map_->map_base());
  if (device_base_ != nullptr) mappings_->Close(device_base_);
}

SharedMemoryRegistry::SharedMemoryRegistry(Backend* backend, int64_t max_bytes,
                                           std::string key_prefix, int64_t max_regions)
    : backend_(backend),
      mappings_(std::make_shared<DeviceMappings>(backend)),
      max_bytes_(max_bytes),
      key_prefix_(std::move(key_prefix)),
      max_regions_(BoundedMaxRegions(max_regions)) {}

absl::Status SharedMemoryRegistry::ReserveLocked(const SharedMemoryRegion::Desc& desc,
                                                 int64_t counted, const Caller& caller) {
  if (regions_.contains(desc.name)) {
    return absl::AlreadyExistsError(
        absl::StrCat("name: a shared-memory region '", desc.name, "' is already registered"));
  }
  if (static_cast<int64_t>(regions_.size()) >= max_regions_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "shared-memory regions: ", regions_.size(),
        " registered, the most this server takes (--max_shared_memory_regions); unregister "
        "one first"));
  }
  if (counted > max_bytes_ - bytes_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("region of ", desc.byte_size, " bytes (", counted,
                     " counted: the whole pages it maps) does not fit: ", bytes_, " of ",
                     max_bytes_, " shared-memory bytes registered (--max_shared_memory_bytes)"));
  }
  const auto owned = owner_bytes_.find(caller.name);
  const int64_t held = owned == owner_bytes_.end() ? 0 : owned->second;
  const int64_t cap = CapOrMax(caller.limits.max_shared_memory_bytes);
  if (counted > cap - held) {
    return absl::ResourceExhaustedError(
        absl::StrCat("region of ", counted, " counted bytes does not fit: caller '", caller.name,
                     "' holds ", held, " of its ", cap,
                     " shared-memory bytes (max_shared_memory_bytes in the tokens file)"));
  }
  bytes_ += counted;
  owner_bytes_[caller.name] += counted;
  regions_[desc.name] = nullptr;  // placeholder: the name is taken while we map
  return absl::OkStatus();
}

void SharedMemoryRegistry::UnreserveLocked(const std::string& name, const std::string& owner,
                                           int64_t counted) {
  bytes_ -= counted;
  regions_.erase(name);
  auto it = owner_bytes_.find(owner);
  if (it != owner_bytes_.end() && (it->second -= counted) <= 0) owner_bytes_.erase(it);
}

absl::StatusOr<std::shared_ptr<const SharedMemoryRegion>> SharedMemoryRegistry::Register(
    SharedMemoryRegion::Desc desc, const Caller& caller) {
  if (max_bytes_ <= 0) {
    return absl::FailedPreconditionError(
        "shared-memory registration is turned off on this server (--max_shared_memory_bytes=0)");
  }
  if (desc.name.empty() || desc.name.size() > kMaxNameBytes) {
    return absl::InvalidArgumentError("name: must be 1-256 characters");
  }
  const bool device = !desc.cuda_ipc_handle.empty();
  if (device) {
    if (!desc.key.empty()) {
      return absl::InvalidArgumentError("key: set key or cuda_ipc_handle, not both");
    }
  } else if (auto s = PosixShm::CheckKey(desc.key); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("key: ", s.message()));
  }
  if (!device && !absl::StartsWith(desc.key, key_prefix_)) {
    return absl::PermissionDeniedError(absl::StrCat("key: '", desc.key, "' does not start with '",
                                                    key_prefix_, "' (--shared_memory_key_prefix)"));
  }
  if (desc.offset < 0 || desc.byte_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("offset must be >= 0 and byte_size >= 1, got offset=", desc.offset,
                     " byte_size=", desc.byte_size));
  }
  const int64_t counted = CountedBytes(desc);
  desc.owner = caller.name;
  {
    // Reserve the name, a place and the bytes first; mapping and pinning run outside the lock.
    absl::MutexLock lock(&mu_);
    if (absl::Status s = ReserveLocked(desc, counted, caller); !s.ok()) return s;
  }
  auto region = Map(desc);
  if (!region.ok()) {
    absl::MutexLock lock(&mu_);
    UnreserveLocked(desc.name, desc.owner, counted);
    return region.status();
  }
  absl::MutexLock lock(&mu_);
  regions_[desc.name] = *region;
  return *region;
}

absl::StatusOr<std::shared_ptr<const SharedMemoryRegion>> SharedMemoryRegistry::Map(
    const SharedMemoryRegion::Desc& desc) {
  if (!desc.cuda_ipc_handle.empty()) {
    // One mapping per allocation, however many regions name it (see device_mappings.h).
    absl::StatusOr<Backend::DeviceMemory> mem = mappings_->Open(desc.cuda_ipc_handle, desc.device);
    if (!mem.ok()) {
      return absl::Status(mem.status().code(),
                          absl::StrCat("cuda_ipc_handle: ", mem.status().message()));
    }
    // A range past the allocation would make device copies fault (a sticky error of the whole
    // GPU context), so it is refused here. NOTE: when the driver cannot tell the size, the
    // client vouches for the range, as it does for its host objects.
    if (mem->bytes >= 0 && desc.offset > mem->bytes - desc.byte_size) {
      mappings_->Close(mem->base);
      return absl::InvalidArgumentError(
          absl::StrCat("offset ", desc.offset, " + byte_size ", desc.byte_size,
                       " runs past the end of the exported allocation (", mem->bytes, " bytes)"));
    }
    return std::make_shared<const SharedMemoryRegion>(desc, mem->base, mappings_);
  }
  auto map = PosixShm::Open(desc.key, desc.offset, desc.byte_size);
  if (!map.ok()) {
    return absl::Status(map.status().code(), absl::StrCat("key: ", map.status().message()));
  }
  // NOTE: the page-aligned mapping, not just the range (which may start mid-page).
  absl::Status pin = backend_->PinHostMemory((*map)->map_base(), (*map)->map_bytes());
  if (!pin.ok() && !absl::IsUnimplemented(pin)) {
    GEMM_LOG(WARNING) << "shared-memory region '" << desc.name
                      << "' is not page-locked, its copies go through staging: " << pin;
  }
  return std::make_shared<const SharedMemoryRegion>(desc, std::move(*map), backend_, pin.ok());
}

absl::Status SharedMemoryRegistry::Unregister(const std::string& name, const Caller& caller) {
  std::shared_ptr<const SharedMemoryRegion> r;
  {
    absl::MutexLock lock(&mu_);
    auto it = regions_.find(name);
    if (it == regions_.end() || it->second == nullptr || !caller.Owns(it->second->desc().owner)) {
      return absl::NotFoundError(absl::StrCat("name: no shared-memory region '", name, "'",
                                              caller.admin ? "" : " of this caller"));
    }
    r = std::move(it->second);
    UnreserveLocked(name, r->desc().owner, CountedBytes(r->desc()));
  }
  return absl::OkStatus();  // `r` drops here; requests keep their own references
}

absl::StatusOr<SharedMemoryRegistry::Resolved> SharedMemoryRegistry::Resolve(
    const std::string& field, const SharedMemoryRef& ref,
    std::vector<std::shared_ptr<const SharedMemoryRegion>>* keep, const Caller& caller) const {
  std::shared_ptr<const SharedMemoryRegion> r;
  {
    absl::MutexLock lock(&mu_);
    auto it = regions_.find(ref.region);
    if (it != regions_.end() && it->second != nullptr && caller.Owns(it->second->desc().owner)) {
      r = it->second;
    }
  }
  if (r == nullptr) {
    if (ref.region.size() > kMaxNameBytes) {
      return absl::NotFoundError(absl::StrCat(field, ".region: no shared-memory region has a ",
                                              ref.region.size(), "-byte name (at most ",
                                              kMaxNameBytes, ")"));
    }
    return absl::NotFoundError(absl::StrCat(field, ".region: no shared-memory region '", ref.region,
                                            "' (RegisterSharedMemory)"));
  }
  const int64_t size = r->desc().byte_size;
  if (ref.offset < 0 || ref.byte_size < 1 || ref.offset > size ||
      ref.byte_size > size - ref.offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": offset ", ref.offset, " + byte_size ", ref.byte_size,
        " is not a non-empty range inside region '", ref.region, "' (", size, " bytes)"));
  }
  if (!r->Backed()) return Shrunk(field, *r);
  Resolved out{absl::Span<char>(r->data() + ref.offset, static_cast<size_t>(ref.byte_size)),
               r->pinned(), r->on_device(), r->on_device() ? r->desc().device : -1};
  keep->push_back(std::move(r));
  return out;
}

absl::Status SharedMemoryRegistry::ShrunkError(const GemmRequest& request, const void* where) {
  const char* p = static_cast<const char*>(where);
  const std::string field = OperandField(request, p);
  for (const auto& r : request.regions) {
    if (!r->on_device() && Holds(r->data(), r->desc().byte_size, p)) return Shrunk(field, *r);
  }
  return absl::FailedPreconditionError(
      absl::StrCat(field,
                   ": a page of its shared-memory region vanished while the server copied it (the "
                   "region's object was shrunk after registration)"));
}

std::vector<SharedMemoryRegistry::Entry> SharedMemoryRegistry::List(const Caller& caller) const {
  std::vector<Entry> out;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, r] : regions_) {
      if (r != nullptr && caller.Owns(r->desc().owner)) out.push_back({r, r.use_count() - 2});
    }
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) {
    return a.region->desc().name < b.region->desc().name;
  });
  return out;
}

int64_t SharedMemoryRegistry::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

}  // namespace gemm::core
