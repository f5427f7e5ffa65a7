// The compare kernels of rules-runtime's checked mode (the `checked` feature): after a rule's
// primitive ran, does the destination's box hold what the rule assumes?
//
// Built to PTX (check.ptx, committed) by regen.sh, apart from shadow.ptx (which is close to the
// package's 1 MiB per file), and loaded only when the checked mode first compares on a context.
//
// One kernel per element size (2, 4, 8, 16 bytes). The comparison is bitwise, in words of the
// element's alignment (an 8-byte complex<f32> is 4-byte aligned, a 16-byte complex<f64> 8-byte
// aligned, so those are compared as two words): NaNs with the same bits agree, and -0.0 does not
// agree with +0.0. The expected element is
//   - the source box's element at the same (x, y, z) (`s`, steps in elements), for a copy;
//   - the one element at `s` (`sstep`, `srow`, `sslice` all 0), for a memset (its box's first
//     element) or a fill from a one-element buffer;
//   - the value in (lo, hi) when `s` is null, for a fill by value.
//
// out[0] counts the mismatches (integer atomics, one per thread that found any); out[1..9] are the
// smallest mismatching indices in the box (x + w * (y + h * z)), in increasing order: each is
// inserted by a cascade of atomicMin (the smaller value stays in the slot, the larger one moves
// on), which keeps every value exactly once and leaves the 8 smallest sorted. The host sets out[0]
// to 0 and out[1..9] to all ones before the launch. A thread inserts at most 8 of its own (its
// later ones are larger than those), so a box that disagrees everywhere costs few atomics.

typedef unsigned long long u64;
typedef unsigned short u16;

#define SLOTS 8

__device__ __forceinline__ void insert(u64* slots, u64 v) {
    for (int i = 0; i < SLOTS; i++) {
        u64 old = atomicMin(slots + i, v);
        if (old == ~0ull) return;
        v = old > v ? old : v;
    }
}

// W: the word compared; K: words per element. Strides (rows, slices, sstep) are in elements.
template <typename W, int K>
__device__ __forceinline__ void check(const W* d, u64 drow, u64 dslice, const W* s, u64 sstep,
                                      u64 srow, u64 sslice, u64 w, u64 h, u64 depth, u64 lo,
                                      u64 hi, u64* out) {
    W value[K];
    {
        // The value's bytes, little-endian, as the host wrote them into (lo, hi).
        unsigned char bytes[16];
        for (int i = 0; i < 8; i++) {
            bytes[i] = (unsigned char)(lo >> (8 * i));
            bytes[8 + i] = (unsigned char)(hi >> (8 * i));
        }
        for (int k = 0; k < K; k++) {
            W x = 0;
            for (int b = 0; b < (int)sizeof(W); b++) x |= (W)((W)bytes[k * sizeof(W) + b] << (8 * b));
            value[k] = x;
        }
    }
    const u64 rows = h * depth;
    const u64 x0 = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 xs = (u64)gridDim.x * blockDim.x;
    u64 mine = 0;
    int kept = 0;
    for (u64 r = blockIdx.y; r < rows; r += gridDim.y) {
        const u64 z = r / h, y = r - z * h;
        const W* dr = d + (y * drow + z * dslice) * K;
        const W* sr = s ? s + (y * srow + z * sslice) * K : (const W*)0;
        for (u64 x = x0; x < w; x += xs) {
            bool same = true;
#pragma unroll
            for (int k = 0; k < K; k++) {
                const W want = sr ? sr[x * sstep * K + k] : value[k];
                same = same && dr[x * K + k] == want;
            }
            if (!same) {
                mine++;
                if (kept < SLOTS) {
                    insert(out + 1, x + w * r);
                    kept++;
                }
            }
        }
    }
    if (mine) atomicAdd(out, mine);
}

#define CHECK_KERNEL(name, W, K)                                                                 \
    extern "C" __global__ void name(const W* d, u64 drow, u64 dslice, const W* s, u64 sstep,     \
                                    u64 srow, u64 sslice, u64 w, u64 h, u64 depth, u64 lo,       \
                                    u64 hi, u64* out) {                                          \
        check<W, K>(d, drow, dslice, s, sstep, srow, sslice, w, h, depth, lo, hi, out);          \
    }

CHECK_KERNEL(check_b2, u16, 1)
CHECK_KERNEL(check_b4, unsigned, 1)
CHECK_KERNEL(check_b8, unsigned, 2)
CHECK_KERNEL(check_b16, u64, 2)
