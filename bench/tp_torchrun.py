#!/usr/bin/env python3
# Tensor-parallel GEMMs on one node: autogemm.distributed against PyTorch's (an NCCL collective
# and torch.matmul; torch.ops.symm_mem's fused ops where they run) and against one GPU, in one
# torchrun job. Per shape (the whole GEMM D = A @ W.T, A: M x K, W: N x K):
#   one GPU    autogemm.gemm(A, W) of the whole problem (torch.matmul for reference)
#   all-gather A sharded on M, W on N: D [M, N/G] per rank
#   reduce-scatter / all-reduce: A and W sharded on K: D [M/G, N] / [M, N] per rank
# ours with the planner's transport and with transport="nccl", each rank's block checked against
# the one-GPU result. CUDA events; warm-up, then barrier + synchronize before every timed
# iteration; the median per rank, the maximum over ranks. Exit status 1 when a check fails.
#
# Run (NVLink multicast must stay off):
#   NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 torchrun --standalone --nproc_per_node 4 \
#       bench/tp_torchrun.py [--shapes 16384x16384x16384,8192x28672x8192,8192x8192x28672] \
#       [--dtype bf16|fp8] [--patterns all_gather,reduce_scatter,all_reduce] (or all-reduce, ar, ...)
#       [--transports default,nccl] [--iters 20] [--json OUT] [--trace]
# --trace: no timing; each row's check call and --iters calls back to back, traced as one
# timeline per rank (AUTOGEMM_TP_TRACE, docs/env-vars.md) on stderr.
# "b2b": the iterations enqueued back to back, no host wait between them (a training or serving
# step's steady state), per call; PyTorch's is its best synchronised way timed so.
# "host us": the median time our call takes to return on the host (what a synchronised timing
# waits before the GPU starts); "b2b host": the host's time a call while enqueueing back to back
# (near "b2b ours" when the host waits for the GPU between calls).
import argparse
import json
import os
import statistics
import sys
import time

os.environ["NCCL_NVLS_ENABLE"] = "0"            # before any communicator exists
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import autogemm  # noqa: E402
import autogemm.distributed as agd  # noqa: E402

PATTERNS = ("all_gather", "reduce_scatter", "all_reduce")
# The CLI's spellings too (`autogemm bench --tp all-reduce`, or ag / rs / ar).
SHORT = {"ag": "all_gather", "rs": "reduce_scatter", "ar": "all_reduce"}


def pattern_name(text):
    v = text.strip().lower().replace("-", "_")
    return SHORT.get(v, v)


def parse_args():
    p = argparse.ArgumentParser(description="Tensor-parallel GEMMs: autogemm.distributed "
                                "against PyTorch and one GPU (run under torchrun)")
    p.add_argument("--shapes", default="16384x16384x16384,8192x28672x8192,8192x8192x28672",
                   help="comma-separated MxNxK of the whole GEMM")
    p.add_argument("--dtype", choices=("bf16", "fp8"), default="bf16")
    p.add_argument("--patterns", default=",".join(PATTERNS),
                   help="comma-separated, of " + ", ".join(PATTERNS))
    p.add_argument("--transports", default="default,nccl",
                   help="comma-separated: default (the planner's), copy_engine, nccl")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--json", help="write the table's rows here (rank 0)")
    p.add_argument("--trace", action="store_true",
                   help="no timing: each row's check call and --iters calls back to back traced "
                   "as one timeline per rank on stderr (AUTOGEMM_TP_TRACE=iters+1)")
    args = p.parse_args()
    args.shapes = [tuple(int(v) for v in s.lower().split("x")) for s in args.shapes.split(",")]
    given = [v for v in args.patterns.split(",") if v.strip()]
    args.patterns = [pattern_name(v) for v in given]
    args.transports = [None if v.strip() == "default" else v.strip().replace("-", "_")
                       for v in args.transports.split(",") if v.strip()]
    for text, v in zip(given, args.patterns):
        if v not in PATTERNS:
            p.error(f"--patterns: {text.strip()!r} is not one of {', '.join(PATTERNS)} "
                    "(or all-gather, reduce-scatter, all-reduce, ag, rs, ar)")
    return args


def diff(x, y):
    """1 - 2 sum(xy) / sum(x^2 + y^2) in float64: 0 for equal tensors."""
    x, y = x.double(), y.double()
    den = (x * x + y * y).sum().item()
    return 0.0 if den == 0 else 1.0 - 2.0 * (x * y).sum().item() / den


