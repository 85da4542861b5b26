"""Tensor-parallel GEMMs over torch.distributed ranks: each rank holds its shards of A and of
the weight W, calls with them, and gets its shard of D = A @ W.T (W stored N x K, as
torch.nn.Linear stores it; C++: autogemm/tensor_parallel.hpp).

    # torchrun --nproc_per_node 4 app.py   (NCCL_NVLS_ENABLE=0: NVLink multicast off)
    import torch, torch.distributed as dist, autogemm.distributed as agd
    dist.init_process_group("nccl"); torch.cuda.set_device(dist.get_rank())
    tp = agd.TensorParallel()                         # the WORLD group, this GPU
    d = tp.all_gather_gemm(a_shard, w_shard)          # [M/G, K], [N/G, K] -> [M, N/G]
    d = tp.gemm_reduce_scatter(a_shard, w_shard)      # [M, K/G], [N, K/G] -> [M/G, N]
    d = tp.gemm_all_reduce(a_shard, w_shard)          # [M, K/G], [N, K/G] -> [M, N]
    print(agd.plan("all_gather", 4, 16384, 16384, 16384, device="h200")["describe"])

Where every pair of ranks has peer access (one node, NVLink or PCIe P2P), the transfers run on
the copy engines beside the GEMMs, band by band, taking no SM from them; otherwise (other nodes)
the same calls run NCCL collectives before or after one GEMM.

``plan`` works without a GPU (and without torch); ``TensorParallel`` needs torch.distributed
and a GPU per rank.

``schedule`` is the other way to use several GPUs from one process: many independent GEMMs
spread over them (C++: ``run_gemm_schedule`` in autogemm/multi_gpu.hpp)::

    outs = agd.schedule([(x1, w1), (x2, w2), ...], devices=[0, 1, 2, 3], strategy="load")
"""

from __future__ import annotations

import os
import socket
import warnings
from typing import Any, Optional, Tuple

from . import _core, _dtype_text, _fp8_bytes, _torch_current_stream_exporter
from ._errors import Error, InvalidArgument

__all__ = ["TensorParallel", "plan", "PATTERNS", "schedule", "STRATEGIES"]

PATTERNS = ("all_gather", "reduce_scatter", "all_reduce")
"""The patterns: ``all_gather`` (A sharded on M, W on N: column parallel after sequence
parallel), ``reduce_scatter`` (A and W sharded on K, D on M: row parallel) and ``all_reduce``
(A and W sharded on K, D whole on every rank)."""

_DTYPES = {"bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "float16": "fp16",
           "half": "fp16", "fp32": "fp32", "float32": "fp32", "float": "fp32",
           "fp8": "fp8", "e4m3": "fp8", "float8_e4m3fn": "fp8"}


def _canonical(dtype: Any) -> Optional[str]:
    text = _dtype_text(dtype)
    return None if text is None else _DTYPES.get(text.lower(), text)


def _default_device() -> str:
    gpus = _core.profile(None)["gpus"]
    if gpus:
        return "0"
    warnings.warn("no GPU found; planned for preset h200 (choose with device=)", RuntimeWarning,
                  stacklevel=3)
    return "h200"


