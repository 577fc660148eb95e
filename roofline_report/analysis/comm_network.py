"""Networks of one or two levels: a fast domain (NVLink, a TPU slice's ICI torus) and the network
across domains, each with its own bandwidth and latency (:class:`Level`). A collective over more
devices than one domain holds runs hierarchically (:func:`_phases`), each level priced on its
own, with the faster of the ring and the tree on a switch and the ring along the axes of a
torus (:func:`collective_cost`). Pure and deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from roofline_report.analysis.comm import non_negative, positive
from roofline_report.analysis.comm_alpha_beta import ALGORITHMS, log2_steps
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
    per = g - 1 if algorithm == "ring" else log2_steps(g)
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
