// Shadow kernels of rules-runtime: acc += src, and the fused acc += src; src = 0.
//
// Built to PTX (shadow.ptx, committed) by regen.sh, so that a machine with the CUDA driver and no
// toolkit runs them: the driver JIT-compiles the PTX for its GPU when the module is loaded.
//
// Complex elements are pairs of reals, so the runtime launches the f32/f64 kernels on 2n reals.
// 64-bit indices, because n may exceed 2^31. Any offset works: when acc and src share
// their alignment modulo 16 bytes, a scalar head reaches the 16-byte boundary, then each thread
// moves one 16-byte vector of each operand per iteration (grid-stride for very large n), and a
// scalar tail finishes; otherwise a scalar grid-stride loop. The fused kernel's vector body uses
// the streaming cache hints (.cs): every byte is touched once. The accumulate kernel's does not:
// there the hints cost 2-5.5% (docs/performance-notes.md, "Whole-buffer accumulate").
// f16 sums use the hardware's f16x2 add; bf16 sums go through f32 with round-to-nearest-even,
// which is the correctly rounded sum, as on the host (24 >= 2*8+2 bits).

typedef unsigned long long u64;
typedef unsigned short u16;

struct F32 {
    typedef float S;
    typedef float4 V;
    __device__ static S add(S a, S b) { return a + b; }
    __device__ static V addv(V a, V b) { return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w); }
    __device__ static S zero() { return 0.0f; }
    __device__ static V zerov() { return make_float4(0.f, 0.f, 0.f, 0.f); }
};

struct F64 {
    typedef double S;
    typedef double2 V;
    __device__ static S add(S a, S b) { return a + b; }
    __device__ static V addv(V a, V b) { return make_double2(a.x + b.x, a.y + b.y); }
    __device__ static S zero() { return 0.0; }
    __device__ static V zerov() { return make_double2(0.0, 0.0); }
};

__device__ __forceinline__ unsigned f16x2_add(unsigned a, unsigned b) {
    unsigned d;
    asm("add.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
}

struct F16 {
    typedef u16 S;
    typedef uint4 V;
    __device__ static S add(S a, S b) {
        unsigned short d;
        asm("add.rn.f16 %0, %1, %2;" : "=h"(d) : "h"(a), "h"(b));
        return d;
    }
    __device__ static V addv(V a, V b) {
        return make_uint4(f16x2_add(a.x, b.x), f16x2_add(a.y, b.y), f16x2_add(a.z, b.z), f16x2_add(a.w, b.w));
    }
    __device__ static S zero() { return 0; }
    __device__ static V zerov() { return make_uint4(0, 0, 0, 0); }
};

__device__ __forceinline__ unsigned bf16_round(float f) {
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;  // NaN stays NaN (quiet)
    u += 0x7fffu + ((u >> 16) & 1u);
    return u >> 16;
}

__device__ __forceinline__ unsigned bf16x2_add(unsigned a, unsigned b) {
    float lo = __uint_as_float(a << 16) + __uint_as_float(b << 16);
    float hi = __uint_as_float(a & 0xffff0000u) + __uint_as_float(b & 0xffff0000u);
    return bf16_round(lo) | (bf16_round(hi) << 16);
}

struct BF16 {
    typedef u16 S;
    typedef uint4 V;
    __device__ static S add(S a, S b) {
        return (S)bf16_round(__uint_as_float((unsigned)a << 16) + __uint_as_float((unsigned)b << 16));
    }
    __device__ static V addv(V a, V b) {
        return make_uint4(bf16x2_add(a.x, b.x), bf16x2_add(a.y, b.y), bf16x2_add(a.z, b.z), bf16x2_add(a.w, b.w));
    }
    __device__ static S zero() { return 0; }
    __device__ static V zerov() { return make_uint4(0, 0, 0, 0); }
};

template <typename T, bool ZERO>
__device__ __forceinline__ void shadow_pass(typename T::S* acc, typename T::S* src, u64 n) {
    typedef typename T::S S;
    typedef typename T::V V;
    const u64 K = sizeof(V) / sizeof(S);
    const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const u64 ma = (u64)acc & 15, ms = (u64)src & 15;
    if (ma == ms && ma % sizeof(S) == 0) {
        u64 head = ma ? (16 - ma) / sizeof(S) : 0;
        if (head > n) head = n;
        if (tid < head) {
            acc[tid] = T::add(acc[tid], src[tid]);
            if (ZERO) src[tid] = T::zero();
        }
        const u64 nv = (n - head) / K;
        V* av = reinterpret_cast<V*>(acc + head);
        V* sv = reinterpret_cast<V*>(src + head);
        for (u64 i = tid; i < nv; i += stride) {
            if (ZERO) {
                V a = __ldcs(av + i);
                V s = __ldcs(sv + i);
                __stcs(av + i, T::addv(a, s));
                __stcs(sv + i, T::zerov());
            } else {
                // Plain loads and stores: 2-5.5% faster than .cs from 16M elements
                // (tools/kernel-explore/accumulate_like_torch.cu).
                av[i] = T::addv(av[i], sv[i]);
            }
        }
        for (u64 i = head + nv * K + tid; i < n; i += stride) {
            acc[i] = T::add(acc[i], src[i]);
            if (ZERO) src[i] = T::zero();
        }
    } else {
        for (u64 i = tid; i < n; i += stride) {
            acc[i] = T::add(acc[i], src[i]);
            if (ZERO) src[i] = T::zero();
        }
    }
}

#define SHADOW_KERNELS(NAME, T)                                                              \
    extern "C" __global__ void accumulate_##NAME(T::S* acc, T::S* src, u64 n) {             \
        shadow_pass<T, false>(acc, src, n);                                                  \
    }                                                                                        \
    extern "C" __global__ void accumulate_and_zero_##NAME(T::S* acc, T::S* src, u64 n) {    \
        shadow_pass<T, true>(acc, src, n);                                                   \
    }

SHADOW_KERNELS(f32, F32)
SHADOW_KERNELS(f64, F64)
SHADOW_KERNELS(f16, F16)
SHADOW_KERNELS(bf16, BF16)

