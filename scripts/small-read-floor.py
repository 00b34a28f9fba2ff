#!/usr/bin/env python3
"""What PyTorch (cuBLAS and its own kernels) gets from the GPU's memory at the byte counts of
rayo's quantized GEMVs, with the buffers rotated out of L2 as rayo-bench's cold GEMVs are.

For each size: a copy of the bytes (read + written), a copy of half of them (as many bytes moved
as reading them once), a sum over them, and cuBLAS's f16 GEMV whose weights take those bytes (4096
rows), each launched eagerly and replayed from a CUDA graph (no host launch cost), in µs a call
and as a share of the 1 GiB copy's rate measured first. Run it in the same device call as
rayo-bench:  python3 scripts/small-read-floor.py
"""
import math

import torch

ROTATION_BYTES = 512 << 20
SIZES = {"q4_k 4096x4096": 9437184, "q6_k 4096x4096": 13762560,
         "q4_k 4096x14336": 33030144, "q6_k 4096x14336": 48168960}


def per_call_us(run, calls, rounds=5):
    run()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = math.inf
    for _ in range(rounds):
        start.record()
        run()
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) * 1e3 / calls)
    return best


def eager_and_graph(op, count):
    """µs a call for `count` calls op(0..count-1), launched eagerly and from a captured graph."""
    def eager():
        for i in range(count):
            op(i)
    eager_us = per_call_us(eager, count)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        eager()  # warm-up on the side stream, as graph capture asks
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        eager()
    return eager_us, per_call_us(graph.replay, count)


def main():
    print(f"# torch {torch.__version__} on {torch.cuda.get_device_name()}")
    x = torch.randn(1 << 28, device="cuda")
    y = torch.empty_like(x)
    copy_us = per_call_us(lambda: [y.copy_(x) for _ in range(20)], 20)
    copy_rate = 2 * x.numel() * 4 / (copy_us * 1e-6)
    print(f"copy 1 GiB: {copy_rate / 1e12:.2f} TB/s (bytes read + written)")
    del x, y
    for name, nbytes in SIZES.items():
        count = ROTATION_BYTES // nbytes + 1
        k = nbytes // (2 * 4096)
        bufs = [torch.randn(4096, k, device="cuda", dtype=torch.float16) for _ in range(count)]
        halves = [b[:2048] for b in bufs]
        v = torch.randn(k, device="cuda", dtype=torch.float16)
        out = torch.empty(4096, device="cuda", dtype=torch.float16)
        total = torch.empty((), device="cuda")
        cases = {
            "copy": (lambda i: bufs[(i + count // 2) % count].copy_(bufs[i]), 2 * nbytes),
            # Half the bytes each way: the traffic of a kernel that reads the bytes once.
            "copy of half": (lambda i: halves[(i + count // 2) % count].copy_(halves[i]), nbytes),
            "sum": (lambda i: torch.sum(bufs[i].view(torch.float32), dim=(0, 1), out=total), nbytes),
            "f16 gemv": (lambda i: torch.mv(bufs[i], v, out=out), nbytes),
        }
        for case, (op, moved) in cases.items():
            eager_us, graph_us = eager_and_graph(op, count)
            shares = " / ".join(f"{moved / (us * 1e-6) / copy_rate * 100:.0f}%" for us in (eager_us, graph_us))
            print(f"{case} {nbytes} B ({name}), cold: eager {eager_us:.2f} us, graph {graph_us:.2f} us"
                  f" = {shares} of the 1 GiB copy's rate")
        del bufs, halves


if __name__ == "__main__":
    main()
