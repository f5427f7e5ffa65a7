// Do complex sums gain from fewer registers, the 16-bit narrow sum from more rows, and the 3D array
// one-pass reverse from 16-byte surface words (docs/performance-notes.md, "Complex sums", "Narrow
// rows", "CUDA array one-pass reverse")? Complex sums with fewer rows per batch (SUM_C2_DIV) and
// 8-byte c32 loads in the narrow kernel (NARROW_PAIRS), the 16-bit narrow sum's rows and blocks per SM, and the
// CUDA array one-pass reverse with 16-byte surface words (array_pass_* mode bit 4) on several
// block shapes, old against new, in one process on the H200. The kernels come from PTX files
// (shadow.cu built with other -D values), loaded with the driver API as the runtime loads them:
//
//   nvcc -ptx -arch=compute_75 -O3 -std=c++17 [-DNAME=V ...] shadow.cu -o v.ptx   (anywhere)
//   nvcc -O2 -o complex_sum_and_array_words complex_sum_and_array_words.cu -lcuda   (GPU machine)
//   (-DWB=1 for builds whose word path is mode bit 4 of array_pass_*, as in the first variants timed)
//   ./complex_sum_and_array_words cur:cur.ptx new:new.ptx n2r32:v.ptx:r2=32 e2:e2.ptx:e=2 ...  [--once]
//
// NAME:FILE[:k=v,...]: r2 = SUM_NARROW_ROWS_2 of that build (the narrow grid's batch for 16-bit
// elements), e = ARRAY_PASS_ELEMS, c2 = SUM_C2_DIV (informational). "cur" is the shadow.ptx of
// 3dc74c6: no word mode. Variants whose name starts with 'n' run the sums,
// with 'e' or "new" the arrays; "np" the c32 sums. In the run the notes cite, "new" was the shadow.cu of
// 5ca7862 (with an 8-byte-load path for c32 on region_sum_c32's scalar path, SUM_PAIRS, since
// removed) and "np" the same built with -DSUM_PAIRS=0 -DNARROW_PAIRS=0; the shipped kernels are
// each identical to one of cur, new, np (docs/performance-notes.md). --once: each kernel once (for Nsight Compute).
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
#ifndef WB
#define WB 0
#endif

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
    int r2 = 16, e = 4;
    bool cur() const { return name == "cur"; }
    CUfunction fn(const char* n) {
        CUfunction f;
        CK(cuModuleGetFunction(&f, m, n));
        return f;
    }
};

static unsigned xs = 12345;
static float rnd() { xs ^= xs << 13; xs ^= xs >> 17; xs ^= xs << 5; return ((xs >> 8) / 16777216.0f - 0.5f) * 0.01f + 1e-3f; }
template <typename V>
static void fill(CUdeviceptr p, u64 n) {
    std::vector<V> h(1 << 20);
    for (auto& v : h) v = (V)rnd();
    for (u64 o = 0; o < n; o += h.size()) {
        u64 c = std::min<u64>(h.size(), n - o);
        CK(cuMemcpyHtoD(p + o * sizeof(V), h.data(), c * sizeof(V)));
    }
}

struct Case { const char* dt; int size, comps; u64 w, h, row; };

struct SumRun { double us_stream; double result[2]; unsigned blocks; bool narrow, vec; };

