"""A trace line's events as the XSpace reader keeps them (no jax): :class:`EventColumns`, columns
instead of one object per event, which build :class:`Event` objects only for the events read,
and :func:`events_where`, which picks events by name or stat without building the others.
:mod:`roofline_report.traces.xspace` decodes them and re-exports these names."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

from roofline_report.traces.line_stats import LineStats

__all__ = ["BuiltEvents", "Event", "EventColumns", "events_where"]


@dataclass(slots=True)
class Event:
    """One event: its name, start (ns since the epoch), duration (ns) and stats by name (not
    frozen only because a frozen dataclass is three times slower to build, and a trace holds
    millions of events: treat it as read-only)."""

    name: str
    start_ns: float
    duration_ns: float
    stats: dict[str, Any]


class BuiltEvents(Sequence[Event]):
    """A sequence of events kept as columns, whose :class:`Event` objects are built on demand
    by :meth:`_built` (the events at some indices, in their order): indexing, iterating and
    comparing build them; nothing built is kept."""

    __slots__ = ()

    def _built(self, indices: Sequence[int] | np.ndarray) -> list[Event]:
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...

    def __getitem__(self, index: int | slice) -> Event | list[Event]:
        if isinstance(index, slice):
            return self._built(range(len(self))[index])
        i = range(len(self))[index]  # IndexError as a list's
        return self._built([i])[0]

    def __iter__(self) -> Iterator[Event]:
        return iter(self._built(range(len(self))))

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of the same events (a list of them, as lines held before)."""
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # mutable columns, as a list


class EventColumns(BuiltEvents):
    """The events of one line as the reader keeps them: columns (metadata id, start and
    duration in ns, stats as columns: :class:`LineStats`) instead of one object per event,
    so a trace of millions of events costs tens of bytes an event. Iterating or indexing
    builds the :class:`Event` objects and their stats dicts on the fly (they are not kept);
    :meth:`where` picks the few events an analysis needs by name or stat without building the
    others. Events without stats of their own share their metadata's stats dict: every
    event's stats are read-only."""

    __slots__ = ("_names", "duration_ns", "meta", "start_ns", "stats")

    def __init__(self, names: Mapping[int, str], meta: np.ndarray, start_ns: np.ndarray,
                 duration_ns: np.ndarray, stats: LineStats) -> None:
        self._names = names
        self.meta = meta
        self.start_ns = start_ns
        self.duration_ns = duration_ns
        self.stats = stats

    def __len__(self) -> int:
        return len(self.meta)

    def _built(self, indices: Sequence[int] | np.ndarray) -> list[Event]:
        names = self._names
        every = isinstance(indices, range) and indices == range(len(self.meta))
        rows = np.arange(len(self.meta)) if every else np.asarray(indices, dtype=np.int64)
        if every:
            meta = self.meta.tolist()
            start, duration = self.start_ns.tolist(), self.duration_ns.tolist()
        else:
            meta = self.meta[rows].tolist()
            start = self.start_ns[rows].tolist()
            duration = self.duration_ns[rows].tolist()
        stats = self.stats.dicts(meta, rows)
        return [Event(names.get(m, ""), a, d, st)
                for m, a, d, st in zip(meta, start, duration, stats, strict=True)]

    def where(self, *, name: Callable[[str], bool] | None = None, stat: str | None = None
              ) -> list[Event]:  # the events :meth:`mask` keeps, in line order
        return self._built(np.flatnonzero(self.mask(name=name, stat=stat)))

    def columns(self, rows: np.ndarray, stat: str
                ) -> tuple[list[str], list[float], list[float], list[Any]]:
        """The names, starts and durations (ns) of the events ``rows`` and the value of one of
        their stats (None where an event has none), as columns: no event or dict built."""
        meta = self.meta[rows].tolist()
        names = self._names
        return ([names.get(m, "") for m in meta], self.start_ns[rows].tolist(),
                self.duration_ns[rows].tolist(), self.stats.column(meta, rows, stat))

    def mask(self, *, name: Callable[[str], bool] | None = None,
             stat: str | None = None) -> np.ndarray:
        """Which events pass ``name`` and hold ``stat`` (a test left out is not applied)."""
        mask = np.ones(len(self), dtype=bool)
        if name is not None:
            ids = [m for m, n in self._names.items() if name(n)]
            mask = np.isin(self.meta, np.array(ids, dtype=np.int64))
            if name(""):  # events whose metadata is not in the plane are named ""
                mask |= ~np.isin(self.meta, np.array(list(self._names), dtype=np.int64))
        if stat is not None:
            mask &= self.stats.having(self.meta, stat)
        return mask


def events_where(events: Sequence[Event], *, name: Callable[[str], bool] | None = None,
                 stat: str | None = None) -> list[Event]:
    """The events whose name passes ``name`` and whose stats hold ``stat``, in order: from
    the reader's columns without building the others (:meth:`EventColumns.where`), or by
    testing each event of a list."""
    if isinstance(events, EventColumns):
        return events.where(name=name, stat=stat)
    return [e for e in events if (name is None or name(e.name))
            and (stat is None or stat in e.stats)]
