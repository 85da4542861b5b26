"""The Python package without a GPU (CI): import, planning and profiling with presets, the
command, and every argument check (dtypes, shapes, strides, devices, layouts, options). The
arrays are NumPy's (through DLPack / the buffer protocol); torch is optional and never needed."""

from __future__ import annotations

import json
import os
import pathlib
import pickle
import re
import subprocess
import sys
import warnings

import autogemm
import pytest
from autogemm import _core

from conftest import gpu_unavailable_reason, raises_invalid

np = pytest.importorskip("numpy", reason="numpy is needed for the argument checks' arrays")

NO_GPU = gpu_unavailable_reason() is not None
SM90_PRESETS = ("h100-sxm", "h100-pcie", "h200")


def cli_path(root: pathlib.Path) -> pathlib.Path | None:
    path = pathlib.Path(os.environ.get("AUTOGEMM_CLI", root / "build" / "src" / "cli" / "autogemm"))
    return path if path.is_file() and os.access(path, os.X_OK) else None


# --- the package ------------------------------------------------------------------------------


def test_version_is_the_projects(repo_root):
    cmake = (repo_root / "CMakeLists.txt").read_text()
    version = re.search(r"project\(autogemm VERSION ([0-9.]+)", cmake).group(1)
    assert autogemm.__version__ == version


def test_installed_not_source_tree(repo_root):
    # The tests exercise the wheel: the module comes from site-packages (or a build dir).
    package = pathlib.Path(autogemm.__file__).resolve().parent
    assert package != (repo_root / "python" / "autogemm").resolve()
    assert (package / "py.typed").is_file()
    assert (package / "_core.pyi").is_file()


def test_public_names_exist():
    for name in autogemm.__all__:
        assert hasattr(autogemm, name), name
        if callable(getattr(autogemm, name)) and not isinstance(getattr(autogemm, name), type):
            assert getattr(autogemm, name).__doc__, f"{name} has no docstring"


def test_interleave_gate_up():
    """Runs of 8 gate rows and 8 up rows alternate; a bias interleaves the same way."""
    numpy = pytest.importorskip("numpy")
    gate = numpy.arange(16 * 3).reshape(16, 3)
    up = 1000 + gate
    w = autogemm.interleave_gate_up(gate, up)
    assert w.shape == (32, 3)
    assert (w[0:8] == gate[0:8]).all() and (w[8:16] == up[0:8]).all()
    assert (w[16:24] == gate[8:16]).all() and (w[24:32] == up[8:16]).all()
    b = autogemm.interleave_gate_up(numpy.arange(8), numpy.arange(8) + 100)
    assert list(b) == list(range(8)) + list(range(100, 108))
    # Grouped experts: the rows are axis 1.
    experts = numpy.arange(2 * 16 * 3).reshape(2, 16, 3)
    grouped = autogemm.interleave_gate_up(experts, experts + 1000, axis=1)
    assert grouped.shape == (2, 32, 3)
    for g in range(2):
        assert (grouped[g] == autogemm.interleave_gate_up(experts[g], experts[g] + 1000)).all()
    with raises_invalid("axis"):
        autogemm.interleave_gate_up(gate, up, axis=2)
    with raises_invalid("gate", "multiple of 8"):
        autogemm.interleave_gate_up(gate[:12], up[:12])
    with raises_invalid("up"):
        autogemm.interleave_gate_up(gate, up[:8])


def test_wgrad_checks_before_any_gpu_work():
    numpy = pytest.importorskip("numpy")
    dy = numpy.zeros((64, 32), numpy.float16)
    x = numpy.zeros((64, 16), numpy.float16)
    with raises_invalid("out", "accumulate=True"):
        autogemm.wgrad(dy, x)
    with raises_invalid("out", "float32"):
        autogemm.wgrad(dy, x, out=numpy.zeros((32, 16), numpy.float16))
    with raises_invalid("fp8", "not built"):
        autogemm.wgrad(dy, x, out=numpy.zeros((32, 16), numpy.float32), fp8=True,
                       group_ends=[64])


class _DeviceView:
    """A NumPy array that says it lives on CUDA device 0 (__dlpack_device__), so that wgrad takes
    it down the device path of group_ends, whose checks run before the device check."""

    def __init__(self, array):
        self.array = array

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__()


