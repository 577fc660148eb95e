"""The views of programs and their kernels (no jax): display strings of the analysis's
:class:`~roofline_report.analysis.records.Program` and
:class:`~roofline_report.analysis.records.KernelTable` records. Nothing is computed here but the
text of numbers the analysis computed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roofline_report.analysis.analyse import SEED_NAME
from roofline_report.analysis.call_accounting import CallAccounting
from roofline_report.analysis.fresh_pages import FRESH_ABOVE_BYTES
from roofline_report.analysis.kernels import (
    DEVICE_EVENT,
    DEVICE_SHARED,
    LESS_WAITS,
    SHARED,
    SHARED_CORES,
)
from roofline_report.analysis.predict import Prediction
from roofline_report.analysis.records import (
    SIGNIFICANT_KERNEL_S,
    Analysis,
    HardwareRoof,
    KernelRow,
    KernelTable,
    Program,
    TraceSummary,
)
from roofline_report.analysis.roofs import PAGE_FAULT, RoofSet
from roofline_report.kinds import Kind
from roofline_report.report import figures as figs
from roofline_report.report import meta
from roofline_report.report.accounting_words import accounting_text
from roofline_report.report.blocks import Inline
from roofline_report.report.format import (
    Num,
    count,
    decimal,
    miss_text,
    n,
    percent,
    percent_text,
    plural,
    rate,
    ratio,
    signed_count,
)
from roofline_report.report.lever_words import (
    LEVERS_SHOWN,
    lever_kind,
    lever_long,
    lever_short,
    levers_lede,
    more_levers,
    what_first,
)
from roofline_report.report.reconcile_words import rewrites_text
from roofline_report.units import format_intensity, format_si

__all__ = ["accuracy", "kernel_views", "placements", "program_view", "programs_figure"]

P = Kind.PREDICTED
M = Kind.MEASURED
A = Kind.ANALYTIC
KERNEL_ROWS = 15  # kernels shown open per program; the rest in a fold
KERNEL_POINTS = 40  # kernels placed on a program's figure


def roofs_words(roofs: RoofSet) -> str:
    """'this machine's measured roofs', 'the assumed budgets (hypothetical)', a chip's spec
    sheet, or 'no roof' for a profile whose machine no preset describes."""
    if roofs.kind is Kind.MEASURED:
        return "this machine's measured roofs"
    if not roofs.compute and not roofs.bandwidth:
        return "no roof (the machine that ran the trace matches no preset)"
    return f"{roofs.label} ({roofs.kind.label})"


@dataclass(frozen=True, slots=True)
class PredictionCells:
    """The cells every prediction shows: time, roof rate, binding, roofs used."""

    predicted: Num
    roof: Num
    binding: str
    roofs: str


def prediction_cells(p: Prediction | None) -> PredictionCells:
    """The cells every prediction shows: time, roof rate, binding, roofs used."""
    if p is None:
        return PredictionCells(Num("no roof", P.value), Num("no roof", P.value), "unknown", "")
    kinds = ", ".join(k.label for k in p.roof_kinds)
    predicted = n(p.seconds, "s", P)
    if p.lower_bound:  # a loop of unknown trip count counted once
        predicted = Num(f"at least {predicted.text}", predicted.kind)
    return PredictionCells(predicted, rate(p.roof_rate, P), p.binding.label,
                           f"{'; '.join(p.roofs)} ({kinds})")


# --- kernels ---------------------------------------------------------------------------------

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
        roof=hardware_rate(r.hardware if not r.uncosted else None),
        of_roof=roof_share_num(r.share_of_hardware_roof, r.share_of_assumed_roof,
                               r.hardware),
        binding=cells.binding, predicted=cells.predicted,
        miss=miss_text(r.miss),
        why="; ".join(x for x in (_uncounted_words(r), above_words(r.above_roof), r.why)
                      if x),
    )


def hardware_rate(h: HardwareRoof | None) -> Num:
    """The roof at its intensity: its rate with the roofs' kind, and the roof that binds it
    (the largest part of the binding group, the others counted)."""
    if h is None or h.rate is None or not h.binding_parts:
        return Num("—")
    value = n(h.rate[0], h.rate[1], h.kind)
    first, *rest = h.binding_parts
    more = f" and {len(rest)} more" if rest else ""
    return Num(f"{value.text} ({first.name}{more})", value.kind)


def roof_share_num(hardware: float | None, assumed: float | None, h: HardwareRoof | None
                   ) -> Num:
    """The share of the roof at its intensity, of the roofs' kind: the hardware's (headroom),
    or an assumed roof's, said so (no headroom)."""
    if hardware is not None and h is not None:
        return percent(hardware, h.kind)
    if assumed is not None:
        return Num(f"{percent_text(assumed)} of an assumed roof", Kind.HYPOTHETICAL.value)
    return Num("—")


