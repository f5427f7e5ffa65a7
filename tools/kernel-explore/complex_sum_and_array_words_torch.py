"""PyTorch on complex_sum_and_array_words.cu's sum shapes, timed as tools/torch-compare/regions.py times them
(events around k back-to-back calls, 3 warm-ups, median of 21): `x.sum()` on the packed runs and
strided views. Run beside it on the same machine: python3 complex_sum_and_array_words_torch.py
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
DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64,
      "c32": torch.complex64, "c64": torch.complex128}
print("| dtype | box (w x h, pitch el) | sum() us |\n|---|---|---|")
for dt, w, h, row in [("c32", 1 << 24, 1, 1 << 24), ("c32", 1 << 26, 1, 1 << 26), ("c32", 8191, 8192, 8197), ("c32", 3, 1 << 22, 4),
                      ("c64", 1 << 24, 1, 1 << 24), ("c64", 1 << 26, 1, 1 << 26), ("c64", 8191, 8192, 8197), ("c64", 3, 1 << 22, 4),
                      ("f32", 1 << 26, 1, 1 << 26), ("f64", 1 << 24, 1, 1 << 24),
                      ("bf16", 1, 1 << 24, 3), ("f16", 1, 1 << 24, 3), ("bf16", 3, 1 << 22, 4), ("f16", 3, 1 << 22, 4),
                      ("bf16", 8, 1 << 21, 9)]:
    t = DT[dt]
    n = (h - 1) * row + w
    flat = (torch.rand(n, device=dev, dtype=torch.float64) / 64 + 1e-3).to(t)
    v = flat.as_strided((h, w), (row, 1))
    size = flat.element_size()
    print(f"| {dt} | {w} x {h}, {row} | {time_us(lambda: v.sum(), w * h * size):.1f} |")
    del flat, v
