"""Launches of kernels on a timeline and how they overlap (pure: no jax).

A launch (:class:`_Kernel`) is one kernel event of a trace, lasting from its start to its
completion (:mod:`roofline_report.traces.events` reads them). Within one call of a program the
launches may overlap: an asynchronous thunk's remaining partitions queue behind another
kernel's work (:func:`_waits`), and kernels running at the same time split the machine
(:func:`_shares`); :func:`_alone` is the common case, no two launches overlapping, in which
both are known without their sweeps.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import numpy as np


@dataclass(slots=True)
class _Event:  # not frozen: a frozen dataclass is three times slower to build
    line: int
    start: float  # ns
    end: float  # ns
    stats: Mapping[str, Any]
    run: Any  # its run_id stat, or the run its line gives it
    name: str = ""  # the event's own name (on a GPU, the compiled kernel's)

    @property
    def duration(self) -> float:
        return self.end - self.start


# The stat of an event that completes an asynchronous op whose start is another event of the
# same kernel (a TPU's copy-done after its copy-start: both the start's kernel's time, one
# launch): its value is the event's own instruction.
DONE_STAT = "async_done"


@dataclass(slots=True)
class _Kernel:
    event: _Event
    op: str
    run: Any
    end: float
    self_ns: float = 0.0  # launch to completion, less nested kernels
    busy_ns: float = 0.0  # the event's own duration, less nested kernels
    waited_ns: float = 0.0  # of self_ns, queued behind other kernels' events (:func:`_waits`)
    shared_ns: float = 0.0  # its running time, each instant split among the kernels running
    running: list[tuple[float, float]] = field(default_factory=list)  # when it ran (ns)
    launch: int = 1  # launches it counts: 0 for the done of an asynchronous op (DONE_STAT)


def unnested(start: np.ndarray, end: np.ndarray) -> bool:
    """Whether no event (``start``, ``end``, in start order on one line) lies inside another:
    each either starts no earlier than every one before it ends or starts
    later than the one before it and ends after every one before it, as a GPU stream's
    kernels do when each starts a little before the previous one's end event. The nesting
    sweep then takes nothing from any, so :func:`apart_self_times` gives their self times."""
    if len(start) < 2:
        return True
    reach = np.maximum.accumulate(end)[:-1]
    after = start[1:]
    chained = (end[1:] > reach) & (after > start[:-1])
    return bool(np.all((reach <= after) | chained))


def apart_self_times(start: np.ndarray, end: np.ndarray, done: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Self and busy times of launches that nest nowhere (:func:`unnested`): launch to completion
    (``done``) and the event's own duration, clamped as the nesting sweep clamps them,
    ``max(0, self)`` and ``max(0, min(busy, self))`` as Python gives them (0.0 for -0.0 and
    NaN; the duration on a tie)."""
    own = _positive(done - start)
    return own, positive_min(end - start, own)


def _positive(values: np.ndarray) -> np.ndarray:
    """``max(0.0, v)`` of each value, as Python gives it."""
    return np.where(values > 0.0, values, 0.0)


