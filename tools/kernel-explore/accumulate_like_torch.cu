// Why PyTorch 2.11's add_ beat our accumulate (then with streaming hints) by 2-4% at n >= 64M
// (docs/performance-notes.md, "Whole-buffer accumulate"). Its vectorized elementwise kernel runs 128 threads
// per block, one 16-byte vector per thread, one pass (no grid-stride loop), 32-bit indices, plain
// loads and stores. Which of those differences matters? Each variant against the shipped kernel
// (compiled from shadow.cu itself), f32 and f16, CUDA events around k back-to-back calls (the
// bench's k), median of 21, variants interleaved pass by pass so that drift hits all alike.
//   nvcc -O3 -arch=sm_90 -std=c++17 -o accumulate_like_torch accumulate_like_torch.cu
//   ./accumulate_like_torch && ./accumulate_like_torch zero
#include "../../rules-runtime/src/device/shadow.cu"
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

// One pass: one vector per thread, no loop; `CS` selects the streaming hints; `I` the index type.
template <typename T, bool CS, typename I>
__global__ void one_pass(typename T::V* acc, const typename T::V* src, I nv) {
  I i = (I)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < nv) {
    typename T::V a, s;
    if (CS) { a = __ldcs(acc + i); s = __ldcs(src + i); } else { a = acc[i]; s = src[i]; }
    if (CS) __stcs(acc + i, T::addv(a, s)); else acc[i] = T::addv(a, s);
  }
}
// The shipped loop with plain loads and stores.
template <typename T>
__global__ void plain_loop(typename T::V* acc, const typename T::V* src, u64 nv) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < nv; i += (u64)gridDim.x * blockDim.x)
    acc[i] = T::addv(acc[i], src[i]);
}
// Two vectors per thread, both loaded before either store (more bytes in flight per thread).
template <typename T>
__global__ void two_per_thread(typename T::V* acc, const typename T::V* src, unsigned nv) {
  unsigned i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
  unsigned j = i + blockDim.x;
  typename T::V a0, s0, a1, s1;
  if (i < nv) { a0 = acc[i]; s0 = src[i]; }
  if (j < nv) { a1 = acc[j]; s1 = src[j]; }
  if (i < nv) acc[i] = T::addv(a0, s0);
  if (j < nv) acc[j] = T::addv(a1, s1);
}

__global__ void zero_plain(uint4* p, u64 nv) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < nv; i += (u64)gridDim.x * blockDim.x)
    p[i] = make_uint4(0, 0, 0, 0);
}

