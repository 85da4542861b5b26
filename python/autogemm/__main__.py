"""python -m autogemm {bench,plan,profile}: the package's own small command.

  python -m autogemm bench --m 64 --n 2112 --k 7168 [--framework torch|cupy] [--dtype bf16]
  python -m autogemm bench --suite bench/suites/gemm-public.csv
  python -m autogemm plan --m 4096 --n 7168 --k 16384 [--dtype fp8] [--device h200]
  python -m autogemm profile [--device h200]

`bench` times autogemm.gemm() against the framework's own matmul (torch.matmul, which is
cuBLAS, or cupy.matmul) on the same inputs, each call timed with CUDA events after an L2 flush (as the C++
`autogemm bench`, which compares with cuBLASLt itself in the same process),
and checks each result against the framework's. CuPy has no bfloat16: use --dtype fp16.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from typing import Any, Callable, List, Sequence, Tuple

import autogemm

# Written before each timed call: more than twice the L2 of any Hopper GPU (50-60 MB), so the
# inputs come from HBM as in the C++ bench, and about 80 us of GPU work during which the host
# enqueues the timed call: the events then time the GPU's work, not Python's host cost.
_FLUSH_BYTES = 256 << 20


def _shapes(args: argparse.Namespace) -> List[Tuple[int, int, int]]:
    if args.suite:
        with open(args.suite, newline="") as f:
            rows = [line for line in f if not line.lstrip().startswith("#")]
        return [(int(r["m"]), int(r["n"]), int(r["k"])) for r in csv.DictReader(rows)]
    if args.m is None or args.n is None or args.k is None:
        raise SystemExit("autogemm bench: give --m, --n and --k, or --suite FILE")
    return [(args.m, args.n, args.k)]


class _Torch:
    name = "torch"

    def __init__(self, dtype: str) -> None:
        import torch  # type: ignore[import-not-found, unused-ignore]
        if not torch.cuda.is_available():
            raise SystemExit("autogemm bench: torch sees no CUDA device")
        self.torch = torch
        self.dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]

    def randn(self, rows: int, cols: int) -> Any:
        return self.torch.randn(rows, cols, device="cuda", dtype=self.dtype)

    def empty(self, rows: int, cols: int) -> Any:
        return self.torch.empty(rows, cols, device="cuda", dtype=self.dtype)

    def matmul(self, x: Any, y: Any) -> Any:
        return self.torch.matmul(x, y)

    def time_us(self, fn: Callable[[], Any], iters: int) -> float:
        torch = self.torch
        flush = torch.empty(_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
        times = []
        for _ in range(iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            flush.zero_()   # L2 flushed; the GPU is busy meanwhile, so no host time is timed
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3)
        return float(statistics.median(times))

    def max_rel_error(self, got: Any, want: Any) -> float:
        got, want = got.float(), want.float()
        return float((got - want).abs().max() / want.abs().max().clamp_min(1e-30))


class _CuPy:
    name = "cupy"

    def __init__(self, dtype: str) -> None:
        import cupy  # type: ignore[import-not-found, unused-ignore]
        if dtype != "fp16":
            raise SystemExit("autogemm bench: CuPy has no bfloat16 arrays; use --dtype fp16")
        self.cupy = cupy
        self.dtype = cupy.float16

    def randn(self, rows: int, cols: int) -> Any:
        return self.cupy.random.standard_normal((rows, cols), dtype=self.cupy.float32).astype(self.dtype)

    def empty(self, rows: int, cols: int) -> Any:
        return self.cupy.empty((rows, cols), dtype=self.dtype)

    def matmul(self, x: Any, y: Any) -> Any:
        return self.cupy.matmul(x, y)

    def time_us(self, fn: Callable[[], Any], iters: int) -> float:
        cupy = self.cupy
        flush = cupy.empty(_FLUSH_BYTES, dtype=cupy.uint8)
        times = []
        for _ in range(iters):
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            flush.fill(0)   # as _Torch.time_us
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, end) * 1e3)
        return float(statistics.median(times))

    def max_rel_error(self, got: Any, want: Any) -> float:
        got, want = got.astype(self.cupy.float32), want.astype(self.cupy.float32)
        return float(abs(got - want).max() / max(float(abs(want).max()), 1e-30))


def bench(args: argparse.Namespace) -> int:
    try:
        fw = _Torch(args.dtype) if args.framework == "torch" else _CuPy(args.dtype)
    except ImportError as e:
        raise SystemExit(f"autogemm bench: needs {args.framework} for its arrays ({e}); "
                         f"the other choice is --framework "
                         f"{'cupy' if args.framework == 'torch' else 'torch'}") from None
    a_t, b_t = args.layout[0] == "t", args.layout[1] == "t"
    print(f"autogemm {autogemm.__version__} vs {fw.name}.matmul, {args.dtype}, layout "
          f"{args.layout}, median of {args.iters} calls each (CUDA events, L2 flushed)")
    print(f"{'m':>6} {'n':>6} {'k':>6} {'ours_us':>9} {'TFLOP/s':>8} {fw.name + '_us':>9} "
          f"{'TFLOP/s':>8} {'ratio':>6} {'max_rel_err':>11}  config")
    failed = 0
    for m, n, k in _shapes(args):
        a = fw.randn(k, m) if a_t else fw.randn(m, k)           # as stored
        b = fw.randn(n, k) if b_t else fw.randn(k, n)
        op_a = a.T if a_t else a
        op_b = b.T if b_t else b
        out = fw.empty(m, n)
        _, report = autogemm.gemm(a, b, out=out, layout=args.layout, config=args.config,
                                  autotune=args.autotune, return_report=True)
        want = fw.matmul(op_a, op_b)
        error = fw.max_rel_error(out, want)
        ours = fw.time_us(lambda: autogemm.gemm(a, b, out=out, layout=args.layout,
                                                config=args.config), args.iters)
        theirs = fw.time_us(lambda: fw.matmul(op_a, op_b), args.iters)
        flops = 2.0 * m * n * k
        print(f"{m:>6} {n:>6} {k:>6} {ours:>9.1f} {flops / ours / 1e6:>8.1f} {theirs:>9.1f} "
              f"{flops / theirs / 1e6:>8.1f} {theirs / ours:>6.3f} {error:>11.2e}  "
              f"{report.config}{' (cuBLASLt)' if report.used_vendor else ''}")
        if error > 2e-2:
            failed += 1
    if failed:
        print(f"{failed} shape(s) differ from {fw.name}.matmul by more than 2e-2 (relative)")
    return 1 if failed else 0


def plan(args: argparse.Namespace) -> int:
    p = autogemm.plan(args.m, args.n, args.k, dtype=args.dtype, device=args.device,
                      layout=args.layout)
    print(p)
    if args.top:
        print(f"\ncandidates ({min(args.top, len(p.candidates))} of {len(p.candidates)})")
        for c in p.candidates[:args.top]:
            print(f"  {c.config:<38} {c.time_us:9.2f} us {c.tflops:8.1f} TFLOP/s")
    return 0


def profile(args: argparse.Namespace) -> int:
    print(json.dumps(autogemm.profile(args.device), indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autogemm", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bench", help="time autogemm.gemm against the framework's matmul")
    b.add_argument("--m", type=int)
    b.add_argument("--n", type=int)
    b.add_argument("--k", type=int)
    b.add_argument("--suite", help="CSV with m,n,k columns (# comments), e.g. the public suite")
    b.add_argument("--dtype", choices=("bf16", "fp16"), default="bf16")
    b.add_argument("--layout", choices=("nt", "nn", "tn", "tt"), default="nt")
    b.add_argument("--framework", choices=("torch", "cupy"), default="torch")
    b.add_argument("--iters", type=int, default=50)
    b.add_argument("--config", help="force a configuration (as `plan` prints it)")
    b.add_argument("--autotune", type=int, help="autotune this many candidates first")
    b.set_defaults(run=bench)
    p = sub.add_parser("plan", help="the planner's choice for one problem")
    p.add_argument("--m", type=int, required=True)
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--k", type=int, required=True)
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--layout", default="nt")
    p.add_argument("--device", help="GPU ordinal or preset (default: GPU 0, else h100-sxm)")
    p.add_argument("--top", type=int, default=0, help="also list the N best candidates")
    p.set_defaults(run=plan)
    r = sub.add_parser("profile", help="this machine (or a preset) as JSON")
    r.add_argument("--device", help="one GPU ordinal or preset")
    r.set_defaults(run=profile)
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except autogemm.Error as e:
        print(f"autogemm: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
