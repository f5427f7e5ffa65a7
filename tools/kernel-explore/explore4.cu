// Round 4 of the kernel exploration (docs/performance.md): the reverse of a device->pinned copy, d_dev += d_pin; d_pin = 0, as a pipeline
// of copy-engine transfers in both directions at once (H2D of d_pin chunks into device staging, an
// accumulate kernel, and the zeroing of the chunks already read on a second stream), against the
// fused kernel through mapped memory and the forward D2H copy.
//   nvcc -O3 -arch=sm_90 -std=c++17 -o e4 explore4.cu && ./e4
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
typedef unsigned long long u64;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)
__global__ void acc(float4* a, const float4* s, u64 nv, int zero) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < nv; i += (u64)gridDim.x * blockDim.x) {
    float4 x = __ldcs(a + i), y = __ldcs(s + i);
    __stcs(a + i, make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w));
    if (zero) __stcs((float4*)s + i, make_float4(0, 0, 0, 0));
  }
}
template <typename F> double timeit(F f, int reps) {
  f(); CK(cudaDeviceSynchronize());
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b); std::vector<double> t;
  for (int r = 0; r < reps; r++) { cudaEventRecord(a, 0); f(); cudaEventRecord(b, 0); CK(cudaEventSynchronize(b)); float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms * 1e3); }
  CK(cudaGetLastError()); std::sort(t.begin(), t.end()); return t[t.size() / 2];
}
int main() {
  const u64 n = 1ull << 26, bytes = n * 4;
  float *d, *h, *hd, *zeros, *stage;
  CK(cudaMalloc(&d, bytes)); CK(cudaHostAlloc(&h, bytes, cudaHostAllocMapped)); CK(cudaHostGetDevicePointer(&hd, h, 0));
  CK(cudaMalloc(&zeros, 64 << 20)); CK(cudaMemset(zeros, 0, 64 << 20)); CK(cudaMalloc(&stage, 2 * (64 << 20)));
  CK(cudaMemset(d, 0, bytes));
  cudaStream_t A = 0, B; CK(cudaStreamCreateWithFlags(&B, cudaStreamNonBlocking));
  std::vector<cudaEvent_t> ev(4096); for (auto& e : ev) cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  cudaEvent_t joinB; cudaEventCreateWithFlags(&joinB, cudaEventDisableTiming);
  auto refill = [&] { for (u64 i = 0; i < n; i++) h[i] = 1.0f; };
  refill();
  double d2h = timeit([&] { cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, A); }, 5);
  double h2d = timeit([&] { cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, A); }, 5);
  printf("forward D2H %.0f us (%.1f GB/s); H2D %.0f us\n", d2h, bytes / d2h / 1e3, h2d);
  double fused = timeit([&] { acc<<<(unsigned)(n / 4 / 256), 256, 0, A>>>((float4*)d, (float4*)hd, n / 4, 1); }, 5);
  printf("fused kernel through mapped memory: %.0f us, reverse/forward %.2f\n", fused, fused / d2h);
  double both = timeit([&] { cudaMemcpyAsync(stage, h, 64 << 20, cudaMemcpyHostToDevice, A); cudaMemcpyAsync(h + (64 << 18), zeros, 64 << 20, cudaMemcpyDeviceToHost, B); cudaEventRecord(joinB, B); cudaStreamWaitEvent(A, joinB, 0); }, 5);
  printf("64 MiB H2D and 64 MiB D2H at once on two streams: %.0f us (%.1f GB/s total)\n", both, 2.0 * (64 << 20) / both / 1e3);
  for (int zmode = 0; zmode < 2; zmode++)
    for (u64 chunk : {4ull << 20, 16ull << 20, 32ull << 20, 64ull << 20}) {
      refill(); CK(cudaMemset(d, 0, bytes));
      int reps = 5;
      double t = timeit([&] {
        u64 nc = bytes / chunk;
        for (u64 c = 0; c < nc; c++) {
          float* st = stage + (c % 2) * (chunk / 4);
          float* hc = h + c * (chunk / 4);
          cudaMemcpyAsync(st, hc, chunk, cudaMemcpyHostToDevice, A);
          cudaEventRecord(ev[c], A);
          acc<<<(unsigned)(chunk / 16 / 256), 256, 0, A>>>((float4*)(d + c * (chunk / 4)), (float4*)st, chunk / 16, 0);
          cudaStreamWaitEvent(B, ev[c], 0);
          if (zmode == 0) cudaMemcpyAsync(hc, zeros, chunk, cudaMemcpyDeviceToHost, B);
          else cudaMemsetAsync(hd + c * (chunk / 4), 0, chunk, B);
        }
        cudaEventRecord(joinB, B); cudaStreamWaitEvent(A, joinB, 0);
      }, reps);
      // check: after 1 + reps runs of the pipeline starting from h = 1, d == 1 (first run) and h == 0
      CK(cudaDeviceSynchronize());
      float dv; CK(cudaMemcpy(&dv, d + n - 1, 4, cudaMemcpyDeviceToHost));
      printf("pipeline chunk %3llu MiB, zeroing by %s: %.0f us (%.1f GB/s of d_pin), reverse/forward %.2f; check d[n-1]=%.1f h[0]=%.1f h[n-1]=%.1f\n",
             chunk >> 20, zmode ? "memset of mapped memory" : "D2H copy of zeros", t, bytes / t / 1e3, t / d2h, dv, h[0], h[n - 1]);
    }
  return 0;
}
