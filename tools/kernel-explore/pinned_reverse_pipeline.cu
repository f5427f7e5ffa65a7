// Why the pinned reverses (docs/performance-notes.md, "Reverses through host memory"): why the pinned
// reverses sit near 1.2x their forward copies, n = 64M f32 (256 MiB), cached pinned memory.
//   A: d += pinned; pinned = 0   (reverse of a device -> pinned copy)
//   B: pinned += d; d = 0        (reverse of a pinned -> device copy)
// Questions:
//   1. Does the host's share lose time to waking its threads once per chunk? Ref: one OpenMP
//      region per chunk (host_reverse_pipelines.cu's A2 / B1, the runtime's route with rayon then); team: one region
//      for the whole call, each thread waiting on the chunk's event itself and doing its stripe.
//   1b. Does the threads' zeroing slow the kernel's reads of mapped memory? Fewer threads,
//      non-temporal stores, and the copy engine (H2D into device staging) instead of the kernel.
//   2. What does the link give when both directions carry data at once (the copy engines are
//      duplex)? Two streams: the reading direction on S, the writing direction on a second
//      stream S2 ordered by events, joined back into S at the end. No host work at all.
// Wall time (host clock) around the call and a stream synchronisation; median of 9.
//   nvcc -O3 -arch=sm_90 -std=c++17 -Xcompiler -fopenmp -o pinned_reverse_pipeline pinned_reverse_pipeline.cu && ./pinned_reverse_pipeline
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <omp.h>
#include <vector>
#include <immintrin.h>
typedef unsigned long long u64;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

__global__ void acc(float4* a, float4* s, u64 nv, int zero) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < nv; i += (u64)gridDim.x * blockDim.x) {
    float4 x = a[i], y = s[i];
    a[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    if (zero) s[i] = make_float4(0, 0, 0, 0);
  }
}
static unsigned blocks(u64 nv) { return (unsigned)std::min<u64>((nv + 255) / 256, 1u << 20); }

static cudaStream_t S, S2;
template <typename F> double timeit(F f, int reps) {
  f(); CK(cudaDeviceSynchronize());
  std::vector<double> t;
  for (int r = 0; r < reps; r++) {
    double t0 = omp_get_wtime();
    f(); CK(cudaStreamSynchronize(S));
    t.push_back((omp_get_wtime() - t0) * 1e6);
  }
  CK(cudaGetLastError()); std::sort(t.begin(), t.end()); return t[t.size() / 2];
}

