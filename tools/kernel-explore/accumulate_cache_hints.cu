// Which cache hints suit the whole-buffer kernels: plain, .cs, L2::128B / L2::256B prefetch and
// mixes for the loads, plain or .cs for the result and for the fused kernel's zero stores
// (docs/performance-notes.md, "Whole-buffer accumulate" and "Fused accumulate-and-zero").
// Run on the GPU machine with nvcc there; not part of the build.
//   nvcc -O3 -arch=sm_90 -o accumulate_cache_hints accumulate_cache_hints.cu -lcublas && ./accumulate_cache_hints
// Back-to-back timing: event, K launches, event; median of reps of (time / K).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#ifndef NOBLAS
#include <cublas_v2.h>
#else
typedef int cublasHandle_t; static void cublasCreate(int*){} static void cublasSaxpy(int,int,const float*,float*,int,float*,int){} static void cublasDaxpy(int,int,const double*,double*,int,double*,int){}
#endif
typedef unsigned long long u64;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

template <typename V> struct Ops;
template <> struct Ops<float4> {
  __device__ static float4 add(float4 a, float4 b) { return make_float4(a.x+b.x,a.y+b.y,a.z+b.z,a.w+b.w); }
  __device__ static float4 z() { return make_float4(0,0,0,0); }
};
template <> struct Ops<double2> {
  __device__ static double2 add(double2 a, double2 b) { return make_double2(a.x+b.x,a.y+b.y); }
  __device__ static double2 z() { return make_double2(0,0); }
};


