// Does any shape or math make the 16-bit accumulate faster, and does a fill kernel zero faster than
// the memset after it (docs/performance-notes.md, "Whole-buffer accumulate", "Fused
// accumulate-and-zero, and zeroing")? At n = 16M, 64M, 256M, in the same run, against a cudaMemcpyAsync D2D copy of the same bytes:
//  - the shipped accumulate kernel (shadow_pass of shadow.cu, copied verbatim) for f32, f16, bf16,
//    and "tile" variants: VPT 16-byte vectors per thread (block-contiguous, so each load
//    instruction of a warp is coalesced), plain or .cs loads/stores, 128/256/512 threads, one pass
//    (grid = nv / (threads * VPT)) or grid-stride over SMs x 8 blocks, and for 16-bit types the
//    math: hardware f16x2 / shipped bf16 via f32 + integer rounding, f32 math (PyTorch's opmath),
//    native bf16x2 add (sm_90), f32 add + cvt.rn.bf16x2.f32;
//  - zeroing: cudaMemsetAsync against fill kernels (16-byte stores, plain or .cs, one pass or
//    grid-stride, 1 or 4 vectors per thread);
//  - accumulate-and-zero: the shipped fused kernel, shipped accumulate + memset (the current
//    route above 32 MiB), shipped accumulate + fill kernels, and a PyTorch-like pair.
// Timing as benches/shadow_ops.rs: CUDA events around k back-to-back calls (k = 20 below 64 MiB
// moved, 4 below 1 GiB, 1 above), 3 warm-up calls, median of 21 repetitions, per call; two passes
// over all variants of a (dtype, n), the better median of each kept. Bandwidth = bytes read +
// written. Every variant is first checked bit for bit against the shipped kernel at n = 1M.
//   nvcc -O3 -arch=sm_90 -std=c++17 -o half_accumulate_and_zero_fill half_accumulate_and_zero_fill.cu && ./half_accumulate_and_zero_fill
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <functional>
#include <algorithm>
#include <map>
#include <cuda_runtime.h>
typedef unsigned long long u64;
typedef unsigned short u16;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

// ---- Copied from rules-runtime/src/device/shadow.cu (keep in sync) ----
struct F32 {
    typedef float S;
    typedef float4 V;
    __device__ static S add(S a, S b) { return a + b; }
    __device__ static V addv(V a, V b) { return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w); }
    __device__ static S zero() { return 0.0f; }
    __device__ static V zerov() { return make_float4(0.f, 0.f, 0.f, 0.f); }
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
            V a = __ldcs(av + i);
            V s = __ldcs(sv + i);
            __stcs(av + i, T::addv(a, s));
            if (ZERO) __stcs(sv + i, T::zerov());
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
template <typename T, bool Z> __global__ void shipped(typename T::S* a, typename T::S* s, u64 n) { shadow_pass<T, Z>(a, s, n); }
// ---- end of the copy ----