// `bytes` bytes at `p` set to zero with 16-byte streaming stores: the zeroing half of the split
// accumulate-and-zero for large operands, where it measured faster than the driver's memset right
// after the accumulate kernel (docs/performance-notes.md, "Fused accumulate-and-zero").
extern "C" __global__ void zero_streaming(unsigned char* p, u64 bytes) {
    const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    u64 head = (16 - ((u64)p & 15)) & 15;
    if (head > bytes) head = bytes;
    if (tid < head) p[tid] = 0;
    const u64 nv = (bytes - head) / 16;
    uint4* v = reinterpret_cast<uint4*>(p + head);
    for (u64 i = tid; i < nv; i += stride) __stcs(v + i, make_uint4(0, 0, 0, 0));
    for (u64 i = head + nv * 16 + tid; i < bytes; i += stride) p[i] = 0;
}

// An empty kernel: the launch-overhead ceiling the benchmark compares small accumulations with.
extern "C" __global__ void empty_kernel() {}

// ---- Region kernels: a box of `width` elements per row, `height` rows per slice, `depth` slices,
// each side with its own pitch and slice pitch (in elements of the launch type P; the runtime has
// checked that the byte pitches are multiples of it). Nothing between rows (padding) is touched.
//
// A row is covered by 2^tpr_log2 consecutive threads (coalesced), and a block of blockDim.x
// threads covers blockDim.x >> tpr_log2 rows at a time, so narrow rows (3 elements, say) do not
// leave most of a block idle. grid.x strides over row groups, grid.y over column chunks (for a
// few very wide rows). Where a thread has at most one column of each row (narrow rows:
// tpr * grid.y >= width), it takes several rows at once instead of several columns, so that a
// 3-wide box keeps as many loads in flight per thread as a wide one: a block takes R row groups
// that follow each other in memory (`Walk::batches`), and the runtime sizes grid.x for R. The
// launch shape depends on the box only (for the sum's vector path, also on where its rows start
// modulo 16 bytes), never on the device, which is what makes the sum below deterministic.

// Rows a thread loads before it stores any, for narrow rows (accumulate kernels, elements and
// 16-byte vectors); the runtime's grid (region.rs) assumes these values.
#ifndef PASS_ROWS
#define PASS_ROWS 4
#endif
#ifndef PASS_ROWS_V
#define PASS_ROWS_V 4
#endif

struct Walk {
    u64 width, height, depth;
    unsigned tpr_log2;
    // The sum's 16-byte vector path (vec = 1): the first `head` reals of every row lie before a
    // 16-byte boundary, the rest from it on.
    unsigned head, vec;

    __device__ __forceinline__ u64 tpr() const { return 1ull << tpr_log2; }
    // This thread's first column and the step between its columns of a row.
    __device__ __forceinline__ u64 first() const {
        return (u64)blockIdx.y * tpr() + (threadIdx.x & (unsigned)(tpr() - 1));
    }
    __device__ __forceinline__ u64 step() const { return (u64)gridDim.y * tpr(); }
    __device__ __forceinline__ u64 n_rows() const { return height * depth; }
    // This thread's first row (y + z * height) and the step between its rows.
    __device__ __forceinline__ u64 row0() const {
        return (u64)blockIdx.x * (blockDim.x >> tpr_log2) + (threadIdx.x >> tpr_log2);
    }
    __device__ __forceinline__ u64 row_step() const { return (u64)gridDim.x * (blockDim.x >> tpr_log2); }
    // Row r's (y, z).
    __device__ __forceinline__ void yz(u64 r, u64& y, u64& z) const {
        z = 0;
        y = r;
        if (depth > 1) {
            z = r / height;
            y = r - z * height;
        }
    }
    __device__ __forceinline__ u64 at(u64 r, u64 pitch, u64 slice) const {
        u64 y, z;
        yz(r, y, z);
        return z * slice + y * pitch;
    }

    // Narrow rows: calls f(first_row, row_step) for each batch of R rows this thread takes,
    // rows first + k * row_step for k < R (those below n_rows()): the block's R row groups lie
    // next to each other, and the grid strides over such runs.
    template <int R, typename F>
    __device__ __forceinline__ void batches(F f) const {
        const u64 rpb = blockDim.x >> tpr_log2, n = n_rows();
        const u64 local = threadIdx.x >> tpr_log2;
        for (u64 base = (u64)blockIdx.x * R * rpb; base < n; base += (u64)gridDim.x * R * rpb)
            f(base + local, rpb);
    }

    // Calls f(row_in_box, slice, first_column, column_step) for each row this thread takes part
    // in, in a fixed order; the thread's columns of that row are first, first + step, ...
    template <typename F>
    __device__ __forceinline__ void rows(F f) const {
        const u64 n = n_rows(), c0 = first(), cs = step(), rs = row_step();
        for (u64 row = row0(); row < n; row += rs) {
            u64 y, z;
            yz(row, y, z);
            f(y, z, c0, cs);
        }
    }

    // Calls f(row_in_box, slice, column) for this thread's share of the box, in a fixed order.
    template <typename F>
    __device__ __forceinline__ void each(F f) const {
        const u64 w = width;
        rows([&](u64 y, u64 z, u64 first, u64 step) {
            for (u64 x = first; x < w; x += step) f(y, z, x);
        });
    }
};

// Loads and stores for the region kernels: streaming (.cs) for 16-byte vectors, whose sectors
// are used once; plain for elements, where neighbouring rows of a narrow box share sectors.
template <typename P> __device__ __forceinline__ P ld(const P* p) { return *p; }
template <typename P> __device__ __forceinline__ void st(P* p, P v) { *p = v; }
template <> __device__ __forceinline__ float4 ld(const float4* p) { return __ldcs(p); }
template <> __device__ __forceinline__ double2 ld(const double2* p) { return __ldcs(p); }
template <> __device__ __forceinline__ uint4 ld(const uint4* p) { return __ldcs(p); }
template <> __device__ __forceinline__ void st(float4* p, float4 v) { __stcs(p, v); }
template <> __device__ __forceinline__ void st(double2* p, double2 v) { __stcs(p, v); }
template <> __device__ __forceinline__ void st(uint4* p, uint4 v) { __stcs(p, v); }
// T::add for elements, T::addv for vectors, picked by the launch type.
template <typename T> __device__ __forceinline__ typename T::S addp(typename T::S a, typename T::S b) { return T::add(a, b); }
template <typename T> __device__ __forceinline__ typename T::V addp(typename T::V a, typename T::V b) { return T::addv(a, b); }
template <typename T> __device__ __forceinline__ typename T::S zerop(typename T::S*) { return T::zero(); }
template <typename T> __device__ __forceinline__ typename T::V zerop(typename T::V*) { return T::zerov(); }
template <bool C, typename A, typename B> struct pick { typedef A type; };
template <typename A, typename B> struct pick<false, A, B> { typedef B type; };

