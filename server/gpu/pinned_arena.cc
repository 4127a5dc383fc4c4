// PinnedArena: the locked, CUDA-registered range the heap grows into (see the header).
#include "server/gpu/pinned_arena.h"

#include <cuda_runtime.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "server/gpu/cuda_util.h"

namespace gemm::gpu {
namespace {

constexpr int64_t kRound = int64_t{2} << 20;
std::atomic<PinnedArena*> g_arena{nullptr};

}  // namespace

absl::StatusOr<PinnedArena*> PinnedArena::Create(int64_t bytes) {
  if (bytes < 1 || bytes > (int64_t{1} << 40)) {
    return absl::InvalidArgumentError(absl::StrCat("pinned heap of ", bytes, " bytes"));
  }
  if (g_arena.load() != nullptr) {
    return absl::FailedPreconditionError("the process already has a pinned heap");
  }
  const size_t size = static_cast<size_t>((bytes + kRound - 1) / kRound * kRound);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("pinned heap: mmap of ", size, " bytes failed: ", std::strerror(errno)));
  }
  if (mlock(p, size) != 0) {
    const int err = errno;
    munmap(p, size);
    return absl::FailedPreconditionError(
        absl::StrCat("pinned heap: locking ", size >> 20, " MiB failed (", std::strerror(err),
                     "); raise the locked-memory limit (ulimit -l) or grant CAP_IPC_LOCK"));
  }
  // The safety this rests on, checked before the GPU maps anything: dropping a locked page fails.
  if (madvise(p, 4096, MADV_DONTNEED) == 0) {
    munmap(p, size);
    return absl::FailedPreconditionError("pinned heap: this kernel drops locked pages");
  }
  if (absl::Status st =
          CudaStatus(cudaHostRegister(p, size, cudaHostRegisterPortable | cudaHostRegisterMapped),
                     "cudaHostRegister");
      !st.ok()) {
    munmap(p, size);
    return st;
  }
  // Kernels read the arena at its host addresses (device_copy.h).
  void* on_device = nullptr;
  if (cudaHostGetDevicePointer(&on_device, p, 0) != cudaSuccess || on_device != p) {
    cudaHostUnregister(p);
    munmap(p, size);
    return absl::FailedPreconditionError(
        "pinned heap: the GPU does not address registered memory at its host address");
  }
  auto* arena = new PinnedArena(static_cast<char*>(p), static_cast<char*>(p) + size);
  g_arena.store(arena);
  return arena;
}

void* PinnedArena::Take(size_t size, size_t alignment) {
  char* cur = next_.load(std::memory_order_relaxed);
  for (;;) {
    const uintptr_t at = (reinterpret_cast<uintptr_t>(cur) + alignment - 1) & ~(alignment - 1);
    if (at > reinterpret_cast<uintptr_t>(end_) || size > reinterpret_cast<uintptr_t>(end_) - at) {
      return nullptr;
    }
    char* const next = reinterpret_cast<char*>(at + size);
    if (next_.compare_exchange_weak(cur, next, std::memory_order_relaxed)) {
      return reinterpret_cast<void*>(at);
    }
  }
}

bool PinnedArena::Holds(const void* p, size_t n) {
  const PinnedArena* a = g_arena.load(std::memory_order_acquire);
  if (a == nullptr) return false;
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  const uintptr_t base = reinterpret_cast<uintptr_t>(a->base_);
  const uintptr_t end = reinterpret_cast<uintptr_t>(a->end_);
  return at >= base && at <= end && n <= end - at;
}

const PinnedArena* PinnedArena::Get() { return g_arena.load(std::memory_order_acquire); }

int64_t PinnedArena::taken_bytes() const {
  return static_cast<int64_t>(next_.load(std::memory_order_relaxed) - base_);
}

}  // namespace gemm::gpu