// Other math for the 16-bit types (same bits as the shipped kernels for non-NaN inputs). Inline PTX,
// so that no cuda_fp16.h / cuda_bf16.h (which need CCCL's <nv/target>) is needed.
__device__ __forceinline__ float2 f16x2_to_f32(unsigned a) {
    float lo, hi;
    asm("{.reg .b16 l, h; mov.b32 {l, h}, %2; cvt.f32.f16 %0, l; cvt.f32.f16 %1, h;}" : "=f"(lo), "=f"(hi) : "r"(a));
    return make_float2(lo, hi);
}
struct F16f32 {  // PyTorch's opmath: widen to f32, add, round to f16 (cvt.rn.f16x2.f32, sm_80+)
    typedef u16 S; typedef uint4 V;
    __device__ static unsigned add2(unsigned a, unsigned b) {
        float2 x = f16x2_to_f32(a), y = f16x2_to_f32(b);
        unsigned d;
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(x.y + y.y), "f"(x.x + y.x));  // first operand -> upper half
        return d;
    }
    __device__ static V addv(V a, V b) { return make_uint4(add2(a.x, b.x), add2(a.y, b.y), add2(a.z, b.z), add2(a.w, b.w)); }
};
struct BF16hw {  // native bf16x2 add (add.rn.bf16x2, sm_90)
    typedef u16 S; typedef uint4 V;
    __device__ static unsigned add2(unsigned a, unsigned b) {
        unsigned d;
        asm("add.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
        return d;
    }
    __device__ static V addv(V a, V b) { return make_uint4(add2(a.x, b.x), add2(a.y, b.y), add2(a.z, b.z), add2(a.w, b.w)); }
};
struct BF16cvt {  // f32 add, then cvt.rn.bf16x2.f32 (sm_80+): PyTorch's opmath
    typedef u16 S; typedef uint4 V;
    __device__ static unsigned add2(unsigned a, unsigned b) {
        float lo = __uint_as_float(a << 16) + __uint_as_float(b << 16);
        float hi = __uint_as_float(a & 0xffff0000u) + __uint_as_float(b & 0xffff0000u);
        unsigned d;
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
        return d;
    }
    __device__ static V addv(V a, V b) { return make_uint4(add2(a.x, b.x), add2(a.y, b.y), add2(a.z, b.z), add2(a.w, b.w)); }
};

template <bool CS, typename V> __device__ __forceinline__ V ldv(const V* p) { if constexpr (CS) return __ldcs(p); else return *p; }
template <bool CS, typename V> __device__ __forceinline__ void stv(V* p, V v) { if constexpr (CS) __stcs(p, v); else *p = v; }

// Tile kernel: a block covers blockDim.x * VPT consecutive vectors, thread t takes t, t + blockDim.x, ...
// (all loads first, then the stores); GS: grid-stride over tiles, else one tile per block.
template <typename T, int VPT, bool CS, bool GS, bool ZERO>
__global__ void acc_tile(typename T::V* a, typename T::V* s, u64 nv) {
    typedef typename T::V V;
    const u64 tile = (u64)blockDim.x * VPT;
    for (u64 base = (u64)blockIdx.x * tile; base < nv; base += (u64)gridDim.x * tile) {
        V x[VPT], y[VPT];
#pragma unroll
        for (int k = 0; k < VPT; k++) {
            u64 i = base + (u64)k * blockDim.x + threadIdx.x;
            if (i < nv) { x[k] = ldv<CS>(a + i); y[k] = ldv<CS>(s + i); }
        }
#pragma unroll
        for (int k = 0; k < VPT; k++) {
            u64 i = base + (u64)k * blockDim.x + threadIdx.x;
            if (i < nv) {
                stv<CS>(a + i, T::addv(x[k], y[k]));
                if (ZERO) stv<CS>(s + i, make_uint4(0, 0, 0, 0));
            }
        }
        if (!GS) break;
    }
}
template <int VPT, bool CS, bool GS>
__global__ void fill_tile(uint4* p, u64 nv) {
    const u64 tile = (u64)blockDim.x * VPT;
    for (u64 base = (u64)blockIdx.x * tile; base < nv; base += (u64)gridDim.x * tile) {
#pragma unroll
        for (int k = 0; k < VPT; k++) {
            u64 i = base + (u64)k * blockDim.x + threadIdx.x;
            if (i < nv) stv<CS>(p + i, make_uint4(0, 0, 0, 0));
        }
        if (!GS) break;
    }
}
// float4 and uint4 share the layout; the tile kernels take uint4 for the zero stores.
struct F32u { typedef float S; typedef uint4 V;
    __device__ static V addv(V a, V b) {
        float4 r = F32::addv(*reinterpret_cast<float4*>(&a), *reinterpret_cast<float4*>(&b));
        return *reinterpret_cast<uint4*>(&r);
    }
};

template <typename F> double timeit(F f, u64 moved, int reps = 21) {
    int k = moved >= (1ull << 30) ? 1 : moved >= (64ull << 20) ? 4 : 20;
    for (int i = 0; i < 3; i++) f();
    CK(cudaDeviceSynchronize());
    static cudaEvent_t a = 0, b = 0;
    if (!a) { CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b)); }
    std::vector<double> t;
    for (int r = 0; r < reps; r++) {
        CK(cudaEventRecord(a, 0));
        for (int i = 0; i < k; i++) f();
        CK(cudaEventRecord(b, 0)); CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms * 1e3 / k);
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end()); return t[t.size() / 2];
}

