"""The per-kernel roofline of a program (no jax): display strings of the analysis's
:class:`~roofline_report.analysis.kernel_records.KernelTable` records: each kernel's row, where the
time goes by category, what the trace covered, loops stopped on data, fresh pages, the
program's levers, the kernels' flops reconciled with the program's count, and the figure of the
kernels on the roofline. Nothing is computed here but the text of numbers the analysis computed.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline_report.analysis.analyse import SEED_NAME
from roofline_report.analysis.call_accounting import CallAccounting
from roofline_report.analysis.fresh_pages import FRESH_ABOVE_BYTES
from roofline_report.analysis.kernel_records import KernelRow, KernelTable, TraceSummary
from roofline_report.analysis.kernels import (
    DEVICE_EVENT,
    DEVICE_SHARED,
    LESS_WAITS,
    SHARED,
    SHARED_CORES,
)
from roofline_report.analysis.records import Analysis, Program
from roofline_report.analysis.roofs import PAGE_FAULT, RoofSet
from roofline_report.hlo.kernel_reconciliation import KernelReconciliation
from roofline_report.kinds import Kind
from roofline_report.report import figures as figs
from roofline_report.report import meta
from roofline_report.report.accounting_words import accounting_text
from roofline_report.report.blocks import Inline
from roofline_report.report.format import (
    Num,
    count,
    miss_text,
    n,
    percent,
    percent_text,
    plural,
    ratio,
    signed_count,
)
from roofline_report.report.lever_words import LEVERS_SHOWN, lever_long, levers_lede, more_levers
from roofline_report.report.reconcile_words import rewrites_text
from roofline_report.report.roof_words import (
    above_words,
    hardware_rate,
    point_tooltip,
    prediction_cells,
    roof_share_num,
    roof_uses,
    roofs_words,
)
from roofline_report.units import format_intensity

__all__ = ["CategoryRow", "KernelRowView", "KernelView", "kernel_view", "kernel_views"]

P = Kind.PREDICTED
M = Kind.MEASURED
A = Kind.ANALYTIC
KERNEL_ROWS = 15  # kernels shown open per program; the rest in a fold
KERNEL_POINTS = 40  # kernels placed on a program's figure


def _source_text(r: KernelRow) -> str:
    """The user's line that built the kernel, and the library's line inside it when they
    differ (``model.py:46 (via flax/nnx/nn/linear.py:431)``); else the line JAX recorded;
    else the op's name."""
    if r.user_source and r.source and r.source != r.user_source:
        return f"{r.user_source} (via {r.source})"
    if not r.user_source and not r.source and r.op_name and "/" not in r.op_name:
        # JAX names an op that only moves an argument (a layout transpose of a parameter)
        # after the argument, not after a source line.
        return f"argument {r.op_name} (no source line)"
    return r.user_source or r.source or r.op_name or ""


@dataclass(frozen=True, slots=True)
class KernelRowView:
    """One kernel of a program's table."""

    name: str
    category: str
    kind: str
    source: str
    launches: Num
    time: Num
    share: Num
    flops: Num
    bytes: Num
    intensity: Num
    achieved: Num
    roof: Num
    of_roof: Num
    binding: str
    predicted: Num
    miss: Num
    why: str


def _kernel_row(r: KernelRow) -> KernelRowView:
    cells = prediction_cells(r.prediction)
    return KernelRowView(
        name=r.name, category=r.category, kind=r.fusion or "",
        source=_source_text(r),
        launches=count(r.launches, M) if r.launches is not None
        else count(r.trips, M if r.trips_observed else A),
        time=n(r.seconds, "s", M), share=percent(r.share, M),
        flops=Num("not counted", A.value) if r.uncosted and not r.flops
        else count(r.flops, A), bytes=n(r.bytes, "B", A),
        intensity=Num("—") if r.uncosted and not r.flops
        else Num(format_intensity(r.intensity) if r.intensity else "0", A.value),
        achieved=n(r.achieved, "FLOP/s", M) if r.achieved else Num("—"),
        roof=hardware_rate(r.placed_roof),
        of_roof=roof_share_num(r.share_of_hardware_roof, r.share_of_assumed_roof,
                               r.placed_roof),
        binding=cells.binding, predicted=cells.predicted,
        miss=miss_text(r.miss),
        why="; ".join(x for x in (_uncounted_words(r), ASYNCHRONOUS_WORDS if r.asynchronous
                                  else "", above_words(r.above_roof), r.why) if x),
    )


ASYNCHRONOUS_WORDS = ("asynchronous: its time is its transfer's issue and what of the transfer "
                      "the kernels between its start and its done did not hide, so no roof at "
                      "its intensity times it")


