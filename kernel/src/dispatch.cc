// The kernel library's public entry points: validation, the one arch-dispatch point (exact
// compute capability) and the routing to the SM90 / SM100 kernels or cuBLASLt.
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "cuda_status.h"
#include "gemm/kernel.h"
#include "gemm/kernel_choice.h"
#include "reference/cublaslt_gemm.h"
#include "sm100/sm100_gemm.h"
#include "sm90/sm90_gemm.h"
#include "sm90/sm90_variant.h"
#include "sm90/small_m_gemm.h"
#include "validate.h"

namespace gemm::kernel {
namespace {

constexpr int kMaxDevices = 64;

// Per-device facts read once: compute capability and SM count (0 = not read yet).
struct DeviceFacts {
  int major = 0, minor = 0, sm_count = 0;
};

absl::StatusOr<DeviceFacts> Facts(int device) {
  static std::array<std::atomic<uint64_t>, kMaxDevices> cache{};  // major|minor|sm_count packed
  if (device >= 0 && device < kMaxDevices) {
    const uint64_t v = cache[device].load(std::memory_order_relaxed);
    if (v != 0) {
      return DeviceFacts{static_cast<int>(v >> 48), static_cast<int>((v >> 32) & 0xffff),
                         static_cast<int>(v & 0xffffffff)};
    }
  }
  DeviceFacts f;
  GEMM_RETURN_IF_ERROR(
      CudaStatus(cudaDeviceGetAttribute(&f.major, cudaDevAttrComputeCapabilityMajor, device),
                 "cudaDeviceGetAttribute(ComputeCapabilityMajor)"));
  GEMM_RETURN_IF_ERROR(
      CudaStatus(cudaDeviceGetAttribute(&f.minor, cudaDevAttrComputeCapabilityMinor, device),
                 "cudaDeviceGetAttribute(ComputeCapabilityMinor)"));
  GEMM_RETURN_IF_ERROR(
      CudaStatus(cudaDeviceGetAttribute(&f.sm_count, cudaDevAttrMultiProcessorCount, device),
                 "cudaDeviceGetAttribute(MultiProcessorCount)"));
  if (device >= 0 && device < kMaxDevices) {
    cache[device].store(
        (uint64_t(f.major) << 48) | (uint64_t(f.minor) << 32) | uint32_t(f.sm_count),
        std::memory_order_relaxed);
  }
  return f;
}

absl::StatusOr<int> CurrentDevice() {
  int device = 0;
  GEMM_RETURN_IF_ERROR(CudaStatus(cudaGetDevice(&device), "cudaGetDevice"));
  return device;
}

// The kind that runs a call: kAuto resolved by SelectKernel; explicit native kinds checked
// against the device's exact compute capability.
absl::StatusOr<KernelKind> Resolve(KernelKind requested, int device) {
  if (requested == KernelKind::kAuto) return SelectKernel(device);
  if (requested == KernelKind::kCublasLt) return requested;
  GEMM_ASSIGN_OR_RETURN(const DeviceFacts facts, Facts(device));
  if (requested == KernelKind::kSm90 && !(facts.major == 9 && facts.minor == 0)) {
    return absl::FailedPreconditionError(
        absl::StrCat("sm90 kernel needs compute capability 9.0, device ", device, " has ",
                     facts.major, ".", facts.minor));
  }
  if (requested == KernelKind::kSm100 && !(facts.major == 10 && facts.minor == 0)) {
    return absl::FailedPreconditionError(
        absl::StrCat("sm100 kernel needs compute capability 10.0, device ", device, " has ",
                     facts.major, ".", facts.minor));
  }
  if (requested != KernelKind::kSm90 && requested != KernelKind::kSm100) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown kernel kind ", static_cast<int>(requested)));
  }
  return requested;
}

// Tells the caller which kernel serves the call (LaunchOptions::served).
void Report(const LaunchOptions& opts, KernelKind kind) {
  if (opts.served != nullptr) *opts.served = kind;
}

absl::Status RunCublasLt(const StridedBatch& args, cudaStream_t stream, const LaunchOptions& opts) {
  Report(opts, KernelKind::kCublasLt);
  return reference::CublasLtGemm(args, stream, opts.workspace, opts.workspace_bytes);
}

// Whether the small-M kernel serves `args` (TMA-compatible operands, UseSmallM's shapes).
bool SmallM(const StridedBatch& args) { return TmaCompatible(args) && sm90::UseSmallM(args); }

}  // namespace

