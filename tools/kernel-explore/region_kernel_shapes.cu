// Which shapes suit the region kernels (deterministic sum, narrow-box accumulate, CUDA-array one-pass
// reverse; docs/performance-notes.md, "Box reverse", "Deterministic sum", "CUDA array one-pass
// reverse"), old against new variants, in one process on the H200. Host code only: the kernels are
// loaded from PTX files with the driver API (as the runtime loads shadow.ptx, JIT-compiled by the
// driver), so each variant is shadow.cu built with other -D values:
//
//   nvcc -ptx -arch=compute_75 -O3 -std=c++17 -DSUM_VECTORS=8 ... shadow.cu -o v8.ptx   (anywhere)
//   nvcc -O2 -o region_kernel_shapes region_kernel_shapes.cu -lcuda                 (on the GPU machine)
//   ./region_kernel_shapes old:old.ptx:1 new:shadow.ptx:4 v8:v8.ptx:8 ...   [--once: each kernel once, for ncu]
//
// NAME:FILE:E[:b], E = ARRAY_PASS_ELEMS of that build (1 for the old PTX, whose Walk has no
// head/vec); b: narrow boxes get the batched grid of the final region.rs (grid.x counts batches
// of PASS_ROWS = 8 rows for the accumulate kernel, SUM_NARROW_ROWS = 8 for the sum).
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

struct WalkNew { u64 w, h, d; unsigned tpr_log2, head, vec; };
struct WalkOld { u64 w, h, d; unsigned tpr_log2; };

static bool once = false;
static CUstream st;

static u64 next_pow2(u64 x) { u64 p = 1; while (p < x) p <<= 1; return p; }
static u64 ilog2(u64 x) { u64 l = 0; while (x >>= 1) l++; return l; }

// region.rs walk_with.
static void walk_with(u64 w, u64 h, u64 d, u64 passes, u64 cap, unsigned& tl, unsigned& gx, unsigned& gy,
                      u64 batch = 1) {
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
    int elems;  // ARRAY_PASS_ELEMS
    bool old;
    bool batched;
    CUfunction fn(const char* n) {
        CUfunction f;
        CK(cuModuleGetFunction(&f, m, n));
        return f;
    }
};

// Random-ish f32 data, never zero.
static void fill_f32(CUdeviceptr p, u64 n, unsigned seed) {
    std::vector<float> h(1 << 20);
    unsigned x = seed * 2654435761u + 1;
    for (auto& v : h) {
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        v = ((x >> 8) / 16777216.0f - 0.5f) * 0.01f + 1e-3f;
    }
    for (u64 o = 0; o < n; o += h.size()) {
        u64 c = std::min<u64>(h.size(), n - o);
        CK(cuMemcpyHtoD(p + o * 4, h.data(), c * 4));
    }
}

// The reduction of (w, h, d) f32/f64/16-bit boxes at `p`, pitch `row` elements, in module m:
// main kernel + finish (as sum_region launches them). `passes`, `cap`: the plan's knobs (new only).
struct SumRun { double us_all, us_main; double result; unsigned blocks; };