def test_grouped_wgrad_checks_before_any_gpu_work():
    """wgrad(..., group_ends=...) checks everything on the host before it allocates, copies or
    launches anything: host ends with check_group_ends (the group named), shapes, dtypes and
    options. NumPy arrays, so the last check reached is the device's."""
    dy = np.zeros((100, 64), np.float16)
    x = np.zeros((100, 32), np.float16)
    out = np.zeros((3, 64, 32), np.float32)
    ends = [10, 20, 100]

    def call(**kwargs):
        args = {"dy": dy, "x": x, "out": out, "group_ends": ends, **kwargs}
        return autogemm.wgrad(args.pop("dy"), args.pop("x"), **args)

    # Host ends: one per group, not decreasing, within the tokens; integers only.
    with raises_invalid("group_ends[1]", "must not decrease"):
        call(group_ends=[40, 30, 100])
    with raises_invalid("group_ends[2]", "100 tokens"):
        call(group_ends=np.array([0, 10, 101]))
    with raises_invalid("group_ends[0]", "must not decrease"):
        call(group_ends=(-1, 10, 20))
    with raises_invalid("out", r"\(2, 64, 32\)"):
        call(group_ends=[10, 100])   # two groups (one per end): out is for three
    with raises_invalid("group_ends[1]", "integer"):
        call(group_ends=[10, 20.5, 100])
    with raises_invalid("group_ends[1]", "integer"):
        call(group_ends=[10, True, 100])
    with raises_invalid("group_ends", "integers"):
        call(group_ends=np.array([10.0, 20.0, 100.0]))
    with raises_invalid("group_ends", "1-D"):
        call(group_ends=np.array([[10, 20, 100]]))
    with raises_invalid("group_ends", "at least one group"):
        call(group_ends=[], out=np.zeros((0, 64, 32), np.float32))
    with raises_invalid("group_ends", "host integers"):
        call(group_ends="10,20")
    # Device ends: int32, one per group, packed (checked before the device).
    with raises_invalid("group_ends", "int32"):
        call(group_ends=_DeviceView(np.array(ends, np.int64)))
    with raises_invalid("group_ends", "1-D"):
        call(group_ends=_DeviceView(np.zeros((3, 1), np.int32)))
    with raises_invalid("group_ends", "packed"):
        call(group_ends=_DeviceView(np.zeros(6, np.int32)[::2]))
    with raises_invalid("out", r"\(3, 64, 32\)"):
        call(group_ends=_DeviceView(np.array(ends, np.int32)), out=out[:2])
    # out: dW (groups, N, K) float32, packed.
    with raises_invalid("out", r"\(groups, N, K\) = \(3, 64, 32\)"):
        call(out=np.zeros((3, 32, 64), np.float32))
    with raises_invalid("out", "float32"):
        call(out=out.astype(np.float16))
    with raises_invalid("out", "packed"):
        call(out=np.zeros((3, 64, 64), np.float32)[:, :, :32])
    with raises_invalid("out", "accumulate=True"):
        call(out=None)
    # dy and x: packed (T, N) and (T, K) of one 16-bit type; N a multiple of 64.
    with raises_invalid("dy", "multiple of 64"):
        call(dy=np.zeros((100, 96), np.float16), out=np.zeros((3, 96, 32), np.float32))
    with raises_invalid("x", "100 tokens"):
        call(x=x[:50])
    with raises_invalid("x", "float16"):
        call(x=x.astype(np.float32))
    with raises_invalid("dy", "bfloat16 or float16"):
        call(dy=dy.astype(np.float32), x=x.astype(np.float32))
    with raises_invalid("dy", "packed"):
        call(dy=np.zeros((100, 128), np.float16)[:, :64])
    # Options.
    with raises_invalid("autotune", "device"):
        call(autotune=4)
    with raises_invalid("expected_tokens", ">= 0"):
        call(expected_tokens=-1)
    with raises_invalid("expected_tokens", "group_ends"):
        autogemm.wgrad(dy, np.zeros((100, 32), np.float16), out=np.zeros((64, 32), np.float32),
                       expected_tokens=10)
    # Every check passed (host ends of any integer type, a sequence or an array): NumPy arrays
    # are on the host, which the device check names.
    for good in (ends, tuple(ends), range(10, 40, 10), np.array(ends, np.int64),
                 np.array(ends, np.uint16), _DeviceView(np.array(ends, np.int32))):
        with raises_invalid("dy", "CUDA device memory"):
            call(group_ends=good, expected_tokens=40)
    with raises_invalid("dy", "CUDA device memory"):
        call(out=None, accumulate=False)


def test_grouped_wgrad_takes_cpu_tensor_ends():
    torch = pytest.importorskip("torch", reason="torch is not installed (optional)")
    dy = np.zeros((100, 64), np.float16)
    x = np.zeros((100, 32), np.float16)
    out = np.zeros((2, 64, 32), np.float32)
    with raises_invalid("group_ends[1]", "must not decrease"):
        autogemm.wgrad(dy, x, out=out, group_ends=torch.tensor([50, 40]))
    with raises_invalid("group_ends", "integers"):
        autogemm.wgrad(dy, x, out=out, group_ends=torch.tensor([50.0, 100.0]))
    with raises_invalid("dy", "CUDA device memory"):
        autogemm.wgrad(dy, x, out=out, group_ends=torch.tensor([50, 100], dtype=torch.int32))


def test_core_stub_matches_module():
    stub = (pathlib.Path(autogemm.__file__).parent / "_core.pyi").read_text()
    in_stub = set(re.findall(r"^def (\w+)\(", stub, flags=re.M))
    in_module = {n for n in dir(_core) if not n.startswith("_") and callable(getattr(_core, n))}
    assert in_stub == in_module


def test_error_classes():
    assert issubclass(autogemm.InvalidArgument, ValueError)
    assert issubclass(autogemm.InvalidArgument, autogemm.Error)
    assert issubclass(autogemm.CudaError, RuntimeError)
    assert issubclass(autogemm.NoDevice, RuntimeError)
    assert issubclass(autogemm.NoDevice, autogemm.Error)
    e = autogemm.InvalidArgument("lda", "1001", "a rule")
    assert str(e) == "lda = 1001: a rule"
    again = pickle.loads(pickle.dumps(e))
    assert (again.argument, again.value, again.rule) == ("lda", "1001", "a rule")


# --- planning (presets: no GPU needed) --------------------------------------------------------


@pytest.mark.parametrize("preset", autogemm.device_presets())
@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp8"])
def test_plan_every_preset(preset, dtype):
    p = autogemm.plan(64, 2112, 7168, dtype=dtype, device=preset)
    assert isinstance(p, autogemm.Plan)
    assert (p.m, p.n, p.k, p.dtype, p.layout) == (64, 2112, 7168, dtype, "nt")
    assert p.predicted_us > 0 and p.predicted_tflops > 0
    assert p.path_reason and p.spec_reason
    assert p.candidates and p.candidates[0].config == p.config
    if p.vendor:
        assert p.config == "cuBLASLt" and p.kernels == ()
    else:
        assert p.kernels and all(k.grid_ctas > 0 and k.threads_per_cta > 0 for k in p.kernels)
        assert _core.parse_config(p.config) == p.config   # can be given back as config=
    if preset in SM90_PRESETS:
        assert not p.vendor, p.path_reason
    assert p.device_info["preset"] == preset
    assert p.config in str(p)


