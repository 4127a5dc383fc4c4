// CudaBackend: devices, self-test, executors and resident-matrix placement behind the
// core::Backend seam (see cuda_backend.h).
#include "server/gpu/cuda_backend.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "gemm/kernel.h"
#include "server/core/validation.h"
#include "server/gpu/cuda_util.h"
#include "server/gpu/device_context.h"
#include "server/gpu/executor.h"
#include "server/gpu/host_copier.h"
#include "server/gpu/pinned_answers.h"
#include "server/gpu/pinned_arena.h"
#include "server/gpu/qualification.h"
#include "server/gpu/request_pinning.h"
#include "server/gpu/resident.h"
#include "server/gpu/staging_pool.h"

namespace gemm::gpu {
namespace {

class CudaBackend final : public core::Backend {
 public:
  // `request_pool`: pinned memory for requests' A (null: none).
  CudaBackend(const CudaBackendOptions& options, std::shared_ptr<StagingPool> staging,
              std::shared_ptr<StagingPool> request_pool,
              std::vector<std::shared_ptr<DeviceContext>> devices)
      : options_(options),
        staging_(std::move(staging)),
        answers_(PinnedAnswers::Create(staging_,
                                       PinnedAnswerLimit::MaxBytesOf(options.pinned_answer_fraction,
                                                                     staging_->total_bytes()))),
        copier_(std::make_unique<HostCopier>(options.host_copy_threads,
                                             static_cast<size_t>(options.host_copy_chunk_bytes))),
        devices_(std::move(devices)) {
    if (request_pool != nullptr) {
      const int64_t bytes = request_pool->total_bytes();
      requests_ = std::make_unique<RequestPinning>(std::move(request_pool), bytes,
                                                   options.host_copy_chunk_bytes);
    }
    for (const auto& d : devices_) {
      executors_.push_back(std::make_unique<Executor>(d, staging_.get(), answers_.get(),
                                                      copier_.get(), options.executor));
    }
  }

  ~CudaBackend() override {
    Stop();
    uploader_.reset();  // runs queued uploads first
  }

  std::string Name() const override { return "cuda"; }

  core::BackendDescription Describe() const override {
    core::BackendDescription d;
    d.name = "cuda";
    std::map<std::string, core::KernelDescription> kernels;
    for (const auto& dev : devices_) {
      core::DeviceDescription dd;
      dd.ordinal = dev->ordinal();
      dd.name = dev->name();
      dd.cc_major = dev->cc_major();
      dd.cc_minor = dev->cc_minor();
      dd.multiprocessors = dev->multiprocessors();
      dd.memory_bytes = dev->memory_bytes();
      dd.pool_capacity_bytes = dev->pool().cap_bytes();
      dd.pool_used_bytes = dev->pool().used_bytes();
      dd.kernel = kernel::KernelName(dev->serving());
      d.devices.push_back(dd);
      const std::string sel = kernel::KernelName(dev->selected());
      auto& k = kernels[sel];
      const bool first = k.name.empty();
      k.name = sel;
      k.usable = first ? dev->selected_usable() : (k.usable && dev->selected_usable());
      k.detail = absl::StrCat(k.detail, k.detail.empty() ? "" : "; ", "device ", dev->ordinal(),
                              ": ", dev->self_test_detail());
      for (const core::KernelDescription& v : dev->variant_verdicts()) {
        auto& kv = kernels[v.name];
        const bool first_v = kv.name.empty();
        kv.name = v.name;
        kv.usable = first_v ? v.usable : (kv.usable && v.usable);
        kv.detail = absl::StrCat(kv.detail, kv.detail.empty() ? "" : "; ", "device ",
                                 dev->ordinal(), ": ", v.detail);
        if (!v.usable && kv.reason.empty()) kv.reason = v.reason;
      }
    }
    const std::string lt = kernel::KernelName(kernel::KernelKind::kCublasLt);
    if (!kernels.contains(lt)) {
      kernels[lt] = {lt, true, "cuBLASLt reference and fallback"};
    }
    for (auto& [name, k] : kernels) d.kernels.push_back(k);
    const PinnedAnswerLimit::Stats answers = answers_->stats();
    const PinnedAnswerLimit::Stats requests =
        requests_ != nullptr ? requests_->stats() : PinnedAnswerLimit::Stats{};
    d.staging = {.used_bytes = staging_->used_bytes(),
                 .answer_bytes = answers.held_bytes,
                 .answer_max_bytes = answers.max_bytes,
                 .pinned_answers = answers.pinned_answers,
                 .copied_answers = answers.copied_answers,
                 .request_bytes = requests.held_bytes,
                 .request_max_bytes = requests.max_bytes,
                 .received_pinned_operands = received_pinned_.load(std::memory_order_relaxed)};
    if (const PinnedArena* heap = PinnedArena::Get(); heap != nullptr) {
      d.staging.heap_bytes = heap->bytes();
      d.staging.heap_taken_bytes = heap->taken_bytes();
    }
    return d;
  }

