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
:func:`collective_cost`, :func:`step_bounds`) adds a latency per algorithm step: ``T = alpha x
steps + bytes / beta`` per collective (alpha the latency of one step, beta the bandwidth one
device sends at), with the ring and tree algorithms' steps and bytes of :func:`algorithm_steps`
and :func:`algorithm_bytes`. For ring collectives these are the formulas of "How to Scale Your
Model" (chapter "Sharded Matrices"): an all-gather or reduce-scatter of an array of V bytes
over N devices sends ``V (N-1)/N`` per device in ``N-1`` hops, an all-reduce is a
reduce-scatter then an all-gather (twice both), an all-to-all sends ``V (N-1)/N`` of a
per-device buffer V.

A network is one or two :class:`Level` s: a fast domain (NVLink through NVSwitch, a TPU pod's
ICI torus) and the network across domains (InfiniBand), each with its own bandwidth and latency.
A collective over more devices than one domain holds runs hierarchically (:func:`_phases`),
each level priced on its own, with the faster of the ring and the tree on a switch and the ring
along the axes of a torus. A combined collective (several arrays in one instruction) pays its
latency once, for all its bytes. :func:`critical_batch` finds the batch at which the math
catches up with the communication, :func:`project_step` carries a compiled step to more devices
(weak scaling), flagging weights that do not split that many ways. Every function here is pure
and deterministic.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roofline_report.hlo.collectives import (
    COLLECTIVE_OPS,
    _ceil_div,
    _count,
    collective_bytes,
    collective_memory_bytes,
    full_array_bytes,
)
from roofline_report.kinds import Kind

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


# --------------------------------------------------------------------------------------------
# Networks of one or two levels: a fast domain (NVLink, a TPU slice's ICI torus) and the network
# across domains, each with its own bandwidth and latency
# --------------------------------------------------------------------------------------------

TOPOLOGIES: tuple[str, ...] = ("switch", "torus")


@dataclass(frozen=True, slots=True)
class Level:
    """One level of the network a collective crosses.

    ``topology`` ``"switch"``: every device of the level reaches every other at ``bandwidth``
    bytes/s (its egress: NVLink through NVSwitch, one InfiniBand port per GPU); the ring and
    the tree (recursive halving and doubling) are both priced and the faster kept.
    ``"torus"``: chips on a torus of the axes ``torus`` (a TPU pod's 16 x 16), each link
    ``bandwidth`` bytes/s one way; a group of chips occupies the slice ``slices`` publishes for
    its size (else the most nearly square one that fits), and a ring along an axis that spans
    the whole torus axis has its wraparound: it sends both ways at twice the link bandwidth in
    half the hops ("How to Scale Your Model", chapter "Sharded Matrices"). ``devices``: how
    many devices one unit of this level holds (the fast domain's size); None: any number (the
    outermost level). ``latency`` is the seconds one step costs whatever its size (alpha).
    """

    name: str
    bandwidth: float
    latency: float
    devices: int | None = None
    topology: str = "switch"
    torus: tuple[int, ...] = ()
    slices: tuple[tuple[int, tuple[int, ...]], ...] = ()
    bandwidth_kind: str = Kind.HYPOTHETICAL.value
    latency_kind: str = Kind.HYPOTHETICAL.value

    def __post_init__(self) -> None:
        _positive("bandwidth", self.bandwidth)
        _non_negative("latency", self.latency)
        if self.devices is not None:
            _count("devices", self.devices, minimum=1)
        if self.topology not in TOPOLOGIES:
            raise ValueError(f"unknown topology {self.topology!r}; expected switch or torus")
        if self.topology == "torus":
            if not self.torus or any(int(a) < 1 for a in self.torus):
                raise ValueError("a torus level needs its axes, such as (16, 16)")
            if self.devices != math.prod(self.torus):
                raise ValueError(f"a torus of {self.torus} holds {math.prod(self.torus)} "
                                 f"devices, not {self.devices}")

    def shape_of(self, devices: int) -> tuple[int, ...] | None:
        """The torus slice ``devices`` chips occupy: the published one for that count, else the
        most nearly square factorisation that fits the axes; None when none fits."""
        published = dict(self.slices).get(devices)
        if published is not None:
            return tuple(published)
        best: tuple[int, ...] | None = None
        for shape in _factorisations(devices, tuple(sorted(self.torus))):
            if best is None or (max(shape), shape) < (max(best), best):
                best = shape
        return best

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "bandwidth": self.bandwidth, "latency": self.latency,
                "devices": self.devices, "topology": self.topology, "torus": list(self.torus),
                "bandwidth_kind": self.bandwidth_kind, "latency_kind": self.latency_kind}