def _uncounted_words(r: KernelRow) -> str:
    """'work not counted: ...' for a kernel whose flops are not counted, how a call known by
    its name was counted, else ''."""
    words = [*(f"work not counted: {u}" for u in r.uncosted), *r.by_name]
    return "; ".join(words)


def _coverage(t: TraceSummary, roofs: RoofSet, accounting: CallAccounting | None = None
              ) -> tuple[str | Num, ...]:
    shared = (", each instant during which n kernels ran side by side counted 1/n to each "
              "(kernels that run at the same time split the machine, so each took longer than "
              "it would alone)")
    by_cores = (", shared with the kernels that ran beside it: kernels that together wanted no "
                "more threads than the machine's cores each counted the whole time, and past "
                "that the cores were split in proportion to the threads each keeps busy alone "
                "(its partitions, or every core for a library kernel)")
    if t.basis in (DEVICE_EVENT, DEVICE_SHARED):
        basis = ("each kernel's time is its event's duration on the device"
                 + (shared if t.basis == DEVICE_SHARED else "")
                 + ", the first quartile over the traced calls")
    else:
        basis = ("each kernel's time runs from its launch to its completion"
                 + (", less the time it sat queued behind other kernels (their events ran after "
                    "its own and ended before it completed)"
                    if t.basis in (LESS_WAITS, SHARED, SHARED_CORES) else "")
                 + (shared if t.basis == SHARED else "")
                 + (by_cores if t.basis == SHARED_CORES else "")
                 + ", the first quartile over the traced calls: on a CPU an asynchronous "
                 "kernel's event covers only its dispatch and part of its work, the rest runs on "
                 "worker threads until its end event, and a call can wait for a worker another "
                 "kernel holds (waiting only lengthens a call, so the low quartile of the calls "
                 "leaves most of it out)")
    parts: tuple[str | Num, ...] = (
        f"Traced over {plural(t.calls, 'call', 'calls')}; {basis}. Per call the program ran ",
        n(t.program_s, "s", M), ", at least one kernel ran during ", n(t.busy_s, "s", M),
        " (coverage ", percent(t.coverage, M), ")")
    if accounting is not None:
        parts += (".", *accounting_text(accounting))
    else:
        parts += (", and the kernels' times sum to ", n(t.kernel_sum_s, "s", M),
                  ". The rest: dispatch ", n(t.dispatch_s, "s", M), ", loop control ",
                  n(t.loop_control_s, "s", M), ", gaps between kernels ", n(t.gaps_s, "s", M),
                  ".")
    if t.side_by_side:
        parts += (" Kernels ran side by side: their times sum to ", ratio(t.overlap, M, 3),
                  "× the time at least one ran, so a kernel that shared the device with "
                  "another took longer than it would alone, and its miss against the "
                  "prediction (made for a kernel alone) includes that.")
    per = t.gap_per_launch
    if per is not None:
        launch = roofs.floor("launch")
        # Only a measured floor was measured; a preset's launch cost is an assumption.
        what = ("the launch ceiling measured on a chain of kernels"
                if launch is not None and launch.kind is Kind.MEASURED
                else f"the launch cost {roofs.label} assumes")
        parts += (" That is ", n(per, "s", M), " of gap per launch after the first",
                  *((f" ({what}: ", n(launch.seconds, "s", launch.kind), ")")
                    if launch is not None else ()),
                  ".")
    if t.overhead:
        cost = ("within the untraced calls' own range, so the trace's cost is not told apart "
                "from their spread" if t.overhead_within_spread else
                "faster than any untraced call: the calls' spread, not a saving of tracing"
                if t.overhead < 1 else
                "slower than any untraced call: the trace's own cost, which the kernel times "
                "above may include")
        parts += (f" The {plural(len(t.traced_calls), 'traced call', 'traced calls')} took ",
                  n(t.traced_call_s, "s", M), " at the median and as many untraced just "
                  "before them ", n(t.untraced_call_s, "s", M), " (", ratio(t.overhead, M, 3),
                  f"×): {cost}.")
    return parts