  std::vector<int> Devices() const override {
    std::vector<int> out;
    for (const auto& d : devices_) out.push_back(d->ordinal());
    return out;
  }

  absl::Status Start(core::WorkSource* source) override {
    absl::MutexLock lock(&mu_);
    if (started_) return absl::FailedPreconditionError("cuda backend already started");
    started_ = true;
    for (auto& e : executors_) e->Start(source);
    return absl::OkStatus();
  }

  void Stop() override {
    absl::MutexLock lock(&mu_);
    if (!started_ || stopped_) return;
    stopped_ = true;
    for (auto& e : executors_) e->Join();
  }

  absl::StatusOr<std::unique_ptr<core::MatrixUpload>> BeginUpload(
      core::ResidentMatrix::Desc desc) override {
    if (auto s = core::CheckMatrixDevices(desc.devices, Devices()); !s.ok()) return s;
    std::vector<std::shared_ptr<DeviceContext>> targets;
    const bool explicit_devices =
        !desc.devices.empty() &&
        std::none_of(desc.devices.begin(), desc.devices.end(), [](int d) { return d < 0; });
    if (explicit_devices) {
      for (int want : desc.devices) {
        auto it = std::find_if(devices_.begin(), devices_.end(),
                               [want](const auto& d) { return d->ordinal() == want; });
        if (it == devices_.end()) {
          return absl::InvalidArgumentError(absl::StrCat("no CUDA device ", want));
        }
        targets.push_back(*it);
      }
    } else if (options_.replicate_resident) {
      targets = devices_;
    } else {
      // Least loaded: most pool bytes free.
      auto it =
          std::max_element(devices_.begin(), devices_.end(), [](const auto& x, const auto& y) {
            return x->pool().cap_bytes() - x->pool().used_bytes() <
                   y->pool().cap_bytes() - y->pool().used_bytes();
          });
      targets.push_back(*it);
    }
    return BeginCudaUpload(std::move(desc), std::move(targets), uploader_.get());
  }

  absl::Status PinHostMemory(void* data, size_t bytes) override {
    // Portable: every GPU's copies use it directly.
    if (devices_.empty()) return absl::FailedPreconditionError("no CUDA device");
    GEMM_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(devices_[0]->ordinal()), "cudaSetDevice"));
    return CudaStatus(cudaHostRegister(data, bytes, cudaHostRegisterPortable), "cudaHostRegister");
  }

