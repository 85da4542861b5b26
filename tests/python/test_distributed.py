"""autogemm.distributed: the tensor-parallel planner on presets (no GPU, no torch), its
argument checks, and TensorParallel's checks that need torch but no GPU. The multi-rank test
at the end runs a few ranks under torchrun on a machine with 2+ GPUs (it skips elsewhere):
results against the one-GPU GEMM, and a wrong argument on one rank raising on every rank
instead of hanging."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import autogemm
import autogemm.distributed as agd
import pytest
from autogemm import _core

from conftest import ROOT, gpu_unavailable_reason, raises_invalid

BIG = (16384, 16384, 16384)


# --- the planner (presets) ---------------------------------------------------------------------


@pytest.mark.parametrize("pattern", agd.PATTERNS)
def test_plan_on_four_h200_beats_one_gpu(pattern):
    d = agd.plan(pattern, 4, *BIG, device="h200", link="nvlink")
    assert d["speedup"] > 1
    assert d["speedup"] == pytest.approx(d["single_gpu_us"] / d["total_us"])
    assert d["transport"] == "copy-engine"
    assert d["total_us"] >= d["compute_us"] > 0
    assert d["exposed_us"] == pytest.approx(d["total_us"] - d["compute_us"], abs=1e-6)
    # Each launch computes bands [band, band + bands): together every band of every step once.
    assert 1 <= d["bands"] <= 8 and sum(s[6] for s in d["steps"]) == 4 * d["bands"]
    assert d["pattern"] == pattern.replace("_", "-")
    assert (d["world"], d["m"], d["n"], d["k"]) == (4, *BIG)
    assert d["describe"].startswith(f"{d['pattern']} over 4 ranks: 16384x16384x16384 bf16")
    assert "predicted:" in d["describe"] and d["explanation"] in d["describe"]
    assert isinstance(d["hash"], int) and d["hash"] == agd.plan(pattern, 4, *BIG, device="h200",
                                                                link="nvlink")["hash"]
    assert len(d["steps"]) == d["launches"]
    shard = {"all_gather": ((4096, 16384), (4096, 16384), (16384, 4096)),
             "reduce_scatter": ((16384, 4096), (16384, 4096), (4096, 16384)),
             "all_reduce": ((16384, 4096), (16384, 4096), (16384, 16384))}[pattern]
    assert (d["a_shape"], d["b_shape"], d["d_shape"]) == shard


@pytest.mark.parametrize("pattern", ["ag", "rs", "ar", "all-gather", "REDUCE_SCATTER"])
def test_pattern_spellings(pattern):
    assert agd.plan(pattern, 2, 4096, 4096, 4096, device="h200")["world"] == 2


def test_without_peer_access_the_planner_chooses_nccl():
    d = agd.plan("reduce_scatter", 4, *BIG, device="h200", link="nvlink", peer_access=False)
    assert d["transport"] == "nccl"
    assert "no peer access" in d["link"]
    with raises_invalid("transport", "peer access"):
        agd.plan("reduce_scatter", 4, *BIG, device="h200", peer_access=False,
                 transport="copy_engine")


def test_forced_transport_and_bands():
    d = agd.plan("all_gather", 4, *BIG, device="h200", transport="nccl")
    assert d["transport"] == "nccl" and d["speedup"] > 0
    d = agd.plan("all_gather", 4, *BIG, device="h200", bands=2)
    assert d["bands"] == 2 and d["launches"] == 8


def test_link_presets_and_default_link():
    nvlink = agd.plan("all_gather", 4, *BIG, device="h200", link="nvlink")
    default = agd.plan("all_gather", 4, *BIG, device="h200")
    assert default["link"] == nvlink["link"]   # an SXM part: NVLink
    pcie = agd.plan("all_gather", 4, *BIG, device="h200", link="pcie")
    assert "pcie" in pcie["link"].lower()
    assert pcie["total_us"] >= nvlink["total_us"]


def test_fp8_and_output_types():
    d = agd.plan("all_gather", 4, *BIG, "fp8", device="h200")
    assert d["dtype"] == "e4m3" and d["out_dtype"] == "bf16"
    assert "block scales" in d["describe"]
    assert agd.plan("all_gather", 4, *BIG, out_dtype="fp32", device="h200")["out_dtype"] == "fp32"
    assert agd.plan("rs", 4, *BIG, "float16", device="h200")["out_dtype"] == "fp16"
    with raises_invalid("k", "128"):   # each rank's K/world: whole 128-element scale groups
        agd.plan("reduce_scatter", 4, 4096, 4096, 4096 + 256, "fp8", device="h200")


def test_plan_without_device_warns_or_uses_gpu():
    if gpu_unavailable_reason() is None:
        assert agd.plan("ag", 2, 4096, 4096, 4096)["world"] == 2
    else:
        with pytest.warns(RuntimeWarning, match="h200"):
            d = agd.plan("ag", 2, 4096, 4096, 4096)
        assert d["device"] == "h200"


@pytest.mark.parametrize("bad, argument, rule", [
    ({"pattern": "all_to_all"}, "pattern", "all_gather"),
    ({"pattern": "gather"}, "pattern", "autogemm bench --tp gather"),
    ({"m": 16386}, "m", "multiple of 4"),
    ({"pattern": "all_gather", "n": 16386}, "n", "multiple of 4"),
    ({"pattern": "reduce_scatter", "k": 16388}, "k", "multiple of"),
    ({"m": 0}, "m", ">= 1"),
    ({"world": 0}, "world", ">= 1"),
    ({"dtype": "fp32"}, "dtype", "bf16"),
    ({"out_dtype": "e4m3"}, "out_dtype", "bf16"),
    ({"transport": "carrier_pigeon"}, "transport", "nccl"),
    ({"bands": 9}, "bands", "1..8"),
    ({"link": "token-ring"}, "link", "nvlink"),
])
def test_plan_errors_name_the_argument(bad, argument, rule):
    kwargs = {"pattern": "all_gather", "world": 4, "m": 16384, "n": 16384, "k": 16384,
              "device": "h200"}
    kwargs.update(bad)
    with raises_invalid(argument, rule):
        agd.plan(**kwargs)


def test_unknown_device_preset():
    with pytest.raises(autogemm.InvalidArgument) as info:
        agd.plan("all_gather", 4, *BIG, device="h9000")
    assert "h200" in info.value.rule   # lists the known presets


def test_core_functions():
    version = _core.nccl_version()
    assert version is None or version >= 20000
    if version is not None:
        uid = _core.nccl_unique_id()   # host only: no GPU needed
        assert isinstance(uid, bytes) and len(uid) == 128
    else:
        with pytest.raises(autogemm.Error):
            _core.nccl_unique_id()


def test_module_surface():
    assert agd.PATTERNS == ("all_gather", "reduce_scatter", "all_reduce")
    for name in agd.__all__:
        assert hasattr(agd, name), name
    for text in ("bootstrap", "collective", "exchanges a small record", "G - 1 roundings",
                 "FP32"):
        assert text in agd.TensorParallel.__doc__, text


# --- TensorParallel without a GPU ----------------------------------------------------------------


def test_tensor_parallel_needs_an_initialised_group():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        pytest.skip("torch.distributed is initialised in this process")
    with raises_invalid("group", "init_process_group"):
        agd.TensorParallel()


# --- several ranks (torchrun, 2+ GPUs) ---------------------------------------------------------

_WORKER = textwrap.dedent("""
    import os, sys, torch, torch.distributed as dist
    import autogemm, autogemm.distributed as agd
    dist.init_process_group("nccl")
    r, g = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(r)
    tp = agd.TensorParallel()
    torch.manual_seed(0)
    M, N, K = 512 * g, 384 * g, 256 * g
    A = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    W = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
    ref = autogemm.gemm(A, W).double()
    def diff(x, y):
        x, y = x.double(), y.double()
        return (1 - 2 * (x * y).sum() / (x * x + y * y).sum()).item()
    rows, cols, ks = slice(r * M // g, (r + 1) * M // g), slice(r * N // g, (r + 1) * N // g), \\
        slice(r * K // g, (r + 1) * K // g)
    for transport in (None, "nccl"):
        d, a_all = tp.all_gather_gemm(A[rows], W[cols], gather_output=True, transport=transport)
        assert diff(d, ref[:, cols]) < 1e-5 and torch.equal(a_all, A), transport
        d = tp.gemm_reduce_scatter(A[:, ks], W[:, ks], transport=transport)   # strided shards
        assert diff(d, ref[rows]) < 1e-5, transport
        d = tp.gemm_all_reduce(A[:, ks].contiguous(), W[:, ks].contiguous(), transport=transport)
        assert diff(d, ref) < 1e-5, transport
    # A wrong output on rank 1 only: every rank raises, none hangs.
    out = torch.empty(M, N // g + (r == 1), device="cuda", dtype=torch.bfloat16)
    try:
        tp.all_gather_gemm(A[rows], W[cols], out=out)
        sys.exit(f"rank {r}: no error")
    except autogemm.InvalidArgument as e:
        print(f"rank {r}: {e}", flush=True)
        assert e.argument == ("out" if r == 1 else "rank 1: out"), e
    # Odd shard shapes on the last rank (another problem, a new workspace for it alone).
    a = A[rows] if r != g - 1 else A[: M // g - 8]
    try:
        tp.all_gather_gemm(a, W[cols])
        sys.exit(f"rank {r}: no error")
    except autogemm.InvalidArgument as e:
        print(f"rank {r}: {e}", flush=True)
        assert e.argument.startswith(f"rank {g - 1}"), e
    d = tp.all_gather_gemm(A[rows], W[cols])   # still in step
    assert diff(d, ref[:, cols]) < 1e-5
    # Two patterns that both have workspaces, rank 1 calling the other one: the agreement board
    # (or NCCL) shows the plans differ, every rank raises, none hangs.
    ka, kw = A[:, ks].contiguous(), W[:, ks].contiguous()
    try:
        (tp.gemm_reduce_scatter if r == 1 else tp.gemm_all_reduce)(ka, kw)
        sys.exit(f"rank {r}: no error")
    except autogemm.InvalidArgument as e:
        print(f"rank {r}: {e}", flush=True)
        assert e.argument == "rank 1: shards", e
    # The same with plans agreed before whose first launch signals its bands: each rank starts
    # that launch before the agreement; after the refusal its band flags must be back to 0, or
    # the next call would send partials before they are computed.
    d = tp.gemm_all_reduce(ka, kw, bands=4)
    assert diff(d, ref) < 1e-5
    d = tp.gemm_reduce_scatter(ka, kw, bands=4)
    assert diff(d, ref[rows]) < 1e-5
    try:
        (tp.gemm_reduce_scatter if r == 1 else tp.gemm_all_reduce)(ka, kw, bands=4)
        sys.exit(f"rank {r}: no error")
    except autogemm.InvalidArgument as e:
        assert e.argument == "rank 1: shards", e
    for _ in range(3):
        d = tp.gemm_all_reduce(ka, kw, bands=4)
        assert diff(d, ref) < 1e-5
    # Forty calls back to back, no host wait between them, alternating two workspaces: each
    # call's agreement reuses a board the previous call may still be reading on another rank.
    outs = [tp.gemm_all_reduce(ka, kw) if i % 2 else tp.all_gather_gemm(A[rows], W[cols])
            for i in range(40)]
    torch.cuda.synchronize()
    for i, d in enumerate(outs):
        assert diff(d, ref if i % 2 else ref[:, cols]) < 1e-5, i
    torch.cuda.synchronize()
    dist.barrier()
    print(f"rank {r}: ok", flush=True)
    dist.destroy_process_group()
""")


def test_torchrun_ranks(tmp_path):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    reason = gpu_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 or more GPUs")
    worker = tmp_path / "worker.py"
    worker.write_text(_WORKER)
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1",
               PYTHONPATH=os.pathsep.join([str(pathlib.Path(autogemm.__file__).parents[1]),
                                           os.environ.get("PYTHONPATH", "")]))
    ranks = min(torch.cuda.device_count(), 4)
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                          "--nproc_per_node", str(ranks), str(worker)], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert run.stdout.count(": ok") == ranks, run.stdout


# --- schedule: many GEMMs over the GPUs of this process ------------------------------------------


def test_schedule_checks_its_arguments_without_a_gpu():
    import numpy as np

    with raises_invalid("strategy", "expected load, rr or priority"):
        _core.schedule([], [0], "fifo", None)
    a = np.zeros((64, 128), dtype=np.float16)
    b = np.zeros((32, 128), dtype=np.float16)
    out = np.zeros((64, 32), dtype=np.float16)
    # Host arrays: gemm()'s own check, named by the call's place in the list.
    with pytest.raises(autogemm.InvalidArgument) as info:
        _core.schedule([(a, b, out)], [0], "load", None)
    assert info.value.argument.startswith("calls[0]."), info.value.argument
    with raises_invalid("calls[1]", r"must be \(a, w\) or \(a, w, out\)"):
        agd.schedule([(a, b, out), "gemm"], devices=[0], strategy="load")
    with raises_invalid("strategy"):
        agd.schedule([(a, b, out)], devices=[0], strategy="fifo")
    assert set(agd.STRATEGIES) == {"load", "rr", "priority"}


def test_schedule_matches_torch_on_the_gpus():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    if gpu_unavailable_reason() or not torch.cuda.is_available():
        pytest.skip(gpu_unavailable_reason() or "torch sees no CUDA GPU")
    gpus = min(torch.cuda.device_count(), 4)
    torch.manual_seed(0)
    calls, want = [], []
    for i, (m, n, k) in enumerate([(64, 2112, 7168), (1024, 1024, 1024), (8, 4096, 1024)] * 4):
        device = f"cuda:{i % gpus}"
        a = torch.randn(m, k, device=device, dtype=torch.bfloat16)
        w = torch.randn(n, k, device=device, dtype=torch.bfloat16)
        calls.append((a, w))
        want.append((a.double() @ w.double().T))
    for strategy in agd.STRATEGIES:
        outs, report = agd.schedule(calls, devices=list(range(gpus)), strategy=strategy, report=True)
        assert len(outs) == len(calls) and len(report["gpu"]) == len(calls)
        assert report["makespan_us"] > 0 and report["bound_us"] >= report["ideal_us"] > 0
        for i, (d, ref) in enumerate(zip(outs, want)):
            assert d.device == calls[i][0].device and d.shape == ref.shape
            x, y = d.double(), ref
            diff = 1 - 2 * (x * y).sum() / (x * x + y * y).sum()
            assert diff < 1e-5, (strategy, i, float(diff))