// acc[box] += src[box] (and src[box] = 0 when zero_src), one launch type P per element (T::S) or
// per 16-byte vector (T::V, used when both sides' addresses and pitches are 16-byte aligned and
// the row is a whole number of vectors). Wide rows: up to four columns are loaded before any is
// stored; narrow rows: PASS_ROWS rows (PASS_ROWS_V for vectors). A thread reads each of its
// elements before writing it, so the same box on both sides (a self-copy's reverse) is safe.
template <typename T, bool VEC>
__device__ __forceinline__ void region_pass(void* acc, u64 apitch, u64 aslice, void* src, u64 spitch,
                                            u64 sslice, Walk w, unsigned zero_src) {
    typedef typename T::S S;
    typedef typename T::V V;
    typedef typename pick<VEC, V, S>::type P;
    P* a = (P*)acc;
    P* s = (P*)src;
    const u64 width = w.width;
    if (w.step() >= width) {
        const int R = VEC ? PASS_ROWS_V : PASS_ROWS;
        const u64 x = w.first(), n = w.n_rows();
        if (x >= width) return;
        w.batches<R>([&](u64 r, u64 rs) {
            P va[R], vs[R];
#pragma unroll
            for (int k = 0; k < R; k++) {
                if (r + k * rs < n) {
                    u64 y, z;
                    w.yz(r + k * rs, y, z);
                    va[k] = ld(a + z * aslice + y * apitch + x);
                    vs[k] = ld(s + z * sslice + y * spitch + x);
                }
            }
#pragma unroll
            for (int k = 0; k < R; k++) {
                if (r + k * rs < n) {
                    u64 y, z;
                    w.yz(r + k * rs, y, z);
                    st(a + z * aslice + y * apitch + x, addp<T>(va[k], vs[k]));
                    if (zero_src) st(s + z * sslice + y * spitch + x, zerop<T>((P*)0));
                }
            }
        });
        return;
    }
    w.rows([&](u64 y, u64 z, u64 x, u64 step) {
        P* ra = a + z * aslice + y * apitch;
        P* rs = s + z * sslice + y * spitch;
        // Batches of up to four columns: all loads first, then all stores.
        for (; x < width; x += 4 * step) {
            P va[4], vs[4];
#pragma unroll
            for (int k = 0; k < 4; k++) {
                if (x + k * step < width) {
                    va[k] = ld(ra + x + k * step);
                    vs[k] = ld(rs + x + k * step);
                }
            }
#pragma unroll
            for (int k = 0; k < 4; k++) {
                if (x + k * step < width) {
                    st(ra + x + k * step, addp<T>(va[k], vs[k]));
                    if (zero_src) st(rs + x + k * step, zerop<T>((P*)0));
                }
            }
        }
    });
}

#define REGION_KERNELS(NAME, T)                                                                        \
    extern "C" __global__ void region_accumulate_##NAME(void* acc, u64 apitch, u64 aslice, void* src,  \
                                                        u64 spitch, u64 sslice, Walk w, unsigned z) {  \
        region_pass<T, false>(acc, apitch, aslice, src, spitch, sslice, w, z);                         \
    }                                                                                                  \
    extern "C" __global__ void region_accumulate_v_##NAME(void* acc, u64 apitch, u64 aslice, void* src,\
                                                          u64 spitch, u64 sslice, Walk w, unsigned z) {\
        region_pass<T, true>(acc, apitch, aslice, src, spitch, sslice, w, z);                          \
    }

REGION_KERNELS(f32, F32)
REGION_KERNELS(f64, F64)
REGION_KERNELS(f16, F16)
REGION_KERNELS(bf16, BF16)

// dst[box] = value, for element sizes 2, 4, 8 and 16 bytes; a 16-byte launch also serves smaller
// elements with the value repeated (the runtime builds the pattern), when everything is aligned.
template <typename P>
__device__ __forceinline__ void region_fill(P* dst, u64 pitch, u64 slice, Walk w, P value) {
    w.each([&](u64 y, u64 z, u64 x) { dst[z * slice + y * pitch + x] = value; });
}

extern "C" __global__ void region_fill_b2(u16* d, u64 p, u64 s, Walk w, u64 lo, u64 hi) {
    region_fill<u16>(d, p, s, w, (u16)lo);
}
extern "C" __global__ void region_fill_b4(unsigned* d, u64 p, u64 s, Walk w, u64 lo, u64 hi) {
    region_fill<unsigned>(d, p, s, w, (unsigned)lo);
}
extern "C" __global__ void region_fill_b8(u64* d, u64 p, u64 s, Walk w, u64 lo, u64 hi) {
    region_fill<u64>(d, p, s, w, lo);
}
extern "C" __global__ void region_fill_b16(ulonglong2* d, u64 p, u64 s, Walk w, u64 lo, u64 hi) {
    region_fill<ulonglong2>(d, p, s, w, make_ulonglong2(lo, hi));
}

// ---- The deterministic sum of a region (the reverse of `fill`): every element is converted to
// f64 and added in a fixed order: each thread sums its share (fixed by the launch shape, which
// depends on the box and its alignment only), each block reduces its threads with a fixed tree
// and writes one partial per component, and one block of the finishing kernel reduces the
// partials the same way. No atomics: the same inputs give the same bits on every run. C = 2 for
// complex elements (real and imaginary parts summed apart).
//
// Three ways through a box, chosen by the launch (uniform over the grid):
// - vector (walk.vec): rows whose starts share their alignment modulo 16 bytes; each row is
//   `head` reals, whole 16-byte vectors, then a tail. Each thread loads SUM_VECTORS vectors
//   before adding any, and adds lane j of every vector into its accumulator j; the head and tail
//   reals go into one accumulator per component.
// - narrow rows (at most one column of each row per thread): SUM_NARROW_ROWS rows at a time
//   (Walk::batches), row k of a batch into accumulator k mod 4. The runtime sends narrow rows to
//   `region_sum_narrow_*` below instead, whose registers allow more blocks per SM; this path
//   stays because without it nvcc compiles the others differently, and the f32 and c32 sums
//   ran 19-62% slower (docs/performance-notes.md, "Deterministic sum").
// - otherwise: SUM_ROWS columns of a row at a time, column k of a batch into accumulator k mod 4.
// Complex kernels (C = 2) take half as many rows and columns at a time (SUM_C2_DIV), the same
// number of reals in flight: with SUM_ROWS elements of two reals, ptxas gave c32 72 and c64 86
// registers, 3 and 2 blocks per SM where the real kernels (58) have 4, and their sums ran 1-7%
// behind PyTorch's (docs/performance-notes.md, "Complex sums").