  absl::StatusOr<core::Backend::DeviceMemory> OpenDeviceMemory(const std::string& ipc_handle,
                                                               int device) override {
    if (ipc_handle.size() != sizeof(cudaIpcMemHandle_t)) {
      return absl::InvalidArgumentError(absl::StrCat("has ", ipc_handle.size(),
                                                     " bytes, a cudaIpcMemHandle_t has ",
                                                     sizeof(cudaIpcMemHandle_t)));
    }
    auto it = std::find_if(devices_.begin(), devices_.end(),
                           [&](const auto& d) { return d->ordinal() == device; });
    if (it == devices_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", device, " is not one of this server's GPUs"));
    }
    GEMM_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(device), "cudaSetDevice"));
    cudaIpcMemHandle_t handle;
    std::memcpy(&handle, ipc_handle.data(), sizeof(handle));
    void* base = nullptr;
    const cudaError_t e = cudaIpcOpenMemHandle(&base, handle, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return absl::InvalidArgumentError(
          absl::StrCat("cudaIpcOpenMemHandle on device ", device, ": ", cudaGetErrorString(e),
                       " (a handle from cudaIpcGetMemHandle of another process's cudaMalloc)"));
    }
    return core::Backend::DeviceMemory{static_cast<char*>(base), AllocationBytes(base)};
  }

  // The size of the allocation holding `ptr` (cuMemGetAddressRange, through the runtime's driver
  // entry point: no link to libcuda), or -1 if the driver does not say.
  static int64_t AllocationBytes(void* ptr) {
    static PFN_cuMemGetAddressRange_v3020 fn = [] {
      void* p = nullptr;
      cudaDriverEntryPointQueryResult q;
      const cudaError_t e =
          cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &p, 3020, cudaEnableDefault, &q);
      if (e != cudaSuccess || q != cudaDriverEntryPointSuccess) {
        (void)cudaGetLastError();
        GEMM_LOG(WARNING) << "cuMemGetAddressRange not found: CUDA IPC ranges are not checked";
        return static_cast<PFN_cuMemGetAddressRange_v3020>(nullptr);
      }
      return reinterpret_cast<PFN_cuMemGetAddressRange_v3020>(p);
    }();
    if (fn == nullptr) return -1;
    CUdeviceptr base = 0;
    size_t bytes = 0;
    if (fn(&base, &bytes, reinterpret_cast<CUdeviceptr>(ptr)) != CUDA_SUCCESS) return -1;
    // The mapping starts at the allocation's base (cudaIpcOpenMemHandle maps the whole of it).
    return static_cast<int64_t>(bytes) -
           static_cast<int64_t>(reinterpret_cast<CUdeviceptr>(ptr) - base);
  }

  void CloseDeviceMemory(char* base) override {
    absl::Status st = CudaStatus(cudaIpcCloseMemHandle(base), "cudaIpcCloseMemHandle");
    if (!st.ok()) GEMM_LOG(WARNING) << st;
  }

  void PinMessageOperands(core::WorkItem* item) override {
    if (const int n = UseReceivedPinnedBytes(item); n > 0) {
      received_pinned_.fetch_add(n, std::memory_order_relaxed);
    }
    if (requests_ != nullptr) requests_->Pin(item);
  }

  void UnpinHostMemory(void* data) override {
    absl::Status st = CudaStatus(cudaHostUnregister(data), "cudaHostUnregister");
    if (!st.ok()) GEMM_LOG(ERROR) << st;
  }

 private:
  const CudaBackendOptions options_;
  // Shared with every inline answer sent from pinned memory (through answers_), so an answer
  // gRPC releases after this backend is gone still returns its bytes to a live pool.
  std::shared_ptr<StagingPool> staging_;
  std::shared_ptr<PinnedAnswers> answers_;
  std::unique_ptr<RequestPinning> requests_;  // null when no memory is set aside for requests
  std::atomic<int64_t> received_pinned_{0};   // requests' A received into the pinned heap
  std::unique_ptr<HostCopier> copier_;        // outlives the executors (declared before them)
  std::vector<std::shared_ptr<DeviceContext>> devices_;
  std::vector<std::unique_ptr<Executor>> executors_;
  std::unique_ptr<TaskThread> uploader_ = std::make_unique<TaskThread>();
  absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

int CudaDeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

