"""Networks of one or two levels: a fast domain (NVLink, a TPU slice's ICI torus) and the network
across domains, each with its own bandwidth and latency (:class:`Level`). A collective over more
devices than one domain holds runs hierarchically (:func:`_phases`), each level priced with the
algorithm the libraries run there, and the levels pipelined as NCCL runs them
(:func:`collective_cost`). Pure and deterministic.

Per level (the notes are :data:`~roofline_report.analysis.comm_alpha_beta.ALGORITHM_NOTES`):

* on a switch (NVLink through NVSwitch, InfiniBand), NCCL's algorithms: the ring or the double
  binary tree for an all-reduce (the faster priced), the ring for an all-gather or
  reduce-scatter, a direct all-to-all;
* on a torus (a TPU slice), rings along the axes the group spans, both ways on an axis that
  wraps around, one way on one that does not ("How to Scale Your Model", 'Sharded Matrices');
  an all-to-all bound by the bisection of the group's slice.

Levels pipelined: NCCL and the scaling book's GPU chapter run a hierarchical collective's
levels at once on chunks of the array, so its bandwidth time is the slower level's ("How to
Think About GPUs": ``T = max(T_node, T_scale-out)``); the latency of every level is paid once
(the pipeline fills through each).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from roofline_report.analysis.comm import non_negative, positive
from roofline_report.analysis.comm_alpha_beta import (
    ALGORITHMS,
    SWITCH_ALGORITHMS,
    algorithm_bytes,
    algorithm_steps,
)
from roofline_report.hlo.collectives import (
    COLLECTIVE_OPS,
    _ceil_div,
    _count,
    collective_memory_bytes,
    full_array_bytes,
)
from roofline_report.kinds import Kind

TOPOLOGIES: tuple[str, ...] = ("switch", "torus")


@dataclass(frozen=True, slots=True)
class Level:
    """One level of the network a collective crosses.

    ``topology`` ``"switch"``: every device of the level reaches every other at ``bandwidth``
    bytes/s (its egress: NVLink through NVSwitch, one InfiniBand port per GPU).
    ``"torus"``: chips on a torus of the axes ``torus`` (a TPU pod's 16 x 16), each link
    ``bandwidth`` bytes/s one way; a group that owns its slice occupies the shape ``slices``
    publishes for its size (else the most nearly square one that fits), a group of a mesh is
    priced on the axes it spans (:func:`mesh_span`). An axis of a slice wraps around when it
    spans the whole torus axis, or, with ``wraps_every`` k, when the slice is made of whole k x
    k x k cubes (TPU v4 and v5p close them with optical links; a smaller slice is a mesh); a
    group given its span on a larger slice is taken to sit in whole cubes, so an axis of a
    multiple of k wraps. ``devices``: how
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
    wraps_every: int | None = None

    def __post_init__(self) -> None:
        positive("bandwidth", self.bandwidth)
        non_negative("latency", self.latency)
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

    def wraps(self, extent: int, axis: int, cubes: bool = True) -> bool:
        """Whether a ring of ``extent`` chips along a torus axis of ``axis`` chips closes;
        ``cubes``: whether the slice it lies in is made of whole cubes (``wraps_every``)."""
        if extent <= 2:
            return False
        if extent == axis:
            return True
        every = self.wraps_every
        return bool(every) and cubes and extent % int(every or 1) == 0

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "bandwidth": self.bandwidth, "latency": self.latency,
                "devices": self.devices, "topology": self.topology, "torus": list(self.torus),
                "bandwidth_kind": self.bandwidth_kind, "latency_kind": self.latency_kind,
                "wraps_every": self.wraps_every}


