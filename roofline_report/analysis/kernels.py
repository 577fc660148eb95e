"""The per-kernel view of a program (no jax): its kernel inventory (our count of each kernel's
work and the bytes it touches) with the times of its profiler trace, under one roof set.

* One :class:`~roofline_report.analysis.kernel_records.KernelRow` per kernel, longest first: time
  per call (the first quartile over the traced calls of its launch-to-completion time: see
  :func:`kernel_time`), its spread, its share of the summed kernel time (kernels can
  overlap, so shares are of that sum), its prediction
  (:func:`~roofline_report.analysis.predict.predict_kernel`) and its roof at its intensity
  (:func:`~roofline_report.analysis.headroom.kernel_roof`), whose share it reached is its
  headroom.
* Where the time goes, by category; launch-bound kernels (bound by the launch floor) apart.
* Every traced call's time accounted for on the table's basis
  (:mod:`~roofline_report.analysis.call_accounting`): the column's sum, what kernels took
  beyond it, overlap, dispatch, loop control and gaps; kernels that vary, stalls that move.
* The kernel sum reconciled with the program count (:func:`~roofline_report.hlo
  .kernel_reconciliation.reconcile_counts`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from roofline_report.analysis import explain, headroom, predict
from roofline_report.analysis.async_exposure import expose
from roofline_report.analysis.call_accounting import account_calls
from roofline_report.analysis.fresh_pages import counted_pages, fresh_pages, temp_bytes
from roofline_report.analysis.kernel_records import Category, KernelRow, KernelTable, TraceSummary
from roofline_report.analysis.loop_trips import loop_trips, observed_kernel, per_trip
from roofline_report.analysis.miss import miss
from roofline_report.analysis.roofs import PAGE_FAULT, RoofSet
from roofline_report.analysis.stats import median, own_time, quartiles
from roofline_report.hlo.kernel_cost import MOVEMENT
from roofline_report.hlo.kernel_reconciliation import Counts, reconcile_counts
from roofline_report.results import schema

__all__ = ["CATEGORY_TITLES", "kernel_samples", "kernel_seconds", "kernel_table", "time_samples",
           "trace_summary"]

# What a kernel's time is (TraceSummary.basis): a device's event, shared with the kernels that
# ran at the same time (DEVICE_SHARED) or whole (traces analysed before shares were kept); a host
# kernel's launch to its completion less its waits behind other kernels, shared with the kernels
# that ran at the same time by the cores each wants (SHARED_CORES) or evenly (SHARED,
# :func:`kernel_samples`), not shared (LESS_WAITS), or with neither taken off (traces analysed
# before either was kept).
DEVICE_EVENT = "device event"
DEVICE_SHARED = "device event, shared"
SHARED = "launch to completion less waiting, shared"
SHARED_CORES = "launch to completion less waiting, shared by the cores each kernel wants"
LESS_WAITS = "launch to completion less waiting"
LAUNCH_TO_COMPLETION = "launch to completion"

CATEGORY_TITLES = {
    "matmul": "matmul and convolution",
    "elementwise": "elementwise",
    "reduction": "reductions",
    "data movement": "data movement",
    "collective": "collectives",
    "other": "other",
    "launch-bound": "launch-bound (of any category)",
}


def trace_summary(timing: schema.KernelTiming) -> TraceSummary | None:
    """The medians of a ``kernel_timing`` record's traced calls; None when it has none."""
    calls = timing.calls
    if not calls:
        return None

    def med(part: Callable[[schema.TraceCall], float]) -> float:
        values = np.fromiter(map(part, calls), dtype=np.float64, count=len(calls))
        return _median(values) or 0.0

    kernels = timing.kernels
    at = [_calls_at(kernel) for kernel in kernels]
    per_call = _by_call(at, [kernel_samples(kernel) for kernel in kernels])
    launches = _by_call(at, [[float(n) for n in kernel.launches] for kernel in kernels])
    untraced = tuple(float(x) for x in timing.untraced_s)
    traced = tuple(float(x) for x in timing.traced_s)
    shared = bool(kernels) and all(kernel.share_s is not None for kernel in kernels)
    if timing.source == "device":
        # Shares said only where kernels overlapped: a TPU core runs its ops one after
        # another, each share its own duration.
        basis = DEVICE_SHARED if shared and any(_overlapped(kernel) for kernel in kernels) \
            else DEVICE_EVENT
    elif shared:
        basis = SHARED_CORES if timing.cores else SHARED
    elif kernels and all(kernel.wait_s is not None for kernel in kernels):
        basis = LESS_WAITS
    else:
        basis = LAUNCH_TO_COMPLETION
    return TraceSummary(
        calls=len(calls) * timing.calls_per_sample,
        source=timing.source,
        program_s=med(lambda call: call.program_s), busy_s=med(lambda call: call.busy_s),
        kernel_sum_s=_median(per_call) or 0.0,
        dispatch_s=med(lambda call: call.dispatch_s),
        loop_control_s=med(lambda call: call.loop_control_s),
        gaps_s=med(lambda call: call.gaps_s), launches=_median(launches) or 0.0,
        traced_calls=traced, untraced_calls=untraced, basis=basis,
        notes=tuple(timing.notes))


