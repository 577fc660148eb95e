"""Per-kernel times from the events of a profiler trace (pure: no jax).

:func:`kernel_times` (duck-typed on ``jax.profiler.ProfileData``'s planes, lines and events)
turns the events of a trace, captured here (:mod:`roofline_report.observe.trace`) or on any
machine, into per-kernel times:

* Events are matched to kernels by their ``hlo_op`` and ``hlo_module`` stats. On CPU the plane
  ``/host:CPU`` holds one event per runtime thunk; a thunk that completes asynchronously gets an
  ``end: NAME`` event (linked by the flow stats ``_p``/``_c``, else the next one of that name on
  any line), and the kernel lasts until that event ends. On GPU the ``/device:GPU:N`` planes hold
  the kernel events (they are used whenever they carry ``hlo_op``).
* Nested events (a ``while`` thunk around the kernels of its body) count their self time; the
  self time of control flow (``while``, ``conditional``, ``call``: events whose ``hlo_op`` is not
  a kernel of the inventory) is loop control.
* Calls are told apart by the ``run_id`` stat, or the runs a line gives its events (a line's
  ``runs``, one per event; else the trace is one call per ``calls``).
  Per kernel and call: launches, and two times: **busy**, the sum of its events' own durations
  (what the kernel itself cost), and **span**, the sum of the times from each launch to its
  completion (for an asynchronous thunk this includes waiting for a busy worker thread, so on a
  machine with few cores small kernels beside a large one look long). Of the span, **wait** is
  the time it sat queued behind other kernels' events (:func:`_waits`), and **share** its
  share of the machine while it ran: kernels running at the same time split the cores, in
  proportion to the threads each keeps busy alone where those are given, evenly otherwise
  (:func:`_shares`). Statistics over calls are derived when the run is analysed, not here.
* Per call: the program's wall time, from the runtime's last execute event (``...Execute...``
  on a host line) before the call's first kernel to the end of its last kernel; the time during
  which at least one kernel runs; and the rest, named: dispatch (execute start to the first
  kernel), loop control, and the gaps between kernels (the runtime's scheduling and idle
  threads).

A trace with no matching event gives ``{"available": false, "reason": ...}`` (for example when
another profiler was already running).
"""

from __future__ import annotations

import bisect
import math
from array import array
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from roofline_report.quantiles import median

__all__ = ["is_execute", "kernel_times", "xspace_text"]

_CONTROL_OPS = ("while", "conditional", "call")


@dataclass(slots=True)
class _Event:  # not frozen: a frozen dataclass is three times slower to build
    line: int
    start: float  # ns
    end: float  # ns
    stats: Mapping[str, Any]
    run: Any  # its run_id stat, or the run its line gives it

    @property
    def duration(self) -> float:
        return self.end - self.start


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


@dataclass(slots=True)
class _Scan:
    """What :func:`kernel_times` reads of a trace's events, gathered in one pass without an
    object per event: the kernel events (``hlo_op``, of the module) of the device planes and
    of the host planes, the ``end: NAME`` events of every plane (:class:`_Ends`), and the
    starts of the host's execute events (``...Execute...`` without ``hlo_op``)."""

    device: list[_Event] = field(default_factory=list)
    host: list[_Event] = field(default_factory=list)
    ends: _Ends = field(default_factory=lambda: _Ends())
    execute_starts: list[float] = field(default_factory=list)


_STAT = object()  # a kernel's run: its run_id stat
_STAT_RUNS = repeat(_STAT)


def is_execute(name: str) -> bool:
    """Whether an event's name is the runtime's execute event (not its ``end:`` event)."""
    return "Execute" in name and not name.startswith("end: ")