def _figure(p: Program, table: KernelTable) -> figs.FigureOut | None:
    top = table.rows[:KERNEL_POINTS]
    placed = [r for r in top if r.intensity and r.achieved and r.share]
    points = [figs.PlotPoint(
        label=r.name, intensity=r.intensity or 0.0, rate=r.achieved or 0.0,
        category=r.category, size=r.share or 0.0,
        tooltip=point_tooltip(r.name, r.seconds, r.share,
                              _source_text(r) if r.source else None,
                              r.share_of_hardware_roof, r.share_of_assumed_roof))
        for r in placed]
    # A figure for the user's programs and the seed: one per catalog workload would double
    # the time to re-render; their tables hold the same numbers.
    if not points or not (p.user or p.name == SEED_NAME):
        return None
    name = meta.figure_name("kernels", p.name)
    title = f"Kernels of {p.title} on the roofline"
    left = len(top) - len(placed)
    kernels = (f"the {plural(len(top), 'kernel', 'kernels')} with the most time"
               if len(top) < len(table.rows) else
               "the program's one kernel" if len(top) == 1 else f"all {len(top)} kernels")
    other = "the other one lacks" if left == 1 else f"the other {left} lack"
    which = (kernels[0].upper() + kernels[1:] if not left else
             f"Of {kernels}, the {len(placed)} with floating-point work and a measured time "
             f"({other} one or both: see the table)")
    desc = (f"{which}, placed at their intensity (flops over the bytes they touch) and "
            f"measured FLOP/s under {roofs_words(table.roofs)}; marker area grows with the "
            "time share, colour shows the category.")
    return figs.roofline(name, title, desc, [table.roofs], points,
                         uses=roof_uses([p], table.roofs))


@dataclass(frozen=True, slots=True)
class CategoryRow:
    """Where a program's kernel time goes: one category of kernels."""

    title: str
    kernels: Num
    time: Num
    share: Num
    flops: Num
    bytes: Num


@dataclass(frozen=True, slots=True)
class KernelView:
    """A program's per-kernel roofline: its kernels, levers and where the time goes."""

    title: str
    user: bool
    anchor: str
    summary: str
    faults: tuple[Inline, ...]
    loops: tuple[Inline, ...]
    coverage: tuple[str | Num, ...]
    unavailable: str
    rows: list[KernelRowView]
    rest: list[KernelRowView]
    more: str
    categories: list[CategoryRow]
    levers: list[tuple[Inline, ...]]
    levers_rest: list[tuple[Inline, ...]]
    levers_more: str
    levers_note: tuple[Inline, ...]
    reconciliation: tuple[Inline, ...]
    figure: str | None
    figure_out: figs.FigureOut | None


def kernel_view(p: Program) -> KernelView | None:
    table = p.kernels
    if table is None:
        return None
    t = table.trace
    figure = _figure(p, table)
    rows = [_kernel_row(r) for r in table.rows]
    rest = table.rows[KERNEL_ROWS:]
    summary = (f"{plural(table.count, 'kernel', 'kernels')}, "
               f"{plural(table.launches, 'launch', 'launches')} per call; predicted on "
               f"{roofs_words(table.roofs)}.")
    if not table.roofs.compute and not table.roofs.bandwidth:
        summary = (f"{plural(table.count, 'kernel', 'kernels')}, "
                   f"{plural(table.launches, 'launch', 'launches')} per call; not predicted: no "
                   "preset describes the machine that ran the trace and no ceilings measured "
                   "there were given, so the kernels show their achieved rates only.")
    elif table.roofs.kind is Kind.SPEC_SHEET:
        summary += (" No ceilings were measured on the machine that ran it, so the kernels are "
                    f"held to the spec sheet of the {table.roofs.label} (published figures, not "
                    "measured; a launch cost, where the preset has one, is assumed); their "
                    "predictions are as good as those figures.")
    elif table.roofs.kind is not Kind.MEASURED:
        summary += (" This run measured no ceilings of this machine, so the kernels are held "
                    "to the assumed budgets, without a launch cost; their predictions are as "
                    "hypothetical as the budgets (roofline_report.analyze(..., ceilings=True)"
                    " or a run of generate.py measures them).")
    return KernelView(
        title=p.title, user=p.user, anchor=meta.workload_anchor(p.name),
        summary=summary,
        faults=_faults(table),
        loops=_loops(table),
        coverage=_coverage(t, table.roofs, table.accounting) if t is not None else (),
        unavailable="" if t else f"Per-kernel times not available: {table.trace_reason}.",
        rows=rows[:KERNEL_ROWS], rest=rows[KERNEL_ROWS:],
        more=(f"{plural(len(rest), 'more kernel', 'more kernels')} take "
              f"{percent_text(table.share_after(KERNEL_ROWS))} of the summed kernel "
              "time.") if rest else "",
        categories=[CategoryRow(title=c.title, kernels=count(c.kernels, A),
                                time=n(c.seconds, "s", M), share=percent(c.share, M),
                                flops=count(c.flops, A), bytes=n(c.bytes, "B", A))
                    for c in table.categories],
        levers=[lever_long(x) for x in p.levers[:LEVERS_SHOWN]],
        levers_rest=[lever_long(x) for x in p.levers[LEVERS_SHOWN:]],
        levers_more=more_levers(p),
        levers_note=levers_lede(p) if p.levers else (),
        reconciliation=_kernel_reconciliation(table.reconciliation),
        figure=figure.name if figure is not None else None, figure_out=figure,
    )


