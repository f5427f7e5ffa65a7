"""PyTorch on the shapes of bench-regions (rules-runtime/benches/regions.rs), timed the same way.

    python3 tools/torch-compare/regions.py [--reps 21]

CUDA events around k back-to-back calls (k = 2 from 256 MiB moved per call, 8 from 16 MiB, 50
below: the bench's rule), 3 warm-up calls, median of the repetitions, per call.
- 2D boxes: views of the bench's shapes (width, height, pitch in elements, the same in every
  dtype) over flat buffers; `a.add_(b); b.zero_()` (the reverse of a copy, 2R+2W per element),
  `a.add_(b)` and `a.copy_(b)` (R+W).
- Sums: `x.sum()` (result stays on the device, as `accumulate_sum_region`), `x.sum().item()` (the
  host waits, as `sum_region`), and `x.sum(dtype=torch.float64)` (f64 accumulation, as ours);
  for packed runs and the pitched boxes of the bench.
- Complex sums (c32, c64): `x.sum()` and `x.sum().item()` on the packed runs and boxes of the
  bench's complex rows.
- Ceiling: `y.copy_(x)` of 256M f32.
"""
import argparse
import torch

p = argparse.ArgumentParser()
p.add_argument("--reps", type=int, default=21)
a = p.parse_args()
dev = torch.device("cuda")
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, device {torch.cuda.get_device_name(0)}")


def time_us(f, moved):
    k = 2 if moved >= 256 << 20 else 8 if moved >= 16 << 20 else 50
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    t = []
    for _ in range(a.reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(k):
            f()
        e.record()
        e.synchronize()
        t.append(s.elapsed_time(e) * 1e3 / k)
    return sorted(t)[len(t) // 2]


def rand(n, dt):
    return ((torch.rand(n, device=dev) * 2 - 1) / 64 + 1e-3).to(dt)


DTYPES = [("f32", torch.float32), ("f16", torch.float16), ("bf16", torch.bfloat16), ("f64", torch.float64)]
BOXES = [(8192, 4096, 8192), (8192, 4096, 8200), (8191, 4096, 8197), (1000, 16384, 1024),
         (333, 65536, 347), (3, 1 << 22, 4), (1, 1 << 24, 3), (1 << 24, 1, 1 << 24)]

x = rand(1 << 28, torch.float32)
y = torch.empty_like(x)
us = time_us(lambda: y.copy_(x), 2 << 30)
print(f"\nceiling: y.copy_(x), 256M f32: {us:.1f} us, {2 * (1 << 30) / us / 1e3:.0f} GB/s (R+W)")
del x, y

print("\n## 2D boxes: a.add_(b); b.zero_() on strided views (pitch in bytes)")
print("| dtype | width | height | pitch B | add_+zero_ us | GB/s (2R+2W) | add_ us | copy_ us |")
print("|---|---|---|---|---|---|---|---|")
for name, dt in DTYPES:
    size = torch.tensor([], dtype=dt).element_size()
    for w, h, row in BOXES:
        n = (h - 1) * row + w
        fa, fb = rand(n, dt), rand(n, dt)
        va = fa.as_strided((h, w), (row, 1))
        vb = fb.as_strided((h, w), (row, 1))
        box = w * h * size

        def rev():
            va.add_(vb)
            vb.zero_()

        t_rev = time_us(rev, 4 * box)
        t_add = time_us(lambda: va.add_(vb), 3 * box)
        t_copy = time_us(lambda: va.copy_(vb), 2 * box)
        print(f"| {name} | {w} | {h} | {row * size} | {t_rev:.1f} | {4 * box / t_rev / 1e3:.0f} | {t_add:.1f} | {t_copy:.1f} |")
        del fa, fb, va, vb
    torch.cuda.empty_cache()

print("\n## sums: x.sum() (on the device), x.sum().item() (host waits), x.sum(dtype=float64)")
print("| dtype | n / box | sum() us | GB/s | sum().item() us | sum(float64) us | GB/s |")
print("|---|---|---|---|---|---|---|")
SUMS = [(1 << 20, 1, 1 << 20), (1 << 24, 1, 1 << 24), (1 << 26, 1, 1 << 26), (1 << 28, 1, 1 << 28),
        (8191, 8192, 8197), (3, 1 << 22, 4), (1, 1 << 24, 3), (8, 1 << 21, 9)]
for name, dt in DTYPES:
    size = torch.tensor([], dtype=dt).element_size()
    for w, h, row in SUMS:
        n = (h - 1) * row + w
        flat = rand(n, dt)
        v = flat if h == 1 else flat.as_strided((h, w), (row, 1))
        box = w * h * size
        t_dev = time_us(lambda: v.sum(), box)
        t_host = time_us(lambda: v.sum().item(), box)
        t_f64 = time_us(lambda: v.sum(dtype=torch.float64), box)
        what = f"{w}" if h == 1 else f"{w}x{h} (pitch {row * size} B)"
        print(f"| {name} | {what} | {t_dev:.1f} | {box / t_dev / 1e3:.0f} | {t_host:.1f} | {t_f64:.1f} | {box / t_f64 / 1e3:.0f} |")
        del flat, v
    torch.cuda.empty_cache()

print("\n## complex sums: x.sum() (on the device), x.sum().item() (host waits)")
print("| dtype | n / box | sum() us | GB/s | sum().item() us |")
print("|---|---|---|---|---|")
CSUMS = [(1 << 20, 1, 1 << 20), (1 << 24, 1, 1 << 24), (1 << 26, 1, 1 << 26), (8191, 8192, 8197), (3, 1 << 22, 4)]
for name, dt, real in [("c32", torch.complex64, torch.float32), ("c64", torch.complex128, torch.float64)]:
    size = torch.tensor([], dtype=dt).element_size()
    for w, h, row in CSUMS:
        n = (h - 1) * row + w
        flat = torch.complex(rand(n, real), rand(n, real) / 2)
        v = flat if h == 1 else flat.as_strided((h, w), (row, 1))
        box = w * h * size
        t_dev = time_us(lambda: v.sum(), box)
        t_host = time_us(lambda: v.sum().item(), box)
        what = f"{w}" if h == 1 else f"{w}x{h} (pitch {row * size} B)"
        print(f"| {name} | {what} | {t_dev:.1f} | {box / t_dev / 1e3:.0f} | {t_host:.1f} |")
        del flat, v
    torch.cuda.empty_cache()
