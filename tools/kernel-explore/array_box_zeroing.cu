// Zeroing a box of a CUDA array (docs/arrays.md): the reverse of a copy into an array ends with
// d_array[box] <- 0, and memset is invalid on arrays. Two ways, timed on the same box:
//   (a) cudaMemcpy3DAsync from a reused zeroed linear device buffer (packed, pitch = box width):
//       what the runtime does for arrays without a surface (a copy from the pool's zero buffer);
//   (b) a surface-write kernel (array created with cudaArraySurfaceLoadStore; surf2Dwrite /
//       surf3Dwrite of zeros), block shapes 32x8 and 16x16.
// (a) is also timed on an array created without the surface flag (the runtime's CudaArray uses
// Flags 0), and the array->linear copy of the same box (what staging a box costs) is printed for
// reference. Element types: f32 (1 channel) and float4 (4 channels). Each array is the box plus a
// margin, the box at an offset; every method is checked once: box all +0.0 (bits), margin kept.
// Events on the legacy stream, one warm-up call, median of the repetitions.
//   nvcc -O3 -arch=sm_90 -std=c++17 -o array_box_zeroing array_box_zeroing.cu && ./array_box_zeroing
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
typedef unsigned long long u64;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

template <typename T> struct Elem;
template <> struct Elem<float> {
  static __device__ float zero() { return 0.0f; }
  static constexpr int channels = 1;
};
template <> struct Elem<float4> {
  static __device__ float4 zero() { return make_float4(0.0f, 0.0f, 0.0f, 0.0f); }
  static constexpr int channels = 4;
};

template <typename T>
__global__ void zero2d(cudaSurfaceObject_t s, int ox, int oy, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < w && y < h) surf2Dwrite(Elem<T>::zero(), s, (ox + x) * (int)sizeof(T), oy + y);
}
template <typename T>
__global__ void zero3d(cudaSurfaceObject_t s, int ox, int oy, int oz, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < w && y < h) surf3Dwrite(Elem<T>::zero(), s, (ox + x) * (int)sizeof(T), oy + y, oz + (int)blockIdx.z);
}
__global__ void fill(float* p, u64 n, float v) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) p[i] = v;
}
// Counts the floats of the whole array (read back packed) that are wrong: inside the box not
// +0.0 (bits), outside not 1.0.
__global__ void check(const float* p, u64 n, int ch, int W, int H, int ox, int oy, int oz, int w, int h, int d, u64* bad) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    u64 e = i / ch;
    int x = (int)(e % W), y = (int)((e / W) % H), z = (int)(e / ((u64)W * H));
    bool in = x >= ox && x < ox + w && y >= oy && y < oy + h && z >= oz && z < oz + d;
    bool ok = in ? __float_as_uint(p[i]) == 0u : p[i] == 1.0f;
    if (!ok) atomicAdd(bad, 1ull);
  }
}

template <typename F> double timeit(F f, int reps) {
  f(); CK(cudaDeviceSynchronize());
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b)); std::vector<double> t;
  for (int r = 0; r < reps; r++) {
    CK(cudaEventRecord(a, 0)); f(); CK(cudaEventRecord(b, 0)); CK(cudaEventSynchronize(b));
    float ms; CK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms * 1e3);
  }
  CK(cudaGetLastError()); CK(cudaEventDestroy(a)); CK(cudaEventDestroy(b));
  std::sort(t.begin(), t.end()); return t[t.size() / 2];
}

struct Box { const char* name; int w, h, d; };

// The box (ox, oy, oz)+(w, h, d) of `arr` <-> packed linear memory at `lin` (pitch w elements).
template <typename T> cudaMemcpy3DParms box_copy(cudaArray_t arr, void* lin, const Box& b, int ox, int oy, int oz, bool to_array) {
  cudaMemcpy3DParms p = {};
  cudaPitchedPtr l = make_cudaPitchedPtr(lin, (size_t)b.w * sizeof(T), (size_t)b.w, (size_t)b.h);
  if (to_array) { p.srcPtr = l; p.dstArray = arr; p.dstPos = make_cudaPos(ox, oy, oz); p.kind = cudaMemcpyDeviceToDevice; }
  else { p.srcArray = arr; p.srcPos = make_cudaPos(ox, oy, oz); p.dstPtr = l; p.kind = cudaMemcpyDeviceToDevice; }
  p.extent = make_cudaExtent(b.w, b.h, b.d);
  return p;
}

