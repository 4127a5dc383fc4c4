// Copy timing under host effects: dirty CPU cache lines in the source, lines cached after D2H,
// and background host memcpy traffic (as gRPC payload handling makes). 2 MiB, 1 or 8 pieces.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>
int main() {
  const size_t bytes = 2 << 20;
  char* dev;
  cudaMalloc(&dev, bytes);
  char* h;
  cudaHostAlloc((void**)&h, bytes, cudaHostAllocPortable);
  std::vector<char> src(bytes, 3), sink(bytes);
  memset(h, 1, bytes);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::atomic<bool> stop{false};
  std::atomic<int> bg_on{0};
  std::vector<std::thread> bg;
  for (int t = 0; t < 6; ++t)
    bg.emplace_back([&] {
      std::vector<char> a(64 << 20, 1), b(64 << 20);
      while (!stop) {
        if (bg_on)
          memcpy(b.data(), a.data(), a.size());
        else
          std::this_thread::yield();
      }
    });
  auto run = [&](const char* name, int dir, int pieces, int pre, int post) {
    float sum = 0, best = 1e9;
    int n = 30;
    for (int it = 0; it < n; ++it) {
      if (pre) memcpy(h, src.data(), bytes);  // host writes the source just before (dirty lines)
      cudaEventRecord(e0, s);
      size_t piece = bytes / pieces;
      for (int p = 0; p < pieces; ++p) {
        if (dir == 0)
          cudaMemcpyAsync(dev + p * piece, h + p * piece, piece, cudaMemcpyHostToDevice, s);
        else
          cudaMemcpyAsync(h + p * piece, dev + p * piece, piece, cudaMemcpyDeviceToHost, s);
      }
      cudaEventRecord(e1, s);
      cudaEventSynchronize(e1);
      if (post) memcpy(sink.data(), h, bytes);  // host reads the result (lines cached)
      float ms;
      cudaEventElapsedTime(&ms, e0, e1);
      if (it) {
        sum += ms;
        if (ms < best) best = ms;
      }
    }
    printf("%-34s %s pieces=%d bg=%d best %6.1f us mean %6.1f us\n", name, dir ? "D2H" : "H2D",
           pieces, bg_on.load(), best * 1e3, sum / (n - 1) * 1e3);
  };
  for (int b : {0, 1}) {
    bg_on = b;
    if (b) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    for (int pieces : {1, 8}) {
      run("clean", 0, pieces, 0, 0);
      run("host wrote source just before", 0, pieces, 1, 0);
      run("clean", 1, pieces, 0, 0);
      run("host reads result after each", 1, pieces, 0, 1);
    }
  }
  stop = true;
  for (auto& t : bg) t.join();
  return 0;
}
