"""The Python package on a GPU: results against torch.matmul and a float64 reference over the
public suite's shapes, through torch, CuPy and JAX inputs; bit-identical to the C++ API
(autogemm::gemm() on raw pointers) for the same configuration; FP8 quantisation and the
block-scaled GEMM (dense and grouped); grouped GEMM; weight gradients, dense and grouped by
expert (device and host group ends, CUDA graph capture); streams; and the host cost of one call
from Python next to the C++ one (GemmGpu.HostCostPerCall's measure, in the same process).

Every test here skips, saying why, without a CUDA GPU or without the framework it needs.
AUTOGEMM_TEST_OUT=<dir> makes the host-cost test write its figures there as JSON."""

from __future__ import annotations

import csv
import json
import os
import pathlib
import re
import subprocess
import sys
import time

import autogemm
import pytest
from autogemm import _core

from conftest import ROOT, gpu_unavailable_reason, raises_invalid

_REASON = gpu_unavailable_reason()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=_REASON or "")


def _machine_gpu() -> dict:
    gpus = autogemm.profile()["gpus"]
    return gpus[0] if gpus else {}


IS_SM90 = _machine_gpu().get("compute_capability") == {"major": 9, "minor": 0}
needs_sm90 = pytest.mark.skipif(not IS_SM90, reason=_REASON or "autogemm's own kernels need an "
                                "sm_90 GPU (elsewhere every call is cuBLASLt)")


def suite_shapes() -> list[tuple[int, int, int]]:
    path = ROOT / "bench" / "suites" / "gemm-public.csv"
    rows = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    return [(int(r["m"]), int(r["n"]), int(r["k"])) for r in csv.DictReader(rows)]


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch


@pytest.fixture(scope="module")
def cupy():
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - CuPy raises its own runtime error types
        pytest.skip(f"CuPy sees no CUDA device: {e}")
    return cupy


@pytest.fixture(scope="module")
def jax():
    jax = pytest.importorskip("jax", reason="JAX is not installed")
    try:
        jax.devices("gpu")
    except RuntimeError as e:
        pytest.skip(f"JAX has no GPU backend: {e}")
    return jax


def calc_diff(x, y) -> float:
    """DeepGEMM's measure (as src/bench): 1 - 2 sum(xy) / sum(x^2 + y^2), in float64."""
    x, y = x.double(), y.double()
    denominator = (x * x + y * y).sum()
    return float(1 - 2 * (x * y).sum() / denominator)

def contiguous_layout(torch, rows):
    """The contiguous grouped layout of groups with `rows` valid rows each: every group's run
    padded to 128 rows; returns (starts, total rows, int32 group index on the host, -1 in the
    padding)."""
    starts, total = [], 0
    for r in rows:
        starts.append(total)
        total += -(-r // 128) * 128
    index = torch.full((total,), -1, dtype=torch.int32)
    for g, (s, r) in enumerate(zip(starts, rows)):
        index[s:s + r] = g
    return starts, total, index



def bits(t):
    """The raw bits of a 16-bit tensor, for bitwise comparison."""
    import torch
    return t.contiguous().view(torch.int16)


# --- against torch.matmul and float64 ----------------------------------------------------------


@pytest.mark.parametrize("shape", suite_shapes(), ids=lambda s: "x".join(map(str, s)))
def test_suite_shape_bf16_against_float64(torch, shape):
    m, n, k = shape
    g = torch.Generator(device="cuda").manual_seed(m * 31 + n * 7 + k)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g)
    d, report = autogemm.gemm(a, w, return_report=True)
    assert d.shape == (m, n) and d.dtype == torch.bfloat16 and d.device == a.device
    reference = a.double() @ w.double().T
    ours, theirs = calc_diff(d, reference), calc_diff(a @ w.T, reference)
    assert ours < 1e-5, f"{report.config}: diff {ours:.3g} (torch.matmul {theirs:.3g})"
    assert ours <= max(4 * theirs, 2e-6), f"{report.config}: {ours:.3g} vs torch {theirs:.3g}"
    if IS_SM90:
        assert not report.used_vendor, report.reason


@pytest.mark.parametrize("layout", ["nt", "nn", "tn", "tt"])
@pytest.mark.parametrize("dtype_name", ["bfloat16", "float16"])
def test_layouts_against_torch(torch, layout, dtype_name):
    dtype = getattr(torch, dtype_name)
    m, n, k = 200, 264, 520
    a = torch.randn(k, m, device="cuda", dtype=dtype) if layout[0] == "t" else \
        torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(n, k, device="cuda", dtype=dtype) if layout[1] == "t" else \
        torch.randn(k, n, device="cuda", dtype=dtype)
    op_a = a.T if layout[0] == "t" else a
    op_b = b.T if layout[1] == "t" else b
    d = autogemm.gemm(a, b, layout=layout)
    reference = op_a.double() @ op_b.double()
    assert calc_diff(d, reference) < 1e-5
    # "auto": the same call written as a @ b with transposed views.
    assert torch.equal(bits(autogemm.gemm(op_a, op_b, layout="auto")), bits(d))


def test_epilogue_alpha_beta_c_and_fp32_out(torch):
    m, n, k = 128, 256, 512
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    c = torch.randn(m, n, device="cuda", dtype=torch.float32)
    d = autogemm.gemm(a, w, c=c, alpha=0.5, beta=-2.0, out_dtype=torch.float32)
    assert d.dtype == torch.float32
    reference = 0.5 * (a.double() @ w.double().T) - 2.0 * c.double()
    assert calc_diff(d, reference) < 1e-6
    acc = c.clone()
    autogemm.gemm(a, w, out=acc, beta=1.0)     # accumulate: acc = a w^T + acc
    assert calc_diff(acc, a.double() @ w.double().T + c.double()) < 1e-6


def test_padded_leading_dimensions(torch):
    m, n, k = 96, 160, 384
    a = torch.randn(m, k + 64, device="cuda", dtype=torch.bfloat16)[:, :k]
    w = torch.randn(n, k + 8, device="cuda", dtype=torch.bfloat16)[:, :k]
    out = torch.full((m, n + 24), float("nan"), device="cuda", dtype=torch.bfloat16)
    autogemm.gemm(a, w, out=out[:, :n])
    assert calc_diff(out[:, :n], a.double() @ w.double().T) < 1e-5
    assert torch.isnan(out[:, n:]).all(), "wrote into the padding"


def test_unaligned_rows_fall_back_to_cublaslt(torch):
    # Rows of 2002 bytes: TMA cannot describe them, and at this size copying them into padded
    # rows is predicted slower than cuBLASLt's kernels for unaligned rows.
    m, n, k = 64, 128, 1001
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    d, report = autogemm.gemm(a, w, return_report=True)
    assert calc_diff(d, a.double() @ w.double().T) < 1e-5
    if IS_SM90:
        assert report.used_vendor and "16 bytes" in report.reason
        # Forbidding cuBLASLt runs our kernel on rows copied into padded ones instead.
        d, report = autogemm.gemm(a, w, vendor_fallback=False, return_report=True)
        assert not report.used_vendor, report.reason
        assert calc_diff(d, a.double() @ w.double().T) < 1e-5