__device__ __forceinline__ float4 ld256(const float4* p) { float4 v; asm volatile("ld.global.L2::256B.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x),"=f"(v.y),"=f"(v.z),"=f"(v.w) : "l"(p)); return v; }
__device__ __forceinline__ float4 ldcs256(const float4* p) { float4 v; asm volatile("ld.global.cs.L2::256B.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x),"=f"(v.y),"=f"(v.z),"=f"(v.w) : "l"(p)); return v; }
__device__ __forceinline__ float4 ld128(const float4* p) { float4 v; asm volatile("ld.global.L2::128B.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x),"=f"(v.y),"=f"(v.z),"=f"(v.w) : "l"(p)); return v; }
__device__ __forceinline__ double2 ld256(const double2* p) { double2 v; asm volatile("ld.global.L2::256B.v2.f64 {%0,%1}, [%2];" : "=d"(v.x),"=d"(v.y) : "l"(p)); return v; }
__device__ __forceinline__ double2 ldcs256(const double2* p) { double2 v; asm volatile("ld.global.cs.L2::256B.v2.f64 {%0,%1}, [%2];" : "=d"(v.x),"=d"(v.y) : "l"(p)); return v; }
__device__ __forceinline__ double2 ld128(const double2* p) { double2 v; asm volatile("ld.global.L2::128B.v2.f64 {%0,%1}, [%2];" : "=d"(v.x),"=d"(v.y) : "l"(p)); return v; }
// LD: 0 plain, 1 cs, 2 L2::256B, 3 cs+L2::256B, 4 L2::128B.  ST (result): 0 plain, 1 cs.  ZS (zero store): 0 plain, 1 cs
template <typename V, bool ZERO, int LD, int ST, int ZS>
__global__ void kern(V* av, V* sv, u64 nv) {
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  u64 stride = (u64)gridDim.x * blockDim.x;
  for (; i < nv; i += stride) {
    V a, s;
    if (LD == 0) { a = av[i]; s = sv[i]; }
    else if (LD == 1) { a = __ldcs(av + i); s = __ldcs(sv + i); }
    else if (LD == 2) { a = ld256(av + i); s = ld256(sv + i); }
    else if (LD == 3) { a = ldcs256(av + i); s = ldcs256(sv + i); }
    else { a = ld128(av + i); s = ld128(sv + i); }
    V r = Ops<V>::add(a, s);
    if (ST) __stcs(av + i, r); else av[i] = r;
    if (ZERO) { if (ZS) __stcs(sv + i, Ops<V>::z()); else sv[i] = Ops<V>::z(); }
  }
}
__global__ void empty() {}

static int g_sms;
template <typename V, bool ZERO, int LD, int ST, int ZS>
void launch(V* a, V* s, u64 nv, int threads, int persist) {
  u64 blocks = (nv + (u64)threads - 1) / ((u64)threads);
  if (persist) blocks = std::min<u64>(blocks, (u64)g_sms * persist);
  if (blocks < 1) blocks = 1;
  kern<V, ZERO, LD, ST, ZS><<<(unsigned)blocks, threads>>>(a, s, nv);
}

template <typename F> double timeit(F f, u64 bytes, int* kout = nullptr) {
  int K = bytes >= (1ull << 30) ? 1 : bytes >= (64ull << 20) ? 4 : bytes >= (1 << 20) ? 20 : 100;
  if (kout) *kout = K;
  for (int i = 0; i < 5; i++) f();
  CK(cudaDeviceSynchronize());
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<double> t;
  int reps = bytes >= (1ull << 30) ? 15 : 31;
  for (int r = 0; r < reps; r++) {
    cudaEventRecord(a);
    for (int k = 0; k < K; k++) f();
    cudaEventRecord(b);
    CK(cudaEventSynchronize(b));
    float ms; cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms * 1e3 / K);
  }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

__global__ void fill(float* p, u64 n, unsigned seed) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    unsigned x = (unsigned)i * 2654435761u ^ seed; x ^= x >> 13; x *= 0x5bd1e995; x ^= x >> 15;
    p[i] = (x & 0xffff) / 65536.0f + 0.01f;
  }
}

int main() {
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0)); g_sms = p.multiProcessorCount;
  printf("device %s, %d SMs, L2 %d MB\n", p.name, g_sms, p.l2CacheSize >> 20);
  const u64 NMAX = 1ull << 28;  // f32 elements (1 GiB)
  float *x, *y, *z;
  CK(cudaMalloc(&x, NMAX * 4 * 2)); CK(cudaMalloc(&y, NMAX * 4 * 2)); CK(cudaMalloc(&z, NMAX * 4 * 2));
  fill<<<4096, 256>>>(x, NMAX * 2, 1); fill<<<4096, 256>>>(y, NMAX * 2, 2);
  CK(cudaDeviceSynchronize());
  cublasHandle_t h; cublasCreate(&h);
  double e1 = timeit([&] { empty<<<1, 1>>>(); }, 0);
  int K; double e_single;
  { // single-launch latency
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b); std::vector<double> t;
    for (int r = 0; r < 101; r++) { cudaEventRecord(a); empty<<<1,1>>>(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms,a,b); t.push_back(ms*1e3);} std::sort(t.begin(), t.end()); e_single = t[50]; }
  printf("empty launch: %.2f us back-to-back, %.2f us single event-timed\n", e1, e_single);
  double ms1 = timeit([&] { cudaMemsetAsync(z, 0, 4); }, 0);
  printf("memset 4 bytes back-to-back: %.2f us\n", ms1);
  for (u64 n : {1ull << 24, 1ull << 26, 1ull << 28}) {
    double t = timeit([&] { cudaMemcpyAsync(z, x, n * 4, cudaMemcpyDeviceToDevice); }, n * 12, &K);
    double m = timeit([&] { cudaMemsetAsync(z, 0, n * 4); }, n * 12);
    printf("n=%llu D2D %.1f us %.0f GB/s | memset %.1f us %.0f GB/s  (K=%d)\n", n, t, 8.0 * n / t / 1e3, m, 4.0 * n / m / 1e3, K);
  }
  float one = 1; double oned = 1;
  // f32 variants
  struct Var { const char* name; void (*f32)(float4*, float4*, u64, int, int); void (*f64)(double2*, double2*, u64, int, int); void (*z32)(float4*, float4*, u64, int, int); int threads, persist; };
  Var vars[] = {
    {"plain t256", launch<float4,false,0,0,0>, launch<double2,false,0,0,0>, launch<float4,true,0,0,0>, 256, 0},
    {"cs t256", launch<float4,false,1,1,1>, launch<double2,false,1,1,1>, launch<float4,true,1,1,1>, 256, 0},
    {"ldplain-stcs t256", launch<float4,false,0,1,1>, launch<double2,false,0,1,1>, launch<float4,true,0,1,1>, 256, 0},
    {"ld256 t256", launch<float4,false,2,0,0>, launch<double2,false,2,0,0>, launch<float4,true,2,0,0>, 256, 0},
    {"ldcs256-stcs t256", launch<float4,false,3,1,1>, launch<double2,false,3,1,1>, launch<float4,true,3,1,1>, 256, 0},
    {"ld256-stcs t256", launch<float4,false,2,1,1>, launch<double2,false,2,1,1>, launch<float4,true,2,1,1>, 256, 0},
    {"ld128 t256", launch<float4,false,4,0,0>, launch<double2,false,4,0,0>, launch<float4,true,4,0,0>, 256, 0},
    {"plain-zcs t256", launch<float4,false,0,0,1>, launch<double2,false,0,0,1>, launch<float4,true,0,0,1>, 256, 0},
    {"ld256-zcs t256", launch<float4,false,2,0,1>, launch<double2,false,2,0,1>, launch<float4,true,2,0,1>, 256, 0},
    {"plain t512", launch<float4,false,0,0,0>, launch<double2,false,0,0,0>, launch<float4,true,0,0,0>, 512, 0},
    {"cs t512", launch<float4,false,1,1,1>, launch<double2,false,1,1,1>, launch<float4,true,1,1,1>, 512, 0},
    {"ldplain-stcs t512", launch<float4,false,0,1,1>, launch<double2,false,0,1,1>, launch<float4,true,0,1,1>, 512, 0},
    {"ld256 t512", launch<float4,false,2,0,0>, launch<double2,false,2,0,0>, launch<float4,true,2,0,0>, 512, 0},
    {"ldcs256-stcs t512", launch<float4,false,3,1,1>, launch<double2,false,3,1,1>, launch<float4,true,3,1,1>, 512, 0},
    {"ld256-stcs t512", launch<float4,false,2,1,1>, launch<double2,false,2,1,1>, launch<float4,true,2,1,1>, 512, 0},
    {"ld128 t512", launch<float4,false,4,0,0>, launch<double2,false,4,0,0>, launch<float4,true,4,0,0>, 512, 0},
    {"plain-zcs t512", launch<float4,false,0,0,1>, launch<double2,false,0,0,1>, launch<float4,true,0,0,1>, 512, 0},
    {"ld256-zcs t512", launch<float4,false,2,0,1>, launch<double2,false,2,0,1>, launch<float4,true,2,0,1>, 512, 0},
    {"plain t1024", launch<float4,false,0,0,0>, launch<double2,false,0,0,0>, launch<float4,true,0,0,0>, 1024, 0},
    {"cs t1024", launch<float4,false,1,1,1>, launch<double2,false,1,1,1>, launch<float4,true,1,1,1>, 1024, 0},
    {"ldplain-stcs t1024", launch<float4,false,0,1,1>, launch<double2,false,0,1,1>, launch<float4,true,0,1,1>, 1024, 0},
    {"ld256 t1024", launch<float4,false,2,0,0>, launch<double2,false,2,0,0>, launch<float4,true,2,0,0>, 1024, 0},
    {"ldcs256-stcs t1024", launch<float4,false,3,1,1>, launch<double2,false,3,1,1>, launch<float4,true,3,1,1>, 1024, 0},
    {"ld256-stcs t1024", launch<float4,false,2,1,1>, launch<double2,false,2,1,1>, launch<float4,true,2,1,1>, 1024, 0},
    {"ld128 t1024", launch<float4,false,4,0,0>, launch<double2,false,4,0,0>, launch<float4,true,4,0,0>, 1024, 0},
    {"plain-zcs t1024", launch<float4,false,0,0,1>, launch<double2,false,0,0,1>, launch<float4,true,0,0,1>, 1024, 0},
    {"ld256-zcs t1024", launch<float4,false,2,0,1>, launch<double2,false,2,0,1>, launch<float4,true,2,0,1>, 1024, 0},
  };
  printf("\n| variant | n | f32 acc us | GB/s | vs saxpy | f64 acc us (n doubles) | GB/s | vs daxpy | fused f32 us | acc+memset us | fused speed-up |\n");
  std::vector<u64> sizes = {1ull << 20, 1ull << 24, 1ull << 26, 1ull << 28};
  for (u64 n : sizes) {
    u64 nv4 = (n + 3) / 4;
    double sa = timeit([&] { cublasSaxpy(h, (int)n, &one, x, 1, y, 1); }, n * 12);
    double da = n <= (1ull << 28) ? timeit([&] { cublasDaxpy(h, (int)n, &oned, (double*)x, 1, (double*)y, 1); }, n * 24) : 0;
    printf("n=%llu cuBLAS saxpy %.2f us (%.0f GB/s), daxpy (n doubles) %.2f us (%.0f GB/s)\n", n, sa, 12.0 * n / sa / 1e3, da, 24.0 * n / da / 1e3);
    for (auto& v : vars) {
      double a32 = timeit([&] { v.f32((float4*)y, (float4*)x, nv4, v.threads, v.persist); }, n * 12);
      // n doubles = n/2 double2 vectors: 24n bytes, compared with daxpy on n doubles
      double a64n = timeit([&] { v.f64((double2*)y, (double2*)x, (n + 1) / 2, v.threads, v.persist); }, n * 24);
      double fz = timeit([&] { v.z32((float4*)y, (float4*)x, nv4, v.threads, v.persist); }, n * 16);
      double two = timeit([&] { v.f32((float4*)y, (float4*)x, nv4, v.threads, v.persist); cudaMemsetAsync(x, 0, n * 4); }, n * 16);
      printf("| %s | %llu | %.2f | %.0f | x%.3f saxpy | %.2f | %.0f | x%.3f daxpy | %.2f | %.2f | %.2f |\n", v.name, n, a32, 12.0 * n / a32 / 1e3, sa / a32,
             a64n, 24.0 * n / a64n / 1e3, da / a64n, fz, two, two / fz);
    }
  }
  return 0;
}
