"""One sample per traced call: the call's times, and each kernel's sums over its launches in
the call (pure: no jax). :func:`sample_calls` is what :func:`roofline_report.traces.events.
kernel_times` gathers after it has the launches of each call."""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from roofline_report.quantiles import median
from roofline_report.traces.launches import (
    _alone,
    _Kernel,
    _shares,
    _union,
    _waits,
    positive_min,
    swept_shares,
    thread_demand,
)

# A program's executions, where the trace records them (a TPU's module events): their starts
# and ends (ns), in time order. A call's time is then its execution's.
Spans = tuple[list[float], list[float]]


def _bounded(first: np.ndarray, last: np.ndarray, spans: Spans | None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each call's start and end from the program's executions: the start of the execution
    in which its first launch starts, the end of the one in which its last launch ends (a
    call's launches lie in its execution; a step's, in the executions of the step); where no
    execution holds them, the call's launches' own. Also which calls an execution started."""
    starts = np.asarray(spans[0] if spans else [], dtype=np.float64)
    ends = np.asarray(spans[1] if spans else [], dtype=np.float64)
    if not len(starts):
        return first, last, np.zeros(len(first), dtype=bool)
    at = np.searchsorted(starts, first, side="right") - 1
    opened = (at >= 0) & (first <= ends[np.maximum(at, 0)])
    closing = np.searchsorted(starts, last, side="left") - 1
    closed = (closing >= 0) & (last <= ends[np.maximum(closing, 0)])
    return (np.where(opened, starts[np.maximum(at, 0)], first),
            np.where(closed, np.maximum(ends[np.maximum(closing, 0)], last), last), opened)


def _to_picoseconds(seconds: np.ndarray) -> list[float]:
    """Seconds rounded to whole picoseconds (the trace's own resolution), in one numpy step:
    sums of a call's launches carry the last bits of their additions, which would otherwise
    show in results.json (0.0007752300000000001)."""
    return np.round(seconds, 12).tolist()  # type: ignore[no-any-return]


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
                              0.0 + k.shared_ns, k.launch]
            else:
                acc[0] += k.self_ns
                acc[1] += k.busy_ns
                acc[2] += k.waited_ns
                acc[3] += k.shared_ns
                acc[4] += k.launch
        call = len(self.calls) - 1
        for op, (span, busy, wait, share, count) in sums.items():
            span_s, busy_s, wait_s, share_s = _to_picoseconds(
                np.array([span * ns, busy * ns, wait * ns, share * ns]))
            self.span[op].append(span_s)
            self.own[op].append(busy_s)
            self.wait[op].append(wait_s)
            self.share[op].append(share_s)
            self.launches[op].append(count / per_call_div)
            self.at[op].append(call)

    def rows(self) -> list[dict[str, Any]]:
        """The kernels' records, the longest median busy time first."""
        order = sorted(self.span, key=lambda op: (-(median(self.own[op]) or 0.0), op))
        return [{"name": op, "launches": self.launches[op], "busy_s": self.own[op],
                 "span_s": self.span[op], "wait_s": self.wait[op], "share_s": self.share[op],
                 **({"calls_at": self.at[op]} if len(self.at[op]) != len(self.calls) else {})}
                for op in order]


def sample_calls_each(runs: list[list[_Kernel]], is_kernel: Callable[[str], bool],
                      execute_starts: Sequence[float], per_call_div: int,
                      wants: Mapping[str, int] | None = None,
                      cores: int | None = None, executions: Spans | None = None
                      ) -> _Samples:
    """:func:`sample_calls` one call at a time, each call's launches as objects: the
    definition the columnar version is held to (to the last bit)."""
    samples = _Samples()
    previous_end = float("-inf")
    ns = 1e-9 / per_call_div
    kernel_ops: dict[str, bool] = {}  # op -> is_kernel(op), asked once per op
    for run in runs:
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
        begun, ended, opened = _bounded(np.array([first]), np.array([last]), executions)
        start = (float(begun[0]) if opened[0]
                 else _call_start(execute_starts, previous_end, first))
        last = float(ended[0])
        previous_end = last
        control_ns = sum([k.self_ns for k in control])
        samples.calls.append(_call_times(leaves, control_ns, start, first, last, ns))
        if not _alone(leaves):
            _waits(leaves)
            _shares(leaves, wants, cores)
        samples.add_kernels(leaves, ns, per_call_div)
    return samples


def _floats(values: Iterable[float], count: int) -> np.ndarray:
    return np.fromiter(values, dtype=np.float64, count=count)


@dataclass(slots=True)
class LaunchColumns:
    """The launches of the traced calls as columns, calls in time order and each call's
    launches in start order (``sizes``: launches per call): op, event start and end,
    completion, self and busy times (ns). ``kernels(lo, hi)`` gives the launches of the flat
    rows ``lo:hi`` as objects, for a call whose launches overlap (:func:`_waits` and
    :func:`_shares` sweep them one by one). ``launch``, where given: the launches each counts
    (0 for the done of an asynchronous op: ``_Kernel.launch``); else one each."""

    sizes: np.ndarray
    ops: list[str]
    ev_start: np.ndarray
    ev_end: np.ndarray
    end: np.ndarray
    self_ns: np.ndarray
    busy_ns: np.ndarray
    kernels: Callable[[int, int], list[_Kernel]]
    launch: np.ndarray | None = None


def sample_calls(runs: list[list[_Kernel]], is_kernel: Callable[[str], bool],
                 execute_starts: Sequence[float], per_call_div: int,
                 wants: Mapping[str, int] | None = None,
                 cores: int | None = None, executions: Spans | None = None
                 ) -> _Samples:
    """One sample per call (``runs``: each call's launches in start order, calls in time
    order) that ran a kernel (``is_kernel``; the other launches are control flow): the call's
    times (:func:`_call_times`: from the last of ``execute_starts`` before its first launch)
    and per kernel its sums over its launches, each divided by ``per_call_div``. Where the
    program's ``executions`` are given (a TPU's module events), a call lasts from the start of
    its execution to its end (:func:`_bounded`), not from an execute event.

    The launches are taken as columns (:func:`sample_columns`). ``runs`` is emptied: its
    launches are released once read, but for those of the calls computed one at a time."""
    flat = [k for run in runs for k in run]
    n = len(flat)
    sizes = np.fromiter((len(run) for run in runs), dtype=np.int64, count=len(runs))
    runs.clear()
    columns = LaunchColumns(
        sizes, [k.op for k in flat], _floats((k.event.start for k in flat), n),
        _floats((k.event.end for k in flat), n), _floats((k.end for k in flat), n),
        _floats((k.self_ns for k in flat), n), _floats((k.busy_ns for k in flat), n),
        lambda lo, hi: flat[lo:hi],
        None if all(k.launch == 1 for k in flat)
        else np.fromiter((k.launch for k in flat), dtype=np.float64, count=n))
    return sample_columns(columns, is_kernel, execute_starts, per_call_div, wants, cores,
                          executions)


def sample_columns(launches: LaunchColumns, is_kernel: Callable[[str], bool],
                   execute_starts: Sequence[float], per_call_div: int,
                   wants: Mapping[str, int] | None = None,
                   cores: int | None = None, executions: Spans | None = None
                   ) -> _Samples:
    """:func:`sample_calls` of launches given as columns: a long trace has hundreds of
    thousands of calls of a few launches each, and the work per call is the same arithmetic
    on every call. A call in which some launch overlaps another (:func:`_alone` false: its
    waits and shares need their sweeps) is computed as :func:`sample_calls_each` computes it,
    on its launches as objects. The sums are taken in the same order as there, so the two
    agree to the last bit."""
    samples = _Samples()
    n = len(launches.ops)
    if not n:
        return samples
    ns = 1e-9 / per_call_div
    sizes = launches.sizes
    runs = len(sizes)
    call_of = np.repeat(np.arange(runs), sizes)
    op_index: dict[str, int] = {}
    op_id = np.fromiter((op_index.setdefault(op, len(op_index)) for op in launches.ops),
                        dtype=np.int64, count=n)
    op_names = list(op_index)
    leaf = np.array([bool(is_kernel(op)) for op in op_names], dtype=bool)[op_id]
    samples.unmatched |= {op_names[i] for i in np.unique(op_id[~leaf]).tolist()}

    ev_start, ev_end, end = launches.ev_start, launches.ev_end, launches.end
    self_ns, busy_ns = launches.self_ns, launches.busy_ns

    calls = runs
    kept = np.flatnonzero(np.bincount(call_of[leaf], minlength=calls) > 0)
    if not kept.size:
        return samples
    offsets = np.cumsum(sizes) - sizes  # each call's first launch in the flat columns
    first = np.minimum.reduceat(ev_start, offsets)[kept]  # control flow around kernels too
    last = np.maximum.reduceat(end, offsets)[kept]
    begun, last, opened = _bounded(first, last, executions)
    previous_end = np.concatenate(([-np.inf], last[:-1]))
    start = first
    executes = np.asarray(execute_starts, dtype=np.float64)
    if executes.size:
        at = np.searchsorted(executes, first, side="right") - 1
        before = executes[np.maximum(at, 0)]
        start = np.where((at >= 0) & (before >= previous_end), before, first)
    start = np.where(opened, begun, start)
    control_ns = np.bincount(call_of[~leaf], weights=self_ns[~leaf], minlength=calls)[kept]

    # Which calls ran their launches one after another (as _alone asks, against the reach
    # of every earlier launch, not only the call's own: a call failing only that is computed
    # one launch at a time, as any call with an overlap is).
    rows = np.flatnonzero(leaf)
    reach = np.maximum(end[rows], ev_end[rows])
    before_reach = np.concatenate(([-np.inf], np.maximum.accumulate(reach)[:-1]))
    overlapping = np.bincount(call_of[rows][ev_start[rows] < before_reach], minlength=calls)
    alone = overlapping == 0

    # Of the others, those in which some launch completed after its own event ended (an
    # asynchronous thunk: its wait needs _waits' sweep) are computed one at a time, as
    # objects; in the rest (a GPU stream's kernels, each ending with its own event) each
    # launch ran just its event, and their shares are swept as columns.
    tailed = np.bincount(call_of[rows][end[rows] > ev_end[rows]], minlength=calls) > 0
    overlapped = kept[~alone[kept]]
    plain = {call: launches.kernels(int(offsets[call]), int(offsets[call] + sizes[call]))
             for call in overlapped[tailed[overlapped]].tolist()}
    swept = np.zeros(calls, dtype=bool)
    swept[overlapped[~tailed[overlapped]]] = True

    # Alone: no wait, and a share of its own event then the rest of its span, whole.
    total = np.where(ev_end > ev_start, ev_end - ev_start, 0.0)
    total += np.where(end > ev_end, end - ev_end, 0.0)
    shared = positive_min(total, self_ns)
    del total
    waited = np.zeros(n)
    # Alone: the launches' union, touching ones merged as _merged merges them.
    union = np.zeros(calls)
    spans = rows[alone[call_of[rows]] & (end[rows] > ev_start[rows])]
    if spans.size:
        c, s, e = call_of[spans], ev_start[spans], end[spans]
        new = np.ones(len(spans), dtype=bool)
        new[1:] = (c[1:] != c[:-1]) | (s[1:] > e[:-1])
        heads = np.flatnonzero(new)
        tails = np.concatenate((heads[1:] - 1, [len(spans) - 1]))
        union = np.bincount(c[heads], weights=e[tails] - s[heads],
                            minlength=calls).astype(np.float64)

    # The overlapping calls without a wait, all at once (as _shares sweeps them).
    if swept.any():
        at_rows = rows[swept[call_of[rows]]]
        per_op = np.array([thread_demand(op, wants, cores) for op in op_names])
        total, union_swept = swept_shares(call_of[at_rows], ev_start[at_rows],
                                          ev_end[at_rows], per_op[op_id[at_rows]],
                                          float(cores) if cores else 1.0, calls)
        shared[at_rows] = positive_min(total, self_ns[at_rows])
        union[swept] = union_swept[swept]

    # The others, a call at a time.
    for call, objects in plain.items():
        at_call = int(offsets[call])
        leaves = [k for k, is_leaf in zip(objects, leaf[at_call:at_call + len(objects)],
                                          strict=True) if is_leaf]
        _waits(leaves)
        _shares(leaves, wants, cores)
        union[call] = _union((k.event.start, k.end) for k in leaves)
        for j, k in enumerate(objects):
            waited[at_call + j] = k.waited_ns
            shared[at_call + j] = k.shared_ns

    span_of_call = last - start
    wall = np.where(span_of_call > 1e-9, span_of_call, 1e-9)
    covered = union[kept]
    free = wall - covered
    idle = np.where(free > 0.0, free, 0.0)
    loop_control = np.where(idle < control_ns, idle, control_ns)
    dispatch = first - start
    gaps = wall - covered - dispatch - loop_control
    gaps = np.where(gaps > 0.0, gaps, 0.0)
    samples.calls = [
        {"program_s": a, "busy_s": b, "dispatch_s": d, "loop_control_s": lc, "gaps_s": g}
        for a, b, d, lc, g in zip((wall * ns).tolist(), (covered * ns).tolist(),
                                  (dispatch * ns).tolist(), (loop_control * ns).tolist(),
                                  (gaps * ns).tolist(), strict=True)]

    # Per kernel and call: its launches' sums, in launch order (as add_kernels sums them).
    ordinal = np.full(calls, -1, dtype=np.int64)
    ordinal[kept] = np.arange(len(kept))
    width = len(op_names)
    keys = ordinal[call_of[rows]] * width + op_id[rows]
    groups, which = np.unique(keys, return_inverse=True)
    sums = [np.bincount(which, weights=values[rows], minlength=len(groups)) * ns
            for values in (self_ns, busy_ns, waited, shared)]
    counts = (np.bincount(which, minlength=len(groups)) if launches.launch is None
              else np.bincount(which, weights=launches.launch[rows], minlength=len(groups))
              ) / per_call_div
    group_call, group_op = np.divmod(groups, width)
    order = np.lexsort((group_call, group_op))  # by kernel, then call
    span_s, busy_s, wait_s, share_s = (_to_picoseconds(column[order]) for column in sums)
    launch_count = counts[order].tolist()
    call_index = group_call[order].tolist()
    op_of = group_op[order]
    bounds = np.flatnonzero(np.diff(op_of)) + 1
    for lo, hi in zip([0, *bounds.tolist()], [*bounds.tolist(), len(order)], strict=True):
        op = op_names[int(op_of[lo])]
        samples.span[op] = span_s[lo:hi]
        samples.own[op] = busy_s[lo:hi]
        samples.wait[op] = wait_s[lo:hi]
        samples.share[op] = share_s[lo:hi]
        samples.launches[op] = launch_count[lo:hi]
        samples.at[op] = call_index[lo:hi]
    return samples