int main() {
  const u64 n = 1ull << 26, bytes = n * 4, chunk = 16ull << 20, ce = chunk / 4, nc = bytes / chunk;
  const int reps = 9, T = omp_get_num_procs();
  CK(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&S2, cudaStreamNonBlocking));
  float *d, *d2, *stage, *zeros, *pin, *pind, *slots;
  CK(cudaMalloc(&d, bytes)); CK(cudaMalloc(&d2, bytes)); CK(cudaMalloc(&stage, bytes)); CK(cudaMalloc(&zeros, chunk));
  CK(cudaMemset(d, 0, bytes)); CK(cudaMemset(d2, 0, bytes)); CK(cudaMemset(zeros, 0, chunk));
  CK(cudaHostAlloc(&pin, bytes, cudaHostAllocMapped)); CK(cudaHostGetDevicePointer(&pind, pin, 0));
  CK(cudaHostAlloc(&slots, 4 * chunk, cudaHostAllocMapped));
  std::vector<cudaEvent_t> ev(4 * nc), ev2(4 * nc);
  for (auto& x : ev) CK(cudaEventCreateWithFlags(&x, cudaEventDisableTiming));
  for (auto& x : ev2) CK(cudaEventCreateWithFlags(&x, cudaEventDisableTiming));
  for (u64 i = 0; i < n; i++) pin[i] = 1.0f;
  printf("host: %d processors; 16 MiB chunks; cached pinned memory\n", T);
  double f_out = timeit([&] { CK(cudaMemcpyAsync(pin, d, bytes, cudaMemcpyDeviceToHost, S)); }, reps);
  double f_in = timeit([&] { CK(cudaMemcpyAsync(d, pin, bytes, cudaMemcpyHostToDevice, S)); }, reps);
  // Both directions at once, one stream each: what the link carries duplex.
  double duplex = timeit([&] {
    CK(cudaEventRecord(ev[0], S)); CK(cudaStreamWaitEvent(S2, ev[0]));
    CK(cudaMemcpyAsync(d, pin, bytes, cudaMemcpyHostToDevice, S));
    CK(cudaMemcpyAsync(slots, d2, 4 * chunk, cudaMemcpyDeviceToHost, S2));
    for (int i = 1; i < 4; i++) CK(cudaMemcpyAsync(slots, d2, 4 * chunk, cudaMemcpyDeviceToHost, S2));
    CK(cudaEventRecord(ev2[0], S2)); CK(cudaStreamWaitEvent(S, ev2[0])); }, reps);
  printf("forward d->pinned %.0f us (%.1f GB/s), pinned->d %.0f us (%.1f GB/s); 256 MiB each way at once, two streams: %.0f us\n",
         f_out, bytes / f_out / 1e3, f_in, bytes / f_in / 1e3, duplex);
  auto report = [&](const char* what, double t, double fwd) { printf("  %-88s %7.0f us  reverse/forward %.3f\n", what, t, t / fwd); };

  printf("\nA: device += pinned; pinned = 0 (forward d->pinned %.0f us)\n", f_out);
  auto a_enqueue = [&] {
    for (u64 c = 0; c < nc; c++) {
      acc<<<blocks(ce / 4), 256, 0, S>>>((float4*)(d + c * ce), (float4*)(pind + c * ce), ce / 4, 0);
      CK(cudaEventRecord(ev[c], S));
    }
  };
  for (int rep = 0; rep < 2; rep++) {
    report("ref: kernel on mapped, all enqueued, one OpenMP region per chunk zeroes it", timeit([&] {
      a_enqueue();
      for (u64 c = 0; c < nc; c++) {
        CK(cudaEventSynchronize(ev[c]));
#pragma omp parallel for num_threads(T) schedule(static)
        for (int t = 0; t < T; t++) memset(pin + c * ce + t * (ce / T), 0, ce / T * 4);
      }
    }, reps), f_out);
    report("team: kernel on mapped, all enqueued, one region; each thread waits, zeroes its stripe", timeit([&] {
      a_enqueue();
#pragma omp parallel num_threads(T)
      {
        int t = omp_get_thread_num();
        for (u64 c = 0; c < nc; c++) {
          CK(cudaEventSynchronize(ev[c]));
          memset(pin + c * ce + t * (ce / T), 0, ce / T * 4);
        }
      }
    }, reps), f_out);
    report("kernel alone on mapped (no zeroing: the floor of the two above)", timeit(a_enqueue, reps), f_out);
    for (int TT : {4, 8}) {
      char name[128];
      snprintf(name, sizeof name, "team of %d: as team", TT);
      report(name, timeit([&] {
        a_enqueue();
#pragma omp parallel num_threads(TT)
        {
          int t = omp_get_thread_num();
          for (u64 c = 0; c < nc; c++) {
            CK(cudaEventSynchronize(ev[c]));
            memset(pin + c * ce + t * (ce / TT), 0, ce / TT * 4);
          }
        }
      }, reps), f_out);
    }
    report("team, non-temporal stores: as team, zeroing with _mm_stream_si128", timeit([&] {
      a_enqueue();
#pragma omp parallel num_threads(T)
      {
        int t = omp_get_thread_num();
        for (u64 c = 0; c < nc; c++) {
          CK(cudaEventSynchronize(ev[c]));
          __m128i* p = (__m128i*)(pin + c * ce + t * (ce / T));
          for (u64 i = 0; i < ce / T / 4; i++) _mm_stream_si128(p + i, _mm_setzero_si128());
          _mm_sfence();
        }
      }
    }, reps), f_out);
    report("team, copy engine: H2D chunk into device staging, kernel there; threads zero behind", timeit([&] {
      for (u64 c = 0; c < nc; c++) {
        CK(cudaMemcpyAsync(stage + c * ce, pin + c * ce, chunk, cudaMemcpyHostToDevice, S));
        CK(cudaEventRecord(ev[c], S));
        acc<<<blocks(ce / 4), 256, 0, S>>>((float4*)(d + c * ce), (float4*)(stage + c * ce), ce / 4, 0);
      }
#pragma omp parallel num_threads(T)
      {
        int t = omp_get_thread_num();
        for (u64 c = 0; c < nc; c++) {
          CK(cudaEventSynchronize(ev[c]));
          memset(pin + c * ce + t * (ce / T), 0, ce / T * 4);
        }
      }
    }, reps), f_out);
    report("copy engine alone: H2D chunks into device staging + kernels (no zeroing)", timeit([&] {
      for (u64 c = 0; c < nc; c++) {
        CK(cudaMemcpyAsync(stage + c * ce, pin + c * ce, chunk, cudaMemcpyHostToDevice, S));
        acc<<<blocks(ce / 4), 256, 0, S>>>((float4*)(d + c * ce), (float4*)(stage + c * ce), ce / 4, 0);
      }
    }, reps), f_out);
    report("duplex: S: H2D chunk to staging + kernel; S2: D2H zeros into the chunk", timeit([&] {
      for (u64 c = 0; c < nc; c++) {
        CK(cudaMemcpyAsync(stage + c * ce, pin + c * ce, chunk, cudaMemcpyHostToDevice, S));
        CK(cudaEventRecord(ev[c], S)); CK(cudaStreamWaitEvent(S2, ev[c]));
        CK(cudaMemcpyAsync(pin + c * ce, zeros, chunk, cudaMemcpyDeviceToHost, S2));
        acc<<<blocks(ce / 4), 256, 0, S>>>((float4*)(d + c * ce), (float4*)(stage + c * ce), ce / 4, 0);
      }
      CK(cudaEventRecord(ev2[0], S2)); CK(cudaStreamWaitEvent(S, ev2[0]));
    }, reps), f_out);
    report("duplex: S: kernel reads the chunk mapped; S2: D2H zeros into it", timeit([&] {
      for (u64 c = 0; c < nc; c++) {
        acc<<<blocks(ce / 4), 256, 0, S>>>((float4*)(d + c * ce), (float4*)(pind + c * ce), ce / 4, 0);
        CK(cudaEventRecord(ev[c], S)); CK(cudaStreamWaitEvent(S2, ev[c]));
        CK(cudaMemcpyAsync(pin + c * ce, zeros, chunk, cudaMemcpyDeviceToHost, S2));
      }
      CK(cudaEventRecord(ev2[0], S2)); CK(cudaStreamWaitEvent(S, ev2[0]));
    }, reps), f_out);
    report("one stream: H2D chunk to staging, kernel, D2H zeros, in turn (what one stream allows)", timeit([&] {
      for (u64 c = 0; c < nc; c++) {
        CK(cudaMemcpyAsync(stage + c * ce, pin + c * ce, chunk, cudaMemcpyHostToDevice, S));
        acc<<<blocks(ce / 4), 256, 0, S>>>((float4*)(d + c * ce), (float4*)(stage + c * ce), ce / 4, 0);
        CK(cudaMemcpyAsync(pin + c * ce, zeros, chunk, cudaMemcpyDeviceToHost, S));
      }
    }, reps), f_out);
  }

  printf("\nB: pinned += device; device = 0 (forward pinned->d %.0f us)\n", f_in);
  for (int rep = 0; rep < 2; rep++) {
    report("ref: D2H into 2 slots (32 MiB chunks), one OpenMP region per chunk adds it", timeit([&] {
      const u64 c2 = 2 * ce, n2 = nc / 2;
      for (u64 c = 0; c < n2; c++) {
        CK(cudaMemcpyAsync(slots + (c % 2) * c2, d2 + c * c2, 2 * chunk, cudaMemcpyDeviceToHost, S));
        CK(cudaEventRecord(ev[c], S));
        if (c >= 1) {
          CK(cudaEventSynchronize(ev[c - 1]));
          float *a = pin + (c - 1) * c2, *s = slots + ((c - 1) % 2) * c2;
#pragma omp parallel for num_threads(T) schedule(static)
          for (u64 i = 0; i < c2; i++) a[i] += s[i];
        }
      }
      CK(cudaEventSynchronize(ev[n2 - 1]));
      float *a = pin + (n2 - 1) * c2, *s = slots + ((n2 - 1) % 2) * c2;
#pragma omp parallel for num_threads(T) schedule(static)
      for (u64 i = 0; i < c2; i++) a[i] += s[i];
      CK(cudaMemsetAsync(d2, 0, bytes, S));
    }, reps), f_in);
    report("team: D2H into 4 slots (16 MiB), one region; thread 0 enqueues when a slot is free", timeit([&] {
      std::atomic<int> done[4];
      for (auto& x : done) x = 0;
      std::atomic<u64> enq{0};
      auto enqueue = [&](u64 c) {
        CK(cudaMemcpyAsync(slots + (c % 4) * ce, d2 + c * ce, chunk, cudaMemcpyDeviceToHost, S));
        CK(cudaEventRecord(ev[c], S));
        enq.store(c + 1, std::memory_order_release);
      };
      for (u64 c = 0; c < 4; c++) enqueue(c);
#pragma omp parallel num_threads(T)
      {
        int t = omp_get_thread_num();
        for (u64 c = 0; c < nc; c++) {
          while (enq.load(std::memory_order_acquire) <= c) {}
          CK(cudaEventSynchronize(ev[c]));
          float *a = pin + c * ce + t * (ce / T), *s = slots + (c % 4) * ce + t * (ce / T);
          for (u64 i = 0; i < ce / T; i++) a[i] += s[i];
          if (done[c % 4].fetch_add(1, std::memory_order_acq_rel) == T - 1) {
            done[c % 4].store(0);
            // chunks are enqueued in order: wait for c + 3's enqueuer (another thread) first
            while (enq.load(std::memory_order_acquire) != c + 4) {}
            if (c + 4 < nc) enqueue(c + 4); else enq.store(c + 5, std::memory_order_release);
          }
        }
      }
      CK(cudaMemsetAsync(d2, 0, bytes, S));
    }, reps), f_in);
    report("duplex: S: H2D acc chunk to staging, fused kernel (staging += d; d = 0); S2: D2H back", timeit([&] {
      for (u64 c = 0; c < nc; c++) {
        CK(cudaMemcpyAsync(stage + c * ce, pin + c * ce, chunk, cudaMemcpyHostToDevice, S));
        acc<<<blocks(ce / 4), 256, 0, S>>>((float4*)(stage + c * ce), (float4*)(d2 + c * ce), ce / 4, 1);
        CK(cudaEventRecord(ev[c], S)); CK(cudaStreamWaitEvent(S2, ev[c]));
        CK(cudaMemcpyAsync(pin + c * ce, stage + c * ce, chunk, cudaMemcpyDeviceToHost, S2));
      }
      CK(cudaEventRecord(ev2[0], S2)); CK(cudaStreamWaitEvent(S, ev2[0]));
    }, reps), f_in);
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