#ifndef SUM_ROWS
#define SUM_ROWS 8
#endif
#ifndef SUM_NARROW_ROWS
#define SUM_NARROW_ROWS 8
#endif
#ifndef SUM_VECTORS
#define SUM_VECTORS 4
#endif
#ifndef SUM_C2_DIV
#define SUM_C2_DIV 2
#endif

__device__ __forceinline__ double f16_to_f64(u16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return (double)f;
}
__device__ __forceinline__ double bf16_to_f64(u16 h) { return (double)__uint_as_float((unsigned)h << 16); }

// S: the real type; V: its 16-byte vector of K reals; get: one real in f64; getv: a vector's.
struct SumF32 {
    typedef float S;
    typedef float4 V;
    enum { K = 4 };
    __device__ static double get(S v) { return (double)v; }
    __device__ static void getv(V v, double* d) { d[0] = v.x; d[1] = v.y; d[2] = v.z; d[3] = v.w; }
};
struct SumF64 {
    typedef double S;
    typedef double2 V;
    enum { K = 2 };
    __device__ static double get(S v) { return v; }
    __device__ static void getv(V v, double* d) { d[0] = v.x; d[1] = v.y; }
};
struct SumF16 {
    typedef u16 S;
    typedef uint4 V;
    enum { K = 8 };
    __device__ static double get(S v) { return f16_to_f64(v); }
    __device__ static void getv(V v, double* d) {
        const unsigned u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            d[2 * i] = f16_to_f64((u16)(u[i] & 0xffffu));
            d[2 * i + 1] = f16_to_f64((u16)(u[i] >> 16));
        }
    }
};
struct SumBF16 {
    typedef u16 S;
    typedef uint4 V;
    enum { K = 8 };
    __device__ static double get(S v) { return bf16_to_f64(v); }
    __device__ static void getv(V v, double* d) {
        const unsigned u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            d[2 * i] = (double)__uint_as_float(u[i] << 16);
            d[2 * i + 1] = (double)__uint_as_float(u[i] & 0xffff0000u);
        }
    }
};

#define SUM_THREADS 256

// Reduces `v` over the block (blockDim.x == SUM_THREADS) in a fixed tree (shuffles within each
// warp, then the warps' sums in shared memory); every thread gets the sum.
__device__ __forceinline__ double block_sum(double v, double* sh) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    const unsigned warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = lane < SUM_THREADS / 32 ? sh[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    v = __shfl_sync(0xffffffffu, v, 0);
    __syncthreads();
    return v;
}

// This thread's share of the box, per component, in the order the comment above describes.
template <typename T, int C>
__device__ __forceinline__ void thread_sum(const typename T::S* src, u64 pitch, u64 slice, const Walk& w,
                                           double* total) {
    typedef typename T::S S;
    typedef typename T::V V;
    const u64 width = w.width, n = w.n_rows(), first = w.first(), step = w.step();
    const u64 r0 = w.row0(), rs = w.row_step();
    if (w.vec) {
        const int K = T::K;
        // In reals: a row is `head` reals, nv vectors, then `wr - head - nv * K` reals.
        const u64 wr = width * C, head = w.head, nv = (wr - head) / K, left = wr - nv * K;
        double lane[K], lo[C];
#pragma unroll
        for (int j = 0; j < K; j++) lane[j] = 0.0;
#pragma unroll
        for (int c = 0; c < C; c++) lo[c] = 0.0;
        for (u64 r = r0; r < n; r += rs) {
            const S* row = src + w.at(r, pitch, slice) * C;
            const V* vrow = reinterpret_cast<const V*>(row + head);
            for (u64 v = first; v < nv; v += SUM_VECTORS * step) {
                V b[SUM_VECTORS];
#pragma unroll
                for (int k = 0; k < SUM_VECTORS; k++)
                    if (v + k * step < nv) b[k] = __ldcs(vrow + v + k * step);
#pragma unroll
                for (int k = 0; k < SUM_VECTORS; k++) {
                    if (v + k * step < nv) {
                        double d[K];
                        T::getv(b[k], d);
#pragma unroll
                        for (int j = 0; j < K; j++) lane[j] += d[j];
                    }
                }
            }
            // The head's and tail's reals: j < head is real j, the others follow the vectors.
            for (u64 j = first; j < left; j += step) {
                const u64 i = j < head ? j : nv * K + j;
                const double g = T::get(__ldcs(row + i));
                // Component i % C, without indexing `lo` at run time (which would put it in
                // local memory).
                if (C == 1 || i % C == 0) lo[0] += g;
                else lo[C - 1] += g;
            }
        }
        // Lane j of every vector is real head + j (mod K) of its row: component (head + j) % C.
#pragma unroll
        for (int c = 0; c < C; c++) {
            double t = 0.0;
#pragma unroll
            for (int j = 0; j < K; j++)
                if ((head + j) % C == (u64)c) t += lane[j];
            total[c] = t + lo[c];
        }
        return;
    }
    double acc[C][4];
#pragma unroll
    for (int c = 0; c < C; c++)
#pragma unroll
        for (int k = 0; k < 4; k++) acc[c][k] = 0.0;
    const int NR = C == 1 ? SUM_NARROW_ROWS : SUM_NARROW_ROWS / SUM_C2_DIV;
    const int SR = C == 1 ? SUM_ROWS : SUM_ROWS / SUM_C2_DIV;
    if (step >= width) {
        // Narrow rows: this thread's one column of NR rows at a time.
        if (first < width) {
            w.batches<NR>([&](u64 r, u64 rs) {
                S v[NR][C];
#pragma unroll
                for (int k = 0; k < NR; k++)
                    if (r + k * rs < n) {
                        const S* p = src + (w.at(r + k * rs, pitch, slice) + first) * C;
#pragma unroll
                        for (int c = 0; c < C; c++) v[k][c] = __ldcs(p + c);
                    }
#pragma unroll
                for (int k = 0; k < NR; k++)
                    if (r + k * rs < n)
#pragma unroll
                        for (int c = 0; c < C; c++) acc[c][k % 4] += T::get(v[k][c]);
            });
        }
    } else {
        // Pitches are in elements; component c of element x is at x * C + c.
        for (u64 r = r0; r < n; r += rs) {
            const S* row = src + w.at(r, pitch, slice) * C;
            for (u64 x = first; x < width; x += SR * step) {
                S v[SR][C];
#pragma unroll
                for (int k = 0; k < SR; k++)
                    if (x + k * step < width)
#pragma unroll
                        for (int c = 0; c < C; c++) v[k][c] = __ldcs(row + (x + k * step) * C + c);
#pragma unroll
                for (int k = 0; k < SR; k++)
                    if (x + k * step < width)
#pragma unroll
                        for (int c = 0; c < C; c++) acc[c][k % 4] += T::get(v[k][c]);
            }
        }
    }
#pragma unroll
    for (int c = 0; c < C; c++) total[c] = (acc[c][0] + acc[c][1]) + (acc[c][2] + acc[c][3]);
}