def _scan(profile: Any, module: str | None) -> _Scan:
    """The events of the device planes, then of the host planes, lines numbered across both.
    A line may give its events' runs (``runs``, one per event), which stand for their
    ``run_id`` stats; a line of execute events only (no ``hlo_op``, no ``end:``) may give just
    their starts (``execute_starts``, in line order) instead of its events; a line of
    ``end: NAME`` events only (no ``hlo_op``), their columns (``thunk_ends``: ``flows``,
    ``ops``, ``starts``, ``ends``)."""
    out = _Scan()
    planes = list(getattr(profile, "planes", []))
    number = 0
    add_end = out.ends.add
    # Asked once per distinct value: an event name's (execute event, NAME of ``end: NAME``),
    # and whether an hlo_module is the module's.
    kinds: dict[str, tuple[bool, str | None]] = {}
    matches: dict[str, bool] = {}
    for host, plane in ([(False, p) for p in planes if str(p.name).startswith("/device:")]
                        + [(True, p) for p in planes if str(p.name).startswith("/host:")]):
        found = out.host if host else out.device
        executes = out.execute_starts
        for line in plane.lines:
            starts = getattr(line, "execute_starts", None)
            if starts is not None:  # a line of execute events, given as their starts
                if host:
                    executes.extend(starts)
                number += 1
                continue
            thunk_ends = getattr(line, "thunk_ends", None)
            if thunk_ends is not None:  # a line of end events only, given as columns
                for flow, op, start, end in zip(thunk_ends.flows, thunk_ends.ops,
                                                thunk_ends.starts, thunk_ends.ends,
                                                strict=True):
                    add_end(flow, op, start, end)
                number += 1
                continue
            runs = getattr(line, "runs", None)
            pairs = (zip(line.events, _STAT_RUNS) if runs is None  # noqa: B905 (endless)
                     else zip(line.events, runs, strict=True))
            for e, run in pairs:
                stats = e.stats  # read, never changed: a dict is kept as it is
                if type(stats) is not dict:
                    stats = dict(stats)
                name = e.name
                if type(name) is not str:
                    name = str(name)
                kind = kinds.get(name)
                if kind is None:
                    kind = kinds[name] = (is_execute(name),
                                          name[5:] if name.startswith("end: ") else None)
                if "hlo_op" in stats:
                    module_name = stats.get("hlo_module")
                    ours = matches.get(module_name) if type(module_name) is str else None
                    if ours is None:
                        ours = _module_matches(module_name, module)
                        if type(module_name) is str:
                            matches[module_name] = ours
                    if ours:
                        start = float(e.start_ns)
                        found.append(_Event(number, start, start + float(e.duration_ns), stats,
                                            stats.get("run_id") if run is _STAT else run))
                elif host and kind[0]:
                    executes.append(float(e.start_ns))
                if kind[1] is not None:
                    start = float(e.start_ns)
                    add_end(stats.get("_c"), kind[1], start, start + float(e.duration_ns))
            number += 1
    return out


def _modules_seen(profile: Any) -> list[str]:
    """The ``hlo_module`` of every event of the device and host planes (none matched)."""
    seen: set[str] = set()
    for plane in getattr(profile, "planes", []):
        if str(plane.name).startswith(("/device:", "/host:")):
            for line in plane.lines:
                for e in line.events:
                    stats = e.stats if type(e.stats) is dict else dict(e.stats)
                    if "hlo_module" in stats:
                        seen.add(str(stats["hlo_module"]))
    return sorted(seen)


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
    events = sorted((k.event.start, k.event.end) for k in leaves)
    starts = [s for s, _ in events]
    longest = max((e - s for s, e in events), default=0.0)
    for k in leaves:
        lo, hi = k.event.end, k.end
        k.running = [(k.event.start, k.event.end)] if k.event.end > k.event.start else []
        waited = 0.0
        if hi > lo:
            first = bisect.bisect_left(starts, lo - longest)
            last = bisect.bisect_left(starts, hi)
            # Its own event ends at lo, so it adds nothing to [lo, hi].
            queued = _merged((max(lo, s), min(hi, e)) for s, e in events[first:last]
                             if e <= hi and e > lo and s < hi)
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
    demand = [supply] * len(leaves)
    if cores and wants is not None:
        for i, k in enumerate(leaves):
            demand[i] = float(min(cores, max(1, wants.get(k.op, cores))))
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


