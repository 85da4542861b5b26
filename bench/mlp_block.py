#!/usr/bin/env python3
"""A gated MLP block (SwiGLU) of one transformer layer, in FP8 and in BF16, on one GPU.

    FP8:  x -> quantize_fp8 (1x128) -> up-and-gate fp8_gemm with SwiGLU fused (bf16 out)
            -> quantize_fp8 (1x128) -> down fp8_gemm                     -> y (bf16)
    BF16: x -> up-and-gate gemm with SwiGLU fused -> down gemm            -> y (bf16)
    BF16, FP8 output (16-bit weights, the up GEMM writes e4m3 and its 1x128 scales for an FP8
    down GEMM, no kernel between them) is timed too.

The up-and-gate weight is the gate and up projections interleaved (autogemm.interleave_gate_up).
Why the FP8 block quantises between its GEMMs: a gated tile writes half its columns, so whole
128-column scale groups need 256-column tiles, which FP8 inputs cannot hold in registers (the
planner refuses it by name).

Each variant's y is compared with the BF16 block computed in float64 (diff = 1 - 2 sum(xy) /
sum(x^2 + y^2)); times are CUDA-event medians with L2 flushed before each run.

    python3 bench/mlp_block.py [--m 64,4096] [--hidden 8192] [--intermediate 28672]
                               [--iters 20] [--json FILE]

Defaults: Llama-3-70B's MLP (hidden 8192, intermediate 28672).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys

import autogemm
import torch


def calc_diff(x: torch.Tensor, y: torch.Tensor) -> float:
    x, y = x.double(), y.double()
    return float(1 - 2 * (x * y).sum() / (x * x + y * y).sum())


def timed(fn, iters: int, flush: torch.Tensor) -> float:
    """Median microseconds of fn() over `iters` runs, L2 flushed before each."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(iters):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def run(m: int, hidden: int, inter: int, iters: int, flush: torch.Tensor, weights) -> dict:
    gate, up, down = weights
    w13 = autogemm.interleave_gate_up(gate, up)                       # (2 I, H)
    q13, s13 = autogemm.quantize_fp8(w13, (128, 128))
    q2, s2 = autogemm.quantize_fp8(down, (128, 128))
    x = torch.randn(m, hidden, device="cuda", dtype=torch.bfloat16)

    def bf16_block():
        h = autogemm.gemm(x, w13, activation="silu", gated=True)
        return autogemm.gemm(h, down)

    def bf16_fp8_out_block():
        h, sh = autogemm.gemm(x, w13, activation="silu", gated=True, out_dtype="fp8")
        return autogemm.fp8_gemm(h, sh, q2, s2)

    def fp8_block():
        qx, sx = autogemm.quantize_fp8(x, (1, 128))
        h = autogemm.fp8_gemm(qx, sx, q13, s13, activation="silu", gated=True)
        qh, sh = autogemm.quantize_fp8(h, (1, 128))
        return autogemm.fp8_gemm(qh, sh, q2, s2)

    # The BF16 block in float64, the reference every variant is held to.
    xd = x.double()
    hd = torch.nn.functional.silu(xd @ gate.double().T) * (xd @ up.double().T)
    want = hd @ down.double().T
    del xd, hd
    row = {"m": m, "hidden": hidden, "intermediate": inter}
    for name, block in (("bf16", bf16_block), ("bf16_fp8_out", bf16_fp8_out_block),
                        ("fp8", fp8_block)):
        y = block()
        torch.cuda.synchronize()
        row[f"{name}_diff"] = calc_diff(y, want)
        row[f"{name}_us"] = timed(block, iters, flush)
    del want
    # The FP8 block's steps alone.
    qx, sx = autogemm.quantize_fp8(x, (1, 128))
    h = autogemm.fp8_gemm(qx, sx, q13, s13, activation="silu", gated=True)
    qh, sh = autogemm.quantize_fp8(h, (1, 128))
    row["fp8_steps_us"] = {
        "quantize x": timed(lambda: autogemm.quantize_fp8(x, (1, 128)), iters, flush),
        "up+gate swiglu": timed(lambda: autogemm.fp8_gemm(qx, sx, q13, s13, activation="silu",
                                                          gated=True), iters, flush),
        "quantize h": timed(lambda: autogemm.quantize_fp8(h, (1, 128)), iters, flush),
        "down": timed(lambda: autogemm.fp8_gemm(qh, sh, q2, s2), iters, flush),
    }
    row["fp8_speedup"] = row["bf16_us"] / row["fp8_us"]
    row["bf16_fp8_out_speedup"] = row["bf16_us"] / row["bf16_fp8_out_us"]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", default="64,4096", help="tokens, comma-separated")
    parser.add_argument("--hidden", type=int, default=8192)
    parser.add_argument("--intermediate", type=int, default=28672)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("mlp_block: no CUDA device", file=sys.stderr)
        return 2
    torch.manual_seed(2026)
    h, i = args.hidden, args.intermediate
    # Scaled so the activations stay near 1 (SiLU bends there).
    weights = (torch.randn(i, h, device="cuda", dtype=torch.bfloat16) / h ** 0.5,
               torch.randn(i, h, device="cuda", dtype=torch.bfloat16) / h ** 0.5,
               torch.randn(h, i, device="cuda", dtype=torch.bfloat16) / i ** 0.5)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows = [run(int(m), h, i, args.iters, flush, weights) for m in args.m.split(",")]
    print(f"{torch.cuda.get_device_name()}, hidden {h}, intermediate {i}, SwiGLU")
    print(f"{'M':>6} {'bf16 us':>10} {'fp8 us':>10} {'fp8 x':>7} {'bf16+fp8out us':>15} {'x':>6}"
          f" {'diff bf16':>10} {'diff fp8':>10} {'diff fp8out':>11}")
    for r in rows:
        print(f"{r['m']:>6} {r['bf16_us']:>10.1f} {r['fp8_us']:>10.1f} {r['fp8_speedup']:>7.2f}"
              f" {r['bf16_fp8_out_us']:>15.1f} {r['bf16_fp8_out_speedup']:>6.2f}"
              f" {r['bf16_diff']:>10.2e} {r['fp8_diff']:>10.2e} {r['bf16_fp8_out_diff']:>11.2e}")
        print("       fp8 steps: " + ", ".join(f"{k} {v:.1f} us" for k, v in r["fp8_steps_us"].items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
