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

:func:`comm_bounds` counts bandwidth only. The alpha-beta model below (:func:`collective_time`,
:func:`step_bounds`) adds a latency per algorithm step: ``T = alpha x steps + bytes / beta``
per collective (alpha the latency of one step, beta the bandwidth one device sends at), with
the ring and tree algorithms' steps and bytes of :func:`algorithm_steps` and
:func:`algorithm_bytes`. For ring collectives these are the formulas of "How to Scale Your
Model" (chapter "Sharded Matrices"): an all-gather or reduce-scatter of an array of V bytes
over N devices sends ``V (N-1)/N`` per device in ``N-1`` hops, an all-reduce is a
reduce-scatter then an all-gather (twice both), an all-to-all sends ``V (N-1)/N`` of a
per-device buffer V. :func:`critical_batch` finds the batch at which the math catches up with
the communication, :func:`project_step` carries a compiled step to more devices (weak
scaling). Every function here is pure and deterministic.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

from roofline_report.hlo.collectives import (
    COLLECTIVE_OPS,
    _ceil_div,
    _count,
    collective_bytes,
)

STRATEGIES: tuple[str, ...] = ("data", "contracting", "fsdp")
"""Shardings of the matmul x[B, D] @ w[D, F] over N devices (see :func:`matmul_per_device`)."""

STRATEGY_LABELS: dict[str, str] = {
    "data": "data parallel: x sharded on B, w replicated",
    "contracting": "contracting axis: x sharded on D, w sharded on D, all-reduce of the output",
    "fsdp": "FSDP: x sharded on B, w sharded on D and all-gathered before the matmul",
}


def _non_negative(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    as_float = float(value)
    if not math.isfinite(as_float) or as_float < 0:
        raise ValueError(f"{name} must be finite and non-negative, got {value!r}")
    return as_float


def _positive(name: str, value: object) -> float:
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
) -> dict[str, Any]:
    """Per-device time bounds from work, HBM traffic and interconnect traffic.

    Returns ``{"t_math", "t_mem", "t_comm", "lower_bound", "upper_bound", "binding",
    "critical_intensity", "comm_intensity"}``: times in seconds; ``lower_bound`` is the max of the
    three, ``upper_bound`` their sum; ``binding`` is ``"compute"``, ``"memory"`` or
    ``"communication"``, whichever time is largest (ties go in that order);
    ``critical_intensity = peak_flops / interconnect_bandwidth``; ``comm_intensity =
    flops / comm_bytes``, None when nothing is communicated.

    Raises ValueError for negative or non-finite amounts and for non-positive budgets.
    """
    work = _non_negative("flops", flops)
    traffic = _non_negative("hbm_bytes", hbm_bytes)
    sent = _non_negative("comm_bytes", comm_bytes)
    peak = _positive("peak_flops", peak_flops)
    hbm = _positive("hbm_bandwidth", hbm_bandwidth)
    link = _positive("interconnect_bandwidth", interconnect_bandwidth)

    t_math = work / peak
    t_mem = traffic / hbm
    t_comm = sent / link
    times = {"compute": t_math, "memory": t_mem, "communication": t_comm}
    lower = max(times.values())
    binding = next(name for name, t in times.items() if t == lower)
    return {
        "t_math": t_math,
        "t_mem": t_mem,
        "t_comm": t_comm,
        "lower_bound": lower,
        "upper_bound": t_math + t_mem + t_comm,
        "binding": binding,
        "critical_intensity": peak / link,
        "comm_intensity": None if sent == 0 else work / sent,
    }


def _shard(name: str, size: int, devices: int) -> int:
    if size % devices:
        raise ValueError(f"{name}={size} is not divisible by {devices} devices")
    return size // devices