def _median(values: np.ndarray) -> float | None:
    """:func:`median` of an array, sorted by numpy first (sorting it again is then one pass)."""
    return median(np.sort(values).tolist())


def _by_call(at: list[list[int]], values: list[list[float]]) -> np.ndarray:
    """Per call that has any, the sum of the kernels' values in it (kernel ``j``'s value
    ``values[j][m]`` in call ``at[j][m]``; each kernel's pairs as far as both lists go),
    added kernel after kernel from 0.0 as one addition after another would."""
    calls = [np.asarray(a[:len(v)], dtype=np.int64) for a, v in zip(at, values, strict=True)]
    taken = [np.asarray(v[:len(a)], dtype=np.float64) for a, v in zip(at, values, strict=True)]
    where = np.concatenate(calls) if calls else np.zeros(0, dtype=np.int64)
    if not len(where):
        return np.zeros(0)
    # np.bincount adds each bin's weights in their order, from 0.0 (call indices are counts:
    # the schema's ``calls_at`` holds no negative one).
    summed = np.bincount(where, weights=np.concatenate(taken))
    return summed[np.bincount(where) > 0]


def _calls_at(kernel: schema.KernelTime) -> list[int]:
    """The call of each of a kernel's samples: its ``calls_at``, else one per call in order
    (records that do not say which calls a kernel missed)."""
    at = kernel.calls_at
    return list(at) if at is not None else list(range(len(kernel.span_s)))


def per_call_samples(kernel: schema.KernelTime, calls: int) -> np.ndarray:
    """A kernel's samples (:func:`kernel_samples`) placed at their calls, as many as there
    are calls: NaN in a call in which it did not run."""
    out = np.full(calls, np.nan)
    at = np.asarray(_calls_at(kernel), dtype=np.int64)
    samples = np.asarray(kernel_samples(kernel), dtype=np.float64)
    n = min(len(at), len(samples))
    at, samples = at[:n], samples[:n]
    inside = (at >= 0) & (at < calls)
    out[at[inside]] = samples[inside]
    return out


def kernel_samples(kernel: schema.KernelTime) -> list[float]:
    """A kernel's time samples: its share of the machine from each launch to its completion,
    less the time it spent queued behind other kernels (``share_s``; traces read before shares
    were kept: the span less ``wait_s``, else the plain span). On a CPU an asynchronous
    kernel's event covers its dispatch and part of its work; the rest runs on worker threads
    until its ``end:`` event, so its events' own durations (``busy_s``) leave work out, and the
    launch-to-completion time includes waiting for workers another kernel holds: a 16 µs
    select beside a convolution on two cores completes 750 µs after its launch in most calls.
    The wait is the time after its own event during which other kernels' events ran that
    ended before it completed (its remaining work queued behind theirs); it is the other
    kernels' cost. Independent kernels the runtime runs at the same time split the machine:
    two row reductions of a layer norm's backward pass, 83 µs each alone, each ran 165-205 µs
    beside the other. Over the time it ran, each instant counts the share of its speed alone
    the machine could give it: kernels that together want no more threads than the cores
    count it whole, past that the cores are split in proportion to the threads each keeps
    busy alone (without those, n kernels count 1/n each). Timed alone
    (benchmarks/kernels_alone.py), the median over kernels of |first quartile ÷ alone − 1| was
    0.10 to 0.45 over eight programs (median 0.235), against 0.10 to 0.49 (median 0.30) for
    the launch-to-completion less waiting alone. The first quartile of these samples is the
    kernel's time (:func:`kernel_time`)."""
    return time_samples(kernel.span_s, kernel.share_s, kernel.wait_s)


def time_samples(spans: Sequence[float], shares: Sequence[float] | None,
                 waits: Sequence[float] | None) -> list[float]:
    """:func:`kernel_samples` of a kernel's columns given apart (``span_s``, ``share_s`` and
    ``wait_s``; the last two None where not kept): the measuring side's records are plain
    until they are written."""
    if shares is not None and len(shares) == len(spans):
        return list(map(float, shares))
    whole = list(map(float, spans))
    if waits is None or len(waits) != len(whole):
        return whole
    return [max(0.0, span - float(wait)) for span, wait in zip(whole, waits, strict=True)]