def _factorisations(devices: int, axes: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Every way to write ``devices`` as one factor per axis, each at most its axis."""
    if not axes:
        return [()] if devices == 1 else []
    out = []
    for factor in range(1, min(devices, axes[0]) + 1):
        if devices % factor == 0:
            out += [(factor, *rest) for rest in _factorisations(devices // factor, axes[1:])]
    return out


def flat_network(bandwidth: float, latency: float, *, kind: str = Kind.HYPOTHETICAL.value,
                 name: str = "interconnect") -> tuple[Level, ...]:
    """One switched level of any size: the assumed budgets' interconnect."""
    return (Level(name, bandwidth, latency, None, bandwidth_kind=kind, latency_kind=kind),)


class NotPriced(ValueError):
    """A collective the network as described cannot carry (a group larger than its last level,
    a group that fits no slice of the torus); the message says why."""


def _switch_phase(op: str, full: int, g: int, algorithm: str) -> tuple[int, int]:
    """(steps, bytes one device sends) of one collective of the array ``full`` over ``g``
    devices of a switched level."""
    if op == "collective-permute":
        return 1, full
    if g <= 1:
        return 0, 0
    per = g - 1 if algorithm == "ring" else _log2_steps(g)
    if op == "all-to-all":
        sent = _ceil_div(full * (g - 1), g) if algorithm == "ring" else _ceil_div(full * per, 2)
        return per, sent
    if op == "all-reduce":
        return 2 * per, _ceil_div(2 * full * (g - 1), g)
    return per, _ceil_div(full * (g - 1), g)


def _torus_phase(op: str, full: int, g: int, level: Level) -> tuple[int, int, float, str]:
    """(steps, bytes, egress bytes/s, slice text) of one collective over ``g`` chips of a torus
    level: per axis of the slice longer than 1, a ring of ``ceil(a/2)`` hops sending both ways
    when the axis is whole (wraparound), ``a - 1`` hops one way when it is not; the axes' links
    send at once, so the egress is the sum of theirs."""
    shape = level.shape_of(g)
    if shape is None:
        raise NotPriced(f"{g} chips fit no slice of the {level.name} "
                        f"({' x '.join(map(str, level.torus))})")
    text = " x ".join(map(str, shape))
    if op == "collective-permute":
        return 1, full, level.bandwidth, text
    if g <= 1:
        return 0, 0, level.bandwidth, text
    axes = sorted(level.torus)
    steps = 0
    egress = 0.0
    for size, whole in zip(shape, axes, strict=True):
        if size <= 1:
            continue
        wraps = size == whole
        steps += math.ceil(size / 2) if wraps else size - 1
        egress += level.bandwidth * (2 if wraps else 1)
    if op == "all-reduce":
        return 2 * steps, _ceil_div(2 * full * (g - 1), g), egress, text
    return steps, _ceil_div(full * (g - 1), g), egress, text


def _phase_cost(op: str, full: int, g: int, level: Level, count: int, algorithm: str
                ) -> dict[str, Any]:
    """One level's part of a collective: the ring or the tree on a switch (``algorithm``
    ``"best"``: whichever takes less time, the other kept as ``"rejected"``), the ring on a
    torus."""

    def priced(name: str, steps: int, sent: int, egress: float, shape: str | None
               ) -> dict[str, Any]:
        t_latency = count * steps * level.latency
        t_bandwidth = count * sent / egress
        return {"level": level.name, "topology": level.topology, "devices": g,
                "algorithm": name, "steps": steps, "bytes": sent, "bandwidth": egress,
                "latency": level.latency, "slice": shape, "t_latency": t_latency,
                "t_bandwidth": t_bandwidth, "time": t_latency + t_bandwidth, "rejected": None,
                "latency_kind": level.latency_kind, "bandwidth_kind": level.bandwidth_kind}

    if level.topology == "torus":
        steps, sent, egress, shape = _torus_phase(op, full, g, level)
        return priced("ring", steps, sent, egress, shape)
    names = ALGORITHMS if algorithm == "best" else (algorithm,)
    options = [priced(name, *_switch_phase(op, full, g, name), level.bandwidth, None)
               for name in names]
    options.sort(key=lambda o: (o["time"], o["steps"]))
    chosen = options[0]
    if len(options) > 1:
        chosen["rejected"] = {"algorithm": options[1]["algorithm"], "time": options[1]["time"]}
    return chosen


def _phases(op: str, full: int, group: int, network: Sequence[Level]
            ) -> list[tuple[Level, str, int, int]]:
    """(level, op, array, devices) of each level a collective over ``group`` devices crosses.

    Within one unit of the first level: one phase. Beyond it (``D`` devices per unit, ``M``
    units, ``D M`` = the group), hierarchically: an all-gather gathers the array's ``1/D``
    across the units, then the whole array inside each; a reduce-scatter the reverse; an
    all-reduce reduce-scatters inside, all-reduces ``V/D`` across and all-gathers inside; an
    all-to-all sends ``(D-1)/G`` of its buffer inside and ``(G-D)/G`` across; a permute whose
    group spans units crosses the outer level once.
    """
    inner = network[0]
    domain = inner.devices
    if domain is None or group <= domain:
        return [(inner, op, full, group)]
    if len(network) < 2:
        raise NotPriced(f"a group of {group:,} devices is larger than one {inner.name} domain of "
                        f"{domain:,}, and no network across domains is given")
    outer = network[1]
    units = _ceil_div(group, domain)
    if op == "collective-permute":
        return [(outer, op, full, units)]
    if op == "all-to-all":
        return [(inner, op, _ceil_div(full, units), domain), (outer, op, full, units)]
    return [(inner, op, full, domain), (outer, op, _ceil_div(full, domain), units)]


def collective_cost(op: str, result_bytes: int, group_size: int, network: Sequence[Level], *,
                    count: int = 1, algorithm: str = "best") -> dict[str, Any]:
    """The alpha-beta time of ``count`` runs of one collective on a network of levels.

    ``result_bytes`` is the result one device holds (a combined collective's arrays added:
    XLA runs them as one, so the latency is paid once and the bytes together). Per level
    (:func:`_phases`): ``latency x steps + bytes / bandwidth``, its algorithm chosen by the
    smaller time unless ``algorithm`` names one; the levels run one after the other. Returns
    ``{"op", "group_size", "count", "array_bytes", "levels": [per level: "level",
    "topology", "devices", "algorithm", "steps", "bytes", "bandwidth", "latency", "slice",
    "t_latency", "t_bandwidth", "time", "rejected", kinds], "algorithm" (text), "steps",
    "bytes" (per run, all levels), "t_latency", "t_bandwidth", "time" (all runs),
    "memory_bytes" (per run, :func:`collective_memory_bytes`)}``.

    Raises NotPriced when the network cannot carry the group, ValueError for bad arguments.
    """
    if op not in COLLECTIVE_OPS:
        raise ValueError(f"unknown collective {op!r}; expected one of {', '.join(COLLECTIVE_OPS)}")
    if algorithm not in (*ALGORITHMS, "best"):
        raise ValueError(f"unknown algorithm {algorithm!r}; expected ring, tree or best")
    if not network:
        raise ValueError("a network needs at least one level")
    group = _count("group_size", group_size, minimum=1)
    runs = _count("count", count, minimum=0)
    full = full_array_bytes(op, result_bytes, group)
    levels = [_phase_cost(o, array, g, level, runs, algorithm)
              for level, o, array, g in _phases(op, full, group, network)]
    t_latency = sum(p["t_latency"] for p in levels)
    t_bandwidth = sum(p["t_bandwidth"] for p in levels)
    return {
        "op": op,
        "group_size": group,
        "count": runs,
        "array_bytes": full,
        "levels": levels,
        "algorithm": ", then ".join(f"{p['algorithm']} ({p['level']})" for p in levels)
        if len(levels) > 1 else levels[0]["algorithm"],
        "steps": sum(p["steps"] for p in levels),
        "bytes": sum(p["bytes"] for p in levels),
        "t_latency": t_latency,
        "t_bandwidth": t_bandwidth,
        "time": t_latency + t_bandwidth,
        "memory_bytes": collective_memory_bytes(op, int(result_bytes), group),
    }


def priced_bytes(record: Mapping[str, Any]) -> int | None:
    """The bytes a collective record is priced at: its arrays in the program's dtype where it
    was read (``program_result_bytes``), else as compiled (``result_bytes``)."""
    value = record.get("program_result_bytes")
    if value is None:
        value = record.get("result_bytes")
    return None if value is None else int(value)


def combine_records(collectives: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One record per collective instruction: records of one instruction (results saved when a
    combined collective was listed once per array) are merged, their bytes added. Records
    without an instruction name stay as they are."""
    out: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    for record in collectives:
        name = record.get("instruction")
        if not name or name not in index:
            if name:
                index[name] = len(out)
            out.append(dict(record))
            continue
        merged = out[index[name]]
        for key in ("result_bytes", "program_result_bytes", "bytes_per_device",
                    "program_bytes_per_device"):
            if merged.get(key) is not None and record.get(key) is not None:
                merged[key] = int(merged[key]) + int(record[key])
        merged["arrays"] = [*(merged.get("arrays") or [_array_of(merged)]), _array_of(record)]
        merged["shape"] = None
    return out


def _array_of(record: Mapping[str, Any]) -> dict[str, Any]:
    return {"dtype": record.get("dtype"), "shape": record.get("shape"),
            "bytes": record.get("result_bytes")}


def step_comm_time(collectives: Sequence[Any], network: Sequence[Level], *,
                   algorithm: str = "best") -> dict[str, Any]:
    """Alpha-beta communication time of one step: every collective record (as
    :func:`roofline_report.observe.sharded_collectives.parse_collectives` writes them: ``op``, bytes
    (:func:`priced_bytes`), ``group_size``, ``trip_count``), one per instruction
    (:func:`combine_records`), priced by :func:`collective_cost` with ``count`` = its trip
    count, run one after another.

    A trip count of None (a while loop whose count the compiler does not know) is counted
    once and tallied in ``"unknown_trips"``: the totals are then lower bounds. Returns
    ``{"t_latency", "t_bandwidth", "t_comm", "bytes", "steps", "memory_bytes", "collectives":
    [collective_cost(...) with "record"], "unpriced": int, "unknown_trips": int,
    "not_priced": [reasons]}``; ``bytes``, ``steps`` and ``memory_bytes`` are totals over the
    step (counts included); records without an op formula, size or group count in
    ``unpriced``, those the network cannot carry in ``not_priced``.
    """
    priced: list[dict[str, Any]] = []
    unpriced = unknown = 0
    not_priced: list[str] = []
    for record in combine_records(collectives):
        op, size, group = record.get("op"), priced_bytes(record), record.get("group_size")
        if op not in COLLECTIVE_OPS or size is None or group is None:
            unpriced += 1
            continue
        trips = record.get("trip_count", 1)
        if trips is None:
            unknown += 1
        try:
            cost = collective_cost(op, size, int(group), network, algorithm=algorithm,
                                   count=1 if trips is None else int(trips))
        except NotPriced as exc:
            not_priced.append(str(exc))
            continue
        priced.append({**cost, "record": record})
    t_latency = sum(p["t_latency"] for p in priced)
    t_bandwidth = sum(p["t_bandwidth"] for p in priced)
    return {
        "t_latency": t_latency,
        "t_bandwidth": t_bandwidth,
        "t_comm": t_latency + t_bandwidth,
        "bytes": sum(p["bytes"] * p["count"] for p in priced),
        "steps": sum(p["steps"] * p["count"] for p in priced),
        "memory_bytes": sum(p["memory_bytes"] * p["count"] for p in priced),
        "collectives": priced,
        "unpriced": unpriced,
        "unknown_trips": unknown,
        "not_priced": list(dict.fromkeys(not_priced)),
    }


def _levels_summary(priced: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per network level: its latency and bandwidth time, bytes, steps and the algorithms
    chosen there, over every priced collective."""
    out: dict[str, dict[str, Any]] = {}
    for cost in priced:
        for p in cost["levels"]:
            row = out.setdefault(p["level"], {
                "level": p["level"], "topology": p["topology"], "t_latency": 0.0,
                "t_bandwidth": 0.0, "bytes": 0, "steps": 0, "algorithms": [],
                "devices": p["devices"], "slice": p["slice"],
                "latency_kind": p["latency_kind"], "bandwidth_kind": p["bandwidth_kind"]})
            row["t_latency"] += p["t_latency"]
            row["t_bandwidth"] += p["t_bandwidth"]
            row["bytes"] += p["bytes"] * cost["count"]
            row["steps"] += p["steps"] * cost["count"]
            row["devices"] = max(row["devices"], p["devices"])
            if p["algorithm"] not in row["algorithms"]:
                row["algorithms"].append(p["algorithm"])
    return list(out.values())


def step_bounds(
    *,
    flops: float,
    hbm_bytes: float,
    collectives: Sequence[Any],
    peak_flops: float,
    hbm_bandwidth: float,
    network: Sequence[Level],
    algorithm: str = "best",
    count_buffers: bool = False,
) -> dict[str, Any]:
    """T_math, T_mem and the alpha-beta T_comm of one step per device, and the overlap bounds.

    Returns :func:`comm_bounds`'s keys (``t_comm`` now latency + bandwidth, ``lower_bound`` the
    max of the three, ``upper_bound`` their sum) plus ``"t_comm_latency"``,
    ``"t_comm_bandwidth"``, ``"comm_steps"``, ``"comm_bytes"`` (bytes each device sends per
    step, loop trips included), ``"comm_memory_bytes"`` (the collectives' own buffers,
    :func:`~roofline_report.hlo.collectives.collective_memory_bytes`), ``"memory_bytes"`` (the
    memory traffic T_mem prices: ``hbm_bytes``, plus the buffers with ``count_buffers``),
    ``"levels"`` (per network level), ``"algorithms"``, ``"unknown_trips"`` and
    ``"comm_lower_bound"`` (True when a loop's trip count is unknown: the communication is then
    at least this), ``"not_priced"``. ``critical_intensity`` is the peak over the slowest
    level's bandwidth.
    """
    comm = step_comm_time(collectives, network, algorithm=algorithm)
    work = _non_negative("flops", flops)
    traffic = _non_negative("hbm_bytes", hbm_bytes)
    peak = _positive("peak_flops", peak_flops)
    hbm = _positive("hbm_bandwidth", hbm_bandwidth)
    memory = traffic + (comm["memory_bytes"] if count_buffers else 0)
    t_math, t_mem, t_comm = work / peak, memory / hbm, comm["t_comm"]
    times = {"compute": t_math, "memory": t_mem, "communication": t_comm}
    lower = max(times.values())
    levels = _levels_summary(comm["collectives"])
    slowest = min(level.bandwidth for level in network)
    return {
        "t_math": t_math,
        "t_mem": t_mem,
        "t_comm": t_comm,
        "t_comm_latency": comm["t_latency"],
        "t_comm_bandwidth": comm["t_bandwidth"],
        "comm_steps": comm["steps"],
        "comm_bytes": comm["bytes"],
        "comm_memory_bytes": comm["memory_bytes"],
        "memory_bytes": memory,
        "levels": levels,
        "algorithms": sorted({a for level in levels for a in level["algorithms"]}),
        "unknown_trips": comm["unknown_trips"],
        "comm_lower_bound": comm["unknown_trips"] > 0,
        "not_priced": comm["not_priced"],
        "lower_bound": lower,
        "upper_bound": t_math + t_mem + t_comm,
        "binding": next(name for name, t in times.items() if t == lower),
        "critical_intensity": peak / slowest,
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
    others). Bytes are :func:`priced_bytes` (the program's dtype where it was read). Returns
    ``{"op", "instruction", "result_bytes", "group_size", "trip_count"}``.
    """
    n = _count("devices", devices, minimum=1)
    m = _count("to_devices", to_devices, minimum=1)
    group = int(record["group_size"])
    size = priced_bytes(record)
    if size is None:
        raise ValueError("a collective record needs result_bytes")
    new_group = m if group == n else group
    if record["op"] == "reduce-scatter":
        size = _ceil_div(size * group, new_group)
    size = math.ceil(size * batch_factor)
    return {"op": record["op"], "instruction": record.get("instruction"), "result_bytes": size,
            "group_size": new_group, "trip_count": record.get("trip_count", 1)}


def split_problems(split_dims: Sequence[Mapping[str, Any]], to_devices: int
                   ) -> tuple[str | None, list[str]]:
    """(why the step cannot be projected to ``to_devices`` or None, flags) from the dimensions
    the program splits over its mesh axis (``{"argument", "dim", "size", "data"}``).

    Data dimensions grow with the global batch (weak scaling) and always divide; a dimension of
    the model's state (weights, optimizer moments) keeps its size: fewer elements than devices
    cannot be split (not projected), a size the devices do not divide is padded (flagged).
    """
    flags: list[str] = []
    for d in split_dims:
        if d.get("data"):
            continue
        size = int(d["size"])
        where = f"{d['argument']} dimension {d['dim']} ({size:,})"
        if size < to_devices:
            return (f"{where} cannot be split over {to_devices:,} devices: fewer elements than "
                    "devices"), flags
        if size % to_devices:
            flags.append(f"{where} does not divide over {to_devices:,} devices: shards padded to "
                         f"{_ceil_div(size, to_devices):,}")
    return None, flags


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
    network: Sequence[Level],
    hbm_parts: Mapping[str, Any] | None = None,
    split_dims: Sequence[Mapping[str, Any]] = (),
    algorithm: str = "best",
) -> dict[str, Any]:
    """:func:`step_bounds` of the step projected from ``devices`` to ``to_devices`` devices.

    Weak scaling: each device keeps its share of the batch, so its flops stay those of the
    compiled program and the global batch grows by ``to_devices / devices``. Collectives follow
    :func:`project_collective`; with ``comm_scales`` (their arrays grow with the batch, as
    tensor-parallel activations do) their bytes grow with the global batch. Memory traffic:
    ``hbm_parts`` (``{"data", "data_split", "state", "state_split", "other"}``, bytes of the
    arguments' and results' shards per device) rescales the shards (data split over the mesh
    stays, replicated data grows with the batch; state split over the mesh shrinks as
    ``devices / to_devices``); without it ``hbm_bytes`` stays. The collectives' own buffers
    (the gathered weights) are added (``count_buffers``). Dimensions that do not split
    (:func:`split_problems`) flag the row or stop it.

    Returns step_bounds' keys plus ``"available": True``, ``"devices"``, ``"batch_factor"``,
    ``"hbm_shards"``, ``"flags"``; or ``{"available": False, "devices", "reason"}``.
    """
    n = _count("devices", devices, minimum=1)
    m = _count("to_devices", to_devices, minimum=1)
    factor = m / n
    reason, flags = split_problems(split_dims, m)
    if reason is not None:
        return {"available": False, "devices": m, "reason": reason}
    projected = [
        project_collective(c, devices=n, to_devices=m, batch_factor=factor if comm_scales else 1.0)
        for c in combine_records(collectives)
        if c.get("op") in COLLECTIVE_OPS and priced_bytes(c) is not None
        and c.get("group_size") is not None
    ]
    shards = _non_negative("hbm_bytes", hbm_bytes)
    if hbm_parts:
        data = float(hbm_parts.get("data", 0)) * (1 if hbm_parts.get("data_split") else factor)
        state = float(hbm_parts.get("state", 0)) * (n / m if hbm_parts.get("state_split") else 1)
        shards = data + state + float(hbm_parts.get("other", 0))
    bounds = step_bounds(
        flops=flops, hbm_bytes=shards, collectives=projected, peak_flops=peak_flops,
        hbm_bandwidth=hbm_bandwidth, network=network, algorithm=algorithm, count_buffers=True,
    )  # fmt: skip
    if bounds["not_priced"]:
        return {"available": False, "devices": m, "reason": bounds["not_priced"][0]}
    return {**bounds, "available": True, "devices": m, "batch_factor": factor,
            "hbm_shards": shards, "flags": flags}