def matmul_per_device(
    strategy: str, *, batch: int, d_model: int, d_ff: int, devices: int, itemsize: int = 4
) -> dict[str, Any]:
    """Analytic per-device work and traffic of the forward matmul x[B, D] @ w[D, F] on N devices.

    Returns ``{"strategy", "flops", "hbm_bytes", "comm_bytes", "collective"}`` (ints, and the
    collective as ``{"op", "result_bytes", "group_size"}`` or None). Every strategy does
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
    collective: dict[str, Any] | None
    if strategy == "data":
        b_local = _shard("batch", b, n)
        flops = 2 * b_local * d * f
        hbm = s * (b_local * d + d * f + b_local * f)
        collective = None
    elif strategy == "contracting":
        d_local = _shard("d_model", d, n)
        flops = 2 * b * d_local * f
        hbm = s * (b * d_local + d_local * f + b * f)
        collective = {"op": "all-reduce", "result_bytes": s * b * f, "group_size": n}
    elif strategy == "fsdp":
        b_local = _shard("batch", b, n)
        _shard("d_model", d, n)
        flops = 2 * b_local * d * f
        hbm = s * (b_local * d + d * f + b_local * f)
        collective = {"op": "all-gather", "result_bytes": s * d * f, "group_size": n}
    else:
        raise ValueError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    comm = (
        0
        if collective is None
        else collective_bytes(collective["op"], collective["result_bytes"], n)
    )
    return {
        "strategy": strategy,
        "flops": flops,
        "hbm_bytes": hbm,
        "comm_bytes": comm,
        "collective": collective,
    }


def _series_point(
    strategy: str,
    *,
    batch: int,
    d_model: int,
    d_ff: int,
    devices: int,
    itemsize: int,
    budget: dict[str, float],
) -> dict[str, Any]:
    work = matmul_per_device(
        strategy, batch=batch, d_model=d_model, d_ff=d_ff, devices=devices, itemsize=itemsize
    )
    bounds = comm_bounds(
        flops=work["flops"], hbm_bytes=work["hbm_bytes"], comm_bytes=work["comm_bytes"], **budget
    )
    return {
        "flops": work["flops"],
        "hbm_bytes": work["hbm_bytes"],
        "comm_bytes": work["comm_bytes"],
        **bounds,
    }


def _columns(points: list[dict[str, Any]]) -> dict[str, list[Any]]:
    keys = ("t_math", "t_mem", "t_comm", "lower_bound", "upper_bound", "binding", "comm_bytes")
    return {key: [p[key] for p in points] for key in keys}


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
) -> dict[str, Any]:
    """How t_math, t_mem and t_comm of x[B, D] @ w[D, F] move with N and with B, per strategy.

    ``by_devices`` holds ``batch`` fixed and sweeps ``device_counts``; ``by_batch`` holds
    ``devices`` fixed and sweeps ``batches``. Returns::

        {"shapes": {"d_model", "d_ff", "batch", "devices", "itemsize"},
         "budget": {"peak_flops", "hbm_bandwidth", "interconnect_bandwidth"},
         "critical_intensity": peak / interconnect,
         "strategies": {name: label},
         "by_devices": {"devices": [...], name: {"t_math": [...], "t_mem": [...],
                        "t_comm": [...], "lower_bound": [...], "upper_bound": [...],
                        "binding": [...], "comm_bytes": [...]}},
         "by_batch": {"batch": [...], name: {same columns}}}

    Closed forms (itemsize s): data parallel never communicates in the forward pass; the
    contracting-axis all-reduce sends ``2 s B F (N-1)/N`` whatever N, while the math shrinks as
    1/N, so adding devices makes it communication-bound; FSDP sends ``s D F (N-1)/N`` and does
    ``2 B D F / N`` flops, so it is compute-bound only when ``B > s peak (N-1) / (2 W)``.
    Raises ValueError for an empty sweep or for sizes that a device count does not divide.
    """
    if not device_counts or not batches:
        raise ValueError("device_counts and batches must be non-empty")
    budget = {
        "peak_flops": _positive("peak_flops", peak_flops),
        "hbm_bandwidth": _positive("hbm_bandwidth", hbm_bandwidth),
        "interconnect_bandwidth": _positive("interconnect_bandwidth", interconnect_bandwidth),
    }
    sizes = {"d_model": d_model, "d_ff": d_ff, "itemsize": itemsize}
    by_devices: dict[str, Any] = {"devices": [int(n) for n in device_counts]}
    by_batch: dict[str, Any] = {"batch": [int(b) for b in batches]}
    for strategy in STRATEGIES:
        by_devices[strategy] = _columns(
            [
                _series_point(strategy, batch=batch, devices=n, budget=budget, **sizes)
                for n in device_counts
            ]
        )
        by_batch[strategy] = _columns(
            [
                _series_point(strategy, batch=b, devices=devices, budget=budget, **sizes)
                for b in batches
            ]
        )
    return {
        "shapes": {
            "d_model": d_model,
            "d_ff": d_ff,
            "batch": batch,
            "devices": devices,
            "itemsize": itemsize,
        },
        "budget": budget,
        "critical_intensity": budget["peak_flops"] / budget["interconnect_bandwidth"],
        "strategies": dict(STRATEGY_LABELS),
        "by_devices": by_devices,
        "by_batch": by_batch,
    }


# --------------------------------------------------------------------------------------------
# The alpha-beta model: latency x steps + bytes / bandwidth, per collective and per step
# --------------------------------------------------------------------------------------------

ALGORITHMS: tuple[str, ...] = ("ring", "tree")
"""Collective algorithms the alpha-beta model prices (:func:`algorithm_steps`)."""

ALGORITHM_NOTES: dict[str, str] = {
    "ring": "ring: all-gather, reduce-scatter and all-to-all take N-1 steps and send "
    "(N-1)/N of the full array per device; all-reduce is a reduce-scatter then an all-gather: "
    "2(N-1) steps, 2(N-1)/N of the array",
    "tree": "tree (recursive halving and doubling): all-gather and reduce-scatter take "
    "log2 N steps and send the same (N-1)/N; all-reduce 2 log2 N steps; all-to-all "
    "(Bruck) log2 N steps of half the buffer each",
}


def _log2_steps(g: int) -> int:
    return max(0, math.ceil(math.log2(g))) if g > 1 else 0


def algorithm_steps(op: str, group_size: int, algorithm: str = "ring") -> int:
    """Latency steps (messages in sequence) of one collective over ``group_size`` devices.

    ``ring``: all-gather, reduce-scatter and all-to-all ``N-1``; all-reduce ``2(N-1)``
    (reduce-scatter then all-gather). ``tree`` (recursive halving/doubling for all-gather,
    reduce-scatter and all-reduce, Bruck for all-to-all): ``ceil(log2 N)``, all-reduce
    ``2 ceil(log2 N)``. A collective-permute is one step for either. A group of one takes no
    step. Raises ValueError for an unknown op or algorithm or a non-positive group.
    """
    g = _count("group_size", group_size, minimum=1)
    if op not in COLLECTIVE_OPS:
        raise ValueError(f"unknown collective {op!r}; expected one of {', '.join(COLLECTIVE_OPS)}")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; expected {' or '.join(ALGORITHMS)}")
    if op == "collective-permute":
        return 1
    if g == 1:
        return 0
    per_phase = g - 1 if algorithm == "ring" else _log2_steps(g)
    return 2 * per_phase if op == "all-reduce" else per_phase


def algorithm_bytes(op: str, result_bytes: int, group_size: int, algorithm: str = "ring") -> int:
    """Bytes one device sends in one collective under ``algorithm``.

    ``ring``: :func:`collective_bytes`. ``tree``: the same for all-gather, reduce-scatter and
    all-reduce (recursive doubling and halving move ``(N-1)/N`` of the array, like the ring, for
    a power-of-two group); all-to-all (Bruck) sends half the per-device buffer at each of its
    ``ceil(log2 N)`` steps, ``S/2 ceil(log2 N)``, more than the ring's ``S (N-1)/N`` from
    N = 4 on: fewer steps, more bytes.
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; expected {' or '.join(ALGORITHMS)}")
    ring = collective_bytes(op, result_bytes, group_size)
    if algorithm == "tree" and op == "all-to-all":
        return _ceil_div(result_bytes * _log2_steps(group_size), 2)
    return ring


