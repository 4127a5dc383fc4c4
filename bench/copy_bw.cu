// copy_bw: pinned host <-> device copy rates of one GPU, one direction at a time and both at once,
// for the transfer sizes given. The serving path's operands cross PCIe this way (A in, D out),
// so this is the ceiling that a request rate over host memory is compared with.
//
// Usage: copy_bw [--seconds=S] [--streams=N] SIZE_KIB...
//   For each size: back-to-back copies of that size on N streams per direction for S seconds
//   (default 1 s, 2 streams): H2D alone, D2H alone, then H2D and D2H together. Prints one line
//   per case: GB/s per direction and in all (1 GB = 1e9 bytes).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

#define CHECK_CUDA(x)                                                                        \
  do {                                                                                       \
    cudaError_t e = (x);                                                                     \
    if (e != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

struct Direction {
  cudaMemcpyKind kind;
  char* host;
  char* dev;
  std::vector<cudaStream_t> streams;
};

// Runs the given directions together for `seconds`; returns bytes moved per direction.
std::vector<double> Run(std::vector<Direction*> dirs, size_t bytes, double seconds) {
  using Clock = std::chrono::steady_clock;
  constexpr int kBatch = 8;  // copies queued per stream between checks of the clock
  std::vector<double> moved(dirs.size(), 0);
  const auto t0 = Clock::now();
  const auto end = t0 + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    for (size_t d = 0; d < dirs.size(); ++d) {
      Direction* dir = dirs[d];
      for (size_t s = 0; s < dir->streams.size(); ++s) {
        for (int i = 0; i < kBatch; ++i) {
          // Each stream and slot copies its own range, so no two copies in flight share bytes.
          const size_t off = (s * kBatch + i) * bytes;
          void* dst = dir->kind == cudaMemcpyHostToDevice ? static_cast<void*>(dir->dev + off)
                                                          : static_cast<void*>(dir->host + off);
          const void* src = dir->kind == cudaMemcpyHostToDevice
                                ? static_cast<const void*>(dir->host + off)
                                : static_cast<const void*>(dir->dev + off);
          CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, dir->kind, dir->streams[s]));
          moved[d] += static_cast<double>(bytes);
        }
      }
    }
    for (Direction* dir : dirs)
      for (cudaStream_t s : dir->streams) CHECK_CUDA(cudaStreamSynchronize(s));
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  for (double& m : moved) m /= wall;
  return moved;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 1;
  int streams = 2;
  std::vector<size_t> sizes;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--seconds=", 10) == 0) {
      seconds = std::atof(argv[i] + 10);
    } else if (std::strncmp(argv[i], "--streams=", 10) == 0) {
      streams = std::atoi(argv[i] + 10);
    } else {
      sizes.push_back(static_cast<size_t>(std::atoll(argv[i])) << 10);
    }
  }
  if (sizes.empty() || streams < 1 || seconds <= 0) {
    std::fprintf(stderr, "usage: copy_bw [--seconds=S] [--streams=N] SIZE_KIB...\n");
    return 2;
  }
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s\n", prop.name);
  size_t largest = 0;
  for (size_t s : sizes) largest = s > largest ? s : largest;
  const size_t span = largest * 8 * static_cast<size_t>(streams);
  Direction h2d{cudaMemcpyHostToDevice, nullptr, nullptr, {}};
  Direction d2h{cudaMemcpyDeviceToHost, nullptr, nullptr, {}};
  for (Direction* d : {&h2d, &d2h}) {
    CHECK_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&d->host), span, cudaHostAllocPortable));
    CHECK_CUDA(cudaMalloc(&d->dev, span));
    std::memset(d->host, 0x5a, span);
    CHECK_CUDA(cudaMemset(d->dev, 0x3c, span));
    for (int s = 0; s < streams; ++s) {
      cudaStream_t st;
      CHECK_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
      d->streams.push_back(st);
    }
  }
  for (size_t bytes : sizes) {
    Run({&h2d, &d2h}, bytes, 0.1);  // warm-up
    const double in = Run({&h2d}, bytes, seconds)[0];
    const double out = Run({&d2h}, bytes, seconds)[0];
    const std::vector<double> both = Run({&h2d, &d2h}, bytes, seconds);
    std::printf(
        "size %7zu KiB  h2d %6.1f GB/s  d2h %6.1f GB/s  both: h2d %6.1f + d2h %6.1f = %6.1f GB/s\n",
        bytes >> 10, in / 1e9, out / 1e9, both[0] / 1e9, both[1] / 1e9, (both[0] + both[1]) / 1e9);
  }
  return 0;
}
