// Copy timing: pinned cudaHostAlloc vs cudaHostRegister'd shm vs registered malloc; 1 vs many
// pieces.
#include <cuda_runtime.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <vector>
#define CK(x)                                        \
  do {                                               \
    cudaError_t e = (x);                             \
    if (e) {                                         \
      printf("%s: %s\n", #x, cudaGetErrorString(e)); \
      return 1;                                      \
    }                                                \
  } while (0)
int main() {
  const size_t bytes = 2 << 20;
  char* dev;
  CK(cudaMalloc(&dev, bytes));
  char *ha, *hr, *hm;
  CK(cudaHostAlloc((void**)&ha, bytes, cudaHostAllocPortable));
  int fd = shm_open("/gemm-cpbw", O_CREAT | O_RDWR, 0600);
  ftruncate(fd, bytes);
  hr = (char*)mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  memset(hr, 1, bytes);
  CK(cudaHostRegister(hr, bytes, cudaHostRegisterPortable));
  hm = (char*)aligned_alloc(4096, bytes);
  memset(hm, 1, bytes);
  CK(cudaHostRegister(hm, bytes, cudaHostRegisterPortable));
  memset(ha, 1, bytes);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const char* names[3] = {"cudaHostAlloc", "shm+register", "malloc+register"};
  char* hs[3] = {ha, hr, hm};
  for (int pieces : {1, 8, 36})
    for (int h = 0; h < 3; ++h)
      for (int dir = 0; dir < 2; ++dir) {
        float best = 1e9, sum = 0;
        int n = 20;
        for (int it = 0; it < n; ++it) {
          cudaEventRecord(e0, s);
          size_t piece = bytes / pieces;
          for (int p = 0; p < pieces; ++p) {
            if (dir == 0)
              cudaMemcpyAsync(dev + p * piece, hs[h] + p * piece, piece, cudaMemcpyHostToDevice, s);
            else
              cudaMemcpyAsync(hs[h] + p * piece, dev + p * piece, piece, cudaMemcpyDeviceToHost, s);
          }
          cudaEventRecord(e1, s);
          cudaEventSynchronize(e1);
          float ms;
          cudaEventElapsedTime(&ms, e0, e1);
          if (it) {
            sum += ms;
            if (ms < best) best = ms;
          }
        }
        printf("%-16s %s pieces=%2d  best %7.1f us  mean %7.1f us  (%.1f GB/s)\n", names[h],
               dir ? "D2H" : "H2D", pieces, best * 1e3, sum / (n - 1) * 1e3,
               bytes / (best * 1e-3) / 1e9);
      }
  shm_unlink("/gemm-cpbw");
  return 0;
}
