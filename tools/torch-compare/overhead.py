"""PyTorch's host cost per call at small n, beside `bench-overhead`.

    python3 tools/torch-compare/overhead.py

Same method as the bench: the host's clock over 4000 calls after 200 warm-up calls, the stream
synchronised at the end, per call; the median of 5 repetitions. f32 on the GPU.
"""
import time

import torch

CALLS, WARM, REPS = 4000, 200, 5


def per_call(f):
    t = []
    for _ in range(REPS):
        for _ in range(WARM):
            f()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(CALLS):
            f()
        torch.cuda.synchronize()
        t.append((time.perf_counter() - t0) * 1e6 / CALLS)
    t.sort()
    return t[REPS // 2]


def main():
    dev = torch.device("cuda")
    print(f"# PyTorch {torch.__version__}, host µs per call, {CALLS} calls after {WARM}, median of {REPS}")
    print("\n| call | n | PyTorch µs |")
    print("|---|---|---|")
    for n in (3, 256, 4096, 65536):
        a = torch.randn(n, device=dev)
        b = torch.randn(n, device=dev)
        print(f"| `a.add_(b)` | {n} | {per_call(lambda: a.add_(b)):.2f} |")
        print(f"| `b.zero_()` | {n} | {per_call(lambda: b.zero_()):.2f} |")
        print(f"| `a.copy_(b)` | {n} | {per_call(lambda: a.copy_(b)):.2f} |")
    x = torch.tensor([1.0, 2.0, 3.0])
    print(f"| `x.to('cuda').cpu()` | 3 | {per_call(lambda: x.to(dev).cpu()):.2f} |")

    def seed():
        xr = x.clone().requires_grad_(True)
        y = xr.to(dev).cpu()
        (y * y).sum().backward()

    print(f"| seed: `x.to('cuda').cpu()`, `(y*y).sum().backward()` | 3 | {per_call(seed):.2f} |")


if __name__ == "__main__":
    main()