std::string KernelName(KernelKind kind) {
  switch (kind) {
    case KernelKind::kAuto:
      return "auto";
    case KernelKind::kSm90:
      return "sm90_wgmma";
    case KernelKind::kSm100:
      return "sm100_tcgen05";
    case KernelKind::kCublasLt:
      return "cublaslt";
  }
  return absl::StrCat("unknown(", static_cast<int>(kind), ")");
}

absl::StatusOr<KernelChoice> ChooseKernel(absl::string_view requested,
                                          const DeviceKernels& device) {
  const std::string selected = KernelName(device.selected);
  if (requested.empty() || requested == "auto") {
    if (!device.selected_usable)
      return KernelChoice{KernelKind::kCublasLt, KernelName(KernelKind::kCublasLt)};
    return KernelChoice{KernelKind::kAuto, selected};
  }
  if (requested == KernelName(KernelKind::kCublasLt)) {
    return KernelChoice{KernelKind::kCublasLt, std::string(requested)};
  }
  if (requested == selected) {
    if (!device.selected_usable) {
      return absl::FailedPreconditionError(
          absl::StrCat("kernel ", requested, " failed its start-up self-test on device ",
                       device.device, " and is disabled: ", device.self_test_detail));
    }
    return KernelChoice{device.selected, std::string(requested)};
  }
  if (requested == KernelName(KernelKind::kSm90) || requested == KernelName(KernelKind::kSm100)) {
    return absl::FailedPreconditionError(
        absl::StrCat("kernel ", requested, " cannot run on device ", device.device,
                     " (compute capability ", device.cc_major, ".", device.cc_minor, ")"));
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown kernel \"", requested, "\""));
}

absl::StatusOr<KernelKind> SelectKernel(int device) {
  GEMM_ASSIGN_OR_RETURN(const DeviceFacts facts, Facts(device));
  // NOTE: "a" targets (sm_90a, sm_100a) are not forward compatible: match exactly.
  if (facts.major == 9 && facts.minor == 0) return KernelKind::kSm90;
  if (facts.major == 10 && facts.minor == 0) return KernelKind::kSm100;
  return KernelKind::kCublasLt;
}

std::size_t WorkspaceBytes(const StridedBatch& args, KernelKind kind) {
  auto device = CurrentDevice();
  if (kind == KernelKind::kAuto) {
    auto k =
        device.ok() ? SelectKernel(*device) : absl::StatusOr<KernelKind>(KernelKind::kCublasLt);
    kind = k.ok() ? *k : KernelKind::kCublasLt;
  }
  switch (kind) {
    case KernelKind::kSm90: {
      if (device.ok() && SmallM(args)) {
        auto facts = Facts(*device);
        if (facts.ok()) return sm90::SmallMWorkspaceBytes(args, facts->sm_count);
      }
      return sm90::Supports(args) ? sm90::WorkspaceBytes(args)
                                  : reference::CublasLtWorkspaceBytes();
    }
    case KernelKind::kSm100:
      return sm100::WorkspaceBytes(args);
    default:
      return reference::CublasLtWorkspaceBytes();
  }
}

std::size_t WorkspaceBytes(std::span<const Problem> group, KernelKind kind) {
  if (kind == KernelKind::kAuto) {
    auto device = CurrentDevice();
    auto k =
        device.ok() ? SelectKernel(*device) : absl::StatusOr<KernelKind>(KernelKind::kCublasLt);
    kind = k.ok() ? *k : KernelKind::kCublasLt;
  }
  switch (kind) {
    case KernelKind::kSm90:
      return sm90::Supports(group) ? sm90::WorkspaceBytes(group)
                                   : reference::CublasLtWorkspaceBytes();
    case KernelKind::kSm100:
      return sm100::WorkspaceBytes(group);
    default:
      return reference::CublasLtWorkspaceBytes();
  }
}

struct PreparedGemm::Native {
  sm90::PreparedLaunch sm90;
};

PreparedGemm::PreparedGemm() = default;
PreparedGemm::~PreparedGemm() = default;
PreparedGemm::PreparedGemm(PreparedGemm&&) noexcept = default;
PreparedGemm& PreparedGemm::operator=(PreparedGemm&&) noexcept = default;

