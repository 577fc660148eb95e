"""The shorthands every section of the report is built with: paragraphs, cells and tables of
blocks, the figure lookups, the banners of a section's kind.

A figure a section always shows is looked up with :func:`figure_of`, which raises
:class:`MissingFigure`; one that a run may lack is looked up with :func:`optional_figure`, and
:meth:`~roofline_report.report.blocks.Document.check` then fails on any figure produced but not
placed, so a renamed figure is an error in either case.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from roofline_report.kinds import Kind
from roofline_report.report.blocks import (
    Banner,
    Cell,
    Figure,
    Inline,
    Paragraph,
    Status,
    Table,
    text,
)
from roofline_report.report.format import Num
from roofline_report.report.view_records import ViewModel

VM = ViewModel
SOLUTION = "Reference solution (try the exercise before reading this)"
UNSTABLE = Status("(may be unstable)", "warn")


class MissingFigure(LookupError):
    """A section asked for a figure the view model does not hold."""


def figure_of(vm: VM, name: str) -> Figure:
    try:
        return Figure(vm.figures[name])
    except KeyError:
        raise MissingFigure(f"the report shows the figure {name!r}, which was not produced "
                            f"(produced: {sorted(vm.figures)})") from None


def optional_figure(vm: VM, name: str) -> tuple[Figure, ...]:
    f = vm.figures.get(name)
    return (Figure(f),) if f is not None else ()


def p(*parts: Inline | None) -> Paragraph:
    """A paragraph of inline parts (None and '' dropped)."""
    return Paragraph(text(*parts))


def c(*parts: Inline | None) -> Cell:
    """A text cell."""
    return Cell(text(*parts))


def num(x: Num, *after: Inline | None) -> Cell:
    """A numeric cell: the number, then anything after it."""
    return Cell(text(x, *after), numeric=True)


def table(header: Sequence[str] | None, rows: Sequence[Sequence[Cell]], *, caption: str = "",
          row_headers: bool = False) -> Table:
    return Table(tuple(header) if header is not None else None,
                 tuple(tuple(r) for r in rows), caption, row_headers)


def yes_no(ok: bool) -> Status:
    return Status("yes", "ok") if ok else Status("no", "bad")


HYPOTHETICAL = Banner(Kind.HYPOTHETICAL.value, "Hypothetical", "assumed budgets, not a device")
MEASURED = Banner(Kind.MEASURED.value, "Measured", "this machine, this run")


def anchored(cell: Cell, anchor: str) -> Cell:
    """``cell`` carrying the anchor ``anchor`` (a workload's, stable across runs)."""
    return replace(cell, id=anchor)