class Bench:
    def __init__(self, args):
        self.args = args
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.dev = torch.device("cuda", torch.cuda.current_device())
        self.group = dist.group.WORLD
        self.symm = None
        try:   # PyTorch's async-TP ops need symmetric memory for the group
            import torch.distributed._symmetric_memory as symm
            symm.enable_symm_mem_for_group(self.group.group_name)
            self.symm = symm
        except Exception as e:  # noqa: BLE001 - whatever this torch build lacks
            self.say(f"# torch symm_mem unavailable: {e}")
        self.tp = agd.TensorParallel(self.group)
        self.failures = []

    def say(self, text):
        if self.rank == 0:
            print(text, flush=True)

    def time(self, fn):
        """Median microseconds of fn over the iterations, the slowest rank's; None if it fails
        (on every rank: the failure is agreed through a MAX reduction)."""
        failed = torch.zeros(1, device=self.dev)
        try:
            for _ in range(self.args.warmup):
                fn()
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            failed += 1
            self.say(f"#   failed: {type(e).__name__}: {str(e)[:200]}")
        dist.all_reduce(failed, op=dist.ReduceOp.MAX)
        if failed.item():
            return None
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(self.args.iters):
            dist.barrier()
            torch.cuda.synchronize()
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) * 1000.0)
        t = torch.tensor([statistics.median(times)], device=self.dev, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.item()

    def back_to_back(self, fn):
        """Microseconds a call of fn when the iterations are enqueued back to back (no host
        wait between them: a training or serving step's steady state), the slowest rank's; and
        the host's microseconds a call meanwhile (near the GPU's: the host waits for the GPU)."""
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        dist.barrier()
        torch.cuda.synchronize()
        start.record()
        t0 = time.perf_counter()
        for _ in range(self.args.iters):
            fn()
        host = (time.perf_counter() - t0) * 1e6 / self.args.iters
        end.record()
        torch.cuda.synchronize()
        t = torch.tensor([start.elapsed_time(end) * 1000.0 / self.args.iters, host],
                         device=self.dev, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t[0].item(), t[1].item()

    def host_us(self, fn):
        """Median microseconds the host spends in fn (its enqueue, the agreement included),
        the slowest rank's: the latency a synchronised timing adds before the GPU starts."""
        times = []
        for _ in range(self.args.iters):
            dist.barrier()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e6)
            torch.cuda.synchronize()
        t = torch.tensor([statistics.median(times)], device=self.dev, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.item()

    def check(self, what, got, want, limit):
        d = diff(got, want)
        if not d < limit:   # NaN fails too
            self.failures.append(what)
            print(f"rank {self.rank}: FAILED {what}: diff {d:.3g} >= {limit:g}", flush=True)
        t = torch.tensor([d if d == d else 1.0], device=self.dev, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.item()

    def shape(self, m, n, k):
        g, r, fp8, bf = self.world, self.rank, self.args.dtype == "fp8", torch.bfloat16
        torch.manual_seed(1234)   # the same A and W on every rank
        A = torch.randn(m, k, device=self.dev, dtype=bf)
        W = torch.randn(n, k, device=self.dev, dtype=bf)
        rows, cols = slice(r * m // g, (r + 1) * m // g), slice(r * n // g, (r + 1) * n // g)
        ks = slice(r * k // g, (r + 1) * k // g)
        shards = {"all_gather": (A[rows].contiguous(), W[cols].contiguous()),
                  "reduce_scatter": (A[:, ks].contiguous(), W[:, ks].contiguous())}
        shards["all_reduce"] = shards["reduce_scatter"]
        one = torch.empty(m, n, device=self.dev, dtype=bf)
        if fp8:   # quantised per shard, as each rank would hold them
            q = {p: (autogemm.quantize_fp8(a, (1, 128)), autogemm.quantize_fp8(w, (128, 128)))
                 for p, (a, w) in shards.items()}
            aq, wq = autogemm.quantize_fp8(A, (1, 128)), autogemm.quantize_fp8(W, (128, 128))
            one_us = self.time(lambda: autogemm.fp8_gemm(aq[0], aq[1], wq[0], wq[1], out=one))
            want = (A.double() @ W.double().t())   # unquantised inputs, float64
            limit = 1e-3
        else:
            one_us = self.time(lambda: autogemm.gemm(A, W, out=one))
            want, limit = one, 1e-5
        mm_us = self.time(lambda: torch.matmul(A, W.t()))
        self.say(f"# {m}x{n}x{k} {self.args.dtype}: one GPU autogemm {fmt(one_us, '.1f')} us, "
                 f"torch.matmul (bf16) {fmt(mm_us, '.1f')} us")
        blocks = {"all_gather": lambda x: x[:, cols], "reduce_scatter": lambda x: x[rows],
                  "all_reduce": lambda x: x}
        rows_out = []
        for pattern in self.args.patterns:
            a, w = shards[pattern]
            if self.args.trace:
                self.trace(pattern, a, w, m, n, k, blocks[pattern](want), limit)
                continue
            torch_fns = self.torch_ways(pattern, a, w, m, n)
            torch_us = {name: self.time(fn) for name, fn in torch_fns.items()}
            best = min(((t, name) for name, t in torch_us.items() if t is not None),
                       default=(None, "none"))
            torch_b2b = None if best[0] is None else self.back_to_back(torch_fns[best[1]])[0]
            for transport in self.args.transports:
                kw = dict(transport=transport)
                if fp8:
                    (a8, sa), (w8, sw) = q[pattern]
                    args, kw = (a8, w8), dict(kw, scale_a=sa, scale_w=sw)
                else:
                    args = (a, w)
                call = {"all_gather": self.tp.all_gather_gemm,
                        "reduce_scatter": self.tp.gemm_reduce_scatter,
                        "all_reduce": self.tp.gemm_all_reduce}[pattern]
                name = f"{pattern} {transport or 'default'}"
                try:
                    info = self.tp.plan_info(pattern, *args, transport=transport)
                    out = call(*args, **kw)
                    torch.cuda.synchronize()
                    d = self.check(f"{name} {m}x{n}x{k}", out, blocks[pattern](want), limit)
                    us = self.time(lambda: call(*args, out=out, **kw))
                    if us is None:
                        self.failures.append(name)
                    host = (None if us is None else
                            self.host_us(lambda: call(*args, out=out, **kw)))
                    b2b, b2b_host = ((None, None) if us is None else
                                     self.back_to_back(lambda: call(*args, out=out, **kw)))
                except autogemm.Error as e:   # raised on every rank alike
                    self.say(f"#   {name}: {type(e).__name__}: {e}")
                    self.failures.append(name)
                    continue
                rows_out.append(dict(
                    pattern=pattern, transport=info["transport"], m=m, n=n, k=k,
                    dtype=self.args.dtype, world=g, ours_us=us, torch_us=best[0],
                    torch_best=best[1], torch_all=torch_us,
                    torch_over_ours=None if best[0] is None or not us else best[0] / us,
                    one_gpu_us=one_us, torch_matmul_us=mm_us, host_us=host,
                    ours_back_to_back_us=b2b, torch_back_to_back_us=torch_b2b,
                    ours_back_to_back_host_us=b2b_host,
                    torch_over_ours_back_to_back=None if not b2b or torch_b2b is None
                    else torch_b2b / b2b,
                    speedup=None if not us or one_us is None else one_us / us,
                    predicted_us=info["total_us"],
                    prediction_error_pct=None if not us else
                    100.0 * (us - info["total_us"]) / info["total_us"], diff=d))
        return rows_out

    def trace(self, pattern, a, w, m, n, k, want, limit):
        """The check call, then --iters calls back to back: one trace of iters + 1 calls, printed
        (it waits for them) when one more call begins."""
        call = {"all_gather": self.tp.all_gather_gemm,
                "reduce_scatter": self.tp.gemm_reduce_scatter,
                "all_reduce": self.tp.gemm_all_reduce}[pattern]
        for transport in self.args.transports:
            dist.barrier()
            out = call(a, w, transport=transport)
            torch.cuda.synchronize()
            self.check(f"{pattern} {transport or 'default'} {m}x{n}x{k}", out, want, limit)
            dist.barrier()
            for _ in range(self.args.iters):
                call(a, w, out=out, transport=transport)
            torch.cuda.synchronize()
            call(a, w, out=out, transport=transport)   # prints the trace before it runs
            torch.cuda.synchronize()

    def torch_ways(self, pattern, a, w, m, n):
        """PyTorch's ways on the bf16 shards (an FP8 run compares against these too): name ->
        a function that runs it."""
        g, dev, bf, name = self.world, self.dev, torch.bfloat16, self.group.group_name
        out = {}
        if pattern == "all_gather":
            gathered = torch.empty(m, a.shape[1], device=dev, dtype=bf)

            def unfused():
                dist.all_gather_into_tensor(gathered, a)
                return gathered @ w.t()
            out["nccl+matmul"] = unfused
            if self.symm is not None:
                out["symm_mem fused"] = lambda: torch.ops.symm_mem.fused_all_gather_matmul(
                    a, [w.t()], gather_dim=0, group_name=name)
        else:
            scattered = torch.empty(m // g, n, device=dev, dtype=bf)
            gathered = torch.empty(m, n, device=dev, dtype=bf)
            if pattern == "reduce_scatter":
                def unfused():
                    dist.reduce_scatter_tensor(scattered, a @ w.t())
                    return scattered

                def fused():
                    return torch.ops.symm_mem.fused_matmul_reduce_scatter(
                        a, w.t(), "sum", scatter_dim=0, group_name=name)
            else:
                def unfused():
                    p = a @ w.t()
                    dist.all_reduce(p)
                    return p

                def fused():
                    part = torch.ops.symm_mem.fused_matmul_reduce_scatter(
                        a, w.t(), "sum", scatter_dim=0, group_name=name)
                    dist.all_gather_into_tensor(gathered, part)
                    return gathered
            out["nccl+matmul"] = unfused
            if self.symm is not None:
                out["symm_mem fused"] = fused
        return out


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def main():
    args = parse_args()
    if args.trace:
        if args.dtype != "bf16":
            sys.exit("--trace: BF16 rows only")
        os.environ["AUTOGEMM_TP_TRACE"] = str(args.iters + 1)   # read at the first call
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", dist.get_rank())))
    bench = Bench(args)
    bench.say(f"# torch {torch.__version__}, autogemm {autogemm.__version__}, "
              f"{bench.world} x {torch.cuda.get_device_name()}, {args.dtype}, {bench.tp!r}")
    rows = []
    for m, n, k in args.shapes:
        rows += bench.shape(m, n, k)
        torch.cuda.empty_cache()   # the shape's tensors are gone: give their memory back
    bench.say(f"\n{'pattern':<15} {'transport':<11} {'shape':<19} {'ours us':>9} "
              f"{'torch us':>9} {'torch best':<15} {'torch/ours':>10} {'speedup':>8} "
              f"{'pred us':>9} {'pred err%':>9} {'host us':>8} {'b2b ours':>9} {'b2b host':>9} "
              f"{'b2b torch':>9} "
              f"{'torch/ours':>10} {'diff':>9}")
    for r in rows:
        shape = f"{r['m']}x{r['n']}x{r['k']}"
        bench.say(f"{r['pattern']:<15} {r['transport']:<11} {shape:<19} "
                  f"{fmt(r['ours_us'], '9.1f')} {fmt(r['torch_us'], '9.1f')} "
                  f"{r['torch_best']:<15} {fmt(r['torch_over_ours'], '10.2f')} "
                  f"{fmt(r['speedup'], '8.2f')} {r['predicted_us']:9.1f} "
                  f"{fmt(r['prediction_error_pct'], '+9.1f')} {fmt(r['host_us'], '8.1f')} "
                  f"{fmt(r['ours_back_to_back_us'], '9.1f')} "
                  f"{fmt(r['ours_back_to_back_host_us'], '9.1f')} "
                  f"{fmt(r['torch_back_to_back_us'], '9.1f')} "
                  f"{fmt(r['torch_over_ours_back_to_back'], '10.2f')} {r['diff']:9.2e}")
    failed = torch.tensor([len(bench.failures)], device=bench.dev)
    dist.all_reduce(failed, op=dist.ReduceOp.MAX)
    if args.json and bench.rank == 0:
        with open(args.json, "w") as f:
            json.dump({"world": bench.world, "dtype": args.dtype, "torch": torch.__version__,
                       "gpu": torch.cuda.get_device_name(), "rows": rows,
                       "failed_checks": int(failed.item())}, f, indent=1)
    bench.say("# all checks passed" if not failed.item() else "# CHECKS FAILED")
    dist.barrier()
    dist.destroy_process_group()
    return 1 if failed.item() else 0


if __name__ == "__main__":
    sys.exit(main())
