"""The runtime's execute events of a host line, kept as their starts (pure: no jax).

:func:`roofline_report.traces.events.kernel_times` reads only when each execute event starts
(a call's start); a 100 MB trace holds 340,000 of them. :func:`execute_line` takes those starts
from the reader's columns without building an event or a stats dict for each, and the
:class:`ExecuteLine` builds the events themselves only if something asks for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from roofline_report.traces.events import is_execute
from roofline_report.traces.xspace import Event, EventColumns, Line, events_where

__all__ = ["ExecuteLine", "execute_line", "is_execute"]

KERNEL_STAT = "hlo_op"  # a kernel's event, never a call's start


@dataclass(frozen=True, slots=True)
class ExecuteLine:
    """A host line's execute events (named as :func:`is_execute` tells, without ``hlo_op``):
    ``execute_starts`` their starts in ns, in line order, which kernel_times reads instead of
    the events; ``source`` the line's events, from which ``events`` are picked on demand."""

    id: int
    name: str
    source: Sequence[Event]
    execute_starts: list[float]

    @property
    def events(self) -> list[Event]:
        return [e for e in events_where(self.source, name=is_execute)
                if KERNEL_STAT not in e.stats]


def execute_line(line: Line) -> ExecuteLine | None:
    """The execute events of ``line`` as their starts; None when it holds none."""
    events = line.events
    if isinstance(events, EventColumns):
        mask = events.mask(name=is_execute)
        if mask.any():
            mask &= ~events.stats.having(events.meta, KERNEL_STAT)
        starts = [float(s) for s in events.start_ns[mask].tolist()]
    else:
        starts = [float(e.start_ns) for e in events
                  if is_execute(e.name) and KERNEL_STAT not in e.stats]
    return ExecuteLine(line.id, line.name, events, starts) if starts else None
