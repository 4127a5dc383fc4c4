// GPU test of EnqueueDeviceCopies (server/gpu/device_copy.cu), the copy kernel of CUDA IPC
// operands: launches of 1 to 70 copies (one to three launches, each parameter-block size),
// 16-byte and byte-wise copies, pitched rows, against the same copies done on the host, on
// fresh random bytes with every destination byte poisoned first. Skipped without a GPU.
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

// `copies` copies; the odd ones byte-wise (odd width and pitches), each with a few rows.
void CheckCopies(int copies, absl::BitGen& gen) {
  struct Shape {
    size_t width, rows, spitch, dpitch, src_off, dst_off;
  };
  std::vector<Shape> shapes;
  size_t src_bytes = 0, dst_bytes = 0;
  for (int i = 0; i < copies; ++i) {
    const bool bytewise = i % 2 == 1;
    Shape s;
    s.width =
        bytewise ? absl::Uniform<size_t>(gen, 1, 300) | 1 : 16 * absl::Uniform<size_t>(gen, 1, 64);
    s.rows = absl::Uniform<size_t>(gen, 1, 20);
    s.spitch = s.width + (bytewise ? absl::Uniform<size_t>(gen, 0, 9)
                                   : 16 * absl::Uniform<size_t>(gen, 0, 3));
    s.dpitch = s.width + (bytewise ? absl::Uniform<size_t>(gen, 0, 9)
                                   : 16 * absl::Uniform<size_t>(gen, 0, 3));
    s.src_off = src_bytes + (bytewise ? 1 : 0);
    s.dst_off = dst_bytes + (bytewise ? 3 : 0);
    src_bytes = (s.src_off + s.spitch * s.rows + 15) / 16 * 16;
    dst_bytes = (s.dst_off + s.dpitch * s.rows + 15) / 16 * 16;
    shapes.push_back(s);
  }
  std::vector<unsigned char> src(src_bytes), expect(dst_bytes, 0xA5), got(dst_bytes);
  for (auto& b : src) b = absl::Uniform<unsigned char>(gen);
  for (const Shape& s : shapes) {
    for (size_t r = 0; r < s.rows; ++r) {
      std::memcpy(&expect[s.dst_off + r * s.dpitch], &src[s.src_off + r * s.spitch], s.width);
    }
  }
  void *dsrc = nullptr, *ddst = nullptr;
  ASSERT_EQ(cudaMalloc(&dsrc, src_bytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&ddst, dst_bytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dsrc, src.data(), src_bytes, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(ddst, 0xA5, dst_bytes), cudaSuccess);  // poison: untouched bytes stay so
  std::vector<Copy2D> list;
  for (const Shape& s : shapes) {
    list.push_back({static_cast<char*>(ddst) + s.dst_off, s.dpitch,
                    static_cast<const char*>(dsrc) + s.src_off, s.spitch, s.width, s.rows});
  }
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  absl::Status st = EnqueueDeviceCopies(list, stream);
  EXPECT_TRUE(st.ok()) << st;
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(got.data(), ddst, dst_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  size_t wrong = 0;
  for (size_t i = 0; i < dst_bytes; ++i) wrong += got[i] != expect[i];
  EXPECT_EQ(wrong, 0u) << copies << " copies";
  cudaStreamDestroy(stream);
  cudaFree(dsrc);
  cudaFree(ddst);
}

TEST(DeviceCopyTest, EveryLaunchSizeCopiesExactlyTheRows) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  absl::BitGen gen;
  for (int copies : {1, 2, 3, 4, 5, 8, 9, 13, 16, 17, 31, 32, 33, 64, 70}) {
    SCOPED_TRACE(copies);
    CheckCopies(copies, gen);
  }
}

TEST(DeviceCopyTest, NothingToCopyEnqueuesNothing) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  EXPECT_TRUE(EnqueueDeviceCopies({}, nullptr).ok());
}

}  // namespace
}  // namespace gemm::gpu
