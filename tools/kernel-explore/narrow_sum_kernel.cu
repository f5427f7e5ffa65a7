// Does the narrow-row sum gain from a kernel of its own (docs/performance-notes.md, "Narrow rows",
// "Box reverse", "CUDA array one-pass reverse")? The narrow-row sum as a kernel of its own
// (region_sum_narrow_*), the
// thin accumulate's rows per thread (PASS_ROWS) on a 1-wide box, and the 3D CUDA array one-pass
// reverse walking z inside a block (array_pass_* mode bit 2), old against new variants, in one
// process on the H200. Host code only: the kernels are loaded from PTX files with the driver API
// (as the runtime loads shadow.ptx), so each variant is shadow.cu built with other -D values:
//
//   nvcc -ptx -arch=compute_75 -O3 -std=c++17 -DSUM_NARROW_ROWS_4=8 ... shadow.cu -o v.ptx  (anywhere)
//   nvcc -O2 -o narrow_sum_kernel narrow_sum_kernel.cu -lcuda                       (on the GPU machine)
//   ./narrow_sum_kernel cur:cur.ptx new:new.ptx:r4=8,r8=4 pr1:pr1.ptx:pr=1 ...   [--once: a few kernels once, for ncu]
//   python3 narrow_sum_kernel_torch.py                               (PyTorch, same machine)
//
// NAME:FILE[:k=v,...]: r4, r8 = SUM_NARROW_ROWS_4 / _8 of that build (the narrow grid's batch),
// pr = PASS_ROWS, e = ARRAY_PASS_ELEMS. The variant named "cur" is the shadow.ptx of 425c91d,
// before the narrow kernel: narrow sums through region_sum_* (8 rows per thread), array_pass without
// z walk. The z walk (mode bit 2 and a depth parameter after `mode`) is in shadow.cu of e39137f
// only: it gained nothing and was taken out, so build the other variants from that commit's
// shadow.cu to run this as it ran (docs/performance-notes.md, "CUDA array one-pass reverse"). The SUM_NARROW_
// MIN_BLOCKS of that commit became SUM_NARROW_BLOCKS and SUM_NARROW_BLOCKS_F32.
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
    int r4 = 16, r8 = 8, pr = 8, e = 4;
    bool cur() const { return name == "cur"; }
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

struct SumRun { double us_stream, us_main, result; unsigned blocks; };

