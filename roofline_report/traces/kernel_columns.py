"""The kernel launches of a trace read as columns (pure: no jax): the path
:func:`roofline_report.traces.events.kernel_times` takes when every line it is given is a line
of kernel events (as the lanes give them: :class:`~roofline_report.ingest.timeline.KernelLine`),
of execute starts or of thunk ends, and no kernel event nests inside another on its line.

A long trace holds hundreds of thousands of launches, and the general path builds two objects
per launch (the event as it reads it, then the launch with its completion) before the calls
are sampled as columns anyway (:func:`~roofline_report.traces.call_samples.sample_columns`).
Here the launches go to that sampling as columns from the start: put in time order, matched
to their completion events, given their self and busy times and grouped by call with numpy;
objects (without their stats, which the sweeps do not read) are built only for the calls whose
launches overlap, which are sampled one launch at a time. What it gives is what the general
path gives, to the last bit (the same additions in the same order; tested against it): where
the lines are of any other kind, or a line's kernel events nest, it gives None and the general
path runs. Events that overlap without nesting (a GPU stream's kernels, each starting a little
before the previous one's event ends) are read here: no self time loses anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from roofline_report.traces.call_samples import LaunchColumns, Spans
from roofline_report.traces.kernel_events import LaneKernels
from roofline_report.traces.kernel_names import Resolved, resolve_ops
from roofline_report.traces.launches import (
    DONE_STAT,
    _Event,
    _Kernel,
    apart_self_times,
    unnested,
)

__all__ = ["Timed", "timed_launches"]

_END = "end: "
_DICT = frozenset((dict,))
_STR = frozenset((str,))
_NO_STATS: Mapping[str, Any] = MappingProxyType({})  # the sweeps read no stats


@dataclass(frozen=True, slots=True)
class Timed:
    """The launches of one source ("device" or "host") as columns, grouped by call, and the
    host's execute starts in time order."""

    source: str
    launches: LaunchColumns
    execute_starts: list[float]
    resolved: Resolved | None  # the events placed by their own names, where kernels were given
    spans: Spans = ([], [])  # a program's executions (starts, ends), where the lines give them


@dataclass(slots=True)
class _Lines:
    """The kernel lines of one source, their columns joined in line order (no stats: a line
    the lanes give as columns, :class:`~roofline_report.traces.kernel_events.LaneKernels`,
    keeps its own undecoded)."""

    number: list[int]
    count: list[int]
    start: list[float]
    duration: list[float]
    run: list[Any]
    op: list[str]
    flow: list[Any]
    name: list[str]
    done: list[Any]  # DONE_STAT: the done of an asynchronous op (no launch of its own)


_Read = tuple[list[float], list[float], list[Any], list[str], list[Any], list[str], list[Any]]


def _kernel_line(events: Sequence[Any], runs: Sequence[Any] | None, module: str | None,
                 matches: Callable[[Any, str | None], bool]) -> _Read | None:
    """One line's starts, durations, runs, ops, flow ids and event names, or None where an
    event is not a kernel event of the module the general path would keep as it is (a stats
    mapping that is not a dict, a name that is not a string or names an ``end:`` event, no
    ``hlo_op``, another module)."""
    if isinstance(events, LaneKernels):
        # Every event of a lane holds hlo_op and a dict of stats; names are strings.
        if any(n.startswith(_END) for n in set(events.names())):
            return None
        for name in set(events.modules()):
            if not matches(name, module):
                return None
        if runs is not None and len(runs) != len(events):
            return None
        return (events.start_ns.tolist(), events.duration_ns.tolist(),
                events.stat("run_id") if runs is None else list(runs),
                [str(op) for op in events.stat("hlo_op")], events.stat("_p"), events.names(),
                events.stat(DONE_STAT) if DONE_STAT in events.given else [None] * len(events))
    stats = [e.stats for e in events]
    if not set(map(type, stats)) <= _DICT:
        return None
    names = [e.name for e in events]
    if not set(map(type, names)) <= _STR or any(n.startswith(_END) for n in names):
        return None
    if not all("hlo_op" in s for s in stats):
        return None
    for name in {s.get("hlo_module") for s in stats}:
        if not matches(name, module):
            return None
    if runs is not None and len(runs) != len(stats):
        return None
    return ([float(e.start_ns) for e in events], [float(e.duration_ns) for e in events],
            [s.get("run_id") for s in stats] if runs is None else list(runs),
            [str(s["hlo_op"]) for s in stats], [s.get("_p") for s in stats], names,
            [s.get(DONE_STAT) for s in stats])


def _read(profile: Any, module: str | None, ends: Any,
          matches: Callable[[Any, str | None], bool]
          ) -> tuple[_Lines, _Lines, list[float], Spans] | None:
    """The device planes' and the host planes' kernel lines (lines numbered across both, as
    the general path numbers them), the thunk ends given to ``ends``, the execute starts and
    the program's executions; None where a line is of another kind."""
    planes = list(getattr(profile, "planes", []))
    lines = {host: _Lines([], [], [], [], [], [], [], [], []) for host in (False, True)}
    executes: list[float] = []
    spans: Spans = ([], [])
    number = 0
    for host, plane in ([(False, p) for p in planes if str(p.name).startswith("/device:")]
                        + [(True, p) for p in planes if str(p.name).startswith("/host:")]):
        for line in plane.lines:
            starts = getattr(line, "execute_starts", None)
            thunk_ends = getattr(line, "thunk_ends", None)
            given = getattr(line, "program_spans", None)
            if given is not None:
                spans[0].extend(given[0])
                spans[1].extend(given[1])
            elif starts is not None:
                if host:
                    executes.extend(starts)
            elif thunk_ends is not None:
                ends.extend(thunk_ends.flows, thunk_ends.ops, thunk_ends.starts,
                            thunk_ends.ends)
            elif hasattr(line, "runs"):
                read = _kernel_line(line.events, line.runs, module, matches)
                if read is None:
                    return None
                into = lines[host]
                into.number.append(number)
                into.count.append(len(read[0]))
                into.start += read[0]
                into.duration += read[1]
                into.run += read[2]
                into.op += read[3]
                into.flow += read[4]
                into.name += read[5]
                into.done += read[6]
            else:
                return None  # a line of the trace's own events: read one by one
            number += 1
    return lines[False], lines[True], executes, spans


