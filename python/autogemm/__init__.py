"""autogemm: planned, JIT-compiled GEMMs for NVIDIA GPUs, from Python.

Arrays cross by DLPack without copies: torch tensors, CuPy and JAX arrays (anything with
``__dlpack__``; NumPy too, which is useful only for the errors: autogemm computes on the GPU).

    import torch, autogemm
    a = torch.randn(64, 7168, device="cuda", dtype=torch.bfloat16)     # M x K
    w = torch.randn(2112, 7168, device="cuda", dtype=torch.bfloat16)   # N x K
    d = autogemm.gemm(a, w)                  # layout "nt": d = a @ w.T, on torch's stream
    print(autogemm.plan(64, 2112, 7168))     # what it chose, and why

Streams: for torch inputs the call runs on ``torch.cuda.current_stream()`` of the input's
device, for CuPy inputs on CuPy's current stream; otherwise on ``stream=`` (default 0, the
legacy default stream). ``stream=`` takes an int (a ``cudaStream_t``; 1 and 2 are the runtime's
``cudaStreamLegacy`` and ``cudaStreamPerThread``), or a stream object with
``__cuda_stream__``, ``.cuda_stream`` (torch) or ``.ptr`` (CuPy). torch tensors are exported
with that stream (``__dlpack__(stream=...)``), so torch orders its pending work before the
call; JAX arrays should be ready (``jax.block_until_ready``) before they are passed.

Planning (``plan``), profiling (``profile``) and every argument check work without a GPU.
"""

from __future__ import annotations

import numbers
import os
import sys
import warnings
from typing import Any, Callable, Optional, Tuple, Union

from . import _core
from ._errors import CudaError, Error, InvalidArgument, NoDevice
from ._plan import Candidate, GemmReport, KernelLaunch, Plan, Rejected

__all__ = [
    "gemm", "fp8_gemm", "grouped_gemm", "wgrad", "interleave_gate_up", "quantize_weight",
    "dequantize_weight", "import_gptq", "import_awq", "import_mxfp4", "QuantizedWeight", "quantize_fp8", "dequantize_fp8", "plan", "profile", "device_presets",
    "cpp_enqueue_us", "load_tuning_file", "Plan", "KernelLaunch", "Candidate", "Rejected", "GemmReport", "Error",
    "InvalidArgument", "CudaError", "NoDevice", "__version__",
]

_core.set_error_types(Error, InvalidArgument, CudaError, NoDevice)

__version__: str = _core.version()

Array = Any
"""Any array with ``__dlpack__`` (torch.Tensor, cupy.ndarray, jax.Array, numpy.ndarray)."""
Stream = Union[int, Any, None]
DTypeLike = Union[str, Any, None]


def _framework(x: Any) -> str:
    module = type(x).__module__
    if module.startswith("torch"):
        return "torch"
    if module.startswith("cupy"):
        return "cupy"
    if module.startswith(("jax", "jaxlib")):
        return "jax"
    return module.partition(".")[0]


def _identity(x: Any) -> Any:
    return x


def _explicit_stream(stream: Any) -> int:
    """An int cudaStream_t from what a caller passed as stream=."""
    if isinstance(stream, bool):
        raise InvalidArgument("stream", repr(stream), "must be an int (a cudaStream_t) or a stream")
    if isinstance(stream, int):
        return stream
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    for attribute in ("cuda_stream", "ptr"):
        handle = getattr(stream, attribute, None)
        if isinstance(handle, int):
            return handle
    raise InvalidArgument("stream", repr(stream),
                          "must be an int (a cudaStream_t), or an object with __cuda_stream__, "
                          ".cuda_stream (torch) or .ptr (CuPy)")


