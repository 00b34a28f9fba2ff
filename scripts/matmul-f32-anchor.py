#!/usr/bin/env python3
"""cuBLAS's f32 GEMM through PyTorch, exact and with TF32 allowed, at the sizes of rayo-bench's
gpu/matmul_f32, gpu/matmul_tf32 (b stored [k, n]) and gpu/matmul_tf32_nt (b stored [n, k]) rows.
Run it in the same device call as rayo-bench:  python3 scripts/matmul-f32-anchor.py
"""
import torch


def seconds_per_call(fn, iters=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters / 1e3


def main():
    print(f"# torch {torch.__version__} on {torch.cuda.get_device_name()}")
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        for n in (1024, 4096, 8192):
            a = torch.randn(n, n, device="cuda")
            b = torch.randn(n, n, device="cuda")
            b_rows = b.t().contiguous().t()  # the same matrix stored [n, k]
            for layout, rhs in (("b [k, n]", b), ("b [n, k]", b_rows)):
                s = seconds_per_call(lambda: a @ rhs)
                print(f"f32 matmul tf32={tf32} n={n} {layout}: {2 * n**3 / s / 1e12:.1f} TFLOP/s")


if __name__ == "__main__":
    main()
