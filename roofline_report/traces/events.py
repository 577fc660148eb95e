"""Per-kernel times from the events of a profiler trace (pure: no jax).

:func:`kernel_times` (duck-typed on ``jax.profiler.ProfileData``'s planes, lines and events)
turns the events of a trace, captured here (:mod:`roofline_report.observe.trace`) or on any
machine, into per-kernel times:

* Events are matched to kernels by their ``hlo_op`` and ``hlo_module`` stats. On CPU the plane
  ``/host:CPU`` holds one event per runtime thunk; a thunk that completes asynchronously gets an
  ``end: NAME`` event (linked by the flow stats ``_p``/``_c``, else the next one of that name on
  any line), and the kernel lasts until that event ends. On GPU the ``/device:GPU:N`` planes hold
  the kernel events (they are used whenever they carry ``hlo_op``); an event whose ``hlo_op``
  names a command buffer rather than a kernel is matched by its own name
  (:mod:`roofline_report.traces.kernel_names`).
* On a TPU the op events of ``/device:TPU:N`` hold neither stat: they are given them, with
  ``run_id``, by :mod:`roofline_report.traces.tpu_ops` (the kernel their instruction belongs to,
  the module execution around them); the done of an asynchronous op (``DONE_STAT``) adds its
  time to its start's kernel but no launch, and a line giving the program's executions
  (``program_spans``: a TPU's module events) makes each call last as its execution does.
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
from array import array
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

import numpy as np

from roofline_report.traces.call_samples import Spans, _Samples, sample_calls, sample_columns
from roofline_report.traces.kernel_columns import timed_launches
from roofline_report.traces.kernel_names import Resolved, resolve_ops
from roofline_report.traces.launches import (
    DONE_STAT,
    _Event,
    _Kernel,
    apart_self_times,
    unnested,
)

__all__ = ["is_execute", "kernel_times", "xspace_text"]

_CONTROL_OPS = ("while", "conditional", "call")


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
    spans: Spans = field(default_factory=lambda: ([], []))


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
            spans = getattr(line, "program_spans", None)
            if spans is not None:  # a program's executions, given as their spans
                out.spans[0].extend(spans[0])
                out.spans[1].extend(spans[1])
                number += 1
                continue
            starts = getattr(line, "execute_starts", None)
            if starts is not None:  # a line of execute events, given as their starts
                if host:
                    executes.extend(starts)
                number += 1
                continue
            thunk_ends = getattr(line, "thunk_ends", None)
            if thunk_ends is not None:  # a line of end events only, given as columns
                out.ends.extend(thunk_ends.flows, thunk_ends.ops, thunk_ends.starts,
                                thunk_ends.ends)
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
                                            stats.get("run_id") if run is _STAT else run, name))
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



def _module_matches(stat: Any, module: str | None) -> bool:
    if module is None:
        return True
    name = str(stat)
    return name == module or name.startswith(module + ".") or name.startswith(module + "(")


def _unnested(items: list[_Kernel]) -> bool:
    """:func:`~roofline_report.traces.launches.unnested` of a line's launches, in start
    order."""
    starts = np.fromiter((k.event.start for k in items), dtype=np.float64, count=len(items))
    ends = np.fromiter((k.event.end for k in items), dtype=np.float64, count=len(items))
    return unnested(starts, ends)


def _set_apart(items: list[_Kernel]) -> None:
    """:func:`_self_times` of a line whose events nest nowhere (:func:`_unnested`), by
    :func:`~roofline_report.traces.launches.apart_self_times`."""
    n = len(items)
    own, busy = apart_self_times(
        np.fromiter((k.event.start for k in items), dtype=np.float64, count=n),
        np.fromiter((k.event.end for k in items), dtype=np.float64, count=n),
        np.fromiter((k.end for k in items), dtype=np.float64, count=n))
    for k, a, b in zip(items, own.tolist(), busy.tolist(), strict=True):
        k.self_ns = a
        k.busy_ns = b


def _self_times(kernels: list[_Kernel]) -> None:
    """Self times of nested events on one line: launch to completion, and the event's own
    duration, each less the children's durations."""
    by_line: dict[int, list[_Kernel]] = defaultdict(list)
    for k in kernels:
        by_line[k.event.line].append(k)
    for items in by_line.values():
        if _unnested(items):  # in order, none inside another: nothing to take from any
            _set_apart(items)
            continue
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
        for k in items:
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

    def extend(self, flows: Sequence[Any], ops: Sequence[str], starts: Sequence[float],
               ends: Sequence[float]) -> None:
        """:meth:`add` for each of many events given as columns (a line of end events)."""
        if not (len(flows) == len(ops) == len(starts) == len(ends)):
            raise ValueError("end-event columns of different lengths")
        keyed = self._flows
        given = self._keys
        if self._extend_fresh(flows, ops):
            self._start.extend(starts)  # floats (ints are taken as floats)
            self._ends.extend(ends)
            return
        keys: list[int] = []
        append = keys.append
        for flow, op in zip(flows, ops):  # noqa: B905 (the lengths are checked above)
            by_flow = keyed.get(op)
            if by_flow is None:
                by_flow = keyed[op] = {}
            key = by_flow.get(flow)
            if key is None:
                key = by_flow[flow] = given
                given += 1
            append(key)
        self._keys = given
        self._key.extend(keys)
        self._start.extend(starts)  # floats (ints are taken as floats)
        self._ends.extend(ends)

    def _extend_fresh(self, flows: Sequence[Any], ops: Sequence[str]) -> bool:
        """:meth:`extend`'s keys where every (op, flow id) pair of the columns is new (no op
        keyed before) and comes once (a long trace's end events, each with its own flow id):
        the keys are then the events' numbers in order, as one event after another would get
        them, and each op's keys are set in one step. False, with nothing done, otherwise."""
        n = len(ops)
        named = dict.fromkeys(ops)
        if any(op in self._flows for op in named):
            return False
        given = self._keys
        keys = np.arange(given, given + n, dtype=np.int64)
        code = {op: i for i, op in enumerate(named)}
        which = np.fromiter(map(code.__getitem__, ops), dtype=np.int64, count=n)
        keyed: dict[str, dict[Any, int]] = {}
        for op, i in code.items():
            at = np.flatnonzero(which == i).tolist()
            try:
                keyed[op] = dict(zip([flows[j] for j in at], keys[at].tolist(), strict=True))
            except TypeError:  # a flow id that cannot be a key: one event after another
                return False
            if len(keyed[op]) != len(at):  # a pair that comes twice
                return False
        self._flows.update(keyed)
        self._keys = given + n
        self._key.frombytes(keys.tobytes())
        return True

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

    def take_all(self, flows: Sequence[Any], ops: Sequence[str], starts: np.ndarray
                 ) -> np.ndarray:
        """:meth:`take` for each of many launches in time order (``starts`` non-decreasing;
        ``flows`` their flow ids, None where a launch has none): the end each takes, NaN where
        none, the same as one :meth:`take` after another. Per key, launches take their ends in
        order: the j-th launch takes index max(its first end starting no earlier, the previous
        launch's index + 1), a running maximum, so numpy takes them all at once; first by the
        flow id's key, then, for the launches left, by the key without a flow id."""
        n = len(ops)
        out = np.full(n, np.nan)
        if not n or not self._keys:
            return out
        keyed = self._flows
        nothing: dict[Any, int] = {}
        by_flow = [keyed.get(op, nothing) for op in ops]
        own = np.fromiter((-1 if flow is None else keys.get(flow, -1)
                           for keys, flow in zip(by_flow, flows, strict=True)),
                          dtype=np.int64, count=n)
        taken = self._take_keyed(own, starts, out)
        rest = np.flatnonzero(~taken)
        if rest.size:
            listed = rest.tolist()
            shared = np.fromiter((by_flow[i].get(None, -1) for i in listed), dtype=np.int64,
                                 count=len(listed))
            found = np.full(len(listed), np.nan)
            self._take_keyed(shared, starts[rest], found)
            out[rest] = found
        return out

    def _take_keyed(self, key: np.ndarray, starts: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Give each launch with a key (``key`` >= 0, in time order) the first untaken end of
        its key starting no earlier than it, into ``out``; which launches got one."""
        got = np.zeros(len(key), dtype=bool)
        rows = np.flatnonzero(key >= 0)
        if not rows.size:
            return got
        lo = np.frombuffer(self._lo, dtype=np.int64)
        hi = np.frombuffer(self._hi, dtype=np.int64)
        end_start = np.frombuffer(self._starts, dtype=np.float64)
        end_key = np.repeat(np.arange(len(lo)), hi - lo)  # each sorted end's key
        k = key[rows]
        at = starts[rows]
        # (key, start) pairs as one integer each, ordered as the pairs are: the first end of a
        # launch's key starting no earlier is where its pair would go among the ends'.
        ranks = np.unique(np.concatenate((end_start, at)), return_inverse=True)[1]
        width = int(ranks.max()) + 1
        first = np.searchsorted(end_key * width + ranks[:len(end_start)],
                                k * width + ranks[len(end_start):], side="left")
        # Launches of each key in time order: index j of its group takes
        # max over i <= j of (first[i] - i) + j.
        order = np.argsort(k, kind="stable")
        ks = k[order]
        group = np.concatenate(([0], np.cumsum(ks[1:] != ks[:-1])))
        heads = np.flatnonzero(np.concatenate(([True], ks[1:] != ks[:-1])))
        j = np.arange(len(ks)) - heads[group]
        big = len(end_start) + len(ks) + 2
        lifted = first[order] - j + group * big
        index = np.maximum.accumulate(lifted) - group * big + j
        ok = index < hi[ks]
        picked = order[ok]
        used = index[ok]
        out[rows[picked]] = np.frombuffer(self._ends, dtype=np.float64)[used]
        got[rows[picked]] = True
        for i in used.tolist():
            self._used[i] = 1
        return got


def kernel_times(
    profile: Any,
    *,
    module: str | None,
    kernels: Iterable[str] | None = None,
    calls: int = 1,
    wants: Mapping[str, int] | None = None,
    cores: int | None = None,
    launches: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Per-kernel times from a ProfileData (see the module docstring).

    ``module``: the ``hlo_module`` to keep (``jit_<name>``; None keeps every module);
    ``kernels``: the inventory's kernel names (other matched ops are control flow);
    ``calls``: calls traced, when the events carry no ``run_id``; ``wants`` and ``cores``: the
    worker threads each kernel keeps busy alone and the machine's cores, which weight the
    shares of kernels that ran side by side (:func:`_shares`; without them, even shares);
    ``launches``: each kernel's launches per call where known (a loop body's trips), which
    place the events of kernels run in a command buffer (:mod:`~roofline_report.traces.
    kernel_names`; ``kernels`` in schedule order).

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
    order = list(kernels) if kernels is not None else None
    names = set(order) if order is not None else None

    def is_kernel(op: str) -> bool:
        if names is not None:
            return op in names
        return not op.startswith(_CONTROL_OPS)

    # Lines of kernel events (as the lanes give them) are read as columns; any other trace
    # one event at a time.
    fast = timed_launches(profile, module, _Ends, _module_matches, order, launches)
    if fast is not None:
        runs = len(fast.launches.sizes)
        per_call_div = calls if runs == 1 and calls > 1 else 1
        samples = sample_columns(fast.launches, is_kernel, fast.execute_starts, per_call_div,
                                 wants, cores, fast.spans)
        return _record(fast.source, samples, runs, per_call_div, calls, wants, cores,
                       fast.resolved)
    scan = _scan(profile, module)
    source, found = ("device", scan.device) if scan.device else ("host", scan.host)
    if not found:
        return {"available": False, "reason": _no_kernel_reason(_modules_seen(profile), module)}

    ends = scan.ends if source == "host" else _Ends()
    ends.sort()
    execute_starts = sorted(scan.execute_starts)
    spans = scan.spans
    del scan  # each launch is kept by its call's list alone, and released with it (below)
    items = _timed_kernels(found, ends)
    del found, ends
    ordered_runs = _ordered_runs(items)
    del items
    resolved = _by_own_names(ordered_runs, order, launches) if order is not None else None
    per_call_div = calls if len(ordered_runs) == 1 and calls > 1 else 1
    traced = len(ordered_runs)
    samples = sample_calls(ordered_runs, is_kernel, execute_starts, per_call_div, wants,
                           cores, spans)  # empties ordered_runs: its launches are released
    return _record(source, samples, traced, per_call_div, calls, wants, cores, resolved)


def _by_own_names(runs: list[list[_Kernel]], order: list[str],
                  launches: Mapping[str, int] | None) -> Resolved:
    """Each launch whose op names no kernel given the kernel its event's own name names
    (:func:`~roofline_report.traces.kernel_names.resolve_ops`), call by call."""
    flat = [k for run in runs for k in run]
    calls = [i for i, run in enumerate(runs) for _ in run]
    resolved = resolve_ops([k.op for k in flat], [k.event.name for k in flat], calls, order,
                           launches)
    for k, op in zip(flat, resolved.ops, strict=True):
        k.op = op
    return resolved


def _record(source: str, samples: _Samples, traced: int, per_call_div: int, calls: int,
            wants: Mapping[str, int] | None, cores: int | None,
            resolved: Resolved | None = None) -> dict[str, Any]:
    """The ``kernel_timing`` record of the samples of ``traced`` calls; ``resolved``, the
    events placed by their own names, is said in its notes."""
    if not samples.calls:
        return {"available": False,
                "reason": "the trace's events match no kernel of the compiled program"}
    notes = []
    said = resolved.note() if resolved is not None else None
    if said:
        notes.append(said)
    if len(samples.calls) < traced:
        notes.append(f"{traced - len(samples.calls)} traced call(s) held no kernel "
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
    # In time order (a stable sort, by numpy: the events of several lines, interleaved).
    starts = np.fromiter((e.start for e in found), dtype=np.float64, count=len(found))
    for e in [found[i] for i in np.argsort(starts, kind="stable").tolist()]:
        end = e.end
        stats = e.stats
        op = str(stats["hlo_op"])
        done = take(stats, op, e.start)
        if done is not None:
            end = max(end, done)
        add(_Kernel(e, op, e.run, end, launch=0 if stats.get(DONE_STAT) else 1))
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
    # The kernels come in time order (:func:`_timed_kernels`): each call's first is its
    # earliest.
    return sorted(runs.values(), key=lambda ks: ks[0].event.start)



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
