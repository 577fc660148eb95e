"""Two or more runs of one program compared kernel by kernel (pure: no jax).

For each program every run holds with a per-kernel table (a profile read from a trace, or a
measured run timed from its trace), the kernels are matched by the HLO op they run: by name,
and where a name differs only by a trailing ``.0`` (XLA renames an instruction so between
compilations: ``cudnn-conv.1`` and ``cudnn-conv.1.0``), as the same op. Each matched kernel
gets its time per call in every run and its speed-up against the first run; a kernel only some
runs hold is listed with the runs that hold it, never dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from roofline_report.analysis.kernel_records import KernelRow
from roofline_report.analysis.records import Analysis
from roofline_report.kinds import Kind
from roofline_report.report.format import Num, n, ratio

__all__ = ["KernelComparison", "MatchedKernel", "PartialKernel", "kernel_comparisons"]

NOT_IN_RUN = "not in this run"


def _key(name: str) -> str:
    return name.removesuffix(".0")


def _rows(table_rows: Sequence[KernelRow]) -> dict[str, KernelRow]:
    return {_key(r.name): r for r in table_rows}


def _tables(runs: Sequence[tuple[str, Analysis]], name: str) -> list[dict[str, KernelRow]]:
    """Each run's timed kernels of program ``name``, by op; [] unless every run has them."""
    tables = []
    for _, an in runs:
        prog = an.program(name)
        table = prog.kernels if prog is not None else None
        if table is None or table.trace is None:
            return []
        tables.append(_rows(table.rows))
    return tables


@dataclass(frozen=True, slots=True)
class MatchedKernel:
    """A kernel every run holds: its time per call in each and its speed-ups against run 1."""

    name: str
    times: list[Num]
    speedups: list[Num]


@dataclass(frozen=True, slots=True)
class PartialKernel:
    """A kernel only some runs hold, the runs that do and its time in each."""

    name: str
    runs: str
    times: list[Num]


@dataclass(frozen=True, slots=True)
class KernelComparison:
    """One program's kernels in every run side by side."""

    title: str
    name: str
    rows: list[MatchedKernel]
    only: list[PartialKernel]


def _compare(title: str, name: str, tables: Sequence[dict[str, KernelRow]]
             ) -> KernelComparison:
    keys = list(dict.fromkeys(k for t in tables for k in t))
    both = sorted((k for k in keys if all(k in t for t in tables)),
                  key=lambda k: -(tables[0][k].seconds or 0.0))
    some = [k for k in keys if not all(k in t for t in tables)]
    rows = []
    for k in both:
        ts = [t[k].seconds for t in tables]
        base = ts[0]
        rows.append(MatchedKernel(
            name=" / ".join(dict.fromkeys(t[k].name for t in tables)),
            times=[n(x, "s", Kind.MEASURED) for x in ts],
            speedups=[ratio(base / x, Kind.MEASURED, 3) if base and x else Num("—")
                      for x in ts[1:]],
        ))
    only = [PartialKernel(name=next(t[k].name for t in tables if k in t),
                          runs=", ".join(str(i) for i, t in enumerate(tables, 1) if k in t),
                          times=[n(t[k].seconds, "s", Kind.MEASURED) if k in t
                                 else Num(NOT_IN_RUN) for t in tables]) for k in some]
    return KernelComparison(title=title, name=name, rows=rows, only=only)


def kernel_comparisons(runs: Sequence[tuple[str, Analysis]]) -> list[KernelComparison]:
    """Per program every run holds with timed kernels: the matched kernels (name, times,
    speed-ups against run 1) and the kernels only some runs hold."""
    if len(runs) < 2:
        return []
    out = []
    for prog in runs[0][1].programs:
        tables = _tables(runs, prog.name)
        if tables:
            out.append(_compare(prog.title, prog.name, tables))
    return out