def plan(pattern: str, world: int, m: int, n: int, k: int, dtype: str = "bf16", *,
         out_dtype: Optional[str] = None, device: Optional[str] = None,
         link: Optional[str] = None, transport: Optional[str] = None, bands: int = 0,
         peer_access: bool = True) -> dict[str, Any]:
    """The plan of an M x N x K tensor-parallel GEMM over ``world`` GPUs, without a GPU.

    Args:
        pattern: "all_gather", "reduce_scatter" or "all_reduce" (also "ag", "rs", "ar").
        m, n, k: the whole GEMM's sizes (D is M x N; each rank's shards are slices of it).
        dtype: "bf16", "fp16" or "fp8" (e4m3 with 1x128 / 128x128 block scales, D bf16).
        out_dtype: D's type ("bf16", "fp16"; "fp32" for all_gather only); default the input's.
        device: the GPU every rank is planned as: a preset ("h200", ``device_presets()``) or an
            ordinal of this machine; None: GPU 0, or the h200 preset with a RuntimeWarning.
        link: how the GPUs are joined: "nvlink", "pcie" (= "pcie5"), "pcie4"; None: the
            device's board's (NVLink for SXM parts).
        transport: None (copy engines where every pair has peer access, else NCCL),
            "copy_engine" or "nccl".
        bands: row bands per chunk (1..8); 0: the planner's choice.
        peer_access: False plans for ranks without peer access (other nodes): NCCL only.

    Returns:
        A dict: "describe" (the plan's text: the choice and why), "total_us" (predicted time of
        one call), "compute_us", "transfer_us", "exposed_us" (communication not hidden),
        "single_gpu_us" (the whole GEMM on one GPU), "speedup", "transport", "bands",
        "launches", "hash", "a_shape" / "b_shape" / "d_shape" (one rank's shards), "steps"
        ((step, band, rows, config, reads_c, predicted_us, bands) per launch: a launch computes
        bands [band, band + bands) and signals each), and the problem.

    Raises:
        InvalidArgument: a bad pattern, size, type, preset or option (``.argument`` names it).
    """
    spec = _default_device() if device is None else str(device)
    return _core.tp_plan(str(pattern), int(world), int(m), int(n), int(k), str(dtype),
                         _dtype_text(out_dtype), spec, link, transport, int(bands),
                         bool(peer_access))


# Argument names of autogemm.distributed for those of the C++ shards (tp_call.cpp's messages).
_NAMES = {"a": "a_shard", "b": "w_shard", "d": "out", "scale_b": "scale_w"}


def _renamed(e: InvalidArgument) -> InvalidArgument:
    head, sep, tail = e.argument.rpartition(": ")
    name = _NAMES.get(tail, tail)
    return InvalidArgument(f"{head}{sep}{name}", e.value, e.rule)


class _Entry:
    """One call shape: its plan (and workspace, once made) and the outputs it makes."""

    __slots__ = ("tp", "d_shape", "d_dtype")

    def __init__(self, tp: Any, d_shape: Tuple[int, int], d_dtype: Any) -> None:
        self.tp, self.d_shape, self.d_dtype = tp, d_shape, d_dtype