// Small non-zero values (both operands), deterministic.
__global__ void init(void* p, u64 n, int size, unsigned seed) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed; h ^= h >> 15; h *= 2246822519u; h ^= h >> 13;
        float v = 1e-4f + (h & 0xffffff) * (1e-3f / 16777216.f);
        if (size == 4) ((float*)p)[i] = v;
        else if (size == 2) { u16 h16; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h16) : "f"(v)); ((u16*)p)[i] = h16; }
        else ((u16*)p)[i] = (u16)bf16_round(v);
    }
}

enum Kind { COPY, ACC, ZERO, ACCZ };
struct Var { std::string name; Kind kind; std::function<void(void*, void*, u64)> run; };  // run(a, s, n elements)

static int nsm = 0;
static unsigned blocks(u64 nv, int threads, int vpt) {
    u64 b = (nv + (u64)threads * vpt - 1) / ((u64)threads * vpt);
    return (unsigned)std::min<u64>(std::max<u64>(b, 1), (1ull << 31) - 1);
}

// The variants of one dtype. SZ: element size; T: shipped type; M: f32-math type; H: the third math (or M).
template <typename T, typename TU, typename M, typename H>
std::vector<Var> variants(int sz, const char* mname, const char* hname, bool zero_rows) {
    const u64 K = 16 / sz;
    std::vector<Var> v;
    typedef typename T::S S;
    auto ship_acc = [](void* a, void* s, u64 n) { shipped<T, false><<<blocks(n / (16 / sizeof(S)), 256, 1), 256>>>((S*)a, (S*)s, n); };
    auto ship_fused = [](void* a, void* s, u64 n) { shipped<T, true><<<blocks(n / (16 / sizeof(S)), 256, 1), 256>>>((S*)a, (S*)s, n); };
    v.push_back({"D2D cudaMemcpyAsync", COPY, [sz](void* a, void* s, u64 n) { CK(cudaMemcpyAsync(a, s, n * sz, cudaMemcpyDeviceToDevice, 0)); }});
    // accumulate
    v.push_back({"acc shipped (gs 1x16B cs 256t)", ACC, ship_acc});
#define TILE(TT, VPT, CS, GS, THR, NAME)                                                                        \
    v.push_back({NAME, ACC, [K](void* a, void* s, u64 n) {                                                      \
        u64 nv = n / K;                                                                                          \
        unsigned g = GS ? (unsigned)(nsm * (2048 / THR)) : blocks(nv, THR, VPT);                                 \
        acc_tile<TT, VPT, CS, GS, false><<<g, THR>>>((uint4*)a, (uint4*)s, nv);                                  \
    }})
    TILE(TU, 1, true, false, 256, "acc tile 1x16B cs 256t 1pass");
    TILE(TU, 1, false, false, 256, "acc tile 1x16B plain 256t 1pass");
    TILE(TU, 1, true, false, 512, "acc tile 1x16B cs 512t 1pass");
    TILE(TU, 1, false, false, 512, "acc tile 1x16B plain 512t 1pass");
    TILE(TU, 1, false, false, 128, "acc tile 1x16B plain 128t 1pass");
    TILE(TU, 2, true, false, 256, "acc tile 2x16B cs 256t 1pass");
    TILE(TU, 2, false, false, 256, "acc tile 2x16B plain 256t 1pass");
    TILE(TU, 4, false, false, 256, "acc tile 4x16B plain 256t 1pass");
    TILE(TU, 2, false, false, 128, "acc tile 2x16B plain 128t 1pass");
    TILE(TU, 2, true, true, 256, "acc tile 2x16B cs 256t gs(SMx8)");
    if (sz == 2) {
        TILE(M, 1, true, false, 256, (std::string("acc tile 1x16B cs 256t 1pass ") + mname).c_str());
        TILE(M, 1, false, false, 256, (std::string("acc tile 1x16B plain 256t 1pass ") + mname).c_str());
        TILE(M, 1, false, false, 128, (std::string("acc tile 1x16B plain 128t 1pass ") + mname).c_str());
        TILE(M, 2, false, false, 256, (std::string("acc tile 2x16B plain 256t 1pass ") + mname).c_str());
        if (hname) {
            TILE(H, 1, true, false, 256, (std::string("acc tile 1x16B cs 256t 1pass ") + hname).c_str());
            TILE(H, 1, false, false, 256, (std::string("acc tile 1x16B plain 256t 1pass ") + hname).c_str());
        }
    }
    // zeroing (bytes n * sz)
#define FILL(VPT, CS, GS, THR) [sz](void*, void* s, u64 n) {                                                  \
        u64 nv = n * sz / 16;                                                                                    \
        unsigned g = GS ? (unsigned)(nsm * (2048 / THR)) : blocks(nv, THR, VPT);                                 \
        fill_tile<VPT, CS, GS><<<g, THR>>>((uint4*)s, nv);                                                       \
    }
    auto memset_ = [sz](void*, void* s, u64 n) { CK(cudaMemsetAsync(s, 0, n * sz, 0)); };
    auto fill_plain = FILL(1, false, false, 256);
    auto fill_cs = FILL(1, true, false, 256);
    auto fill_128 = FILL(1, false, false, 128);
    if (zero_rows) {
        v.push_back({"zero cudaMemsetAsync", ZERO, memset_});
        v.push_back({"zero fill 1x16B plain 256t 1pass", ZERO, fill_plain});
        v.push_back({"zero fill 1x16B cs 256t 1pass", ZERO, fill_cs});
        v.push_back({"zero fill 1x16B plain 128t 1pass", ZERO, fill_128});
        v.push_back({"zero fill 4x16B plain 256t 1pass", ZERO, FILL(4, false, false, 256)});
        v.push_back({"zero fill 1x16B plain 256t gs(SMx8)", ZERO, FILL(1, false, true, 256)});
        v.push_back({"zero fill 1x16B cs 256t gs(SMx8)", ZERO, FILL(1, true, true, 256)});
        v.push_back({"zero fill 4x16B plain 256t gs(SMx8)", ZERO, FILL(4, false, true, 256)});
    }
    // accumulate and zero
    v.push_back({"accz fused shipped (gs 1x16B cs 256t)", ACCZ, ship_fused});
    v.push_back({"accz acc shipped + memset (current >=32MiB)", ACCZ, [=](void* a, void* s, u64 n) { ship_acc(a, s, n); memset_(a, s, n); }});
    v.push_back({"accz acc shipped + fill plain 256t", ACCZ, [=](void* a, void* s, u64 n) { ship_acc(a, s, n); fill_plain(a, s, n); }});
    v.push_back({"accz acc shipped + fill cs 256t", ACCZ, [=](void* a, void* s, u64 n) { ship_acc(a, s, n); fill_cs(a, s, n); }});
    v.push_back({"accz acc tile 1x16B plain 128t + fill plain 128t (torch-like)", ACCZ, [=](void* a, void* s, u64 n) {
        u64 nv = n / K;
        acc_tile<M, 1, false, false, false><<<blocks(nv, 128, 1), 128>>>((uint4*)a, (uint4*)s, nv);
        fill_128(a, s, n);
    }});
    v.push_back({"accz fused tile 1x16B plain 256t 1pass", ACCZ, [K](void* a, void* s, u64 n) {
        u64 nv = n / K; acc_tile<TU, 1, false, false, true><<<blocks(nv, 256, 1), 256>>>((uint4*)a, (uint4*)s, nv);
    }});
    return v;
}