template <typename T, int C>
__device__ __forceinline__ void region_sum(const typename T::S* src, u64 pitch, u64 slice, Walk w,
                                           double* partials) {
    __shared__ double sh[SUM_THREADS / 32];
    double total[C];
    thread_sum<T, C>(src, pitch, slice, w, total);
    const u64 block = (u64)blockIdx.y * gridDim.x + blockIdx.x;
    for (int c = 0; c < C; c++) {
        double t = block_sum(total[c], sh);
        if (threadIdx.x == 0) partials[block * C + c] = t;
    }
}

#define SUM_KERNEL(NAME, T, C)                                                                      \
    extern "C" __global__ void region_sum_##NAME(const T::S* src, u64 p, u64 s, Walk w, double* out) { \
        region_sum<T, C>(src, p, s, w, out);                                                        \
    }

SUM_KERNEL(f32, SumF32, 1)
SUM_KERNEL(f64, SumF64, 1)
SUM_KERNEL(f16, SumF16, 1)
SUM_KERNEL(bf16, SumBF16, 1)
SUM_KERNEL(c32, SumF32, 2)
SUM_KERNEL(c64, SumF64, 2)

// Narrow rows (at most one column of each row per thread: rows of fewer than 128 elements): each
// thread loads its column of R rows (Walk::batches) before adding any, row k of a batch into
// accumulator k mod 4, then the block's tree as above. A kernel of its own: with the vector
// path's registers the kernel above runs at half occupancy, too few bytes in flight for 4-byte
// loads (docs/performance-notes.md, "Narrow rows"). R keeps about 64 bytes per thread in flight (48 for
// 16-bit elements: 24 rows, where 16 left the 1-wide bf16 box behind PyTorch's and 32 spilled
// in f16; tools/kernel-explore/complex_sum_and_array_words.cu); the runtime's grid (sum.rs, narrow_rows) assumes
// these values. The launch bounds hold the registers to 4 blocks per SM (5 for f32, which spills a few
// bytes there and gains 3-10%; f16 and f64 lost as much at 5: narrow_sum_kernel.cu).
#ifndef SUM_NARROW_ROWS_4
#define SUM_NARROW_ROWS_4 16
#endif
#ifndef SUM_NARROW_ROWS_8
#define SUM_NARROW_ROWS_8 8
#endif
#ifndef SUM_NARROW_ROWS_16
#define SUM_NARROW_ROWS_16 4
#endif
#ifndef SUM_NARROW_BLOCKS
#define SUM_NARROW_BLOCKS 4
#endif
#ifndef SUM_NARROW_BLOCKS_F32
#define SUM_NARROW_BLOCKS_F32 5
#endif
#ifndef SUM_NARROW_BLOCKS_BF16
#define SUM_NARROW_BLOCKS_BF16 4
#endif
#ifndef SUM_NARROW_ROWS_2
#define SUM_NARROW_ROWS_2 24
#endif
#ifndef NARROW_PAIRS
#define NARROW_PAIRS 1
#endif

// This thread's column of its rows. The rows of a batch are rpb = blockDim.x >> tpr_log2 apart
// (a power of two); the next row's offset follows from the last one's (y + ry wraps into the next
// slice at most once), so a batch costs one division, and few registers stay live while its
// loads are in flight.
template <typename T, int C, int R, bool SLICES, bool PAIR>
__device__ __forceinline__ void narrow_rows(const typename T::S* src, u64 pitch, u64 slice, const Walk& w,
                                            double (&acc)[C][4]) {
    typedef typename T::S S;
    const u64 n = w.n_rows(), height = w.height;
    const unsigned rpb_log2 = 8 - w.tpr_log2;  // SUM_THREADS = 256 threads per block
    const u64 rpb = 1ull << rpb_log2;
    const u64 qz = rpb / height, ry = rpb - qz * height;
    // Offsets in elements; u64 arithmetic wraps, so a negative step is fine.
    const u64 d1 = qz * slice + ry * pitch, d2 = d1 + slice - height * pitch;
    const u64 col = w.first();
    w.batches<R>([&](u64 r, u64) {
        // The batch's first row of this thread: past the box's end in the last batch when the box
        // ends within it (and always, when it has fewer rows than a block's row groups).
        if (r >= n) return;
        const u64 m = (n - r + rpb - 1) >> rpb_log2;  // rows of this batch in the box
        u64 z = r / height, y = r - z * height;
        const u64 at0 = z * slice + y * pitch + col;
        u64 at = at0;
        S v[R][C];
#pragma unroll
        for (int k = 0; k < R; k++) {
            // Rows past the box's end (the last batch only) load the batch's first row again and
            // are not added: the loads need no branch, so they all issue back to back.
            const S* p = src + ((u64)k < m ? at : at0) * C;
            if (PAIR) {
                // c32 at an 8-byte aligned start: an element in one 8-byte load.
                const float2 t = __ldcs(reinterpret_cast<const float2*>(p));
                v[k][0] = t.x;
                v[k][C - 1] = t.y;
            } else {
#pragma unroll
                for (int c = 0; c < C; c++) v[k][c] = __ldcs(p + c);
            }
            if (SLICES) {
                y += ry;
                const bool wrap = y >= height;
                if (wrap) y -= height;
                at += wrap ? d2 : d1;
            } else {
                at += d1;
            }
        }
#pragma unroll
        for (int k = 0; k < R; k++)
            if ((u64)k < m)
#pragma unroll
                for (int c = 0; c < C; c++) acc[c][k % 4] += T::get(v[k][c]);
    });
}