@pytest.mark.parametrize("layout", ["nt", "nn", "tn", "tt"])
def test_plan_layouts_and_leading_dimensions(layout):
    p = autogemm.plan(256, 512, 1024, device="h200", layout=layout, lda=1032, ldb=1032, ldd=520)
    assert p.layout == layout
    assert p.problem["lda"] == 1032 and p.problem["ldd"] == 520


def test_plan_rejected_configurations_name_their_rule():
    p = autogemm.plan(4096, 4096, 4096, device="h100-sxm")
    assert p.rejected and all(r.reason for r in p.rejected)
    assert all(c.time_us > 0 for c in p.candidates)


def test_plan_matches_cli(repo_root):
    cli = cli_path(repo_root)
    if cli is None:
        pytest.skip("no autogemm command built (build/src/cli/autogemm; set AUTOGEMM_CLI)")
    text = subprocess.run([str(cli), "plan", "--m", "128", "--n", "7168", "--k", "2048",
                           "--device", "h200", "--json"], check=True, capture_output=True,
                          text=True).stdout
    want = json.loads(text)[0]
    got = autogemm.plan(128, 7168, 2048, device="h200")
    assert got.config == want["config"]["describe"]
    assert got.predicted_us == pytest.approx(want["prediction"]["time_us"], rel=1e-12)
    assert got.path_reason == want["path_reason"]
    assert got.problem == want["problem"]
    assert got.device_info == want["device"]


def test_plan_errors():
    with raises_invalid("m", ">= 1"):
        autogemm.plan(0, 64, 64, device="h200")
    with raises_invalid("dtype"):
        autogemm.plan(64, 64, 64, dtype="int8", device="h200")
    with raises_invalid("layout"):
        autogemm.plan(64, 64, 64, layout="xy", device="h200")
    with raises_invalid("device preset", "known presets"):
        autogemm.plan(64, 64, 64, device="no-such-gpu")
    with raises_invalid("lda"):
        autogemm.plan(64, 64, 128, device="h200", lda=100)


@pytest.mark.parametrize("m", [2**70, None, 64.7, True, "64"])
def test_plan_sizes_must_be_integers(m):
    # Each was a TypeError from the binding, or silently 64 and 1.
    with raises_invalid("m"):
        autogemm.plan(m, 64, 64, device="h200")
    with raises_invalid("ldd"):
        autogemm.plan(64, 64, 64, device="h200", ldd=m)


def test_plan_takes_numpy_integers():
    import numpy
    assert autogemm.plan(numpy.int64(64), numpy.int32(64), 64, device="h200").m == 64


@pytest.mark.skipif(not NO_GPU, reason="this machine has a GPU")
def test_plan_without_gpu_default_device_warns():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p = autogemm.plan(64, 2112, 7168)
    assert p.device == "h100-sxm"
    assert any("h100-sxm" in str(w.message) and w.category is RuntimeWarning for w in caught)


@pytest.mark.skipif(not NO_GPU, reason="this machine has a GPU")
def test_ordinal_without_gpu_is_no_device():
    with pytest.raises(autogemm.NoDevice, match="no CUDA driver or GPU found"):
        autogemm.plan(64, 64, 64, device=0)
    with pytest.raises(autogemm.NoDevice):
        autogemm.profile(0)


# --- profiling --------------------------------------------------------------------------------


def test_profile_machine():
    machine = autogemm.profile()
    assert machine["cpu"]["logical_cores"] >= 1
    assert machine["cpu"]["architecture"]
    if NO_GPU:
        assert machine["gpus"] == [] and machine["gpu_unavailable_reason"]
    else:
        assert machine["gpus"][0]["ordinal"] == 0


def test_profile_preset():
    h200 = autogemm.profile("h200")
    assert "H200" in h200["name"]
    assert h200["compute_capability"] == {"major": 9, "minor": 0}
    assert h200["capabilities"]["wgmma"] and h200["peak_bf16_tflops"] > 900
    with raises_invalid("device preset"):
        autogemm.profile("no-such-gpu")


def test_profile_matches_cli(repo_root):
    cli = cli_path(repo_root)
    if cli is None:
        pytest.skip("no autogemm command built (build/src/cli/autogemm; set AUTOGEMM_CLI)")
    for preset in ("h200", "b200"):
        text = subprocess.run([str(cli), "profile", "--json", "--device", preset], check=True,
                              capture_output=True, text=True).stdout
        assert autogemm.profile(preset) == json.loads(text)


# --- python -m autogemm -----------------------------------------------------------------------


def run_module(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autogemm", *args], capture_output=True,
                          text=True, timeout=120)


def test_module_plan_and_profile():
    r = run_module("plan", "--m", "64", "--n", "2112", "--k", "7168", "--device", "h200",
                   "--top", "3")
    assert r.returncode == 0, r.stderr
    assert "config" in r.stdout and "candidates (3 of" in r.stdout
    r = run_module("profile", "--device", "h100-sxm")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["sm_count"] == 132
    r = run_module("plan", "--m", "0", "--n", "1", "--k", "1", "--device", "h200")
    assert r.returncode == 2 and "m = 0" in r.stderr


@pytest.mark.skipif(not NO_GPU, reason="this machine has a GPU")
def test_module_bench_without_gpu_says_why():
    r = run_module("bench", "--m", "64", "--n", "64", "--k", "64")
    assert r.returncode != 0
    assert "autogemm bench:" in r.stderr


# --- argument checks (NumPy arrays: host memory, so every call stops at a check) --------------


def f16(rows: int, cols: int):
    return np.zeros((rows, cols), np.float16)


