// Can the two c32 sums that stay level with PyTorch get ahead (docs/performance-notes.md, "Complex
// sums")? The 8191 x 8192 box whose pitch is 8 modulo 16 bytes on the
// vector path with a head per row (SUM_ROW_HEAD; "rh" variants route c32 rows 8-aligned to it),
// and the narrow c32 kernel's knobs (SUM_NARROW_ROWS_C32, _BLOCKS_C32, _ACC_C32, SUM_NARROW_CVT_BITS),
// old against new, in one process on the H200. The macros exist in shadow.cu with c32_box_sum.patch
// applied (shadow.cu and sum.rs of the trial; not committed: the variants lost). PTX files built as
// for complex_sum_and_array_words.cu:
//
//   nvcc -ptx -arch=compute_75 -O3 -std=c++17 [-DNAME=V ...] shadow.cu -o v.ptx   (anywhere)
//   nvcc -O2 -o c32_box_sum c32_box_sum.cu -lcuda                                (GPU machine)
//   ./c32_box_sum cur:cur.ptx new:new.ptx:rh=1 b5:b5.ptx:rh=1 r12:r12.ptx:rh=1,rc=12 ...
//
// rh = 1: c32 rows 8-byte aligned take the vector path (sum.rs with the patch);
// rc = the c32 narrow kernel's rows per batch (sum.rs narrow_rows). Each sum runs twice (same
// bits?), is compared with "cur" bit for bit, and its error against a long double host sum is
// shown in units of 2^-53 * sum|x| beside sum_region's bound, ceil(n/t) + 33.
// Timing as in the benches: CUDA events around k back-to-back launches, 3 warm-ups, median of 21.
#include <cuda.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

typedef unsigned long long u64;

#define CK(x)                                                                            \
    do {                                                                                 \
        CUresult r_ = (x);                                                               \
        if (r_ != CUDA_SUCCESS) {                                                        \
            const char* s_;                                                              \
            cuGetErrorString(r_, &s_);                                                   \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s_);               \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

struct Walk { u64 w, h, d; unsigned tpr_log2, head, vec; };

static bool once = false;
static CUstream st;

static u64 next_pow2(u64 x) { u64 p = 1; while (p < x) p <<= 1; return p; }
static u64 ilog2(u64 x) { u64 l = 0; while (x >>= 1) l++; return l; }

// region.rs walk_with.
static void walk_with(u64 w, u64 h, u64 d, u64 passes, u64 cap, unsigned& tl, unsigned& gx, unsigned& gy, u64 batch) {
    u64 tpr = w < 128 ? next_pow2(w) : std::min<u64>(std::max<u64>(1ull << ilog2(w / 4), 32), 256);
    u64 rpb = 256 / tpr;
    u64 y = std::min<u64>(std::max<u64>((w + tpr * passes - 1) / (tpr * passes), 1), std::min<u64>(65535, cap));
    if (y * tpr < w) batch = 1;
    rpb *= batch;
    u64 x = std::min<u64>(std::max<u64>((h * d + rpb - 1) / rpb, 1), std::max<u64>(cap / y, 1));
    tl = (unsigned)ilog2(tpr);
    gx = (unsigned)x;
    gy = (unsigned)y;
}

template <typename F>
static double time_us(u64 bytes, F f) {
    int k = bytes >= (256ull << 20) ? 2 : bytes >= (16ull << 20) ? 8 : 50;
    if (once) { f(); CK(cuStreamSynchronize(st)); return 0; }
    for (int i = 0; i < 3; i++) f();
    CK(cuStreamSynchronize(st));
    CUevent a, b;
    CK(cuEventCreate(&a, 0));
    CK(cuEventCreate(&b, 0));
    std::vector<double> t;
    for (int r = 0; r < 21; r++) {
        CK(cuEventRecord(a, st));
        for (int i = 0; i < k; i++) f();
        CK(cuEventRecord(b, st));
        CK(cuEventSynchronize(b));
        float ms;
        CK(cuEventElapsedTime(&ms, a, b));
        t.push_back(ms * 1e3 / k);
    }
    cuEventDestroy(a);
    cuEventDestroy(b);
    std::sort(t.begin(), t.end());
    return t[10];
}

static void launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, void** args) {
    CK(cuLaunchKernel(f, gx, gy, gz, bx, by, 1, 0, st, args, nullptr));
}

struct Mod {
    std::string name;
    CUmodule m;
    int rh = 0, rc = 8;
    bool cur() const { return name == "cur"; }
    CUfunction fn(const char* n) {
        CUfunction f;
        CK(cuModuleGetFunction(&f, m, n));
        return f;
    }
};