template <typename T, int C, int R>
__device__ __forceinline__ void region_sum_narrow(const typename T::S* src, u64 pitch, u64 slice, Walk w,
                                                  double* partials) {
    __shared__ double sh[SUM_THREADS / 32];
    double acc[C][4];
#pragma unroll
    for (int c = 0; c < C; c++)
#pragma unroll
        for (int k = 0; k < 4; k++) acc[c][k] = 0.0;
    // Boxes of several slices take half as many rows at a time (the runtime's grid assumes it):
    // their offsets take more registers.
    // c32 whose first element is 8-byte aligned (then every element is: pitches are in
    // elements) loads an element with one 8-byte load instead of two of 4 bytes, as f64 does.
    const bool pair = NARROW_PAIRS && C == 2 && sizeof(typename T::S) == 4 && ((u64)src & 7) == 0;
    if (w.first() < w.width) {
        if (pair) {
            if (w.depth > 1) narrow_rows<T, C, (R > 1 ? R / 2 : 1), true, true>(src, pitch, slice, w, acc);
            else narrow_rows<T, C, R, false, true>(src, pitch, slice, w, acc);
        } else {
            if (w.depth > 1) narrow_rows<T, C, (R > 1 ? R / 2 : 1), true, false>(src, pitch, slice, w, acc);
            else narrow_rows<T, C, R, false, false>(src, pitch, slice, w, acc);
        }
    }
    const u64 block = (u64)blockIdx.y * gridDim.x + blockIdx.x;
    for (int c = 0; c < C; c++) {
        double t = block_sum((acc[c][0] + acc[c][1]) + (acc[c][2] + acc[c][3]), sh);
        if (threadIdx.x == 0) partials[block * C + c] = t;
    }
}

#define SUM_NARROW_KERNEL(NAME, T, C, R, BLOCKS)                                                    \
    extern "C" __global__ void __launch_bounds__(SUM_THREADS, BLOCKS)                              \
        region_sum_narrow_##NAME(const T::S* src, u64 p, u64 s, Walk w, double* out) {           \
        region_sum_narrow<T, C, R>(src, p, s, w, out);                                              \
    }

SUM_NARROW_KERNEL(f32, SumF32, 1, SUM_NARROW_ROWS_4, SUM_NARROW_BLOCKS_F32)
SUM_NARROW_KERNEL(f64, SumF64, 1, SUM_NARROW_ROWS_8, SUM_NARROW_BLOCKS)
SUM_NARROW_KERNEL(f16, SumF16, 1, SUM_NARROW_ROWS_2, SUM_NARROW_BLOCKS)
SUM_NARROW_KERNEL(bf16, SumBF16, 1, SUM_NARROW_ROWS_2, SUM_NARROW_BLOCKS_BF16)
SUM_NARROW_KERNEL(c32, SumF32, 2, SUM_NARROW_ROWS_8, SUM_NARROW_BLOCKS)
SUM_NARROW_KERNEL(c64, SumF64, 2, SUM_NARROW_ROWS_16, SUM_NARROW_BLOCKS)

// This thread's share of `blocks` partials of `comps` components, component c: partials
// threadIdx.x, + SUM_THREADS, ... added in that order; eight loads in flight.
__device__ __forceinline__ double partials_sum(const double* partials, u64 blocks, unsigned comps, unsigned c) {
    double v = 0.0;
    for (u64 i0 = threadIdx.x; i0 < blocks; i0 += 8 * SUM_THREADS) {
        double p[8];
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const u64 i = i0 + (u64)k * SUM_THREADS;
            p[k] = i < blocks ? partials[i * comps + c] : 0.0;
        }
#pragma unroll
        for (int k = 0; k < 8; k++)
            if (i0 + (u64)k * SUM_THREADS < blocks) v += p[k];
    }
    return v;
}

// One block: sums `blocks` partials of `comps` components each, in a fixed order, into
// out[0..comps] (f64).
extern "C" __global__ void region_sum_finish(const double* partials, u64 blocks, unsigned comps, double* out) {
    __shared__ double sh[SUM_THREADS / 32];
    for (unsigned c = 0; c < comps; c++) {
        double total = block_sum(partials_sum(partials, blocks, comps, c), sh);
        if (threadIdx.x == 0) out[c] = total;
    }
}

// f64 → f32 with round-to-odd (the sticky bit set when inexact): rounding that to a narrower
// format (f16: 11 bits, bf16: 8 bits, both ≤ 24 - 2) to nearest-even is then the correctly
// rounded f64 → narrow conversion, with no double-rounding error.
__device__ __forceinline__ float f32_round_odd(double d) {
    float f = __double2float_rz(d);
    if ((double)f != d && d == d) f = __uint_as_float(__float_as_uint(f) | 1u);
    return f;
}
__device__ __forceinline__ u16 f16_from_f64(double d) {
    u16 h;
    float f = f32_round_odd(d);
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

struct FromF32 { typedef F32 T; __device__ static float from(double d) { return __double2float_rn(d); } };
struct FromF64 { typedef F64 T; __device__ static double from(double d) { return d; } };
struct FromF16 { typedef F16 T; __device__ static u16 from(double d) { return f16_from_f64(d); } };
struct FromBF16 { typedef BF16 T; __device__ static u16 from(double d) { return (u16)bf16_round(f32_round_odd(d)); } };

// One block: acc[c] += (the sum of the partials of component c), rounded once to the element
// type: the device-resident value of a fill receives its derivative without a host wait.
template <typename C, int COMPS>
__device__ __forceinline__ void sum_finish_add(const double* partials, u64 blocks, typename C::T::S* acc) {
    __shared__ double sh[SUM_THREADS / 32];
    for (int c = 0; c < COMPS; c++) {
        double total = block_sum(partials_sum(partials, blocks, COMPS, c), sh);
        if (threadIdx.x == 0) acc[c] = C::T::add(acc[c], C::from(total));
    }
}

#define SUM_ADD_KERNEL(NAME, C, COMPS)                                                               \
    extern "C" __global__ void region_sum_add_##NAME(const double* p, u64 blocks, C::T::S* acc) {  \
        sum_finish_add<C, COMPS>(p, blocks, acc);                                                    \
    }

