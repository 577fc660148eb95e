"""The budgets of the lab's single-roof model (no jax): this machine's measured peak, bandwidth
and dispatch floor where the measured ceilings have them (:class:`MeasuredCeilings`), else the
hypothetical ones. They predict
when the per-kernel model cannot (see :mod:`roofline_report.analysis.experiments.times`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from roofline_report.analysis import seed_model as model
from roofline_report.analysis.experiments.verdicts import finite
from roofline_report.analysis.roofs import RoofSet
from roofline_report.errors import InputError
from roofline_report.kinds import Kind, Quantity
from roofline_report.results.schema_ceilings import Ceilings
from roofline_report.units import format_si

__all__ = ["HYPOTHETICAL_BF16_SPEEDUP", "HYPOTHETICAL_DISPATCH_S", "Budgets", "MeasuredCeilings",
           "budgets", "weaker"]

# Assumed budgets where no measured ceiling exists (assumptions for teaching, like the seed's).
HYPOTHETICAL_DISPATCH_S = 5e-6
"""An assumed cost of launching one call: the order of a jitted call's dispatch on a CPU (about
5 us measured on a 2-core machine)."""
HYPOTHETICAL_BF16_SPEEDUP = 2.0
"""Assumed bfloat16 : float32 compute-ceiling ratio, as on chips with native bfloat16 units."""


@dataclass(frozen=True, slots=True)
class MeasuredCeilings:
    """What the budgets read from this machine's measured ceilings: the peak and the bandwidth
    of the measured roof set (its float32 compute roof and its main-memory roof; None where
    there is none), the dispatch floor and the best compute ceiling of each dtype (positive,
    finite values only)."""

    peak: float | None
    bandwidth: float | None
    dispatch: float | None
    compute: Mapping[str, float]

    @classmethod
    def of(cls, ceilings: Ceilings, roofs: RoofSet | None) -> MeasuredCeilings:
        """The ceilings record's dispatch floor and compute ceilings, with the peak and the
        bandwidth of ``roofs``, the roof set measured from it (None: incomplete)."""
        compute: dict[str, float] = {}
        for entry in ceilings.compute:
            rate = _positive(entry.value) if entry.available else None
            if rate is not None:
                compute[entry.dtype] = max(rate, compute.get(entry.dtype, 0.0))
        dispatch = ceilings.dispatch
        peak_roof = roofs.compute_for("float32") if roofs is not None else None
        bandwidth_roof = roofs.bandwidth_for(None) if roofs is not None else None
        return cls(
            peak=_positive(peak_roof.value) if peak_roof is not None else None,
            bandwidth=_positive(bandwidth_roof.value) if bandwidth_roof is not None else None,
            dispatch=_positive(dispatch.value) if dispatch.available else None,
            compute=compute,
        )


@dataclass(frozen=True, slots=True)
class Budgets:
    """The ceilings predictions use: measured ones where available, else the hypothetical ones."""

    peak: float
    bandwidth: float
    dispatch: float
    kind: Kind
    dispatch_kind: Kind
    note: str
    dispatch_note: str
    compute: Mapping[str, float]  # measured compute ceilings by dtype (available ones only)

    def seconds(self, flops: float, moved: float) -> float:
        """The single-roof time of ``flops`` over ``moved`` bytes, a dispatch at the least
        (:func:`roofline_report.analysis.seed_model.predicted_seconds` on these budgets)."""
        return model.predicted_seconds(flops, moved, self.peak, self.bandwidth, self.dispatch)

    def to_json(self) -> dict[str, Any]:
        return {
            "peak": Quantity(self.peak, "FLOP/s", self.kind, self.note).to_json(),
            "bandwidth": Quantity(self.bandwidth, "B/s", self.kind, self.note).to_json(),
            "dispatch": Quantity(
                self.dispatch, "s", self.dispatch_kind, self.dispatch_note
            ).to_json(),
            "ridge": model.ridge(self.peak, self.bandwidth),
            "compute_by_dtype": dict(sorted(self.compute.items())),
        }


def budgets(measured: MeasuredCeilings | None, *, peak: float, bandwidth: float) -> Budgets:
    """Resolve the budgets from this machine's ``measured`` ceilings (or None) and the
    hypothetical ones.

    Measured peak and bandwidth are used together or not at all (mixing would give a ridge of
    neither machine). Raises InputError when the hypothetical budgets are not positive numbers.
    """
    for name, value in (("peak", peak), ("bandwidth", bandwidth)):
        if finite(value) is None or value <= 0:
            raise InputError(f"the hypothetical {name} must be a positive number, got {value!r}")
    hypo = f"hypothetical budgets ({format_si(peak, 'FLOP/s')}, {format_si(bandwidth, 'B/s')})"
    measured_peak = measured.peak if measured is not None else None
    measured_bandwidth = measured.bandwidth if measured is not None else None
    measured_dispatch = measured.dispatch if measured is not None else None
    compute = dict(measured.compute) if measured is not None else {}
    if measured_peak is not None and measured_bandwidth is not None:
        kind, use_peak, use_bw = Kind.MEASURED, measured_peak, measured_bandwidth
        note = (
            f"from this machine's measured ceilings ({format_si(measured_peak, 'FLOP/s')}, "
            f"{format_si(measured_bandwidth, 'B/s')})"
        )
    else:
        why = ("no measured ceilings" if measured is None
               else "the measured peak or bandwidth is missing")
        kind, use_peak, use_bw = Kind.HYPOTHETICAL, float(peak), float(bandwidth)
        note = f"{why}: falls back on the {hypo}"
    if measured_dispatch is not None:
        dispatch_kind, dispatch = Kind.MEASURED, measured_dispatch
        dispatch_note = f"measured dispatch floor ({format_si(measured_dispatch, 's')} per call)"
    else:
        dispatch_kind, dispatch = Kind.HYPOTHETICAL, HYPOTHETICAL_DISPATCH_S
        dispatch_note = f"no measured dispatch floor: assumes {format_si(dispatch, 's')} per call"
    return Budgets(use_peak, use_bw, dispatch, kind, dispatch_kind, note, dispatch_note, compute)


def _positive(value: float | None) -> float | None:
    """``value`` where it is a positive finite number, else None."""
    number = finite(value)
    return number if number is not None and number > 0 else None


def weaker(*kinds: Kind) -> Kind:
    """The kind of a number derived from several: hypothetical if any input is."""
    if Kind.HYPOTHETICAL in kinds:
        return Kind.HYPOTHETICAL
    if Kind.MEASURED in kinds:
        return Kind.MEASURED
    return Kind.ANALYTIC