def kernel_seconds(kernel: schema.KernelTime) -> float:
    """A kernel's time per call from its record in a trace: the first quartile of its
    samples (:func:`kernel_samples`, :func:`kernel_time`); 0 without samples."""
    samples = kernel_samples(kernel)
    return kernel_time(samples)[0] if samples else 0.0


def kernel_time(samples: list[float]) -> tuple[float, float, float]:
    """(time, Q1, Q3) of a kernel's samples (:func:`kernel_samples`): its time is
    :func:`~roofline_report.analysis.stats.own_time` of them, their first quartile
    (interpolated between samples; one sample: itself): waiting for a worker thread only
    lengthens a call, so the low quartile leaves most of it out."""
    ordered = np.sort(np.asarray(samples, dtype=np.float64)).tolist()  # sorted once, by numpy
    q1, _, q3 = quartiles(ordered)
    return own_time(ordered), q1, q3


def _busy(kernel: schema.KernelTime) -> list[float] | None:
    busy = kernel.busy_s
    return list(map(float, busy)) if busy is not None else None


def kernel_table(workload: schema.Workload, roofs: RoofSet, backend: str
                 ) -> KernelTable | None:
    """The per-kernel view of one workload (see the module docstring); None when it has no
    kernel inventory. Times are per call of the program."""
    inventory = workload.kernels
    if not isinstance(inventory, schema.KernelInventory):
        return None
    timing = workload.kernel_timing
    traced = timing if isinstance(timing, schema.KernelTiming) else None
    trace = trace_summary(traced) if traced is not None else None
    times = {kernel.name: kernel for kernel in traced.kernels} \
        if traced is not None and trace is not None else {}
    dtype = workload.dtype
    listed = inventory.kernels
    # Fresh pages cost only where the CPU's page fault was measured; the faults its timing
    # counted, where it counted enough, else the allocator's rule on its temporaries.
    faulting = backend == "cpu" and roofs.floor(PAGE_FAULT) is not None
    temp = temp_bytes(workload.memory) if faulting else None
    timed = workload.timing if isinstance(workload.timing, schema.Timing) else None
    counted = counted_pages(timed) if faulting else None
    pages = fresh_pages(listed, temp, counted=counted)
    # A loop that stops on data runs the launches per call its trace observed.
    observed, loops = loop_trips(listed, times)
    traffic = predict.program_traffic(inventory)
    footprint = predict.program_footprint(inventory)
    sized = [observed_kernel(kernel, observed.get(kernel.name)) for kernel in listed]
    rows = [_row(kernel, static, times.get(kernel.name), dtype, roofs, trace, fresh, traffic,
                 footprint)
            for (kernel, static), fresh in zip(sized, pages, strict=True)]
    # An asynchronous copy is charged what of its transfer the kernels beside it leave.
    exposed = expose([kernel for kernel, _ in sized], [r.prediction for r in rows])
    rows = [r if p is r.prediction else
            replace(r, prediction=p, miss=miss(p.seconds if p else None, r.seconds))
            for r, p in zip(rows, exposed, strict=True)]
    total = sum(r.seconds or 0.0 for r in rows)
    accounting = None
    if traced is not None and trace is not None:
        row_times = {r.name: r.seconds for r in rows if r.seconds is not None}
        calls = len(traced.calls)
        accounting = account_calls(
            traced.calls, row_times,
            {name: per_call_samples(times[name], calls) for name in row_times},
            traced.calls_per_sample)
    rows = [_with_share(r, total, roofs.highest_compute) for r in rows]
    rows.sort(key=lambda r: (-(r.seconds or 0.0), -r.flops, r.name))
    categories = _categories(rows, total)
    reason = "" if trace else timing.reason \
        if isinstance(timing, schema.Unavailable) else "the workload was not traced"
    launches = inventory.launches if not observed else \
        sum(r.trips for r in rows if r.charged)
    ours = workload.hlo_count
    return KernelTable(
        count=inventory.count, launches=launches, rows=tuple(rows),
        categories=categories,
        trace=trace, trace_reason=reason, roofs=roofs,
        reconciliation=reconcile_counts(
            _counts(inventory), _counts(ours) if isinstance(ours, schema.HloCount) else None),
        notes=tuple(inventory.notes),
        fresh_pages=sum(pages), temp_bytes=temp, counted_pages=counted,
        accounting=accounting,
        loops=per_trip(loops, listed, {r.name: r.prediction.seconds for r in rows
                                       if r.prediction is not None}))


def _counts(record: schema.KernelInventory | schema.HloCount) -> Counts:
    """What the kernel sum's reconciliation reads of the inventory's or our program count."""
    return Counts(int(record.flops), int(record.transcendentals),
                  {op: int(value) for op, value in record.flops_by_op.items()},
                  {op: int(value) for op, value in record.transcendentals_by_op.items()})


