"""The lines of a large trace decoded on two cores: a helper process decodes some of them while
this one decodes the others (no jax).

A 100 MB CPU trace holds about four million events on three lines: the host's Python thread
(2.4 million short events, 35 MB, 1.6 s to decode on a 2-core CPU) and two runtime threads
(0.67 million events with many stats each, 27 MB, 1.0 s each). Decoding is numpy over a line's
events, but holds the interpreter's lock between its steps, so threads do not help (measured:
1.41 s on two threads against 1.36 s on one); a second process does. :func:`plan` gives the
helper the lines, and the part of one line, that balance the two processes by their cost
(bytes, plus :data:`EVENT_BYTES` an event), counting what starting it costs
(:data:`START_COST`), and only where there are two cores and enough events to gain
(:data:`ASIDE_EVENTS`): whole lines alone left this process waiting 1.1 s of a 3.2 s read.

The helper is a fresh interpreter (not a fork: the caller may have threads, jax's among them,
and a fork copies their locks as they are) that imports only :mod:`.xspace` and reads the trace
file itself; it sends back the events it decoded (the parts the reader joins into a line's
columns, after the first events of a line this process decoded) and what it skipped, pickled
in a temporary file, and this process builds the lines with its own names. The columns are
those this process would have decoded, array for array (the same functions on the same bytes,
joined). A helper that cannot start, fails, meets an error in its lines, finds the file
changed, or outlasts :data:`WAIT_S` is set aside, and its events are decoded here, so the
result, and the first error a corrupt trace raises, never depend on it.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from roofline_report import children

__all__ = ["ASIDE_EVENTS", "EVENT_BYTES", "START_COST", "WAIT_S", "Helped", "LineAside",
           "Load", "Source", "alone", "cores", "helping", "load", "plan"]

ASIDE_EVENTS = 1_000_000  # a trace with fewer events is decoded in one process
# Decoding an event costs about what decoding this many bytes of its fields does (measured on
# a 100 MB CPU trace: 0.19 us an event and 0.032 us a byte), so a line's cost is its bytes
# plus this many per event: the Python thread's short events cost more per byte than the
# runtime threads' events with many stats.
EVENT_BYTES = 6
# What starting the helper costs, in the same bytes (an interpreter, numpy, the protobuf
# package, parsing the file again and sending the columns back: about 0.9 s on a 2-core CPU).
START_COST = 28 * 2**20
_SAMPLE = 1024  # events whose sizes are read to estimate a long line's bytes
WAIT_S = 600.0  # a helper still decoding after this long is stopped and its lines decoded here
_REQUEST, _RESULT = "request.pickle", "lines.pickle"


@dataclass(frozen=True, slots=True)
class Source:
    """The trace file the helper reads again: its path, and its size and modification time
    and the size of its (decompressed) message when this process read it, so a file changed
    in between is noticed."""

    path: str
    size: int
    mtime_ns: int
    message_bytes: int

    @classmethod
    def of(cls, path: Path, message_bytes: int) -> Source | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return cls(str(path), st.st_size, st.st_mtime_ns, message_bytes)


@dataclass(frozen=True, slots=True)
class Helped:
    """What the helper decoded: each line's events (from the first asked for) by (plane, line)
    index, and what it
    skipped (as :class:`~roofline_report.traces.xspace.Dropped` counts them) and the unknown
    fields it met."""

    lines: dict[tuple[int, int], Any]
    negative: dict[str, int]
    unknown_values: dict[str, int]
    unknown: dict[str, list[int]]


helping = True  # False in a process that should decode alone (a worker among others)


@contextmanager
def alone(solo: bool = True) -> Iterator[None]:
    """Within it (where ``solo``), this process decodes every line itself: no helper."""
    global helping
    before = helping
    helping = before and not solo
    try:
        yield
    finally:
        helping = before


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@dataclass(frozen=True, slots=True)
class Load:
    """A line's events and (estimated) bytes."""

    events: int
    bytes: float

    @property
    def cost(self) -> float:
        return self.bytes + EVENT_BYTES * self.events


def load(events: Sequence[bytes]) -> Load:
    """The load of a line's serialized events: their count, and their bytes (a long line's
    estimated from :data:`_SAMPLE` events spread over it)."""
    n = len(events)
    if n <= 2 * _SAMPLE:
        return Load(n, float(sum(map(len, events))))
    step = n // _SAMPLE
    sample = [len(events[j]) for j in range(0, n, step)]
    return Load(n, n * sum(sample) / len(sample))


