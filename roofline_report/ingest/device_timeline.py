"""Where each device's time went over a whole trace, as TraceLens's GPU timeline and XProf's
overview count it (pure: no jax).

For each GPU or TPU device plane of a host's trace, from its first event to its last:

* computation: the time some kernel ran (events of kernel lines, collectives and memory copies
  apart; on a TPU, the events of its op lines only: its ``XLA Modules`` and ``Steps`` lines
  span every op and the host's gaps between calls, :mod:`roofline_report.traces.tpu_ops`);
* communication: the time a collective ran (an event whose ``hlo_op`` is a collective, or a
  NCCL/RCCL kernel), and the part of it no computation overlapped (exposed);
* memory copies: the time a copy ran (a ``Memcpy`` line or a ``Memcpy``/``Copy...`` event; on
  a TPU an asynchronous op that is no collective, a copy or a slice, from its start to its
  done on the ``Async XLA Ops`` line, and the start and done events themselves on ``XLA Ops``,
  the core waiting on it), and the part of it no computation or communication overlapped
  (exposed);
* idle: the time nothing ran on the device; where it dominates, the device waited on its
  host.

Each is the length of a union of intervals, so events that overlap count once; the events
are read as the reader's columns and the unions taken with numpy, in time linear in the
events (a device of a 100 MB trace runs hundreds of thousands of kernels and collectives).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline_report.hlo.walk import COLLECTIVE_OPCODES
from roofline_report.traces.tpu_ops import ASYNC_LINE, device_clock, instruction_name, op_line
from roofline_report.traces.xspace import EventColumns, Line, Plane, XSpace

__all__ = ["DeviceTimeline", "device_timelines"]

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


def _segments(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of the intervals ``start``-``end`` as disjoint segments in time order (their
    starts and ends), intervals that touch merged: one sort and one running maximum, where
    a trace of 100 MB holds hundreds of thousands of them."""
    if not len(start):
        return start, end
    order = np.lexsort((end, start))
    s, e = start[order], end[order]
    reach = np.maximum.accumulate(e)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > reach[:-1]
    heads = np.flatnonzero(new)
    tails = np.append(heads[1:] - 1, len(s) - 1)
    return s[heads], reach[tails]


def _length(segments: tuple[np.ndarray, np.ndarray]) -> float:
    """The length of disjoint segments, summed in time order."""
    return float(sum((segments[1] - segments[0]).tolist()))


