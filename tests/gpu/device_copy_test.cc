// GPU test of EnqueueDeviceCopies (server/gpu/device_copy.cu), the copy kernel of CUDA IPC
// operands and of a request's A out of the pieces it was received in: pitched rows, 16-byte and
// at every source and destination alignment, and single-row pieces of 1 byte to 64 KiB laid back
// to back; 1 to 300 copies (up to four launches); read from device memory and from page-locked
// host memory; against the same copies done on the host, on fresh random bytes with every
// destination byte poisoned first. Skipped without a GPU.
#include "server/gpu/device_copy.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/random/random.h"
#include "gtest/gtest.h"
#include "server/gpu/cuda_backend.h"

namespace gemm::gpu {
namespace {

struct Shape {
  size_t width, rows, spitch, dpitch, src_off, dst_off;
};

// A list of copies and the sizes of the buffers they span.
struct CopyList {
  std::vector<Shape> shapes;
  size_t src_bytes = 0, dst_bytes = 0;
};

// Runs `list` from a random source buffer (page-locked host memory when `host_source`, else
// device memory) into a poisoned device buffer; expects exactly the host's copies, every other
// byte untouched.
void ExpectCopied(const CopyList& list, bool host_source, absl::BitGen& gen) {
  std::vector<unsigned char> src(list.src_bytes), expect(list.dst_bytes, 0xA5), got(list.dst_bytes);
  for (auto& b : src) b = absl::Uniform<unsigned char>(gen);
  for (const Shape& s : list.shapes) {
    for (size_t r = 0; r < s.rows; ++r) {
      std::memcpy(&expect[s.dst_off + r * s.dpitch], &src[s.src_off + r * s.spitch], s.width);
    }
  }
  void *hsrc = nullptr, *dsrc = nullptr, *ddst = nullptr;
  ASSERT_EQ(cudaHostAlloc(&hsrc, list.src_bytes, cudaHostAllocMapped), cudaSuccess);
  std::memcpy(hsrc, src.data(), list.src_bytes);
  ASSERT_EQ(cudaMalloc(&dsrc, list.src_bytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&ddst, list.dst_bytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dsrc, src.data(), list.src_bytes, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(ddst, 0xA5, list.dst_bytes), cudaSuccess);  // poison
  const char* base = static_cast<const char*>(host_source ? hsrc : dsrc);
  std::vector<Copy2D> copies;
  for (const Shape& s : list.shapes) {
    copies.push_back({static_cast<char*>(ddst) + s.dst_off, s.dpitch, base + s.src_off, s.spitch,
                      s.width, s.rows});
  }
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  absl::Status st = EnqueueDeviceCopies(copies, stream);
  EXPECT_TRUE(st.ok()) << st;
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(got.data(), ddst, list.dst_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  size_t wrong = 0;
  for (size_t i = 0; i < list.dst_bytes; ++i) wrong += got[i] != expect[i];
  EXPECT_EQ(wrong, 0u) << list.shapes.size() << " copies, " << (host_source ? "host" : "device")
                       << " source";
  cudaStreamDestroy(stream);
  cudaFreeHost(hsrc);
  cudaFree(dsrc);
  cudaFree(ddst);
}

// `count` copies of a few pitched rows each: the even ones 16-byte (every address, pitch and
// width a multiple of 16), the odd ones at random alignments with odd widths and pitches.
CopyList PitchedRows(int count, absl::BitGen& gen) {
  CopyList list;
  for (int i = 0; i < count; ++i) {
    const bool aligned = i % 2 == 0;
    auto pad = [&] {
      return aligned ? 16 * absl::Uniform<size_t>(gen, 0, 3) : absl::Uniform<size_t>(gen, 0, 9);
    };
    Shape s;
    s.width =
        aligned ? 16 * absl::Uniform<size_t>(gen, 1, 64) : absl::Uniform<size_t>(gen, 1, 600) | 1;
    s.rows = absl::Uniform<size_t>(gen, 1, 20);
    s.spitch = s.width + pad();
    s.dpitch = s.width + pad();
    s.src_off = list.src_bytes + (aligned ? 0 : absl::Uniform<size_t>(gen, 0, 16));
    s.dst_off = list.dst_bytes + (aligned ? 0 : absl::Uniform<size_t>(gen, 0, 16));
    // Reads may touch the rest of the last row's 16-byte block.
    list.src_bytes = (s.src_off + s.spitch * s.rows + 31) / 16 * 16;
    list.dst_bytes = (s.dst_off + s.dpitch * s.rows + 15) / 16 * 16;
    list.shapes.push_back(s);
  }
  return list;
}

// `count` pieces of random sizes at random source offsets, copied back to back from a random
// destination offset: a received operand's layout.
CopyList ReceivedPieces(int count, absl::BitGen& gen) {
  CopyList list;
  list.src_bytes = 64;
  size_t at = absl::Uniform<size_t>(gen, 0, 16);
  for (int i = 0; i < count; ++i) {
    const size_t bytes = i % 3 == 0 ? absl::Uniform<size_t>(gen, 1, 40)
                                    : absl::Uniform<size_t>(gen, 1, (size_t{64} << 10) + 1);
    const size_t src_off = list.src_bytes + absl::Uniform<size_t>(gen, 0, 48);
    list.shapes.push_back({bytes, 1, bytes, bytes, src_off, at});
    list.src_bytes = src_off + bytes;
    at += bytes;
  }
  list.src_bytes += 64;  // reads may touch the rest of the last piece's 16-byte block
  list.dst_bytes = at + 64;
  return list;
}

TEST(DeviceCopyTest, PitchedRowsAtEveryLaunchSizeCopyExactly) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  absl::BitGen gen;
  for (bool host_source : {false, true}) {
    for (int count : {1, 2, 3, 4, 5, 8, 9, 13, 16, 17, 31, 32, 33, 64, 79, 80, 81, 161}) {
      SCOPED_TRACE(count);
      ExpectCopied(PitchedRows(count, gen), host_source, gen);
    }
  }
}

TEST(DeviceCopyTest, PiecesAtEveryAlignmentCopyExactly) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  absl::BitGen gen;
  for (bool host_source : {true, false}) {
    for (int count : {1, 2, 3, 7, 16, 17, 64, 79, 80, 81, 128, 129, 300}) {
      SCOPED_TRACE(count);
      ExpectCopied(ReceivedPieces(count, gen), host_source, gen);
    }
  }
}

TEST(DeviceCopyTest, NothingToCopyEnqueuesNothing) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  EXPECT_TRUE(EnqueueDeviceCopies({}, nullptr).ok());
}

}  // namespace
}  // namespace gemm::gpu
