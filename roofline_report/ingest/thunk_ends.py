"""The ``end: NAME`` events of a host's asynchronous thunks, kept as columns (no jax).

On a CPU, XLA runs a thunk asynchronously and the runtime writes an ``end: NAME`` event when it
completes; :func:`roofline_report.traces.events.kernel_times` matches each launch to its end.
A 100 MB trace holds 340,000 of them. They are read here from the reader's columns (name,
start, duration and the flow id stat ``_c``) without building an event or a stats dict for
each, handed to the lanes as :class:`ThunkEnds`, and to kernel_times as a
:class:`ThunkEndLine`, which it reads as columns too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline_report.traces.xspace import Event, EventColumns, XSpace

__all__ = ["END_PREFIX", "FLOW_STAT", "ThunkEndLine", "ThunkEnds", "host_thunk_ends"]

END_PREFIX = "end: "
FLOW_STAT = "_c"  # the flow id an end event carries (its launch carries it as ``_p``)
KERNEL_STAT = "hlo_op"


@dataclass(frozen=True, slots=True)
class ThunkEnds:
    """End events as columns, in the order they were read: each one's flow id (None where it
    has none), the NAME of ``end: NAME``, its start and its end (start + duration, ns)."""

    flows: list[Any]
    ops: list[str]
    starts: list[float]
    ends: list[float]

    def __len__(self) -> int:
        return len(self.ops)

    def keys(self) -> list[tuple[Any, str]]:
        """Each event's key as launches are matched: (flow id or None, NAME)."""
        return list(zip(self.flows, self.ops, strict=True))

    def picked(self, indices: Sequence[int]) -> ThunkEnds:
        """The events ``indices``, in that order."""
        return ThunkEnds([self.flows[i] for i in indices], [self.ops[i] for i in indices],
                         [self.starts[i] for i in indices], [self.ends[i] for i in indices])

    def events(self) -> list[Event]:
        """The events rebuilt from the columns: name, start, duration and flow id only."""
        return [Event(END_PREFIX + op, start, end - start,
                      {} if flow is None else {FLOW_STAT: flow})
                for flow, op, start, end in zip(self.flows, self.ops, self.starts, self.ends,
                                                strict=True)]


NO_ENDS = ThunkEnds([], [], [], [])


@dataclass(frozen=True, slots=True)
class ThunkEndLine:
    """A lane's thunk ends as kernel_times reads them: ``thunk_ends`` as columns; ``events``
    rebuilt on demand for any other reader."""

    id: int
    name: str
    thunk_ends: ThunkEnds

    @property
    def events(self) -> list[Event]:
        return self.thunk_ends.events()


def _is_end(name: str) -> bool:
    return name.startswith(END_PREFIX)


def _line_ends(events: Sequence[Event]) -> ThunkEnds:
    """The end events of one line that are not kernels (no ``hlo_op``), in line order."""
    if isinstance(events, EventColumns):
        mask = events.mask(name=_is_end)
        if mask.any():
            mask &= ~events.stats.having(events.meta, KERNEL_STAT)
        rows = np.flatnonzero(mask)
        names, _, _, flows = events.columns(rows, FLOW_STAT)
        # As floats, each end the sum of two floats: by numpy, the same values.
        at = events.start_ns[rows].astype(np.float64)
        starts = at.tolist()
        ends = (at + events.duration_ns[rows].astype(np.float64)).tolist()
    else:
        picked = [e for e in events if _is_end(e.name) and KERNEL_STAT not in e.stats]
        names = [e.name for e in picked]
        starts = [float(e.start_ns) for e in picked]
        ends = [s + float(e.duration_ns) for s, e in zip(starts, picked, strict=True)]
        flows = [e.stats.get(FLOW_STAT) for e in picked]
    # NAME of ``end: NAME``: cut once per distinct name.
    ops = {n: n[len(END_PREFIX):] for n in set(names)}
    return ThunkEnds(flows, list(map(ops.__getitem__, names)), starts, ends)


def host_thunk_ends(space: XSpace, plane_name: str) -> ThunkEnds:
    """The end events of the thunk lines of the plane ``plane_name`` (the host's CPU plane),
    line by line in the trace's order."""
    flows: list[Any] = []
    ops: list[str] = []
    starts: list[float] = []
    ends: list[float] = []
    for plane in space.planes:
        if plane.name != plane_name:
            continue
        for line in plane.lines:
            found = _line_ends(line.events)
            flows += found.flows
            ops += found.ops
            starts += found.starts
            ends += found.ends
    return ThunkEnds(flows, ops, starts, ends)
