// --shm region: layout, creation, registration, D slots.
#include "client/loadgen/operand_region.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace gemm::loadgen {
namespace {

constexpr int64_t kAlign = 4096;

int64_t AlignUp(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

}  // namespace

absl::StatusOr<std::unique_ptr<OperandRegion>> OperandRegion::Create(
    const Options& options, const std::vector<ShapeOperands>& shapes,
    const std::vector<Target>& targets) {
  std::vector<Layout> layout;
  int64_t size = 0;
  auto take = [&size](int64_t bytes) {
    const int64_t off = size;
    size += AlignUp(bytes);
    return off;
  };
  for (const ShapeOperands& s : shapes) {
    Layout l;
    l.a_bytes = static_cast<int64_t>(s.a.size());
    l.a_off = take(l.a_bytes);
    if (options.inline_b) {
      l.b_bytes = static_cast<int64_t>(s.b.size());
      l.b_off = take(l.b_bytes);
    }
    l.d_bytes = s.response_bytes;
    l.d_stride = AlignUp(l.d_bytes);
    l.d_off = take(l.d_stride * std::max(1, options.output_slots));
    layout.push_back(l);
  }
  std::unique_ptr<OperandRegion> region(
      new OperandRegion(options, std::move(layout), size, targets));
  if (absl::Status s = region->Fill(shapes); !s.ok()) return s;
  if (absl::Status s = region->Register(); !s.ok()) return s;  // ~OperandRegion unregisters
  return region;
}

OperandRegion::OperandRegion(const Options& options, std::vector<Layout> layout, int64_t size,
                             std::vector<Target> targets)
    : options_(options),
      layout_(std::move(layout)),
      size_(size),
      slots_(std::max(1, options.output_slots)),
      targets_(std::move(targets)),
      name_(absl::StrCat("gemm_loadgen_", getpid(), "_", options.seed)) {
  for (int i = slots_ - 1; i >= 0; --i) free_slots_.push_back(i);
}

OperandRegion::~OperandRegion() { Release(); }

absl::Status OperandRegion::Fill(const std::vector<ShapeOperands>& shapes) {
  if (options_.device >= 0) {
    auto region = DeviceRegion::Create(options_.device, size_);
    if (!region.ok()) return region.status();
    device_ = *std::move(region);
  } else {
    auto shm = PosixShm::Create(absl::StrCat("/", name_), size_);
    if (!shm.ok()) return shm.status();
    host_ = *std::move(shm);
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Layout& l = layout_[i];
    const ShapeOperands& s = shapes[i];
    if (device_ != nullptr) {
      absl::Status up = device_->Upload(l.a_off, s.a.data(), l.a_bytes);
      if (up.ok() && options_.inline_b) up = device_->Upload(l.b_off, s.b.data(), l.b_bytes);
      if (!up.ok()) return up;
    } else {
      std::memcpy(host_->data() + l.a_off, s.a.data(), l.a_bytes);
      if (options_.inline_b) std::memcpy(host_->data() + l.b_off, s.b.data(), l.b_bytes);
    }
  }
  return absl::OkStatus();
}

absl::Status OperandRegion::Register() {
  for (int t = 0; t < static_cast<int>(targets_.size()); ++t) {
    client::GemmClient& c = *targets_[t].client;
    auto info = device_ != nullptr ? c.RegisterDeviceMemory(name_, device_->ipc_handle(),
                                                            options_.device, 0, size_)
                                   : c.RegisterSharedMemory(name_, host_->key(), 0, size_);
    if (!info.ok()) {
      return absl::Status(
          info.status().code(),
          absl::StrCat("registering shared memory on ", targets_[t].name,
                       " failed (--shm needs the server on this host): ", info.status().message()));
    }
    registered_.push_back(t);
    if (device_ == nullptr && !info->pinned()) {
      std::fprintf(stderr, "gemm_loadgen: %s did not page-lock the region (copies are staged)\n",
                   targets_[t].name.c_str());
    }
  }
  return absl::OkStatus();
}

void OperandRegion::Release() {
  for (int t : registered_) {
    const absl::Status status = targets_[t].client->UnregisterSharedMemory(name_);
    if (!status.ok()) {
      std::fprintf(stderr, "gemm_loadgen: unregistering shared memory on %s failed: %s\n",
                   targets_[t].name.c_str(), status.ToString().c_str());
    }
  }
  registered_.clear();
  host_.reset();  // unlinks the object
  device_.reset();
}

v1::SharedMemoryRef OperandRegion::Ref(int64_t offset, int64_t bytes) const {
  v1::SharedMemoryRef r;
  r.set_region(name_);
  r.set_offset(offset);
  r.set_byte_size(bytes);
  return r;
}

v1::SharedMemoryRef OperandRegion::RefA(int shape) const {
  return Ref(layout_[shape].a_off, layout_[shape].a_bytes);
}

v1::SharedMemoryRef OperandRegion::RefB(int shape) const {
  return Ref(layout_[shape].b_off, layout_[shape].b_bytes);
}

v1::SharedMemoryRef OperandRegion::RefD(int shape, int slot) const {
  return Ref(DOffset(shape, slot), layout_[shape].d_bytes);
}

int64_t OperandRegion::DOffset(int shape, int slot) const {
  const Layout& l = layout_[shape];
  return l.d_off + std::max(0, slot) * l.d_stride;
}

int OperandRegion::TakeSlot() {
  std::lock_guard<std::mutex> l(slot_mu_);
  if (free_slots_.empty()) return -1;  // more in flight than slots: share slot 0
  const int slot = free_slots_.back();
  free_slots_.pop_back();
  return slot;
}

void OperandRegion::ReturnSlot(int slot) {
  if (slot < 0) return;
  std::lock_guard<std::mutex> l(slot_mu_);
  free_slots_.push_back(slot);
}

absl::string_view OperandRegion::Output(int shape, int slot) const {
  const int64_t off = DOffset(shape, slot);
  const int64_t bytes = layout_[shape].d_bytes;
  if (device_ != nullptr) {
    // NOTE: copied out for the few responses verified; the size check needs no bytes.
    thread_local std::string copy;
    if (!device_->Download(off, bytes, &copy).ok()) return {};
    return copy;
  }
  return absl::string_view(host_->data() + off, bytes);
}

void OperandRegion::Poison(int shape, int slot) {
  if (slot < 0) return;  // a shared slot: another request in flight may be writing it
  const int64_t off = DOffset(shape, slot);
  const int64_t bytes = layout_[shape].d_bytes;
  if (device_ != nullptr) {
    (void)device_->Fill(off, bytes, 0xFF);  // a failure shows as a mismatch
  } else {
    std::memset(host_->data() + off, 0xFF, bytes);
  }
}

}  // namespace gemm::loadgen
