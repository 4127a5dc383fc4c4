// StagingPool: pinned host slabs with a first-fit free list (see staging_pool.h).
#include "server/gpu/staging_pool.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/gpu/cuda_util.h"

namespace gemm::gpu {

absl::StatusOr<char*> StagingPool::AllocateSlab(int64_t bytes, bool page_locked) {
  void* p = nullptr;
  if (page_locked) {
    GEMM_RETURN_IF_ERROR(
        CudaStatus(cudaHostAlloc(&p, bytes, cudaHostAllocPortable), "cudaHostAlloc"));
    return static_cast<char*>(p);
  }
  p = std::aligned_alloc(kAlign, static_cast<size_t>(bytes));
  if (p == nullptr) return absl::ResourceExhaustedError("staging slab: out of host memory");
  return static_cast<char*>(p);
}

absl::StatusOr<std::unique_ptr<StagingPool>> StagingPool::Create(const Options& options) {
  const int64_t total = std::max<int64_t>(options.total_bytes, kAlign);
  const int64_t slab =
      RoundUp(std::min(std::max<int64_t>(options.slab_bytes, kAlign), total), kAlign);
  const int64_t count = std::max<int64_t>(1, total / slab);
  std::vector<Slab> slabs;
  for (int64_t i = 0; i < count; ++i) {
    absl::StatusOr<char*> base = AllocateSlab(slab, options.page_locked);
    if (!base.ok()) {
      for (Slab& s : slabs) FreeSlab(s.base, options.page_locked);
      return base.status();
    }
    Slab s;
    s.base = *base;
    s.free[0] = slab;
    slabs.push_back(std::move(s));
  }
  return std::unique_ptr<StagingPool>(new StagingPool(slab, options.page_locked, std::move(slabs)));
}

StagingPool::~StagingPool() {
  absl::MutexLock lock(&mu_);
  for (Slab& s : slabs_) FreeSlab(s.base, page_locked_);
}

void StagingPool::FreeSlab(char* base, bool page_locked) {
  if (page_locked) {
    (void)cudaFreeHost(base);
  } else {
    std::free(base);
  }
}

bool StagingPool::TryAllocateLocked(int64_t bytes, StagingBlock* out) {
  for (size_t i = 0; i < slabs_.size(); ++i) {
    Slab& s = slabs_[i];
    for (auto it = s.free.begin(); it != s.free.end(); ++it) {
      if (it->second < bytes) continue;
      const int64_t offset = it->first;
      const int64_t rest = it->second - bytes;
      s.free.erase(it);
      if (rest > 0) s.free[offset + bytes] = rest;
      *out = StagingBlock{s.base + offset, static_cast<int>(i), offset, bytes};
      used_ += bytes;
      return true;
    }
  }
  return false;
}

absl::Status StagingPool::RoundAndCheck(int64_t* bytes) const {
  *bytes = RoundUp(std::max<int64_t>(*bytes, 1), kAlign);
  if (*bytes > slab_bytes_) {
    return absl::InvalidArgumentError(
        absl::StrCat("staging block of ", *bytes, " bytes exceeds the slab size ", slab_bytes_));
  }
  return absl::OkStatus();
}

absl::StatusOr<StagingBlock> StagingPool::Allocate(int64_t bytes) {
  if (absl::Status st = RoundAndCheck(&bytes); !st.ok()) return st;
  absl::MutexLock lock(&mu_);
  StagingBlock block;
  while (!TryAllocateLocked(bytes, &block)) freed_.Wait(&mu_);
  return block;
}

absl::StatusOr<StagingBlock> StagingPool::TryAllocate(int64_t bytes) {
  if (absl::Status st = RoundAndCheck(&bytes); !st.ok()) return st;
  absl::MutexLock lock(&mu_);
  StagingBlock block;
  if (!TryAllocateLocked(bytes, &block)) {
    return absl::ResourceExhaustedError("pinned staging memory is in use");
  }
  return block;
}

void StagingPool::Free(const StagingBlock& block) {
  if (block.ptr == nullptr) return;
  absl::MutexLock lock(&mu_);
  Slab& s = slabs_[block.slab];
  int64_t offset = block.offset;
  int64_t size = block.bytes;
  auto next = s.free.lower_bound(offset);
  if (next != s.free.end() && offset + size == next->first) {  // merge with the following block
    size += next->second;
    next = s.free.erase(next);
  }
  if (next != s.free.begin()) {  // merge with the preceding block
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += size;
      used_ -= block.bytes;
      freed_.SignalAll();
      return;
    }
  }
  s.free[offset] = size;
  used_ -= block.bytes;
  freed_.SignalAll();
}

int64_t StagingPool::used_bytes() const {
  absl::MutexLock lock(&mu_);
  return used_;
}

}  // namespace gemm::gpu
