"""Every timed program on the roofline it is predicted on (no jax): the placements' table, the
figure of the programs with their predicted points, and the sentence on how well the model
predicted the run. Display strings of numbers the analysis computed.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline_report.analysis.kernel_records import SIGNIFICANT_KERNEL_S
from roofline_report.analysis.records import Analysis
from roofline_report.analysis.roofs import RoofSet
from roofline_report.kinds import Kind
from roofline_report.report import figures as figs
from roofline_report.report import meta
from roofline_report.report.blocks import Inline
from roofline_report.report.format import Num, miss_text, n, percent, plural
from roofline_report.report.lever_words import lever_short
from roofline_report.report.roof_words import (
    above_words,
    hardware_rate,
    point_tooltip,
    prediction_cells,
    roof_share_num,
    roof_uses,
)
from roofline_report.units import format_intensity, format_si

__all__ = ["PlacementRow", "accuracy", "placements", "programs_figure"]

P = Kind.PREDICTED
M = Kind.MEASURED
A = Kind.ANALYTIC


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
            tooltip=point_tooltip(p.title, p.seconds, None, None, p.share_of_hardware_roof,
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
