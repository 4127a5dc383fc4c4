// GPU test of EnqueueGather (server/gpu/piece_gather.cu), the copy of a request's A out of the
// pieces it was received in (page-locked host memory) into device memory: pieces of 1 byte to
// 64 KiB at every source and destination alignment, 1 to 300 pieces (up to three launches),
// read from cudaHostAlloc memory and from device memory, against the same copies done on the
// host, on fresh random bytes with every destination byte poisoned first. Skipped without a GPU.
#include "server/gpu/piece_gather.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/random/random.h"
#include "gtest/gtest.h"
#include "server/gpu/cuda_backend.h"

namespace gemm::gpu {
namespace {

// `count` pieces of random sizes and alignments from a source buffer in host (page-locked) or
// device memory into one device buffer, back to back from a random offset, as a received
// operand is laid out.
void CheckGather(int count, bool host_source, absl::BitGen& gen) {
  struct Shape {
    size_t src_off, bytes;
  };
  std::vector<Shape> shapes;
  size_t src_bytes = 64, total = 0;
  for (int i = 0; i < count; ++i) {
    const size_t bytes = i % 3 == 0 ? absl::Uniform<size_t>(gen, 1, 40)
                                    : absl::Uniform<size_t>(gen, 1, (size_t{64} << 10) + 1);
    const size_t src_off = src_bytes + absl::Uniform<size_t>(gen, 0, 48);
    shapes.push_back({src_off, bytes});
    src_bytes = src_off + bytes;
    total += bytes;
  }
  src_bytes += 64;  // reads may touch the rest of the last piece's 16-byte block
  const size_t dst_off = absl::Uniform<size_t>(gen, 0, 16);
  const size_t dst_bytes = dst_off + total + 64;
  std::vector<unsigned char> src(src_bytes), expect(dst_bytes, 0xA5), got(dst_bytes);
  for (auto& b : src) b = absl::Uniform<unsigned char>(gen);
  size_t at = dst_off;
  for (const Shape& s : shapes) {
    std::memcpy(&expect[at], &src[s.src_off], s.bytes);
    at += s.bytes;
  }
  void *hsrc = nullptr, *dsrc = nullptr, *ddst = nullptr;
  ASSERT_EQ(cudaHostAlloc(&hsrc, src_bytes, cudaHostAllocMapped), cudaSuccess);
  std::memcpy(hsrc, src.data(), src_bytes);
  ASSERT_EQ(cudaMalloc(&dsrc, src_bytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&ddst, dst_bytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dsrc, src.data(), src_bytes, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(ddst, 0xA5, dst_bytes), cudaSuccess);  // poison: untouched bytes stay so
  const char* base = static_cast<const char*>(host_source ? hsrc : dsrc);
  std::vector<GatherPiece> pieces;
  at = dst_off;
  for (const Shape& s : shapes) {
    pieces.push_back({base + s.src_off, static_cast<char*>(ddst) + at, s.bytes});
    at += s.bytes;
  }
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  absl::Status st = EnqueueGather(pieces, stream);
  EXPECT_TRUE(st.ok()) << st;
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(got.data(), ddst, dst_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  size_t wrong = 0;
  for (size_t i = 0; i < dst_bytes; ++i) wrong += got[i] != expect[i];
  EXPECT_EQ(wrong, 0u) << count << " pieces, " << (host_source ? "host" : "device") << " source";
  cudaStreamDestroy(stream);
  cudaFreeHost(hsrc);
  cudaFree(dsrc);
  cudaFree(ddst);
}

TEST(PieceGatherTest, EveryAlignmentAndLaunchSizeCopiesExactlyThePieces) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  absl::BitGen gen;
  for (bool host_source : {true, false}) {
    for (int count : {1, 2, 3, 7, 16, 17, 64, 127, 128, 129, 300}) {
      SCOPED_TRACE(count);
      CheckGather(count, host_source, gen);
    }
  }
}

TEST(PieceGatherTest, NothingToCopyEnqueuesNothing) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  EXPECT_TRUE(EnqueueGather({}, nullptr).ok());
}

}  // namespace
}  // namespace gemm::gpu
