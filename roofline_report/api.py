"""What :func:`roofline_report.analyze` returns (no jax): the answer for one program, typed.

An :class:`AnalyzeResult` holds the program's observations (its record in results.json: the
lowering, check, our count, XLA's estimate, timing samples, kernel inventory and trace) and the
analysis of them: counted work and traffic, measured time, the model's prediction on the roofs
of the run (this machine's measured ceilings with ``ceilings=True``, else the assumed budgets:
``roofs`` says which) and the miss between them (the model's accuracy), the share of the
hardware roof at its intensity (headroom; on assumed budgets a share of an assumed roof, kept
apart), what binds it, every kernel with the same, and the levers: what could save it the most
time, ranked. ``to_dict()`` is its plain form for JSON. Like ``jax.experimental.roofline``'s
``RooflineResult`` it answers in Python without a page; unlike it, every number is of the
compiled program, and beside it the measurement.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from roofline_report.analysis.analyse import analyse
from roofline_report.analysis.hardware_roof import HardwareRoof
from roofline_report.analysis.kernel_records import (
    BelowRoof,
    ExcessTraffic,
    FreshPages,
    KernelRow,
    Lever,
)
from roofline_report.analysis.miss import Miss
from roofline_report.analysis.predict import Prediction
from roofline_report.analysis.records import Analysis, Program
from roofline_report.analysis.stats import Stats
from roofline_report.errors import InputError
from roofline_report.results import io as results_io

__all__ = ["AnalyzeResult", "result_of"]


def _miss(m: Miss | None) -> dict[str, Any] | None:
    if m is None:
        return None
    return {"predicted_s": m.predicted, "measured_s": m.measured, "error": m.error,
            "ratio": m.ratio, "direction": m.direction}


def _prediction(p: Prediction | None) -> dict[str, Any] | None:
    if p is None:
        return None
    rate = p.roof_rate
    return {
        "seconds": p.seconds, "kind": p.kind.value, "binding": p.binding.label,
        "roof": None if rate is None else {"value": rate[0], "unit": rate[1]},
        "level": p.level, "bytes_source": p.bytes_source, "notes": list(p.notes),
        "lower_bound": p.lower_bound, "unpriced": list(p.unpriced),
        "terms": [{"name": t.name, "group": t.group, "seconds": t.seconds, "roof": t.roof,
                   "roof_kind": t.kind.value, "detail": t.detail} for t in p.terms],
    }


def _timing(s: Stats | None) -> dict[str, Any] | None:
    if s is None:
        return None
    # "seconds" is the time per call the page shows (the first quartile); the rest is spread.
    return {"seconds": s.own, "median_s": s.median, "min_s": s.min, "q1_s": s.q1, "q3_s": s.q3,
            "samples": s.n, "spread": s.spread, "unstable": s.unstable}


def _hardware(h: HardwareRoof | None) -> dict[str, Any] | None:
    if h is None:
        return None
    rate = h.rate
    return {"seconds": h.seconds, "kind": h.kind.value, "binding": h.binding,
            "roofs": h.names or None, "flops": h.flops, "bytes": h.bytes,
            "rate": None if rate is None else {"value": rate[0], "unit": rate[1]},
            "parts": [{"group": x.group, "roof": x.name, "work": x.work, "seconds": x.seconds,
                       "rate": {"value": x.value, "unit": x.unit}} for x in h.parts]}


def _lever(x: Lever) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": x.what, "saving_s": x.saving, "share": x.share}
    if isinstance(x, BelowRoof):
        out.update(kernel=x.kernel, category=x.category, seconds=x.seconds,
                   share_of_roof=x.of_roof, roof=_hardware(x.roof), call_s=x.call,
                   capped=x.capped, fresh_pages_s=x.faults)
    elif isinstance(x, ExcessTraffic):
        out.update(kernels=list(x.kernels), categories=dict(x.categories), seconds=x.seconds,
                   bytes=x.bytes, total_bytes=x.total_bytes, minimum_bytes=x.minimum_bytes,
                   minimum_basis=x.minimum_basis, excess_bytes=x.excess,
                   bandwidth=x.bandwidth, roof=x.roof, roof_kind=x.roof_kind.value,
                   call_s=x.call)
    elif isinstance(x, FreshPages):
        out.update(kernels=list(x.kernels), pages=x.pages, page_fault_s=x.fault,
                   counted_page_faults=x.counted, temp_bytes=x.temp_bytes, call_s=x.call)
    else:
        out.update(dispatch_s=x.dispatch, launch_s=x.launch, launches=x.launches,
                   one_launch_s=x.floor, seconds=x.seconds, roof_kind=x.roof_kind.value)
    return out


def _kernel(r: KernelRow) -> dict[str, Any]:
    return {
        "name": r.name, "category": r.category, "source": r.source, "trips": r.trips,
        "launches": r.launches, "seconds": r.seconds, "busy_seconds": r.busy_seconds,
        "share": r.share, "flops": r.flops, "transcendentals": r.transcendentals,
        "bytes": r.bytes, "intensity": r.intensity, "achieved_flops_per_s": r.achieved,
        "prediction": _prediction(r.prediction), "miss": _miss(r.miss),
        "hardware_roof": _hardware(r.hardware),
        "share_of_hardware_roof": r.share_of_hardware_roof,
        "share_of_assumed_roof": r.share_of_assumed_roof, "above_roof": r.above_roof,
        "headroom_s": r.headroom, "binding": r.binding, "why": r.why, "pattern": r.pattern,
        "asynchronous": r.asynchronous,
    }


@dataclass(frozen=True)
class AnalyzeResult:
    """The answer for one program (see the module docstring). Times are seconds per call."""

    program: Program
    analysis: Analysis

    @property
    def name(self) -> str:
        return self.program.name

    @property
    def record(self) -> dict[str, Any]:
        """The program's observations, as results.json records them (a fresh copy)."""
        return results_io.plain(self.program.workload)

    @property
    def flops(self) -> float | None:
        """Work per call, counted from the compiled program (its kernels)."""
        return self.program.flops

    @property
    def bytes(self) -> float | None:
        """Bytes its kernels touch per call."""
        return self.program.bytes

    @property
    def intensity(self) -> float | None:
        return self.program.intensity

    @property
    def seconds(self) -> float | None:
        """Measured time per call as the page, ``compare`` and the gate show it: the first
        quartile of the samples (:func:`~roofline_report.analysis.stats.own_time`); None when it
        was not timed."""
        return self.program.seconds

    @property
    def timing(self) -> Stats | None:
        return self.program.timing

    @property
    def prediction(self) -> Prediction | None:
        return self.program.prediction

    @property
    def miss(self) -> Miss | None:
        return self.program.miss

    @property
    def share_of_hardware_roof(self) -> float | None:
        """Achieved rate ÷ the hardware roof at the program's intensity: headroom (1.0 is at
        the roof; above it only where a roof is lower than what ran). None on the assumed
        budgets (no roof of this machine was measured: :attr:`share_of_assumed_roof`)."""
        return self.program.share_of_hardware_roof

    @property
    def share_of_assumed_roof(self) -> float | None:
        """The same share against the assumed budgets, where no roof was measured: a share of
        a hypothetical roof, not headroom; None on measured roofs or a spec sheet."""
        return self.program.share_of_assumed_roof

    @property
    def hardware_roof(self) -> HardwareRoof | None:
        """The roof at the program's intensity (its ``kind`` says whose: measured, a spec
        sheet, or hypothetical)."""
        return self.program.hardware

    @property
    def levers(self) -> tuple[Lever, ...]:
        """What could save the program the most time, the largest saving first: kernels below
        their roofs, traffic above the program's minimum, fresh pages, dispatch and launches
        (each an upper bound; they overlap, so they rank and do not add)."""
        return self.program.levers

    @property
    def share_of_roof(self) -> float | None:
        """Deprecated: :attr:`share_of_hardware_roof` (headroom); the model's accuracy is
        :attr:`miss`."""
        warnings.warn("share_of_roof is deprecated: use share_of_hardware_roof (achieved ÷ the "
                      "roof at its intensity) or miss (predicted against measured)",
                      DeprecationWarning, stacklevel=2)
        return self.share_of_hardware_roof

    @property
    def binding(self) -> str:
        return self.program.binding

    @property
    def why(self) -> str:
        return self.program.why

    @property
    def timed_without(self) -> tuple[str, ...]:
        """Options of your jit the program was timed without (jax's names), () when it was
        timed as written."""
        return self.program.timed_without

    @property
    def timed_under_load(self) -> float | None:
        """Other processes' share of the machine's cores while the program was timed, where
        it was under load (a fifth of them or more: its time may hold theirs); None where it
        was not, or the load is not known."""
        return self.program.timed_under_load

    @property
    def kernels(self) -> tuple[KernelRow, ...]:
        """Every kernel of the compiled program, longest first ('' without an inventory)."""
        return self.program.kernels.rows if self.program.kernels is not None else ()

    @property
    def roofs(self) -> str:
        """The roofs the predictions are priced on: 'this machine' (measured) or the assumed
        budgets."""
        return self.analysis.roofs.kernels.label

    def to_dict(self) -> dict[str, Any]:
        """The plain form, for JSON."""
        p = self.program
        return {
            "name": p.name, "title": p.title, "dtype": p.dtype, "flops": p.flops,
            "bytes": p.bytes, "bytes_basis": p.bytes_basis, "intensity": p.intensity,
            "minimum_bytes": p.minimum_bytes, "minimum_basis": p.minimum_basis,
            "seconds": p.seconds, "timing": _timing(p.timing),
            "achieved_flops_per_s": p.achieved, "prediction": _prediction(p.prediction),
            "miss": _miss(p.miss), "hardware_roof": _hardware(p.hardware),
            "share_of_hardware_roof": p.share_of_hardware_roof,
            "share_of_assumed_roof": p.share_of_assumed_roof, "above_roof": p.above_roof,
            "binding": p.binding, "levers": [_lever(x) for x in p.levers],
            "why": p.why, "roofs": self.roofs, "timed_without": list(p.timed_without),
            "timed_under_load": p.timed_under_load,
            "roofs_kind": self.analysis.roofs.kernels.kind.value,
            "kernels": [_kernel(r) for r in self.kernels],
            "record": self.record,
        }

    def __repr__(self) -> str:
        seconds = "not timed" if self.seconds is None else f"{self.seconds:.4g} s"
        predicted = "none" if self.prediction is None else f"{self.prediction.seconds:.4g} s"
        hardware, assumed = self.share_of_hardware_roof, self.share_of_assumed_roof
        share = (f"{hardware:.0%} of the hardware roof" if hardware is not None else
                 f"{assumed:.0%} of an assumed roof (no roof measured: not headroom)"
                 if assumed is not None else "no roof share")
        return (f"AnalyzeResult({self.name!r}: measured {seconds}, predicted {predicted} on "
                f"{self.roofs}, {share}, {len(self.kernels)} kernels)")


def result_of(results: Mapping[str, Any], name: str) -> AnalyzeResult:
    """The answer for the program called ``name`` in a results document."""
    an = analyse(results)
    program = an.program(name)
    if program is None:
        raise InputError(f"no program named {name!r} in these results")
    return AnalyzeResult(program, an)
