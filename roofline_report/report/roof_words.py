"""What the views of programs and kernels say of the roofs they are held to (no jax): the roofs
a prediction was made on, the cells every prediction shows, the roof at a point's intensity and
the share of it reached, the words for a point above its roof; and, for a roofline figure of
programs or kernels, a point's tooltip and the compute roofs drawn for its programs. The kernel
tables, the programs' placements, the summary and a program's own view share them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from roofline_report.analysis.hardware_roof import HardwareRoof
from roofline_report.analysis.predict import Prediction
from roofline_report.analysis.records import Program, Sweep
from roofline_report.analysis.roofs import RoofSet
from roofline_report.kinds import Kind
from roofline_report.report.format import Num, n, percent, percent_text, rate
from roofline_report.units import format_si

__all__ = ["PredictionCells", "above_words", "hardware_rate", "point_tooltip", "prediction_cells",
           "roof_share_num", "roof_uses", "roofs_words"]

P = Kind.PREDICTED


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


def point_tooltip(name: str, seconds: float | None, share: float | None, source: str | None,
                  of_roof: float | None, of_assumed: float | None = None) -> str:
    """A point's tooltip on a roofline figure: its name, time per call, share of the time
    and of its roof (or an assumed roof) at its intensity, and its source line."""
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


def roof_uses(programs: Sequence[Program], roofs: RoofSet) -> list[tuple[str | None, str]]:
    """The (dtype, operation) pairs whose compute roofs a figure of ``programs`` draws: each
    program's dtype's matrix products, and the compute roofs of ``roofs`` its hardware roof
    prices work at (a convolution's, an integer product's); sorted, once each."""
    return _uses((p.dtype for p in programs if p.dtype),
                 ((x.group, x.name) for p in programs if p.hardware is not None
                  for x in p.hardware.parts), roofs)


def sweep_uses(sweeps: Sequence[Sweep], roofs: RoofSet) -> list[tuple[str | None, str]]:
    """The (dtype, operation) pairs whose compute roofs the size sweeps run under: each
    sweep's dtype's matrix products, and the compute roofs of ``roofs`` its points'
    predictions price work at (a convolution's); sorted, once each."""
    return _uses((sw.dtype for sw in sweeps),
                 ((t.group, t.roof) for sw in sweeps for pt in sw.points
                  if pt.prediction is not None for t in pt.prediction.terms), roofs)


def _uses(dtypes: Iterable[str], priced: Iterable[tuple[str, str]], roofs: RoofSet
          ) -> list[tuple[str | None, str]]:
    """Each dtype's matrix products and the compute roofs of ``roofs`` named among the
    ``priced`` (group, roof name) pairs, as (dtype, operation); sorted, once each."""
    by_name = {r.name: r for r in roofs.compute}
    uses: set[tuple[str | None, str]] = {(d, "matmul") for d in dtypes}
    for group, name in priced:
        roof = by_name.get(name)
        if group == "compute" and roof is not None:
            uses.add((roof.dtype, roof.op))
    return sorted(uses, key=lambda u: (u[1], u[0] or ""))
