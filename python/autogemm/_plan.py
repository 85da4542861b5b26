"""What plan() returns: the planner's choice for one GEMM on one device, and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Plan", "KernelLaunch", "Candidate", "Rejected", "GemmReport"]


@dataclass(frozen=True)
class KernelLaunch:
    """One kernel a call launches (the main one, or the n-tail kernel after it)."""

    text: str  #: its exact configuration text
    n: int  #: columns it computes
    first_column: int  #: where those columns start
    grid_ctas: int
    threads_per_cta: int
    cluster_size: int
    smem_bytes: int  #: dynamic shared memory per CTA
    work_items: int  #: the tile scheduler's items (cluster tiles x split-K)
    load_path: str  #: "tma" or "threads"
    store_path: str  #: "tma" or "threads"

    def __str__(self) -> str:
        cluster = f" in clusters of {self.cluster_size}" if self.cluster_size > 1 else ""
        columns = f", columns {self.first_column}.." if self.first_column > 0 else ""
        return (f"{self.text}: {self.grid_ctas} CTAs of {self.threads_per_cta} threads{cluster}, "
                f"{self.smem_bytes} B smem, {self.work_items} work items{columns}")


@dataclass(frozen=True)
class Candidate:
    """A legal configuration and its predicted time."""

    config: str
    time_us: float
    tflops: float


@dataclass(frozen=True)
class Rejected:
    """A configuration the rules refused, and the rule."""

    config: str
    reason: str


@dataclass(frozen=True)
class Plan:
    """The planner's choice for one problem on one device (``autogemm plan``).

    ``config`` is the configuration text: pass it back as ``gemm(..., config=plan.config)`` to
    run exactly this choice.
    """

    config: str  #: "128x256x64 s3 c2 p g8 cl2x1/b", or "cuBLASLt"
    predicted_us: float  #: the cost model's time for the chosen configuration
    predicted_tflops: float
    path_reason: str  #: why this implementation ("sm_90a on h100-sxm: TMA loads + wgmma ...")
    spec_reason: str  #: the kernel spec's own reason line
    vendor: bool  #: True when cuBLASLt would run the call
    kernels: tuple[KernelLaunch, ...]  #: what a call launches, in order
    device: str  #: the preset name, or the GPU's name for a measured device
    m: int
    n: int
    k: int
    dtype: str  #: "bf16", "fp16" or "fp8"
    layout: str
    split_k_workspace_bytes: int
    #: legal ones in the planner's order, its choice first (predicted times within 2% tie)
    candidates: tuple[Candidate, ...] = field(repr=False)
    rejected: tuple[Rejected, ...] = field(repr=False)  #: refused ones, with the rule
    problem: dict[str, Any] = field(repr=False)  #: as `autogemm plan --json` writes it
    device_info: dict[str, Any] = field(repr=False)  #: as `autogemm profile --json` writes a GPU
    prediction: dict[str, Any] = field(repr=False)  #: the cost model's terms

    @classmethod
    def _from_dict(cls, d: dict[str, Any]) -> "Plan":
        spec = d["spec"]
        problem = d["problem"]
        device = d["device"]
        kernels = tuple(
            KernelLaunch(k["text"], k["n"], k["first_column"], k["grid_ctas"],
                         k["threads_per_cta"], k["cluster_size"], k["smem_bytes"],
                         k["work_items"], k["load_path"], k["store_path"])
            for k in spec["kernels"])
        return cls(
            config=d["config"]["describe"],
            predicted_us=d["prediction"]["time_us"],
            predicted_tflops=d["prediction"]["tflops"],
            path_reason=d["path_reason"],
            spec_reason=spec["reason"],
            vendor=spec["vendor"],
            kernels=kernels,
            device=device["preset"] or device["name"],
            m=problem["m"], n=problem["n"], k=problem["k"],
            dtype=problem["dtype"], layout=problem["layout"],
            split_k_workspace_bytes=spec["split_k_workspace_bytes"],
            candidates=tuple(Candidate(*c) for c in d["candidates"]),
            rejected=tuple(Rejected(*r) for r in d["rejected"]),
            problem=problem,
            device_info=device,
            prediction=d["prediction"],
        )

    def __str__(self) -> str:
        lines = [
            f"problem    M={self.m} N={self.n} K={self.k} {self.dtype} -> "
            f"{self.problem['d_type']}, layout {self.layout}",
            f"device     {self.device}",
            f"path       {self.path_reason}",
            f"config     {self.config}",
        ]
        lines += [f"kernel     {k}" for k in self.kernels]
        lines.append(f"predicted  {self.predicted_us:.1f} us = {self.predicted_tflops:.4g} TFLOP/s")
        return "\n".join(lines)


@dataclass(frozen=True)
class GemmReport:
    """What one call ran (``gemm(..., return_report=True)``)."""

    config: str  #: the configuration that ran, or "cuBLASLt"
    used_vendor: bool  #: True when cuBLASLt ran
    reason: str  #: why this path
