// DeviceRegion: cudaMalloc + cudaIpcGetMemHandle (CUDA builds); UNIMPLEMENTED otherwise.
#include "client/loadgen/device_region.h"

#include "absl/strings/str_cat.h"

#if GEMM_LOADGEN_CUDA
#include <cuda_runtime_api.h>

#include <cstring>
#endif

namespace gemm::loadgen {

#if GEMM_LOADGEN_CUDA
namespace {

absl::Status Check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  (void)cudaGetLastError();
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorString(e)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceRegion>> DeviceRegion::Create(int device, int64_t bytes) {
  if (auto s = Check(cudaSetDevice(device), "cudaSetDevice"); !s.ok()) return s;
  void* base = nullptr;
  if (auto s = Check(cudaMalloc(&base, static_cast<size_t>(bytes)), "cudaMalloc"); !s.ok()) {
    return s;
  }
  cudaIpcMemHandle_t handle;
  if (auto s = Check(cudaIpcGetMemHandle(&handle, base), "cudaIpcGetMemHandle"); !s.ok()) {
    (void)cudaFree(base);
    return s;
  }
  std::string h(sizeof(handle), '\0');
  std::memcpy(h.data(), &handle, sizeof(handle));
  return std::unique_ptr<DeviceRegion>(new DeviceRegion(device, static_cast<char*>(base), h));
}

DeviceRegion::~DeviceRegion() {
  (void)cudaSetDevice(device_);
  (void)cudaFree(base_);
}

absl::Status DeviceRegion::Upload(int64_t off, const void* src, int64_t bytes) {
  (void)cudaSetDevice(device_);
  // NOTE: from pageable memory cudaMemcpy may return before the DMA ends; the server must see it.
  absl::Status s =
      Check(cudaMemcpy(base_ + off, src, static_cast<size_t>(bytes), cudaMemcpyHostToDevice),
            "cudaMemcpy (upload)");
  return s.ok() ? Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize") : s;
}

absl::Status DeviceRegion::Download(int64_t off, int64_t bytes, std::string* dst) const {
  (void)cudaSetDevice(device_);
  dst->resize(static_cast<size_t>(bytes));
  return Check(
      cudaMemcpy(dst->data(), base_ + off, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost),
      "cudaMemcpy (download)");
}

absl::Status DeviceRegion::Fill(int64_t off, int64_t bytes, uint8_t value) {
  (void)cudaSetDevice(device_);
  // NOTE: cudaMemset of device memory is asynchronous to the host: it must land before the
  // request that the server answers by writing there is sent.
  absl::Status s = Check(cudaMemset(base_ + off, value, static_cast<size_t>(bytes)), "cudaMemset");
  return s.ok() ? Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize") : s;
}

#else  // !GEMM_LOADGEN_CUDA

absl::StatusOr<std::unique_ptr<DeviceRegion>> DeviceRegion::Create(int /*device*/,
                                                                   int64_t /*bytes*/) {
  return absl::UnimplementedError("--shm_device needs a gemm_loadgen built with CUDA");
}
DeviceRegion::~DeviceRegion() = default;
absl::Status DeviceRegion::Upload(int64_t, const void*, int64_t) {
  return absl::UnimplementedError("no CUDA");
}
absl::Status DeviceRegion::Download(int64_t, int64_t, std::string*) const {
  return absl::UnimplementedError("no CUDA");
}
absl::Status DeviceRegion::Fill(int64_t, int64_t, uint8_t) {
  return absl::UnimplementedError("no CUDA");
}

#endif

}  // namespace gemm::loadgen