def collective_time(
    op: str,
    result_bytes: int,
    group_size: int,
    *,
    bandwidth: float,
    latency: float,
    algorithm: str = "ring",
    count: int = 1,
) -> dict[str, Any]:
    """The alpha-beta time of ``count`` executions of one collective.

    ``time = count x (latency x steps + bytes sent / bandwidth)``, with ``steps`` from
    :func:`algorithm_steps` and ``bytes`` from :func:`algorithm_bytes`; ``bandwidth`` is what one
    device sends per second (its egress), ``latency`` the seconds each step costs whatever its
    size (alpha). Returns ``{"op", "group_size", "algorithm", "count", "steps", "bytes",
    "t_latency", "t_bandwidth", "time"}`` (``steps`` and ``bytes`` per execution; times for
    all ``count``).
    """
    link = _positive("bandwidth", bandwidth)
    alpha = _non_negative("latency", latency)
    times = _count("count", count, minimum=0)
    steps = algorithm_steps(op, group_size, algorithm)
    sent = algorithm_bytes(op, result_bytes, group_size, algorithm)
    t_latency = times * steps * alpha
    t_bandwidth = times * sent / link
    return {
        "op": op,
        "group_size": int(group_size),
        "algorithm": algorithm,
        "count": times,
        "steps": steps,
        "bytes": sent,
        "t_latency": t_latency,
        "t_bandwidth": t_bandwidth,
        "time": t_latency + t_bandwidth,
    }