SUM_ADD_KERNEL(f32, FromF32, 1)
SUM_ADD_KERNEL(f64, FromF64, 1)
SUM_ADD_KERNEL(f16, FromF16, 1)
SUM_ADD_KERNEL(bf16, FromBF16, 1)
SUM_ADD_KERNEL(c32, FromF32, 2)
SUM_ADD_KERNEL(c64, FromF64, 2)

// ---- Zeroing a box of a CUDA array, which memset cannot do (the reason the seed dropped array
// support): surface stores of zero bits, one element per thread, for element sizes 2, 4, 8 and 16
// bytes. The store's geometry must be the array's (`dims` 1, 2 or 3). The box starts at element
// (x0, y0, z0) and is w x h x gridDim.z elements; the runtime checked it against the array.
// Several times faster than a copy from a zeroed linear buffer (docs/arrays.md).
template <typename P>
__device__ __forceinline__ void surface_zero(u64 surf, unsigned dims, int x0, int y0, int z0, int w, int h, P zero) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    int bx = (x0 + x) * (int)sizeof(P);
    if (dims == 1) surf1Dwrite(zero, surf, bx);
    else if (dims == 2) surf2Dwrite(zero, surf, bx, y0 + y);
    else surf3Dwrite(zero, surf, bx, y0 + y, z0 + (int)blockIdx.z);
}

extern "C" __global__ void surface_zero_b2(u64 s, unsigned dims, int x, int y, int z, int w, int h) {
    surface_zero<u16>(s, dims, x, y, z, w, h, (u16)0);
}
extern "C" __global__ void surface_zero_b4(u64 s, unsigned dims, int x, int y, int z, int w, int h) {
    surface_zero<unsigned>(s, dims, x, y, z, w, h, 0u);
}
extern "C" __global__ void surface_zero_b8(u64 s, unsigned dims, int x, int y, int z, int w, int h) {
    surface_zero<uint2>(s, dims, x, y, z, w, h, make_uint2(0u, 0u));
}
extern "C" __global__ void surface_zero_b16(u64 s, unsigned dims, int x, int y, int z, int w, int h) {
    surface_zero<uint4>(s, dims, x, y, z, w, h, make_uint4(0u, 0u, 0u, 0u));
}

// ---- Reverses with a CUDA array on one side and device memory on the other, in one pass: the
// array box is read (and written) through the array's surface, so nothing is staged through linear
// memory. MODE 0: lin += arr; 1: lin += arr, arr = 0; 2: arr += lin; 3: arr += lin, lin = 0.
// T is the real type's struct, C the components per element (2 for complex), P the surface word
// of one element. The linear box is `lin` with strides `row` and `slice` in elements; the array
// box starts at element (x0, y0, z0) and is w x h x gridDim.z elements, as for surface_zero.
template <typename P> __device__ __forceinline__ P surf_load(u64 s, unsigned dims, int bx, int y, int z) {
    if (dims == 1) return surf1Dread<P>(s, bx);
    if (dims == 2) return surf2Dread<P>(s, bx, y);
    return surf3Dread<P>(s, bx, y, z);
}
template <typename P> __device__ __forceinline__ void surf_store(P v, u64 s, unsigned dims, int bx, int y, int z) {
    if (dims == 1) surf1Dwrite(v, s, bx);
    else if (dims == 2) surf2Dwrite(v, s, bx, y);
    else surf3Dwrite(v, s, bx, y, z);
}

// Each thread takes ARRAY_PASS_ELEMS elements, a block's height apart (a block's width apart
// for 1D arrays, whose blocks are one row of threads), and loads all of them, from the array and
// from the linear box, before it stores any: with one element per thread too few loads were in
// flight to cover the memory's latency (docs/performance-notes.md). The runtime sizes the grid to match.
#ifndef ARRAY_PASS_ELEMS
#define ARRAY_PASS_ELEMS 4
#endif

template <typename T, int C, typename P>
__device__ __forceinline__ void array_pass(u64 surf, unsigned dims, int x0, int y0, int z0, int w, int h,
                                           typename T::S* lin, u64 row, u64 slice, unsigned mode) {
    typedef typename T::S S;
    union Word { P p; S s[C]; };
    const int E = ARRAY_PASS_ELEMS;
    const bool along_x = blockDim.y == 1;
    const int x = blockIdx.x * blockDim.x * (along_x ? E : 1) + threadIdx.x;
    const int y = blockIdx.y * blockDim.y * (along_x ? 1 : E) + threadIdx.y;
    const int dx = along_x ? blockDim.x : 0, dy = along_x ? 0 : blockDim.y;
    const int az = z0 + (int)blockIdx.z;
    Word a[E];
    S l[E][C];
#pragma unroll
    for (int k = 0; k < E; k++) {
        const int xk = x + k * dx, yk = y + k * dy;
        if (xk < w && yk < h) {
            a[k].p = surf_load<P>(surf, dims, (x0 + xk) * (int)sizeof(P), y0 + yk, az);
            const S* lk = lin + ((u64)blockIdx.z * slice + (u64)yk * row + (u64)xk) * C;
#pragma unroll
            for (int c = 0; c < C; c++) l[k][c] = lk[c];
        }
    }
#pragma unroll
    for (int k = 0; k < E; k++) {
        const int xk = x + k * dx, yk = y + k * dy;
        if (xk < w && yk < h) {
            const int bx = (x0 + xk) * (int)sizeof(P), ay = y0 + yk;
            S* lk = lin + ((u64)blockIdx.z * slice + (u64)yk * row + (u64)xk) * C;
            if (mode < 2) {
#pragma unroll
                for (int c = 0; c < C; c++) lk[c] = T::add(l[k][c], a[k].s[c]);
                if (mode == 1) {
                    Word z;
#pragma unroll
                    for (int c = 0; c < C; c++) z.s[c] = T::zero();
                    surf_store<P>(z.p, surf, dims, bx, ay, az);
                }
            } else {
#pragma unroll
                for (int c = 0; c < C; c++) a[k].s[c] = T::add(a[k].s[c], l[k][c]);
                surf_store<P>(a[k].p, surf, dims, bx, ay, az);
                if (mode == 3)
#pragma unroll
                    for (int c = 0; c < C; c++) lk[c] = T::zero();
            }
        }
    }
}

