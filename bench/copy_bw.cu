// copy_bw: pinned host <-> device copy rates of one GPU or of several copying at once, one
// direction at a time and both at once, for the transfer sizes given. The serving path's operands
// cross PCIe this way (A in, D out), so this is the ceiling that a request rate over host memory
// is compared with; with several GPUs it is the ceiling of the host's memory and PCIe switches.
//
// Usage: copy_bw [--seconds=S] [--streams=N] [--gpus=G] SIZE_KIB...
//   For each size: back-to-back copies of that size on N streams per direction and GPU for S
//   seconds (default 1 s, 2 streams), on GPUs 0..G-1 together (default 1): H2D alone, D2H
//   alone, then H2D and D2H together. Prints one line per size: GB/s per direction and in all,
//   summed over the GPUs (1 GB = 1e9 bytes).
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
  int device;
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
      CHECK_CUDA(cudaSetDevice(dir->device));
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
    for (Direction* dir : dirs) {
      CHECK_CUDA(cudaSetDevice(dir->device));
      for (cudaStream_t s : dir->streams) CHECK_CUDA(cudaStreamSynchronize(s));
    }
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  for (double& m : moved) m /= wall;
  return moved;
}

// Pinned host memory and device memory for one direction of `device`, with its streams.
Direction MakeDirection(int device, cudaMemcpyKind kind, size_t span, int streams) {
  Direction d{device, kind, nullptr, nullptr, {}};
  CHECK_CUDA(cudaSetDevice(device));
  CHECK_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&d.host), span, cudaHostAllocPortable));
  CHECK_CUDA(cudaMalloc(&d.dev, span));
  std::memset(d.host, 0x5a, span);
  CHECK_CUDA(cudaMemset(d.dev, 0x3c, span));
  for (int s = 0; s < streams; ++s) {
    cudaStream_t st;
    CHECK_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    d.streams.push_back(st);
  }
  return d;
}

// The sum of `rates` (bytes/s) over the entries `first`, `first + step`, ... in GB/s.
double SumGBs(const std::vector<double>& rates, size_t first, size_t step) {
  double sum = 0;
  for (size_t i = first; i < rates.size(); i += step) sum += rates[i];
  return sum / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 1;
  int streams = 2, gpus = 1;
  std::vector<size_t> sizes;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--seconds=", 10) == 0) {
      seconds = std::atof(argv[i] + 10);
    } else if (std::strncmp(argv[i], "--streams=", 10) == 0) {
      streams = std::atoi(argv[i] + 10);
    } else if (std::strncmp(argv[i], "--gpus=", 7) == 0) {
      gpus = std::atoi(argv[i] + 7);
    } else {
      sizes.push_back(static_cast<size_t>(std::atoll(argv[i])) << 10);
    }
  }
  int visible = 0;
  CHECK_CUDA(cudaGetDeviceCount(&visible));
  if (sizes.empty() || streams < 1 || seconds <= 0 || gpus < 1 || gpus > visible) {
    std::fprintf(stderr, "usage: copy_bw [--seconds=S] [--streams=N] [--gpus=G<=%d] SIZE_KIB...\n",
                 visible);
    return 2;
  }
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s x %d\n", prop.name, gpus);
  size_t largest = 0;
  for (size_t s : sizes) largest = s > largest ? s : largest;
  const size_t span = largest * 8 * static_cast<size_t>(streams);
  std::vector<Direction> h2d, d2h;
  for (int g = 0; g < gpus; ++g) {
    h2d.push_back(MakeDirection(g, cudaMemcpyHostToDevice, span, streams));
    d2h.push_back(MakeDirection(g, cudaMemcpyDeviceToHost, span, streams));
  }
  std::vector<Direction*> ins, outs, both;
  for (int g = 0; g < gpus; ++g) {
    ins.push_back(&h2d[g]);
    outs.push_back(&d2h[g]);
    both.push_back(&h2d[g]);
    both.push_back(&d2h[g]);
  }
  for (size_t bytes : sizes) {
    Run(both, bytes, 0.1);  // warm-up
    const double in = SumGBs(Run(ins, bytes, seconds), 0, 1);
    const double out = SumGBs(Run(outs, bytes, seconds), 0, 1);
    const std::vector<double> together = Run(both, bytes, seconds);
    const double both_in = SumGBs(together, 0, 2), both_out = SumGBs(together, 1, 2);
    std::printf(
        "size %7zu KiB  h2d %6.1f GB/s  d2h %6.1f GB/s  both: h2d %6.1f + d2h %6.1f = %6.1f GB/s\n",
        bytes >> 10, in, out, both_in, both_out, both_in + both_out);
  }
  return 0;
}
