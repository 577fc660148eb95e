"""The communication roofline of a sharded program, without jax.

Per device, three times bound a step (the "How to Scale Your Model" view, jax-ml/scaling-book,
chapters "All About Rooflines" and "Sharded Matrices and How to Multiply Them"):

* ``t_math = flops / peak_flops``,
* ``t_mem = hbm_bytes / hbm_bandwidth``,
* ``t_comm = comm_bytes / interconnect_bandwidth``.

``max`` of the three is a lower bound (perfect overlap), their sum an upper bound (no overlap).
The critical intensity against the interconnect is ``peak_flops / interconnect_bandwidth`` FLOPs
per byte communicated: a device computing fewer FLOPs per byte it sends is communication-bound.

Bytes on the interconnect follow the bandwidth-optimal (ring) algorithms and count the bytes
**each device sends**, as NVIDIA's nccl-tests derive them (NVIDIA/nccl-tests, doc/PERFORMANCE.md,
"bus bandwidth"): for a group of ``g`` devices and a full array of ``S`` bytes,

* all-gather ``S (g-1)/g`` (``S`` is the gathered result),
* reduce-scatter ``S (g-1)/g`` (``S`` is the operand, ``g`` times the scattered result),
* all-reduce ``2 S (g-1)/g`` (a reduce-scatter then an all-gather),
* all-to-all ``S (g-1)/g`` (``S`` is the per-device buffer, of which ``1/g`` stays home),
* collective-permute ``S`` (point to point: each sender ships its whole buffer once).

:func:`comm_bounds` counts bandwidth only. The alpha-beta model
(:mod:`~roofline_report.analysis.comm_alpha_beta`) adds a latency per algorithm step: ``T = alpha
x steps + bytes / beta`` per collective (alpha the latency of one step, beta the bandwidth one
device sends at), with the algorithms the libraries run: NCCL's ring and double binary tree for
an all-reduce, its ring for an all-gather or reduce-scatter, a direct all-to-all. For ring
collectives these are the formulas of "How to Scale Your Model" (chapter "Sharded Matrices"):
an all-gather or reduce-scatter of an array of V bytes over N devices sends ``V (N-1)/N`` per
device in ``N-1`` hops, an all-reduce is a reduce-scatter then an all-gather (twice both), an
all-to-all sends ``V (N-1)/N`` of a per-device buffer V.

A network is one or two levels (:mod:`~roofline_report.analysis.comm_network`): a fast domain
(NVLink through NVSwitch, a TPU pod's ICI torus) and the network across domains (InfiniBand),
each with its own bandwidth and latency. A collective over more devices than one domain holds
runs hierarchically, the levels pipelined as NCCL runs them (the slower level's bandwidth time
is the collective's); on a torus a group is priced on the axes it spans, rings along them, an
all-to-all bound by the bisection. A combined collective (several arrays in one instruction)
pays its latency once, for all its bytes. :mod:`~roofline_report.analysis.comm_step` prices a
step's collectives and bounds the step (and finds the batch at which the math catches up with
the communication, with latency and as the book states it);
:mod:`~roofline_report.analysis.comm_projection` carries a compiled step to more devices (weak
scaling), flagging weights that do not split that many ways. Every
function here is pure and deterministic; this module holds the bandwidth-only bounds, the
sharded matmul's strategies (and their :class:`ScalingSeries`) and the checks of the model's
inputs.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from roofline_report.hlo.collectives import (
    _count,
    collective_bytes,
)
from roofline_report.roofline import binding

STRATEGIES: tuple[str, ...] = ("data", "contracting", "fsdp")
"""Shardings of the matmul x[B, D] @ w[D, F] over N devices (see :func:`matmul_per_device`)."""

STRATEGY_LABELS: dict[str, str] = {
    "data": "data parallel: x sharded on B, w replicated",
    "contracting": "contracting axis: x sharded on D, w sharded on D, all-reduce of the output",
    "fsdp": "FSDP: x sharded on B, w sharded on D and all-gathered before the matmul",
}


@dataclass(frozen=True, slots=True)
class MatmulWork:
    """Analytic per-device work and traffic of the sharded matmul (:func:`matmul_per_device`):
    ``collective`` the record of the one it runs (``{"op", "result_bytes", "group_size"}``),
    None when it runs none."""

    strategy: str
    flops: int
    hbm_bytes: int
    comm_bytes: int
    collective: dict[str, str | int] | None


@dataclass(frozen=True, slots=True)
class CommBounds:
    """Bandwidth-only per-device bounds of a step (:func:`comm_bounds`): times in seconds, the
    largest the lower bound, their sum the upper; ``binding`` the largest's name."""

    t_math: float
    t_mem: float
    t_comm: float
    lower_bound: float
    upper_bound: float
    binding: str
    critical_intensity: float  # peak FLOP/s over interconnect bytes/s
    comm_intensity: float | None  # flops per byte sent; None when nothing is sent