// array_pass_w_*: the same reverses, each thread taking ARRAY_PASS_ELEMS 16-byte words of its row
// (a block's height apart) instead of elements: a row is w / EPW words, then its last w % EPW
// elements one by one, so no access reaches past the box. The runtime launches them where the
// array box starts at a multiple of 16 bytes along x, the linear box's start and strides are
// multiples of 16 bytes, and the array is 3D (docs/performance-notes.md, "CUDA array one-pass
// reverse": 4-byte
// surface accesses cost the L2 1.5-1.9x the sector requests their bytes need, and 3D boxes ran
// 10-28% faster in words; 2D ones were level or slower). A word is a whole 16-byte chunk of the
// array's block-linear layout. Kernels of their own, so that the element kernels above keep their
// registers (38 for f32; the two in one kernel took 56, and the element path got 8-110% slower).
template <typename T, int C, typename P>
__device__ __forceinline__ void array_pass_words(u64 surf, unsigned dims, int x0, int y0, int z0, int w, int h,
                                           typename T::S* lin, u64 row, u64 slice, unsigned mode) {
    typedef typename T::S S;
    typedef typename T::V V;
    const int K = 16 / (int)sizeof(S);  // reals per word
    const int EPW = K / C;              // elements per word
    union Word { uint4 u; V v; P p; S s[K]; };
    const int E = ARRAY_PASS_ELEMS;
    // Words per row, then threads per row: one per word, one per element left over.
    const int wv = EPW > 1 ? w / EPW : 0;
    const int units = wv + (w - wv * EPW);
    const bool along_x = blockDim.y == 1;
    const int x = blockIdx.x * blockDim.x * (along_x ? E : 1) + threadIdx.x;
    const int y = blockIdx.y * blockDim.y * (along_x ? 1 : E) + threadIdx.y;
    const int dx = along_x ? blockDim.x : 0, dy = along_x ? 0 : blockDim.y;
    const int az = z0 + (int)blockIdx.z;
    const int bx0 = x0 * (int)sizeof(P);
    Word a[E], l[E];
#pragma unroll
    for (int k = 0; k < E; k++) {
        const int xk = x + k * dx, yk = y + k * dy;
        if (xk < units && yk < h) {
            const S* lr = lin + ((u64)blockIdx.z * slice + (u64)yk * row) * C;
            if (xk < wv) {
                a[k].u = surf_load<uint4>(surf, dims, bx0 + xk * 16, y0 + yk, az);
                l[k].v = *reinterpret_cast<const V*>(lr + (u64)xk * K);
            } else {
                const int e = wv * EPW + (xk - wv);
                a[k].p = surf_load<P>(surf, dims, bx0 + e * (int)sizeof(P), y0 + yk, az);
#pragma unroll
                for (int c = 0; c < C; c++) l[k].s[c] = lr[(u64)e * C + c];
            }
        }
    }
#pragma unroll
    for (int k = 0; k < E; k++) {
        const int xk = x + k * dx, yk = y + k * dy;
        if (xk < units && yk < h) {
            S* lr = lin + ((u64)blockIdx.z * slice + (u64)yk * row) * C;
            const int ay = y0 + yk;
            if (xk < wv) {
                const int bx = bx0 + xk * 16;
                V* lk = reinterpret_cast<V*>(lr + (u64)xk * K);
                if (mode < 2) {
                    *lk = T::addv(l[k].v, a[k].v);
                    if (mode == 1) surf_store<uint4>(make_uint4(0u, 0u, 0u, 0u), surf, dims, bx, ay, az);
                } else {
                    a[k].v = T::addv(a[k].v, l[k].v);
                    surf_store<uint4>(a[k].u, surf, dims, bx, ay, az);
                    if (mode == 3) *lk = T::zerov();
                }
            } else {
                const int e = wv * EPW + (xk - wv);
                const int bx = bx0 + e * (int)sizeof(P);
                S* lk = lr + (u64)e * C;
                if (mode < 2) {
#pragma unroll
                    for (int c = 0; c < C; c++) lk[c] = T::add(l[k].s[c], a[k].s[c]);
                    if (mode == 1) {
                        Word z;
#pragma unroll
                        for (int c = 0; c < C; c++) z.s[c] = T::zero();
                        surf_store<P>(z.p, surf, dims, bx, ay, az);
                    }
                } else {
#pragma unroll
                    for (int c = 0; c < C; c++) a[k].s[c] = T::add(a[k].s[c], l[k].s[c]);
                    surf_store<P>(a[k].p, surf, dims, bx, ay, az);
                    if (mode == 3)
#pragma unroll
                        for (int c = 0; c < C; c++) lk[c] = T::zero();
                }
            }
        }
    }
}

#define ARRAY_PASS_KERNEL(NAME, T, C, P)                                                          \
    extern "C" __global__ void array_pass_##NAME(u64 s, unsigned dims, int x, int y, int z, int w, \
                                                 int h, T::S* lin, u64 row, u64 slice,            \
                                                 unsigned mode) {                                 \
        array_pass<T, C, P>(s, dims, x, y, z, w, h, lin, row, slice, mode);                       \
    }

ARRAY_PASS_KERNEL(f32, F32, 1, unsigned)
ARRAY_PASS_KERNEL(f64, F64, 1, uint2)
ARRAY_PASS_KERNEL(f16, F16, 1, u16)
ARRAY_PASS_KERNEL(bf16, BF16, 1, u16)
ARRAY_PASS_KERNEL(c32, F32, 2, uint2)
ARRAY_PASS_KERNEL(c64, F64, 2, uint4)

#define ARRAY_WORDS_KERNEL(NAME, T, C, P)                                                         \
    extern "C" __global__ void array_pass_w_##NAME(u64 s, unsigned dims, int x, int y, int z,      \
                                                   int w, int h, T::S* lin, u64 row, u64 slice,   \
                                                   unsigned mode) {                               \
        array_pass_words<T, C, P>(s, dims, x, y, z, w, h, lin, row, slice, mode);                  \
    }

ARRAY_WORDS_KERNEL(f32, F32, 1, unsigned)
ARRAY_WORDS_KERNEL(f64, F64, 1, uint2)
ARRAY_WORDS_KERNEL(f16, F16, 1, u16)
ARRAY_WORDS_KERNEL(bf16, BF16, 1, u16)
ARRAY_WORDS_KERNEL(c32, F32, 2, uint2)
ARRAY_WORDS_KERNEL(c64, F64, 2, uint4)