template <typename T> void run(const char* tname, const Box& b) {
  const bool three = b.d > 1;
  const int W = b.w + 32, H = b.h + 16, D = three ? b.d + 4 : 1;
  const int ox = 16, oy = 8, oz = three ? 2 : 0;
  const u64 box_bytes = (u64)b.w * b.h * b.d * sizeof(T), whole = (u64)W * H * D * sizeof(T);
  const int reps = box_bytes < (1u << 20) ? 200 : 20;
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<T>();
  cudaExtent ext = make_cudaExtent(W, H, three ? D : 0);
  cudaArray_t surf_arr, plain_arr;
  CK(cudaMalloc3DArray(&surf_arr, &desc, ext, cudaArraySurfaceLoadStore));
  CK(cudaMalloc3DArray(&plain_arr, &desc, ext, 0));
  cudaResourceDesc rd = {}; rd.resType = cudaResourceTypeArray; rd.res.array.array = surf_arr;
  cudaSurfaceObject_t surf; CK(cudaCreateSurfaceObject(&surf, &rd));
  void *zeros, *lin; float* all; u64* bad;
  CK(cudaMalloc(&zeros, box_bytes)); CK(cudaMemset(zeros, 0, box_bytes));
  CK(cudaMalloc(&lin, box_bytes)); CK(cudaMalloc(&all, whole)); CK(cudaMalloc(&bad, sizeof(u64)));
  const u64 nf = whole / sizeof(float);
  // The whole array <-> `all` (packed).
  Box wb = {"whole", W, H, D};
  auto set_ones = [&](cudaArray_t a) {
    fill<<<1024, 256>>>(all, nf, 1.0f); CK(cudaGetLastError());
    cudaMemcpy3DParms p = box_copy<T>(a, all, wb, 0, 0, 0, true); CK(cudaMemcpy3D(&p));
  };
  auto count_bad = [&](cudaArray_t a) -> u64 {
    cudaMemcpy3DParms p = box_copy<T>(a, all, wb, 0, 0, 0, false); CK(cudaMemcpy3D(&p));
    CK(cudaMemset(bad, 0, sizeof(u64)));
    check<<<1024, 256>>>(all, nf, Elem<T>::channels, W, H, ox, oy, oz, b.w, b.h, b.d, bad); CK(cudaGetLastError());
    u64 h; CK(cudaMemcpy(&h, bad, sizeof(u64), cudaMemcpyDeviceToHost)); return h;
  };
  cudaMemcpy3DParms za = box_copy<T>(surf_arr, zeros, b, ox, oy, oz, true);
  cudaMemcpy3DParms zp = box_copy<T>(plain_arr, zeros, b, ox, oy, oz, true);
  cudaMemcpy3DParms out = box_copy<T>(surf_arr, lin, b, ox, oy, oz, false);
  auto copy_zero = [&] { CK(cudaMemcpy3DAsync(&za, 0)); };
  auto copy_zero_plain = [&] { CK(cudaMemcpy3DAsync(&zp, 0)); };
  auto to_linear = [&] { CK(cudaMemcpy3DAsync(&out, 0)); };
  auto surface = [&](dim3 blk) {
    return [&, blk] {
      dim3 g((b.w + blk.x - 1) / blk.x, (b.h + blk.y - 1) / blk.y, three ? b.d : 1);
      if (three) zero3d<T><<<g, blk>>>(surf, ox, oy, oz, b.w, b.h);
      else zero2d<T><<<g, blk>>>(surf, ox, oy, b.w, b.h);
    };
  };
  auto s32x8 = surface(dim3(32, 8)), s16x16 = surface(dim3(16, 16));
  // Correctness, once per method.
  u64 errs[4];
  set_ones(surf_arr); copy_zero(); CK(cudaDeviceSynchronize()); errs[0] = count_bad(surf_arr);
  set_ones(plain_arr); copy_zero_plain(); CK(cudaDeviceSynchronize()); errs[1] = count_bad(plain_arr);
  set_ones(surf_arr); s32x8(); CK(cudaDeviceSynchronize()); errs[2] = count_bad(surf_arr);
  set_ones(surf_arr); s16x16(); CK(cudaDeviceSynchronize()); errs[3] = count_bad(surf_arr);
  double ta = timeit(copy_zero, reps), tp = timeit(copy_zero_plain, reps);
  double tb1 = timeit(s32x8, reps), tb2 = timeit(s16x16, reps), tl = timeit(to_linear, reps);
  double tb = std::min(tb1, tb2);
  printf("%-6s %-12s %9.1f MiB | %9.1f %9.1f | %9.1f %9.1f | %6.2f | %9.1f | %7.0f %7.0f | %s\n",
         tname, b.name, box_bytes / 1048576.0, ta, tp, tb1, tb2, tb / ta, tl,
         box_bytes / ta / 1e3, box_bytes / tb / 1e3,
         (errs[0] | errs[1] | errs[2] | errs[3]) ? "WRONG" : "ok");
  if (errs[0] | errs[1] | errs[2] | errs[3])
    printf("  wrong floats: (a) %llu, (a) flags 0 %llu, (b) 32x8 %llu, (b) 16x16 %llu\n", errs[0], errs[1], errs[2], errs[3]);
  CK(cudaDestroySurfaceObject(surf)); CK(cudaFreeArray(surf_arr)); CK(cudaFreeArray(plain_arr));
  CK(cudaFree(zeros)); CK(cudaFree(lin)); CK(cudaFree(all)); CK(cudaFree(bad));
}

int main() {
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  printf("%s; arrays are the box plus a margin (32 x 16 x 4), the box at (16, 8, 2 if 3-D)\n", prop.name);
  printf("times in us (median); (a) = cudaMemcpy3DAsync from a zeroed linear buffer, on the surface-capable array and on\n"
         "a Flags-0 array; (b) = surface-write kernel, block 32x8 and 16x16; ratio = best (b) / (a); arr->lin = the\n"
         "array->linear copy of the same box; GB/s = box bytes written / time, for (a) and the best (b)\n");
  printf("%-6s %-12s %13s | %9s %9s | %9s %9s | %6s | %9s | %7s %7s | %s\n", "dtype", "box", "bytes", "(a) copy",
         "(a) fl.0", "(b) 32x8", "(b)16x16", "(b)/(a)", "arr->lin", "GB/s a", "GB/s b", "check");
  const Box boxes[] = {{"64x64", 64, 64, 1}, {"4096x4096", 4096, 4096, 1}, {"8192x8192", 8192, 8192, 1}, {"256x256x256", 256, 256, 256}};
  for (const Box& b : boxes) run<float>("f32", b);
  for (const Box& b : boxes) run<float4>("float4", b);
  return 0;
}
