// DeviceContext: per-GPU pool, streams, workspaces and events (see device_context.h).
#include "server/gpu/device_context.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/gpu/cuda_util.h"

namespace gemm::gpu {

absl::StatusOr<std::shared_ptr<DeviceContext>> DeviceContext::Create(const Options& options) {
  GEMM_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(options.ordinal), "cudaSetDevice"));
  std::shared_ptr<DeviceContext> ctx(new DeviceContext(options.ordinal));
  cudaDeviceProp prop = {};
  GEMM_RETURN_IF_ERROR(
      CudaStatus(cudaGetDeviceProperties(&prop, options.ordinal), "cudaGetDeviceProperties"));
  ctx->name_ = prop.name;
  ctx->cc_major_ = prop.major;
  ctx->cc_minor_ = prop.minor;
  ctx->sms_ = prop.multiProcessorCount;
  ctx->memory_bytes_ = static_cast<int64_t>(prop.totalGlobalMem);
  // 4096 BF16 FLOP per SM per clock (Hopper and Blackwell dense tensor cores); DDR: two transfers
  // per memory clock. Fallbacks (an H100 SXM's) where an attribute is missing.
  int clock_khz = 0, mem_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, options.ordinal) != cudaSuccess ||
      cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, options.ordinal) !=
          cudaSuccess ||
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, options.ordinal) !=
          cudaSuccess) {
    (void)cudaGetLastError();
  }
  ctx->peak_flop_per_us_ = clock_khz > 0 ? 4096.0 * ctx->sms_ * clock_khz * 1e-3 : 9.9e8;
  ctx->peak_bytes_per_us_ =
      mem_khz > 0 && bus_bits > 0 ? 2.0 * mem_khz * 1e-3 * bus_bits / 8.0 : 3.35e6;

  auto pool = DevicePool::Create({.device = options.ordinal, .cap_bytes = options.pool_cap_bytes});
  if (!pool.ok()) return pool.status();
  ctx->pool_ = std::move(*pool);

  int least = 0, greatest = 0;  // numerically: greatest priority is the lowest number
  GEMM_RETURN_IF_ERROR(CudaStatus(cudaDeviceGetStreamPriorityRange(&least, &greatest),
                                  "cudaDeviceGetStreamPriorityRange"));
  GEMM_RETURN_IF_ERROR(CudaStatus(
      cudaStreamCreateWithFlags(&ctx->upload_stream_, cudaStreamNonBlocking), "cudaStreamCreate"));

  // Workspace every stream keeps: enough for cuBLASLt (the fallback) and the native kernels'
  // usual needs; a call that needs more takes it from the batch's own allocation.
  kernel::StridedBatch probe;
  probe.problem.m = probe.problem.n = probe.problem.k = 4096;
  const int64_t ws =
      static_cast<int64_t>(kernel::WorkspaceBytes(probe, kernel::KernelKind::kCublasLt));
  auto make = [&](bool high, std::vector<StreamSlot>* out) -> absl::Status {
    StreamSlot slot;
    slot.high_priority = high;
    GEMM_RETURN_IF_ERROR(CudaStatus(
        cudaStreamCreateWithPriority(&slot.stream, cudaStreamNonBlocking, high ? greatest : least),
        "cudaStreamCreateWithPriority"));
    out->push_back(std::move(slot));  // pushed first so the destructor destroys it on failure
    if (ws > 0) {
      auto p = ctx->pool_->Allocate(ws, out->back().stream);
      if (!p.ok()) return p.status();
      out->back().workspace = *p;
      out->back().workspace_bytes = ws;
    }
    return absl::OkStatus();
  };
  for (int i = 0; i < std::max(1, options.streams); ++i) {
    GEMM_RETURN_IF_ERROR(make(false, &ctx->normal_));
  }
  for (int i = 0; i < std::max(1, options.high_priority_streams); ++i) {
    GEMM_RETURN_IF_ERROR(make(true, &ctx->high_));
  }
  GEMM_RETURN_IF_ERROR(make(false, &ctx->compute_));
  GEMM_RETURN_IF_ERROR(make(true, &ctx->compute_));
  return ctx;
}

DeviceContext::~DeviceContext() {
  cudaSetDevice(ordinal_);
  cudaDeviceSynchronize();
  for (std::vector<StreamSlot>* v : {&normal_, &high_, &compute_}) {
    for (StreamSlot& s : *v) {
      if (s.workspace != nullptr && pool_ != nullptr) {
        (void)pool_->FreeAsync(s.workspace, s.stream);
        pool_->Release(s.workspace_bytes);
      }
      cudaStreamSynchronize(s.stream);
      cudaStreamDestroy(s.stream);
    }
  }
  if (upload_stream_ != nullptr) {
    cudaStreamSynchronize(upload_stream_);
    cudaStreamDestroy(upload_stream_);
  }
  {
    absl::MutexLock lock(&events_mu_);
    for (cudaEvent_t e : all_events_) cudaEventDestroy(e);
  }
  pool_.reset();
  (void)cudaGetLastError();
}

const StreamSlot& DeviceContext::NextStream(bool high_priority) {
  std::vector<StreamSlot>& slots = high_priority ? high_ : normal_;
  std::atomic<uint64_t>& next = high_priority ? next_high_ : next_normal_;
  const uint64_t first = next.fetch_add(1, std::memory_order_relaxed);
  for (size_t i = 0; i < slots.size(); ++i) {
    StreamSlot& s = slots[(first + i) % slots.size()];
    // A hint only: another thread may take it right after; the caller's lock decides.
    if (s.enqueue_mu->TryLock()) {
      s.enqueue_mu->Unlock();
      return s;
    }
  }
  return slots[first % slots.size()];
}

absl::StatusOr<cudaEvent_t> DeviceContext::GetEvent() {
  {
    absl::MutexLock lock(&events_mu_);
    if (!free_events_.empty()) {
      cudaEvent_t e = free_events_.back();
      free_events_.pop_back();
      return e;
    }
  }
  cudaEvent_t e = nullptr;
  GEMM_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(ordinal_), "cudaSetDevice"));
  GEMM_RETURN_IF_ERROR(CudaStatus(cudaEventCreate(&e), "cudaEventCreate"));
  absl::MutexLock lock(&events_mu_);
  all_events_.push_back(e);
  return e;
}

void DeviceContext::PutEvent(cudaEvent_t event) {
  if (event == nullptr) return;
  absl::MutexLock lock(&events_mu_);
  free_events_.push_back(event);
}

}  // namespace gemm::gpu
