// The heap grown into a pinned arena (see the header).
#include "server/process/pinned_heap.h"

#if GEMM_HAVE_TCMALLOC
#include <gperftools/malloc_extension.h>
#endif

#include "server/gpu/pinned_arena.h"

namespace gemm::server {
#if GEMM_HAVE_TCMALLOC
namespace {

// tcmalloc's source of memory: the arena first, then the allocator it had before.
class ArenaSysAllocator : public SysAllocator {
 public:
  ArenaSysAllocator(gpu::PinnedArena* arena, SysAllocator* fallback)
      : arena_(arena), fallback_(fallback) {}

  void* Alloc(size_t size, size_t* actual_size, size_t alignment) override {
    if (void* p = arena_->Take(size, alignment < 4096 ? 4096 : alignment)) {
      if (actual_size != nullptr) *actual_size = size;
      return p;
    }
    return fallback_->Alloc(size, actual_size, alignment);
  }

 private:
  gpu::PinnedArena* const arena_;
  SysAllocator* const fallback_;
};

}  // namespace

absl::StatusOr<int64_t> StartPinnedHeap(int64_t bytes) {
  absl::StatusOr<gpu::PinnedArena*> arena = gpu::PinnedArena::Create(bytes);
  if (!arena.ok()) return arena.status();
  MallocExtension* ext = MallocExtension::instance();
  // NOTE: never freed: tcmalloc keeps calling it for the process's lifetime.
  ext->SetSystemAllocator(new ArenaSysAllocator(*arena, ext->GetSystemAllocator()));
  return (*arena)->bytes();
}

#else

absl::StatusOr<int64_t> StartPinnedHeap(int64_t) {
  return absl::UnimplementedError("a pinned heap needs a build with tcmalloc");
}

#endif
}  // namespace gemm::server