def _module_matches(stat: Any, module: str | None) -> bool:
    if module is None:
        return True
    name = str(stat)
    return name == module or name.startswith(module + ".") or name.startswith(module + "(")


def _self_times(kernels: list[_Kernel]) -> None:
    """Self times of nested events on one line: launch to completion, and the event's own
    duration, each less the children's durations."""
    by_line: dict[int, list[_Kernel]] = defaultdict(list)
    for k in kernels:
        by_line[k.event.line].append(k)
    for items in by_line.values():
        items.sort(key=lambda k: (k.event.start, -k.event.end))
        stack: list[_Kernel] = []
        for k in items:
            k.self_ns = k.end - k.event.start
            k.busy_ns = k.event.duration
            while stack and stack[-1].event.end <= k.event.start:
                stack.pop()
            if stack and k.event.end <= stack[-1].event.end:
                stack[-1].self_ns -= k.event.duration
                stack[-1].busy_ns -= k.event.duration
            stack.append(k)
    for k in kernels:
        k.self_ns = max(0.0, k.self_ns)
        k.busy_ns = max(0.0, min(k.busy_ns, k.self_ns))


class _Ends:
    """The ``end: NAME`` events by (flow id or None, NAME), in time order (the trace's order
    where they start together), and which a launch has taken. Flow ids are reused between runs
    and thunks, so a match needs the name as well and starts no earlier. Kept as flat columns
    (a 100 MB trace holds 340,000 of them, most with a flow id of their own): each key a
    number, its events a run of the columns sorted by key, then start."""

    __slots__ = ("_ends", "_flows", "_hi", "_key", "_keys", "_lo", "_start", "_starts",
                 "_used")

    def __init__(self) -> None:
        self._flows: dict[str, dict[Any, int]] = {}  # NAME -> flow id -> key number
        self._keys = 0  # key numbers given
        self._key: array[int] = array("q")  # per event, as they came
        self._start: array[float] = array("d")
        self._lo: array[int] = array("q")  # per key number: its first sorted event
        self._hi: array[int] = array("q")  # and the one past its last
        self._starts: array[float] = array("d")
        self._ends: array[float] = array("d")
        self._used = bytearray()

    def add(self, flow: Any, op: str, start: float, end: float) -> None:
        flows = self._flows.get(op)
        if flows is None:
            flows = self._flows[op] = {}
        key = flows.get(flow)
        if key is None:
            key = flows[flow] = self._keys
            self._keys += 1
        self._key.append(key)
        self._start.append(start)
        self._ends.append(end)

    def sort(self) -> None:
        """The events in (key, start) order, a stable sort (as the events came)."""
        self._used = bytearray(len(self._key))
        if not self._key:
            return
        keys = np.frombuffer(self._key, dtype=np.int64)
        starts = np.frombuffer(self._start, dtype=np.float64)
        order = np.argsort(starts, kind="stable")
        order = order[np.argsort(keys[order], kind="stable")]
        keys = keys[order]
        self._starts = array("d", starts[order].tobytes())
        self._ends = array("d", np.frombuffer(self._ends, dtype=np.float64)[order].tobytes())
        self._key, self._start = array("q"), array("d")
        # Each key's run of the sorted columns: [lo[key], hi[key]) (every key has events).
        bounds = np.flatnonzero(np.diff(keys)) + 1
        firsts = np.concatenate(([0], bounds))
        lo = np.zeros(self._keys, dtype=np.int64)
        hi = np.zeros(self._keys, dtype=np.int64)
        lo[keys[firsts]] = firsts
        hi[keys[firsts]] = np.concatenate((bounds, [len(keys)]))
        self._lo, self._hi = array("q", lo.tobytes()), array("q", hi.tobytes())

    def take(self, stats: Mapping[str, Any], op: str, start: float) -> float | None:
        """The end of the first untaken end event of ``op`` (with the flow id of the launch's
        ``stats``, else any) that starts no earlier than ``start``, now taken: found by
        bisection, so that a long trace costs n log n."""
        flows = self._flows.get(op)
        if flows is None:
            return None
        used = self._used
        for flow in (stats.get("_p"), None):
            key = flows.get(flow)
            if key is None:
                continue
            hi = self._hi[key]
            i = bisect.bisect_left(self._starts, start, self._lo[key], hi)
            while i < hi and used[i]:
                i += 1
            if i < hi:
                used[i] = 1
                return self._ends[i]
        return None