absl::StatusOr<PreparedGemm> Prepare(const StridedBatch& args, const LaunchOptions& opts) {
  GEMM_RETURN_IF_ERROR(ValidateBatch(args));
  GEMM_ASSIGN_OR_RETURN(const int device, CurrentDevice());
  GEMM_ASSIGN_OR_RETURN(const KernelKind kind, Resolve(opts.kind, device));
  const bool automatic = opts.kind == KernelKind::kAuto;
  PreparedGemm call;
  call.args_ = args;
  call.opts_ = opts;
  call.served_ = kind;
  if (kind == KernelKind::kSm90) {
    // Each compiled variant runs only when qualified (sm90/sm90_variant.h): the small-M
    // kernel's bit here, the tile's in sm90::Prepare; an unqualified one is UNIMPLEMENTED.
    absl::Status st;
    if (SmallM(args)) {
      call.small_m_ = true;
      if (!sm90::VariantAllowed(opts.usable_variants, sm90::kSmallMVariant)) {
        st = absl::UnimplementedError("sm90: variant sm90.small_m is not qualified");
      }
    } else if (sm90::Supports(args)) {
      call.native_ = std::make_unique<PreparedGemm::Native>();
      st = sm90::Prepare(args, opts, &call.native_->sm90);
    } else if (!automatic) {
      return absl::FailedPreconditionError(
          "sm90 kernel needs 16-byte aligned pointers, pitches and batch strides");
    } else {
      st = absl::UnimplementedError("sm90: operands not TMA-aligned");
    }
    if (automatic && absl::IsUnimplemented(st)) {
      call.served_ = KernelKind::kCublasLt;
      call.small_m_ = false;
      call.native_.reset();
    } else if (!st.ok()) {
      return st;
    }
  } else if (kind != KernelKind::kSm100 && kind != KernelKind::kCublasLt) {
    return absl::UnimplementedError(
        absl::StrCat("no kernel for kind ", KernelName(kind), " on device ", device));
  }
  Report(opts, call.served_);
  return call;
}

absl::Status Launch(const PreparedGemm& call, cudaStream_t stream) {
  const StridedBatch& args = call.args_;
  const LaunchOptions& opts = call.opts_;
  if (call.native_ != nullptr) return sm90::Launch(call.native_->sm90, stream);
  if (call.small_m_) return sm90::SmallMGemm(args, stream, opts);
  if (call.served_ == KernelKind::kSm100) {
    absl::Status st = sm100::Gemm(args, stream, opts);
    if (opts.kind == KernelKind::kAuto && absl::IsUnimplemented(st)) {
      return RunCublasLt(args, stream, opts);
    }
    return st;
  }
  return reference::CublasLtGemm(args, stream, opts.workspace, opts.workspace_bytes);
}

absl::Status Gemm(const StridedBatch& args, cudaStream_t stream, const LaunchOptions& opts) {
  GEMM_ASSIGN_OR_RETURN(const PreparedGemm call, Prepare(args, opts));
  return Launch(call, stream);
}

absl::Status GemmGrouped(std::span<const Problem> group, cudaStream_t stream,
                         const LaunchOptions& opts) {
  GEMM_RETURN_IF_ERROR(ValidateGroup(group));
  if (group.empty()) return absl::OkStatus();
  GEMM_ASSIGN_OR_RETURN(const int device, CurrentDevice());
  GEMM_ASSIGN_OR_RETURN(const KernelKind kind, Resolve(opts.kind, device));
  const bool automatic = opts.kind == KernelKind::kAuto;
  Report(opts, kind);
  auto loop_cublaslt = [&]() -> absl::Status {
    Report(opts, KernelKind::kCublasLt);
    for (const Problem& p : group) {
      StridedBatch one;
      one.problem = p;
      GEMM_RETURN_IF_ERROR(RunCublasLt(one, stream, opts));
    }
    return absl::OkStatus();
  };
  switch (kind) {
    case KernelKind::kSm90:
      if (sm90::Supports(group)) {
        absl::Status st = sm90::GemmGrouped(group, stream, opts);  // checks its tiles' variants
        if (automatic && absl::IsUnimplemented(st)) return loop_cublaslt();
        return st;
      }
      if (automatic) return loop_cublaslt();
      return absl::FailedPreconditionError(
          "sm90 kernel needs 16-byte aligned pointers and pitches");
    case KernelKind::kSm100: {
      absl::Status st = sm100::GemmGrouped(group, stream, opts);
      if (automatic && absl::IsUnimplemented(st)) return loop_cublaslt();
      return st;
    }
    case KernelKind::kCublasLt:
      return loop_cublaslt();
    case KernelKind::kAuto:
      break;
  }
  return absl::UnimplementedError(
      absl::StrCat("no kernel for kind ", KernelName(kind), " on device ", device));
}

}  // namespace gemm::kernel