def above_words(names: str | None) -> str:
    """'above its roof (L3 read-write): ...' for a row over 100% of its roof, else ''."""
    if names is None:
        return ""
    return (f"above its roof at its intensity ({names}): that roof is lower than what ran, "
            "or its time is short of its work")


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
        tooltip=_tooltip(r.name, r.seconds, r.share, _source_text(r) if r.source else None,
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


def _tooltip(name: str, seconds: float | None, share: float | None, source: str | None,
             of_roof: float | None, of_assumed: float | None = None) -> str:
    parts = [name, format_si(seconds, "s") + " per call"]
    if share is not None:
        parts.append(percent_text(share) + " of the time")
    if of_roof is not None:
        parts.append(percent_text(of_roof) + " of its roof at its intensity")
    elif of_assumed is not None:
        parts.append(percent_text(of_assumed) + " of an assumed roof at its intensity")
    if source:
        parts.append(source)
    return "; ".join(parts)


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
    if not table.fresh_pages or fault is None or not table.temp_bytes:
        return ()
    return ("Its temporary buffers (", n(table.temp_bytes, "B", Kind.COMPILER_ESTIMATE),
            ") reach ", n(FRESH_ABOVE_BYTES, "B", Kind.HYPOTHETICAL),
            f" ({FRESH_ABOVE_BYTES >> 20} MiB, glibc's largest mmap threshold, assumed of the C "
            "allocator), past which "
            "it maps them afresh on every call, so its kernels' first writes fault on ",
            count(table.fresh_pages, P), " pages a call: ",
            n(table.fresh_pages * fault.seconds, "s", P), " at the measured ",
            n(fault.seconds, "s", M), " a page, charged to the kernels that write first.")


def kernel_views(an: Analysis) -> list[KernelView]:
    """The per-kernel view of every program that has one: the user's first."""
    views = [v for v in (kernel_view(p) for p in an.programs) if v is not None]
    return sorted(views, key=lambda v: not v.user)


def _kernel_reconciliation(r: Mapping[str, Any]) -> tuple[Inline, ...]:
    """The kernels' flops against our program count, as inline parts (counts: analytic)."""
    flops = r["flops"]
    if flops["program"] is None:
        return ("No program count to reconcile the kernel sum with.",)
    if flops["equal"] and r["transcendentals"]["equal"] and not r["rewrites"]:
        return ("The kernels' flops sum to ", count(flops["kernels"], A),
                ", equal to our program count.")
    parts: list[Inline] = ["The kernels' flops sum to ", count(flops["kernels"], A),
                           ", our program count is ", count(flops["program"], A),
                           "; the compiler's rewrites: "]
    grouped = [(q, r[q].get("rewrites") or []) for q in ("flops", "transcendentals")]
    for i, (quantity, items) in enumerate([(q, x) for q, x in grouped if x]):
        parts += ["; "] if i else []
        parts += rewrites_text(items, quantity)
    parts.append(".")
    left = [(q, v) for q, v in r["unexplained"].items() if v]
    if left:
        parts.append(" Not explained by a rewrite: ")
        for i, (q, v) in enumerate(left):
            parts += [", " if i else "", f"{q} ", signed_count(v, A)]
        parts.append(".")
    return tuple(parts)


# --- programs on the roofline ----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class PlacementRow:
    """A timed program on the roofline it is predicted on."""

    title: str
    anchor: str
    intensity: Num
    achieved: Num
    roof: Num
    of_roof: Num
    binding: str
    roofs: str
    predicted: Num
    measured: Num
    miss: Num
    lever: tuple[Inline, ...]
    why: str


def placements(an: Analysis) -> list[PlacementRow]:
    """Every timed program on the roofline it is predicted on (this machine's, where
    measured): compiled-program intensity, achieved rate, the prediction's roof, share."""
    rows = []
    for p in an.programs:
        if p.seconds is None or p.intensity is None:
            continue
        cells = prediction_cells(p.prediction)
        rows.append(PlacementRow(
            title=p.title, anchor=meta.workload_anchor(p.name),
            intensity=Num(format_intensity(p.intensity), A.value),
            achieved=n(p.achieved, "FLOP/s", M), roof=hardware_rate(p.hardware),
            of_roof=roof_share_num(p.share_of_hardware_roof, p.share_of_assumed_roof,
                                   p.hardware), binding=cells.binding,
            roofs=cells.roofs, predicted=cells.predicted,
            measured=n(p.seconds, "s", M), miss=miss_text(p.miss),
            lever=lever_short(p.levers[0]) if p.levers else ("none",),
            why="; ".join(x for x in (above_words(p.above_roof), p.why) if x) or (
                "" if p.prediction is not None else
                "no prediction: no roof" if not (an.roofs.kernels.compute
                                                 or an.roofs.kernels.bandwidth)
                else "no prediction: the program's work was not counted"),
        ))
    return rows


def accuracy(an: Analysis) -> tuple[str | Num, ...]:
    """One sentence on how well the model predicted this run."""
    acc = an.accuracy
    if not acc.errors:
        return ()
    parts: list[str | Num] = [
        f"Over {plural(len(acc.errors), 'prediction', 'predictions')} of this run (programs "
        "and sweep points), the median error |predicted − measured| ÷ measured is ",
        percent(acc.median, P), " and the 90th percentile ", percent(acc.p90, P)]
    if acc.kernel_errors:
        parts += [f"; over {plural(len(acc.kernel_errors), 'kernel', 'kernels')} of at least "
                  f"{format_si(SIGNIFICANT_KERNEL_S, 's')}, the median error is ",
                  percent(acc.kernel_median, P)]
    return (*parts, ".")


def programs_figure(an: Analysis) -> figs.FigureOut | None:
    """Every timed program on the roofline it is predicted on, with the assumed budgets and
    the spec sheet beside it: measured points and predicted points."""
    roofs = an.roofs
    main = roofs.kernels
    sets = [main] + ([roofs.hypothetical] if roofs.measured is not None else [])
    if roofs.spec_sheet is not None and roofs.spec_sheet.complete and roofs.spec_sheet != main:
        sets.append(roofs.spec_sheet)
    points: list[figs.PlotPoint] = []
    for p in an.programs:
        x, achieved = p.intensity, p.achieved
        if x is None or achieved is None:
            continue
        category = "yours" if p.user else "catalog"
        points.append(figs.PlotPoint(
            label=p.title, intensity=x, rate=achieved, category=category, size=0.0,
            tooltip=_tooltip(p.title, p.seconds, None, None, p.share_of_hardware_roof,
                             p.share_of_assumed_roof)))
        roof = p.roof
        if roof is not None and roof[1] == "FLOP/s":
            points.append(figs.PlotPoint(
                label=f"{p.title} (predicted)", intensity=x, rate=roof[0], category="predicted",
                size=0.0, tooltip=f"{p.title}: predicted {format_si(p.prediction.seconds, 's')}"
                if p.prediction else p.title, predicted=True))
    if not points:
        return None
    uses = roof_uses([p for p in an.programs if p.intensity is not None
                      and p.achieved is not None], main)
    measured = roofs.measured is not None
    name = "measured_roofline" if measured else "programs_roofline"
    if measured:
        title = "Measured roofline of this machine, with every program placed"
    elif main.kind is Kind.SPEC_SHEET and main.compute:
        title = f"The programs on the spec sheet of the {main.label}"
    elif main.kind is Kind.SPEC_SHEET:
        title = "The programs' achieved rates (no roof: no preset describes their machine)"
    else:
        title = "The programs on the assumed budgets"
    placed = sum(1 for q in points if not q.predicted)
    their = "its" if placed == 1 else "their"
    desc = (f"{plural(placed, 'program is', 'programs are')} placed at {their} compiled-program "
            f"intensity (the flops {their} kernels count over the bytes {their} kernels touch) "
            "and measured FLOP/s; an open marker is each one's predicted rate at the same "
            f"intensity. Roofs{_roofs_said(main, uses)}"
            + ("; the assumed budgets dashed" if measured else "")
            + ("; the spec sheet dotted" if len(sets) > (2 if measured else 1) else "") + ".")
    return figs.roofline(name, title, desc, sets, points, uses=uses)


def roof_uses(programs: Sequence[Program], roofs: RoofSet) -> list[tuple[str | None, str]]:
    """The (dtype, operation) pairs whose compute roofs a figure of ``programs`` draws: each
    program's dtype's matrix products, and the compute roofs of ``roofs`` its hardware roof
    prices work at (a convolution's, an integer product's); sorted, once each."""
    by_name = {r.name: r for r in roofs.compute}
    uses: set[tuple[str | None, str]] = set()
    for p in programs:
        if p.dtype:
            uses.add((p.dtype, "matmul"))
        parts = p.hardware.parts if p.hardware is not None else ()
        for x in parts:
            roof = by_name.get(x.name)
            if x.group == "compute" and roof is not None:
                uses.add((roof.dtype, roof.op))
    return sorted(uses, key=lambda u: (u[1], u[0] or ""))


def _roofs_said(s: RoofSet, uses: figs.Uses | None) -> str:
    """': none' where the figure draws no roof of ``s``, else the roofs it draws, each family
    in its colour."""
    listed = _roof_list(s, uses)
    return f": {listed}" if listed.startswith("none") else \
        f", each family in its own colour: {listed}"


def _roof_list(s: RoofSet, uses: figs.Uses | None = None) -> str:
    """The roofs the figure draws of ``s`` (:func:`~roofline_report.report.figures.drawn_roofs`),
    how many more the table beside it lists and how many compute roofs it leaves out."""
    computes, slopes = figs.drawn_roofs(s, uses=uses)
    compute = ", ".join(f"{r.name} {format_si(r.value, 'FLOP/s')}" for r in computes)
    memory = ", ".join(f"{r.level} ({r.name}) {format_si(r.value, 'B/s')}" for r in slopes)
    rest = len(s.bandwidth) - len(slopes)
    more = (f" ({plural(rest, 'more roof', 'more roofs')} in the table beside the figure)"
            if rest else "")
    left = len(s.compute) - len(computes)
    if left:
        more += (f"; {plural(left, 'compute roof', 'compute roofs')} of other dtypes or "
                 "operations than these programs run not drawn (the ceilings list them)")
    drawn = "; ".join(part for part in (compute, memory) if part)
    return f"{drawn}{more}" if drawn else f"none{more}"


# --- the summary: every program, and what could save the most time ----------------------------

SAVERS = 3  # levers named per program in the summary's table

#: How each option of a user's jit that a program was timed without is named on the page.
_JIT_OPTION_WORDS = {
    "jit_options": "its jit's options (this jax does not expose them)",
    "in_layouts": "its jit's in_layouts", "out_layouts": "its jit's out_layouts",
    "device": "its jit's device=", "backend": "its jit's backend=",
    "in_shardings": "its jit's in_shardings", "out_shardings": "its jit's out_shardings",
}


def timed_without(p: Program) -> str:
    """'timed without its jit's in_shardings and out_shardings', or '' when the program was
    timed as written."""
    if not p.timed_without:
        return ""
    names = [_JIT_OPTION_WORDS.get(x, f"its jit's {x}") for x in p.timed_without]
    if len(names) > 1 and all(x.startswith("its jit's ") for x in names):
        names = [names[0], *(x.removeprefix("its jit's ") for x in names[1:])]
    joined = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"timed without {joined}"


@dataclass(frozen=True, slots=True)
class SummaryLever:
    """A lever in a few words, and the kind of its saving."""

    words: tuple[Inline, ...]
    kind: str


@dataclass(frozen=True, slots=True)
class SummaryRow:
    """One of the user's programs in the summary's table."""

    title: str
    anchor: str
    target: str
    measured: Num
    predicted: Num
    lower_bound: bool
    achieved: Num
    of_roof: Num
    binding: str
    miss: Num
    levers: list[SummaryLever]
    timed_without: str


@dataclass(frozen=True, slots=True)
class SummaryView:
    """The summary: what to fix first in each program, and every program's numbers."""

    rows: list[SummaryRow]
    first: list[tuple[Inline, ...]]
    roofs: str
    assumed: bool


def summary(an: Analysis) -> SummaryView:
    """The first table of a report about programs: per program what to fix first (its
    biggest lever in words, then the next), its measured and predicted time and the miss
    between them, its achieved rate and share of the hardware roof at its intensity, what
    binds it, and its largest levers with the time each could save."""
    rows: list[SummaryRow] = []
    first: list[tuple[Inline, ...]] = []
    for p in an.programs:
        if not p.user:
            continue
        cells = prediction_cells(p.prediction)
        anchor = meta.workload_anchor(p.name)
        target = anchor + ("-kernels" if p.kernels is not None else
                           "-program" if not p.observation.get("trace") else "-summary")
        levers = [SummaryLever(lever_short(x), lever_kind(x).value) for x in p.levers[:SAVERS]]
        first.append(what_first(p))
        rows.append(SummaryRow(
            title=p.title, anchor=anchor, target=target,
            measured=n(p.seconds, "s", M) if p.seconds else Num(p.timing_reason or
                                                                "not measured"),
            predicted=cells.predicted,
            lower_bound=p.prediction is not None and p.prediction.lower_bound,
            achieved=n(p.achieved, "FLOP/s", M) if p.achieved is not None else Num("—"),
            of_roof=roof_share_num(p.share_of_hardware_roof, p.share_of_assumed_roof,
                                   p.hardware),
            binding=cells.binding,
            miss=miss_text(p.miss), levers=levers,
            timed_without=timed_without(p),
        ))
    roofs = an.roofs.kernels
    return SummaryView(rows=rows, first=first, roofs=roofs_words(roofs),
                       assumed=roofs.kind is Kind.HYPOTHETICAL)


# --- a user's program ------------------------------------------------------------------------

NO_MODEL = "no analytic model"
#: Leaves an argument may have before its tree is folded to its top levels.
FOLD_AFTER = 8
#: Rows of a folded tree's top levels at most (the rest are summed in one row).
MAX_GROUPS = 24
_PATH_PART = re.compile(r"\[[^\]]*\]|\.[^.\[]+")


def tree_summary(tree: Mapping[str, Any], *, result: bool = False) -> str:
    """The traced arguments' count, arrays and bytes; with ``result``, the result's after them
    (a tree's own counts cover its arguments only)."""
    nodes = [a for a in tree.get("arguments", []) if not a.get("static")]
    out = (f"{plural(len(nodes), 'argument', 'arguments')}, "
           f"{plural(tree.get('leaf_count', 0), 'array', 'arrays')}, "
           f"{format_si(tree.get('bytes', 0), 'B')}")
    r = tree.get("result") if result else None
    if r:
        out += (f"; the result {plural(r.get('leaf_count', 0), 'array', 'arrays')}, "
                f"{format_si(r.get('bytes', 0), 'B')}")
    return out


def _path_parts(path: str) -> list[str]:
    return _PATH_PART.findall(path) or ([path] if path else [])


@dataclass(frozen=True, slots=True)
class GroupRow:
    """One top level of a folded argument tree."""

    path: str
    leaves: str
    bytes: Num
    dtypes: str


@dataclass(frozen=True, slots=True)
class LeafRow:
    """One array of an argument tree."""

    path: str
    shape: str
    dtype: str
    bytes: Num


def _groups(leaves: Sequence[Mapping[str, Any]]) -> list[GroupRow]:
    """The top levels of a tree: the shallowest depth (1 to 3) with at least 3 groups, each
    with its leaf count, bytes and dtypes."""
    chosen: dict[str, list[Mapping[str, Any]]] = {}
    for depth in (1, 2, 3):
        groups: dict[str, list[Mapping[str, Any]]] = {}
        for leaf in leaves:
            parts = _path_parts(str(leaf["path"]))
            groups.setdefault("".join(parts[:depth]) or "(the argument itself)", []).append(leaf)
        chosen = groups
        if len(groups) >= 3:
            break
    items = sorted(chosen.items(), key=lambda kv: -sum(int(x["bytes"]) for x in kv[1]))
    rows = [_group_row(prefix, members) for prefix, members in items[:MAX_GROUPS]]
    rest = [x for _, members in items[MAX_GROUPS:] for x in members]
    if rest:
        rows.append(_group_row(f"{len(items) - MAX_GROUPS} more", rest))
    return rows


def _group_row(prefix: str, members: Sequence[Mapping[str, Any]]) -> GroupRow:
    return GroupRow(path=prefix, leaves=str(len(members)),
                    bytes=n(sum(int(x["bytes"]) for x in members), "B", A),
                    dtypes=", ".join(sorted({str(x["dtype"]) for x in members})))


def _leaf_row(leaf: Mapping[str, Any]) -> LeafRow:
    return LeafRow(path=str(leaf["path"]) or "(the argument itself)",
                   shape=str(list(leaf["shape"])), dtype=str(leaf["dtype"]),
                   bytes=n(leaf["bytes"], "B", A))


def _bare(leaves: Sequence[Mapping[str, Any]]) -> bool:
    """An argument that is one array (no tree to show)."""
    return len(leaves) == 1 and not leaves[0].get("path")


def _type_name(name: str, leaves: int) -> str:
    return "array" if name in ("ArrayImpl", "ndarray", "ShapeDtypeStruct") and leaves == 1 \
        else name


@dataclass(frozen=True, slots=True)
class ArgumentView:
    """One argument (or the result) of a program, as a tree of arrays."""

    name: str
    role: str
    type: str
    bare: bool
    value: str
    leaves: str
    bytes: Num
    held: str
    omitted: str
    folded: bool
    groups: list[GroupRow]
    rows: list[LeafRow]


def _argument_view(node: Mapping[str, Any]) -> ArgumentView:
    leaves = list(node.get("leaves", []))
    count_ = int(node.get("leaf_count", 0))
    role = "static" if node.get("static") else "keyword" if node.get("keyword") else ""
    if node.get("donated"):
        role = ", ".join(x for x in (role, "donated by your jit, and by every timed call")
                         if x)
    return ArgumentView(
        name=str(node["name"]), role=role,
        type=(f"{leaves[0]['dtype']}{list(leaves[0]['shape'])}" if _bare(leaves)
              else _type_name(str(node.get("type", "")), count_)),
        bare=_bare(leaves), value=str(node.get("value", "")), leaves=str(count_),
        bytes=n(node.get("bytes", 0), "B", A), held=str(node.get("held_leaves", 0)),
        omitted=str(node.get("omitted", 0)), folded=count_ > FOLD_AFTER,
        groups=_groups(leaves) if count_ > FOLD_AFTER else [],
        rows=[_leaf_row(x) for x in leaves],
    )


def traffic_num(p: Program) -> Num:
    """The least traffic shown for a program, labelled with its basis."""
    if p.minimum_bytes is None:
        return Num(NO_MODEL)
    if p.minimum_basis == "analytic minimum traffic":
        return n(p.minimum_bytes, "B", A)
    return Num(f"{format_si(p.minimum_bytes, 'B')} ({p.minimum_basis})", A.value)


def has_model(p: Program) -> bool:
    an = p.observation.get("analytic")
    return isinstance(an, Mapping) and "flops" in an


@dataclass(frozen=True, slots=True)
class TimingView:
    """A program's timing samples, summarised."""

    median: Num
    min: Num
    q1: Num
    q3: Num
    iqr: Num
    samples: str
    outliers: str
    inner: str
    unstable: bool
    spread: str
    method: str


def timing_rows(p: Program) -> TimingView | None:
    s = p.timing
    if s is None:
        return None
    t = p.observation.get("timing") or {}
    return TimingView(
        median=n(s.median, "s", M), min=n(s.min, "s", M), q1=n(s.q1, "s", M),
        q3=n(s.q3, "s", M), iqr=n(s.iqr, "s", M), samples=str(s.n),
        outliers=str(s.outliers), inner=str(t.get("inner_reps", 1)),
        unstable=s.unstable, spread=percent_text(s.spread),
        method=str(t.get("method", "")),
    )


def tolerance(check: Mapping[str, Any]) -> str:
    return (f"rtol = {decimal(float(check.get('rtol', 0)), 3)}, "
            f"atol = {decimal(float(check.get('atol', 0)), 3)}")


def program_sentence(c: Mapping[str, Any]) -> str:
    """One sentence on the optimized program: kernels, fusions, custom calls, loops."""
    if not c:
        return ""
    parts = [plural(c.get("kernels"), "kernel launch", "kernel launches")]
    fusions = (c.get("fusions") or {}).get("count")
    if fusions:
        parts.append(plural(fusions, "fusion", "fusions"))
    calls = sorted({str(x.get("target", "")) for x in c.get("custom_calls", [])})
    if calls:
        parts.append("custom calls " + ", ".join(calls))
    loops = [x.get("known_trip_count") for x in c.get("while_loops", [])]
    if loops:
        parts.append("loops with trip counts " + ", ".join(str(t) for t in loops))
    colls = c.get("collectives", [])
    if colls:
        parts.append(plural(len(colls), "collective", "collectives"))
    return "The optimized program: " + "; ".join(parts) + "."


MODEL_NOTES = 4  # notes of the model named on a program's paragraph; the rest counted


def model_notes(notes: Sequence[str]) -> str:
    """What the model says of how it priced a program (a rate it lacked, work it charged
    beyond the count, a kernel on fewer threads than its rates), the first
    :data:`MODEL_NOTES` in the order the kernels gave them, the others counted; "" for none."""
    shown = "; ".join(notes[:MODEL_NOTES])
    left = len(notes) - MODEL_NOTES
    return shown + (f"; and {plural(left, 'more note', 'more notes')}" if left > 0 else "")


@dataclass(frozen=True, slots=True)
class ProgramPrediction:
    """The model's prediction for a program, beside its measured time."""

    predicted: Num
    miss: Num
    binding: str
    bytes_source: str
    roofs: str
    why: str
    notes: str


@dataclass(frozen=True, slots=True)
class ProgramView:
    """One of the user's programs as the subject of the report."""

    title: str
    description: str
    anchor: str
    has_tree: bool
    arguments: list[ArgumentView]
    result: ArgumentView | None
    summary: str
    args: str
    lowering_available: bool
    lowering_reason: str
    lower_s: Num
    compile_s: Num
    program: str
    model: str
    flops_analytic: Num
    flops_ours: Num
    flops_xla: Num
    traffic: Num
    xla_bytes: Num
    bytes_ours: Num
    check_available: bool
    check_reason: str
    check_passed: bool
    check_max_abs: Num
    check_max_rel: Num
    check_tolerance: str
    check_note: str
    check_leaf: str
    check_leaves: str
    timing: TimingView | None
    timing_reason: str
    timed_without: str
    prediction: ProgramPrediction | None


def program_view(p: Program) -> ProgramView:
    """One of the user's programs as the subject of the report."""
    w = p.observation
    tree = w.get("arguments") or {}
    low = w.get("lowering") or {}
    check = w.get("check") or {}
    ours = w.get("hlo_count") or {}
    xla = (w.get("xla") or {}).get("values") or {}
    an = w.get("analytic") or {}
    cells = prediction_cells(p.prediction)
    return ProgramView(
        title=p.title, description=str(w.get("description", "")),
        anchor=meta.workload_anchor(p.name) + "-program",
        has_tree=bool(tree),
        arguments=[_argument_view(a) for a in tree.get("arguments", [])],
        result=_argument_view(tree["result"]) if tree.get("result") else None,
        summary=tree_summary(tree, result=True) if tree else "",
        args=", ".join(f"{a['dtype']}{a['shape']}" for a in w.get("args", [])),
        lowering_available=bool(low.get("available")),
        lowering_reason=str(low.get("reason", "")),
        lower_s=n(low.get("lower_s"), "s", M), compile_s=n(low.get("compile_s"), "s", M),
        program=program_sentence(w.get("compiled") or {}),
        model="" if has_model(p) else NO_MODEL,
        flops_analytic=count(an.get("flops"), A),
        flops_ours=count(ours.get("flops") if ours.get("available", True) else None, A),
        flops_xla=count(xla.get("flops"), Kind.COMPILER_ESTIMATE),
        traffic=traffic_num(p),
        xla_bytes=n(xla.get("bytes accessed"), "B", Kind.COMPILER_ESTIMATE),
        bytes_ours=n(ours.get("minimum_bytes") if ours.get("available", True) else None,
                     "B", A),
        check_available=check.get("available", True) and "passed" in check,
        check_reason=str(check.get("reason", "")),
        check_passed=bool(check.get("passed")),
        check_max_abs=ratio(check.get("max_abs_error"), M, 3),
        check_max_rel=ratio(check.get("max_rel_error"), M, 3),
        check_tolerance=tolerance(check) if check else "",
        check_note=str(check.get("note") or ""),
        check_leaf=str(check.get("leaf") or ""),
        check_leaves=str(check.get("leaves") or ""),
        timing=timing_rows(p), timing_reason=p.timing_reason or "not measured",
        timed_without=timed_without(p),
        prediction=None if p.prediction is None or p.miss is None else ProgramPrediction(
            predicted=cells.predicted, miss=miss_text(p.miss),
            binding=cells.binding, bytes_source=p.prediction.bytes_source,
            roofs=roofs_words(p.kernels.roofs) if p.kernels else "",
            why=p.why, notes=model_notes(p.prediction.notes)),
    )