def _unnested_lines(line: np.ndarray, start: np.ndarray, end: np.ndarray) -> bool:
    """Whether every line's events (``line``, ``start`` and ``end`` in time order) are
    :func:`~roofline_report.traces.launches.unnested`."""
    by_line = np.argsort(line, kind="stable")
    cuts = np.flatnonzero(np.diff(line[by_line])) + 1
    return all(unnested(start[rows], end[rows]) for rows in np.split(by_line, cuts))


def timed_launches(profile: Any, module: str | None, new_ends: Callable[[], Any],
                   matches: Callable[[Any, str | None], bool],
                   schedule: Sequence[str] | None = None,
                   trips: Mapping[str, int] | None = None) -> Timed | None:
    """The launches of ``profile`` (planes of kernel lines, execute starts and thunk ends) as
    columns grouped by call, each lasting until its completion event (from the thunk ends,
    kept in ``new_ends()``, :class:`~roofline_report.traces.events._Ends`, as the general
    path keeps them), or None where the general path must read the trace (another kind of
    line, a kernel event nested in another, no kernel event). ``matches(hlo_module, module)``
    tells the module's events; ``schedule``, the program's kernels in schedule order, and
    ``trips``, their launches per call where known, place the events whose ``hlo_op``
    names none of them by their own names
    (:func:`~roofline_report.traces.kernel_names.resolve_ops`)."""
    ends = new_ends()
    read = _read(profile, module, ends, matches)
    if read is None:
        return None
    device, host, executes, spans = read
    source, lines = ("device", device) if device.start else ("host", host)
    n = len(lines.start)
    if not n:
        return None
    if source == "device":  # a device's kernels end with their own events
        ends = new_ends()
    line_of = np.repeat(np.asarray(lines.number, dtype=np.int64),
                        np.asarray(lines.count, dtype=np.int64))
    at = np.asarray(lines.start, dtype=np.float64)
    # In time order (a stable sort: the events of several lines, interleaved).
    order = np.argsort(at, kind="stable")
    at = at[order]
    own_end = at + np.asarray(lines.duration, dtype=np.float64)[order]
    line_of = line_of[order]
    if not _unnested_lines(line_of, at, own_end):
        return None
    picked = order.tolist()
    runs = [lines.run[i] for i in picked]
    ops = [lines.op[i] for i in picked]
    flows = [lines.flow[i] for i in picked]
    # The launches each counts: none for the done of an asynchronous op (DONE_STAT).
    counted = ([0 if lines.done[i] else 1 for i in picked]
               if any(d is not None for d in lines.done) else None)
    # Event names are read only where an op names no kernel (a command buffer's events).
    if schedule is not None and not set(ops) <= set(schedule):
        names = [lines.name[i] for i in picked]
    else:
        schedule, names = None, []
    del lines

    # Each launch until its completion event, matched in time order (all at once), and no
    # earlier than its own event's end: max(own end, completion) as Python takes it.
    ends.sort()
    done = ends.take_all(flows, ops, at)
    del flows
    end = np.where(done > own_end, done, own_end)

    # Self and busy times of launches that nest nowhere: as the general path gives them.
    self_ns, busy_ns = apart_self_times(at, own_end, end)

    # Calls by run, in the order their first launches came (the calls' time order).
    if all(r is not None for r in runs):
        codes: dict[Any, int] = {}
        code = np.fromiter((codes.setdefault(r, len(codes)) for r in runs), dtype=np.int64,
                           count=n)
        calls = len(codes)
    else:
        code, calls = np.zeros(n, dtype=np.int64), 1
    resolved = None
    if schedule is not None:  # after the completion events, matched by the ops they name
        resolved = resolve_ops(ops, names, code.tolist(), schedule, trips)
        ops = resolved.ops
    del names
    flat = np.argsort(code, kind="stable")
    rows = flat.tolist()
    line_list = line_of.tolist()

    def kernels(lo: int, hi: int) -> list[_Kernel]:
        out = []
        for i in rows[lo:hi]:
            event = _Event(line_list[i], float(at[i]), float(own_end[i]), _NO_STATS, runs[i])
            out.append(_Kernel(event, ops[i], runs[i], float(end[i]), float(self_ns[i]),
                               float(busy_ns[i]), launch=1 if counted is None else counted[i]))
        return out

    launch = None if counted is None else np.asarray(counted, dtype=np.float64)[flat]
    launches = LaunchColumns(np.bincount(code, minlength=calls).astype(np.int64),
                             [ops[i] for i in rows], at[flat], own_end[flat], end[flat],
                             self_ns[flat], busy_ns[flat], kernels, launch)
    return Timed(source, launches, sorted(executes), resolved, spans)
