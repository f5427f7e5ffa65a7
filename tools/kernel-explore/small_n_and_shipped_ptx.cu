// Three questions (docs/performance-notes.md, "Measuring", "Fused accumulate-and-zero", "Reverses
// through host memory"): does the driver's JIT of the shipped compute_75 PTX run as fast as the same
// kernel built by nvcc for sm_90 (16M f32)? What do small memsets cost against a launch (the bound
// of the fused kernel at small n)? How fast is the fused kernel through mapped pinned memory, and
// with which launch shape?
//   nvcc -O3 -arch=sm_90 -std=c++17 -o small_n_and_shipped_ptx small_n_and_shipped_ptx.cu -lcuda
//   ./small_n_and_shipped_ptx ../../rules-runtime/src/device/shadow.ptx
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <fstream>
#include <sstream>
#include <cuda.h>
#include <cuda_runtime.h>
typedef unsigned long long u64;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)
#define CU(x) do { CUresult e = (x); if (e != CUDA_SUCCESS) { printf("CU error %d at %d\n", (int)e, __LINE__); exit(1);} } while (0)

template <bool ZERO, int U>
__global__ void kern(float4* av, float4* sv, u64 nv) {
  u64 base = (u64)blockIdx.x * blockDim.x * U + threadIdx.x;
  u64 stride = (u64)gridDim.x * blockDim.x * U;
  for (u64 i = base; i < nv; i += stride) {
    float4 a[U], s[U];
#pragma unroll
    for (int j = 0; j < U; j++) { u64 k = i + (u64)j * blockDim.x; if (k < nv) { a[j] = __ldcs(av + k); s[j] = __ldcs(sv + k); } }
#pragma unroll
    for (int j = 0; j < U; j++) {
      u64 k = i + (u64)j * blockDim.x;
      if (k < nv) {
        __stcs(av + k, make_float4(a[j].x + s[j].x, a[j].y + s[j].y, a[j].z + s[j].z, a[j].w + s[j].w));
        if (ZERO) __stcs(sv + k, make_float4(0, 0, 0, 0));
      }
    }
  }
}
__global__ void empty() {}
__global__ void fill(float* p, u64 n, unsigned seed) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    unsigned x = (unsigned)i * 2654435761u ^ seed; x ^= x >> 13; x *= 0x5bd1e995; x ^= x >> 15;
    p[i] = (x & 0xffff) / 65536.0f + 0.01f;
  }
}
template <typename F> double timeit(F f, int K, int reps) {
  for (int i = 0; i < 3; i++) f();
  CK(cudaDeviceSynchronize());
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<double> t;
  for (int r = 0; r < reps; r++) {
    cudaEventRecord(a); for (int k = 0; k < K; k++) f(); cudaEventRecord(b);
    CK(cudaEventSynchronize(b)); float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms * 1e3 / K);
  }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end()); return t[t.size() / 2];
}
template <bool Z, int U> void launch(float4* a, float4* s, u64 nv, int threads) {
  u64 blocks = (nv + (u64)threads * U - 1) / ((u64)threads * U); if (!blocks) blocks = 1;
  kern<Z, U><<<(unsigned)blocks, threads>>>(a, s, nv);
}
int main(int argc, char** argv) {
  CK(cudaSetDeviceFlags(cudaDeviceMapHost)); CK(cudaFree(0));
  // ---- 1. mapped pinned ----
  const u64 n = 1ull << 26;  // f32
  float *d, *h, *hd;
  CK(cudaMalloc(&d, n * 4)); CK(cudaHostAlloc(&h, n * 4, cudaHostAllocMapped)); CK(cudaHostGetDevicePointer(&hd, h, 0));
  fill<<<4096, 256>>>(d, n, 1); for (u64 i = 0; i < n; i++) h[i] = 0.5f; CK(cudaDeviceSynchronize());
  double d2h = timeit([&] { cudaMemcpyAsync(h, d, n * 4, cudaMemcpyDeviceToHost); }, 1, 5);
  double h2d = timeit([&] { cudaMemcpyAsync(d, h, n * 4, cudaMemcpyHostToDevice); }, 1, 5);
  printf("pinned 256 MiB: D2H %.0f us (%.1f GB/s), H2D %.0f us (%.1f GB/s)\n", d2h, n * 4 / d2h / 1e3, h2d, n * 4 / h2d / 1e3);
  struct P { const char* name; void (*f)(float4*, float4*, u64, int); int t; };
  P ps[] = {{"U1 t256", launch<true, 1>, 256}, {"U1 t1024", launch<true, 1>, 1024}, {"U2 t256", launch<true, 2>, 256},
            {"U4 t256", launch<true, 4>, 256}, {"U4 t1024", launch<true, 4>, 1024}, {"U8 t256", launch<true, 8>, 256}, {"U1 t128", launch<true, 1>, 128}};
  for (auto& p : ps) {
    double a = timeit([&] { p.f((float4*)d, (float4*)hd, n / 4, p.t); }, 1, 5);
    double b = timeit([&] { p.f((float4*)hd, (float4*)d, n / 4, p.t); }, 1, 5);
    printf("fused %-9s device += pinned; pinned = 0: %.0f us (%.1f GB/s link, rev/fwd(D2H) %.2f) | pinned += device; device = 0: %.0f us (%.1f GB/s link)\n",
           p.name, a, 2.0 * n * 4 / a / 1e3, a / d2h, b, 2.0 * n * 4 / b / 1e3);
  }
  // ---- 2. small n ----
  float *x, *y; CK(cudaMalloc(&x, 1 << 24)); CK(cudaMalloc(&y, 1 << 24));
  fill<<<64, 256>>>(x, 1 << 22, 2); fill<<<64, 256>>>(y, 1 << 22, 3); CK(cudaDeviceSynchronize());
  for (int round = 0; round < 2; round++) {
    printf("empty: %.2f us\n", timeit([&] { empty<<<1, 1>>>(); }, 100, 31));
    for (int t : {32, 256, 1024}) {
      double a = timeit([&] { kern<false, 1><<<1, t>>>((float4*)y, (float4*)x, 1); }, 100, 31);
      double z = timeit([&] { kern<true, 1><<<1, t>>>((float4*)y, (float4*)x, 1); }, 100, 31);
      printf("n=4 floats, 1 block of %4d: acc %.2f us, fused %.2f us\n", t, a, z);
    }
    for (u64 bytes : {4ull, 1024ull, 16384ull, 262144ull, 4194304ull})
      printf("memset %7llu B: %.2f us back to back; acc(t256)+memset %.2f us\n", bytes,
             timeit([&] { cudaMemsetAsync(x, 0, bytes); }, 100, 31),
             timeit([&] { launch<false, 1>((float4*)y, (float4*)x, bytes / 16, 256); cudaMemsetAsync(x, 0, bytes); }, 100, 31));
  }
  // ---- 3. shipped PTX vs nvcc build at 16M ----
  if (argc > 1) {
    std::ifstream f(argv[1]); std::stringstream ss; ss << f.rdbuf(); std::string ptx = ss.str();
    CUmodule m; CU(cuModuleLoadData(&m, ptx.c_str())); CUfunction acc; CU(cuModuleGetFunction(&acc, m, "accumulate_f32"));
    float *X, *Y; const u64 N = 1ull << 24; CK(cudaMalloc(&X, N * 4)); CK(cudaMalloc(&Y, N * 4));
    fill<<<4096, 256>>>(X, N, 4); fill<<<4096, 256>>>(Y, N, 5); CK(cudaDeviceSynchronize());
    for (int round = 0; round < 3; round++) {
      for (int t : {256, 1024}) {
        double p = timeit([&] { u64 nn = N; void* args[] = {&Y, &X, &nn}; unsigned blocks = (unsigned)((N / 4 + t - 1) / t);
                                cuLaunchKernel(acc, blocks, 1, 1, t, 1, 1, 0, 0, args, 0); }, 20, 31);
        double k = timeit([&] { launch<false, 1>((float4*)Y, (float4*)X, N / 4, t); }, 20, 31);
        printf("16M f32 t%d: shipped PTX %.2f us (%.0f GB/s), nvcc kernel %.2f us (%.0f GB/s)\n", t, p, 12.0 * N / p / 1e3, k, 12.0 * N / k / 1e3);
      }
    }
  }
  return 0;
}
