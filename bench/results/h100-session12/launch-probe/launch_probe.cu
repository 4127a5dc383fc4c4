// Launch-overhead probe: times empty kernels of several configurations the way gemm_bench times
// kernels (after a delay kernel, events around each launch, median of reps).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

__global__ void Delay(long long ns) {
  long long t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (;;) {
    long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 > ns) break;
  }
}
__global__ void __launch_bounds__(384, 1) Empty(int* p) {
  if (p && threadIdx.x == 9999) *p = 1;
}
__global__ void __launch_bounds__(384, 1) EmptyPdl(int* p) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (p && threadIdx.x == 9999) *p = 1;
}
__global__ void __launch_bounds__(384, 1) EmptySync(int* p) {
  __syncthreads();
  if (p && threadIdx.x == 9999) *p = 1;
}
// Streams through a buffer: evicts L2 (and the code of other kernels) like the bench's rotation.
__global__ void Touch(const int4* src, int4* dst, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    dst[i] = src[i];
}

#define CK(x)                                           \
  do {                                                  \
    cudaError_t err_ = (x);                             \
    if (err_ != cudaSuccess) {                          \
      printf("%s: %s\n", #x, cudaGetErrorString(err_)); \
      exit(1);                                          \
    }                                                   \
  } while (0)

struct Cfg {
  const char* name;
  int grid, block, smem, cluster;
  bool pdl;
  int which;
};

int main() {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaFuncSetAttribute(Empty, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
  CK(cudaFuncSetAttribute(EmptyPdl, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
  CK(cudaFuncSetAttribute(EmptySync, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
  size_t tb = 256u << 20;
  int4 *a, *b;
  CK(cudaMalloc(&a, tb));
  CK(cudaMalloc(&b, tb));
  CK(cudaMemset(a, 1, tb));
  const int reps = 41;
  std::vector<cudaEvent_t> ev(2 * reps);
  for (auto& ee : ev) CK(cudaEventCreate(&ee));
  Cfg cfgs[] = {
      {"1x32 no smem", 1, 32, 0, 0, false, 0},
      {"132x384 no smem", 132, 384, 0, 0, false, 0},
      {"132x384 200KB", 132, 384, 200 * 1024, 0, false, 0},
      {"132x384 227KB", 132, 384, 227 * 1024, 0, false, 0},
      {"132x384 227KB cluster1", 132, 384, 227 * 1024, 1, false, 0},
      {"132x384 227KB cluster2", 132, 384, 227 * 1024, 2, false, 0},
      {"132x384 227KB syncthreads", 132, 384, 227 * 1024, 1, false, 2},
      {"132x256 no smem", 132, 256, 0, 0, false, 0},
  };
  auto launch = [&](const Cfg& c) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[2];
    int na = 0;
    if (c.cluster) {
      at[na].id = cudaLaunchAttributeClusterDimension;
      at[na].val.clusterDim.x = c.cluster;
      at[na].val.clusterDim.y = 1;
      at[na].val.clusterDim.z = 1;
      ++na;
    }
    if (c.pdl) {
      at[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      at[na].val.programmaticStreamSerializationAllowed = 1;
      ++na;
    }
    cfg.gridDim = dim3(c.grid);
    cfg.blockDim = dim3(c.block);
    cfg.dynamicSmemBytes = c.smem;
    cfg.stream = s;
    cfg.attrs = at;
    cfg.numAttrs = na;
    int* p = nullptr;
    if (c.which == 2) return cudaLaunchKernelEx(&cfg, EmptySync, p);
    if (c.pdl) return cudaLaunchKernelEx(&cfg, EmptyPdl, p);
    return cudaLaunchKernelEx(&cfg, Empty, p);
  };
  for (int evict = 0; evict < 2; ++evict) {
    for (const Cfg& c : cfgs) {
      for (int i = 0; i < 5; ++i) CK(launch(c));
      CK(cudaStreamSynchronize(s));
      Delay<<<1, 1, 0, s>>>(2000000);
      for (int r = 0; r < reps; ++r) {
        if (evict) Touch<<<264, 512, 0, s>>>(a, b, tb / 16 / 4);
        CK(cudaEventRecord(ev[2 * r], s));
        CK(launch(c));
        CK(cudaEventRecord(ev[2 * r + 1], s));
      }
      CK(cudaStreamSynchronize(s));
      std::vector<float> ms(reps);
      for (int r = 0; r < reps; ++r) CK(cudaEventElapsedTime(&ms[r], ev[2 * r], ev[2 * r + 1]));
      std::sort(ms.begin(), ms.end());
      printf("%-34s evict=%d  median %.2f us  min %.2f us\n", c.name, evict, ms[reps / 2] * 1e3,
             ms[0] * 1e3);
    }
  }
  // Chains: 20 back-to-back launches between one pair of events, with and without PDL.
  for (int pdl = 0; pdl < 2; ++pdl) {
    Cfg c = {"chain", 132, 384, 227 * 1024, 1, pdl != 0, 0};
    for (int i = 0; i < 5; ++i) CK(launch(c));
    CK(cudaStreamSynchronize(s));
    Delay<<<1, 1, 0, s>>>(2000000);
    std::vector<float> ms(9);
    for (int r = 0; r < 9; ++r) {
      CK(cudaEventRecord(ev[2 * r], s));
      for (int i = 0; i < 20; ++i) CK(launch(c));
      CK(cudaEventRecord(ev[2 * r + 1], s));
    }
    CK(cudaStreamSynchronize(s));
    for (int r = 0; r < 9; ++r) CK(cudaEventElapsedTime(&ms[r], ev[2 * r], ev[2 * r + 1]));
    std::sort(ms.begin(), ms.end());
    printf("chain of 20, 132x384 227KB, pdl=%d: %.2f us per kernel\n", pdl, ms[4] * 1e3 / 20);
  }
  // Bench-like alternation: a 5-us "other" kernel (no PDL), then the probe kernel, each between
  // its own pair of events; the probe launched with or without the PDL attribute.
  for (int pdl = 0; pdl < 2; ++pdl) {
    Cfg c = {"alt", 132, 384, 227 * 1024, 1, pdl != 0, 0};
    for (int i = 0; i < 5; ++i) CK(launch(c));
    CK(cudaStreamSynchronize(s));
    Delay<<<1, 1, 0, s>>>(2000000);
    std::vector<float> ms(reps), other(reps);
    std::vector<cudaEvent_t> e2(2 * reps);
    for (auto& ee : e2) CK(cudaEventCreate(&ee));
    for (int r = 0; r < reps; ++r) {
      CK(cudaEventRecord(e2[2 * r], s));
      Delay<<<132, 384, 0, s>>>(5000);
      CK(cudaEventRecord(e2[2 * r + 1], s));
      CK(cudaEventRecord(ev[2 * r], s));
      CK(launch(c));
      CK(cudaEventRecord(ev[2 * r + 1], s));
    }
    CK(cudaStreamSynchronize(s));
    for (int r = 0; r < reps; ++r) {
      CK(cudaEventElapsedTime(&ms[r], ev[2 * r], ev[2 * r + 1]));
      CK(cudaEventElapsedTime(&other[r], e2[2 * r], e2[2 * r + 1]));
    }
    std::sort(ms.begin(), ms.end());
    std::sort(other.begin(), other.end());
    printf("alternating with a 5-us kernel, events between, pdl=%d: probe %.2f us, other %.2f us\n",
           pdl, ms[reps / 2] * 1e3, other[reps / 2] * 1e3);
  }
  // PDL chain with an event after each kernel.
  for (int pdl = 0; pdl < 2; ++pdl) {
    Cfg c = {"chain-ev", 132, 384, 227 * 1024, 1, pdl != 0, 0};
    CK(cudaStreamSynchronize(s));
    Delay<<<1, 1, 0, s>>>(2000000);
    CK(cudaEventRecord(ev[0], s));
    for (int i = 0; i < 20; ++i) {
      CK(launch(c));
      CK(cudaEventRecord(ev[1 + i], s));
    }
    CK(cudaStreamSynchronize(s));
    float t;
    CK(cudaEventElapsedTime(&t, ev[0], ev[20]));
    printf("chain of 20 with an event after each, pdl=%d: %.2f us per kernel\n", pdl, t * 1e3 / 20);
  }
  return 0;
}