// sum.rs plan() and sum(), with the add kernel on the stream; the result from region_sum_finish.
static SumRun run_sum(Mod& M, const Case& c, CUdeviceptr p, CUdeviceptr part, CUdeviceptr out, CUdeviceptr acc) {
    u64 w = c.w, h = c.h, d = 1, row = c.row, slice = c.row * c.h;
    if (row == w) { w = w * h; h = 1; row = w; slice = w; }
    u64 real = c.size / c.comps, per_vector = 16 / real, head = ((16 - p % 16) % 16) / real, reals = w * c.comps;
    bool vec = p % real == 0 && (h == 1 || (row * c.size) % 16 == 0) && reals * real >= 2048 && reals >= head + per_vector;
    unsigned tl, gx, gy;
    Walk wk;
    bool narrow = false;
    if (vec) {
        walk_with((reals - head) / per_vector, h, d, 4, 2048, tl, gx, gy, 1);
        wk = Walk{w, h, d, tl, (unsigned)head, 1};
    } else {
        u64 batch = c.size <= 2 ? M.r2 : c.size <= 4 ? 16 : c.size == 8 ? 8 : 4;
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

struct Arr { unsigned w, h, d; CUarray_format fmt; unsigned ch, size; const char* dt; };

static CUarray make_array(const Arr& a) {
    CUarray arr;
    CUDA_ARRAY3D_DESCRIPTOR desc{};
    desc.Width = a.w;
    desc.Height = a.h == 1 ? 0 : a.h;
    desc.Depth = a.d == 1 ? 0 : a.d;
    desc.Format = a.fmt;
    desc.NumChannels = a.ch;
    desc.Flags = CUDA_ARRAY3D_SURFACE_LDST;
    CK(cuArray3DCreate(&arr, &desc));
    return arr;
}

static void array_io(CUarray arr, const Arr& a, void* host, bool to_array) {
    CUDA_MEMCPY3D c{};
    if (to_array) {
        c.srcMemoryType = CU_MEMORYTYPE_HOST; c.srcHost = host; c.srcPitch = (u64)a.w * a.size; c.srcHeight = a.h;
        c.dstMemoryType = CU_MEMORYTYPE_ARRAY; c.dstArray = arr;
    } else {
        c.srcMemoryType = CU_MEMORYTYPE_ARRAY; c.srcArray = arr;
        c.dstMemoryType = CU_MEMORYTYPE_HOST; c.dstHost = host; c.dstPitch = (u64)a.w * a.size; c.dstHeight = a.h;
    }
    c.WidthInBytes = (u64)a.w * a.size;
    c.Height = a.h;
    c.Depth = a.d;
    CK(cuMemcpy3D(&c));
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
                if (k == "r2") M.r2 = v;
                else if (k == "e") M.e = v;
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
    for (auto& M : mods) printf(" %s(r2=%d,e=%d)", M.name.c_str(), M.r2, M.e);
    printf("\n");

    const u64 NB = 1ull << 30;  // 1 GiB per buffer
    CUdeviceptr xf, xd, xh, y, part, out, acc;
    CK(cuMemAlloc(&xf, NB + 64));
    CK(cuMemAlloc(&xd, NB + 64));
    CK(cuMemAlloc(&xh, NB / 2 + 64));
    CK(cuMemAlloc(&y, NB + 64));
    CK(cuMemAlloc(&part, 65536 * 16));
    CK(cuMemAlloc(&out, 16));
    CK(cuMemAlloc(&acc, 16));
    CK(cuMemsetD8(acc, 0, 16));
    fill<float>(xf, NB / 4 + 16);
    fill<double>(xd, NB / 8 + 8);
    {   // f16 data: small positive values (0x1000..0x13ff: ~6e-5..1.2e-4), valid as bf16 too.
        std::vector<uint16_t> h(1 << 20);
        for (auto& v : h) { xs ^= xs << 13; xs ^= xs >> 17; xs ^= xs << 5; v = 0x1000 | (xs & 0x3ff); }
        for (u64 o = 0; o < NB / 4; o += h.size()) CK(cuMemcpyHtoD(xh + o * 2, h.data(), h.size() * 2));
    }
    if (!once) {
        double us = time_us(512ull << 20, [&] { CK(cuMemcpyDtoDAsync(y, xf, 256ull << 20, st)); });
        printf("ceiling: D2D copy 256 MiB: %.1f us, %.0f GB/s (R+W)\n", us, 2.0 * (256 << 20) / us / 1e3);
    }

    // ---- Sums.
    printf("\n## sums on the stream (main + region_sum_add); result from region_sum_finish, same bits twice, equal to cur\n");
    printf("| variant | dtype | box (w x h, pitch el) | path | blocks | us | GB/s | same bits | result (re) | vs cur |\n|---|---|---|---|---|---|---|---|---|---|\n");
    std::vector<Case> cases = {
        {"c32", 8, 2, 1ull << 24, 1, 1ull << 24}, {"c32", 8, 2, 1ull << 26, 1, 1ull << 26},
        {"c32", 8, 2, 8191, 8192, 8197},          {"c32", 8, 2, 3, 1ull << 22, 4},
        {"c64", 16, 2, 1ull << 24, 1, 1ull << 24}, {"c64", 16, 2, 1ull << 26, 1, 1ull << 26},
        {"c64", 16, 2, 8191, 8192, 8197},         {"c64", 16, 2, 3, 1ull << 22, 4},
        {"f32", 4, 1, 1ull << 26, 1, 1ull << 26}, {"f64", 8, 1, 1ull << 24, 1, 1ull << 24},
        {"bf16", 2, 1, 1, 1ull << 24, 3},         {"f16", 2, 1, 1, 1ull << 24, 3},
        {"bf16", 2, 1, 3, 1ull << 22, 4},         {"f16", 2, 1, 3, 1ull << 22, 4},
        {"bf16", 2, 1, 8, 1ull << 21, 9},
    };
    std::vector<std::vector<double>> curres(cases.size());
    for (auto& M : mods) {
        if (M.name != "cur" && M.name != "new" && M.name[0] != 'n') continue;
        for (size_t ci = 0; ci < cases.size(); ci++) {
            const Case& c = cases[ci];
            bool small = c.size == 2;
            if (M.name == "np") {  // the final build without SUM_PAIRS: c32 only
                if (strcmp(c.dt, "c32")) continue;
            } else if (M.name[0] == 'n' && M.name != "new" && !small) continue;  // 16-bit knobs only
            if (once && !(M.cur() || M.name == "new")) continue;
            CUdeviceptr p = c.size == 2 ? xh : (c.size == 4 || c.dt[1] == '3') ? xf : xd;
            SumRun r = run_sum(M, c, p, part, out, acc);
            if (once) continue;
            SumRun r2 = run_sum(M, c, p, part, out, acc);
            bool same = !memcmp(r.result, r2.result, 8 * c.comps);
            if (M.cur()) curres[ci].assign(r.result, r.result + c.comps);
            bool eq = !curres[ci].empty() && !memcmp(curres[ci].data(), r.result, 8 * c.comps);
            printf("| %s | %s | %llu x %llu, %llu | %s | %u | %.1f | %.0f | %s | %.17g | %s |\n", M.name.c_str(), c.dt, c.w, c.h,
                   c.row, r.vec ? "vec" : r.narrow ? "narrow" : "scalar", r.blocks, r.us_stream,
                   (double)c.w * c.h * c.size / r.us_stream / 1e3, same ? "yes" : "NO", r.result[0],
                   M.cur() ? "" : eq ? "=" : "differs");
        }
    }

    // ---- CUDA array one-pass reverse.
    printf("\n## CUDA array one-pass reverse; mode 1 (lin += arr; arr = 0), mode 3 (arr += lin; lin = 0); GB/s = 2R+2W\n");
    printf("| variant | array | dtype | block | words | E | mode 1 us | GB/s | mode 3 us | GB/s | check |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    std::vector<Arr> arrays = {
        {512, 512, 64, CU_AD_FORMAT_FLOAT, 1, 4, "f32"},      {8192, 4096, 1, CU_AD_FORMAT_FLOAT, 1, 4, "f32"},
        {256, 256, 256, CU_AD_FORMAT_FLOAT, 1, 4, "f32"},     {4096, 1024, 1, CU_AD_FORMAT_FLOAT, 1, 4, "f32"},
        {512, 512, 64, CU_AD_FORMAT_HALF, 1, 2, "f16"},       {512, 512, 64, CU_AD_FORMAT_UNSIGNED_INT32, 2, 8, "f64"},
    };
    for (const Arr& a : arrays) {
        if (once && !(a.d == 64 && a.size == 4)) continue;
        CUarray arr = make_array(a);
        CUDA_RESOURCE_DESC rd{};
        rd.resType = CU_RESOURCE_TYPE_ARRAY;
        rd.res.array.hArray = arr;
        CUsurfObject surf;
        CK(cuSurfObjectCreate(&surf, &rd));
        unsigned dims = a.d > 1 ? 3 : a.h > 1 ? 2 : 1;
        u64 n = (u64)a.w * a.h * a.d;
        for (auto& M : mods) {
            if (M.name != "cur" && M.name != "new" && M.name[0] != 'e') continue;
            // Builds with the word path in array_pass_* under mode bit 4 need WB=1 (below); the
            // shipped shadow.cu has it in array_pass_w_* (WB=0).
            auto fn_for = [&](bool words) {
                std::string fname = std::string(words && !WB ? "array_pass_w_" : "array_pass_") + a.dt;
                return M.fn(fname.c_str());
            };
            struct Bk { unsigned bx, by; bool words; };
            std::vector<Bk> blocks;
            if (dims == 1) blocks = {{256, 1, false}, {256, 1, true}};
            else if (WB) blocks = {{64, 4, false}, {64, 4, true}, {32, 8, true}, {16, 16, true}, {16, 8, true}, {8, 32, true}, {32, 4, true}};
            else blocks = {{64, 4, false}, {16, 8, true}, {16, 16, true}, {8, 32, true}};
            if (M.cur()) blocks = {blocks[0]};
            if (M.name[0] == 'e' && dims > 1) blocks = {{64, 4, true}, {16, 16, true}, {32, 8, true}};
            if (once) blocks = M.cur() ? std::vector<Bk>{{64, 4, false}} : std::vector<Bk>{{64, 4, true}, {16, 16, true}, {16, 8, true}};
            for (Bk bk : blocks) {
                int E = M.cur() ? 4 : M.e;
                unsigned epw = 16 / a.size;
                unsigned units = bk.words && epw > 1 ? a.w / epw + a.w % epw : a.w;
                unsigned gx = dims == 1 ? (units + bk.bx * E - 1) / (bk.bx * E) : (units + bk.bx - 1) / bk.bx;
                unsigned gy = dims == 1 ? 1 : (a.h + bk.by * E - 1) / (bk.by * E), gz = a.d;
                int x0 = 0, y0 = 0, z0 = 0, w = a.w, h = a.h;
                u64 row = a.w, slice = (u64)a.w * a.h;
                double us[2];
                CUfunction f = fn_for(bk.words);
                for (int mi = 0; mi < (once ? 1 : 2); mi++) {
                    unsigned mode = (mi == 0 ? 1 : 3) | (bk.words && WB ? 4 : 0);
                    void* args[] = {&surf, &dims, &x0, &y0, &z0, &w, &h, &y, &row, &slice, &mode};
                    us[mi] = time_us(4 * n * a.size, [&] { launch(f, gx, gy, gz, bk.bx, bk.by, args); });
                }
                const char* check = "-";
                if (!once && a.size == 4) {
                    // arr = i, lin = 2 i (f32, exact), mode 3 then arr = 3 i, lin = 0; mode 1: lin = 3 i, arr = 0.
                    std::vector<float> ha(n), hl(n), back(n);
                    for (u64 i = 0; i < n; i++) { ha[i] = (float)(i % 100000); hl[i] = 2.0f * ha[i]; }
                    array_io(arr, a, ha.data(), true);
                    CK(cuMemcpyHtoD(y, hl.data(), n * 4));
                    for (unsigned mode : {3u, 1u}) {
                        mode |= bk.words && WB ? 4 : 0;
                        void* args[] = {&surf, &dims, &x0, &y0, &z0, &w, &h, &y, &row, &slice, &mode};
                        launch(f, gx, gy, gz, bk.bx, bk.by, args);
                    }
                    CK(cuStreamSynchronize(st));
                    array_io(arr, a, back.data(), false);
                    CK(cuMemcpyDtoH(hl.data(), y, n * 4));
                    u64 bad = 0;
                    for (u64 i = 0; i < n; i++) bad += back[i] != 0.0f || hl[i] != 3.0f * ha[i];
                    check = bad ? "WRONG" : "ok";
                }
                if (!once)
                    printf("| %s | %ux%ux%u | %s | %ux%u | %s | %d | %.1f | %.0f | %.1f | %.0f | %s |\n", M.name.c_str(), a.w, a.h, a.d,
                           a.dt, bk.bx, bk.by, bk.words ? "16 B" : "element", E, us[0], 4.0 * n * a.size / us[0] / 1e3, us[1],
                           4.0 * n * a.size / us[1] / 1e3, check);
            }
        }
        cuSurfObjectDestroy(surf);
        cuArrayDestroy(arr);
    }

    // ---- An odd box with words: array 517 x 37 x 5 f32, box at (4, 1, 1) of 509 x 35 x 3 (127 words
    // and one element per row), linear box pitch 512 el, slice 512 * 36; everything else unchanged.
    if (!once) {
        Arr a{517, 37, 5, CU_AD_FORMAT_FLOAT, 1, 4, "f32"};
        CUarray arr = make_array(a);
        CUDA_RESOURCE_DESC rd{};
        rd.resType = CU_RESOURCE_TYPE_ARRAY;
        rd.res.array.hArray = arr;
        CUsurfObject surf;
        CK(cuSurfObjectCreate(&surf, &rd));
        u64 n = (u64)a.w * a.h * a.d;
        int x0 = 4, y0 = 1, z0 = 1, w = 509, h = 35, d = 3;
        u64 row = 512, slice = 512 * 36, ln = slice * d;
        for (auto& M : mods) {
            if (M.name != "new") continue;
            for (unsigned base : {1u, 3u}) {
                std::vector<float> ha(n), hl(ln), back(n), lback(ln);
                for (u64 i = 0; i < n; i++) ha[i] = (float)(i % 1000 + 1);
                for (u64 i = 0; i < ln; i++) hl[i] = (float)(i % 777 + 1) * 2;
                array_io(arr, a, ha.data(), true);
                CK(cuMemcpyHtoD(y, hl.data(), ln * 4));
                unsigned mode = base | (WB ? 4 : 0), dims = 3;
                unsigned units = w / 4 + w % 4;
                CUfunction f = M.fn(WB ? "array_pass_f32" : "array_pass_w_f32");
                CUdeviceptr lin = y;
                int z0k = z0;
                void* args[] = {&surf, &dims, &x0, &y0, &z0k, &w, &h, &lin, &row, &slice, &mode};
                launch(f, (units + 15) / 16, (h + 63) / 64, d, 16, 16, args);
                CK(cuStreamSynchronize(st));
                array_io(arr, a, back.data(), false);
                CK(cuMemcpyDtoH(lback.data(), y, ln * 4));
                u64 bad = 0;
                for (unsigned z = 0; z < a.d; z++)
                    for (unsigned yy = 0; yy < a.h; yy++)
                        for (unsigned xx = 0; xx < a.w; xx++) {
                            u64 i = ((u64)z * a.h + yy) * a.w + xx;
                            bool in = (int)xx >= x0 && (int)xx < x0 + w && (int)yy >= y0 && (int)yy < y0 + h && (int)z >= z0 && (int)z < z0 + d;
                            u64 li = in ? (z - z0) * slice + (yy - y0) * row + (xx - x0) : 0;
                            float want = !in ? ha[i] : base == 1 ? 0.0f : ha[i] + hl[li];
                            bad += back[i] != want;
                        }
                for (u64 i = 0; i < ln; i++) {
                    u64 z = i / slice, yy = (i % slice) / row, xx = i % row;
                    bool in = (int)xx < w && (int)yy < h;
                    // The array element of lin[i] when in the box.
                    u64 ai = ((z + z0) * a.h + yy + y0) * a.w + xx + x0;
                    float want = !in ? hl[i] : base == 1 ? hl[i] + ha[ai] : 0.0f;
                    bad += lback[i] != want;
                }
                printf("| odd box check, mode %u | %s |\n", base, bad ? "WRONG" : "ok");
            }
        }
        cuSurfObjectDestroy(surf);
        cuArrayDestroy(arr);
    }
    CK(cuCtxSynchronize());
    printf("\ndone\n");
    return 0;
}