static SumRun run_sum(Mod& M, const char* dt, int size, CUdeviceptr p, u64 w, u64 h, u64 d, u64 row,
                      u64 vec_passes, u64 cap, CUdeviceptr part, CUdeviceptr out) {
    std::string kn = std::string("region_sum_") + dt;
    CUfunction f = M.fn(kn.c_str()), fin = M.fn("region_sum_finish");
    unsigned tl, gx, gy;
    u64 slice = row * h;
    u64 pr = row, ps = slice;
    WalkNew wn{};
    WalkOld wo{};
    if (M.old) {
        walk_with(w, h, d, 16, 2048, tl, gx, gy);
        wo = WalkOld{w, h, d, tl};
    } else {
        u64 W = w, H = h, D = d;
        if (h * d == 1 || row == w) { W = w * h * d; H = 1; D = 1; pr = W; ps = W; }
        u64 per = 16 / size, head = ((16 - p % 16) % 16) / size;
        bool vec = (H * D == 1 || (pr * size) % 16 == 0) && W * size >= 2048 && W >= head + per;
        if (vec) {
            walk_with((W - head) / per, H, D, vec_passes, cap, tl, gx, gy);
            wn = WalkNew{W, H, D, tl, (unsigned)head, 1};
        } else {
            walk_with(W, H, D, 16, cap, tl, gx, gy, M.batched ? 8 : 1);
            wn = WalkNew{W, H, D, tl, 0, 0};
        }
    }
    u64 blocks = (u64)gx * gy;
    unsigned comps = 1;
    void* a1[] = {&p, &pr, &ps, M.old ? (void*)&wo : (void*)&wn, &part};
    void* a2[] = {&part, &blocks, &comps, &out};
    u64 bytes = w * h * d * size;
    SumRun r;
    r.blocks = (unsigned)blocks;
    r.us_all = time_us(bytes, [&] { launch(f, gx, gy, 1, 256, 1, a1); launch(fin, 1, 1, 1, 256, 1, a2); });
    r.us_main = once ? 0 : time_us(bytes, [&] { launch(f, gx, gy, 1, 256, 1, a1); });
    CK(cuStreamSynchronize(st));
    CK(cuMemcpyDtoH(&r.result, out, 8));
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
        M.batched = s.size() > 2 && s.substr(s.size() - 2) == ":b";
        if (M.batched) s = s.substr(0, s.size() - 2);
        size_t c1 = s.find(':'), c2 = s.rfind(':');
        M.name = s.substr(0, c1);
        std::string file = s.substr(c1 + 1, c2 - c1 - 1);
        M.elems = atoi(s.substr(c2 + 1).c_str());
        M.old = M.name == "old";
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
    for (auto& M : mods) printf(" %s(E=%d)", M.name.c_str(), M.elems);
    printf("\n");

    const u64 N = 1ull << 28;  // 1 GiB of f32
    CUdeviceptr x, y, part, out;
    CK(cuMemAlloc(&x, N * 4 + 64));
    CK(cuMemAlloc(&y, N * 4 + 64));
    CK(cuMemAlloc(&part, 65536 * 16));
    CK(cuMemAlloc(&out, 16));
    fill_f32(x, N + 16, 1);
    fill_f32(y, N + 16, 2);

    // Ceiling: D2D copy of 512 MiB (R + W = 1 GiB).
    {
        double us = time_us(1ull << 30, [&] { CK(cuMemcpyDtoDAsync(y, x, 512ull << 20, st)); });
        if (!once) printf("ceiling: D2D copy 512 MiB: %.1f us, %.0f GB/s (R+W)\n", us, 2.0 * (512 << 20) / us / 1e3);
    }

    // Host reference for the 256M f32 sum (and the others, by prefix).
    std::vector<float> hx(N);
    CK(cuMemcpyDtoH(hx.data(), x, N * 4));
    std::vector<std::pair<std::vector<u64>, double>> memo;
    auto ref = [&](u64 off, u64 w, u64 h, u64 row) {
        std::vector<u64> key{off, w, h, row};
        for (auto& m : memo)
            if (m.first == key) return m.second;
        long double s = 0;
        for (u64 r = 0; r < h; r++)
            for (u64 c = 0; c < w; c++) s += hx[off + r * row + c];
        memo.push_back({key, (double)s});
        return (double)s;
    };

    printf("\n## sum f32, 1D (packed), main + finish kernel | main alone; result error vs host long double\n");
    printf("| variant | plan (vec passes, cap) | n | blocks | us | GB/s | main us | rel err |\n|---|---|---|---|---|---|---|---|\n");
    struct P { u64 passes, cap; };
    for (auto& M : mods) {
        std::vector<P> plans = M.old ? std::vector<P>{{16, 2048}} : std::vector<P>{{4, 2048}};
        if (M.name == "new") plans = {{4, 2048}, {16, 2048}, {4, 1024}, {4, 4096}, {2, 8192}};
        for (P pl : plans)
            for (u64 n : {1ull << 20, 1ull << 24, 1ull << 26, 1ull << 28}) {
                if (once && n != N) continue;
                SumRun r = run_sum(M, "f32", 4, x, n, 1, 1, n, pl.passes, pl.cap, part, out);
                if (once) break;
                double e = ref(0, n, 1, n);
                printf("| %s | %llu, %llu | %llu | %u | %.1f | %.0f | %.1f | %.1e |\n", M.name.c_str(), pl.passes, pl.cap, n,
                       r.blocks, r.us_all, n * 4 / r.us_all / 1e3, r.us_main, fabs(r.result - e) / fabs(e));
            }
    }
    // Misaligned start (head of 1 element) and other dtypes (bytes of the f32 data reinterpreted).
    printf("\n## sum, other shapes and dtypes (default plan)\n| variant | case | us | GB/s (box bytes) | rel err |\n|---|---|---|---|---|\n");
    for (auto& M : mods) {
        struct C { const char* what; const char* dt; int size; u64 off, w, h, row; };
        std::vector<C> cases = {
            {"f32 1D 64M, offset 1 element", "f32", 4, 1, 1ull << 26, 1, 1ull << 26},
            {"f32 3 x 4194304, pitch 16 B", "f32", 4, 0, 3, 1ull << 22, 4},
            {"f32 8191 x 8192, pitch 32788 B", "f32", 4, 0, 8191, 8192, 8197},
            {"f32 1000 x 16384, pitch 4096 B", "f32", 4, 0, 1000, 16384, 1024},
            {"f16 1D 256M", "f16", 2, 0, 1ull << 28, 1, 1ull << 28},
            {"bf16 1D 256M", "bf16", 2, 0, 1ull << 28, 1, 1ull << 28},
            {"f64 1D 64M", "f64", 8, 0, 1ull << 26, 1, 1ull << 26},
            {"f16 3 x 4194304, pitch 8 B", "f16", 2, 0, 3, 1ull << 22, 4},
        };
        for (auto& c : cases) {
            if (once && strncmp(c.what, "f32 3 x", 7)) continue;
            SumRun r = run_sum(M, c.dt, c.size, x + c.off * c.size, c.w, c.h, 1, c.row, 4, 2048, part, out);
            double e = c.size == 4 ? ref(c.off, c.w, c.h, c.row) : NAN;
            if (!once)
                printf("| %s | %s | %.1f | %.0f | %.1e |\n", M.name.c_str(), c.what, r.us_all,
                       (double)c.w * c.h * c.size / r.us_all / 1e3, fabs(r.result - e) / fabs(e));
        }
        // Same bits, run to run (the 256M f32 sum and the thin box), ten times each.
        if (!once) {
            bool same = true;
            for (int t = 0; t < 2; t++) {
                double first = NAN;
                for (int i = 0; i < 10; i++) {
                    SumRun r = t == 0 ? run_sum(M, "f32", 4, x, N, 1, 1, N, 4, 2048, part, out)
                                      : run_sum(M, "f32", 4, x, 3, 1ull << 22, 1, 4, 4, 2048, part, out);
                    if (i == 0) first = r.result;
                    else same &= !memcmp(&first, &r.result, 8);
                }
            }
            printf("| %s | same bits over 10 runs each (256M, 3 x 4M) | %s | | |\n", M.name.c_str(), same ? "yes" : "NO");
        }
    }

    printf("\n## accumulate_and_zero f32, element kernel (region_accumulate_f32, zero_src = 1); GB/s = 4 x box bytes / us\n");
    printf("| variant | box | us | GB/s |\n|---|---|---|---|\n");
    for (auto& M : mods) {
        CUfunction f = M.fn("region_accumulate_f32");
        struct B { u64 w, h, row; };
        for (B b : {B{3, 1ull << 22, 4}, B{5, 1ull << 22, 7}, B{1, 1ull << 24, 3}, B{333, 65536, 347}, B{8191, 4096, 8197}}) {
            if (once && b.w != 3) continue;
            unsigned tl, gx, gy;
            walk_with(b.w, b.h, 1, 4, 65536, tl, gx, gy, M.batched ? 8 : 1);
            WalkNew wn{b.w, b.h, 1, tl, 0, 0};
            WalkOld wo{b.w, b.h, 1, tl};
            u64 sl = b.row * b.h;
            unsigned z = 1;
            void* args[] = {&y, &b.row, &sl, &x, &b.row, &sl, M.old ? (void*)&wo : (void*)&wn, &z};
            double us = time_us(4 * b.w * b.h * 4, [&] { launch(f, gx, gy, 1, 256, 1, args); });
            if (!once) printf("| %s | %llu x %llu, pitch %llu B | %.1f | %.0f |\n", M.name.c_str(), b.w, b.h, b.row * 4, us, 16.0 * b.w * b.h / us / 1e3);
        }
        fill_f32(x, N + 16, 1);
    }

    printf("\n## CUDA array one-pass reverse, f32, lin += arr; arr = 0 (mode 1) and arr += lin; lin = 0 (mode 3); GB/s = 2R+2W\n");
    printf("| variant | array | block | mode 1 us | GB/s | mode 3 us | GB/s |\n|---|---|---|---|---|---|---|\n");
    struct A { unsigned w, h, d; };
    for (A a : {A{8192, 4096, 1}, A{512, 512, 64}, A{4096, 1024, 1}}) {
        CUarray arr;
        CUDA_ARRAY3D_DESCRIPTOR desc{};
        desc.Width = a.w;
        desc.Height = a.h == 1 ? 0 : a.h;
        desc.Depth = a.d == 1 ? 0 : a.d;
        desc.Format = CU_AD_FORMAT_FLOAT;
        desc.NumChannels = 1;
        desc.Flags = CUDA_ARRAY3D_SURFACE_LDST;
        CK(cuArray3DCreate(&arr, &desc));
        CUDA_RESOURCE_DESC rd{};
        rd.resType = CU_RESOURCE_TYPE_ARRAY;
        rd.res.array.hArray = arr;
        CUsurfObject surf;
        CK(cuSurfObjectCreate(&surf, &rd));
        unsigned dims = a.d > 1 ? 3 : a.h > 1 ? 2 : 1;
        u64 n = (u64)a.w * a.h * a.d;
        for (auto& M : mods) {
            CUfunction f = M.fn("array_pass_f32");
            struct Bk { unsigned bx, by; };
            std::vector<Bk> blocks = a.h == 1 ? std::vector<Bk>{{256, 1}} : std::vector<Bk>{{16, 16}};
            if (!M.old && a.h > 1) blocks = {{16, 16}, {32, 8}, {64, 4}, {32, 16}};
            if (once) blocks = {blocks.size() > 2 ? blocks[2] : blocks[0]};
            for (Bk bk : blocks) {
                int E = M.elems;
                unsigned ex = bk.by == 1 ? E : 1, ey = bk.by == 1 ? 1 : E;
                unsigned gx = (a.w + bk.bx * ex - 1) / (bk.bx * ex), gy = (a.h + bk.by * ey - 1) / (bk.by * ey);
                int x0 = 0, y0 = 0, z0 = 0, w = a.w, h = a.h;
                u64 row = a.w, slice = (u64)a.w * a.h;
                double us[2];
                for (int mi = 0; mi < (once ? 1 : 2); mi++) {
                    unsigned mode = mi == 0 ? 1 : 3;
                    void* args[] = {&surf, &dims, &x0, &y0, &z0, &w, &h, &y, &row, &slice, &mode};
                    us[mi] = time_us(4 * n * 4, [&] { launch(f, gx, gy, a.d, bk.bx, bk.by, args); });
                }
                if (!once)
                    printf("| %s | %ux%ux%u | %ux%u | %.1f | %.0f | %.1f | %.0f |\n", M.name.c_str(), a.w, a.h, a.d, bk.bx, bk.by,
                           us[0], 16.0 * n / us[0] / 1e3, us[1], 16.0 * n / us[1] / 1e3);
            }
        }
        cuSurfObjectDestroy(surf);
        cuArrayDestroy(arr);
    }
    CK(cuCtxSynchronize());
    printf("\ndone\n");
    return 0;
}