// The reduction of a (w, h, d) box (pitch `row`, slice `slice` elements) as accumulate_sum_region
// launches it: the main kernel, then region_sum_add_* into `acc` (on the stream); the result
// comes from region_sum_finish into `out` afterwards.
static SumRun run_sum(Mod& M, const char* dt, int size, CUdeviceptr p, u64 w, u64 h, u64 d, u64 row, u64 slice,
                      CUdeviceptr part, CUdeviceptr out, CUdeviceptr acc) {
    // Narrow rows only here (w < 128; no vector path).
    bool narrow = !M.cur();
    std::string kn = std::string(narrow ? "region_sum_narrow_" : "region_sum_") + dt;
    std::string an = std::string("region_sum_add_") + dt;
    CUfunction f = M.fn(kn.c_str()), fin = M.fn("region_sum_finish"), add = M.fn(an.c_str());
    u64 batch = 8;
    if (narrow) {
        batch = size <= 4 ? M.r4 : M.r8;
        if (d > 1) batch = batch > 1 ? batch / 2 : 1;
    }
    unsigned tl, gx, gy;
    walk_with(w, h, d, 16, 2048, tl, gx, gy, batch);
    Walk wk{w, h, d, tl, 0, 0};
    u64 blocks = (u64)gx * gy;
    unsigned comps = 1;
    void* a1[] = {&p, &row, &slice, &wk, &part};
    void* a2[] = {&part, &blocks, &comps, &out};
    void* a3[] = {&part, &blocks, &acc};
    u64 bytes = w * h * d * size;
    SumRun r;
    r.blocks = (unsigned)blocks;
    r.us_stream = time_us(bytes, [&] { launch(f, gx, gy, 1, 256, 1, a1); launch(add, 1, 1, 1, 256, 1, a3); });
    r.us_main = once ? 0 : time_us(bytes, [&] { launch(f, gx, gy, 1, 256, 1, a1); });
    launch(f, gx, gy, 1, 256, 1, a1);
    launch(fin, 1, 1, 1, 256, 1, a2);
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
                if (k == "r4") M.r4 = v;
                else if (k == "r8") M.r8 = v;
                else if (k == "pr") M.pr = v;
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
    for (auto& M : mods) printf(" %s(r4=%d,r8=%d,pr=%d,e=%d)", M.name.c_str(), M.r4, M.r8, M.pr, M.e);
    printf("\n");

    const u64 N = 1ull << 27;  // 512 MiB of f32
    CUdeviceptr x, y, part, out, acc;
    CK(cuMemAlloc(&x, N * 4 + 64));
    CK(cuMemAlloc(&y, N * 4 + 64));
    CK(cuMemAlloc(&part, 65536 * 16));
    CK(cuMemAlloc(&out, 16));
    CK(cuMemAlloc(&acc, 16));
    CK(cuMemsetD8(acc, 0, 16));
    fill_f32(x, N + 16, 1);
    fill_f32(y, N + 16, 2);

    if (!once) {
        double us = time_us(512ull << 20, [&] { CK(cuMemcpyDtoDAsync(y, x, 256ull << 20, st)); });
        printf("ceiling: D2D copy 256 MiB: %.1f us, %.0f GB/s (R+W)\n", us, 2.0 * (256 << 20) / us / 1e3);
        fill_f32(y, N + 16, 2);
    }

    std::vector<float> hx(N);
    CK(cuMemcpyDtoH(hx.data(), x, N * 4));
    auto ref = [&](u64 w, u64 h, u64 d, u64 row, u64 slice) {
        long double s = 0;
        for (u64 z = 0; z < d; z++)
            for (u64 r = 0; r < h; r++)
                for (u64 c = 0; c < w; c++) s += hx[z * slice + r * row + c];
        return (double)s;
    };

    // ---- Narrow sums.
    printf("\n## narrow sums: main + region_sum_add (on the stream) | main alone; rel err vs host long double (f32); same bits twice; equal to cur\n");
    printf("| variant | dtype | box (w x h x d, pitch B) | blocks | stream us | main us | GB/s (box bytes, stream) | rel err | same bits | result |\n|---|---|---|---|---|---|---|---|---|---|\n");
    struct C { const char* dt; int size; u64 w, h, d, row, slice; };
    std::vector<C> cases = {
        {"f32", 4, 3, 1ull << 22, 1, 4, 0},
        {"f32", 4, 1, 1ull << 24, 1, 3, 0},
        {"f32", 4, 2, 1ull << 22, 1, 3, 0},
        {"f32", 4, 5, 1ull << 22, 1, 7, 0},
        {"f32", 4, 8, 1ull << 21, 1, 9, 0},
        {"f32", 4, 3, 1000, 4096, 4, 4012},
        {"f16", 2, 3, 1ull << 22, 1, 4, 0},
        {"bf16", 2, 3, 1ull << 22, 1, 4, 0},
        {"f64", 8, 3, 1ull << 22, 1, 4, 0},
        {"f16", 2, 1, 1ull << 24, 1, 3, 0},
        {"f64", 8, 1, 1ull << 24, 1, 3, 0},
    };
    std::vector<double> curres(cases.size(), NAN);
    for (auto& M : mods) {
        if (M.name != "cur" && M.name[0] != 'n') continue;
        for (size_t ci = 0; ci < cases.size(); ci++) {
            C c = cases[ci];
            if (once && !(ci == 0 && (M.name == "cur" || M.name == "new"))) continue;
            u64 slice = c.d > 1 ? c.slice : c.row * c.h;
            SumRun r = run_sum(M, c.dt, c.size, x, c.w, c.h, c.d, c.row, slice, part, out, acc);
            if (once) continue;
            SumRun r2 = run_sum(M, c.dt, c.size, x, c.w, c.h, c.d, c.row, slice, part, out, acc);
            bool same = !memcmp(&r.result, &r2.result, 8);
            double e = c.size == 4 ? ref(c.w, c.h, c.d, c.row, slice) : NAN;
            if (M.cur()) curres[ci] = r.result;
            printf("| %s | %s | %llu x %llu x %llu, %llu B | %u | %.1f | %.1f | %.0f | %.1e | %s | %.17g%s |\n", M.name.c_str(),
                   c.dt, c.w, c.h, c.d, c.row * c.size, r.blocks, r.us_stream, r.us_main,
                   (double)c.w * c.h * c.d * c.size / r.us_stream / 1e3, fabs(r.result - e) / fabs(e), same ? "yes" : "NO",
                   r.result, M.cur() ? "" : (r.result == curres[ci] ? " (= cur)" : " (!= cur)"));
        }
    }

    // ---- Thin accumulate_and_zero (element kernel, zero_src = 1).
    printf("\n## accumulate_and_zero f32, region_accumulate_f32 (zero_src = 1), grid batch = the variant's PASS_ROWS; GB/s = 4 x box bytes / us\n");
    printf("| variant | box | blocks | us | GB/s |\n|---|---|---|---|---|\n");
    for (auto& M : mods) {
        if (M.name != "cur" && M.name != "new" && M.name.substr(0, 2) != "pr") continue;
        CUfunction f = M.fn("region_accumulate_f32");
        struct B { u64 w, h, row; };
        for (B b : {B{1, 1ull << 24, 3}, B{3, 1ull << 22, 4}, B{1, 1ull << 24, 2}, B{1, 1ull << 24, 4}}) {
            if (once && !(b.w == 1 && b.row == 3 && (M.name == "cur" || M.name == "pr1"))) continue;
            unsigned tl, gx, gy;
            walk_with(b.w, b.h, 1, 4, 65536, tl, gx, gy, M.pr);
            Walk wk{b.w, b.h, 1, tl, 0, 0};
            u64 sl = b.row * b.h;
            unsigned z = 1;
            void* args[] = {&y, &b.row, &sl, &x, &b.row, &sl, &wk, &z};
            double us = time_us(4 * b.w * b.h * 4, [&] { launch(f, gx, gy, 1, 256, 1, args); });
            if (!once)
                printf("| %s | %llu x %llu, pitch %llu B | %u | %.1f | %.0f |\n", M.name.c_str(), b.w, b.h, b.row * 4, gx * gy, us,
                       16.0 * b.w * b.h / us / 1e3);
        }
    }
    fill_f32(x, N + 16, 1);

    // ---- CUDA array one-pass reverse.
    printf("\n## CUDA array one-pass reverse, f32, mode 1 (lin += arr; arr = 0) and mode 3 (arr += lin; lin = 0); GB/s = 2R+2W\n");
    printf("| variant | array | block | elements along | mode 1 us | GB/s | mode 3 us | GB/s |\n|---|---|---|---|---|---|---|---|\n");
    struct A { unsigned w, h, d; };
    for (A a : {A{512, 512, 64}, A{8192, 4096, 1}, A{256, 256, 256}, A{512, 512, 63}}) {
        if (once && a.d != 64) continue;
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
            if (M.name != "cur" && M.name != "new" && M.name[0] != 'e') continue;
            if (once && M.name[0] == 'e') continue;
            CUfunction f = M.fn("array_pass_f32");
            struct Bk { unsigned bx, by; bool z; };
            std::vector<Bk> blocks = {{64, 4, false}};
            if (!M.cur() && a.d > 1) blocks = {{64, 4, false}, {64, 4, true}, {32, 8, true}, {128, 2, true}, {32, 4, true}, {64, 2, true}, {64, 8, true}};
            if (M.name[0] == 'e' && a.d > 1) blocks = {{64, 4, false}, {64, 4, true}, {32, 8, true}};
            if (once) blocks = {M.cur() ? Bk{64, 4, false} : Bk{64, 4, true}};
            for (Bk bk : blocks) {
                int E = M.cur() ? 4 : M.e;
                unsigned ey = bk.z ? 1 : E, ez = bk.z ? E : 1;
                unsigned gx = (a.w + bk.bx - 1) / bk.bx, gy = (a.h + bk.by * ey - 1) / (bk.by * ey), gz = (a.d + ez - 1) / ez;
                int x0 = 0, y0 = 0, z0 = 0, w = a.w, h = a.h, dd = a.d;
                u64 row = a.w, slice = (u64)a.w * a.h;
                double us[2];
                for (int mi = 0; mi < (once ? 1 : 2); mi++) {
                    unsigned mode = (mi == 0 ? 1 : 3) | (bk.z ? 4 : 0);
                    void* args[] = {&surf, &dims, &x0, &y0, &z0, &w, &h, &y, &row, &slice, &mode, &dd};
                    us[mi] = time_us(4 * n * 4, [&] { launch(f, gx, gy, gz, bk.bx, bk.by, args); });
                }
                if (!once)
                    printf("| %s | %ux%ux%u | %ux%u | %s (E=%d) | %.1f | %.0f | %.1f | %.0f |\n", M.name.c_str(), a.w, a.h, a.d, bk.bx,
                           bk.by, bk.z ? "z" : "y", E, us[0], 16.0 * n / us[0] / 1e3, us[1], 16.0 * n / us[1] / 1e3);
            }
        }
        // Correctness of the z walk on this array: arr = 1, lin = 2 (n floats), mode 3 (arr += lin; lin = 0)
        // with the new module's (64, 4, z) shape, then read the array back: every element 3.
        if (!once && a.d > 1) {
            for (auto& M : mods) {
                if (M.name != "new") continue;
                std::vector<float> ones(n, 1.0f), twos(n, 2.0f), back(n);
                CUDA_MEMCPY3D c{};
                c.srcMemoryType = CU_MEMORYTYPE_HOST;
                c.srcHost = ones.data();
                c.srcPitch = a.w * 4;
                c.srcHeight = a.h;
                c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
                c.dstArray = arr;
                c.WidthInBytes = a.w * 4;
                c.Height = a.h;
                c.Depth = a.d;
                CK(cuMemcpy3D(&c));
                CK(cuMemcpyHtoD(y, twos.data(), n * 4));
                CUfunction f = M.fn("array_pass_f32");
                int x0 = 0, y0 = 0, z0 = 0, w = a.w, h = a.h, dd = a.d;
                u64 row = a.w, slice = (u64)a.w * a.h;
                unsigned mode = 3 | 4;
                void* args[] = {&surf, &dims, &x0, &y0, &z0, &w, &h, &y, &row, &slice, &mode, &dd};
                launch(f, (a.w + 63) / 64, (a.h + 3) / 4, (a.d + M.e - 1) / M.e, 64, 4, args);
                CK(cuStreamSynchronize(st));
                CUDA_MEMCPY3D b{};
                b.srcMemoryType = CU_MEMORYTYPE_ARRAY;
                b.srcArray = arr;
                b.dstMemoryType = CU_MEMORYTYPE_HOST;
                b.dstHost = back.data();
                b.dstPitch = a.w * 4;
                b.dstHeight = a.h;
                b.WidthInBytes = a.w * 4;
                b.Height = a.h;
                b.Depth = a.d;
                CK(cuMemcpy3D(&b));
                CK(cuMemcpyDtoH(twos.data(), y, n * 4));
                u64 bad = 0;
                for (u64 i = 0; i < n; i++) bad += back[i] != 3.0f || twos[i] != 0.0f;
                printf("| z-walk check %ux%ux%u | %s |\n", a.w, a.h, a.d, bad ? "WRONG" : "all 3, linear all 0");
            }
        }
        cuSurfObjectDestroy(surf);
        cuArrayDestroy(arr);
    }
    CK(cuCtxSynchronize());
    printf("\ndone\n");
    return 0;
}
