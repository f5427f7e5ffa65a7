// How to pipeline the reverses of copies with host memory (docs/performance-notes.md, "Reverses
// through host memory"): the reverses of copies with host memory, n = 64M f32 (256 MiB), against their forward copies, in one run.
//   d_dev += d_host; d_host = 0      (reverse of a device -> host copy)
//   d_host += d_dev; d_dev = 0       (reverse of a host -> device copy)
// for pinned and pageable host memory. Variants: the runtime's first routes, and pipelines of
// chunks through two or three pinned staging slots with the host's share split over OpenMP
// threads (zeroing host memory from the host instead of over the link).
//   nvcc -O3 -arch=sm_90 -std=c++17 -Xcompiler -fopenmp -o host_reverse_pipelines host_reverse_pipelines.cu && ./host_reverse_pipelines
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <omp.h>
#include <string>
#include <vector>
typedef unsigned long long u64;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

__global__ void acc(float4* a, const float4* s, u64 nv, int zero) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < nv; i += (u64)gridDim.x * blockDim.x) {
    float4 x = __ldcs(a + i), y = __ldcs(s + i);
    __stcs(a + i, make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w));
    if (zero) __stcs((float4*)s + i, make_float4(0, 0, 0, 0));
  }
}
static unsigned blocks(u64 nv) { return (unsigned)std::min<u64>((nv + 255) / 256, 1u << 20); }

// Wall time (host clock) of whole calls, each ended by a stream synchronisation: these reverses
// include host work, so device events alone would not see it.
template <typename F> double timeit(F f, int reps) {
  f(); CK(cudaDeviceSynchronize());
  std::vector<double> t;
  for (int r = 0; r < reps; r++) {
    double t0 = omp_get_wtime();
    f(); CK(cudaStreamSynchronize(0));
    t.push_back((omp_get_wtime() - t0) * 1e6);
  }
  CK(cudaGetLastError()); std::sort(t.begin(), t.end()); return t[t.size() / 2];
}

static void par_zero(float* p, u64 n, int T) {
#pragma omp parallel for num_threads(T) schedule(static)
  for (long long b = 0; b < (long long)((n + 65535) / 65536); b++) {
    u64 s = (u64)b * 65536, e = std::min<u64>(s + 65536, n);
    memset(p + s, 0, (e - s) * 4);
  }
}
static void par_copy(float* to, const float* from, u64 n, int T, float* zero_from) {
#pragma omp parallel for num_threads(T) schedule(static)
  for (long long b = 0; b < (long long)((n + 65535) / 65536); b++) {
    u64 s = (u64)b * 65536, e = std::min<u64>(s + 65536, n);
    memcpy(to + s, from + s, (e - s) * 4);
    if (zero_from) memset(zero_from + s, 0, (e - s) * 4);
  }
}
static void par_add(float* a, const float* s_, u64 n, int T) {
#pragma omp parallel for num_threads(T) schedule(static)
  for (long long b = 0; b < (long long)((n + 65535) / 65536); b++) {
    u64 s = (u64)b * 65536, e = std::min<u64>(s + 65536, n);
    for (u64 i = s; i < e; i++) a[i] += s_[i];
  }
}