def step_comm_time(
    collectives: Sequence[Any],
    *,
    bandwidth: float,
    latency: float,
    algorithm: str = "ring",
) -> dict[str, Any]:
    """Alpha-beta communication time of one step: every collective record (as
    :func:`roofline_report.observe.sharding.parse_collectives` writes them: ``op``,
    ``result_bytes``,
    ``group_size``, ``trip_count``) priced by :func:`collective_time` with ``count`` = its trip
    count (1 when absent or unknown), run one after another.

    Returns ``{"t_latency", "t_bandwidth", "t_comm", "bytes", "steps", "collectives": [per
    record], "unpriced": int}``; ``bytes`` and ``steps`` are totals over the step (count
    included); records without an op formula, size or group are counted in ``unpriced``.
    """
    priced: list[dict[str, Any]] = []
    unpriced = 0
    for record in collectives:
        op, size, group = record.get("op"), record.get("result_bytes"), record.get("group_size")
        if op not in COLLECTIVE_OPS or size is None or group is None:
            unpriced += 1
            continue
        trips = record.get("trip_count")
        priced.append(
            collective_time(
                op, int(size), int(group), bandwidth=bandwidth, latency=latency,
                algorithm=algorithm, count=1 if trips is None else int(trips),
            )
        )  # fmt: skip
    t_latency = sum(p["t_latency"] for p in priced)
    t_bandwidth = sum(p["t_bandwidth"] for p in priced)
    return {
        "t_latency": t_latency,
        "t_bandwidth": t_bandwidth,
        "t_comm": t_latency + t_bandwidth,
        "bytes": sum(p["bytes"] * p["count"] for p in priced),
        "steps": sum(p["steps"] * p["count"] for p in priced),
        "collectives": priced,
        "unpriced": unpriced,
    }


def step_bounds(
    *,
    flops: float,
    hbm_bytes: float,
    collectives: Sequence[Any],
    peak_flops: float,
    hbm_bandwidth: float,
    interconnect_bandwidth: float,
    latency: float,
    algorithm: str = "ring",
) -> dict[str, Any]:
    """T_math, T_mem and the alpha-beta T_comm of one step per device, and the overlap bounds.

    Returns :func:`comm_bounds`'s keys (``t_comm`` now latency + bandwidth, ``lower_bound`` the
    max of the three, ``upper_bound`` their sum) plus ``"t_comm_latency"``,
    ``"t_comm_bandwidth"``, ``"comm_steps"``, ``"latency"``, ``"algorithm"`` and
    ``"comm_bytes"`` (bytes each device sends per step, loop trips included).
    """
    comm = step_comm_time(
        collectives, bandwidth=interconnect_bandwidth, latency=latency, algorithm=algorithm
    )
    work = _non_negative("flops", flops)
    traffic = _non_negative("hbm_bytes", hbm_bytes)
    peak = _positive("peak_flops", peak_flops)
    hbm = _positive("hbm_bandwidth", hbm_bandwidth)
    t_math, t_mem, t_comm = work / peak, traffic / hbm, comm["t_comm"]
    times = {"compute": t_math, "memory": t_mem, "communication": t_comm}
    lower = max(times.values())
    return {
        "t_math": t_math,
        "t_mem": t_mem,
        "t_comm": t_comm,
        "t_comm_latency": comm["t_latency"],
        "t_comm_bandwidth": comm["t_bandwidth"],
        "comm_steps": comm["steps"],
        "comm_bytes": comm["bytes"],
        "latency": float(latency),
        "algorithm": algorithm,
        "lower_bound": lower,
        "upper_bound": t_math + t_mem + t_comm,
        "binding": next(name for name, t in times.items() if t == lower),
        "critical_intensity": peak / _positive("interconnect_bandwidth", interconnect_bandwidth),
        "comm_intensity": None if comm["bytes"] == 0 else work / comm["bytes"],
    }