@dataclass(frozen=True, slots=True)
class SeriesColumns:
    """One strategy's bounds at each point of a sweep."""

    t_math: tuple[float, ...]
    t_mem: tuple[float, ...]
    t_comm: tuple[float, ...]
    lower_bound: tuple[float, ...]
    upper_bound: tuple[float, ...]
    binding: tuple[str, ...]
    comm_bytes: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ScalingSeries:
    """The built-in matmul x[B, D] @ w[D, F] per strategy, as the device count grows at the
    fixed batch and as the batch grows on the fixed devices (:func:`scaling_series`)."""

    d_model: int
    d_ff: int
    batch: int
    devices: int
    itemsize: int
    critical_intensity: float
    strategies: Mapping[str, str]  # name: label
    device_counts: tuple[int, ...]
    batches: tuple[int, ...]
    by_devices: Mapping[str, SeriesColumns]
    by_batch: Mapping[str, SeriesColumns]


def non_negative(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    as_float = float(value)
    if not math.isfinite(as_float) or as_float < 0:
        raise ValueError(f"{name} must be finite and non-negative, got {value!r}")
    return as_float


def positive(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    as_float = float(value)
    if not math.isfinite(as_float) or as_float <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return as_float


def comm_bounds(
    *,
    flops: float,
    hbm_bytes: float,
    comm_bytes: float,
    peak_flops: float,
    hbm_bandwidth: float,
    interconnect_bandwidth: float,
) -> CommBounds:
    """Per-device time bounds from work, HBM traffic and interconnect traffic.

    Times in seconds; ``lower_bound`` is the max of the three, ``upper_bound`` their sum;
    ``binding`` is ``"compute"``, ``"memory"`` or ``"communication"``, whichever time is
    largest (ties go in that order); ``critical_intensity = peak_flops /
    interconnect_bandwidth``; ``comm_intensity = flops / comm_bytes``, None when nothing is
    communicated.

    Raises ValueError for negative or non-finite amounts and for non-positive budgets.
    """
    work = non_negative("flops", flops)
    traffic = non_negative("hbm_bytes", hbm_bytes)
    sent = non_negative("comm_bytes", comm_bytes)
    peak = positive("peak_flops", peak_flops)
    hbm = positive("hbm_bandwidth", hbm_bandwidth)
    link = positive("interconnect_bandwidth", interconnect_bandwidth)

    t_math = work / peak
    t_mem = traffic / hbm
    t_comm = sent / link
    times = {"compute": t_math, "memory": t_mem, "communication": t_comm}
    lower = max(times.values())
    bound = binding(times)
    return CommBounds(
        t_math=t_math,
        t_mem=t_mem,
        t_comm=t_comm,
        lower_bound=lower,
        upper_bound=t_math + t_mem + t_comm,
        binding=bound,
        critical_intensity=peak / link,
        comm_intensity=None if sent == 0 else work / sent,
    )


def _shard(name: str, size: int, devices: int) -> int:
    if size % devices:
        raise ValueError(f"{name}={size} is not divisible by {devices} devices")
    return size // devices


def matmul_per_device(
    strategy: str, *, batch: int, d_model: int, d_ff: int, devices: int, itemsize: int = 4
) -> MatmulWork:
    """Analytic per-device work and traffic of the forward matmul x[B, D] @ w[D, F] on N devices.

    Every strategy does
    ``2 B D F / N`` flops per device. ``hbm_bytes`` counts the operands once as the local matmul
    reads them and its result written once (collective buffers are not counted):

    * ``data``: x[B/N, D], w[D, F] (replicated) -> y[B/N, F]; nothing communicated;
    * ``contracting``: x[B, D/N], w[D/N, F] -> partial y[B, F], then an all-reduce of y[B, F];
    * ``fsdp``: x[B/N, D], w all-gathered from [D/N, F] to [D, F] -> y[B/N, F].

    Raises ValueError for an unknown strategy, non-positive sizes, or a sharded dimension that
    N does not divide.
    """
    b = _count("batch", batch, minimum=1)
    d = _count("d_model", d_model, minimum=1)
    f = _count("d_ff", d_ff, minimum=1)
    n = _count("devices", devices, minimum=1)
    s = _count("itemsize", itemsize, minimum=1)
    collective: dict[str, str | int] | None
    op: str | None
    if strategy == "data":
        b_local = _shard("batch", b, n)
        flops = 2 * b_local * d * f
        hbm = s * (b_local * d + d * f + b_local * f)
        op, result = None, 0
    elif strategy == "contracting":
        d_local = _shard("d_model", d, n)
        flops = 2 * b * d_local * f
        hbm = s * (b * d_local + d_local * f + b * f)
        op, result = "all-reduce", s * b * f
    elif strategy == "fsdp":
        b_local = _shard("batch", b, n)
        _shard("d_model", d, n)
        flops = 2 * b_local * d * f
        hbm = s * (b_local * d + d * f + b_local * f)
        op, result = "all-gather", s * d * f
    else:
        raise ValueError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    if op is None:
        collective, comm = None, 0
    else:
        collective = {"op": op, "result_bytes": result, "group_size": n}
        comm = collective_bytes(op, result, n)
    return MatmulWork(strategy=strategy, flops=flops, hbm_bytes=hbm, comm_bytes=comm,
                      collective=collective)


def _series_point(
    strategy: str,
    *,
    batch: int,
    d_model: int,
    d_ff: int,
    devices: int,
    itemsize: int,
    budget: dict[str, float],
) -> tuple[CommBounds, int]:
    """The bounds of one point of a sweep, and the bytes each device sends there."""
    work = matmul_per_device(
        strategy, batch=batch, d_model=d_model, d_ff=d_ff, devices=devices, itemsize=itemsize
    )
    bounds = comm_bounds(
        flops=work.flops, hbm_bytes=work.hbm_bytes, comm_bytes=work.comm_bytes, **budget
    )
    return bounds, work.comm_bytes


def _columns(points: list[tuple[CommBounds, int]]) -> SeriesColumns:
    return SeriesColumns(
        t_math=tuple(p.t_math for p, _ in points), t_mem=tuple(p.t_mem for p, _ in points),
        t_comm=tuple(p.t_comm for p, _ in points),
        lower_bound=tuple(p.lower_bound for p, _ in points),
        upper_bound=tuple(p.upper_bound for p, _ in points),
        binding=tuple(p.binding for p, _ in points),
        comm_bytes=tuple(sent for _, sent in points))


def scaling_series(
    *,
    d_model: int,
    d_ff: int,
    batch: int,
    device_counts: Sequence[int],
    batches: Sequence[int],
    devices: int,
    peak_flops: float,
    hbm_bandwidth: float,
    interconnect_bandwidth: float,
    itemsize: int = 4,
) -> ScalingSeries:
    """How t_math, t_mem and t_comm of x[B, D] @ w[D, F] move with N and with B, per strategy.

    ``by_devices`` holds ``batch`` fixed and sweeps ``device_counts``; ``by_batch`` holds
    ``devices`` fixed and sweeps ``batches``; ``critical_intensity`` is peak over interconnect.

    Closed forms (itemsize s): data parallel never communicates in the forward pass; the
    contracting-axis all-reduce sends ``2 s B F (N-1)/N`` whatever N, while the math shrinks as
    1/N, so adding devices makes it communication-bound; FSDP sends ``s D F (N-1)/N`` and does
    ``2 B D F / N`` flops, so it is compute-bound only when ``B > s peak (N-1) / (2 W)``.
    Raises ValueError for an empty sweep or for sizes that a device count does not divide.
    """
    if not device_counts or not batches:
        raise ValueError("device_counts and batches must be non-empty")
    budget = {
        "peak_flops": positive("peak_flops", peak_flops),
        "hbm_bandwidth": positive("hbm_bandwidth", hbm_bandwidth),
        "interconnect_bandwidth": positive("interconnect_bandwidth", interconnect_bandwidth),
    }
    sizes = {"d_model": d_model, "d_ff": d_ff, "itemsize": itemsize}
    return ScalingSeries(
        d_model=d_model, d_ff=d_ff, batch=batch, devices=devices, itemsize=itemsize,
        critical_intensity=budget["peak_flops"] / budget["interconnect_bandwidth"],
        strategies=dict(STRATEGY_LABELS),
        device_counts=tuple(int(n) for n in device_counts),
        batches=tuple(int(b) for b in batches),
        by_devices={strategy: _columns([
            _series_point(strategy, batch=batch, devices=n, budget=budget, **sizes)
            for n in device_counts]) for strategy in STRATEGIES},
        by_batch={strategy: _columns([
            _series_point(strategy, batch=b, devices=devices, budget=budget, **sizes)
            for b in batches]) for strategy in STRATEGIES},
    )