def kernel_times(
    profile: Any,
    *,
    module: str | None,
    kernels: Iterable[str] | None = None,
    calls: int = 1,
    wants: Mapping[str, int] | None = None,
    cores: int | None = None,
) -> dict[str, Any]:
    """Per-kernel times from a ProfileData (see the module docstring).

    ``module``: the ``hlo_module`` to keep (``jit_<name>``; None keeps every module);
    ``kernels``: the inventory's kernel names (other matched ops are control flow);
    ``calls``: calls traced, when the events carry no ``run_id``; ``wants`` and ``cores``: the
    worker threads each kernel keeps busy alone and the machine's cores, which weight the
    shares of kernels that ran side by side (:func:`_shares`; without them, even shares).

    Returns the ``kernel_timing`` record of results.json (samples, no statistics)::

        {"available": true, "source": "host" | "device",
         "calls": [{"program_s", "busy_s", "dispatch_s", "loop_control_s", "gaps_s"}],
         "kernels": [{"name", "launches": [...], "busy_s": [...], "span_s": [...],
                      "wait_s": [...], "share_s": [...], "calls_at": [...]}],
         "unmatched": [op names], "notes"}

    one entry per traced call (seconds per call); a kernel's lists hold one sample per call in
    which it ran: ``busy_s`` the sum of its events' own durations, ``span_s`` of the times from
    each launch to its completion, ``wait_s`` of the time queued behind other kernels,
    ``share_s`` of its shares of the machine while it ran; ``calls_at`` (only for a kernel
    that did not run in every call) the index of the call of each sample.
    """
    scan = _scan(profile, module)
    source, found = ("device", scan.device) if scan.device else ("host", scan.host)
    if not found:
        return {"available": False, "reason": _no_kernel_reason(_modules_seen(profile), module)}

    names = set(kernels) if kernels is not None else None
    ends = scan.ends if source == "host" else _Ends()
    ends.sort()
    execute_starts = sorted(scan.execute_starts)
    del scan  # each launch is kept by its call's list alone, and released with it (below)
    items = _timed_kernels(found, ends)
    del found, ends

    def is_kernel(op: str) -> bool:
        if names is not None:
            return op in names
        return not op.startswith(_CONTROL_OPS)

    ordered_runs = _ordered_runs(items)
    del items
    per_call_div = calls if len(ordered_runs) == 1 and calls > 1 else 1

    samples = _Samples()
    previous_end = float("-inf")
    ns = 1e-9 / per_call_div
    kernel_ops: dict[str, bool] = {}  # op -> is_kernel(op), asked once per op
    for index, run in enumerate(ordered_runs):
        ordered_runs[index] = []  # its launches: not needed past this call
        leaves: list[_Kernel] = []
        control: list[_Kernel] = []
        for k in run:
            flag = kernel_ops.get(k.op)
            if flag is None:
                flag = kernel_ops[k.op] = is_kernel(k.op)
            (leaves if flag else control).append(k)
        if control:
            samples.unmatched |= {k.op for k in control}
        if not leaves:
            continue
        first = min([k.event.start for k in run])  # control flow around kernels included
        last = max([k.end for k in run])
        start = _call_start(execute_starts, previous_end, first)
        previous_end = last
        control_ns = sum([k.self_ns for k in control])
        samples.calls.append(_call_times(leaves, control_ns, start, first, last, ns))
        if not _alone(leaves):
            _waits(leaves)
            _shares(leaves, wants, cores)
        samples.add_kernels(leaves, ns, per_call_div)
    if not samples.calls:
        return {"available": False,
                "reason": "the trace's events match no kernel of the compiled program"}
    notes = []
    if len(samples.calls) < len(ordered_runs):
        notes.append(f"{len(ordered_runs) - len(samples.calls)} traced call(s) held no kernel "
                     "event")
    if per_call_div > 1:
        notes.append(f"the trace's events carry no run id: its {calls} calls are one sample, "
                     "divided by the number of calls")
    return {
        "available": True,
        "source": source,
        "calls": samples.calls,
        "calls_per_sample": per_call_div,
        "kernels": samples.rows(),
        "unmatched": sorted(samples.unmatched),
        "notes": notes,
        **({"cores": cores} if cores and wants is not None else {}),
    }