class TensorParallel:
    """Tensor-parallel GEMMs on this rank's shards, with a communicator of autogemm's own.

    ``group`` (a torch.distributed process group; default WORLD) is used only to bootstrap:
    rank 0 draws an NCCL unique id and the group broadcasts it (with where each rank runs), and
    every rank joins a communicator of autogemm's own over NCCL on ``device`` (default
    ``torch.cuda.current_device()``). Creating one is collective: every rank of the group must.
    NCCL_NVLS_ENABLE is set to "0" first (NVLink multicast is not used; set it in the
    environment so that torch's own communicators see it too).

    Calls are collective too. The first call of a shape (pattern, shard shapes, types, options)
    makes its workspace: buffers every other rank maps (CUDA IPC), flags and streams, made once
    and kept; every rank must make the same ones in the same order, which they do when every
    rank calls with the same shapes. Every call then exchanges a small record with the other
    ranks (plan hash, shapes, each rank's own check of its arguments) before anything leaves a
    rank, so a wrong argument or shape on any rank raises InvalidArgument on every rank, naming
    the rank (a rank whose own arrays are wrong raises its own precise message, having launched
    nothing). From a shape's second call on, each rank starts its first GEMMs, on its own shards
    into its own memory (all-gather: its own rows of the output), while the records cross. The
    first call of a shape must not be captured in a CUDA graph; later ones may be.

    Calls run on ``torch.cuda.current_stream()`` of the device, asynchronously; inputs are torch
    CUDA tensors, K contiguous (rows may be padded), outputs torch tensors on the device.
    FP8: float8_e4m3fn shards with ``scale_a`` / ``scale_w`` as ``autogemm.quantize_fp8`` makes
    them for the shard (``quantize_fp8(a_shard, (1, 128))``, ``quantize_fp8(w_shard, (128,
    128))``); D is bfloat16 unless ``out_dtype`` says otherwise.

    Precision: each GEMM accumulates in FP32. In ``gemm_reduce_scatter`` and
    ``gemm_all_reduce`` the partial sums travel a ring in D's dtype: each rank's GEMM adds the
    partial its left neighbour sent (read into its FP32 accumulator) and rounds the sum to D's
    dtype for the next hop, so a running sum is rounded G - 1 times on its way (G - 1 roundings
    in bf16, as NCCL's ring reduce-scatter of bf16 partials does) before the last GEMM writes D.
    """

    def __init__(self, group: Any = None, device: Any = None, *,
                 plan_device: Optional[str] = None, link: Optional[str] = None) -> None:
        """``plan_device``: a preset name every rank is planned as (default: this rank's GPU,
        measured; identical GPUs plan alike). ``link``: the link preset ("nvlink", "pcie");
        default the GPU's board's."""
        import torch
        import torch.distributed as dist

        if not dist.is_available() or not dist.is_initialized():
            raise InvalidArgument("group", repr(group), "torch.distributed is not initialised: "
                                  "call torch.distributed.init_process_group first")
        previous = os.environ.get("NCCL_NVLS_ENABLE")
        if previous not in (None, "0"):
            warnings.warn(f"NCCL_NVLS_ENABLE={previous} overridden with 0: NVLink multicast is "
                          "not used", RuntimeWarning, stacklevel=2)
        os.environ["NCCL_NVLS_ENABLE"] = "0"
        self._torch, self._dist = torch, dist
        self.group = dist.group.WORLD if group is None else group
        self.world: int = dist.get_world_size(self.group)
        self.rank: int = dist.get_rank(self.group)
        if device is None:
            index = torch.cuda.current_device()
        elif isinstance(device, int) and not isinstance(device, bool):
            index = device
        else:
            d = torch.device(device)
            if d.type != "cuda":
                raise InvalidArgument("device", repr(device), "must be a CUDA device")
            index = torch.cuda.current_device() if d.index is None else d.index
        self.device = torch.device("cuda", index)

        # One exchange: rank 0's unique id (or why it has none), and where every rank runs.
        try:
            uid: Any = _core.nccl_unique_id() if self.rank == 0 else None
        except Error as e:   # built without NCCL: every rank must learn it, not wait
            uid = e
        count = torch.cuda.device_count()
        peers = [index == j or torch.cuda.can_device_access_peer(index, j) for j in range(count)]
        mine = (uid if self.rank == 0 else None, socket.gethostname(), index, peers)
        everyone: list[Any] = [None] * self.world
        dist.all_gather_object(everyone, mine, group=self.group)
        uid = everyone[0][0]
        if isinstance(uid, BaseException):
            raise Error(f"rank 0 could not draw an NCCL unique id: {uid}")
        hosts = {e[1] for e in everyone}
        devices = [e[2] for e in everyone]
        # Peer access between every pair: one host, distinct GPUs, each reaching the others.
        self.peer_access: bool = (len(hosts) == 1 and len(set(devices)) == len(devices) and
                                  all(len(e[3]) > d and e[3][d] for e in everyone for d in devices))
        self._plan_device = plan_device
        self._link = link
        self._comm = _core._TpComm(uid, self.world, self.rank, index)
        self._entries: dict[tuple, _Entry] = {}
        self._owners: list[_Entry] = []   # entries that made a workspace, in order (all ranks alike)
        self._export = _torch_current_stream_exporter(torch)

    def __repr__(self) -> str:
        return (f"TensorParallel(rank {self.rank} of {self.world}, {self.device}, "
                f"{'peer access' if self.peer_access else 'no peer access: NCCL'}, "
                f"{len(self._owners)} workspace(s))")

    # --- the calls --------------------------------------------------------------------------

    def all_gather_gemm(self, a_shard: Any, w_shard: Any, out: Any = None,
                        gather_output: bool = False, scale_a: Any = None, scale_w: Any = None,
                        out_dtype: Any = None, transport: Optional[str] = None,
                        bands: int = 0) -> Any:
        """D = all_gather(A) @ W_shard.T: A sharded on M, W on N (column parallel after
        sequence parallel).

        Args:
            a_shard: [M/G, K], this rank's rows of A (rank r holds rows r*M/G ...).
            w_shard: [N/G, K], this rank's rows of W (its N/G columns of D).
            out: [M, N/G] for D (bf16, fp16 or fp32), or None: a new tensor.
            gather_output: also return the gathered A [M, K] (what the transfers delivered).
            scale_a, scale_w: FP8 shards' float32 block scales; None for 16-bit shards.
            out_dtype: D's dtype when ``out`` is None ("bf16", "fp16", "fp32", torch dtypes).
            transport: None (the planner's: copy engines when every pair of ranks has peer
                access), "copy_engine" or "nccl". bands: row bands per chunk, 0: planner's.

        Returns:
            D [M, N/G], or (D, A gathered) with ``gather_output``.
        """
        a_gathered = None
        if gather_output and self._is_matrix(a_shard):
            a_gathered = self._torch.empty((a_shard.shape[0] * self.world, a_shard.shape[1]),
                                           dtype=a_shard.dtype, device=self.device)
        d = self._call("all_gather", a_shard, w_shard, out, out_dtype, scale_a, scale_w,
                       a_gathered, transport, bands)
        return (d, a_gathered) if gather_output else d

    def gemm_reduce_scatter(self, a: Any, w: Any, out: Any = None, scale_a: Any = None,
                            scale_w: Any = None, out_dtype: Any = None,
                            transport: Optional[str] = None, bands: int = 0) -> Any:
        """D_r = rows r*M/G... of sum over ranks of A_r @ W_r.T: A and W sharded on K (row
        parallel), D scattered on M.

        a: [M, K/G], w: [N, K/G] (this rank's columns of K); returns (or fills ``out``) D's
        rows r*M/G ... (r+1)*M/G: [M/G, N]. Partial sums are added in D's dtype along a ring
        (G - 1 roundings; each GEMM sums in FP32). Other arguments as all_gather_gemm.
        """
        return self._call("reduce_scatter", a, w, out, out_dtype, scale_a, scale_w, None,
                          transport, bands)

    def gemm_all_reduce(self, a: Any, w: Any, out: Any = None, scale_a: Any = None,
                        scale_w: Any = None, out_dtype: Any = None,
                        transport: Optional[str] = None, bands: int = 0) -> Any:
        """D = sum over ranks of A_r @ W_r.T on every rank: a [M, K/G], w [N, K/G] -> D [M, N].
        The reduce-scatter ring (partials added in D's dtype, G - 1 roundings; FP32 inside each
        GEMM), then each rank's finished rows go to every other rank. Arguments as
        gemm_reduce_scatter."""
        return self._call("all_reduce", a, w, out, out_dtype, scale_a, scale_w, None,
                          transport, bands)

    def plan(self, pattern: str, a: Any, w: Any, out_dtype: Any = None,
             transport: Optional[str] = None, bands: int = 0) -> str:
        """What a call of ``pattern`` on these shards would run, and why (the plan's text).
        Local: no collective, no workspace."""
        return self._plan_entry(pattern, a, w, out_dtype, transport, bands).tp.describe()

    def plan_info(self, pattern: str, a: Any, w: Any, out_dtype: Any = None,
                  transport: Optional[str] = None, bands: int = 0) -> dict[str, Any]:
        """As ``plan``, the dict ``autogemm.distributed.plan`` returns (predicted times...)."""
        return self._plan_entry(pattern, a, w, out_dtype, transport, bands).tp.info()

    def _plan_entry(self, pattern: str, a: Any, w: Any, out_dtype: Any,
                    transport: Optional[str], bands: int) -> _Entry:
        key = self._key(pattern, a, w, None, out_dtype, transport, bands)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = self._new_entry(key)
        return entry

    # --- how a call runs --------------------------------------------------------------------

    def _is_matrix(self, x: Any) -> bool:
        return isinstance(x, self._torch.Tensor) and x.dim() == 2

    def _key(self, pattern: str, a: Any, w: Any, out: Any, out_dtype: Any,
             transport: Optional[str], bands: int) -> tuple:
        """The whole problem the shards imply (a rank with odd shards implies another one) and
        the options: the cache's key. InvalidArgument when they cannot form a problem at all."""
        torch, g = self._torch, self.world
        for name, x in (("a_shard", a), ("w_shard", w)):
            if not self._is_matrix(x):
                raise InvalidArgument(name, f"{type(x).__module__}.{type(x).__qualname__}"
                                      + (f" of shape {tuple(x.shape)}" if hasattr(x, "shape")
                                         else ""), "must be a 2-D torch tensor")
        dtype = _canonical(a.dtype)
        if dtype not in ("bf16", "fp16", "fp8"):
            raise InvalidArgument("a_shard", str(a.dtype), "tensor-parallel GEMMs take "
                                  "bfloat16, float16 or float8_e4m3fn (block-scaled) shards")
        if out is not None:
            if not isinstance(out, torch.Tensor):
                raise InvalidArgument("out", type(out).__qualname__, "must be a torch tensor")
            out_dtype = out.dtype
        d_text = _canonical(out_dtype) or ("bf16" if dtype == "fp8" else dtype)
        if d_text not in ("bf16", "fp16", "fp32"):
            raise InvalidArgument("out_dtype", str(out_dtype), "must be bf16, fp16 or fp32")
        p = str(pattern).lower().replace("-", "_")
        p = {"ag": "all_gather", "rs": "reduce_scatter", "ar": "all_reduce"}.get(p, p)
        if p not in PATTERNS:
            raise InvalidArgument("pattern", str(pattern),
                                  "expected all_gather, reduce_scatter or all_reduce")
        if p == "all_gather":
            m, n, k = a.shape[0] * g, w.shape[0] * g, a.shape[1]
        else:
            m, n, k = a.shape[0], w.shape[0], a.shape[1] * g

        def ld(x: Any) -> int:   # 0: packed (or not K-contiguous: run() names the strides)
            if x is None or x.dim() != 2 or x.shape[0] <= 1 or x.stride(-1) != 1:
                return 0
            return 0 if x.stride(0) == x.shape[1] else int(x.stride(0))

        return (p, int(m), int(n), int(k), dtype, d_text, ld(a), ld(w), ld(out),
                None if transport is None else str(transport).lower().replace("-", "_"),
                int(bands))

    def _new_entry(self, key: tuple) -> _Entry:
        """The plan of a key (host only); it runs on an existing workspace when one fits."""
        p, m, n, k, dtype, d_text, lda, ldb, ldd, transport, bands = key
        tp = _core._TpGemm(self._comm, p, m, n, k, dtype, d_text, lda, ldb, ldd,
                           self._plan_device, self._link, self.peer_access, transport, bands)
        g = self.world
        d_shape = ((m, n // g) if p == "all_gather" else (m // g, n) if p == "reduce_scatter"
                   else (m, n))
        d_dtype = {"bf16": self._torch.bfloat16, "fp16": self._torch.float16,
                   "fp32": self._torch.float32}[d_text]
        return _Entry(tp, d_shape, d_dtype)

    def _call(self, pattern: str, a: Any, w: Any, out: Any, out_dtype: Any, scale_a: Any,
              scale_w: Any, a_gathered: Any, transport: Optional[str], bands: int) -> Any:
        # Every rank must take the same collective path whatever its arguments, so a local
        # error is held (not raised) until the other ranks have heard of it.
        error: Optional[InvalidArgument] = None
        entry: Optional[_Entry] = None
        key: Optional[tuple] = None
        try:
            key = self._key(pattern, a, w, out, out_dtype, transport, bands)
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = self._new_entry(key)
            if not entry.tp.has_workspace:
                # A workspace made for another key fits when only leading dimensions differ;
                # the same on every rank that calls with this key (they made the same ones).
                for owner in self._owners:
                    if entry.tp.share_workspace(owner.tp):
                        break
        except InvalidArgument as e:
            error = e
        if entry is not None and out is None:
            out = self._torch.empty(entry.d_shape, dtype=entry.d_dtype, device=self.device)
        stream = self._torch.cuda.current_stream(self.device).cuda_stream
        x = self._export
        args = (x(_fp8_bytes(a)[0]), x(_fp8_bytes(w)[0]), x(out), x(scale_a), x(scale_w),
                x(_fp8_bytes(a_gathered)[0]), stream)
        try:
            if entry is not None and entry.tp.has_workspace:
                if entry.tp.run(*args):
                    return out
                # Another rank has no workspace for its shapes: hear which below.
            else:
                if self._torch.cuda.is_current_stream_capturing():
                    raise error or InvalidArgument(
                        "stream", "capturing a CUDA graph", "the first call of a shape makes "
                        "its workspace (collective): call once outside capture first")
                if self._owners:   # same on every rank: workspaces are made by all together
                    self._owners[0].tp.probe(stream)
            self._exchange(key, error)
            assert entry is not None
            entry.tp.create_workspace()   # collective: every rank, the same plan
            self._owners.append(entry)
            if not entry.tp.run(*args):
                raise Error("tp_gemm reported a missing workspace right after making it")
            return out
        except InvalidArgument as e:
            raise _renamed(e) from None

    def _exchange(self, key: Optional[tuple], error: Optional[InvalidArgument]) -> None:
        """Every rank's shapes (or its error) through the group: returns when all are equal,
        else raises on every rank."""
        mine = (("error", (error.argument, error.value, error.rule)) if error is not None
                else ("key", key))
        everyone: list[Any] = [None] * self.world
        self._dist.all_gather_object(everyone, mine, group=self.group)
        if error is not None:
            raise error
        for q, (kind, what) in enumerate(everyone):
            if kind == "error":
                raise InvalidArgument(f"rank {q}: {_NAMES.get(what[0], what[0])}", what[1],
                                      what[2])
        keys = [what for _, what in everyone]
        usual = max(keys, key=keys.count)   # the most ranks' call (the first such on a tie)
        for q, what in enumerate(keys):
            if what != usual:
                raise InvalidArgument(f"rank {q}: shards", _key_text(what, self.world),
                                      "every rank must call with the same pattern, shard "
                                      "shapes, types and options; rank "
                                      f"{keys.index(usual)} calls {_key_text(usual, self.world)}")


def _key_text(key: tuple, world: int) -> str:
    p, m, n, k, dtype, d_text, lda, ldb, ldd, transport, bands = key
    lds = "" if not (lda or ldb or ldd) else f", lda {lda} ldb {ldb} ldd {ldd}"
    a, w = (((m // world, k), (n // world, k)) if p == "all_gather"
            else ((m, k // world), (n, k // world)))
    return (f"a_shard {a}, w_shard {w}: {p} of M = {m}, N = {n}, K = {k} over {world} ranks, "
            f"{dtype} -> {d_text}{lds}, transport {transport or 'default'}, "
            f"bands {bands or 'default'}")



STRATEGIES = ("load", "rr", "priority")
"""``schedule``'s strategies: ``load`` (longest first, each to the GPU that finishes it first,
the shortest pooled for the end and migrated to whichever GPU frees first), ``rr`` (round-robin
in list order, the baseline) and ``priority`` (the list order, decode first when it comes
first)."""


def schedule(calls: Any, devices: Any = None, strategy: str = "load", *,
             migrate: Optional[bool] = None, report: bool = False) -> Any:
    """Runs many independent GEMMs ``out = a @ w.T`` over the GPUs of this process and returns
    when all are done.

    Args:
        calls: a list of ``(a, w)`` or ``(a, w, out)`` torch CUDA tensors: a [M, K], w [N, K]
            (K contiguous), out [M, N] (default: a new tensor of a's dtype on a's device). Each
            call's tensors stay on their GPU; the scheduler may run a call on another GPU of
            ``devices`` (copying a and w there and D back) when that finishes sooner.
        devices: CUDA ordinals (ints or torch devices); default every GPU the calls' tensors
            are on.
        strategy: "load", "rr" or "priority" (``STRATEGIES``).
        migrate: None (on for "load" and "priority"), True or False.
        report: also return the run's report: a dict with "gpu" (where each call ran),
            "busy_us" and "idle_us" per GPU, "makespan_us", "ideal_us" (busy / GPUs),
            "bound_us", "migrations" and "host_us_per_gemm".

    Returns:
        The list of outputs, in the calls' order (and the report with ``report=True``).

    Raises:
        InvalidArgument: a bad call (``.argument`` names it: "calls[3].b"), device or strategy,
            or a list that fits on no GPU's free memory (before anything runs).
    """
    for i, call in enumerate(calls):
        if not isinstance(call, (tuple, list)) or len(call) not in (2, 3):
            raise InvalidArgument(f"calls[{i}]", type(call).__qualname__,
                                  "must be (a, w) or (a, w, out)")
    text = str(strategy).lower()
    text = {"load_balanced": "load", "round_robin": "rr", "round-robin": "rr",
            "load-balanced": "load"}.get(text, text)
    if text not in STRATEGIES:
        raise InvalidArgument("strategy", str(strategy), "expected load, rr or priority")
    try:
        import torch
    except ImportError:   # arrays of another framework: passed as they are (DLPack)
        torch = None
    is_tensor = (lambda x: False) if torch is None else (lambda x: isinstance(x, torch.Tensor))
    items = []
    for i, call in enumerate(calls):
        a, w = call[0], call[1]
        out = call[2] if len(call) == 3 else None
        if out is None:
            if not (is_tensor(a) and is_tensor(w) and a.dim() == 2 and w.dim() == 2):
                raise InvalidArgument(f"calls[{i}].a", type(a).__qualname__,
                                      "without out, a and w must be 2-D torch tensors")
            out = torch.empty((a.shape[0], w.shape[0]), dtype=a.dtype, device=a.device)
        items.append((a, w, out))
    if devices is None:
        found = sorted({int(x.device.index) for item in items for x in item
                        if is_tensor(x) and x.is_cuda})
        devices = found or ([torch.cuda.current_device()] if torch is not None else [0])
    ordinals = []
    for d in devices:
        if isinstance(d, int) and not isinstance(d, bool):
            ordinals.append(d)
            continue
        dev = torch.device(d) if torch is not None else None
        if dev is None or dev.type != "cuda":
            raise InvalidArgument("devices", repr(d), "must be CUDA ordinals or devices")
        ordinals.append(torch.cuda.current_device() if dev.index is None else dev.index)
    export: Any = lambda x: x
    if torch is not None:
        # The scheduler's streams read what torch's streams wrote: let those finish first.
        if torch.cuda.is_available():
            for d in ordinals:
                if d < torch.cuda.device_count():
                    torch.cuda.synchronize(d)
        export = _torch_current_stream_exporter(torch)
    summary = _core.schedule([(export(a), export(w), export(out)) for a, w, out in items],
                             ordinals, text, migrate)
    outs = [out for _, _, out in items]
    return (outs, summary) if report else outs