def critical_batch(
    *, batch: float, t_math: float, t_latency: float, t_bandwidth: float, comm_scales: bool
) -> float | None:
    """The batch at which T_math catches up with T_comm, the math growing in proportion to the
    batch (``t_math = a B``).

    Communication that does not grow with the batch (gradients and weights: data parallel,
    FSDP) costs ``L = t_latency + t_bandwidth`` at any batch, so ``B* = B L / t_math``. When it
    grows with the batch (activations: tensor parallel), only latency is fixed: ``t_comm = L +
    c B`` with ``L = t_latency``, ``c = t_bandwidth / B``, and ``B* = L / (a - c)``, or None when
    ``c >= a`` (no batch makes the step compute-bound). Also None with no math or nothing
    communicated.
    """
    b = _positive("batch", batch)
    math_t = _non_negative("t_math", t_math)
    lat = _non_negative("t_latency", t_latency)
    bw = _non_negative("t_bandwidth", t_bandwidth)
    if math_t == 0 or lat + bw == 0:
        return None
    a = math_t / b
    if not comm_scales:
        return (lat + bw) / a
    c = bw / b
    if c >= a:
        return None
    return lat / (a - c)


PROJECTION_DEVICES: tuple[int, ...] = (8, 64, 256, 1024)
"""Device counts of the projection beyond the compiled program (:func:`project_step`)."""


def project_collective(
    record: Any, *, devices: int, to_devices: int, batch_factor: float = 1.0
) -> dict[str, Any]:
    """One collective of an ``devices``-device program, as it would be on ``to_devices``.

    A group that spans every device grows to ``to_devices``; a smaller group (a sub-mesh axis)
    keeps its size. The full array keeps its size, so an all-gather's and an all-reduce's result
    stay, and a reduce-scatter's result (1/g of the array) shrinks to 1/g'. ``batch_factor``
    multiplies the bytes of a collective whose array grows with the batch (pass 1 for the
    others). Returns a copy of the record with ``group_size`` and ``result_bytes`` replaced.
    """
    n = _count("devices", devices, minimum=1)
    m = _count("to_devices", to_devices, minimum=1)
    group = int(record["group_size"])
    size = int(record["result_bytes"])
    new_group = m if group == n else group
    if record["op"] == "reduce-scatter":
        size = _ceil_div(size * group, new_group)
    size = math.ceil(size * batch_factor)
    return {**record, "group_size": new_group, "result_bytes": size}


def project_step(
    *,
    flops: float,
    hbm_bytes: float,
    collectives: Sequence[Any],
    devices: int,
    to_devices: int,
    comm_scales: bool,
    peak_flops: float,
    hbm_bandwidth: float,
    interconnect_bandwidth: float,
    latency: float,
    algorithm: str = "ring",
) -> dict[str, Any]:
    """:func:`step_bounds` of the step projected from ``devices`` to ``to_devices`` devices.

    Weak scaling: each device keeps its share of the batch, so its flops and HBM traffic stay
    those of the compiled program, and the global batch grows by ``to_devices / devices``.
    Collectives follow :func:`project_collective`; with ``comm_scales`` (their arrays grow with
    the batch, as tensor-parallel activations do) their bytes grow with the global batch.
    Returns step_bounds' keys plus ``"devices"`` and ``"batch_factor"``.
    """
    factor = _count("to_devices", to_devices, minimum=1) / _count("devices", devices, minimum=1)
    projected = [
        project_collective(
            c, devices=devices, to_devices=to_devices,
            batch_factor=factor if comm_scales else 1.0,
        )
        for c in collectives
        if c.get("op") in COLLECTIVE_OPS and c.get("result_bytes") is not None
        and c.get("group_size") is not None
    ]  # fmt: skip
    bounds = step_bounds(
        flops=flops, hbm_bytes=hbm_bytes, collectives=projected, peak_flops=peak_flops,
        hbm_bandwidth=hbm_bandwidth, interconnect_bandwidth=interconnect_bandwidth,
        latency=latency, algorithm=algorithm,
    )  # fmt: skip
    return {**bounds, "devices": int(to_devices), "batch_factor": factor}