namespace {

DeviceQualificationOptions QualificationOptionsOf(const CudaBackendOptions& o) {
  return {.binary = o.qualify_binary,
          .case_deadline = absl::Seconds(o.qualification_case_deadline_s),
          .total_deadline = absl::Seconds(o.qualification_deadline_s),
          .force_mismatch = o.self_test_force_mismatch};
}

// Qualifies every device's kernel at once (device i runs kinds[i]), each in its own child
// processes: start-up waits for the slowest device, not for the sum of them.
std::vector<DeviceQualification> QualifyDevices(const std::vector<kernel::KernelKind>& kinds,
                                                const DeviceQualificationOptions& options) {
  std::vector<DeviceQualification> out(kinds.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < kinds.size(); ++i) {
    threads.emplace_back(
        [&, i] { out[i] = QualifyDevice(static_cast<int>(i), kinds[i], options); });
  }
  for (std::thread& t : threads) t.join();
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<core::Backend>> CreateCudaBackend(
    const CudaBackendOptions& options) {
  const int count = CudaDeviceCount();
  if (count == 0) return absl::FailedPreconditionError("no CUDA device visible");
  if (options.streams_per_device < 1) {
    return absl::InvalidArgumentError("streams_per_device must be >= 1");
  }
  if (options.staging_bytes < 1 || options.staging_slab_bytes < 1) {
    return absl::InvalidArgumentError("staging_bytes and staging_slab_bytes must be >= 1");
  }
  if (options.pinned_request_bytes < 0 || options.pinned_heap_bytes < 0) {
    return absl::InvalidArgumentError("pinned_request_bytes and pinned_heap_bytes must be >= 0");
  }
  if (!(options.pinned_answer_fraction >= 0 && options.pinned_answer_fraction <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("pinned_answer_fraction must be in [0, 1], not ",
                                                   options.pinned_answer_fraction));
  }
  if (options.executor.launch_threads_per_device < 1 ||
      options.executor.launch_threads_per_device > 64 ||
      options.executor.completion_threads_per_device < 1 ||
      options.executor.completion_threads_per_device > 64) {
    return absl::InvalidArgumentError(
        "launch_threads_per_device and completion_threads_per_device must be in [1, 64]");
  }
  if (!(options.executor.max_work_in_flight_ms_per_device >= 0)) {
    return absl::InvalidArgumentError("max_work_in_flight_ms_per_device must be >= 0");
  }
  if (options.executor.max_units_in_flight_per_device < 0) {
    return absl::InvalidArgumentError("max_units_in_flight_per_device must be >= 0");
  }
  if (options.executor.idle_units_per_device < 0) {
    return absl::InvalidArgumentError("idle_units_per_device must be >= 0");
  }
  if (options.host_copy_threads < 0 || options.host_copy_threads > 256) {
    return absl::InvalidArgumentError("host_copy_threads must be in [0, 256]");
  }
  if (options.host_copy_chunk_bytes < 4096 || options.host_copy_chunk_bytes > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError("host_copy_chunk_bytes must be in [4096, 1 GiB]");
  }
  std::vector<std::shared_ptr<DeviceContext>> devices;
  std::vector<kernel::KernelKind> kinds;
  for (int i = 0; i < count; ++i) {
    auto ctx = DeviceContext::Create({.ordinal = i,
                                      .pool_cap_bytes = options.pool_cap_bytes,
                                      .streams = options.streams_per_device,
                                      .high_priority_streams = 2});
    if (!ctx.ok()) {
      return absl::Status(ctx.status().code(),
                          absl::StrCat("device ", i, ": ", ctx.status().message()));
    }
    GEMM_ASSIGN_OR_RETURN(const kernel::KernelKind sel, kernel::SelectKernel(i));
    kinds.push_back(sel);
    devices.push_back(std::move(*ctx));
  }
  std::vector<DeviceQualification> verdicts;
  if (options.self_test) verdicts = QualifyDevices(kinds, QualificationOptionsOf(options));
  for (int i = 0; i < count; ++i) {
    DeviceContext& d = *devices[i];
    bool usable = true;
    std::string detail = "qualification skipped";
    if (options.self_test) {
      DeviceQualification& q = verdicts[i];
      detail = q.summary;
      if (q.cublaslt_wrong) {
        // Nothing to fall back to: the device cannot serve correct results.
        GEMM_LOG(ERROR) << "device " << i << ": cuBLASLt qualification FAILED: " << detail;
        return absl::InternalError(absl::StrCat("device ", i, " qualification: ", detail));
      }
      usable = kinds[i] == kernel::KernelKind::kCublasLt || q.usable_variants != 0;
      d.SetVariants(q.usable_variants, std::move(q.verdicts));
    }
    d.SetKernel(kinds[i], usable, detail);
    GEMM_LOG(INFO) << "device " << i << ": " << d.name() << ", compute capability " << d.cc_major()
                   << "." << d.cc_minor() << ", " << d.multiprocessors() << " SMs, "
                   << (d.memory_bytes() >> 20) << " MiB; pool cap " << (d.pool().cap_bytes() >> 20)
                   << " MiB; serving kernel " << kernel::KernelName(d.serving()) << " (" << detail
                   << ")";
  }
  auto staging = StagingPool::Create(
      {.total_bytes = options.staging_bytes,
       .slab_bytes = std::min(options.staging_bytes, options.staging_slab_bytes)});
  if (!staging.ok()) return staging.status();
  std::unique_ptr<StagingPool> request_pool;
  if (options.pinned_request_bytes > 0) {
    auto pool = StagingPool::Create(
        {.total_bytes = options.pinned_request_bytes,
         .slab_bytes = std::min(options.pinned_request_bytes, options.staging_slab_bytes)});
    if (!pool.ok()) return pool.status();
    request_pool = std::move(*pool);
  }
  GEMM_LOG(INFO) << "pinned staging: " << ((*staging)->total_bytes() >> 20) << " MiB in slabs of "
                 << ((*staging)->max_block_bytes() >> 20)
                 << " MiB, of which inline answers may hold "
                 << (PinnedAnswerLimit::MaxBytesOf(options.pinned_answer_fraction,
                                                   (*staging)->total_bytes()) >>
                     20)
                 << " MiB; " << (options.pinned_request_bytes >> 20)
                 << " MiB pinned for requests' A; " << options.host_copy_threads
                 << " host copy threads";
  return std::unique_ptr<core::Backend>(
      new CudaBackend(options, std::move(*staging), std::move(request_pool), std::move(devices)));
}

}  // namespace gemm::gpu