def _factorisations(devices: int, axes: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Every way to write ``devices`` as one factor per axis, each at most its axis."""
    if not axes:
        return [()] if devices == 1 else []
    out = []
    for factor in range(1, min(devices, axes[0]) + 1):
        if devices % factor == 0:
            out += [(factor, *rest) for rest in _factorisations(devices // factor, axes[1:])]
    return out


def mesh_span(mesh_shape: Sequence[int], group_axes: Sequence[int],
              slice_shape: Sequence[int]) -> tuple[int, ...] | None:
    """The extent along each axis of ``slice_shape`` of a group that runs along the mesh axes
    ``group_axes`` (indices into ``mesh_shape``), the mesh laid on the slice as TPU runtimes
    lay it: a mesh axis on the slice axis of its own length (matched from the last mesh axis),
    else on consecutive slice axes whose lengths multiply to it. None when the mesh does not
    fit the slice that way."""
    if math.prod(mesh_shape) != math.prod(slice_shape):
        return None
    free = list(range(len(slice_shape)))
    placed: dict[int, list[int]] = {}
    for m in sorted(range(len(mesh_shape)), key=lambda i: (-int(mesh_shape[i]), -i)):
        size = int(mesh_shape[m])
        if size == 1:
            placed[m] = []
            continue
        same = [a for a in free if int(slice_shape[a]) == size]
        if same:
            placed[m] = [same[-1]]
            free.remove(same[-1])
            continue
        run: list[int] = []
        for a in list(free):
            if size % (math.prod(int(slice_shape[b]) for b in run) * int(slice_shape[a])):
                continue
            run.append(a)
            if math.prod(int(slice_shape[b]) for b in run) == size:
                break
        if math.prod(int(slice_shape[b]) for b in run) != size:
            return None
        placed[m] = run
        for a in run:
            free.remove(a)
    span = [1] * len(slice_shape)
    for m in group_axes:
        for a in placed[int(m)]:
            span[a] = int(slice_shape[a])
    return tuple(span)


def flat_network(bandwidth: float, latency: float, *, kind: str = Kind.HYPOTHETICAL.value,
                 name: str = "interconnect") -> tuple[Level, ...]:
    """One switched level of any size: the assumed budgets' interconnect."""
    return (Level(name, bandwidth, latency, None, bandwidth_kind=kind, latency_kind=kind),)


@dataclass(frozen=True, slots=True)
class RejectedAlgorithm:
    """The algorithm a level did not choose, and its time."""

    algorithm: str
    time: float


@dataclass(frozen=True, slots=True)
class PricedLevel:
    """One network level's part of a collective (:func:`collective_cost`)."""

    level: str
    topology: str
    devices: int
    algorithm: str
    steps: int
    bytes: int
    bandwidth: float
    latency: float
    slice: str | None
    cut_links: int | None
    t_latency: float
    t_bandwidth: float
    time: float
    rejected: RejectedAlgorithm | None
    binds: bool  # the slower level: its bandwidth time is the collective's
    latency_kind: str
    bandwidth_kind: str


@dataclass(frozen=True, slots=True)
class CollectiveCost:
    """The alpha-beta time of a collective's runs on a network of levels
    (:func:`collective_cost`): ``steps`` and ``bytes`` per run over all levels, the times over
    all runs, ``memory_bytes`` per run."""

    op: str
    group_size: int
    count: int
    array_bytes: int
    levels: tuple[PricedLevel, ...]
    algorithm: str
    pipelined: bool
    steps: int
    bytes: int
    t_latency: float
    t_bandwidth: float
    time: float
    memory_bytes: int


class NotPriced(ValueError):
    """A collective the network as described cannot carry (a group larger than its last level,
    a group that fits no slice of the torus); the message says why."""


def _torus_phase(op: str, full: int, g: int, level: Level, span: Sequence[int] | None
                 ) -> tuple[str, int, int, float, str, int | None]:
    """(algorithm, steps, bytes, egress bytes/s, slice text, links across the cut) of one
    collective over ``g`` chips of a torus level, on the slice ``span`` (per torus axis, in the
    order of ``sorted(level.torus)``) or the group's own slice.

    Rings: per axis of the span longer than 1, ``ceil(a/2)`` hops both ways when it wraps, ``a
    - 1`` one way when not; the axes' links send at once, so the egress is their sum. An
    all-to-all crosses the slice's narrowest cut: ``n1 n2 S / N`` bytes one way over the links
    of the cut (``N / a`` per side, twice that with the wraparound), in as many hops as the
    slice's diameter; its egress is what one device's ``S (N-1)/N`` takes that long to send."""
    axes = sorted(level.torus)
    shape = tuple(span) if span is not None else level.shape_of(g)
    if shape is None or math.prod(shape) != g or len(shape) != len(axes) or any(
            s > a for s, a in zip(shape, axes, strict=True)):
        raise NotPriced(f"{g} chips fit no slice of the {level.name} "
                        f"({' x '.join(map(str, level.torus))})")
    text = " x ".join(map(str, shape))
    if op == "collective-permute":
        return "direct", 1, full, level.bandwidth, text, None
    if g <= 1:
        return "torus ring", 0, 0, level.bandwidth, text, None
    every = level.wraps_every or 0
    cubes = span is not None or (every > 0 and all(s % every == 0 for s in shape))
    long_axes = [(size, level.wraps(size, whole, cubes))
                 for size, whole in zip(shape, axes, strict=True) if size > 1]
    diameter = sum(size // 2 if wraps else size - 1 for size, wraps in long_axes)
    if op == "all-to-all":
        sent = _ceil_div(full * (g - 1), g)
        worst = 0.0
        cut_links = 0
        for size, wraps in long_axes:
            links = (g // size) * (2 if wraps else 1)
            side = (g // size) * (size // 2)
            seconds = side * (g - side) * full / g / (links * level.bandwidth)
            if seconds > worst:
                worst, cut_links = seconds, links
        return "bisection", diameter, sent, sent / worst, text, cut_links
    steps = sum(math.ceil(size / 2) if wraps else size - 1 for size, wraps in long_axes)
    egress = sum(level.bandwidth * (2 if wraps else 1) for _, wraps in long_axes)
    if op == "all-reduce":
        return "torus ring", 2 * steps, _ceil_div(2 * full * (g - 1), g), egress, text, None
    return "torus ring", steps, _ceil_div(full * (g - 1), g), egress, text, None


def _phase_cost(op: str, full: int, g: int, level: Level, count: int, algorithm: str,
                span: Sequence[int] | None = None) -> PricedLevel:
    """One level's part of a collective: on a switch the algorithms NCCL runs for ``op``
    (``algorithm`` ``"best"``: whichever takes less time, the other kept as ``"rejected"``), on
    a torus its rings or its bisection."""

    def priced(name: str, steps: int, sent: int, egress: float, shape: str | None,
               cut: int | None = None) -> PricedLevel:
        t_latency = count * steps * level.latency
        t_bandwidth = count * sent / egress
        return PricedLevel(
            level=level.name, topology=level.topology, devices=g, algorithm=name, steps=steps,
            bytes=sent, bandwidth=egress, latency=level.latency, slice=shape, cut_links=cut,
            t_latency=t_latency, t_bandwidth=t_bandwidth, time=t_latency + t_bandwidth,
            rejected=None, binds=True, latency_kind=level.latency_kind,
            bandwidth_kind=level.bandwidth_kind)

    if level.topology == "torus":
        name, steps, sent, egress, shape, cut = _torus_phase(op, full, g, level, span)
        return priced(name, steps, sent, egress, shape, cut)
    names = SWITCH_ALGORITHMS[op] if algorithm == "best" else (algorithm,)
    result = _ceil_div(full, g) if op == "reduce-scatter" else full  # what one device holds
    options = [priced(name, algorithm_steps(op, g, name), algorithm_bytes(op, result, g, name),
                      level.bandwidth, None) for name in names]
    options.sort(key=lambda o: (o.time, o.steps))
    chosen = options[0]
    if len(options) > 1:
        chosen = replace(chosen, rejected=RejectedAlgorithm(options[1].algorithm, options[1].time))
    return chosen


def _phases(op: str, full: int, group: int, network: Sequence[Level]
            ) -> list[tuple[Level, str, int, int]]:
    """(level, op, array, devices) of each level a collective over ``group`` devices crosses.

    Within one unit of the first level: one phase. Beyond it (``D`` devices per unit, ``M``
    units, ``D M`` = the group), hierarchically: an all-gather gathers the array's ``1/D``
    across the units and the whole array inside each; a reduce-scatter the reverse; an
    all-reduce reduce-scatters inside, all-reduces ``V/D`` across and all-gathers inside; an
    all-to-all sends ``(D-1)/G`` of its buffer inside and ``(G-D)/G`` across (it is not
    hierarchical: each GPU's share for other nodes leaves through its own port); a permute
    whose group spans units crosses the outer level once.
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
                    count: int = 1, algorithm: str = "best",
                    span: Sequence[int] | None = None) -> CollectiveCost:
    """The alpha-beta time of ``count`` runs of one collective on a network of levels.

    ``result_bytes`` is the result one device holds (a combined collective's arrays added:
    XLA runs them as one, so the latency is paid once and the bytes together). Per level
    (:func:`_phases`): ``latency x steps + bytes / bandwidth``, its algorithm the faster of
    those the libraries run there unless ``algorithm`` names one. ``span``: the group's extent
    along each axis of a torus first level (:func:`mesh_span`); None: the group owns its
    slice. The levels are pipelined: the collective's bandwidth time is the slowest level's
    (``binds`` marks it), its latency every level's; ``memory_bytes`` is
    :func:`collective_memory_bytes`.

    Raises NotPriced when the network cannot carry the group, ValueError for bad arguments.
    """
    if op not in COLLECTIVE_OPS:
        raise ValueError(f"unknown collective {op!r}; expected one of {', '.join(COLLECTIVE_OPS)}")
    if algorithm not in (*ALGORITHMS, "best"):
        raise ValueError(f"unknown algorithm {algorithm!r}; expected "
                         f"{', '.join(ALGORITHMS)} or best")
    if not network:
        raise ValueError("a network needs at least one level")
    group = _count("group_size", group_size, minimum=1)
    runs = _count("count", count, minimum=0)
    full = full_array_bytes(op, result_bytes, group)
    phases = _phases(op, full, group, network)
    priced = [_phase_cost(o, array, g, level, runs, algorithm,
                          span if i == 0 and len(phases) == 1 else None)
              for i, (level, o, array, g) in enumerate(phases)]
    t_latency = sum(p.t_latency for p in priced)
    t_bandwidth = max(p.t_bandwidth for p in priced)
    slowest = max(range(len(priced)), key=lambda i: (priced[i].t_bandwidth, -i))
    levels = tuple(replace(p, binds=i == slowest) for i, p in enumerate(priced))
    return CollectiveCost(
        op=op,
        group_size=group,
        count=runs,
        array_bytes=full,
        levels=levels,
        algorithm=", with ".join(f"{p.algorithm} ({p.level})" for p in levels)
        if len(levels) > 1 else levels[0].algorithm,
        pipelined=len(levels) > 1,
        steps=sum(p.steps for p in levels),
        bytes=sum(p.bytes for p in levels),
        t_latency=t_latency,
        t_bandwidth=t_bandwidth,
        time=t_latency + t_bandwidth,
        memory_bytes=collective_memory_bytes(op, int(result_bytes), group),
    )