def _torch_current_stream(torch: Any, tensor: Any) -> int:
    """The cudaStream_t of torch's current stream on the tensor's device. torch's raw getter
    (what Triton calls) returns the handle without building a Stream object; the public API is
    the fallback where it is missing."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return int(raw(tensor.get_device()))
    return int(torch.cuda.current_stream(tensor.device).cuda_stream)


_torch_exporter: Optional[Callable[[Any], Any]] = None


def _torch_current_stream_exporter(torch: Any) -> Callable[[Any], Any]:
    """How torch tensors cross when the call runs on torch's current stream: DLPack capsules
    from torch's C exporter (torch.utils.dlpack.to_dlpack). Tensor.__dlpack__(stream=-1) makes
    the same capsule after Python-level checks that cost 2.5 us a tensor on the GPU machine's
    host (the call's budget over C++ is 5 us); with nothing to order on the stream they are not
    needed. A tensor that requires grad is read (or, as out, written) without autograd
    recording it, as the detached tensor __dlpack__ would ask for; a CPU tensor exports a CPU
    capsule, which the device check then names."""
    global _torch_exporter, _torch_fast
    if _torch_exporter is None:
        to_dlpack = getattr(torch._C, "_to_dlpack", None) or torch.utils.dlpack.to_dlpack
        tensor = torch.Tensor

        def export(x: Any) -> Any:
            return to_dlpack(x) if isinstance(x, tensor) else x

        _torch_exporter = export
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None:
            _torch_fast = (tensor, raw, export)
    return _torch_exporter


# gemm()'s path for the common call from torch: a plain CUDA tensor, `out` given, torch's
# current stream. (Tensor class, raw current-stream getter, exporter); set by the first torch
# call that takes the general path. It skips the framework and stream dispatch, which cost
# about 1 us of the 5 us a call may add to the C++ one (GPU machine's host).
_torch_fast: Optional[Tuple[type, Callable[[int], int], Callable[[Any], Any]]] = None


def _prepare(framework: str, like: Any, stream: Stream) -> Tuple[int, Callable[[Any], Any]]:
    """The stream a call runs on, and how its arrays are handed to _core.

    torch tensors go as the DLPack capsules of ``__dlpack__(stream=...)``, told the stream the
    call runs on (DLPack's consumer stream): -1 when that is torch's current stream (nothing to
    order), else the handle, so that torch orders its pending work before ours. Tensors that
    require grad are detached (DLPack refuses them). Everything else goes as is: nanobind calls
    ``__dlpack__()`` itself.
    """
    if framework == "torch":
        torch = sys.modules["torch"]
        if like.is_cuda:
            current = _torch_current_stream(torch, like)
            handle = current if stream is None else _explicit_stream(stream)
            # 0 is not a DLPack stream value (1 is the legacy default stream); torch refuses
            # 2 (per-thread default): there the caller orders the work.
            dl_stream: Optional[int] = (-1 if handle in (current, 2)
                                        else 1 if handle == 0 else handle)
        else:
            handle, dl_stream = (0 if stream is None else _explicit_stream(stream)), None
        tensor = torch.Tensor
        if dl_stream == -1:
            return handle, _torch_current_stream_exporter(torch)

        def export(x: Any) -> Any:
            if isinstance(x, tensor):
                if x.requires_grad:
                    x = x.detach()
                if dl_stream is not None and x.is_cuda:
                    return x.__dlpack__(stream=dl_stream)
            return x

        return handle, export
    if stream is not None:
        return _explicit_stream(stream), _identity
    if framework == "cupy":
        return int(sys.modules["cupy"].cuda.get_current_stream().ptr), _identity
    return 0, _identity


def _fp8_bytes(x: Any) -> Tuple[Any, Optional[str]]:
    """A torch float8 tensor as its uint8 view and what the bytes are; else (x, None)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        if x.dtype == torch.float8_e4m3fn:
            return x.view(torch.uint8), "e4m3"
        if x.dtype == torch.float8_e5m2:
            return x.view(torch.uint8), "e5m2"
    return x, None


def _allocator(framework: str, like: Any, export: Callable[[Any], Any],
               made: dict[str, Any]) -> Optional[Callable[[int, int, str], Any]]:
    """How outputs are made for inputs of `framework` (torch and CuPy only). Each new array is
    kept in `made` under its dtype name; what _core receives is its export."""
    if framework == "torch":
        torch = sys.modules["torch"]
        device = like.device

        def alloc_torch(rows: int, cols: int, dtype: str) -> Any:
            t = torch.empty((rows, cols), dtype=getattr(torch, dtype), device=device)
            made[dtype] = t
            return export(t.view(torch.uint8) if dtype == "float8_e4m3fn" else t)

        return alloc_torch
    if framework == "cupy":
        cupy = sys.modules["cupy"]
        device_id = like.device.id

        def alloc_cupy(rows: int, cols: int, dtype: str) -> Any:
            if dtype == "bfloat16":
                raise InvalidArgument("out", "None",
                                      "CuPy has no bfloat16 arrays: pass out= (e.g. a torch "
                                      "tensor) or out_dtype='fp16' / 'fp32'")
            with cupy.cuda.Device(device_id):
                t = cupy.empty((rows, cols), dtype="uint8" if dtype == "float8_e4m3fn" else dtype)
            made[dtype] = t
            return t

        return alloc_cupy
    return None


def _dtype_text(dtype: DTypeLike) -> Optional[str]:
    """'bf16', torch.bfloat16, numpy.float16, jnp.bfloat16, numpy.dtype('float32') -> a name."""
    if dtype is None or isinstance(dtype, str):
        return dtype
    name = getattr(dtype, "name", None)   # numpy.dtype
    if isinstance(name, str):
        return name
    name = getattr(dtype, "__name__", None)   # numpy.float16, ml_dtypes.bfloat16
    if isinstance(name, str):
        return name
    text = str(dtype)   # torch.bfloat16
    return text[len("torch."):] if text.startswith("torch.") else text


_FP8_NAMES = ("fp8", "e4m3", "float8_e4m3fn")


def _fp8_output(out: Optional[Array], out_dtype: DTypeLike) -> bool:
    """Whether D is FP8 (then the call returns (D, scales))."""
    if out is not None:
        return getattr(out, "dtype", None) is not None and str(out.dtype).rpartition(".")[2] in (
            "float8_e4m3fn", "uint8")
    return (_dtype_text(out_dtype) or "").lower() in _FP8_NAMES


def _result(out: Optional[Array], fp8_out: bool, out_scales: Optional[Array],
            made: dict[str, Any]) -> Any:
    """D (``out`` or the new array), and with FP8 output (D, its scales)."""
    if not fp8_out:
        return out if out is not None else next(iter(made.values()))
    d = out if out is not None else made["float8_e4m3fn"]
    return d, out_scales if out_scales is not None else made["float32"]


def interleave_gate_up(gate: Array, up: Array, axis: int = 0) -> Array:
    """B for a gated epilogue (``gemm(..., activation="silu", gated=True)``) from a checkpoint's
    gate and up projections (Llama's w1 / w3, gate_proj / up_proj): both (rows, K) weights, or
    (rows,) biases or column scales, of equal shape and rows a multiple of 8. Returns
    (2 rows, ...) with runs of 8 gate rows and 8 up rows alternating, so column c of the gated
    GEMM's D is act(gate row c) * (up row c). ``axis``: the rows' axis (1 for grouped_gemm's
    (groups, rows, K) experts and (groups, rows) vectors). Works on torch, CuPy and NumPy arrays
    (a new array on the inputs' device). FP8 weights interleave the same way; their 128x128
    scale blocks then mix gate and up rows, so quantise the interleaved weight instead."""
    shape = tuple(gate.shape)
    if tuple(up.shape) != shape:
        raise InvalidArgument("up", f"an array of shape {tuple(up.shape)}",
                              f"must have gate's shape {shape}")
    if not 0 <= axis < len(shape):
        raise InvalidArgument("axis", repr(axis), f"must name one of gate's {len(shape)} axes")
    rows = shape[axis]
    if rows % 8 != 0 or rows == 0:
        raise InvalidArgument("gate", f"an array of shape {shape}",
                              f"gate and up rows (axis {axis}) interleave in runs of 8: they must "
                              "be a positive multiple of 8")
    framework = _framework(gate)
    if framework == "torch":
        stack = sys.modules["torch"].stack
    elif framework == "cupy":
        stack = sys.modules["cupy"].stack
    else:
        import numpy
        stack = numpy.stack
    runs = shape[:axis] + (rows // 8, 8) + shape[axis + 1:]
    both = stack([gate.reshape(runs), up.reshape(runs)], axis + 1)
    return both.reshape(shape[:axis] + (2 * rows,) + shape[axis + 1:])


class QuantizedWeight:
    """A weight W (N, K) packed in a weight-only format (``quantize_weight``), on W's device:
    ``gemm(a, qweight)`` computes a @ W.T from it, dequantising in registers. Quantised from
    (groups, N, K), it is every expert's weight of a mixture-of-experts layer, for
    ``grouped_gemm(a, qweight, masked_m=...)``; each array then has the groups first.

    Attributes:
        format: "int4-g128" (one bfloat16 scale per 128 weights along K, w = (q - 8) * scale),
            "int4-g128-zp" (with a uint8 zero per scale, GPTQ / AWQ: w = (q - zero) * scale),
            "int8" (one float32 scale per row) or "mxfp4" (e2m1 values, an e8m0 scale per 32).
        n, k: W's shape (one expert's).
        groups: the experts, or None for one weight.
        q: the packed values, uint8 (N, K / 2) (4-bit: each run of 8 values one little-endian
            word, value 2i in bits 4i and 2i + 1 in bits 16 + 4i) or int8 (N, K).
        scales: bfloat16 (N, K / 128), uint8 (N, K / 32) for mxfp4, or float32 (N,) for int8.
        zeros: uint8 (N, K / 128) for int4-g128-zp, else None.
    """

    __slots__ = ("format", "n", "k", "q", "scales", "zeros", "groups")

    def __init__(self, format: str, n: int, k: int, q: Array, scales: Array,
                 zeros: Optional[Array] = None, groups: Optional[int] = None) -> None:
        self.format, self.n, self.k = format, int(n), int(k)
        self.q, self.scales, self.zeros = q, scales, zeros
        self.groups = None if groups is None else int(groups)

    @property
    def nbytes(self) -> int:
        """Bytes a GEMM reads of it: values, scales and zeros."""
        parts = (self.q, self.scales, self.zeros)
        return sum(int(x.nbytes) for x in parts if x is not None)

    def __repr__(self) -> str:
        groups = "" if self.groups is None else f"groups={self.groups}, "
        return (f"QuantizedWeight({self.format!r}, {groups}n={self.n}, k={self.k}, "
                f"{self.nbytes / 1e6:.2f} MB)")


def _to_numpy_float32(w: Array) -> Any:
    import numpy
    framework = _framework(w)
    if framework == "torch":
        host = w.detach().float().cpu().numpy()
    elif framework == "cupy":
        host = w.astype("float32").get()
    else:
        host = numpy.asarray(w, dtype=numpy.float32)
    return numpy.ascontiguousarray(host, dtype=numpy.float32)


def _to_like(host: Any, like: Array, dtype_name: str) -> Array:
    """A host NumPy array moved to ``like``'s framework and device, viewed as ``dtype_name``
    (its bytes reinterpreted: "bfloat16" from uint16)."""
    framework = _framework(like)
    if framework == "torch":
        torch = sys.modules["torch"]
        if dtype_name == "bfloat16":   # the scales' bf16 bits, through int16 (fully supported)
            return torch.from_numpy(host.view("int16")).to(like.device).view(torch.bfloat16)
        return torch.from_numpy(host).to(like.device)
    if framework == "cupy":
        return sys.modules["cupy"].asarray(host)   # bfloat16 stays uint16 bytes (no CuPy dtype)
    return host


def quantize_weight(w: Array, format: str = "int4-g128") -> QuantizedWeight:
    """Packs a weight W (N, K), as torch.nn.Linear stores it, into a weight-only format for
    ``gemm(a, qweight)``: "int4-g128" (symmetric, scale = amax / 7 per 128 weights along K),
    "int4-g128-zp" (asymmetric with a zero point, as GPTQ / AWQ), "int8" (scale = amax / 127
    per row) or "mxfp4" (e2m1 values, one e8m0 scale per 32 weights). Quantised on the host (W is
    copied there once), the result placed on W's device. K must be a multiple of 128 (int4) or
    32 (mxfp4); gemm() with an int8 weight needs K a multiple of 16. A (groups, N, K) weight is
    every expert's, packed for ``grouped_gemm(a, qweight, masked_m=...)``."""
    import numpy
    shape = tuple(getattr(w, "shape", ()))
    if len(shape) not in (2, 3):
        raise InvalidArgument("w", f"an array of shape {shape}",
                              "must be a 2-D weight (N, K) or every expert's (groups, N, K)")
    host = _to_numpy_float32(w)
    groups = shape[0] if len(shape) == 3 else None
    host = host.reshape(-1, shape[-1])   # the experts' rows one after another: the same bytes
    n, k = host.shape
    q, scales, zeros = _core.quantize_weight(host, format)
    int8 = format == "int8"
    q_host = numpy.frombuffer(q, dtype=numpy.int8 if int8 else numpy.uint8).reshape(
        n, k if int8 else k // 2)
    if int8:
        s_host = numpy.frombuffer(scales, dtype=numpy.float32).reshape(n)
    elif format == "mxfp4":
        s_host = numpy.frombuffer(scales, dtype=numpy.uint8).reshape(n, k // 32)
    else:
        s_host = numpy.frombuffer(scales, dtype=numpy.uint16).reshape(n, k // 128)
    z_host = numpy.frombuffer(zeros, dtype=numpy.uint8).reshape(n, k // 128) if zeros else None
    s_dtype = "bfloat16" if format in ("int4-g128", "int4-g128-zp") else ""
    if groups is not None:   # (groups x N, ...) -> (groups, N, ...)
        n //= groups
        q_host, s_host = (x.reshape(groups, n, *x.shape[1:]) for x in (q_host, s_host))
        if z_host is not None:
            z_host = z_host.reshape(groups, n, *z_host.shape[1:])
    return QuantizedWeight(format, n, k, _to_like(q_host.copy(), w, ""),
                           _to_like(s_host.copy(), w, s_dtype),
                           None if z_host is None else _to_like(z_host.copy(), w, ""), groups)


def _host_integers(x: Any) -> Any:
    """A checkpoint tensor as a host NumPy array of its own integer bits (fp16 as uint16)."""
    import numpy
    framework = _framework(x)
    if framework == "torch":
        torch = sys.modules["torch"]
        x = x.detach()
        if x.dtype in (torch.float16, torch.bfloat16):
            x = x.view(torch.int16)
        return numpy.ascontiguousarray(x.cpu().numpy())
    if framework == "cupy":
        x = x.get()
    host = numpy.ascontiguousarray(numpy.asarray(x))
    return host.view(numpy.uint16) if host.dtype == numpy.float16 else host


def _imported(parts: Any, like: Array) -> QuantizedWeight:
    import numpy
    format, n, k, q, scales, zeros = parts
    if format == "mxfp4":
        q_host = numpy.frombuffer(q, dtype=numpy.uint8).reshape(n, k // 2)
        s_host = numpy.frombuffer(scales, dtype=numpy.uint8).reshape(n, k // 32)
        return QuantizedWeight(format, n, k, _to_like(q_host.copy(), like, ""),
                               _to_like(s_host.copy(), like, ""))
    q_host = numpy.frombuffer(q, dtype=numpy.uint8).reshape(n, k // 2)
    s_host = numpy.frombuffer(scales, dtype=numpy.uint16).reshape(n, k // 128)
    z_host = numpy.frombuffer(zeros, dtype=numpy.uint8).reshape(n, k // 128)
    return QuantizedWeight(format, n, k, _to_like(q_host.copy(), like, ""),
                           _to_like(s_host.copy(), like, "bfloat16"),
                           _to_like(z_host.copy(), like, ""))


def import_gptq(qweight: Array, qzeros: Array, scales: Array, *,
                group_size: int = 128) -> QuantizedWeight:
    """A GPTQ layer (AutoGPTQ format v1, desc_act off) as an "int4-g128-zp" QuantizedWeight on
    qweight's device: qweight int32 (K/8, N), qzeros int32 (K/G, N/8) holding zero - 1, scales
    float16 (K/G, N). The fp16 scales become bfloat16 (the one rounding); G must be 128."""
    return _imported(_core.import_weight("gptq", _host_integers(qweight),
                                         _host_integers(qzeros), _host_integers(scales),
                                         group_size), qweight)


def import_awq(qweight: Array, qzeros: Array, scales: Array, *,
               group_size: int = 128) -> QuantizedWeight:
    """An AutoAWQ (GEMM) layer as an "int4-g128-zp" QuantizedWeight on qweight's device:
    qweight int32 (K, N/8) and qzeros int32 (K/G, N/8) in AWQ's column order, scales float16
    (K/G, N)."""
    return _imported(_core.import_weight("awq", _host_integers(qweight), _host_integers(qzeros),
                                         _host_integers(scales), group_size), qweight)


def import_mxfp4(blocks: Array, scales: Array) -> QuantizedWeight:
    """A gpt-oss MXFP4 layer (blocks uint8 (N, K/32, 16), e8m0 scales uint8 (N, K/32)) as an
    "mxfp4" QuantizedWeight for ``gemm(a, qweight)``."""
    return _imported(_core.import_weight("mxfp4", _host_integers(blocks), None,
                                         _host_integers(scales), 32), blocks)


def dequantize_weight(qweight: QuantizedWeight) -> Any:
    """The float32 (N, K) values a packed weight stands for, as a NumPy array (on the host):
    exactly the values ``gemm(a, qweight)`` multiplies."""
    import numpy

    def host_bytes(x: Optional[Array]) -> bytes:
        if x is None:
            return b""
        framework = _framework(x)
        if framework == "torch":
            torch = sys.modules["torch"]
            x = x.view(torch.int16) if x.dtype == torch.bfloat16 else x
            return x.cpu().numpy().tobytes()
        if framework == "cupy":
            return x.get().tobytes()
        return numpy.asarray(x).tobytes()

    groups = qweight.groups or 1
    values = _core.dequantize_weight(host_bytes(qweight.q), host_bytes(qweight.scales),
                                     host_bytes(qweight.zeros), qweight.format,
                                     groups * qweight.n, qweight.k)
    shape = (qweight.n, qweight.k) if qweight.groups is None else (groups, qweight.n, qweight.k)
    return numpy.frombuffer(values, dtype=numpy.float32).reshape(shape)


def _autotune(autotune: Optional[int]) -> int:
    if autotune is None:
        return -1
    if isinstance(autotune, bool) or not isinstance(autotune, int) or autotune < 0:
        raise InvalidArgument("autotune", repr(autotune),
                              "must be None ($AUTOGEMM_AUTOTUNE) or a count >= 0 (0 = off)")
    return autotune


def _config_text(config: Union[str, Plan, None]) -> Optional[str]:
    if config is None or isinstance(config, str):
        return config
    if isinstance(config, Plan):
        return config.config
    raise InvalidArgument("config", repr(config),
                          "must be a configuration text (as plan() gives it) or a Plan")


def gemm(a: Array, b: Array, *, out: Optional[Array] = None, c: Optional[Array] = None,
         alpha: float = 1.0, beta: float = 0.0, layout: str = "nt",
         out_dtype: DTypeLike = None, config: Union[str, Plan, None] = None,
         autotune: Optional[int] = None, stream: Stream = None, vendor_fallback: bool = True,
         return_report: bool = False, bias: Optional[Array] = None,
         activation: Optional[str] = None, row_scale: Optional[Array] = None,
         col_scale: Optional[Array] = None, gated: bool = False,
         out_scales: Optional[Array] = None) -> Any:
    """D = alpha * op(a) @ op(b) + beta * C, on the GPU; returns D (``out`` when given), or
    (D, scales) with FP8 output.

    With the fused epilogue (any of bias, activation, row_scale, col_scale):
    D = act(alpha * op(a) @ op(b) * row_scale[m] * col_scale[n] + bias[n]) + beta * C, in
    fp32 inside the GEMM's kernel before D is rounded (no second kernel over D).

    Args:
        a, b: 2-D bfloat16 or float16 CUDA arrays (both the same type), as stored; or b a
            ``QuantizedWeight`` (``quantize_weight``: int4 or int8 weights, dequantised in
            registers) with a bfloat16 (M, K) and layout "nt". ``layout``
            names how: its first letter is a, the second b; ``n`` = stored in its natural
            row-major shape (a: M x K, b: K x N), ``t`` = stored transposed (a: K x M,
            b: N x K). The default ``"nt"`` is a (M, K) and b (N, K), both K-contiguous:
            ``D = a @ b.T`` (a weight stored N x K, as torch.nn.Linear stores it).
            ``"auto"``: a and b are the operands of ``a @ b`` ((M, K) and (K, N)), each
            row-major or a transposed view (``w.T``); the layout follows from their strides.
            Rows may be padded (stride[0] >= shape[1]); the last dimension must have unit
            stride. A row stride that is not a multiple of 16 bytes runs through cuBLASLt.
        out: where D goes: (M, N), bfloat16 / float16 / float32, rows may be padded. When
            None, a new array of a's framework (torch: on a's device; CuPy); other frameworks
            (JAX: immutable) must pass ``out``.
        c: C (M x N, D's type), read when ``beta != 0``; without it, ``out`` is C
            (accumulate: D = alpha * A B + beta * D).
        out_dtype: D's type when ``out`` is None: "bf16", "fp16", "fp32" (or a torch / NumPy
            dtype); default a's type. "fp8" (e4m3, torch.float8_e4m3fn): D quantised by the
            epilogue with one float32 scale per row per 128 columns, amax / 448 of them (the
            rule of quantize_fp8), returned with D as (D, scales), scales (M, ceil(cols / 128)):
            exactly fp8_gemm's a_scales, so the next FP8 GEMM takes both as they are. No C.
        config: force a configuration (the text ``plan()`` prints, or a Plan; "cuBLASLt" forces
            the vendor path); it goes through the same rules as the planner's choices.
        autotune: time this many of the planner's best configurations on the first call of a
            problem and keep the fastest; None: $AUTOGEMM_AUTOTUNE (default 0, off).
        stream: see the module's docstring (torch inputs: torch's current stream).
        vendor_fallback: allow cuBLASLt where our kernel cannot serve the call, or where it is
            predicted faster than copying unaligned rows for ours (False: those copies, and
            InvalidArgument where no kernel of ours serves the call).
        return_report: return ``(D, GemmReport)``: the configuration that ran and why.
        bias: (N,) bfloat16 or float32 CUDA vector, added per column.
        activation: None, "relu", "gelu_tanh" ("gelu"), "gelu_erf" or "silu", after the bias.
        row_scale: (M,) float32, multiplies row m (per-token scaling).
        col_scale: (N,) float32, multiplies column n (per-channel scaling).
            The vectors must be contiguous (a slice of a longer vector is fine). A fused call
            runs on autogemm's kernels, never cuBLASLt.
        gated: gated MLP (SwiGLU with activation="silu", GeGLU with "gelu_tanh" / "gelu_erf"):
            b holds the gate and up projections with rows interleaved in runs of 8
            (``interleave_gate_up``), bias and col_scale likewise; D = act(gate) * up has
            N / 2 columns. N must be a multiple of 16.
        out_scales: with FP8 output, where the scales go (float32, (M, ceil(cols / 128)),
            packed); None: a new array.

    Raises:
        InvalidArgument: a wrong dtype, shape, stride, device, layout or configuration;
            ``.argument``, ``.value`` and ``.rule`` say which and why.
        CudaError: CUDA, NVRTC or cuBLASLt failed. NoDevice: no usable GPU.
    """
    weights = b if isinstance(b, QuantizedWeight) else None
    if weights is not None:
        if weights.groups is not None:
            raise InvalidArgument("b", repr(weights),
                                  "every expert's weight: grouped_gemm(a, b, masked_m=...)")
        b = weights.q
    fast = _torch_fast
    if (fast is not None and weights is None and type(a) is fast[0] and out is not None and
            stream is None and out.element_size() != 1):
        device = a.get_device()
        if device >= 0:
            export = fast[2]
            _, report = _core.gemm(
                export(a), export(b), export(out), None if c is None else export(c), layout,
                None if out_dtype is None else _dtype_text(out_dtype), float(alpha),
                float(beta), None if config is None else _config_text(config),
                -1 if autotune is None else _autotune(autotune), bool(vendor_fallback),
                fast[1](device), None, return_report,
                None if bias is None else export(bias), activation,
                None if row_scale is None else export(row_scale),
                None if col_scale is None else export(col_scale), bool(gated), None)
            return (out, GemmReport(*report)) if return_report else out
    framework = _framework(a)
    handle, export = _prepare(framework, a, stream)
    made: dict[str, Any] = {}
    fp8_out = _fp8_output(out, out_dtype)
    alloc = _allocator(framework, a, export, made)
    _, report = _core.gemm(
        export(a), export(b), export(_fp8_bytes(out)[0]), export(c), layout,
        _dtype_text(out_dtype), float(alpha), float(beta), _config_text(config),
        _autotune(autotune), bool(vendor_fallback), handle, alloc, bool(return_report),
        export(bias), activation, export(row_scale), export(col_scale), bool(gated),
        export(out_scales), None if weights is None else weights.format,
        None if weights is None else export(weights.scales),
        None if weights is None else export(weights.zeros))
    result = _result(out, fp8_out, out_scales, made)
    if return_report:
        return result, GemmReport(*report)
    return result


def wgrad(dy: Array, x: Array, *, out: Optional[Array] = None, accumulate: bool = True,
          group_ends: Any = None, expected_tokens: Optional[int] = None, fp8: bool = False,
          config: Union[str, Plan, None] = None, autotune: Optional[int] = None,
          stream: Stream = None, return_report: bool = False) -> Any:
    """The weight gradient of a linear layer y = x @ w.T: dW = dy.T @ x over the tokens; with
    ``group_ends``, one per expert of a mixture-of-experts layer, over that expert's tokens.

    Args:
        dy: (T, N) bfloat16 or float16, the output gradient, token-major as stored.
        x: (T, K), the layer's input, same dtype.
        out: dW, float32 (N, K), or (G, N, K) with ``group_ends``. With ``accumulate`` (the
            default) dW += dy.T @ x in place, as gradients accumulate over micro-batches, and
            ``out`` is required (None raises InvalidArgument, as it has nothing to add to);
            without it, dW = dy.T @ x (a new float32 array when out is None).
        group_ends: the grouped form (include/autogemm/wgrad.hpp): the tokens of the G experts
            are concatenated in dy and x, and group g covers tokens
            [group_ends[g - 1], group_ends[g]) (group 0 from token 0), so that
            out[g] (+)= dy[s:e].T @ x[s:e], all groups in one launch. G = len(group_ends) >= 1,
            N (dy's columns) a multiple of 64, dy, x and out packed. Either

            * a CUDA int32 array on dy's device, used as is: no copy and no host
              synchronisation, so the call can be captured in a CUDA graph and replayed with
              new ends written into the same array. The kernel never reads or writes out of
              bounds: a group starts at clamp(group_ends[g - 1], 0, T) and ends at
              clamp(group_ends[g], its start, T), so ends out of order make empty groups and
              ends past T stop at T. A device array of another dtype is refused; or
            * host integers (a sequence of ints, a NumPy array, a CPU tensor), checked first
              (each end >= the one before, >= 0 and <= T; InvalidArgument names the group) and
              copied to the device as int32 on the call's stream. This needs torch or CuPy
              inputs (the copy is their array) and is not graph-capturable.

            A group without tokens is not computed: its dW is left as it was (with accumulate,
            dW += 0). A new out (``accumulate=False``, out None) is therefore made zeroed, so
            those groups read 0; a given out keeps its values there.
        expected_tokens: with group_ends, the tokens a group typically has, for planning
            (default: T / G).
        fp8: quantise dy and x to e4m3 along the tokens, one scale per 128 (``quantize_fp8(...,
            transpose=True)``: dy.T and x.T in one pass each), and run the FP8 GEMM with 1x128
            scales on both (``fp8_gemm(..., scaling="1x128")``, DeepGEMM's "1D1D"). Dense form
            only; T a multiple of 16. To reuse quantised copies, call fp8_gemm yourself.
        config, stream, return_report: as gemm(). autotune: as gemm() for the dense form; the
            grouped form runs the planner's choice or ``config`` (a count > 0 is refused: the
            groups' sizes live on the device).

    The dense form is gemm(dy, x, layout="tn") into fp32 with C = dW: planned, explained
    (``autogemm plan --wgrad``) and tuned like any GEMM.
    """
    if accumulate and out is None:
        raise InvalidArgument("out", "None",
                              "accumulate=True adds into out: pass the float32 gradient (or "
                              "accumulate=False for a new one)")
    if out is not None and str(getattr(out, "dtype", "")).rpartition(".")[2] != "float32":
        raise InvalidArgument("out", str(getattr(out, "dtype", type(out).__name__)),
                              "a weight gradient accumulates in float32")
    if fp8:
        if group_ends is not None:
            raise InvalidArgument("fp8", "True",
                                  "experts' FP8 weight gradients are not built: bf16 or fp16 "
                                  "with group_ends")
        if expected_tokens is not None:
            raise InvalidArgument("expected_tokens", repr(expected_tokens),
                                  "plans the grouped form: give group_ends too, or leave it None")
        # The copies are the framework's arrays, freed when this returns: their memory is
        # reused in the order of the stream they were made on, which must be the call's.
        framework = _framework(dy)
        handle, _ = _prepare(framework, dy, stream)
        if _allocation_stream(framework, dy, handle) != handle:
            raise InvalidArgument("stream", repr(stream),
                                  "fp8=True makes its quantised copies on the framework's "
                                  "current stream and must run there: leave stream None, or "
                                  "quantise with quantize_fp8(..., transpose=True) and call "
                                  "fp8_gemm(..., scaling=\"1x128\")")
        dy_t, dy_scales = quantize_fp8(dy, (1, 128), transpose=True, stream=stream)
        x_t, x_scales = quantize_fp8(x, (1, 128), transpose=True, stream=stream)
        return fp8_gemm(dy_t, dy_scales, x_t, x_scales, out=out, out_dtype="fp32",
                        c=out if accumulate else None, beta=1.0 if accumulate else 0.0,
                        scaling="1x128", config=config, autotune=autotune, stream=stream,
                        vendor_fallback=False, return_report=return_report)
    if group_ends is not None:
        return _grouped_wgrad(dy, x, out, bool(accumulate), group_ends,
                              _expected_tokens(expected_tokens), config, autotune, stream,
                              bool(return_report))
    if expected_tokens is not None:
        raise InvalidArgument("expected_tokens", repr(expected_tokens),
                              "plans the grouped form: give group_ends too, or leave it None")
    return gemm(dy, x, out=out, beta=1.0 if accumulate else 0.0, layout="tn",
                out_dtype="fp32" if out is None else None, config=config, autotune=autotune,
                stream=stream, return_report=return_report)


def _expected_tokens(expected_tokens: Optional[int]) -> int:
    """expected_tokens as _core takes it: 0 for None (T / G)."""
    if expected_tokens is None:
        return 0
    if (isinstance(expected_tokens, bool) or not isinstance(expected_tokens, numbers.Integral)
            or expected_tokens < 0):
        raise InvalidArgument("expected_tokens", repr(expected_tokens),
                              "must be None or an int >= 0 (0: tokens / groups)")
    return int(expected_tokens)


def _on_device(array: Any) -> bool:
    """Whether an array lives in GPU memory: a DLPack device other than the CPU (1) and CUDA
    pinned host memory (3). Sequences and other host objects are not."""
    device = getattr(array, "__dlpack_device__", None)
    return device is not None and int(device()[0]) not in (1, 3)


def _host_end_array(group_ends: Any) -> list[Any]:
    """A host array of group ends (NumPy, a CPU tensor, anything NumPy reads) as a list."""
    import numpy
    source = group_ends.detach() if _framework(group_ends) == "torch" else group_ends
    dtype = str(getattr(group_ends, "dtype", type(group_ends).__name__))
    try:
        array = numpy.asarray(source)
    except (TypeError, ValueError, RuntimeError):
        raise InvalidArgument("group_ends", dtype,
                              "host group ends must be integers (token indices)") from None
    if array.ndim != 1:
        raise InvalidArgument("group_ends", f"an array of shape {tuple(array.shape)}",
                              "must be 1-D: one end per group")
    if array.dtype.kind not in "iu":
        raise InvalidArgument("group_ends", dtype,
                              "host group ends must be integers (token indices)")
    return array.tolist()


def _host_group_ends(group_ends: Any) -> list[int]:
    """Host group ends as a list of ints for _core, which checks them (check_group_ends:
    not decreasing, within the tokens) and copies them to the device as int32."""
    if hasattr(group_ends, "__dlpack_device__") or hasattr(group_ends, "__array__"):
        values = _host_end_array(group_ends)
    elif isinstance(group_ends, (str, bytes)) or not hasattr(group_ends, "__iter__"):
        raise InvalidArgument("group_ends", type(group_ends).__name__,
                              "must be a CUDA int32 array, or host integers (a sequence of "
                              "ints, a NumPy array, a CPU tensor)")
    else:
        values = list(group_ends)
    for g, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise InvalidArgument(f"group_ends[{g}]", repr(value),
                                  f"must be an integer: the token where group {g} ends")
        if not -2**63 <= int(value) < 2**63:   # the rest is check_group_ends' to say
            raise InvalidArgument(f"group_ends[{g}]", str(int(value)),
                                  f"group {g} must end at a token index (0 .. tokens)")
    return [int(value) for value in values]


def _wgrad_allocator(framework: str, like: Any, export: Callable[[Any], Any],
                     made: dict[str, Any]) -> Optional[Callable[[int, int, str], Any]]:
    """How a grouped wgrad makes its arrays for torch and CuPy inputs (None otherwise): dW
    ("float32", zeros: a group without tokens is not computed, so a new dW reads 0 there) and
    the device copy of host group ends ("int32", which _core fills). Each stays in ``made``
    until wgrad returns, after the launch.

    The rule their lifetime relies on: both frameworks' pools are stream-ordered. An array is
    made on the framework's current stream (torch's caching allocator; CuPy's memory pool,
    which keeps free blocks per stream), and once dropped its block goes only to later work of
    that stream, which runs after the call's kernel. When the call runs on another stream
    (stream=), _core joins the two: the call waits for the allocation stream (the zero fill),
    and the allocation stream for the call."""
    if framework == "torch":
        torch = sys.modules["torch"]
        device = like.device

        def alloc_torch(rows: int, cols: int, dtype: str) -> Any:
            make = torch.zeros if dtype == "float32" else torch.empty
            made[dtype] = make((rows, cols), dtype=getattr(torch, dtype), device=device)
            return export(made[dtype])

        return alloc_torch
    if framework == "cupy":
        cupy = sys.modules["cupy"]
        device_id = like.device.id

        def alloc_cupy(rows: int, cols: int, dtype: str) -> Any:
            make = cupy.zeros if dtype == "float32" else cupy.empty
            with cupy.cuda.Device(device_id):
                made[dtype] = make((rows, cols), dtype=dtype)
            return made[dtype]

        return alloc_cupy
    return None


def _allocation_stream(framework: str, like: Any, call_stream: int) -> int:
    """The stream the allocator's arrays are ordered on: the framework's current stream on
    like's device (the call's own stream for other frameworks, which allocate nothing)."""
    if framework == "torch" and like.is_cuda:
        return _torch_current_stream(sys.modules["torch"], like)
    if framework == "cupy":
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(like.device.id):
            return int(cupy.cuda.get_current_stream().ptr)
    return call_stream


def _grouped_wgrad(dy: Array, x: Array, out: Optional[Array], accumulate: bool,
                   group_ends: Any, expected_tokens: int, config: Union[str, Plan, None],
                   autotune: Optional[int], stream: Stream, return_report: bool) -> Any:
    """wgrad() with group_ends: dW (G, N, K), out or a new zeroed array."""
    framework = _framework(dy)
    handle, export = _prepare(framework, dy, stream)
    host_ends = None if _on_device(group_ends) else _host_group_ends(group_ends)
    made: dict[str, Any] = {}
    allocates = out is None or host_ends is not None
    alloc = _wgrad_allocator(framework, dy, export, made) if allocates else None
    alloc_stream = _allocation_stream(framework, dy, handle) if alloc is not None else handle
    _, report = _core.grouped_wgrad(
        export(dy), export(x), export(out), None if host_ends is not None else export(group_ends),
        host_ends, accumulate, expected_tokens, _config_text(config), _autotune(autotune),
        handle, alloc_stream, alloc, return_report)
    result = out if out is not None else made["float32"].reshape(-1, dy.shape[1], x.shape[1])
    if return_report:
        return result, GemmReport(*report)
    return result


def fp8_gemm(a_fp8: Array, a_scales: Array, b_fp8: Array, b_scales: Array, *,
             out: Optional[Array] = None, out_dtype: DTypeLike = "bf16",
             c: Optional[Array] = None, alpha: float = 1.0, beta: float = 0.0,
             scaling: str = "block", config: Union[str, Plan, None] = None,
             autotune: Optional[int] = None, stream: Stream = None,
             vendor_fallback: bool = True, return_report: bool = False,
             bias: Optional[Array] = None, activation: Optional[str] = None,
             row_scale: Optional[Array] = None, col_scale: Optional[Array] = None,
             gated: bool = False, out_scales: Optional[Array] = None) -> Any:
    """Block-scaled FP8 GEMM: D = alpha * (a * sa) @ (b * sb).T + beta * C (layout nt).

    Args:
        a_fp8: (M, K) e4m3 values: torch.float8_e4m3fn (or e5m2), or uint8 bytes read as e4m3
            (CuPy has no FP8 dtype); rows may be padded, K contiguous.
        a_scales: float32 (M, ceil(K/128)), packed: one scale per row per 128 of K ("1x128").
        b_fp8: (N, K) e4m3 values, K contiguous.
        b_scales: float32 (ceil(N/128), ceil(K/128)), packed: one per 128 x 128 block.
            ``quantize_fp8(x, (1, 128))`` and ``quantize_fp8(w, (128, 128))`` make both.
            With ``scaling="1x128"`` b_scales is (N, ceil(K/128)) like a_scales, one per row of
            b per 128 of K (weight gradients: ``quantize_fp8(x, transpose=True)`` makes both).
            With ``scaling="per_tensor"`` each is a single float32; with ``scaling="rowwise"``
            (per token and per channel, PyTorch's rowwise ``_scaled_mm``) a_scales has M floats
            and b_scales N, shapes (M,) or (M, 1) and (N,), (1, N) or (N, 1), applied after the
            sum by the fused epilogue (so row_scale and col_scale are not taken with it).
        out, out_dtype: D (M, N): bf16 (default), fp16, fp32, or fp8 with its scales, as
            gemm() (returns (D, scales): the next fp8_gemm's a and a_scales).
        c, alpha, beta, config, autotune, stream, vendor_fallback, return_report: as gemm().
        bias, activation, row_scale, col_scale, gated, out_scales: the fused epilogue, as
            gemm(). A gated FP8 GEMM writes bf16, fp16 or fp32 (its tiles are too narrow for
            whole 128-column scale groups of D).
    """
    framework = _framework(a_fp8)
    handle, export = _prepare(framework, a_fp8, stream)
    a_fp8, a_kind = _fp8_bytes(a_fp8)
    b_fp8, b_kind = _fp8_bytes(b_fp8)
    made: dict[str, Any] = {}
    fp8_out = _fp8_output(out, out_dtype)
    alloc = _allocator(framework, a_fp8, export, made)
    _, report = _core.fp8_gemm(
        export(a_fp8), export(a_scales), export(b_fp8), export(b_scales),
        export(_fp8_bytes(out)[0]), export(c), a_kind, b_kind, scaling,
        # Given an out, its dtype decides unless out_dtype is named (then both must agree).
        _dtype_text(out_dtype) if out is None or out_dtype != "bf16" else None,
        float(alpha), float(beta), _config_text(config), _autotune(autotune),
        bool(vendor_fallback), handle, alloc, bool(return_report), export(bias), activation,
        export(row_scale), export(col_scale), bool(gated), export(out_scales))
    result = _result(out, fp8_out, out_scales, made)
    if return_report:
        return result, GemmReport(*report)
    return result


def grouped_gemm(a: Array, b: Array, *, group_index: Optional[Array] = None,
                 masked_m: Optional[Array] = None, a_scales: Optional[Array] = None,
                 b_scales: Optional[Array] = None, out: Optional[Array] = None,
                 expected_m: Optional[int] = None, out_dtype: DTypeLike = None,
                 alpha: float = 1.0, config: Union[str, Plan, None] = None,
                 stream: Stream = None, return_report: bool = False,
                 bias: Optional[Array] = None, activation: Optional[str] = None,
                 row_scale: Optional[Array] = None, col_scale: Optional[Array] = None,
                 gated: bool = False) -> Any:
    """Grouped (mixture-of-experts) GEMM: D_g = alpha * A_g @ b[g].T for every group g, in one
    launch, with no host synchronisation (CUDA-graph capturable).

    Give exactly one of ``group_index`` and ``masked_m`` (int32 CUDA arrays); it picks the layout:

    * contiguous (``group_index``): a is (M, K), the groups' rows concatenated, each group's run
      starting at a multiple of 128 rows; ``group_index[row]`` is the row's group or -1 for a
      padding row. Returns (M, N); padding rows of D are unspecified.
    * masked (``masked_m``): a is (groups, max_m, K), max_m a multiple of 64; only the first
      ``masked_m[g]`` rows of group g are computed. Returns (groups, max_m, N); rows past
      ``masked_m[g]`` are not written (``out`` keeps what it held; a new output holds garbage
      there). Values above max_m count as max_m.

    b is (groups, N, K) (a weight per expert, stored as torch.nn.Linear stores it); a, b and out
    are packed (contiguous). Or b is every expert's weight packed (``quantize_weight`` of the
    (groups, N, K) weight: int4, int8 or mxfp4), with bfloat16 a in the masked layout (a MoE
    decode step; up to 256 rows per expert): dequantised in registers on the decode kernels.

    Types: a and b both bfloat16 or both float16; or both block-scaled FP8 e4m3
    (torch.float8_e4m3fn, or uint8 bytes read as e4m3, as CuPy carries them; e5m2 is refused),
    which needs float32, packed scales (``quantize_fp8`` makes both values and scales):

    * ``a_scales``: one per stored row of a per 128 of K (1x128): (M, ceil(K/128)) for the
      contiguous layout, (groups, max_m, ceil(K/128)) for the masked one
      (``quantize_fp8(a.reshape(-1, K), (1, 128))``, its scales reshaped).
    * ``b_scales``: (groups, ceil(N/128), ceil(K/128)), one per 128 x 128 block of each group
      (``quantize_fp8(b[g], (128, 128))`` per group, stacked).

    Scales with 16-bit inputs, or FP8 without them, raise InvalidArgument.

    ``out_dtype``: bf16, fp16 or fp32; default: ``out``'s dtype when ``out`` is given, else a's
    type (bf16 for FP8). ``expected_m``: the valid rows a group typically has, for planning
    (default: M / groups, or max_m). ``config``, ``stream``, ``return_report``: as gemm().

    The fused epilogue, as gemm()'s, per group: ``bias`` (bfloat16 or float32) and ``col_scale``
    (float32) are (groups, N), each group's own; ``row_scale`` (float32) has one scale per stored
    row, (M,) contiguous or (groups, max_m) masked; ``activation`` as gemm(). All packed.
    ``gated``: every expert's gate and up projections interleaved (``interleave_gate_up`` on each
    group's weight, bias and col_scale) and D = act(gate) * up with N / 2 columns, as gemm().
    """
    weights = b if isinstance(b, QuantizedWeight) else None
    if weights is not None:
        if weights.groups is None:
            raise InvalidArgument("b", repr(weights), "one weight: quantize_weight((groups, N, K)) "
                                  "packs every expert's, or gemm(a, b) multiplies by it")
        b = weights.q
    framework = _framework(a)
    handle, export = _prepare(framework, a, stream)
    a, a_kind = _fp8_bytes(a)
    b, b_kind = (b, None) if weights is not None else _fp8_bytes(b)
    made: dict[str, Any] = {}
    alloc = None if out is not None else _allocator(framework, a, export, made)
    if expected_m is not None and (isinstance(expected_m, bool) or not isinstance(expected_m, int)
                                   or expected_m < 0):
        raise InvalidArgument("expected_m", repr(expected_m), "must be None or an int >= 0")
    _, report = _core.grouped_gemm(
        export(a), export(b), export(group_index), export(masked_m), export(a_scales),
        export(b_scales), a_kind, b_kind, export(out), _dtype_text(out_dtype), float(alpha),
        int(expected_m or 0), _config_text(config), handle, alloc, bool(return_report),
        export(bias), activation, export(row_scale), export(col_scale), bool(gated),
        None if weights is None else weights.format,
        None if weights is None else export(weights.scales),
        None if weights is None else export(weights.zeros))
    if out is not None:
        result = out
    else:
        result = next(iter(made.values()))
        if masked_m is not None:   # allocated as (groups * max_m, N)
            result = result.reshape(a.shape[0], a.shape[1], -1)
    if return_report:
        return result, GemmReport(*report)
    return result


def _block_rows(block: Tuple[int, int]) -> int:
    try:
        rows, cols = block
    except (TypeError, ValueError):
        rows, cols = -1, -1
    if (rows, cols) not in ((1, 128), (128, 128)):
        raise InvalidArgument("block", repr(block), "must be (1, 128) or (128, 128)")
    return int(rows)


def quantize_fp8(x: Array, block: Tuple[int, int] = (1, 128), *,
                 out: Optional[Tuple[Array, Array]] = None, transpose: bool = False,
                 stream: Stream = None) -> Tuple[Array, Array]:
    """FP8 e4m3 values and float32 scales of x (bfloat16 or float32, 2-D, rows may be padded).

    ``block=(1, 128)``: one scale per row per 128 columns (activations, fp8_gemm's A);
    ``block=(128, 128)``: one per 128 x 128 block (weights, fp8_gemm's B).
    ``transpose=True`` (block (1, 128)): x^T's values (cols, rows) and its scales (cols,
    ceil(rows/128)), one per column of x per 128 rows, in one pass: the operands of an FP8
    weight gradient, whose K is the tokens (x's rows, a multiple of 16). The rule is
    include/autogemm/quantize.hpp's: scale = max(amax / 448, 2^-126), q = e4m3(x / scale).
    Returns ``(values, scales)``: torch float8_e4m3fn and float32 tensors for torch inputs,
    uint8 and float32 CuPy arrays for CuPy inputs; other frameworks pass ``out=(values,
    scales)`` (uint8 or float8_e4m3fn, float32).
    """
    rows = _block_rows(block)
    framework = _framework(x)
    handle, export = _prepare(framework, x, stream)
    values = scales = None
    if out is not None:
        values, scales = out
        values = _fp8_bytes(values)[0]
    made: dict[str, Any] = {}
    alloc = _allocator(framework, x, export, made) if out is None else None
    _core.quantize_fp8(export(x), export(values), export(scales), rows, handle, alloc,
                       bool(transpose))
    if out is not None:
        return out
    return made["float8_e4m3fn"], made["float32"]


def dequantize_fp8(values: Array, scales: Array, block: Tuple[int, int] = (1, 128), *,
                   out: Optional[Array] = None, out_dtype: DTypeLike = "bf16",
                   stream: Stream = None) -> Array:
    """The inverse of quantize_fp8: float(q) * scale, as bfloat16 (default) or float32."""
    rows = _block_rows(block)
    framework = _framework(values)
    handle, export = _prepare(framework, values, stream)
    made: dict[str, Any] = {}
    alloc = _allocator(framework, values, export, made) if out is None else None
    _core.dequantize_fp8(export(_fp8_bytes(values)[0]), export(scales), rows, export(out),
                         _dtype_text(out_dtype) or "bf16", handle, alloc)
    return out if out is not None else next(iter(made.values()))


def _integer(name: str, value: Any) -> int:
    """``value`` as the int argument ``name`` of a C++ call, which checks its range; an
    InvalidArgument naming ``name`` for anything else. int() took 64.7 as 64 and True as 1, and a
    value past 64 bits or None was a TypeError from the binding."""
    # numbers.Integral takes numpy's integers too; bool is one, but True is no size.
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidArgument(name, repr(value), "must be an integer")
    if not -2**63 <= int(value) < 2**63:
        raise InvalidArgument(name, str(int(value)), "must fit in 64 bits (sizes are below 2^31)")
    return int(value)


def plan(m: int, n: int, k: int, dtype: str = "bf16", device: Union[int, str, None] = None,
         layout: str = "nt", *, out_dtype: Optional[str] = None, lda: int = 0, ldb: int = 0,
         ldd: int = 0) -> Plan:
    """The planner's choice for an M x N x K GEMM, and why (``autogemm plan``). No GPU needed.

    Args:
        dtype: "bf16", "fp16" or "fp8" (e4m3 with 1x128 / 128x128 block scales, bf16 out).
        device: a GPU ordinal (0, 1, ...) or a preset name (``device_presets()``: "h100-sxm",
            "h200", ...). None: GPU 0, or the h100-sxm preset with a RuntimeWarning when this
            machine has no GPU.
        layout: "nt", "nn", "tn" or "tt" (see gemm()).
        out_dtype, lda, ldb, ldd: the output type and leading dimensions (0 = packed).

    Raises:
        InvalidArgument: a bad size, type, layout or preset. NoDevice: an ordinal without a GPU.
    """
    spec = None if device is None else str(device)
    d = _core.plan(_integer("m", m), _integer("n", n), _integer("k", k), str(dtype), str(layout),
                   spec, _dtype_text(out_dtype), _integer("lda", lda), _integer("ldb", ldb),
                   _integer("ldd", ldd))
    if d["note"]:
        warnings.warn(d["note"], RuntimeWarning, stacklevel=2)
    return Plan._from_dict(d)


def profile(device: Union[int, str, None] = None) -> dict[str, Any]:
    """This machine as ``autogemm profile --json`` describes it: {"cpu", "gpus",
    "gpu_unavailable_reason" (no GPU), "peer_access" (several)}; with ``device`` (an ordinal
    or a preset name) that one GPU's description instead. Raises NoDevice for an ordinal on a
    machine without a GPU."""
    return _core.profile(None if device is None else str(device))


def load_tuning_file(path: Union[str, "os.PathLike[str]"]) -> dict[str, Any]:
    """Makes a tuning file's entries (``autogemm tune --export FILE``) this process's choices.

    gemm() then runs each problem the file holds with the file's winner (one of our
    configurations or a cuBLASLt algorithm) without timing anything, ahead of the tuning record
    and of autotuning; AUTOGEMM_TUNING_FILE=FILE does the same on the first call. Entries made on
    another GPU model or by another build are ignored, each logged (AUTOGEMM_LOG >= 2) with the
    field that differs.

    Returns ``{"entries": n, "used": n, "ignored": [why, ...]}``. Raises InvalidArgument naming
    the file for one that cannot be read or is not a tuning file.
    """
    return dict(_core.load_tuning_file(os.fspath(path)))


def device_presets() -> list[str]:
    """The preset names plan() and profile() take ("h100-sxm", "h200", ...)."""
    return list(_core.device_presets())


def cpp_enqueue_us(a: Array, b: Array, out: Array, *, calls: int = 200, layout: str = "nt",
                   config: Optional[str] = None, stream: Stream = None) -> float:
    """Host microseconds per C++ ``autogemm::gemm()`` call on these arrays: one call first
    (plan, compile or load), then ``calls`` enqueued back to back and timed in C++, as the C++
    test GemmGpu.HostCostPerCall does. Compare with timing ``gemm(a, b, out=out)`` from Python
    to see what the Python layer costs."""
    handle, export = _prepare(_framework(a), a, stream)
    return _core.time_gemm_enqueues(export(a), export(b), export(out), int(calls), layout,
                                    _config_text(config), handle)