def _no_kernel_reason(modules: list[str], module: str | None) -> str:
    """Why a trace gives no kernel times: the modules it does hold (``modules``, sorted), or
    that it holds none."""
    why = "the trace holds no kernel event"
    if modules:
        why += f" of {module} (modules seen: {', '.join(modules[:5])})"
    else:
        why += " (another profiler may have been running)"
    return why


def _timed_kernels(found: list[_Event], ends: _Ends) -> list[_Kernel]:
    """The kernel events in time order, each lasting until its completion event (if any), with
    the self times of nested events."""
    items: list[_Kernel] = []
    add = items.append
    take = ends.take
    for e in sorted(found, key=attrgetter("start")):
        end = e.end
        stats = e.stats
        op = str(stats["hlo_op"])
        done = take(stats, op, e.start)
        if done is not None:
            end = max(end, done)
        add(_Kernel(e, op, e.run, end))
    _self_times(items)
    return items


def _ordered_runs(items: list[_Kernel]) -> list[list[_Kernel]]:
    """The kernels of each traced call (by ``run_id``; all one call when an event has none),
    calls in time order."""
    runs: dict[Any, list[_Kernel]] = defaultdict(list)
    if all(k.run is not None for k in items):
        for k in items:
            runs[k.run].append(k)
    else:
        runs[None] = items
    return sorted(runs.values(), key=lambda ks: min(k.event.start for k in ks))


def _call_start(execute_starts: Sequence[float], previous_end: float, first: float) -> float:
    """When a call starts: at the runtime's last execute event before its first kernel (and
    after the previous call's kernels), else at that kernel; the kernels may run on another
    thread. ``execute_starts``: the execute events' starts, in order."""
    i = bisect.bisect_right(execute_starts, first) - 1
    if i >= 0 and execute_starts[i] >= previous_end:
        return execute_starts[i]
    return first


def _call_times(leaves: list[_Kernel], control_ns: float, start: float, first: float,
                last: float, ns: float) -> dict[str, float]:
    """One call's wall time, the time during which a kernel ran, and the rest by cause
    (seconds: ``ns`` converts nanoseconds, per call)."""
    wall = max(last - start, 1e-9)
    union = _union((k.event.start, k.end) for k in leaves)
    loop_control = min(control_ns, max(0.0, wall - union))
    return {
        "program_s": wall * ns,
        "busy_s": union * ns,
        "dispatch_s": (first - start) * ns,
        "loop_control_s": loop_control * ns,
        "gaps_s": max(0.0, wall - union - (first - start) - loop_control) * ns,
    }