int main() {
    CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
    cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
    int rt, drv; cudaRuntimeGetVersion(&rt); cudaDriverGetVersion(&drv);
    printf("device %s, %d SMs, runtime %d, driver %d\n", prop.name, nsm, rt, drv);
    const u64 NMAX = 1ull << 28;
    void *a, *s;
    CK(cudaMalloc(&a, NMAX * 4)); CK(cudaMalloc(&s, NMAX * 4));
    // check buffers
    const u64 NC = 1 << 20;
    void *ca, *cs, *ra, *rs;
    CK(cudaMalloc(&ca, NC * 4)); CK(cudaMalloc(&cs, NC * 4)); CK(cudaMalloc(&ra, NC * 4)); CK(cudaMalloc(&rs, NC * 4));
    std::vector<char> h1(NC * 4), h2(NC * 4), h3(NC * 4), h4(NC * 4);

    struct D { const char* name; int sz; std::vector<Var> v; };
    std::vector<D> ds;
    ds.push_back({"f32", 4, variants<F32, F32u, F32u, F32u>(4, "", nullptr, true)});
    ds.push_back({"f16", 2, variants<F16, F16, F16f32, F16f32>(2, "f32math", nullptr, true)});
    ds.push_back({"bf16", 2, variants<BF16, BF16, BF16cvt, BF16hw>(2, "f32math+cvt.bf16x2", "bf16x2 add (hw)", false)});

    // Checks: bit for bit against the shipped kernel (ACC: shipped accumulate; ACCZ: shipped fused).
    int bad = 0;
    for (auto& d : ds) {
        int size_code = d.sz == 4 ? 4 : (std::string(d.name) == "f16" ? 2 : 3);
        for (auto& var : d.v) {
            if (var.kind == COPY) continue;
            init<<<1024, 256>>>(ca, NC, size_code, 1); init<<<1024, 256>>>(cs, NC, size_code, 2);
            CK(cudaMemcpy(ra, ca, NC * d.sz, cudaMemcpyDeviceToDevice)); CK(cudaMemcpy(rs, cs, NC * d.sz, cudaMemcpyDeviceToDevice));
            var.run(ca, cs, NC);
            if (var.kind == ACC) d.v[1].run(ra, rs, NC);
            if (var.kind == ACCZ) d.v[std::find_if(d.v.begin(), d.v.end(), [](const Var& x) { return x.kind == ACCZ; }) - d.v.begin()].run(ra, rs, NC);
            if (var.kind == ZERO) CK(cudaMemset(rs, 0, NC * d.sz));
            CK(cudaDeviceSynchronize()); CK(cudaGetLastError());
            CK(cudaMemcpy(h1.data(), ca, NC * d.sz, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(h2.data(), ra, NC * d.sz, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(h3.data(), cs, NC * d.sz, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(h4.data(), rs, NC * d.sz, cudaMemcpyDeviceToHost));
            bool ok = memcmp(h1.data(), h2.data(), NC * d.sz) == 0 && memcmp(h3.data(), h4.data(), NC * d.sz) == 0;
            if (!ok) { printf("CHECK FAILED: %s %s\n", d.name, var.name.c_str()); bad++; }
        }
    }
    printf("checks at n = %llu: %s\n\n", NC, bad ? "SOME FAILED (see above)" : "all variants match the shipped kernels bit for bit");

    printf("| dtype | n | variant | us/call | GB/s | / D2D same bytes | / D2D f32 n (bench ratio) |\n|---|---|---|---|---|---|---|\n");
    std::map<u64, double> d2d_f32;
    for (auto& d : ds) {
        int size_code = d.sz == 4 ? 4 : (std::string(d.name) == "f16" ? 2 : 3);
        for (u64 n : {1ull << 24, 1ull << 26, 1ull << 28}) {
            init<<<4096, 256>>>(a, n, size_code, 1); init<<<4096, 256>>>(s, n, size_code, 2); CK(cudaDeviceSynchronize());
            std::vector<double> best(d.v.size(), 1e30);
            for (int round = 0; round < 2; round++)
                for (size_t i = 0; i < d.v.size(); i++) {
                    Var& var = d.v[i];
                    u64 mult = var.kind == COPY ? 2 : var.kind == ACC ? 3 : var.kind == ZERO ? 1 : 4;
                    best[i] = std::min(best[i], timeit([&] { var.run(a, s, n); }, mult * n * d.sz));
                }
            double d2d_bw = 2.0 * n * d.sz / best[0] / 1e3;
            if (d.sz == 4) d2d_f32[n] = d2d_bw;
            for (size_t i = 0; i < d.v.size(); i++) {
                Var& var = d.v[i];
                u64 mult = var.kind == COPY ? 2 : var.kind == ACC ? 3 : var.kind == ZERO ? 1 : 4;
                double bw = (double)mult * n * d.sz / best[i] / 1e3;
                printf("| %s | %lluM | %s | %.1f | %.0f | %.3f | %.3f |\n", d.name, n >> 20, var.name.c_str(), best[i], bw, bw / d2d_bw, bw / d2d_f32[n]);
            }
        }
    }
    return 0;
}
