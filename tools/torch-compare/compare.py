"""PyTorch's own add_ / add_+zero_ / zero_ against its D2D copy, timed like benches/shadow_ops.rs.

    python3 tools/torch-compare/compare.py [--out table.csv] [--reps 21]

CUDA events around k back-to-back calls (k = 20 below 64 MiB moved per call, 4 below 1 GiB,
1 above), 3 warm-up calls, median of the repetitions, per call. GB/s counts bytes read + written:
copy 2n*size, add 3n*size, add+zero 4n*size, zero n*size. "add/D2D f32" is the bench's ratio:
add GB/s over the GB/s of an f32 copy of the same n; "add/D2D same" uses the same dtype's copy.
"""
import argparse, csv, torch

p = argparse.ArgumentParser()
p.add_argument("--out", help="also write the table as CSV to this file")
p.add_argument("--reps", type=int, default=21)
a = p.parse_args()
dev = torch.device("cuda")
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, device {torch.cuda.get_device_name(0)}")

def time_us(f, moved):
    k = 1 if moved >= 1 << 30 else 4 if moved >= 64 << 20 else 20
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

rows, d2d_f32 = [], {}
for name, dt in [("f32", torch.float32), ("bf16", torch.bfloat16), ("f16", torch.float16)]:
    for n in [1 << 24, 1 << 26, 1 << 28]:
        sz = torch.tensor([], dtype=dt).element_size()
        x = (torch.rand(n, device=dev) * 1e-3 + 1e-4).to(dt)
        y = (torch.rand(n, device=dev) * 1e-3 + 1e-4).to(dt)
        ops = [("D2D copy_", 2, lambda: y.copy_(x)), ("add_", 3, lambda: y.add_(x)),
               ("add_+zero_", 4, lambda: (y.add_(x), x.zero_())), ("zero_", 1, lambda: x.zero_())]
        res = {}
        for op, m, f in ops:
            us = time_us(f, m * n * sz)
            res[op] = (us, m * n * sz / us / 1e3)
        if name == "f32":
            d2d_f32[n] = res["D2D copy_"][1]
        for op, (us, bw) in res.items():
            r_f32 = f"{bw / d2d_f32[n]:.3f}" if op == "add_" else ""
            r_same = f"{bw / res['D2D copy_'][1]:.3f}" if op != "D2D copy_" else ""
            rows.append([name, n, op, f"{us:.1f}", f"{bw:.0f}", r_f32, r_same])
        del x, y
        torch.cuda.empty_cache()

hdr = ["dtype", "n", "op", "us/call", "GB/s", "add/D2D f32 (bench ratio)", "GB/s / D2D same dtype"]
print("\n| " + " | ".join(hdr) + " |\n|" + "---|" * len(hdr))
for r in rows:
    print("| " + " | ".join(str(c) for c in r) + " |")
if a.out:
    with open(a.out, "w", newline="") as fh:
        csv.writer(fh).writerows([hdr] + rows)