def _row(kernel: schema.KernelRecord, static_trips: int | None,
         timed: schema.KernelTime | None, dtype: str, roofs: RoofSet,
         trace: TraceSummary | None, fresh: float = 0.0,
         traffic: float | None = None, footprint: float | None = None) -> KernelRow:
    """A kernel's row: ``kernel`` with its trips observed in the trace where ``static_trips``
    (the count they replace) is given, and its record in the trace, ``timed``."""
    trips = kernel.trips
    observed = static_trips is not None
    prediction = predict.predict_kernel(kernel, dtype, roofs, fresh, traffic, footprint,
                                        trips_observed=observed)
    seconds = busy = None
    spread = None
    launches = None
    if timed is not None:
        samples = kernel_samples(timed)
        seconds, q1, q3 = kernel_time(samples)
        spread = (q1, q3)
        own = _busy(timed)
        busy = median(own) if own else None
        launches = median(list(map(float, timed.launches)))
    row = KernelRow(
        name=kernel.name, category=_category(kernel), fusion=kernel.kind,
        source=kernel.source, op_name=kernel.op_name, trips=trips, launches=launches,
        seconds=seconds, busy_seconds=busy, basis=trace.basis if trace else "",
        spread=spread, share=None,
        flops=float(kernel.flops) * trips,
        transcendentals=float(kernel.transcendentals) * trips,
        bytes=(float(kernel.bytes_read) + float(kernel.bytes_written)) * trips,
        prediction=prediction, miss=miss(prediction.seconds if prediction else None, seconds),
        pattern=kernel.pattern, charged=kernel.charged,
        user_source=kernel.user_source,
        uncosted=tuple(kernel.uncosted),
        by_name=tuple(kernel.counted_by_name),
        trips_observed=observed, static_trips=static_trips,
        hardware=headroom.kernel_roof(kernel, dtype, roofs, traffic),
        asynchronous=kernel.asynchronous)
    return row


MOVEMENT_PATTERNS = ("transpose", "broadcast-transpose", "block-transpose", "gather",
                     "scatter")


def _category(kernel: schema.KernelRecord) -> str:
    """A kernel's category: the inventory's, except that a transposing copy, a gather or a
    scatter that does nothing else is data movement whatever fusion it was compiled into (an
    elementwise loop fusion whose root is a copy moves data and computes nothing; a scatter's
    combiner is its own). A kernel of such a pattern that also computes (a loss reduced over
    gathered values, a transpose fused with arithmetic) keeps its category."""
    ops = set(kernel.ops) - {"fusion", "scatter"}
    if kernel.pattern in MOVEMENT_PATTERNS and ops <= MOVEMENT:
        return "data movement"
    return kernel.category


def _with_share(r: KernelRow, total: float, peak: float | None) -> KernelRow:
    from dataclasses import replace

    share = r.seconds / total if r.seconds is not None and total > 0 else None
    why = explain.kernel_reason(r, peak) if r.prediction is not None and r.seconds else ""
    return replace(r, share=share, why=why)


def _category_key(r: KernelRow) -> str:
    if r.prediction is not None and r.prediction.binding.group == "overhead":
        return "launch-bound"
    return r.category


def _categories(rows: Sequence[KernelRow], total: float) -> tuple[Category, ...]:
    """Each category's kernels, time (None where none of them has one: a TPU's scalar
    instructions run no op event), share, work and bytes."""
    sums: dict[str, list[float]] = {}
    timed: set[str] = set()
    for r in rows:
        key = _category_key(r)
        entry = sums.setdefault(key, [0, 0.0, 0.0, 0.0])
        entry[0] += 1
        if r.seconds is not None:
            entry[1] += r.seconds
            timed.add(key)
        entry[2] += r.flops
        entry[3] += r.bytes
    out = [Category(key, CATEGORY_TITLES.get(key, key), int(v[0]),
                    v[1] if key in timed else None,
                    (v[1] / total if total > 0 else 0.0) if key in timed else None, v[2], v[3])
           for key, v in sums.items()]
    return tuple(sorted(out, key=lambda c: (-(c.seconds or 0.0), c.key)))


def _overlapped(kernel: schema.KernelTime) -> bool:
    """Whether a timed kernel's share of the device differs from its own duration in some
    call (another kernel ran beside it); per-call columns of the same length, else False."""
    share, busy = kernel.share_s, kernel.busy_s
    if share is None or busy is None or len(share) != len(busy):
        return False
    return any(abs(float(a) - float(b)) > 1e-12 * max(1.0, abs(float(b)))
               for a, b in zip(share, busy, strict=True))
