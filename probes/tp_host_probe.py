#!/usr/bin/env python3
# Where a tensor-parallel call's host time goes, and what it costs the GPU (run under torchrun,
# one process a GPU):
#   host split    the Python key and lookup, then _TpGemm.run (agreement + enqueue), median us
#   synchronised  barrier + synchronize before each call, as bench/tp_torchrun.py times it
#   back to back  N calls enqueued without a host wait between them, per call (steady state)
# for ours and for PyTorch's NCCL collective + torch.matmul on the same shards.
#   NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 torchrun --standalone \
#       --nproc_per_node 2 probes/tp_host_probe.py [--shape 8192x28672x8192] [--iters 20]
# With AUTOGEMM_TP_TRACE=1 every call's host marks and stream timelines go to stderr.
import argparse
import os
import statistics
import time

os.environ["NCCL_NVLS_ENABLE"] = "0"
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import autogemm.distributed as agd  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shape", default="8192x28672x8192")
    p.add_argument("--iters", type=int, default=20)
    args = p.parse_args()
    m, n, k = (int(v) for v in args.shape.split("x"))
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", dist.get_rank())))
    g, r, dev = dist.get_world_size(), dist.get_rank(), torch.device("cuda")
    tp = agd.TensorParallel()
    torch.manual_seed(1)
    bf = torch.bfloat16
    rows_a = torch.randn(m // g, k, device=dev, dtype=bf)
    cols_w = torch.randn(n // g, k, device=dev, dtype=bf)
    ks_a = torch.randn(m, k // g, device=dev, dtype=bf)
    ks_w = torch.randn(n, k // g, device=dev, dtype=bf)
    gathered = torch.empty(m, k, device=dev, dtype=bf)
    scattered = torch.empty(m // g, n, device=dev, dtype=bf)

    def ours(pattern):
        if pattern == "all_gather":
            out = torch.empty(m, n // g, device=dev, dtype=bf)
            return lambda: tp.all_gather_gemm(rows_a, cols_w, out=out)
        out = torch.empty((m // g, n) if pattern == "reduce_scatter" else (m, n), device=dev,
                          dtype=bf)
        f = tp.gemm_reduce_scatter if pattern == "reduce_scatter" else tp.gemm_all_reduce
        return lambda: f(ks_a, ks_w, out=out)

    def theirs(pattern):
        if pattern == "all_gather":
            def f():
                dist.all_gather_into_tensor(gathered, rows_a)
                return gathered @ cols_w.t()
        elif pattern == "reduce_scatter":
            def f():
                dist.reduce_scatter_tensor(scattered, ks_a @ ks_w.t())
        else:
            def f():
                part = ks_a @ ks_w.t()
                dist.all_reduce(part)
        return f

    def worst(v):
        t = torch.tensor([v], device=dev, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.item()

    def synchronised(fn):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times, host = [], []
        for _ in range(args.iters):
            dist.barrier()
            torch.cuda.synchronize()
            e0.record()
            t0 = time.perf_counter()
            fn()
            host.append((time.perf_counter() - t0) * 1e6)
            e1.record()
            torch.cuda.synchronize()
            times.append(e0.elapsed_time(e1) * 1e3)
        return worst(statistics.median(times)), worst(statistics.median(host))

    def back_to_back(fn):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        dist.barrier()
        torch.cuda.synchronize()
        e0.record()
        for _ in range(args.iters):
            fn()
        e1.record()
        torch.cuda.synchronize()
        return worst(e0.elapsed_time(e1) * 1e3 / args.iters)

    def split(pattern):   # the Python part and _TpGemm.run, timed apart
        fn = ours(pattern)
        fn()
        torch.cuda.synchronize()
        entry = next(e for key, e in tp._entries.items() if key[0] == pattern)
        orig = entry.tp
        runs = []

        class Timed:
            def __getattr__(self, name):
                return getattr(orig, name)

            def run(self, *a):
                t0 = time.perf_counter()
                ok = orig.run(*a)
                runs.append((time.perf_counter() - t0) * 1e6)
                return ok
        entry.tp = Timed()
        whole = []
        for _ in range(args.iters):
            dist.barrier()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            whole.append((time.perf_counter() - t0) * 1e6)
            torch.cuda.synchronize()
        entry.tp = orig
        return worst(statistics.median(whole)), worst(statistics.median(runs))

    if r == 0:
        print(f"# {g} ranks, {m}x{n}x{k} bf16; us, the slowest rank's median")
        print(f"{'pattern':15} {'who':7} {'sync':>8} {'host':>7} {'b2b':>8} {'call':>7} {'run':>7}")
    for pattern in ("all_gather", "reduce_scatter", "all_reduce"):
        for who, make in (("ours", ours), ("torch", theirs)):
            fn = make(pattern)
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            sync, host = synchronised(fn)
            b2b = back_to_back(fn)
            call, run = split(pattern) if who == "ours" else (float("nan"), float("nan"))
            if r == 0:
                print(f"{pattern:15} {who:7} {sync:8.1f} {host:7.1f} {b2b:8.1f} {call:7.1f} "
                      f"{run:7.1f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