int main(int argc, char** argv) {
  // `e6 wc`: the pinned shadow is write-combined (cudarc's `alloc_pinned` allocates it so), and
  // only sections A and B run.
  const bool wc = argc > 1 && std::string(argv[1]) == "wc";
  const u64 n = 1ull << 26, bytes = n * 4;
  const int reps = 7;
  cudaStream_t S = 0;
  float *d, *d2, *pin, *pind, *page, *stage_d;
  CK(cudaMalloc(&d, bytes)); CK(cudaMalloc(&d2, bytes)); CK(cudaMalloc(&stage_d, bytes));
  CK(cudaHostAlloc(&pin, bytes, cudaHostAllocMapped | (wc ? cudaHostAllocWriteCombined : 0)));
  printf("pinned shadow: %s\n", wc ? "write-combined" : "cached (default flags)"); CK(cudaHostGetDevicePointer(&pind, pin, 0));
  page = (float*)aligned_alloc(4096, bytes);
  const u64 max_slot = 64ull << 20;
  float *slots, *slotsd;
  CK(cudaHostAlloc(&slots, 3 * max_slot, cudaHostAllocMapped)); CK(cudaHostGetDevicePointer(&slotsd, slots, 0));
  std::vector<cudaEvent_t> ev(4096);
  for (auto& ev_ : ev) CK(cudaEventCreateWithFlags(&ev_, cudaEventDisableTiming));
  for (u64 i = 0; i < n; i++) { pin[i] = 1.0f; page[i] = 1.0f; }
  CK(cudaMemset(d, 0, bytes)); CK(cudaMemset(d2, 0, bytes));
  int cores = omp_get_num_procs();
  printf("host: %d processors, OpenMP max threads %d\n", cores, omp_get_max_threads());

  double f_d2pin = timeit([&] { cudaMemcpyAsync(pin, d, bytes, cudaMemcpyDeviceToHost, S); }, reps);
  double f_pin2d = timeit([&] { cudaMemcpyAsync(d, pin, bytes, cudaMemcpyHostToDevice, S); }, reps);
  double f_d2page = timeit([&] { cudaMemcpyAsync(page, d, bytes, cudaMemcpyDeviceToHost, S); }, reps);
  double f_page2d = timeit([&] { cudaMemcpyAsync(d, page, bytes, cudaMemcpyHostToDevice, S); }, reps);
  printf("forward copies (wall, 256 MiB): d->pinned %.0f us (%.1f GB/s), pinned->d %.0f, d->pageable %.0f (%.1f GB/s), pageable->d %.0f (%.1f GB/s)\n",
         f_d2pin, bytes / f_d2pin / 1e3, f_pin2d, f_d2page, bytes / f_d2page / 1e3, f_page2d, bytes / f_page2d / 1e3);
  for (int T : {1, 4, 8, 16}) {
    double z = timeit([&] { par_zero(page, n, T); }, 5);
    double c = timeit([&] { par_copy(slots, page, max_slot / 4, T, nullptr); }, 5);
    double a = timeit([&] { par_add(page, pin, n, T); }, 5);
    printf("host alone, %2d threads: memset pageable 256 MiB %.0f us (%.1f GB/s); memcpy 64 MiB to pinned %.0f us (%.1f GB/s); add pinned into pageable 256 MiB %.0f us\n",
           T, z, bytes / z / 1e3, c, max_slot / c / 1e3, a);
  }
  auto report = [&](const char* what, double t, double fwd) { printf("  %-72s %8.0f us  reverse/forward %.2f\n", what, t, t / fwd); };

  // ---- A: d += pinned; pinned = 0 (reverse of device -> pinned) ----
  printf("\nA: device += pinned; pinned = 0 (forward d->pinned %.0f us)\n", f_d2pin);
  report("A0 fused kernel through mapped memory (current)", timeit([&] { acc<<<blocks(n / 4), 256, 0, S>>>((float4*)d, (float4*)pind, n / 4, 1); }, reps), f_d2pin);
  for (int T : {4, 8, 16})
    report((std::string("A1 kernel reads mapped, then host memset, threads=") + std::to_string(T)).c_str(),
           timeit([&] { acc<<<blocks(n / 4), 256, 0, S>>>((float4*)d, (float4*)pind, n / 4, 0); CK(cudaStreamSynchronize(S)); par_zero(pin, n, T); }, reps), f_d2pin);
  for (u64 chunk : {8ull << 20, 16ull << 20, 32ull << 20})
    for (int T : {4, 8, 16})
      for (int ce = 0; ce < 2; ce++) {
        char name[160];
        snprintf(name, sizeof name, "A2 chunks %2llu MiB %s, host zeroes chunk after its event, threads=%d", chunk >> 20, ce ? "H2D copy+kernel" : "kernel on mapped", T);
        report(name, timeit([&] {
          u64 nc = bytes / chunk, ce_ = chunk / 4;
          for (u64 c = 0; c < nc; c++) {
            if (ce) {
              cudaMemcpyAsync(stage_d + c * ce_, pin + c * ce_, chunk, cudaMemcpyHostToDevice, S);
              acc<<<blocks(ce_ / 4), 256, 0, S>>>((float4*)(d + c * ce_), (float4*)(stage_d + c * ce_), ce_ / 4, 0);
            } else {
              acc<<<blocks(ce_ / 4), 256, 0, S>>>((float4*)(d + c * ce_), (float4*)(pind + c * ce_), ce_ / 4, 0);
            }
            cudaEventRecord(ev[c], S);
          }
          for (u64 c = 0; c < nc; c++) { CK(cudaEventSynchronize(ev[c])); par_zero(pin + c * ce_, ce_, T); }
        }, reps), f_d2pin);
      }

  // A3: as A2 (kernel on mapped, 16 MiB), but at most `ahead` chunks enqueued: chunk c + ahead is
  // enqueued once chunk c's kernel has completed, before the host zeroes chunk c (the runtime's
  // take_pinned, which keeps a fixed number of events).
  for (int ahead : {2, 4, 8, 16}) {
    char name[160];
    snprintf(name, sizeof name, "A3 chunks 16 MiB kernel on mapped, rolling %2d ahead, threads=16", ahead);
    report(name, timeit([&] {
      u64 chunk = 16ull << 20, nc = bytes / chunk, ce_ = chunk / 4;
      auto enq = [&](u64 c) {
        acc<<<blocks(ce_ / 4), 256, 0, S>>>((float4*)(d + c * ce_), (float4*)(pind + c * ce_), ce_ / 4, 0);
        cudaEventRecord(ev[c % ahead], S);
      };
      u64 q = 0;
      for (; q < std::min<u64>(nc, ahead); q++) enq(q);
      for (u64 c = 0; c < nc; c++) {
        CK(cudaEventSynchronize(ev[c % ahead]));
        if (q < nc) enq(q++);
        par_zero(pin + c * ce_, ce_, 16);
      }
    }, reps), f_d2pin);
  }

  // ---- B: pinned += d; d = 0 (reverse of pinned -> device) ----
  printf("\nB: pinned += device; device = 0 (forward pinned->d %.0f us)\n", f_pin2d);
  report("B0 fused kernel through mapped memory (current)", timeit([&] { acc<<<blocks(n / 4), 256, 0, S>>>((float4*)pind, (float4*)d2, n / 4, 1); }, reps), f_pin2d);
  for (u64 chunk : {8ull << 20, 16ull << 20, 32ull << 20})
    for (int T : {4, 8, 16}) {
      char name[160];
      snprintf(name, sizeof name, "B1 chunks %2llu MiB: D2H into 2 pinned slots, host adds, memset d at end, threads=%d", chunk >> 20, T);
      report(name, timeit([&] {
        u64 nc = bytes / chunk, ce_ = chunk / 4;
        for (u64 c = 0; c < nc; c++) {
          // slot c % 2 was last read by the host's add of chunk c - 2, done in the previous iteration
          cudaMemcpyAsync(slots + (c % 2) * ce_, d2 + c * ce_, chunk, cudaMemcpyDeviceToHost, S);
          cudaEventRecord(ev[c], S);
          if (c >= 1) { CK(cudaEventSynchronize(ev[c - 1])); par_add(pin + (c - 1) * ce_, slots + ((c - 1) % 2) * ce_, ce_, T); }
        }
        CK(cudaEventSynchronize(ev[nc - 1])); par_add(pin + (nc - 1) * ce_, slots + ((nc - 1) % 2) * ce_, ce_, T);
        cudaMemsetAsync(d2, 0, bytes, S);
      }, reps), f_pin2d);
    }

  if (wc) return 0;
  // ---- C: d += pageable; pageable = 0 (reverse of device -> pageable) ----
  printf("\nC: device += pageable; pageable = 0 (forward d->pageable %.0f us)\n", f_d2page);
  report("C0 H2D of pageable into device staging, kernel, sync, host memset (current)", timeit([&] {
    cudaMemcpyAsync(stage_d, page, bytes, cudaMemcpyHostToDevice, S);
    acc<<<blocks(n / 4), 256, 0, S>>>((float4*)d, (float4*)stage_d, n / 4, 0);
    CK(cudaStreamSynchronize(S)); memset(page, 0, bytes); }, reps), f_d2page);
  for (u64 chunk : {8ull << 20, 16ull << 20, 32ull << 20})
    for (int T : {4, 8, 16})
      for (int mode = 0; mode < 3; mode++) {
        // mode 0: host copies chunk into a pinned slot, kernel reads the slot mapped, zero at end
        // mode 1: the same, the host zeroes each chunk as it copies it
        // mode 2: host copies into the slot, H2D copy into device staging, kernel, zero at end
        char name[160];
        snprintf(name, sizeof name, "C%d chunks %2llu MiB, 3 slots, %s, threads=%d", mode + 1, chunk >> 20,
                 mode == 0 ? "kernel on mapped slot, zero at end" : mode == 1 ? "kernel on mapped slot, zero while copying" : "H2D+kernel, zero at end", T);
        report(name, timeit([&] {
          u64 nc = bytes / chunk, ce_ = chunk / 4;
          for (u64 c = 0; c < nc; c++) {
            int sl = c % 3;
            if (c >= 3) CK(cudaEventSynchronize(ev[c - 3]));
            par_copy(slots + sl * ce_, page + c * ce_, ce_, T, mode == 1 ? page + c * ce_ : nullptr);
            if (mode == 2) {
              cudaMemcpyAsync(stage_d + c * ce_, slots + sl * ce_, chunk, cudaMemcpyHostToDevice, S);
              cudaEventRecord(ev[c], S);
              acc<<<blocks(ce_ / 4), 256, 0, S>>>((float4*)(d + c * ce_), (float4*)(stage_d + c * ce_), ce_ / 4, 0);
            } else {
              acc<<<blocks(ce_ / 4), 256, 0, S>>>((float4*)(d + c * ce_), (float4*)(slotsd + sl * ce_), ce_ / 4, 0);
              cudaEventRecord(ev[c], S);
            }
          }
          if (mode != 1) { CK(cudaStreamSynchronize(S)); par_zero(page, n, T); }
        }, reps), f_d2page);
      }

  // ---- D: pageable += d; d = 0 (reverse of pageable -> device) ----
  printf("\nD: pageable += device; device = 0 (forward pageable->d %.0f us)\n", f_page2d);
  report("D0 D2H into one pinned staging buffer, sync, single-thread add, memset d (current)", timeit([&] {
    // the staging buffer: `pin` (256 MiB of pinned memory) stands in for the pool's
    cudaMemcpyAsync(pin, d2, bytes, cudaMemcpyDeviceToHost, S); CK(cudaStreamSynchronize(S));
    for (u64 i = 0; i < n; i++) page[i] += pin[i];
    cudaMemsetAsync(d2, 0, bytes, S); }, reps), f_page2d);
  for (u64 chunk : {8ull << 20, 16ull << 20, 32ull << 20})
    for (int T : {4, 8, 16}) {
      char name[160];
      snprintf(name, sizeof name, "D1 chunks %2llu MiB: D2H into 2 pinned slots, host adds, memset d at end, threads=%d", chunk >> 20, T);
      report(name, timeit([&] {
        u64 nc = bytes / chunk, ce_ = chunk / 4;
        for (u64 c = 0; c < nc; c++) {
          cudaMemcpyAsync(slots + (c % 2) * ce_, d2 + c * ce_, chunk, cudaMemcpyDeviceToHost, S);
          cudaEventRecord(ev[c], S);
          if (c >= 1) { CK(cudaEventSynchronize(ev[c - 1])); par_add(page + (c - 1) * ce_, slots + ((c - 1) % 2) * ce_, ce_, T); }
        }
        CK(cudaEventSynchronize(ev[nc - 1])); par_add(page + (nc - 1) * ce_, slots + ((nc - 1) % 2) * ce_, ce_, T);
        cudaMemsetAsync(d2, 0, bytes, S);
      }, reps), f_page2d);
    }
  CK(cudaDeviceSynchronize());
  return 0;
}