// `accumulate_like_torch zero`: zeroing alone, back to back: the driver's memset against the
// shipped streaming-store kernel (`zero_streaming`) and the same kernel with plain stores, 64 MiB
// to 1 GiB.
static void zeros() {
  cudaStream_t S = 0;
  for (u64 bytes : {64ull << 20, 256ull << 20, 1024ull << 20}) {
    void* p;
    CK(cudaMalloc(&p, bytes));
    u64 nv = bytes / 16;
    unsigned blocks = (unsigned)((nv + 255) / 256);
    std::vector<std::pair<std::string, std::function<void()>>> vs = {
        {"cuMemsetD32Async (driver)", [&] { cudaMemsetAsync(p, 0, bytes, S); }},
        {"zero_streaming (.cs stores), 256 threads", [&] { zero_streaming<<<blocks, 256, 0, S>>>((unsigned char*)p, bytes); }},
        {"plain 16-byte stores, 256 threads", [&] { zero_plain<<<blocks, 256, 0, S>>>((uint4*)p, nv); }},
    };
    const int k = bytes >= (1ull << 30) ? 1 : bytes >= (64ull << 20) ? 4 : 20;
    std::vector<std::vector<float>> t(vs.size());
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    for (auto& v : vs) for (int w = 0; w < 3; w++) v.second();
    CK(cudaDeviceSynchronize());
    for (int r = 0; r < 21; r++)
      for (size_t i = 0; i < vs.size(); i++) {
        CK(cudaEventRecord(e0, S));
        for (int j = 0; j < k; j++) vs[i].second();
        CK(cudaEventRecord(e1, S)); CK(cudaEventSynchronize(e1));
        float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); t[i].push_back(ms * 1e3f / k);
      }
    CK(cudaGetLastError());
    printf("\nzero %llu MiB, k = %d\n", bytes >> 20, k);
    float base = 0;
    for (size_t i = 0; i < vs.size(); i++) {
      std::sort(t[i].begin(), t[i].end());
      float med = t[i][10];
      if (i == 0) base = med;
      printf("  %-48s %9.1f us %7.0f GB/s  %.3f of the memset\n", vs[i].first.c_str(), med, bytes / med / 1e3, med / base);
    }
    CK(cudaFree(p));
  }
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "zero") { zeros(); return 0; }
  std::vector<u64> ns = {1ull << 24, 1ull << 26, 1ull << 28};
  cudaStream_t S = 0;
  for (int dt = 0; dt < 2; dt++) {
    const int es = dt == 0 ? 4 : 2;
    const char* dn = dt == 0 ? "f32" : "f16";
    for (u64 n : ns) {
      u64 bytes = n * es, nv = bytes / 16;
      void *a, *b, *c;
      CK(cudaMalloc(&a, bytes)); CK(cudaMalloc(&b, bytes)); CK(cudaMalloc(&c, bytes));
      CK(cudaMemset(a, 0, bytes)); CK(cudaMemset(b, 0, bytes));
      auto blocks = [&](int t, int per) { return (unsigned)((nv + (u64)t * per - 1) / ((u64)t * per)); };
      std::vector<std::pair<std::string, std::function<void()>>> vs;
      vs.push_back({"D2D cudaMemcpyAsync", [&] { cudaMemcpyAsync(c, b, bytes, cudaMemcpyDeviceToDevice, S); }});
      for (int t : {256, 128}) {
        char nm[96];
        snprintf(nm, sizeof nm, "shipped accumulate_%s, %d threads", dn, t);
        vs.push_back({nm, [&, t] {
          if (dt == 0) accumulate_f32<<<blocks(t, 1), t, 0, S>>>((float*)a, (float*)b, n);
          else accumulate_f16<<<blocks(t, 1), t, 0, S>>>((u16*)a, (u16*)b, n);
        }});
        snprintf(nm, sizeof nm, "plain loads, same loop, %d threads", t);
        vs.push_back({nm, [&, t] {
          if (dt == 0) plain_loop<F32><<<blocks(t, 1), t, 0, S>>>((float4*)a, (float4*)b, nv);
          else plain_loop<F16><<<blocks(t, 1), t, 0, S>>>((uint4*)a, (uint4*)b, nv);
        }});
        snprintf(nm, sizeof nm, "one pass, plain, u32 index, %d threads", t);
        vs.push_back({nm, [&, t] {
          if (dt == 0) one_pass<F32, false, unsigned><<<blocks(t, 1), t, 0, S>>>((float4*)a, (float4*)b, (unsigned)nv);
          else one_pass<F16, false, unsigned><<<blocks(t, 1), t, 0, S>>>((uint4*)a, (uint4*)b, (unsigned)nv);
        }});
        snprintf(nm, sizeof nm, "one pass, .cs, u64 index, %d threads", t);
        vs.push_back({nm, [&, t] {
          if (dt == 0) one_pass<F32, true, u64><<<blocks(t, 1), t, 0, S>>>((float4*)a, (float4*)b, nv);
          else one_pass<F16, true, u64><<<blocks(t, 1), t, 0, S>>>((uint4*)a, (uint4*)b, nv);
        }});
        snprintf(nm, sizeof nm, "two vectors per thread, plain, %d threads", t);
        vs.push_back({nm, [&, t] {
          if (dt == 0) two_per_thread<F32><<<blocks(t, 2), t, 0, S>>>((float4*)a, (float4*)b, (unsigned)nv);
          else two_per_thread<F16><<<blocks(t, 2), t, 0, S>>>((uint4*)a, (uint4*)b, (unsigned)nv);
        }});
      }
      const u64 moved = 3 * bytes;
      const int k = moved >= (1ull << 30) ? 1 : moved >= (64ull << 20) ? 4 : 20;
      std::vector<std::vector<float>> t(vs.size());
      cudaEvent_t e0, e1;
      CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
      for (auto& v : vs) for (int w = 0; w < 3; w++) v.second();
      CK(cudaDeviceSynchronize());
      for (int r = 0; r < 21; r++)
        for (size_t i = 0; i < vs.size(); i++) {
          CK(cudaEventRecord(e0, S));
          for (int j = 0; j < k; j++) vs[i].second();
          CK(cudaEventRecord(e1, S)); CK(cudaEventSynchronize(e1));
          float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); t[i].push_back(ms * 1e3f / k);
        }
      CK(cudaGetLastError());
      printf("\n%s n = %llu (%llu MiB per operand), k = %d\n", dn, n, bytes >> 20, k);
      float base = 0;
      for (size_t i = 0; i < vs.size(); i++) {
        std::sort(t[i].begin(), t[i].end());
        float med = t[i][10];
        if (i == 1) base = med;
        // the copy moves 2 x bytes, an accumulate 3 x bytes
        double gbs = (i == 0 ? 2.0 : 3.0) * bytes / med / 1e3;
        if (i == 0) printf("  %-48s %9.1f us %7.0f GB/s\n", vs[i].first.c_str(), med, gbs);
        else printf("  %-48s %9.1f us %7.0f GB/s  %.3f of shipped (256 threads)\n", vs[i].first.c_str(), med, gbs, med / base);
      }
      CK(cudaFree(a)); CK(cudaFree(b)); CK(cudaFree(c));
    }
  }
}
