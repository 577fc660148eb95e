"""The summary of a report about programs (no jax): for each of the user's programs what to fix
first, its measured and predicted time and the miss between them, its achieved rate and share of
its roof, what binds it, and the levers that could save the most time.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline_report.analysis.records import Analysis
from roofline_report.kinds import Kind
from roofline_report.report import meta
from roofline_report.report.blocks import Inline
from roofline_report.report.format import Num, miss_text, n
from roofline_report.report.lever_words import lever_kind, lever_short, what_first
from roofline_report.report.program_view import timed_without
from roofline_report.report.roof_words import prediction_cells, roof_share_num, roofs_words

__all__ = ["SummaryLever", "SummaryRow", "SummaryView", "summary"]

M = Kind.MEASURED

SAVERS = 3  # levers named per program in the summary's table


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
                           "-program" if p.workload.trace is None else "-summary")
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
