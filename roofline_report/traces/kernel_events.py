"""One device's kernel events as columns (pure: no jax): :class:`LaneKernels`.

A lane (:func:`roofline_report.ingest.timeline.lanes`) holds every kernel event a device ran
while the trace was recorded: 341,880 in a 100 MB CPU trace. Built as objects, one event and
one stats dict each, they took 1.8 s of a 12 s profile, and most of their stats are never read.
Here they stay where the reader keeps them (:class:`~roofline_report.traces.event_columns.
EventColumns`, one per trace line) and a lane is a list of rows into those lines, in time
order, with each event's line, start and duration as arrays. A stat is read for every event at
once as a column (:meth:`LaneKernels.stat`); the stats the analysis reads by name are given
normalised (:meth:`LaneKernels.modules`, :meth:`LaneKernels.programs`); :class:`Event`
objects are built only for the events iterated or indexed, and are the ones the lanes built
before, normalised alike (:func:`normalised`).

Module names are compared without the ``(program id)`` suffix the metadata plane gives them
(``jit_train_step(58)`` is ``jit_train_step``, program 58): :func:`module_base`,
:func:`program_suffix`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from roofline_report.traces.event_columns import BuiltEvents, Event, EventColumns

__all__ = ["LaneKernels", "module_base", "normalised", "program_suffix"]

_PROGRAM_SUFFIX = re.compile(r"\((\d+)\)$")


def module_base(name: Any) -> str:
    """A module's name without the ``(program id)`` suffix of the metadata plane."""
    return _PROGRAM_SUFFIX.sub("", str(name)).strip()


def program_suffix(name: str) -> int | None:
    m = _PROGRAM_SUFFIX.search(name)
    return int(m.group(1)) if m else None


# module name -> its module_base and program suffix (one regex each per name, not per event)
_BASES: dict[str, tuple[str, int | None]] = {}


def _known(module: str) -> tuple[str, int | None]:
    known = _BASES.get(module)
    if known is None:
        known = _BASES[module] = (module_base(module), program_suffix(module))
    return known


def normalised(e: Event) -> Event:
    """``e`` with its ``hlo_module`` stat without the program suffix, and the suffix as its
    ``program_id`` where it has none; ``e`` itself where that changes nothing."""
    stats = e.stats
    module = stats.get("hlo_module")
    if module is None:
        return e
    if isinstance(module, str):
        base, program = _known(module)
    else:  # never its own base (a base is a str): its suffix of its text
        base, program = module_base(module), program_suffix(str(module))
    if base == module and ("program_id" in stats or program is None):
        return e  # already normal: the same event
    extra: dict[str, Any] = {"hlo_module": base}
    if "program_id" not in stats and program is not None:
        extra["program_id"] = program
    return Event(e.name, e.start_ns, e.duration_ns, {**stats, **extra})


Source = EventColumns | Sequence[Event]


