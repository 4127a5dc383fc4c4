// EnqueueCopies (see copy_batch.h).
#include "server/gpu/copy_batch.h"

#include <atomic>
#include <vector>

#include "common/log.h"
#include "common/status_macros.h"
#include "server/gpu/cuda_util.h"

namespace gemm::gpu {
namespace {

// Set when the driver refused a batch once: every later call copies one by one.
std::atomic<bool> batch_unsupported{false};

bool Contiguous(const Copy2D& c) {
  return c.rows <= 1 || (c.spitch == c.width && c.dpitch == c.width);
}

// NOTE: cudaMemcpyDefault (direction from the addresses, UVA): an operand in a client's GPU
// memory (CUDA IPC) is copied device to device on the same path as host operands.
absl::Status EnqueueOne(const Copy2D& c, cudaMemcpyKind kind, cudaStream_t stream) {
  return CudaStatus(cudaMemcpy2DAsync(c.dst, c.dpitch, c.src, c.spitch, c.width, c.rows,
                                      cudaMemcpyDefault, stream),
                    kind == cudaMemcpyHostToDevice ? "cudaMemcpy2DAsync(to device)"
                                                   : "cudaMemcpy2DAsync(from device)");
}

}  // namespace

size_t MergeAdjacentCopies(std::vector<Copy2D>& copies) {
  size_t out = 0;
  for (size_t i = 0; i < copies.size(); ++i) {
    const Copy2D& c = copies[i];
    if (out > 0) {
      Copy2D& prev = copies[out - 1];
      const size_t bytes = prev.width * prev.rows;
      if (bytes != 0 && Contiguous(prev) && Contiguous(c) && c.width * c.rows != 0 &&
          static_cast<const char*>(c.src) == static_cast<const char*>(prev.src) + bytes &&
          static_cast<char*>(c.dst) == static_cast<char*>(prev.dst) + bytes) {
        prev.width = bytes + c.width * c.rows;
        prev.rows = 1;
        prev.spitch = prev.dpitch = prev.width;
        continue;
      }
    }
    copies[out++] = c;
  }
  const size_t merged = copies.size() - out;
  copies.resize(out);
  return merged;
}

absl::Status EnqueueCopies(std::span<const Copy2D> copies, cudaMemcpyKind kind, cudaStream_t stream,
                           bool batched) {
  auto batchable = [](const Copy2D& c) { return c.width * c.rows != 0 && Contiguous(c); };
  std::vector<void*> dsts;
  std::vector<const void*> srcs;
  std::vector<size_t> sizes;
  if (batched && !batch_unsupported.load(std::memory_order_relaxed)) {
    for (const Copy2D& c : copies) {
      if (!batchable(c)) continue;
      dsts.push_back(c.dst);
      srcs.push_back(c.src);
      sizes.push_back(c.width * c.rows);
    }
  }
  // One copy gains nothing from the batch call.
  bool sent_batch = false;
  if (dsts.size() >= 2) {
    cudaMemcpyAttributes attr = {};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    size_t attr_index = 0;
    const cudaError_t e = cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), dsts.size(),
                                               &attr, &attr_index, 1, stream);
    sent_batch = e == cudaSuccess;
    if (!sent_batch) {
      (void)cudaGetLastError();
      if (!batch_unsupported.exchange(true)) {
        GEMM_LOG(WARNING) << "cudaMemcpyBatchAsync failed (" << cudaGetErrorString(e)
                          << "); copying one call per copy from now on";
      }
    }
  }
  for (const Copy2D& c : copies) {
    if (c.width * c.rows == 0 || (sent_batch && batchable(c))) continue;
    GEMM_RETURN_IF_ERROR(EnqueueOne(c, kind, stream));
  }
  return absl::OkStatus();
}

}  // namespace gemm::gpu