static unsigned xs = 12345;
static float rnd() { xs ^= xs << 13; xs ^= xs >> 17; xs ^= xs << 5; return ((xs >> 8) / 16777216.0f - 0.5f) * 0.01f + 1e-3f; }
static std::vector<float> pat(1 << 20);
static void fillf(CUdeviceptr p, u64 n) {
    for (u64 o = 0; o < n; o += pat.size()) {
        u64 c = std::min<u64>(pat.size(), n - o);
        CK(cuMemcpyHtoD(p + o * 4, pat.data(), c * 4));
    }
}

// off: the box's first float (0 or 1: 8- or 4-byte aligned c32); row in elements.
struct Case { const char* dt; int size, comps; u64 w, h, row, off; };

struct SumRun { double us_stream; double result[2]; unsigned blocks; bool narrow, vec; };

static SumRun run_sum(Mod& M, const Case& c, CUdeviceptr p, CUdeviceptr part, CUdeviceptr out, CUdeviceptr acc) {
    u64 w = c.w, h = c.h, d = 1, row = c.row, slice = c.row * c.h;
    if (row == w) { w = w * h; h = 1; row = w; slice = w; }
    bool c32 = !strcmp(c.dt, "c32");
    u64 al = M.rh && c32 ? 8 : 16;
    u64 real = c.size / c.comps, per_vector = 16 / real, head = ((16 - p % 16) % 16) / real, reals = w * c.comps;
    bool vec = p % real == 0 && (h == 1 || (row * c.size) % al == 0) && reals * real >= 2048 && reals >= head + per_vector;
    unsigned tl, gx, gy;
    Walk wk;
    bool narrow = false;
    if (vec) {
        walk_with((reals - head) / per_vector, h, d, 4, 2048, tl, gx, gy, 1);
        wk = Walk{w, h, d, tl, (unsigned)head, 1};
    } else {
        u64 batch = c32 ? M.rc : c.size <= 2 ? 24 : c.size <= 4 ? 16 : c.size == 8 ? 8 : 4;
        walk_with(w, h, d, 16, 2048, tl, gx, gy, batch);
        wk = Walk{w, h, d, tl, 0, 0};
        narrow = ((u64)gy << tl) >= w;
    }
    std::string kn = std::string(narrow ? "region_sum_narrow_" : "region_sum_") + c.dt;
    std::string an = std::string("region_sum_add_") + c.dt;
    CUfunction f = M.fn(kn.c_str()), fin = M.fn("region_sum_finish"), add = M.fn(an.c_str());
    u64 blocks = (u64)gx * gy;
    unsigned comps = c.comps;
    void* a1[] = {&p, &row, &slice, &wk, &part};
    void* a2[] = {&part, &blocks, &comps, &out};
    void* a3[] = {&part, &blocks, &acc};
    u64 bytes = c.w * c.h * c.size;
    SumRun r;
    r.blocks = (unsigned)blocks;
    r.narrow = narrow;
    r.vec = vec;
    r.us_stream = time_us(bytes, [&] { launch(f, gx, gy, 1, 256, 1, a1); launch(add, 1, 1, 1, 256, 1, a3); });
    launch(f, gx, gy, 1, 256, 1, a1);
    launch(fin, 1, 1, 1, 256, 1, a2);
    CK(cuStreamSynchronize(st));
    CK(cuMemcpyDtoH(r.result, out, 8 * c.comps));
    return r;
}