def _loops(table: KernelTable) -> tuple[Inline, ...]:
    """The while loops whose trip count the compiler does not know: the trips the trace
    observed, priced for every trip, and the static count beside them; or, untraced, that the
    prediction counts such a loop once and is a lower bound."""
    parts: list[Inline] = []
    for x in table.loops:
        static = plural(x.static, "launch", "launches")
        if x.observed is not None:
            parts += [f" Loop {x.loop} stops on data (no static trip count): its "
                      f"{plural(x.kernels, 'kernel', 'kernels')} are counted and predicted at ",
                      count(x.observed, M), " launches per call, observed in the trace (the "
                      f"static count, {static} per call, is a lower bound)."]
        elif x.charged:
            parts += [f" Loop {x.loop} stops on data (no static trip count) and no trace "
                      f"observed its trips: its {plural(x.kernels, 'kernel', 'kernels')} are "
                      f"counted at the static count, {static} per call, so the work, bytes and "
                      "predicted time are lower bounds."]
            if x.implied is not None and x.per_trip_s:
                # Tracing is the way to count them only where no trace was read: a trace
                # that holds none of the loop's launches cannot.
                how = ("trace the program to count them" if table.trace is None
                       else "its trace holds none of the loop's launches")
                parts += [" At the ", n(x.per_trip_s, "s", P), " predicted for one trip, the "
                          "measured call would hold about ", count(int(x.implied + 0.5), P),
                          f" trips (a reading of the timing, not used by the prediction; "
                          f"{how})."]
    return tuple(parts)


def _faults(table: KernelTable) -> tuple[Inline, ...]:
    """What fresh pages cost the program each call, where its kernels are charged any."""
    fault = table.roofs.floor(PAGE_FAULT)
    if not table.fresh_pages or fault is None:
        return ()
    charged = ("its kernels' first writes fault on ", count(table.fresh_pages, P),
               " pages a call: ", n(table.fault_seconds, "s", P), " at the measured ",
               n(fault.seconds, "s", M), " a page, charged to the kernels that write first.")
    if table.counted_pages is not None:
        return ("While it was timed, the process took ", count(table.counted_pages, M),
                " page faults a call (counted: the C allocator served its buffers with new "
                "pages, as it does or not by what the process allocated and freed before), so ",
                *charged)
    if not table.temp_bytes:
        return ()
    return ("Its temporary buffers (", n(table.temp_bytes, "B", Kind.COMPILER_ESTIMATE),
            ") reach ", n(FRESH_ABOVE_BYTES, "B", Kind.HYPOTHETICAL),
            f" ({FRESH_ABOVE_BYTES >> 20} MiB, glibc's largest mmap threshold, assumed of the C "
            "allocator), past which it maps them afresh on every call, so ", *charged)


def kernel_views(an: Analysis) -> list[KernelView]:
    """The per-kernel view of every program that has one: the user's first."""
    views = [v for v in (kernel_view(p) for p in an.programs) if v is not None]
    return sorted(views, key=lambda v: not v.user)


def _kernel_reconciliation(reconciled: KernelReconciliation) -> tuple[Inline, ...]:
    """The kernels' flops against our program count, as inline parts (counts: analytic)."""
    flops = reconciled.flops
    if flops.program is None:
        return ("No program count to reconcile the kernel sum with.",)
    if flops.equal and reconciled.transcendentals.equal and not reconciled.rewrites:
        return ("The kernels' flops sum to ", count(flops.kernels, A),
                ", equal to our program count.")
    parts: list[Inline] = ["The kernels' flops sum to ", count(flops.kernels, A),
                           ", our program count is ", count(flops.program, A),
                           "; the compiler's rewrites: "]
    grouped = [(q, reconciled.quantity(q).rewrites) for q in ("flops", "transcendentals")]
    for i, (quantity, items) in enumerate([(q, x) for q, x in grouped if x]):
        parts += ["; "] if i else []
        parts += rewrites_text(items, quantity)
    parts.append(".")
    left = [(q, v) for q, v in reconciled.unexplained.items() if v]
    if left:
        parts.append(" Not explained by a rewrite: ")
        for i, (q, v) in enumerate(left):
            parts += [", " if i else "", f"{q} ", signed_count(v, A)]
        parts.append(".")
    return tuple(parts)