def test_host_arrays_are_refused_with_the_reason():
    with raises_invalid("a", "CUDA device memory"):
        autogemm.gemm(f16(64, 128), f16(32, 128))
    with raises_invalid("a", "CUDA device memory"):
        autogemm.gemm(f16(64, 128), f16(32, 128), out=f16(64, 32))


def test_torch_cpu_tensors_are_refused():
    torch = pytest.importorskip("torch", reason="torch is not installed (optional)")
    a = torch.zeros(64, 128, dtype=torch.bfloat16)
    b = torch.zeros(32, 128, dtype=torch.bfloat16, requires_grad=True)
    with raises_invalid("a", "CUDA device memory"):
        autogemm.gemm(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint8, np.int32])
def test_wrong_input_dtype(dtype):
    with raises_invalid("a", "bfloat16 or float16"):
        autogemm.gemm(np.zeros((64, 128), dtype), f16(32, 128))


def test_mismatched_input_dtypes():
    with raises_invalid("b", "a's dtype"):
        autogemm.gemm(f16(64, 128), np.zeros((32, 128), np.float32))


def test_wrong_output_dtype():
    with raises_invalid("out", "bfloat16, float16 or float32"):
        autogemm.gemm(f16(64, 128), f16(32, 128), out=np.zeros((64, 32), np.float64))
    with raises_invalid("out", "float8_e4m3fn"):   # int8 is no FP8 container (uint8 bytes are)
        autogemm.gemm(f16(64, 128), f16(32, 128), out=np.zeros((64, 32), np.int8))
    with raises_invalid("out_dtype", "bf16, fp16 or fp32"):
        autogemm.gemm(f16(64, 128), f16(32, 128), out_dtype="int8")
    with raises_invalid("out_dtype", "must match out's dtype"):
        autogemm.gemm(f16(64, 128), f16(32, 128), out=f16(64, 32), out_dtype=np.float32)


def test_shapes():
    with raises_invalid("b", r"\(N, K\) = \(32, 128\)"):
        autogemm.gemm(f16(64, 128), f16(32, 64))
    with raises_invalid("b", r"\(K, N\)"):
        autogemm.gemm(f16(64, 128), f16(64, 32), layout="nn")
    with raises_invalid("out", r"must have shape \(64, 32\)"):
        autogemm.gemm(f16(64, 128), f16(32, 128), out=f16(64, 33))
    with raises_invalid("a", "2-D"):
        autogemm.gemm(np.zeros((2, 64, 128), np.float16), f16(32, 128))
    with raises_invalid("a", "2-D"):
        autogemm.gemm(np.zeros(128, np.float16), f16(32, 128))
    with raises_invalid("m", ">= 1"):
        autogemm.gemm(f16(0, 128), f16(32, 128))


def test_layouts_read_shapes_as_stored():
    # Each layout passes the static checks with its own stored shapes (then stops at the
    # device check: the arrays are in host memory).
    m, n, k = 64, 32, 128
    stored = {"nt": ((m, k), (n, k)), "nn": ((m, k), (k, n)), "tn": ((k, m), (k, n)),
              "tt": ((k, m), (n, k))}
    for layout, (a_shape, b_shape) in stored.items():
        with raises_invalid("a", "CUDA device memory"):
            autogemm.gemm(f16(*a_shape), f16(*b_shape), layout=layout, out=f16(m, n))
    with raises_invalid("layout", "nt, nn, tn, tt"):
        autogemm.gemm(f16(m, k), f16(n, k), layout="xx")


def test_layout_auto_reads_strides():
    a, w = f16(64, 128), f16(32, 128)
    for b in (w.T, np.ascontiguousarray(w.T)):   # column-major (nt) and row-major (nn) K x N
        with raises_invalid("a", "CUDA device memory"):
            autogemm.gemm(a, b, layout="auto", out=f16(64, 32))
    with raises_invalid("b", "K = 128 rows"):
        autogemm.gemm(a, w, layout="auto", out=f16(64, 32))


def test_non_contiguous_arrays():
    a = f16(64, 256)
    with raises_invalid("a", "unit stride"):
        autogemm.gemm(a[:, ::2], f16(32, 128))
    with raises_invalid("b", "unit stride"):
        autogemm.gemm(f16(64, 128), f16(128, 32).T)          # nt wants b (N, K) row-major
    with raises_invalid("a", "overlap or run backwards"):
        autogemm.gemm(f16(64, 128)[::-1], f16(32, 128))
    with raises_invalid("out", "unit stride"):
        autogemm.gemm(f16(64, 128), f16(32, 128), out=f16(32, 64).T)
    with raises_invalid("a", "overlap"):         # a broadcast row: stride 0 between rows
        autogemm.gemm(np.broadcast_to(np.zeros(128, np.float16), (64, 128)), f16(32, 128))


def test_padded_rows_pass_the_stride_check():
    padded = f16(64, 136)[:, :128]      # lda 136
    with raises_invalid("a", "CUDA device memory"):
        autogemm.gemm(padded, f16(32, 128), out=f16(64, 40)[:, :32])


def test_not_an_array():
    with raises_invalid("a", "__dlpack__"):
        autogemm.gemm([[1.0, 2.0]], f16(32, 128))
    with raises_invalid("b", "must be an array"):
        autogemm.gemm(f16(64, 128), None)


def test_read_only_out():
    out = f16(64, 32)
    out.flags.writeable = False
    with raises_invalid("out", "writable"):
        autogemm.gemm(f16(64, 128), f16(32, 128), out=out)