def test_unaligned_rows_are_copied_for_our_kernel(torch):
    # The same rows in a larger GEMM: A and B are copied into padded rows, our kernel runs.
    m, n, k = 1024, 2048, 1001
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    d, report = autogemm.gemm(a, w, return_report=True)
    assert calc_diff(d, a.double() @ w.double().T) < 1e-5
    if IS_SM90:
        assert not report.used_vendor, report.reason
        # The copies' rows follow the padding rule (src/plan/operand_copy.cpp): whole units of
        # the wide L2 promotion, 256 bytes, the fewest that hold a row of K elements. A and B
        # (lda = ldb = K) are both copied, and the plan for this GPU says the same.
        copied = [int(e) for e in re.findall(r"copied into rows of (\d+) elements", report.reason)]
        assert len(copied) == 2, report.reason
        row_bytes = k * a.element_size()
        for elements in copied:
            padded_bytes = elements * a.element_size()
            assert padded_bytes % 256 == 0, report.reason
            assert row_bytes <= padded_bytes < row_bytes + 256, report.reason
        planned = autogemm.plan(m, n, k, device=0).spec_reason
        assert re.findall(r"copied into rows of (\d+) elements", planned) == [str(e) for e in copied]


def test_requires_grad_and_streams(torch):
    a = torch.randn(64, 256, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(512, 256, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    reference = a.detach().double() @ w.detach().double().T
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):               # torch's current stream is used
        d = autogemm.gemm(a, w)
    stream.synchronize()
    assert calc_diff(d, reference) < 1e-5
    out = torch.empty(64, 512, device="cuda", dtype=torch.bfloat16)
    autogemm.gemm(a, w, out=out, stream=stream)   # a torch.cuda.Stream object
    autogemm.gemm(a, w, out=out, stream=stream.cuda_stream)   # its handle
    stream.synchronize()
    assert calc_diff(out, reference) < 1e-5


def test_wrong_device_and_layout_on_gpu(torch):
    a = torch.randn(64, 128, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(32, 128, dtype=torch.bfloat16)              # host memory
    with pytest.raises(autogemm.InvalidArgument) as e:
        autogemm.gemm(a, w)
    assert e.value.argument == "b" and "CUDA device memory" in e.value.rule
    with pytest.raises(autogemm.InvalidArgument) as e:
        autogemm.gemm(a, w.cuda().T.contiguous().T)             # column-major b for "nt"
    assert e.value.argument == "b" and "unit stride" in e.value.rule
    if torch.cuda.device_count() > 1:
        with pytest.raises(autogemm.InvalidArgument) as e:
            autogemm.gemm(a, w.to("cuda:1"))
        assert e.value.argument == "b" and "same device" in e.value.rule


# --- the same call through the C++ API ----------------------------------------------------------


@needs_sm90
@pytest.mark.parametrize("shape,layout,pad", [
    ((64, 2112, 7168), "nt", 0), ((128, 24576, 1536), "nt", 0), ((4096, 4096, 4096), "nt", 0),
    ((192, 1000, 640), "nt", 64), ((256, 384, 512), "nn", 0), ((320, 256, 768), "tn", 32),
    ((128, 512, 256), "tt", 0)])
def test_bit_identical_to_cpp_api(torch, shape, layout, pad):
    """The array path (dtypes, layout, leading dimensions read from DLPack) and a C++ caller's
    GemmProblem written by hand from the same pointers run the same forced configuration."""
    m, n, k = shape
    stored_a = (k, m) if layout[0] == "t" else (m, k)
    stored_b = (n, k) if layout[1] == "t" else (k, n)
    a = torch.randn(stored_a[0], stored_a[1] + pad, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(stored_b[0], stored_b[1] + pad, device="cuda", dtype=torch.bfloat16)
    a, b = a[:, :stored_a[1]], b[:, :stored_b[1]]
    config = autogemm.plan(m, n, k, device=0, layout=layout, lda=a.stride(0),
                           ldb=b.stride(0)).config
    if config == "cuBLASLt":
        pytest.skip("the planner picks cuBLASLt here")
    ours, report = autogemm.gemm(a, b, layout=layout, config=config, return_report=True,
                                 vendor_fallback=False)
    assert report.config == config and not report.used_vendor
    cpp = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    stream = torch.cuda.current_stream().cuda_stream
    cpp_report = _core.gemm_from_pointers(m, n, k, "bf16", layout, a.data_ptr(), b.data_ptr(),
                                          cpp.data_ptr(), a.stride(0), b.stride(0), n, config,
                                          False, stream, a.device.index)
    assert cpp_report[0] == config
    assert torch.equal(bits(ours), bits(cpp))
    # Unforced, the call runs the planner's choice (or the tuning record's, when `autogemm
    # tune` has recorded one for this problem): with the same configuration, the same bits.
    planned, planned_report = autogemm.gemm(a, b, layout=layout, return_report=True)
    if planned_report.config == config:
        assert torch.equal(bits(planned), bits(ours))


# --- CuPy and JAX inputs --------------------------------------------------------------------------


CROSS_SHAPES = [(64, 2112, 7168), (128, 7168, 2048), (512, 1024, 1536)]


def fp16_pair(torch, m, n, k):
    """torch fp16 operands, autogemm's result on them (checked against float64), host copies.
    On GPU 0 by name: JAX's first use makes the last GPU current on a machine of several, so
    "cuda" would mean another GPU before and after it."""
    a = torch.randn(m, k, device="cuda:0", dtype=torch.float16)
    w = torch.randn(n, k, device="cuda:0", dtype=torch.float16)
    want = autogemm.gemm(a, w)
    assert calc_diff(want, a.double() @ w.double().T) < 1e-5
    return a.cpu().numpy(), w.cpu().numpy(), want


@needs_sm90
@pytest.mark.parametrize("shape", CROSS_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_cupy_inputs_bit_identical_to_torch(torch, cupy, shape):
    import numpy as np
    m, n, k = shape
    host_a, host_w, want = fp16_pair(torch, m, n, k)
    got = autogemm.gemm(cupy.asarray(host_a), cupy.asarray(host_w))   # CuPy's own copies
    assert isinstance(got, cupy.ndarray) and got.dtype == cupy.float16 and got.shape == (m, n)
    assert np.array_equal(cupy.asnumpy(got).view(np.int16), want.cpu().numpy().view(np.int16))


@needs_sm90
@pytest.mark.parametrize("shape", CROSS_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_jax_inputs_bit_identical_to_torch(torch, jax, shape):
    import jax.numpy as jnp
    m, n, k = shape
    host_a, host_w, want = fp16_pair(torch, m, n, k)
    gpu = jax.devices("gpu")[0]
    ja, jw = jax.device_put(jnp.asarray(host_a), gpu), jax.device_put(jnp.asarray(host_w), gpu)
    jax.block_until_ready((ja, jw))     # autogemm does not know JAX's streams
    with pytest.raises(autogemm.InvalidArgument) as e:       # JAX arrays are immutable
        autogemm.gemm(ja, jw)
    assert e.value.argument == "out"
    out = torch.empty(m, n, device=want.device, dtype=torch.float16)
    autogemm.gemm(ja, jw, out=out, stream=torch.cuda.current_stream(out.device).cuda_stream)
    assert torch.equal(bits(out), bits(want))


def test_cupy_stream_and_bf16_output(torch, cupy):
    a = cupy.random.standard_normal((128, 512), dtype=cupy.float32).astype(cupy.float16)
    w = cupy.random.standard_normal((256, 512), dtype=cupy.float32).astype(cupy.float16)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        d = autogemm.gemm(a, w, out_dtype="fp32")               # on CuPy's current stream
    stream.synchronize()
    reference = torch.from_dlpack(a).double() @ torch.from_dlpack(w).double().T
    assert calc_diff(torch.from_dlpack(d), reference) < 1e-6
    with pytest.raises(autogemm.InvalidArgument) as e:
        autogemm.gemm(a, w, out_dtype="bf16")                   # CuPy has no bfloat16
    assert e.value.argument == "out"


def test_jax_bf16_inputs(torch, jax):
    import jax.numpy as jnp
    ka, kw = jax.random.split(jax.random.PRNGKey(0))
    gpu = jax.devices("gpu")[0]
    a = jax.device_put(jax.random.normal(ka, (64, 1024), dtype=jnp.bfloat16), gpu)
    w = jax.device_put(jax.random.normal(kw, (512, 1024), dtype=jnp.bfloat16), gpu)
    jax.block_until_ready((a, w))
    out = torch.empty(64, 512, device="cuda:0", dtype=torch.bfloat16)   # beside JAX's GPU 0
    autogemm.gemm(a, w, out=out)
    torch.cuda.synchronize(out.device)
    reference = torch.from_dlpack(a).double() @ torch.from_dlpack(w).double().T
    assert calc_diff(out, reference) < 1e-5


# --- FP8 -----------------------------------------------------------------------------------------


def torch_quantize(torch, x, block_rows):
    """include/autogemm/quantize.hpp's rule in torch, for bitwise comparison."""
    rows, cols = x.shape
    xf = x.float()
    pad_r = (-rows) % block_rows if block_rows > 1 else 0
    pad_c = (-cols) % 128
    padded = torch.nn.functional.pad(xf.abs(), (0, pad_c, 0, pad_r))
    groups = padded.reshape(padded.shape[0] // block_rows, block_rows, -1, 128)
    amax = groups.amax(dim=(1, 3))
    # Divided by a tensor: torch divides by a Python scalar as a multiply by its reciprocal,
    # which is not the rule's IEEE division (it differs in the last bit for some amax).
    scales = torch.clamp(amax / torch.full_like(amax, 448.0), min=2.0 ** -126)
    expand = scales.repeat_interleave(block_rows, 0).repeat_interleave(128, 1)[:rows, :cols]
    values = (xf * (1.0 / expand)).to(torch.float8_e4m3fn)
    return values, scales


@needs_sm90
@pytest.mark.parametrize("shape", [(64, 2112, 7168), (128, 7168, 2048), (4096, 4096, 7168),
                                   (100, 296, 1040)], ids=lambda s: "x".join(map(str, s)))
def test_fp8_block_scaled_gemm(torch, shape):
    m, n, k = shape
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    qa, sa = autogemm.quantize_fp8(x, (1, 128))
    qb, sb = autogemm.quantize_fp8(w, (128, 128))
    assert qa.dtype == torch.float8_e4m3fn and sa.shape == (m, -(-k // 128))
    assert sb.shape == (-(-n // 128), -(-k // 128))
    want_qa, want_sa = torch_quantize(torch, x, 1)
    want_qb, want_sb = torch_quantize(torch, w, 128)
    assert torch.equal(sa, want_sa) and torch.equal(sb, want_sb)
    assert torch.equal(qa.view(torch.uint8), want_qa.view(torch.uint8))
    assert torch.equal(qb.view(torch.uint8), want_qb.view(torch.uint8))

    d, report = autogemm.fp8_gemm(qa, sa, qb, sb, return_report=True)
    assert d.dtype == torch.bfloat16 and d.shape == (m, n)
    deq_a = qa.double() * sa.double().repeat_interleave(128, 1)[:, :k]
    deq_b = qb.double() * sb.double().repeat_interleave(128, 0).repeat_interleave(128, 1)[:n, :k]
    reference = deq_a @ deq_b.T
    assert calc_diff(d, reference) < 1e-4, report.config
    assert calc_diff(d, x.double() @ w.double().T) < 1e-3      # DeepGEMM's FP8 bound
    # The same bits with uint8 views (how CuPy arrays carry FP8) and a forced configuration.
    again = autogemm.fp8_gemm(qa.view(torch.uint8), sa, qb.view(torch.uint8), sb,
                              config=None if report.used_vendor else report.config)
    assert torch.equal(bits(again), bits(d))
    y = autogemm.dequantize_fp8(qa, sa, (1, 128), out_dtype="float32")
    assert torch.equal(y, (qa.float() * sa.repeat_interleave(128, 1)[:, :k]))


@needs_sm90
@pytest.mark.parametrize("shape", [(1, 4096, 7168), (64, 2112, 7168), (300, 1000, 1040)],
                         ids=lambda s: "x".join(map(str, s)))
def test_fp8_rowwise_gemm(torch, shape):
    """Per-token and per-channel scales (PyTorch's rowwise _scaled_mm): A's rows and B's rows
    quantised to e4m3 with one scale each, D against the float64 product of the dequantised
    inputs and of the unquantised ones, with a fused bias and SiLU too."""
    m, n, k = shape
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    sa = x.float().abs().amax(dim=1, keepdim=True) / 448.0          # (M, 1)
    sb = w.float().abs().amax(dim=1, keepdim=True).T / 448.0        # (1, N)
    qa = (x.float() / sa).to(torch.float8_e4m3fn)
    qb = (w.float() / sb.T).to(torch.float8_e4m3fn)
    d, report = autogemm.fp8_gemm(qa, sa, qb, sb, scaling="rowwise", return_report=True)
    assert not report.used_vendor and d.shape == (m, n)
    dequantised = (qa.double() * sa.double()) @ (qb.double() * sb.double().T).T
    assert calc_diff(d, dequantised) < 1e-5, report.config
    assert calc_diff(d, x.double() @ w.double().T) < 1e-3
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    fused = autogemm.fp8_gemm(qa, sa.flatten(), qb, sb.flatten(), scaling="rowwise", bias=bias,
                              activation="silu")
    want = torch.nn.functional.silu(dequantised + bias.double())
    assert calc_diff(fused, want) < 1e-5


def fp8_dequantise(torch, d, scales):
    """D (e4m3, M x C) times its 1x128 scales, float64."""
    m, cols = d.shape
    expanded = scales.double().repeat_interleave(128, dim=1)[:, :cols]
    return d.double() * expanded


def expect_1x128_scales(torch, scales, want):
    """Each scale is amax / 448 of its 128 columns of `want` (never below 2^-126)."""
    m, cols = want.shape
    groups = (cols + 127) // 128
    padded = torch.zeros(m, groups * 128, dtype=torch.float64, device=want.device)
    padded[:, :cols] = want.abs()
    amax = padded.view(m, groups, 128).amax(dim=2)
    expected = torch.clamp(amax / 448.0, min=2.0 ** -126)
    assert scales.shape == (m, groups) and scales.dtype == torch.float32
    assert torch.allclose(scales.double(), expected, rtol=1e-3, atol=0), \
        (scales.double() / expected - 1).abs().max().item()


@needs_sm90
@pytest.mark.parametrize("shape", [(64, 4096, 1024), (1000, 2080, 520), (4096, 4096, 2048)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("activation", ["silu", "gelu_tanh"])
def test_gated_mlp_bf16(torch, shape, activation):
    """SwiGLU / GeGLU: the gate and up projections interleaved by interleave_gate_up, D =
    act(x W_gate^T + b_gate) * (x W_up^T + b_up) with N / 2 columns, against float64."""
    m, n, k = shape
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    gate = torch.randn(n // 2, k, device="cuda", dtype=torch.bfloat16) / 8
    up = torch.randn(n // 2, k, device="cuda", dtype=torch.bfloat16) / 8
    b_gate = torch.randn(n // 2, device="cuda", dtype=torch.float32)
    b_up = torch.randn(n // 2, device="cuda", dtype=torch.float32)
    w = autogemm.interleave_gate_up(gate, up)
    bias = autogemm.interleave_gate_up(b_gate, b_up)
    d, report = autogemm.gemm(x, w, activation=activation, gated=True, bias=bias,
                              return_report=True)
    assert not report.used_vendor and d.shape == (m, n // 2) and d.dtype == torch.bfloat16
    act = torch.nn.functional.silu if activation == "silu" else (
        lambda v: torch.nn.functional.gelu(v, approximate="tanh"))
    want = act(x.double() @ gate.double().T + b_gate.double()) * (
        x.double() @ up.double().T + b_up.double())
    assert calc_diff(d, want) < 1e-5, report.config


@needs_sm90
@pytest.mark.parametrize("shape", [(64, 7168, 2048), (300, 1040, 1040), (4096, 4096, 1024)],
                         ids=lambda s: "x".join(map(str, s)))
def test_fp8_output_chains_into_fp8_gemm(torch, shape):
    """BF16 in, FP8 out with 1x128 scales (amax / 448 each), then that output and its scales
    straight into fp8_gemm as A: both against float64."""
    m, n, k = shape
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    (d, scales), report = autogemm.gemm(x, w, bias=bias, activation="gelu_tanh", out_dtype="fp8",
                                        return_report=True)
    assert not report.used_vendor and d.dtype == torch.float8_e4m3fn and d.shape == (m, n)
    want = torch.nn.functional.gelu(x.double() @ w.double().T + bias.double(), approximate="tanh")
    expect_1x128_scales(torch, scales, want)
    assert calc_diff(fp8_dequantise(torch, d, scales), want) < 1e-3, report.config
    # Chained: D and its scales are the next GEMM's A and a_scales as they are.
    w2 = torch.randn(1024, n, device="cuda", dtype=torch.bfloat16)
    q2, s2 = torch_quantize(torch, w2, 128)
    y = autogemm.fp8_gemm(d, scales, q2, s2)
    want2 = fp8_dequantise(torch, d, scales) @ (
        q2.double() * s2.double().repeat_interleave(128, 0).repeat_interleave(128, 1)[
            :1024, :n]).T
    assert calc_diff(y, want2) < 1e-5
    # out= and out_scales= given.
    out = torch.empty(m, n, device="cuda", dtype=torch.float8_e4m3fn)
    out_scales = torch.empty_like(scales)
    got = autogemm.gemm(x, w, bias=bias, activation="gelu_tanh", out=out, out_scales=out_scales)
    assert got[0] is out and got[1] is out_scales
    assert torch.equal(out.view(torch.uint8), d.view(torch.uint8))
    assert torch.equal(out_scales, scales)


@needs_sm90
@pytest.mark.parametrize("m", [64, 4096])
def test_fp8_gated_and_fp8_swiglu_block(torch, m):
    """Block-scaled FP8 up-and-gate GEMM with SwiGLU (bf16 out), and the BF16-input SwiGLU with
    FP8 output; the FP8 input with FP8 output gated is refused by name."""
    k, f = 1024, 2048
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    gate = torch.randn(f, k, device="cuda", dtype=torch.bfloat16) / 8
    up = torch.randn(f, k, device="cuda", dtype=torch.bfloat16) / 8
    w = autogemm.interleave_gate_up(gate, up)
    qx, sx = torch_quantize(torch, x, 1)
    qw, sw = torch_quantize(torch, w, 128)
    d = autogemm.fp8_gemm(qx, sx, qw, sw, activation="silu", gated=True)
    deq_x = qx.double() * sx.double().repeat_interleave(128, 1)[:, :k]
    deq_w = qw.double() * sw.double().repeat_interleave(128, 0).repeat_interleave(128, 1)[:2 * f, :k]
    both = deq_x @ deq_w.T
    runs = both.view(m, f // 8, 2, 8)
    want = (torch.nn.functional.silu(runs[:, :, 0]) * runs[:, :, 1]).reshape(m, f)
    assert d.shape == (m, f) and calc_diff(d, want) < 1e-5
    (d8, s8) = autogemm.gemm(x, w, activation="silu", gated=True, out_dtype="fp8")
    want16 = torch.nn.functional.silu(x.double() @ gate.double().T) * (x.double() @ up.double().T)
    expect_1x128_scales(torch, s8, want16)
    assert calc_diff(fp8_dequantise(torch, d8, s8), want16) < 1e-3
    with pytest.raises(autogemm.InvalidArgument) as refused:
        autogemm.fp8_gemm(qx, sx, qw, sw, activation="silu", gated=True, out_dtype="fp8")
    assert refused.value.argument == "d_type" and "quantize_fp8" in refused.value.rule


@needs_sm90
@pytest.mark.parametrize("shape", [(4096, 2048, 1024), (1000, 520, 1000), (16384, 256, 7168)],
                         ids=lambda s: "x".join(map(str, s)))
def test_wgrad_accumulates_into_fp32(torch, shape):
    """dW += dy.T @ x over the tokens, dy and x token-major, into an existing float32 dW, twice
    (two micro-batches), against float64; and the non-accumulating form."""
    t, n, k = shape
    dy = torch.randn(t, n, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(t, k, device="cuda", dtype=torch.bfloat16)
    dw = torch.randn(n, k, device="cuda", dtype=torch.float32)
    want = dw.double() + 2 * (dy.double().T @ x.double())
    got, report = autogemm.wgrad(dy, x, out=dw, return_report=True)
    assert got is dw and not report.used_vendor
    autogemm.wgrad(dy, x, out=dw)
    assert calc_diff(dw, want) < 1e-5, report.config
    fresh = autogemm.wgrad(dy, x, accumulate=False)
    assert fresh.dtype == torch.float32 and calc_diff(fresh, dy.double().T @ x.double()) < 1e-5
    with raises_invalid("out", "float32"):
        autogemm.wgrad(dy, x, out=dw.to(torch.float16))


@needs_sm90
@pytest.mark.parametrize("shape", [(4096, 2048, 1024), (1040, 520, 1000), (16, 256, 136)],
                         ids=lambda s: "x".join(map(str, s)))
def test_fp8_wgrad_against_float64(torch, shape):
    """wgrad(fp8=True): dy and x quantised along the tokens (quantize_fp8(..., transpose=True)),
    then the FP8 GEMM with 1x128 scales on both, accumulated into float32 dW: against float64 of
    the unquantised inputs (diff < 1e-3), and the same call spelled out through fp8_gemm."""
    t, n, k = shape
    dy = torch.randn(t, n, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(t, k, device="cuda", dtype=torch.bfloat16)
    dw0 = torch.randn(n, k, device="cuda", dtype=torch.float32)
    dw = dw0.clone()
    got, report = autogemm.wgrad(dy, x, out=dw, fp8=True, return_report=True)
    assert got is dw and not report.used_vendor
    assert calc_diff(dw, dw0.double() + dy.double().T @ x.double()) < 1e-3, report.config
    dy_t, dy_s = autogemm.quantize_fp8(dy, transpose=True)
    x_t, x_s = autogemm.quantize_fp8(x, transpose=True)
    assert dy_t.shape == (n, t) and dy_s.shape == (n, (t + 127) // 128)
    spelled = autogemm.fp8_gemm(dy_t, dy_s, x_t, x_s, out_dtype="fp32", scaling="1x128")
    assert torch.equal(spelled, dw - dw0) or calc_diff(spelled, dw - dw0) < 1e-6
    with raises_invalid("fp8", "not built"):
        autogemm.wgrad(dy, x, out=dw, fp8=True, group_ends=[t])
    with raises_invalid("b_scales", r"\(N, ceil\(K/128\)\)"):
        autogemm.fp8_gemm(dy_t, dy_s, x_t, x_s[:1], out_dtype="fp32", scaling="1x128")


# Experts' runs of tokens for the grouped wgrad: empty ones, a single token, one whole 64-token
# block and one more, whole blocks, and a partial last block.
WGRAD_GROUP_SIZES = [0, 1, 65, 128, 0, 203]


def group_ends_of(sizes: list[int]) -> list[int]:
    ends, total = [], 0
    for size in sizes:
        total += size
        ends.append(total)
    return ends


def grouped_wgrad_want(torch, dy, x, dw0, ends):
    """dW_g = dW0_g + dy_g.T @ x_g in float64 for every group, its run clamped as the kernel
    clamps it (autogemm/wgrad.hpp), and whether it has tokens."""
    tokens = dy.shape[0]
    want = dw0.double().clone()
    has_tokens = []
    for g, end in enumerate(ends):
        start = 0 if g == 0 else min(max(ends[g - 1], 0), tokens)
        stop = min(max(end, start), tokens)
        if stop > start:
            want[g] += dy[start:stop].double().T @ x[start:stop].double()
        has_tokens.append(stop > start)
    return want, has_tokens


def expect_groups(torch, got, want, dw0, has_tokens):
    """Groups with tokens against float64; groups without them left as they were, bit for bit."""
    for g, computed in enumerate(has_tokens):
        if computed:
            error = (got[g].double() - want[g]).abs().max().item()
            assert calc_diff(got[g], want[g]) < 1e-6 and error < 1e-3, (g, error)
        else:
            assert torch.equal(got[g], dw0[g]), f"group {g} has no tokens but was written"


def wgrad_ends_as(torch, ends: list[int], kind: str):
    if kind == "device":
        return torch.tensor(ends, dtype=torch.int32, device="cuda")
    if kind == "cpu-tensor":
        return torch.tensor(ends)   # int64 on the host: checked and converted
    return ends


@needs_sm90
@pytest.mark.parametrize("ends_kind", ["device", "list", "cpu-tensor"])
def test_grouped_wgrad_against_float64(torch, ends_kind):
    """Every expert's dW_g (+)= dy_g.T @ x_g against float64, runs of 0, 1, 65, 128 and 203
    tokens; accumulating into out twice, then a new dW (zeroed: empty groups read 0), also on a
    stream other than torch's current one (the device copy of host ends joins that stream)."""
    n, k = 128, 320
    ends = group_ends_of(WGRAD_GROUP_SIZES)
    tokens, groups = ends[-1], len(ends)
    dy = torch.randn(tokens, n, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(tokens, k, device="cuda", dtype=torch.bfloat16)
    dw0 = torch.randn(groups, n, k, device="cuda", dtype=torch.float32)
    group_ends = wgrad_ends_as(torch, ends, ends_kind)
    out = dw0.clone()
    got, report = autogemm.wgrad(dy, x, out=out, group_ends=group_ends, return_report=True)
    autogemm.wgrad(dy, x, out=out, group_ends=group_ends, expected_tokens=64)
    torch.cuda.synchronize()
    assert got is out and not report.used_vendor and report.config
    once, has_tokens = grouped_wgrad_want(torch, dy, x, dw0, ends)
    expect_groups(torch, out, 2 * once - dw0.double(), dw0, has_tokens)

    zeros = torch.zeros_like(dw0)
    product, _ = grouped_wgrad_want(torch, dy, x, zeros, ends)
    fresh = autogemm.wgrad(dy, x, accumulate=False, group_ends=group_ends)
    torch.cuda.synchronize()
    assert fresh.shape == (groups, n, k) and fresh.dtype == torch.float32
    expect_groups(torch, fresh, product, zeros, has_tokens)
    side = torch.cuda.Stream()
    on_side = autogemm.wgrad(dy, x, accumulate=False, group_ends=group_ends, stream=side)
    side.synchronize()
    expect_groups(torch, on_side, product, zeros, has_tokens)


@needs_sm90
def test_grouped_wgrad_device_ends_are_clamped_and_int32(torch):
    """Device ends out of order or past the tokens are clamped on the device (an empty group,
    a last group stopping at the last token); device ends of another dtype are refused."""
    n, k, tokens = 64, 192, 300
    dy = torch.randn(tokens, n, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(tokens, k, device="cuda", dtype=torch.bfloat16)
    ends = [100, 50, 500]
    dw0 = torch.randn(len(ends), n, k, device="cuda", dtype=torch.float32)
    out = dw0.clone()
    autogemm.wgrad(dy, x, out=out,
                   group_ends=torch.tensor(ends, dtype=torch.int32, device="cuda"))
    torch.cuda.synchronize()
    want, has_tokens = grouped_wgrad_want(torch, dy, x, dw0, ends)
    assert has_tokens == [True, False, True]
    expect_groups(torch, out, want, dw0, has_tokens)
    with raises_invalid("group_ends", "int32"):
        autogemm.wgrad(dy, x, out=out, group_ends=torch.tensor(ends, device="cuda"))
    with raises_invalid("group_ends[1]", "must not decrease"):
        autogemm.wgrad(dy, x, out=out, group_ends=ends)   # the host check refuses them


@needs_sm90
@pytest.mark.parametrize("ends_kind", ["device", "list"])
def test_grouped_wgrad_cupy(torch, cupy, ends_kind):
    """CuPy float16 inputs on a CuPy stream: a new zeroed dW from CuPy's memory pool, host ends
    copied through it as well, or CuPy int32 ends used as they are."""
    n, k = 64, 192
    ends = group_ends_of([0, 70, 1, 64])
    dy = cupy.random.standard_normal((ends[-1], n), dtype=cupy.float32).astype(cupy.float16)
    x = cupy.random.standard_normal((ends[-1], k), dtype=cupy.float32).astype(cupy.float16)
    group_ends = cupy.asarray(ends, dtype=cupy.int32) if ends_kind == "device" else ends
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        fresh = autogemm.wgrad(dy, x, accumulate=False, group_ends=group_ends)
    stream.synchronize()
    assert isinstance(fresh, cupy.ndarray) and fresh.shape == (len(ends), n, k)
    got = torch.from_dlpack(fresh)
    zeros = torch.zeros_like(got)
    want, has_tokens = grouped_wgrad_want(torch, torch.from_dlpack(dy), torch.from_dlpack(x),
                                          zeros, ends)
    expect_groups(torch, got, want, zeros, has_tokens)


@needs_sm90
def test_grouped_wgrad_in_a_cuda_graph(torch):
    """Captured once with device ends, replayed with other ends written into the same array;
    host ends are refused while the stream captures."""
    n, k = 128, 256
    ends = group_ends_of(WGRAD_GROUP_SIZES)
    tokens, groups = ends[-1], len(ends)
    dy = torch.randn(tokens, n, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(tokens, k, device="cuda", dtype=torch.bfloat16)
    dw0 = torch.randn(groups, n, k, device="cuda", dtype=torch.float32)
    out = dw0.clone()
    device_ends = torch.tensor(ends, dtype=torch.int32, device="cuda")
    warm = torch.cuda.Stream()   # plan and load the kernel before capturing
    warm.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(warm):
        autogemm.wgrad(dy, x, out=out.clone(), group_ends=device_ends)
    torch.cuda.current_stream().wait_stream(warm)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        autogemm.wgrad(dy, x, out=out, group_ends=device_ends)
        with raises_invalid("group_ends", "capturing"):
            autogemm.wgrad(dy, x, out=out, group_ends=ends)
    for replay_ends in (ends, group_ends_of([203, 0, 128, 65, 1, 0])):
        device_ends.copy_(torch.tensor(replay_ends, dtype=torch.int32))
        out.copy_(dw0)
        graph.replay()
        torch.cuda.synchronize()
        want, has_tokens = grouped_wgrad_want(torch, dy, x, dw0, replay_ends)
        expect_groups(torch, out, want, dw0, has_tokens)


@pytest.mark.parametrize("layout", ["contiguous", "masked"])
def test_grouped_gemm_gated_swiglu(torch, layout):
    """MoE SwiGLU: every expert's gate and up projections interleaved with
    interleave_gate_up(axis=1), D = silu(x W_gate^T + b_gate) * (x W_up^T + b_up) with F columns
    per group, against float64."""
    rows = [0, 1, 130, 37, 64]
    groups, f, k = len(rows), 256, 512
    gate = torch.randn(groups, f, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    up = torch.randn(groups, f, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    b_gate = torch.randn(groups, f, device="cuda", dtype=torch.float32)
    b_up = torch.randn(groups, f, device="cuda", dtype=torch.float32)
    w = autogemm.interleave_gate_up(gate, up, axis=1)
    bias = autogemm.interleave_gate_up(b_gate, b_up, axis=1)
    silu = torch.nn.functional.silu

    def want(g, x):
        return silu(x.double() @ gate[g].double().T + b_gate[g].double()) * (
            x.double() @ up[g].double().T + b_up[g].double())

    if layout == "contiguous":
        starts, total, index = contiguous_layout(torch, rows)
        a = torch.randn(total, k, device="cuda", dtype=torch.bfloat16)
        d = autogemm.grouped_gemm(a, w, group_index=index.cuda(), bias=bias, activation="silu",
                                  gated=True)
        assert d.shape == (total, f)
        torch.cuda.synchronize()
        for g, (s, r) in enumerate(zip(starts, rows)):
            if r:
                assert calc_diff(d[s:s + r], want(g, a[s:s + r])) < 1e-5, g
    else:
        max_m = 192
        a = torch.randn(groups, max_m, k, device="cuda", dtype=torch.bfloat16)
        masked = torch.tensor(rows, dtype=torch.int32, device="cuda")
        d = autogemm.grouped_gemm(a, w, masked_m=masked, bias=bias, activation="silu", gated=True)
        assert d.shape == (groups, max_m, f)
        torch.cuda.synchronize()
        for g, r in enumerate(rows):
            if r:
                assert calc_diff(d[g, :r], want(g, a[g, :r])) < 1e-5, g


# --- host cost ---------------------------------------------------------------------------------


@needs_sm90
def test_python_call_overhead_against_cpp(torch):
    """64 x 2112 x 7168 BF16, 200 calls: host microseconds per call through autogemm.gemm()
    with torch tensors, next to the C++ autogemm::gemm() on the same tensors and stream."""
    m, n, k, calls = 64, 2112, 7168, 200
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    stream = torch.cuda.current_stream()

    def python_us(call) -> float:
        call()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            call()
        end = time.perf_counter()
        torch.cuda.synchronize()
        return (end - start) / calls * 1e6

    results = {"shape": [m, n, k], "calls": calls, "config": autogemm.gemm(
        a, w, out=out, return_report=True)[1].config}
    for _ in range(3):   # the best of three of each: the figures are host noise-sensitive
        for name, value in (
                ("cpp_us", lambda: autogemm.cpp_enqueue_us(a, w, out, calls=calls)),
                ("python_torch_us", lambda: python_us(lambda: autogemm.gemm(a, w, out=out))),
                ("python_explicit_stream_us", lambda: python_us(
                    lambda: autogemm.gemm(a, w, out=out, stream=stream.cuda_stream))),
                ("python_allocating_us", lambda: python_us(lambda: autogemm.gemm(a, w))),
                ("torch_matmul_us", lambda: python_us(lambda: torch.matmul(a, w.T)))):
            results[name] = min(results.get(name, float("inf")), value())
    results["python_overhead_us"] = results["python_torch_us"] - results["cpp_us"]
    # Where a Python call's host time goes (each the best of three, per call): torch's stream
    # query and DLPack exports, as autogemm/__init__.py makes them, and the public forms.
    for name, call in (
            ("torch_current_stream_us", lambda: torch.cuda.current_stream(a.device).cuda_stream),
            ("torch_dunder_dlpack_us", lambda: a.__dlpack__(stream=-1)),
            ("torch_c_to_dlpack_us", lambda: torch.utils.dlpack.to_dlpack(a))):
        results[name] = min(python_us(call) for _ in range(3))
    line = ", ".join(f"{key} {value:.2f}" if isinstance(value, float) else f"{key} {value}"
                     for key, value in results.items())
    print(f"\nhost cost per call: {line}")
    if os.environ.get("AUTOGEMM_TEST_OUT"):
        path = pathlib.Path(os.environ["AUTOGEMM_TEST_OUT"]) / "python-host-cost.json"
        path.write_text(json.dumps(results, indent=2) + "\n")
    assert results["cpp_us"] < 25.0                 # GemmGpu.HostCostPerCall's bound
    assert results["python_torch_us"] < results["cpp_us"] + 60.0


# --- python -m autogemm bench ---------------------------------------------------------------------


def test_module_bench(torch):
    r = subprocess.run([sys.executable, "-m", "autogemm", "bench", "--m", "64", "--n", "2112",
                        "--k", "7168", "--iters", "5"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2112" in r.stdout and "torch_us" in r.stdout


# --- grouped_gemm ----------------------------------------------------------------------------------


@needs_sm90
@pytest.mark.parametrize("layout", ["contiguous", "masked"])
def test_grouped_gemm_against_torch(torch, layout):
    """Each group against torch's float64 product of that group; masked rows past masked_m
    keep the output's earlier contents bit for bit."""
    rows = [0, 1, 130, 37, 64]
    groups, n, k = len(rows), 320, 512
    b = torch.randn(groups, n, k, device="cuda", dtype=torch.bfloat16)
    if layout == "contiguous":
        starts, total, index = contiguous_layout(torch, rows)
        a = torch.randn(total, k, device="cuda", dtype=torch.bfloat16)
        d = autogemm.grouped_gemm(a, b, group_index=index.cuda())
        torch.cuda.synchronize()
        for g, (s, r) in enumerate(zip(starts, rows)):
            if r:
                want = a[s:s + r].double() @ b[g].double().T
                assert calc_diff(d[s:s + r], want) < 1e-5, g
    else:
        max_m = 192
        a = torch.randn(groups, max_m, k, device="cuda", dtype=torch.bfloat16)
        out = torch.full((groups, max_m, n), float("nan"), device="cuda", dtype=torch.float32)
        masked = torch.tensor(rows, dtype=torch.int32, device="cuda")
        d, report = autogemm.grouped_gemm(a, b, masked_m=masked, out=out, out_dtype="fp32",
                                          return_report=True)
        torch.cuda.synchronize()
        assert d is out and report.config
        for g, r in enumerate(rows):
            if r:
                want = a[g, :r].double() @ b[g].double().T
                assert calc_diff(d[g, :r], want) < 1e-5, g
            assert torch.isnan(d[g, r:]).all(), f"group {g} rows past masked_m were written"


@needs_sm90
@pytest.mark.parametrize("layout", ["contiguous", "masked"])
def test_grouped_gemm_fused_epilogue_per_group(torch, layout):
    """Each group's own bias and column scales, a scale per stored row, SiLU: each group against
    torch's float64 of the whole epilogue."""
    rows = [0, 1, 130, 37, 64]
    groups, n, k = len(rows), 320, 512
    b = torch.randn(groups, n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    bias = torch.randn(groups, n, device="cuda", dtype=torch.bfloat16)
    col_scale = torch.rand(groups, n, device="cuda") + 0.5
    silu = torch.nn.functional.silu
    if layout == "contiguous":
        starts, total, index = contiguous_layout(torch, rows)
        a = torch.randn(total, k, device="cuda", dtype=torch.bfloat16)
        row_scale = torch.rand(total, device="cuda") + 0.5
        d = autogemm.grouped_gemm(a, b, group_index=index.cuda(), bias=bias, activation="silu",
                                  row_scale=row_scale, col_scale=col_scale)
        torch.cuda.synchronize()
        for g, (s, r) in enumerate(zip(starts, rows)):
            if r:
                x = (a[s:s + r].double() @ b[g].double().T) * row_scale[s:s + r, None].double()
                want = silu(x * col_scale[g].double() + bias[g].double())
                assert calc_diff(d[s:s + r], want) < 1e-5, g
    else:
        max_m = 192
        a = torch.randn(groups, max_m, k, device="cuda", dtype=torch.bfloat16)
        row_scale = torch.rand(groups, max_m, device="cuda") + 0.5
        masked = torch.tensor(rows, dtype=torch.int32, device="cuda")
        d = autogemm.grouped_gemm(a, b, masked_m=masked, bias=bias, activation="silu",
                                  row_scale=row_scale, col_scale=col_scale)
        torch.cuda.synchronize()
        for g, r in enumerate(rows):
            if r:
                x = (a[g, :r].double() @ b[g].double().T) * row_scale[g, :r, None].double()
                want = silu(x * col_scale[g].double() + bias[g].double())
                assert calc_diff(d[g, :r], want) < 1e-5, g


def grouped_fp8_operands(torch, x, w, masked):
    """x (rows, K) or (groups, max_m, K) and w (groups, N, K), bf16, quantised as grouped_gemm
    takes them: A as one matrix with 1x128 scales (per stored row), each group's B 128x128."""
    k = x.shape[-1]
    qa, sa = autogemm.quantize_fp8(x.reshape(-1, k), (1, 128))
    per_group = [autogemm.quantize_fp8(w[g], (128, 128)) for g in range(w.shape[0])]
    # Stacked as bytes: not every torch version concatenates float8 tensors.
    qb = torch.stack([q.view(torch.uint8) for q, _ in per_group]).view(torch.float8_e4m3fn)
    sb = torch.stack([s for _, s in per_group])
    if masked:
        qa, sa = qa.reshape(x.shape), sa.reshape(x.shape[0], x.shape[1], -1)
    return qa, sa, qb, sb


@needs_sm90
@pytest.mark.parametrize("k", [512, 1040], ids=lambda k: f"k{k}")
@pytest.mark.parametrize("layout", ["contiguous", "masked"])
def test_grouped_gemm_fp8_against_unquantised(torch, layout, k):
    """Block-scaled FP8 grouped GEMM (torch float8_e4m3fn, quantize_fp8's scales): each group
    against the float64 product of the unquantised inputs (DeepGEMM's FP8 bound, diff < 1e-3);
    K = 1040 ends in a partial 128-wide scale block. Masked: rows past masked_m keep their
    poison bit for bit."""
    rows = [1, 0, 130, 37]
    groups, n = len(rows), 320
    gen = torch.Generator(device="cuda").manual_seed(2300 + k + (layout == "masked"))
    w = torch.randn(groups, n, k, device="cuda", dtype=torch.bfloat16, generator=gen)
    if layout == "contiguous":
        starts, total, index = contiguous_layout(torch, rows)
        x = torch.randn(total, k, device="cuda", dtype=torch.bfloat16, generator=gen)
        qa, sa, qb, sb = grouped_fp8_operands(torch, x, w, masked=False)
        assert sa.shape == (total, -(-k // 128)) and sb.shape == (groups, 3, -(-k // 128))
        index = index.cuda()
        d, report = autogemm.grouped_gemm(qa, qb, group_index=index, a_scales=sa, b_scales=sb,
                                          return_report=True)
        torch.cuda.synchronize()
        assert d.dtype == torch.bfloat16 and d.shape == (total, n)   # FP8's default output
        for g, (s, r) in enumerate(zip(starts, rows)):
            if r:
                want = x[s:s + r].double() @ w[g].double().T
                assert calc_diff(d[s:s + r], want) < 1e-3, f"group {g} [{report.config}]"
        # uint8 bytes (how CuPy carries FP8) read as e4m3: the same bits.
        again = autogemm.grouped_gemm(qa.view(torch.uint8), qb.view(torch.uint8),
                                      group_index=index, a_scales=sa, b_scales=sb,
                                      config=report.config)
        valid = torch.cat([torch.arange(s, s + r) for s, r in zip(starts, rows)]).cuda()
        assert torch.equal(bits(again[valid]), bits(d[valid]))
    else:
        max_m = 192
        x = torch.randn(groups, max_m, k, device="cuda", dtype=torch.bfloat16, generator=gen)
        qa, sa, qb, sb = grouped_fp8_operands(torch, x, w, masked=True)
        assert qa.shape == x.shape and sa.shape == (groups, max_m, -(-k // 128))
        poison = 0x7FA11CE5   # a float32 NaN
        out = torch.empty(groups, max_m, n, device="cuda", dtype=torch.float32)
        out.view(torch.int32).fill_(poison)
        masked = torch.tensor(rows, dtype=torch.int32, device="cuda")
        d, report = autogemm.grouped_gemm(qa, qb, masked_m=masked, a_scales=sa, b_scales=sb,
                                          out=out, return_report=True)   # fp32: out's dtype
        torch.cuda.synchronize()
        assert d is out and report.config
        for g, r in enumerate(rows):
            if r:
                want = x[g, :r].double() @ w[g].double().T
                assert calc_diff(d[g, :r], want) < 1e-3, f"group {g} [{report.config}]"
            past = out[g, r:].view(torch.int32)
            assert bool((past == poison).all()), f"group {g}: rows past masked_m were written"


@needs_sm90
def test_tuning_file_from_the_command_decides_without_timing(torch, tmp_path):
    """`autogemm tune --export F` in one process, load_tuning_file(F) here: the shape runs the
    file's winner (reason "from the tuning file"), correctly."""
    cli = pathlib.Path(os.environ.get("AUTOGEMM_CLI", ROOT / "build" / "src" / "cli" / "autogemm"))
    if not (cli.is_file() and os.access(cli, os.X_OK)):
        pytest.skip(f"no autogemm command at {cli} (AUTOGEMM_CLI)")
    (tmp_path / "suite.csv").write_text("m,n,k,tag\n96,2304,1536,t\n")
    env = dict(os.environ, AUTOGEMM_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("AUTOGEMM_TUNING_FILE", None)
    env.pop("AUTOGEMM_TUNING_RECORD", None)
    run = subprocess.run([str(cli), "tune", "--suite", str(tmp_path / "suite.csv"),
                          "--candidates", "2", "--warmup", "1", "--iters", "2",
                          "--export", str(tmp_path / "t.json")],
                         env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    load = autogemm.load_tuning_file(tmp_path / "t.json")
    if load["used"] == 0 and any("kernel fingerprint" in why for why in load["ignored"]):
        pytest.skip(f"the command and this package are other builds: {load['ignored']}")
    assert load == {"entries": 1, "used": 1, "ignored": []}, load
    a = torch.randn(96, 1536, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(2304, 1536, device="cuda", dtype=torch.bfloat16)
    d, report = autogemm.gemm(a, w, return_report=True)
    assert "from the tuning file" in report.reason, report.reason
    want = (a.double() @ w.double().T)
    assert torch.allclose(d.double(), want, rtol=1 / 64, atol=0.1), report.reason


# --- the fused epilogue (issue 50) -------------------------------------------------------------


def _activation(torch, name, x):
    f = torch.nn.functional
    return {None: lambda v: v, "relu": torch.relu, "silu": f.silu,
            "gelu_tanh": lambda v: f.gelu(v, approximate="tanh"), "gelu_erf": f.gelu}[name](x)


@needs_sm90
@pytest.mark.parametrize("activation", [None, "relu", "gelu_tanh", "gelu_erf", "silu"])
@pytest.mark.parametrize("bias_dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("shape", [(1000, 1024, 520), (13, 4096, 2048), (3, 1000, 1032)],
                         ids=lambda s: "x".join(map(str, s)))
def test_fused_epilogue_against_float64(torch, activation, bias_dtype, shape):
    m, n, k = shape
    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g) / k ** 0.5
    bias = torch.randn(n, device="cuda", dtype=getattr(torch, bias_dtype), generator=g)
    row_scale = torch.rand(m, device="cuda", generator=g) + 0.5
    col_scale = torch.rand(n, device="cuda", generator=g) + 0.5
    c = torch.randn(m, n, device="cuda", dtype=torch.bfloat16, generator=g)
    d, report = autogemm.gemm(a, w, c=c, beta=0.5, bias=bias, activation=activation,
                              row_scale=row_scale, col_scale=col_scale, return_report=True)
    x = (a.double() @ w.double().T) * row_scale.double()[:, None] * col_scale.double()[None, :]
    reference = _activation(torch, activation, x + bias.double()) + 0.5 * c.double()
    assert calc_diff(d, reference) < 1e-5, report.config
    assert not report.used_vendor
    # Without scales and C, through torch's fast path (out given).
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    autogemm.gemm(a, w, out=out, bias=bias, activation=activation)
    plain = _activation(torch, activation, a.double() @ w.double().T + bias.double())
    assert calc_diff(out, plain) < 1e-5


@needs_sm90
@pytest.mark.parametrize("fmt", ["int4-g128", "int4-g128-zp", "mxfp4", "int8"])
def test_grouped_weight_only_gemm(torch, fmt):
    """grouped_gemm(a, quantize_weight(w of every expert), masked_m=...) against float64 of each
    expert's valid rows and its dequantised weight; rows past masked_m keep what out held."""
    groups, max_m, n, k = 6, 64, 1040, 1536
    w = torch.randn(groups, n, k, device="cuda", dtype=torch.bfloat16) * 0.05
    qw = autogemm.quantize_weight(w, fmt)
    a = torch.randn(groups, max_m, k, device="cuda", dtype=torch.bfloat16)
    rows = [0, 1, 5, 64, 2, 9]
    masked_m = torch.tensor(rows, device="cuda", dtype=torch.int32)
    out = torch.full((groups, max_m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    _, report = autogemm.grouped_gemm(a, qw, masked_m=masked_m, out=out, return_report=True)
    assert report.config.startswith("mma"), report.config
    deq = torch.from_numpy(autogemm.dequantize_weight(qw)).cuda().double()
    for g, valid in enumerate(rows):
        if valid:
            want = a[g, :valid].double() @ deq[g].T
            assert calc_diff(out[g, :valid], want) < 1e-5, (g, report.config)
        assert torch.isnan(out[g, valid:]).all(), g
    with raises_invalid("group_index", "masked layout"):
        autogemm.grouped_gemm(a.reshape(-1, k), qw,
                              group_index=torch.zeros(groups * max_m, device="cuda", dtype=torch.int32))


@needs_sm90
@pytest.mark.parametrize("fmt", ["int4-g128", "int4-g128-zp", "mxfp4", "int8"])
@pytest.mark.parametrize("m", [1, 7, 64])
def test_weight_only_gemm(torch, fmt, m):
    """gemm(a, quantize_weight(w)) against float64 of a and the dequantised weight; a packed
    weight whose values or scales do not match the activations is refused by name."""
    n, k = 1040, 1536
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.05
    qw = autogemm.quantize_weight(w, fmt)
    assert qw.q.device == w.device and qw.nbytes < n * k * (1.01 if fmt == "int8" else 0.6)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    d, report = autogemm.gemm(a, qw, return_report=True)
    want = a.double() @ torch.from_numpy(autogemm.dequantize_weight(qw)).cuda().double().T
    assert d.shape == (m, n) and d.dtype == torch.bfloat16
    assert calc_diff(d, want) < 1e-5, report.config
    assert report.config.startswith("mma")
    out = torch.empty(m, n, device="cuda", dtype=torch.float32)
    autogemm.gemm(a, qw, out=out)
    assert calc_diff(out, want) < 1e-5
    short = autogemm.QuantizedWeight(qw.format, n, k, qw.q, qw.scales[:n // 2], qw.zeros)
    with raises_invalid("scales", "must be"):
        autogemm.gemm(a, short)
    with raises_invalid("b", "bytes a row"):
        autogemm.gemm(a[:, :k // 2].contiguous(), qw)
