"""Where each device's time went over a whole trace, as TraceLens's GPU timeline and XProf's
overview count it (pure: no jax).

For each GPU or TPU device plane of a host's trace, from its first event to its last:

* computation: the time some kernel ran (events of kernel lines, collectives and memory copies
  apart);
* communication: the time a collective ran (an event whose ``hlo_op`` is a collective, or a
  NCCL/RCCL kernel), and the part of it no computation overlapped (exposed);
* memory copies: the time a copy ran (a ``Memcpy`` line or a ``Memcpy``/``Copy...`` event),
  and the part of it no computation or communication overlapped (exposed);
* idle: the time nothing ran on the device; where it dominates, the device waited on its
  host.

Each is the length of a union of intervals, so events that overlap count once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from roofline_report.hlo.walk import COLLECTIVE_OPCODES
from roofline_report.traces.xspace import Event, XSpace

__all__ = ["DeviceTimeline", "device_timelines"]

Interval = tuple[float, float]


@dataclass(frozen=True, slots=True)
class DeviceTimeline:
    device: str
    total_s: float
    computation_s: float
    communication_s: float
    exposed_communication_s: float
    memcpy_s: float
    exposed_memcpy_s: float
    idle_s: float

    def to_json(self) -> dict[str, object]:
        return {"device": self.device, "total_s": self.total_s,
                "computation_s": self.computation_s,
                "communication_s": self.communication_s,
                "exposed_communication_s": self.exposed_communication_s,
                "memcpy_s": self.memcpy_s, "exposed_memcpy_s": self.exposed_memcpy_s,
                "idle_s": self.idle_s}


def _union(intervals: Iterable[Interval]) -> list[Interval]:
    out: list[list[float]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _length(intervals: Sequence[Interval]) -> float:
    return sum(b - a for a, b in intervals)


def _minus(these: Sequence[Interval], those: Sequence[Interval]) -> float:
    """The length of the union ``these`` outside the union ``those``."""
    return _length(these) - _length(_union(
        (max(a, c), min(b, d)) for a, b in these for c, d in those if max(a, c) < min(b, d)))


def _kind(line: str, e: Event) -> str:
    op = str(e.stats.get("hlo_op") or "")
    base = op.split(".")[0].removesuffix("-start").removesuffix("-done")
    name = e.name.casefold()
    if base in COLLECTIVE_OPCODES or name.startswith(("nccl", "rccl", "ncclkernel")):
        return "communication"
    if "memcpy" in line.casefold() or name.startswith(("memcpy", "copyhostto", "copydeviceto")):
        return "memcpy"
    return "computation"


def device_timelines(space: XSpace) -> list[DeviceTimeline]:
    """One timeline per GPU or TPU device plane with events, in the planes' order."""
    out = []
    for plane in space.planes:
        if not plane.name.startswith(("/device:GPU:", "/device:TPU:")):
            continue
        kinds: dict[str, list[Interval]] = {"computation": [], "communication": [],
                                            "memcpy": []}
        for line in plane.lines:
            for e in line.events:
                if e.duration_ns > 0:
                    kinds[_kind(line.name, e)].append((e.start_ns, e.start_ns + e.duration_ns))
        every = [iv for ivs in kinds.values() for iv in ivs]
        if not every:
            continue
        total = max(b for _, b in every) - min(a for a, _ in every)
        comp = _union(kinds["computation"])
        comm = _union(kinds["communication"])
        copies = _union(kinds["memcpy"])
        busy = _length(_union(every))
        ns = 1e-9
        out.append(DeviceTimeline(
            device=plane.name.removeprefix("/device:"), total_s=total * ns,
            computation_s=_length(comp) * ns, communication_s=_length(comm) * ns,
            exposed_communication_s=_minus(comm, comp) * ns,
            memcpy_s=_length(copies) * ns,
            exposed_memcpy_s=_minus(copies, _union([*comp, *comm])) * ns,
            idle_s=(total - busy) * ns))
    return out