def test_options():
    a, b = f16(64, 128), f16(32, 128)
    with raises_invalid("config", "token"):
        autogemm.gemm(a, b, config="bogus")
    with raises_invalid("config"):
        autogemm.gemm(a, b, config=42)
    with raises_invalid("autotune"):
        autogemm.gemm(a, b, autotune=-2)
    with raises_invalid("stream"):
        autogemm.gemm(a, b, stream="default")
    with raises_invalid("c", "beta"):
        autogemm.gemm(a, b, beta=0.5)
    with raises_invalid("c", r"shape \(64, 32\)"):
        autogemm.gemm(a, b, beta=0.5, c=f16(32, 64))
    with raises_invalid("c", "output's dtype"):
        autogemm.gemm(a, b, beta=0.5, c=np.zeros((64, 32), np.float32))


# --- FP8 ----------------------------------------------------------------------------------------


def fp8_args(m=64, n=256, k=384):
    kb = -(-k // 128)
    return (np.zeros((m, k), np.uint8), np.ones((m, kb), np.float32),
            np.zeros((n, k), np.uint8), np.ones((-(-n // 128), kb), np.float32))


def test_fp8_gemm_checks():
    a, sa, b, sb = fp8_args()
    out = np.zeros((64, 256), np.float32)
    with raises_invalid("a_fp8", "CUDA device memory"):   # every static check passed
        autogemm.fp8_gemm(a, sa, b, sb, out=out)
    with raises_invalid("a_fp8", "FP8 values"):
        autogemm.fp8_gemm(a.astype(np.float16), sa, b, sb, out=out)
    with raises_invalid("a_scales", r"\(M, ceil\(K/128\)\)"):
        autogemm.fp8_gemm(a, sa[:, :2], b, sb, out=out)
    with raises_invalid("b_scales", "128x128 block"):
        autogemm.fp8_gemm(a, sa, b, sb[:1], out=out)
    with raises_invalid("a_scales", "float32"):
        autogemm.fp8_gemm(a, sa.astype(np.float64), b, sb, out=out)
    with raises_invalid("b_scales", "packed"):
        autogemm.fp8_gemm(a, sa, b, np.ones((2, 6), np.float32)[:, :3], out=out)
    with raises_invalid("scaling"):
        autogemm.fp8_gemm(a, sa, b, sb, out=out, scaling="per_row")
    with raises_invalid("a_scales", "one float32 scale"):
        autogemm.fp8_gemm(a, sa, b, np.ones(1, np.float32), out=out, scaling="per_tensor")
    with raises_invalid("a_fp8", "CUDA device memory"):
        autogemm.fp8_gemm(a, np.ones(1, np.float32), b, np.ones((), np.float32), out=out,
                          scaling="per_tensor")
    # Rowwise: M scales for A and N for B, as a vector, a column or a row, float32, packed.
    m, n = a.shape[0], b.shape[0]
    with raises_invalid("a_scales", "one float32 scale per row: M = 64") as info:
        autogemm.fp8_gemm(a, sa, b, np.ones(n, np.float32), out=out, scaling="rowwise")
    assert "shape (64, " in info.value.value
    with raises_invalid("b_scales", "N = 256"):
        autogemm.fp8_gemm(a, np.ones(m, np.float32), b, np.ones((2, n), np.float32), out=out,
                          scaling="rowwise")
    with raises_invalid("b_scales", "float32"):
        autogemm.fp8_gemm(a, np.ones(m, np.float32), b, np.ones(n), out=out, scaling="rowwise")
    with raises_invalid("a_scales", "contiguous"):
        autogemm.fp8_gemm(a, np.ones(2 * m, np.float32)[::2], b, np.ones(n, np.float32), out=out,
                          scaling="rowwise")
    with raises_invalid("epilogue.row_scale", "scale_a"):
        autogemm.fp8_gemm(a, np.ones((m, 1), np.float32), b, np.ones((1, n), np.float32), out=out,
                          scaling="rowwise", row_scale=np.ones(m, np.float32))
    with raises_invalid("a_fp8", "CUDA device memory"):   # every static check passed
        autogemm.fp8_gemm(a, np.ones((m, 1), np.float32), b, np.ones((1, n), np.float32), out=out,
                          scaling="rowwise", bias=np.zeros(n, np.float32), activation="silu")


def test_quantize_checks():
    x = np.zeros((64, 256), np.float32)
    with raises_invalid("x", "CUDA device memory"):
        autogemm.quantize_fp8(x)
    with raises_invalid("x", "bfloat16 or float32"):
        autogemm.quantize_fp8(x.astype(np.float16))
    with raises_invalid("block", r"\(1, 128\) or \(128, 128\)"):
        autogemm.quantize_fp8(x, block=(64, 64))
    with raises_invalid("x", "unit stride"):
        autogemm.quantize_fp8(x[:, ::2])
    with raises_invalid("values", "CUDA device memory"):
        autogemm.dequantize_fp8(np.zeros((64, 256), np.uint8), np.ones((64, 2), np.float32))
    with raises_invalid("scales", r"shape \(1, 2\)"):
        autogemm.dequantize_fp8(np.zeros((64, 256), np.uint8), np.ones((64, 2), np.float32),
                                block=(128, 128))


# --- grouped_gemm: the checks before anything runs (NumPy arrays: no GPU needed) ---------------


def test_grouped_gemm_argument_checks():
    a = np.zeros((256, 128), np.float16)
    b = np.zeros((4, 64, 128), np.float16)
    index = np.zeros(256, np.int32)
    with raises_invalid("group_index / masked_m", "exactly one"):
        autogemm.grouped_gemm(a, b)
    with raises_invalid("group_index", "exactly one"):
        autogemm.grouped_gemm(a, b, group_index=index, masked_m=np.zeros(4, np.int32))
    with raises_invalid("b", "3-D"):
        autogemm.grouped_gemm(a, np.zeros((64, 128), np.float16), group_index=index)
    with raises_invalid("a", "last dimension"):
        autogemm.grouped_gemm(np.zeros((256, 96), np.float16), b, group_index=index)
    with raises_invalid("group_index", "int32"):
        autogemm.grouped_gemm(a, b, group_index=index.astype(np.int64))
    with raises_invalid("group_index", "256 entries"):
        autogemm.grouped_gemm(a, b, group_index=index[:100])
    with raises_invalid("m", "multiple of 128"):
        autogemm.grouped_gemm(a[:200], b, group_index=index[:200])
    with raises_invalid("a", "groups first"):
        autogemm.grouped_gemm(np.zeros((3, 64, 128), np.float16), b,
                              masked_m=np.zeros(4, np.int32))
    with raises_invalid("m (max_m)", "multiple of 64"):
        autogemm.grouped_gemm(np.zeros((4, 100, 128), np.float16), b,
                              masked_m=np.zeros(4, np.int32))
    with raises_invalid("a", "packed"):
        autogemm.grouped_gemm(np.zeros((256, 256), np.float16)[:, :128], b, group_index=index)
    # All checks passed: the arrays are on the host, which the device check names.
    with raises_invalid("a", "CUDA device memory"):
        autogemm.grouped_gemm(a, b, group_index=index, out=np.zeros((256, 64), np.float16))


@pytest.mark.parametrize("masked", [False, True], ids=["contiguous", "masked"])
def test_grouped_gemm_epilogue_checks(masked):
    """The fused epilogue per group: bias and col_scale (groups, N), row_scale per stored row."""
    groups, n, k, max_m = 4, 64, 128, 64
    a = np.zeros((groups, max_m, k) if masked else (groups * 128, k), np.float16)
    b = np.zeros((groups, n, k), np.float16)
    rows = groups * (max_m if masked else 128)
    group = {"masked_m": np.zeros(groups, np.int32)} if masked else \
        {"group_index": np.zeros(rows, np.int32)}
    out = np.zeros((groups, max_m, n) if masked else (rows, n), np.float16)
    row_shape = (groups, max_m) if masked else (rows,)
    with raises_invalid("bias", r"\(groups, N\) = \(4, 64\)"):
        autogemm.grouped_gemm(a, b, **group, out=out, bias=np.zeros(n, np.float32))
    with raises_invalid("bias", "bfloat16 or float32"):
        autogemm.grouped_gemm(a, b, **group, out=out, bias=np.zeros((groups, n), np.float16))
    with raises_invalid("col_scale", "float32"):
        autogemm.grouped_gemm(a, b, **group, out=out, col_scale=np.ones((groups, n)))
    with raises_invalid("row_scale", "(groups, max_m)" if masked else r"\(M,\)"):
        autogemm.grouped_gemm(a, b, **group, out=out, row_scale=np.ones(7, np.float32))
    with raises_invalid("activation", "silu"):
        autogemm.grouped_gemm(a, b, **group, out=out, activation="tanh")
    with raises_invalid("a", "CUDA device memory"):   # every check passed
        autogemm.grouped_gemm(a, b, **group, out=out, bias=np.zeros((groups, n), np.float32),
                              activation="silu", row_scale=np.ones(row_shape, np.float32),
                              col_scale=np.ones((groups, n), np.float32))


def grouped_fp8_args(masked: bool, groups=4, n=320, k=1040, max_m=128):
    """Block-scaled FP8 grouped operands as uint8 bytes (read as e4m3) and float32 scales."""
    kb, nb = -(-k // 128), -(-n // 128)
    rows = groups * max_m
    a = np.zeros((groups, max_m, k) if masked else (rows, k), np.uint8)
    sa = np.ones((groups, max_m, kb) if masked else (rows, kb), np.float32)
    b = np.zeros((groups, n, k), np.uint8)
    sb = np.ones((groups, nb, kb), np.float32)
    group = {"masked_m": np.zeros(groups, np.int32)} if masked else \
        {"group_index": np.zeros(rows, np.int32)}
    out = np.zeros((groups, max_m, n) if masked else (rows, n), np.float32)
    return a, sa, b, sb, group, out


@pytest.mark.parametrize("masked", [False, True], ids=["contiguous", "masked"])
def test_grouped_gemm_fp8_checks(masked):
    a, sa, b, sb, group, out = grouped_fp8_args(masked)
    layout_shape = r"\(4, 128, 9\) = \(groups, max_m" if masked else r"\(512, 9\) = \(M,"
    with raises_invalid("a", "CUDA device memory"):   # every static check passed
        autogemm.grouped_gemm(a, b, **group, a_scales=sa, b_scales=sb, out=out)
    with raises_invalid("a", "CUDA device memory"):   # fp16 output for FP8 inputs is allowed
        autogemm.grouped_gemm(a, b, **group, a_scales=sa, b_scales=sb,
                              out=out.astype(np.float16))
    with raises_invalid("a_scales", r"FP8 inputs need block scales"):
        autogemm.grouped_gemm(a, b, **group, b_scales=sb, out=out)
    with raises_invalid("b_scales", r"FP8 inputs need block scales"):
        autogemm.grouped_gemm(a, b, **group, a_scales=sa, out=out)
    with raises_invalid("a_scales", layout_shape):
        autogemm.grouped_gemm(a, b, **group, a_scales=sa[..., :8], b_scales=sb, out=out)
    with raises_invalid("a_scales", layout_shape):   # the other layout's shape
        autogemm.grouped_gemm(a, b, **group, a_scales=sa.reshape(-1, 9) if masked
                              else sa.reshape(4, 128, 9), b_scales=sb, out=out)
    with raises_invalid("b_scales", r"\(4, 3, 9\) = \(groups, ceil\(N/128\), ceil\(K/128\)\)"):
        autogemm.grouped_gemm(a, b, **group, a_scales=sa, b_scales=sb[:, :2], out=out)
    with raises_invalid("b_scales", r"\(4, 3, 9\)"):   # one group's scales only
        autogemm.grouped_gemm(a, b, **group, a_scales=sa, b_scales=sb[0], out=out)
    with raises_invalid("a_scales", "float32"):
        autogemm.grouped_gemm(a, b, **group, a_scales=sa.astype(np.float64), b_scales=sb,
                              out=out)
    with raises_invalid("b_scales", "packed"):
        transposed = np.ones((4, 9, 3), np.float32).transpose(0, 2, 1)
        autogemm.grouped_gemm(a, b, **group, a_scales=sa, b_scales=transposed, out=out)
    with raises_invalid("b", "a's dtype"):
        autogemm.grouped_gemm(a, b.astype(np.float16), **group, a_scales=sa, b_scales=sb,
                              out=out)
    with raises_invalid("out", "out_dtype's dtype, bfloat16"):
        autogemm.grouped_gemm(a, b, **group, a_scales=sa, b_scales=sb, out=out, out_dtype="bf16")
    with raises_invalid("out_dtype", "bf16, fp16 or fp32"):
        autogemm.grouped_gemm(a, b, **group, a_scales=sa, b_scales=sb, out_dtype="e4m3")
    # Scales with 16-bit inputs.
    a16, b16 = a.astype(np.float16), b.astype(np.float16)
    with raises_invalid("a_scales", "FP8 inputs only, and a is float16"):
        autogemm.grouped_gemm(a16, b16, **group, a_scales=sa, b_scales=sb, out=out)
    with raises_invalid("b_scales", "FP8 inputs only"):
        autogemm.grouped_gemm(a16, b16, **group, b_scales=sb, out=out)


def test_grouped_gemm_fp8_refuses_e5m2():
    # NumPy has no FP8 dtype: _core receives what grouped_gemm passes for torch float8_e5m2
    # tensors, their uint8 view and the kind "e5m2".
    a, sa, b, sb, group, out = grouped_fp8_args(False)
    for a_kind, b_kind, argument in (("e5m2", None, "a"), (None, "e5m2", "b")):
        with raises_invalid(argument, "e4m3.*e5m2 is not supported") as info:
            _core.grouped_gemm(a, b, group["group_index"], None, sa, sb, a_kind, b_kind, out,
                               None, 1.0, 0, None, 0, None, False)
        assert info.value.value == "float8_e5m2"


def test_grouped_gemm_fp8_torch_dtypes():
    torch = pytest.importorskip("torch", reason="torch is not installed (optional)")
    a, sa, b, sb, group, out = [torch.from_numpy(x) if isinstance(x, np.ndarray) else x
                                for x in grouped_fp8_args(False)]
    index = torch.from_numpy(group["group_index"])
    with raises_invalid("a", "e5m2 is not supported"):
        autogemm.grouped_gemm(a.view(torch.float8_e5m2), b.view(torch.float8_e5m2),
                              group_index=index, a_scales=sa, b_scales=sb, out=out)
    with raises_invalid("a", "CUDA device memory"):   # float8_e4m3fn passes every check
        autogemm.grouped_gemm(a.view(torch.float8_e4m3fn), b.view(torch.float8_e4m3fn),
                              group_index=index, a_scales=sa, b_scales=sb, out=out)
    with raises_invalid("b", "a's dtype"):
        autogemm.grouped_gemm(a.view(torch.float8_e4m3fn), b.float(),
                              group_index=index, a_scales=sa, b_scales=sb, out=out)


# --- tuning files ------------------------------------------------------------------------------


def test_load_tuning_file_refuses_what_is_not_a_tuning_file(tmp_path):
    with raises_invalid("path", "cannot be opened"):
        autogemm.load_tuning_file(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{ not json")
    with raises_invalid("path", "is not JSON"):
        autogemm.load_tuning_file(str(tmp_path / "bad.json"))
    (tmp_path / "other.json").write_text(json.dumps({"kind": "something", "format": 1}))
    with raises_invalid("path", "is not a tuning file"):
        autogemm.load_tuning_file(tmp_path / "other.json")


def test_load_tuning_file_ignores_entries_of_another_device(tmp_path):
    key = ("device=Some Other GPU;sms=7;cc=8.0|m=64;n=2112;k=7168;a=bf16;b=bf16;d=bf16;acc=fp32;"
           "layout=nt;lda=7168;ldb=7168;ldc=2112;ldd=2112;scaling=none;reads_c=0|version="
           f"{autogemm.__version__}|kernels=whatever")
    entry = {"key": key, "config": "cuBLASLt", "time_us": 5.0, "candidates": 4,
             "date": "2026-11-29T00:00:00Z", "vendor_algorithms": 8,
             "vendor_algo": {name: 0 for name in (
                 "algo_id", "tile_id", "stages_id", "splitk_num", "reduction_scheme",
                 "cta_swizzling", "custom_option", "inner_shape_id", "cluster_shape_id")}}
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"kind": "autogemm tuning file", "format": 1, "entries": [entry]}))
    load = autogemm.load_tuning_file(path)
    assert load["entries"] == 1 and load["used"] == 0, load
    assert len(load["ignored"]) == 1 and "m=64;n=2112;k=7168" in load["ignored"][0], load


def test_fused_epilogue_checks():
    # Each vector: 1-D, its length (N or M), its dtype, contiguous; the activation's name. The
    # checks come before the device check (host arrays here).
    a, w = f16(64, 128), f16(32, 128)
    with raises_invalid("bias", r"N = 32: needs a 1-D array of N elements") as info:
        autogemm.gemm(a, w, bias=np.zeros(31, np.float32))
    assert info.value.value == "31 elements", info.value
    with raises_invalid("bias", "needs a 1-D array") as info:
        autogemm.gemm(a, w, bias=np.zeros((1, 32), np.float32))
    assert "shape (1, 32)" in info.value.value, info.value
    with raises_invalid("bias", "bfloat16 or float32"):
        autogemm.gemm(a, w, bias=np.zeros(32, np.float16))
    with raises_invalid("row_scale", "M = 64"):
        autogemm.gemm(a, w, row_scale=np.ones(32, np.float32))
    with raises_invalid("col_scale", "float32"):
        autogemm.gemm(a, w, col_scale=np.ones(32, np.float64))
    with raises_invalid("col_scale", "unit stride"):
        autogemm.gemm(a, w, col_scale=np.ones(64, np.float32)[::2])
    with raises_invalid("activation", "silu"):
        autogemm.gemm(a, w, activation="tanh")
    with raises_invalid("a", "CUDA device memory"):   # every epilogue check passed
        autogemm.gemm(a, w, bias=np.zeros(32, np.float32), activation="silu",
                      row_scale=np.ones(64, np.float32), col_scale=np.ones(32, np.float32))


# --- weight-only formats (issue 51) ------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["int4-g128", "int4-g128-zp", "int8", "mxfp4"])
def test_quantize_weight_round_trips_on_the_host(fmt):
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((64, 256)) * 0.05).astype(np.float32)
    qw = autogemm.quantize_weight(w, fmt)
    assert (qw.format, qw.n, qw.k) == (fmt, 64, 256)
    assert qw.q.shape == ((64, 256) if fmt == "int8" else (64, 128))
    assert (qw.zeros is not None) == (fmt == "int4-g128-zp")
    back = autogemm.dequantize_weight(qw)
    assert back.shape == (64, 256) and back.dtype == np.float32
    # Quantising the dequantised values again gives them back exactly (they are on the grid;
    # with zero points the bf16 scale of (max - min) / 15 may round to a neighbour's).
    if fmt != "int4-g128-zp":
        again = autogemm.dequantize_weight(autogemm.quantize_weight(back, fmt))
        assert np.array_equal(again, back)
    # And they are the weight to the format's precision.
    assert np.abs(back - w).max() <= np.abs(w).max() / (6 if fmt.startswith("int4") or fmt == "mxfp4" else 100)


def test_weight_only_checks_name_the_argument():
    w = np.zeros((64, 200), np.float32)
    with raises_invalid("k", "multiple of 128"):
        autogemm.quantize_weight(w, "int4-g128")
    with raises_invalid("format", "int4-g128"):
        autogemm.quantize_weight(np.zeros((64, 256), np.float32), "int3")
    qw = autogemm.quantize_weight(np.ones((64, 256), np.float32), "int4-g128")
    a = np.zeros((4, 256), np.float32)
    with raises_invalid("a", "bfloat16"):
        autogemm.gemm(a, qw)
    with raises_invalid("a", "bfloat16"):
        autogemm.gemm(np.zeros((4, 256), np.float16), qw)


def test_quantize_weight_of_every_expert():
    """A (groups, N, K) weight packs as each expert's would, groups first; gemm() refuses it
    and grouped_gemm() refuses one expert's."""
    rng = np.random.default_rng(6)
    w = (rng.standard_normal((3, 64, 256)) * 0.05).astype(np.float32)
    qw = autogemm.quantize_weight(w, "int4-g128-zp")
    assert (qw.groups, qw.n, qw.k) == (3, 64, 256)
    assert qw.q.shape == (3, 64, 128) and qw.scales.shape == (3, 64, 2) and qw.zeros.shape == (3, 64, 2)
    one = autogemm.quantize_weight(w[1], "int4-g128-zp")
    assert np.array_equal(qw.q[1], one.q) and np.array_equal(qw.zeros[1], one.zeros)
    back = autogemm.dequantize_weight(qw)
    assert back.shape == (3, 64, 256)
    assert np.array_equal(back[1], autogemm.dequantize_weight(one))
    with raises_invalid("b", "grouped_gemm"):
        autogemm.gemm(np.zeros((4, 256), np.float32), qw)
    with raises_invalid("b", "every expert"):
        autogemm.grouped_gemm(np.zeros((3, 64, 256), np.float32), one,
                              masked_m=np.zeros(3, np.int32))
    with raises_invalid("w", "(groups, N, K)"):
        autogemm.quantize_weight(np.zeros((2, 2, 64, 256), np.float32))


def _pack_nibbles_along(values, axis):
    """int32 words of 8 4-bit values along `axis` (value j in bits 4j), as GPTQ packs them."""
    v = np.moveaxis(values.astype(np.uint32), axis, 0)
    v = v.reshape(v.shape[0] // 8, 8, *v.shape[1:])
    words = sum(v[:, j] << np.uint32(4 * j) for j in range(8))
    return np.moveaxis(words.astype(np.uint32).view(np.int32), 0, axis)


def test_import_gptq_is_its_formula():
    rng = np.random.default_rng(9)
    n, k, g = 16, 256, 128
    q = rng.integers(0, 16, (k, n))
    zeros = rng.integers(1, 16, (k // g, n))
    scales = (rng.integers(1, 8, (k // g, n)) / 64).astype(np.float16)   # exact in bf16
    qweight = _pack_nibbles_along(q, 0)                                  # (K/8, N)
    qzeros = _pack_nibbles_along((zeros - 1).T, 0).T                     # (K/G, N/8)
    qw = autogemm.import_gptq(qweight, qzeros, scales)
    assert (qw.format, qw.n, qw.k) == ("int4-g128-zp", n, k)
    want = (scales.astype(np.float32).repeat(g, 0) * (q - zeros.repeat(g, 0))).T
    assert np.array_equal(autogemm.dequantize_weight(qw), want.astype(np.float32))
    with raises_invalid("scales", "must be"):
        autogemm.import_gptq(qweight, qzeros, scales[:, :8])
    with raises_invalid("qweight", "32-bit"):
        autogemm.import_gptq(qweight.astype(np.int64), qzeros, scales)