def plan(loads: Sequence[Sequence[Load]], available: int) -> dict[int, dict[int, int]]:
    """The helper's share, by plane index: {line index: the first of its events the helper
    decodes} (0: the whole line; this process decodes the events before it), given each
    plane's lines' loads; empty where one process should decode them all (one core, fewer than
    :data:`ASIDE_EVENTS` events, or no share that gains).

    The lines go, costliest first, to the process with less to do, the helper's load starting
    at :data:`START_COST`; then the two are evened out by splitting one line between them,
    the heavier side keeping its first or last events. The helper is used only where its
    share outweighs starting it."""
    total = sum(line.events for lines in loads for line in lines)
    if available < 2 or total < ASIDE_EVENTS:
        return {}
    cost = {(p, i): line.cost for p, lines in enumerate(loads) for i, line in enumerate(lines)
            if line.events > 0}
    events = {(p, i): loads[p][i].events for p, i in cost}
    here, helper = 0.0, float(START_COST)
    mine: list[tuple[int, int]] = []
    first: dict[tuple[int, int], int] = {}
    for key in sorted(cost, key=lambda k: (-cost[k], k)):
        if helper < here:
            helper += cost[key]
            first[key] = 0
        else:
            here += cost[key]
            mine.append(key)
    gap = (helper - here) / 2  # what to move from the helper to this process (< 0: back)
    side = list(first) if gap > 0 else mine
    if side and gap:
        # The cheapest line that can carry the whole gap, else the costliest.
        fits = [k for k in side if cost[k] >= abs(gap)]
        key = (min(fits, key=lambda k: (cost[k], k)) if fits
               else max(side, key=lambda k: (cost[k], k)))
        moved = round(events[key] * min(1.0, abs(gap) / cost[key]))
        if gap > 0:  # this process decodes the line's first events
            first[key] = min(moved, events[key])
            helper -= cost[key] * first[key] / events[key]
        elif moved:  # the helper decodes the line's last events
            first[key] = events[key] - moved
            helper += cost[key] * moved / events[key]
    first = {k: v for k, v in first.items() if v < events[k]}
    if helper - START_COST < START_COST or not first:
        return {}  # too little for the helper to gain
    out: dict[int, dict[int, int]] = {}
    for (p, i), at in sorted(first.items()):
        out.setdefault(p, {})[i] = at
    return out


class LineAside:
    """``with LineAside(source, plan) as aside: ...; helped = aside.result()``: the helper
    starts on entering, :meth:`result` waits for it (None where it failed: its lines are
    then decoded by the caller), and leaving stops it and removes its files."""

    def __init__(self, source: Source, lines: Mapping[int, Mapping[int, int]]) -> None:
        self.source = source
        self.lines = {p: dict(v) for p, v in lines.items()}
        self._proc: subprocess.Popen[bytes] | None = None
        self._folder: str | None = None

    def __enter__(self) -> LineAside:
        folder = tempfile.mkdtemp(prefix="roofline-report-lines-")
        self._folder = folder
        try:
            with open(os.path.join(folder, _REQUEST), "wb") as fh:
                pickle.dump((self.source, self.lines), fh, protocol=pickle.HIGHEST_PROTOCOL)
            self._proc = children.start("roofline_report.traces.line_worker", [folder])
        except (OSError, children.NotStarted):  # no interpreter to start, say
            self._close()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._close()

    def result(self) -> Helped | None:
        """The helper's lines once it has finished cleanly with every line asked for, else
        None."""
        proc, folder = self._proc, self._folder
        if proc is None or folder is None:
            return None
        try:
            code = proc.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            code = None
        helped: Any = None
        if code == 0:
            try:
                with open(os.path.join(folder, _RESULT), "rb") as fh:
                    helped = pickle.load(fh)
            except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError,
                    TypeError, ValueError):
                helped = None
        self._close()
        asked = {(p, i) for p, v in self.lines.items() for i in v}
        if not isinstance(helped, Helped) or set(helped.lines) != asked:
            return None
        return helped

    def _close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            children.end(proc)
        folder, self._folder = self._folder, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
