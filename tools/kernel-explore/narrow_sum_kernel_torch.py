"""PyTorch on narrow_sum_kernel.cu's narrow shapes, timed as tools/torch-compare/regions.py times them
(events around k back-to-back calls, 3 warm-ups, median of 21): `x.sum()` and `x.sum().item()`
on narrow strided views, and `a.add_(b); b.zero_()` on the thin boxes of narrow_sum_kernel.cu's
accumulate table. Run beside it on the same machine: python3 narrow_sum_kernel_torch.py
"""
import torch
dev = torch.device("cuda")
def time_us(f, moved):
    k = 2 if moved >= 256 << 20 else 8 if moved >= 16 << 20 else 50
    for _ in range(3): f()
    torch.cuda.synchronize()
    t = []
    for _ in range(21):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(k): f()
        e.record(); e.synchronize()
        t.append(s.elapsed_time(e) * 1e3 / k)
    return sorted(t)[10]
def rand(n, dt):
    return ((torch.rand(n, device=dev) * 2 - 1) / 64 + 1e-3).to(dt)
DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64}
print("| dtype | box (w x h x d, pitch el) | sum() us | sum().item() us |\n|---|---|---|---|")
for dt, w, h, d, row, sl in [("f32", 3, 1 << 22, 1, 4, 0), ("f32", 1, 1 << 24, 1, 3, 0), ("f32", 2, 1 << 22, 1, 3, 0),
                             ("f32", 5, 1 << 22, 1, 7, 0), ("f32", 8, 1 << 21, 1, 9, 0), ("f32", 3, 1000, 4096, 4, 4012),
                             ("f16", 3, 1 << 22, 1, 4, 0), ("bf16", 3, 1 << 22, 1, 4, 0), ("f64", 3, 1 << 22, 1, 4, 0),
                             ("f16", 1, 1 << 24, 1, 3, 0), ("f64", 1, 1 << 24, 1, 3, 0)]:
    t = DT[dt]
    size = torch.tensor([], dtype=t).element_size()
    n = (d - 1) * sl + (h - 1) * row + w
    flat = rand(n, t)
    v = flat.as_strided((d, h, w), (sl, row, 1)) if d > 1 else flat.as_strided((h, w), (row, 1))
    box = w * h * d * size
    a = time_us(lambda: v.sum(), box)
    b = time_us(lambda: v.sum().item(), box)
    print(f"| {dt} | {w} x {h} x {d}, {row} | {a:.1f} | {b:.1f} |")
    del flat, v
print("\n| f32 add_+zero_ | box | us |\n|---|---|---|")
for w, h, row in [(1, 1 << 24, 3), (3, 1 << 22, 4), (1, 1 << 24, 2), (1, 1 << 24, 4)]:
    n = (h - 1) * row + w
    fa, fb = rand(n, torch.float32), rand(n, torch.float32)
    va, vb = fa.as_strided((h, w), (row, 1)), fb.as_strided((h, w), (row, 1))
    def rev():
        va.add_(vb); vb.zero_()
    print(f"| f32 | {w} x {h}, pitch {row * 4} B | {time_us(rev, 16 * w * h):.1f} |")
    del fa, fb, va, vb