int main(int argc, char** argv) {
    CK(cuInit(0));
    CUdevice dev;
    CK(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    std::vector<Mod> mods;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--once")) { once = true; continue; }
        std::string s = argv[i];
        Mod M;
        size_t c1 = s.find(':');
        size_t c2 = s.find(':', c1 + 1);
        M.name = s.substr(0, c1);
        std::string file = s.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1);
        if (c2 != std::string::npos) {
            std::string kv = s.substr(c2 + 1);
            size_t at = 0;
            while (at < kv.size()) {
                size_t e = kv.find(',', at);
                std::string one = kv.substr(at, e == std::string::npos ? std::string::npos : e - at);
                size_t q = one.find('=');
                std::string k = one.substr(0, q);
                int v = atoi(one.substr(q + 1).c_str());
                if (k == "rh") M.rh = v;
                else if (k == "rc") M.rc = v;
                at = e == std::string::npos ? kv.size() : e + 1;
            }
        }
        FILE* fh = fopen(file.c_str(), "rb");
        if (!fh) { fprintf(stderr, "no %s\n", file.c_str()); return 1; }
        std::string ptx;
        char buf[65536];
        size_t got;
        while ((got = fread(buf, 1, sizeof buf, fh)) > 0) ptx.append(buf, got);
        fclose(fh);
        CK(cuModuleLoadData(&M.m, ptx.c_str()));
        mods.push_back(M);
    }
    char name[256];
    cuDeviceGetName(name, 256, dev);
    printf("device %s; variants:", name);
    for (auto& M : mods) printf(" %s(rh=%d,rc=%d)", M.name.c_str(), M.rh, M.rc);
    printf("\n");
    for (auto& v : pat) v = rnd();
    const u64 NB = 1ull << 30;
    CUdeviceptr xf, y, part, out, acc;
    CK(cuMemAlloc(&xf, NB + 64));
    CK(cuMemAlloc(&y, NB + 64));
    CK(cuMemAlloc(&part, 65536 * 16));
    CK(cuMemAlloc(&out, 16));
    CK(cuMemAlloc(&acc, 16));
    CK(cuMemsetD8(acc, 0, 16));
    fillf(xf, NB / 4 + 16);
    if (!once) {
        double us = time_us(512ull << 20, [&] { CK(cuMemcpyDtoDAsync(y, xf, 256ull << 20, st)); });
        printf("ceiling: D2D copy 256 MiB: %.1f us, %.0f GB/s (R+W)\n", us, 2.0 * (256 << 20) / us / 1e3);
    }
    printf("\n## sums on the stream (main + region_sum_add); result from region_sum_finish\n");
    printf("| variant | dtype | box (w x h, pitch el, first float) | path | blocks | us | GB/s | same bits | result (re) | vs cur | err re, im / bound (2^-53 sum|x|) |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    std::vector<Case> cases = {
        {"c32", 8, 2, 8191, 8192, 8197, 0}, {"c32", 8, 2, 8191, 8192, 8197, 1},
        {"c32", 8, 2, 8191, 8192, 8198, 0}, {"c32", 8, 2, 1000, 16384, 1001, 0},
        {"c32", 8, 2, 1ull << 24, 1, 1ull << 24, 0},
        {"c32", 8, 2, 3, 1ull << 22, 4, 0}, {"c32", 8, 2, 3, 1ull << 22, 4, 1},
        {"c32", 8, 2, 1, 1ull << 24, 2, 0}, {"c32", 8, 2, 8, 1ull << 21, 9, 0},
        {"f64", 8, 1, 3, 1ull << 22, 4, 0},
    };
    for (size_t ci = 0; ci < cases.size(); ci++) {
        const Case& c = cases[ci];
        // Host reference (c32 only): floats at off + 2 * (y * row + x) + comp, pattern repeats.
        long double ref[2] = {0, 0}, ab = 0;
        bool have_ref = !strcmp(c.dt, "c32") && !once;
        if (have_ref)
            for (u64 yy = 0; yy < c.h; yy++)
                for (u64 x = 0; x < c.w; x++)
                    for (int k = 0; k < 2; k++) {
                        float v = pat[(c.off + 2 * (yy * c.row + x) + k) & ((1 << 20) - 1)];
                        ref[k] += v;
                        ab += fabsl((long double)v);
                    }
        std::vector<double> curres;
        for (auto& M : mods) {
            if (!strcmp(c.dt, "f64") && !(M.cur() || M.name == "new")) continue;
            CUdeviceptr p = xf + 4 * c.off;
            SumRun r = run_sum(M, c, p, part, out, acc);
            if (once) continue;
            SumRun r2 = run_sum(M, c, p, part, out, acc);
            bool same = !memcmp(r.result, r2.result, 8 * c.comps);
            if (M.cur()) curres.assign(r.result, r.result + c.comps);
            bool eq = !curres.empty() && !memcmp(curres.data(), r.result, 8 * c.comps);
            char errs[128] = "-";
            if (have_ref) {
                double u = (double)ab * ldexp(1.0, -53);
                double t = (double)r.blocks * 256, n = (double)c.w * c.h;
                snprintf(errs, sizeof errs, "%.1f, %.1f / %.0f", (double)fabsl(r.result[0] - ref[0]) / u,
                         (double)fabsl(r.result[1] - ref[1]) / u, ceil(n / t) + 33);
            }
            printf("| %s | %s | %llu x %llu, %llu, +%llu | %s | %u | %.1f | %.0f | %s | %.17g | %s | %s |\n", M.name.c_str(), c.dt, c.w, c.h,
                   c.row, c.off, r.vec ? "vec" : r.narrow ? "narrow" : "scalar", r.blocks, r.us_stream,
                   (double)c.w * c.h * c.size / r.us_stream / 1e3, same ? "yes" : "NO", r.result[0],
                   M.cur() ? "" : eq ? "=" : "differs", errs);
        }
    }
    CK(cuCtxSynchronize());
    printf("\ndone\n");
    return 0;
}