def _joined(*parts: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return _segments(np.concatenate([p[0] for p in parts]),
                     np.concatenate([p[1] for p in parts]))


def _minus(these: tuple[np.ndarray, np.ndarray], those: tuple[np.ndarray, np.ndarray]) -> float:
    """The length of the segments ``these`` outside the segments ``those`` (each disjoint, in
    time order): each of these meets a run of those found by bisection, so the pieces they
    share are found in time linear in the segments, not in their product."""
    a_start, a_end = these
    b_start, b_end = those
    lo = np.searchsorted(b_end, a_start, side="right")
    hi = np.searchsorted(b_start, a_end, side="left")
    count = np.maximum(hi - lo, 0)
    which = np.repeat(np.arange(len(a_start)), count)
    # The index of each of those met: lo of its segment of these, plus its place in the run.
    offsets = np.cumsum(count) - count
    other = np.repeat(lo, count) + (np.arange(int(count.sum())) - np.repeat(offsets, count))
    piece_start = np.maximum(a_start[which], b_start[other])
    piece_end = np.minimum(a_end[which], b_end[other])
    kept = piece_start < piece_end
    return _length(these) - _length(_segments(piece_start[kept], piece_end[kept]))


def _line_columns(line: Line) -> tuple[list[str], np.ndarray, np.ndarray, list[Any]]:
    """The names, starts and durations (ns) of a line's events and their ``hlo_op`` (None
    where an event has none): from the reader's columns without building the events."""
    events = line.events
    if isinstance(events, EventColumns):
        names, start, duration, ops = events.columns(np.arange(len(events)), "hlo_op")
        return (names, np.asarray(start, dtype=np.float64),
                np.asarray(duration, dtype=np.float64), ops)
    return ([e.name for e in events], np.array([e.start_ns for e in events], dtype=np.float64),
            np.array([e.duration_ns for e in events], dtype=np.float64),
            [e.stats.get("hlo_op") for e in events])


_COMPUTATION, _COMMUNICATION, _MEMCPY = 0, 1, 2


def _kind(memcpy_line: bool, name: str, op: Any) -> int:
    base = str(op or "").split(".")[0].removesuffix("-start").removesuffix("-done")
    folded = name.casefold()
    if base in COLLECTIVE_OPCODES or folded.startswith(("nccl", "rccl", "ncclkernel")):
        return _COMMUNICATION
    if memcpy_line or folded.startswith(("memcpy", "copyhostto", "copydeviceto")):
        return _MEMCPY
    return _COMPUTATION


def _tpu_kind(op: str, asynchronous: bool) -> int:
    """A TPU op's kind by its instruction (``XLA Ops``) or its done's name (``Async XLA Ops``):
    a collective's start, done or whole op is communication, any other asynchronous op (a
    copy, a slice) a memory copy, the rest computation."""
    base = op.split(".")[0]
    bare = base.removesuffix("-start").removesuffix("-done")
    if bare in COLLECTIVE_OPCODES:
        return _COMMUNICATION
    if asynchronous or bare != base:
        return _MEMCPY
    return _COMPUTATION


def _tpu_line(plane: Plane, line: Line) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The starts, durations (ns, in the device's clock: :func:`~roofline_report.traces.
    tpu_ops.device_clock`) and kinds of an op line's events of a TPU plane, each metadata's
    kind asked once."""
    events = line.events
    asynchronous = line.name == ASYNC_LINE
    start, duration = device_clock(events, line.timestamp_ns)
    if not isinstance(events, EventColumns):
        names, _, _, ops = _line_columns(line)
        each = [_tpu_kind(str(op) if asynchronous and op is not None
                          else instruction_name(name), asynchronous)
                for name, op in zip(names, ops, strict=True)]
        return start, duration, np.asarray(each, dtype=np.int64)
    meta = events.meta
    ids, firsts = np.unique(meta, return_index=True)
    if asynchronous:  # by the done each start's events name (one per start: its first's)
        ops = events.stats.column(meta[firsts], firsts, "hlo_op")
        per = np.array([_tpu_kind(str(op) if op is not None
                                  else instruction_name(events._names.get(m, "")), True)
                        for m, op in zip(ids.tolist(), ops, strict=True)], dtype=np.int64)
    else:
        per = np.array([_tpu_kind(instruction_name(
            events._names.get(m, ""), str(getattr(plane.event_metadata.get(m), "display_name",
                                                   "") or "")), False)
            for m in ids.tolist()], dtype=np.int64)
    kind = per[np.searchsorted(ids, meta)] if len(ids) else np.zeros(0, dtype=np.int64)
    return start, duration, kind


def device_timelines(space: XSpace) -> list[DeviceTimeline]:
    """One timeline per GPU or TPU device plane with events, in the planes' order."""
    out = []
    for plane in space.planes:
        tpu = plane.name.startswith("/device:TPU:")
        if not tpu and not plane.name.startswith("/device:GPU:"):
            continue
        starts: list[np.ndarray] = []
        ends: list[np.ndarray] = []
        kinds: list[np.ndarray] = []
        for line in plane.lines:
            if tpu:
                if not op_line(line.name):
                    continue
                start, duration, kind = _tpu_line(plane, line)
            else:
                names, start, duration, ops = _line_columns(line)
                memcpy_line = "memcpy" in line.name.casefold()
                known: dict[tuple[str, Any], int] = {}  # asked once per distinct name and op
                kind = np.fromiter(
                    (known[key] if key in known
                     else known.setdefault(key, _kind(memcpy_line, *key))
                     for key in zip(names, ops, strict=True)), dtype=np.int64,
                    count=len(names))
            ran = duration > 0
            starts.append(start[ran])
            ends.append(start[ran] + duration[ran])
            kinds.append(kind[ran])
        start = np.concatenate(starts) if starts else np.zeros(0)
        if not len(start):
            continue
        end, kind = np.concatenate(ends), np.concatenate(kinds)
        total = float(end.max()) - float(start.min())
        comp, comm, copies = (_segments(start[kind == k], end[kind == k])
                              for k in (_COMPUTATION, _COMMUNICATION, _MEMCPY))
        busy = _length(_segments(start, end))
        ns = 1e-9
        out.append(DeviceTimeline(
            device=plane.name.removeprefix("/device:"), total_s=total * ns,
            computation_s=_length(comp) * ns, communication_s=_length(comm) * ns,
            exposed_communication_s=_minus(comm, comp) * ns,
            memcpy_s=_length(copies) * ns,
            exposed_memcpy_s=_minus(copies, _joined(comp, comm)) * ns,
            idle_s=(total - busy) * ns))
    return out