class LaneKernels(BuiltEvents):
    """Kernel events as rows of the lines that hold them: per event, its source (an index into
    ``sources``: a line's :class:`EventColumns`, or a list of events), its row there, its line's
    index in the trace, its start and duration (ns). Iterating or indexing builds the events,
    normalised (:func:`normalised`); columns of their stats are read without building any."""

    __slots__ = ("_arrays", "_columns", "_given", "duration_ns", "line", "row", "source",
                 "sources", "start_ns")

    def __init__(self, sources: Sequence[Source], source: np.ndarray, row: np.ndarray,
                 line: np.ndarray, start_ns: np.ndarray, duration_ns: np.ndarray) -> None:
        self.sources = list(sources)
        self.source = source
        self.row = row
        self.line = line
        self.start_ns = start_ns
        self.duration_ns = duration_ns
        self._arrays: dict[str, np.ndarray] = {}  # columns read, as object arrays
        self._columns: dict[str, list[Any]] = {}  # the same as lists, once asked for
        self._given: tuple[str, ...] = ()  # stats given (:meth:`give`), not the events' own

    @classmethod
    def of_lines(cls, parts: Sequence[tuple[int, Source, np.ndarray]]) -> LaneKernels:
        """The rows ``rows`` of each (line index, source, rows), in that order."""
        sources = [src for _, src, _ in parts]
        counts = [len(rows) for _, _, rows in parts]
        source = np.repeat(np.arange(len(parts), dtype=np.int64), counts)
        line = np.repeat(np.array([at for at, _, _ in parts], dtype=np.int64), counts)
        row = (np.concatenate([np.asarray(r, dtype=np.int64) for _, _, r in parts]) if parts
               else np.zeros(0, dtype=np.int64))
        starts: list[np.ndarray] = []
        durations: list[np.ndarray] = []
        for (_, src, rows), n in zip(parts, counts, strict=True):
            if isinstance(src, EventColumns):
                starts.append(src.start_ns[rows].astype(np.float64))
                durations.append(src.duration_ns[rows].astype(np.float64))
            else:
                picked = [src[i] for i in np.asarray(rows, dtype=np.int64).tolist()]
                starts.append(np.fromiter((float(e.start_ns) for e in picked), np.float64, n))
                durations.append(np.fromiter((float(e.duration_ns) for e in picked),
                                             np.float64, n))
        empty = np.zeros(0, dtype=np.float64)
        return cls(sources, source, row, line, np.concatenate(starts) if starts else empty,
                   np.concatenate(durations) if durations else empty)

    @classmethod
    def of_events(cls, found: Sequence[tuple[int, Event]]) -> LaneKernels:
        """Events given as objects, each with its line's index, in that order."""
        events = [e for _, e in found]
        n = len(events)
        return cls([events], np.zeros(n, dtype=np.int64), np.arange(n, dtype=np.int64),
                   np.fromiter((at for at, _ in found), np.int64, n),
                   np.fromiter((float(e.start_ns) for e in events), np.float64, n),
                   np.fromiter((float(e.duration_ns) for e in events), np.float64, n))

    def taken(self, indices: Sequence[int] | np.ndarray) -> LaneKernels:
        """The events ``indices``, in that order (their columns read so far kept)."""
        at = np.asarray(indices, dtype=np.int64)
        out = LaneKernels(self.sources, self.source[at], self.row[at], self.line[at],
                          self.start_ns[at], self.duration_ns[at])
        out._arrays = {name: values[at] for name, values in self._arrays.items()}
        out._given = self._given
        return out

    @property
    def given(self) -> tuple[str, ...]:
        """The stats given (:meth:`give`)."""
        return self._given

    def give(self, stats: Mapping[str, np.ndarray]) -> None:
        """Give the events stats they do not hold themselves (object arrays, one value per
        event; None: not given to that one), read as their own: a TPU op event's kernel,
        module, program and call, from its metadata and the module execution around it
        (:mod:`roofline_report.traces.tpu_ops`). Built events carry them in their stats."""
        for name, values in stats.items():
            if len(values) != len(self):
                raise ValueError(f"stat {name}: {len(values)} values for {len(self)} events")
            self._arrays[name] = np.asarray(values, dtype=object)
            self._columns.pop(name, None)
        self._given = tuple(dict.fromkeys((*self._given, *stats)))

    def in_time_order(self) -> LaneKernels:
        """Sorted by start, stably (as ``sorted`` by start); itself where it already is."""
        starts = self.start_ns
        if len(starts) < 2 or bool(np.all(starts[1:] >= starts[:-1])):
            return self
        return self.taken(np.argsort(starts, kind="stable"))

    # --- columns ------------------------------------------------------------------------

    def _by_source(self, positions: np.ndarray | None = None
                   ) -> Iterator[tuple[Source, np.ndarray]]:
        """Each source with where its events lie: indices here, or, given ``positions``
        (indices here), indices into ``positions``."""
        part = self.source if positions is None else self.source[positions]
        if len(self.sources) == 1:
            yield self.sources[0], np.arange(len(part), dtype=np.int64)
            return
        order = np.argsort(part, kind="stable")
        cuts = np.flatnonzero(np.diff(part[order])) + 1
        for at in np.split(order, cuts):
            if len(at):
                yield self.sources[int(part[at[0]])], at

    def read(self, names: Sequence[str]) -> None:
        """Read the columns of the stats ``names`` (as the reader gives them) at once: a line's
        stats are gathered once for all of them."""
        missing = [name for name in dict.fromkeys(names) if name not in self._arrays]
        if not missing:
            return
        out = {name: np.full(len(self), None, dtype=object) for name in missing}
        for src, positions in self._by_source():
            rows = self.row[positions]
            if isinstance(src, EventColumns):
                read = src.stats.columns(src.meta[rows], rows, missing)
                for name in missing:
                    out[name][positions] = read[name]
            else:
                for name in missing:
                    held = np.empty(len(rows), dtype=object)
                    held[:] = [src[i].stats.get(name) for i in rows.tolist()]
                    out[name][positions] = held
        self._arrays.update(out)

    def stat(self, name: str) -> list[Any]:
        """Each event's value of stat ``name`` as the reader gives it (not normalised), None
        where it has none."""
        known = self._columns.get(name)
        if known is None:
            self.read((name,))
            known = self._columns[name] = self._arrays[name].tolist()
        return known

    def has(self, name: str) -> np.ndarray:
        """Per event: whether it holds stat ``name`` (a normalised stat: ``program_id`` is held
        where the module's name gives it)."""
        if name == "program_id":
            return np.fromiter((p is not None for p in self.programs()), bool, len(self))
        if name in self._given:
            given = self._arrays[name].tolist()
            return np.fromiter((v is not None for v in given), dtype=bool, count=len(given))
        mask = np.zeros(len(self), dtype=bool)
        for src, positions in self._by_source():
            rows = self.row[positions]
            if isinstance(src, EventColumns):
                mask[positions] = src.stats.having(src.meta, name)[rows]
            else:
                mask[positions] = [name in src[i].stats for i in rows.tolist()]
        return mask

    def names(self) -> list[str]:
        """Each event's name."""
        out: list[str] = [""] * len(self)
        for src, positions in self._by_source():
            rows = self.row[positions]
            if isinstance(src, EventColumns):
                table = src._names
                values = [table.get(m, "") for m in src.meta[rows].tolist()]
            else:
                values = [src[i].name for i in rows.tolist()]
            for at, value in zip(positions.tolist(), values, strict=True):
                out[at] = value
        return out

    def _derived(self, key: str, make: Any) -> list[Any]:
        known = self._columns.get(key)
        if known is None:
            held = self._arrays.get(key)
            if held is None:
                held = np.empty(len(self), dtype=object)
                held[:] = make()
                self._arrays[key] = held
            known = self._columns[key] = held.tolist()
        return known

    def as_array(self, column: str) -> np.ndarray:
        """A normalised column (``"modules"`` or ``"programs"``) as an object array."""
        key = {"modules": " hlo_module", "programs": " program_id"}[column]
        if key not in self._arrays:
            getattr(self, column)()
        return self._arrays[key]

    def modules(self) -> list[Any]:
        """Each event's ``hlo_module`` normalised (its :func:`module_base`; None where none)."""
        return self._derived(" hlo_module", lambda: _mapped(self.stat("hlo_module"), _base))

    def programs(self) -> list[Any]:
        """Each event's ``program_id`` normalised: its own, else its module name's suffix, else
        None."""
        def make() -> list[Any]:
            suffixes = _mapped(self.stat("hlo_module"), _suffix)
            return [p if p is not None else suffix
                    for p, suffix in zip(self.stat("program_id"), suffixes, strict=True)]

        return self._derived(" program_id", make)

    # --- events -------------------------------------------------------------------------

    def _built(self, indices: Sequence[int] | np.ndarray) -> list[Event]:
        positions = np.asarray(indices, dtype=np.int64)
        out: list[Event | None] = [None] * len(positions)
        for src, at in self._by_source(positions):
            rows = self.row[positions[at]]
            events = (src._built(rows) if isinstance(src, EventColumns)
                      else [src[i] for i in rows.tolist()])
            for j, e in zip(at.tolist(), events, strict=True):
                out[j] = normalised(e)
        if self._given:
            given = [self._arrays[name][positions].tolist() for name in self._given]
            for j, values in enumerate(zip(*given, strict=True)):
                e = out[j]
                assert e is not None
                extra = {name: v for name, v in zip(self._given, values, strict=True)
                         if v is not None}
                if extra:
                    out[j] = normalised(Event(e.name, e.start_ns, e.duration_ns,
                                              {**e.stats, **extra}))
        return out  # type: ignore[return-value]  # every place filled

    def __len__(self) -> int:
        return len(self.start_ns)


def _base(module: Any) -> Any:
    if module is None:
        return None
    return _known(module)[0] if isinstance(module, str) else module_base(module)


def _suffix(module: Any) -> int | None:
    if module is None:
        return None
    return _known(module)[1] if isinstance(module, str) else program_suffix(str(module))


def _mapped(values: list[Any], f: Callable[[Any], Any]) -> list[Any]:
    """``[f(v) for v in values]``, calling ``f`` once per distinct value (told apart by type
    as well: 1 and 1.0 are distinct stat values)."""
    if set(map(type, values)) <= _TEXT:  # names only: a value is its own key
        plain = {v: f(v) for v in set(values)}
        return [plain[v] for v in values]
    of = {k: f(k[1]) for k in {(type(v), v) for v in values}}
    return [of[(type(v), v)] for v in values]


_TEXT = frozenset((str, type(None)))