@dataclass(slots=True)
class _Samples:
    """The samples gathered call by call: per kernel its spans, busy times and launches (one
    per call in which it ran), the calls' times, and the ops that matched no kernel."""

    span: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    own: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    wait: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    share: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    launches: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    at: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))  # call indices
    calls: list[dict[str, float]] = field(default_factory=list)
    unmatched: set[str] = field(default_factory=set)

    def add_kernels(self, leaves: list[_Kernel], ns: float, per_call_div: int) -> None:
        """One sample per kernel that ran in this call: its summed span, busy time, launches."""
        # Per op: [span, busy, wait, share, launches], each sum from 0 as the kernels come.
        sums: dict[str, list[float]] = {}
        for k in leaves:
            acc = sums.get(k.op)
            if acc is None:
                sums[k.op] = [0.0 + k.self_ns, 0.0 + k.busy_ns, 0.0 + k.waited_ns,
                              0.0 + k.shared_ns, 1]
            else:
                acc[0] += k.self_ns
                acc[1] += k.busy_ns
                acc[2] += k.waited_ns
                acc[3] += k.shared_ns
                acc[4] += 1
        call = len(self.calls) - 1
        for op, (span, busy, wait, share, count) in sums.items():
            self.span[op].append(round(span * ns, 12))
            self.own[op].append(round(busy * ns, 12))
            self.wait[op].append(round(wait * ns, 12))
            self.share[op].append(round(share * ns, 12))
            self.launches[op].append(count / per_call_div)
            self.at[op].append(call)

    def rows(self) -> list[dict[str, Any]]:
        """The kernels' records, the longest median busy time first."""
        order = sorted(self.span, key=lambda op: (-(median(self.own[op]) or 0.0), op))
        return [{"name": op, "launches": self.launches[op], "busy_s": self.own[op],
                 "span_s": self.span[op], "wait_s": self.wait[op], "share_s": self.share[op],
                 **({"calls_at": self.at[op]} if len(self.at[op]) != len(self.calls) else {})}
                for op in order]


def _stat_text(key: int, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        text = str(value).replace("\\", "\\\\").replace('"', '\\"')
        return f'stats {{ metadata_id: {key} str_value: "{text}" }}'
    if isinstance(value, float):
        return f"stats {{ metadata_id: {key} double_value: {value!r} }}"
    if value < 0 or value >= 2**63:
        return f"stats {{ metadata_id: {key} int64_value: {value} }}"
    return f"stats {{ metadata_id: {key} uint64_value: {value} }}"


def xspace_text(planes: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]]) -> str:
    """A text-proto XSpace (``ProfileData.from_text_proto``) from plain data:
    ``{plane name: {line name: [{"name", "start_ns", "duration_ns", "stats": {...}}]}}``.
    For recorded and hand-made trace fixtures."""
    out: list[str] = []
    for p_id, (plane, lines) in enumerate(planes.items(), 1):
        events: dict[str, int] = {}
        stats: dict[str, int] = {}
        body: list[str] = []
        for l_id, (line, items) in enumerate(lines.items(), 1):
            rows = []
            for item in items:
                meta = events.setdefault(str(item["name"]), len(events) + 1)
                stat_text = " ".join(
                    _stat_text(stats.setdefault(k, len(stats) + 1), v)
                    for k, v in (item.get("stats") or {}).items()
                )
                offset = round(float(item["start_ns"]) * 1000)
                duration = round(float(item["duration_ns"]) * 1000)
                rows.append(f"    events {{ metadata_id: {meta} offset_ps: {offset} "
                            f"duration_ps: {duration} {stat_text} }}")
            body.append(f'  lines {{ id: {l_id} name: "{line}" timestamp_ns: 0\n'
                        + "\n".join(rows) + "\n  }")
        body += [f'  event_metadata {{ key: {i} value {{ id: {i} name: "{n}" }} }}'
                 for n, i in events.items()]
        body += [f'  stat_metadata {{ key: {i} value {{ id: {i} name: "{n}" }} }}'
                 for n, i in stats.items()]
        out.append(f'planes {{\n  id: {p_id}\n  name: "{plane}"\n' + "\n".join(body) + "\n}")
    return "\n".join(out) + "\n"