def positive_min(values: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """``max(0.0, min(v, limit))`` of each pair, as Python gives it (the limit on a tie)."""
    return _positive(np.where(limit < values, limit, values))


def thread_demand(op: str, wants: Mapping[str, int] | None, cores: int | None) -> float:
    """The threads a kernel ``op`` keeps busy alone, of the machine's ``cores``: what
    :func:`_shares` splits the cores by (every core where it is not named, or where the
    cores or the wants are not given)."""
    if cores and wants is not None:
        return float(min(cores, max(1, wants.get(op, cores))))
    return float(cores) if cores else 1.0


def _union(intervals: Iterable[tuple[float, float]]) -> float:
    """The length of the union of ``intervals``."""
    return sum(end - start for start, end in _merged(intervals))


def _waits(leaves: list[_Kernel]) -> None:
    """Each launch's wait: the time between the end of its own event and its completion during
    which another kernel's event ran, counting only the events that ended before it completed.
    On a CPU an asynchronous kernel's remaining partitions queue behind the work another
    kernel gave the same worker threads and complete after it; that queueing is the other
    kernel's cost, not this one's. A kernel that completes while another kernel's event still
    runs was running beside it, not queued behind it, and keeps that time. Also sets each
    launch's ``running`` intervals: its own event, and the rest of its span outside the wait."""
    # The events by their ends: those ending within a launch's (lo, hi] are found by bisection,
    # so a call of many launches with one long event costs no more than one without.
    events = sorted(((k.event.start, k.event.end) for k in leaves), key=itemgetter(1))
    ends = [e for _, e in events]
    for k in leaves:
        lo, hi = k.event.end, k.end
        k.running = [(k.event.start, k.event.end)] if k.event.end > k.event.start else []
        waited = 0.0
        if hi > lo:
            first = bisect.bisect_right(ends, lo)
            last = bisect.bisect_right(ends, hi)
            # Its own event ends at lo, so it adds nothing to [lo, hi].
            queued = _merged((max(lo, s), min(hi, e)) for s, e in events[first:last] if s < hi)
            waited = sum(e - s for s, e in queued)
            k.running += _gaps(queued, lo, hi)
        k.waited_ns = max(0.0, min(waited, k.self_ns - k.busy_ns))


def _alone(leaves: list[_Kernel]) -> bool:
    """Whether each launch of a call (in start order) ran from launch to completion with no
    other launch's span overlapping its own, as in most calls of a long trace; if so, each gets
    what :func:`_waits` and :func:`_shares` would give it, without their sweeps: no wait, and
    its own event then the rest of its span, whole (its running intervals summed in the order
    :func:`_shares` adds them, so the sums are the same to the last bit). False, with nothing
    set, where any two overlap or the order is not by start."""
    reach = -math.inf
    previous = -math.inf
    for k in leaves:
        start = k.event.start
        if start < reach or start < previous:
            return False
        previous = start
        reach = max(reach, k.end, k.event.end)
    for k in leaves:
        start, own_end, end = k.event.start, k.event.end, k.end
        total = 0.0
        if own_end > start:
            total += own_end - start
        if end > own_end:
            total += end - own_end
        k.waited_ns = 0.0
        k.shared_ns = max(0.0, min(total, k.self_ns))
    return True


def _merged(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """The union of ``intervals`` as disjoint intervals in time order."""
    out: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if end <= start:
            continue
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _gaps(covered: list[tuple[float, float]], lo: float, hi: float
          ) -> list[tuple[float, float]]:
    """The parts of [lo, hi] that the disjoint, ordered ``covered`` intervals leave out."""
    out: list[tuple[float, float]] = []
    at = lo
    for start, end in covered:
        if start > at:
            out.append((at, start))
        at = max(at, end)
    if hi > at:
        out.append((at, hi))
    return out


def _shares(leaves: list[_Kernel], wants: Mapping[str, int] | None = None,
            cores: int | None = None) -> None:
    """Each launch's share of the machine (after :func:`_waits`): over the intervals it ran,
    each instant counts the fraction of its own speed alone that the machine could give it.
    With the threads each kernel keeps busy alone (``wants``, by kernel; a kernel not named
    wants every core) and the machine's ``cores``: kernels that together want no more than the
    cores each run as fast as alone and count the whole instant; past that, the cores are
    split in proportion and each counts cores ÷ (threads wanted) of it. Without them, each of
    n kernels running counts 1/n (each would fill the machine alone, as on a GPU). Kernels the
    runtime runs at the same time (independent kernels on different worker threads, or on
    different streams of a GPU) then take longer than they would alone by just that factor."""
    edges: list[tuple[float, int, int]] = []
    supply = float(cores) if cores else 1.0
    demand = [thread_demand(k.op, wants, cores) for k in leaves]
    add = edges.append
    for i, k in enumerate(leaves):
        for start, end in k.running:
            if end > start:
                add((start, 1, i))
                add((end, -1, i))
    edges.sort(key=itemgetter(0, 1))
    shared = [0.0] * len(leaves)  # each kernel's sum, its parts added in time order
    active: set[int] = set()
    wanted = 0.0  # threads the active kernels want (whole numbers: no rounding drift)
    at = 0.0
    for t, step, i in edges:
        if active and t > at:
            part = (t - at) * min(1.0, supply / wanted)
            for j in active:
                shared[j] += part
        at = t
        wanted += step * demand[i]
        if step > 0:
            active.add(i)
        else:
            active.discard(i)
    for k, total in zip(leaves, shared, strict=True):
        k.shared_ns = max(0.0, min(total, k.self_ns - k.waited_ns))


def swept_shares(call: np.ndarray, start: np.ndarray, end: np.ndarray, demand: np.ndarray,
                 supply: float, calls: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_shares` of launches that waited for nothing (each ran exactly its own event,
    ``start`` to ``end``), of many calls at once (``call``: each launch's call, below
    ``calls``), with the threads each wants alone (``demand``, whole numbers) and the
    machine's ``supply``: each launch's share, and per call the time during which some launch
    ran (the union of its events). The same sweep as :func:`_shares`, its edges sorted by call,
    then time, ends before starts; each launch's share is read from the running sum of the
    sweep's parts, so it may differ from :func:`_shares`'s launch-by-launch sums in the last
    bits (a long trace's sum reaches seconds: a part in 10^16 of that, under a picosecond)."""
    n = len(start)
    share = np.zeros(n)
    rows = np.flatnonzero(end > start)
    m = len(rows)
    if not m:
        return share, np.zeros(calls)
    times = np.concatenate((start[rows], end[rows]))
    steps = np.concatenate((np.ones(m), -np.ones(m)))
    owner = np.concatenate((call[rows], call[rows]))
    order = np.lexsort((steps, times, owner))
    times, owner = times[order], owner[order]
    wanted = np.cumsum(np.concatenate((demand[rows], -demand[rows]))[order])
    same = owner[1:] == owner[:-1]
    gap = np.where(same, times[1:] - times[:-1], 0.0)
    held = wanted[:-1]
    running = same & (held > 0.0)
    rate = np.minimum(1.0, supply / np.where(running, held, 1.0))
    part = np.where(running, gap * rate, 0.0)
    before = np.concatenate(([0.0], np.cumsum(part)))  # the parts of the edges before each
    position = np.empty(2 * m, dtype=np.int64)
    position[order] = np.arange(2 * m)
    share[rows] = before[position[m:]] - before[position[:m]]
    covered = np.bincount(owner[:-1][running], weights=gap[running], minlength=calls)
    return share, covered.astype(np.float64)
