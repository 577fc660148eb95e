"""The budgets of the lab's single-roof model (no jax): this machine's measured peak, bandwidth
and dispatch floor where the ceilings record has them, else the hypothetical ones. They predict
when the per-kernel model cannot (see :mod:`roofline_report.analysis.experiments.times`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from roofline_report.analysis import seed_model as model
from roofline_report.analysis.experiments.verdicts import finite
from roofline_report.errors import InputError
from roofline_report.kinds import Kind, Quantity
from roofline_report.units import format_si

__all__ = ["HYPOTHETICAL_BF16_SPEEDUP", "HYPOTHETICAL_DISPATCH_S", "Budgets", "budgets", "weaker"]

# Assumed budgets where no measured ceiling exists (assumptions for teaching, like the seed's).
HYPOTHETICAL_DISPATCH_S = 5e-6
"""An assumed cost of launching one call: the order of a jitted call's dispatch on a CPU (about
5 us measured on a 2-core machine)."""
HYPOTHETICAL_BF16_SPEEDUP = 2.0
"""Assumed bfloat16 : float32 compute-ceiling ratio, as on chips with native bfloat16 units."""


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


def budgets(ceilings: Mapping[str, Any] | None, *, peak: float, bandwidth: float) -> Budgets:
    """Resolve the budgets from measured ``ceilings`` (or None) and the hypothetical ones.

    Measured peak and bandwidth are used together or not at all (mixing would give a ridge of
    neither machine). Raises InputError when the hypothetical budgets are not positive numbers.
    """
    for name, value in (("peak", peak), ("bandwidth", bandwidth)):
        if finite(value) is None or value <= 0:
            raise InputError(f"the hypothetical {name} must be a positive number, got {value!r}")
    hypo = f"hypothetical budgets ({format_si(peak, 'FLOP/s')}, {format_si(bandwidth, 'B/s')})"
    c = ceilings if isinstance(ceilings, Mapping) else {}
    m_peak = _ceiling_value(c.get("peak_compute"))
    m_bw = _ceiling_value(c.get("peak_bandwidth"))
    m_dispatch = _ceiling_value(c.get("dispatch"))
    compute: dict[str, float] = {}
    entries = c.get("compute")
    if isinstance(entries, list):
        for e in entries:
            if isinstance(e, Mapping) and e.get("available", True) is not False:
                rate = _ceiling_value(e)
                if rate is not None and isinstance(e.get("dtype"), str):
                    compute[str(e["dtype"])] = max(rate, compute.get(str(e["dtype"]), 0.0))
    if m_peak is not None and m_bw is not None:
        kind, use_peak, use_bw = Kind.MEASURED, m_peak, m_bw
        note = (
            f"from this machine's measured ceilings ({format_si(m_peak, 'FLOP/s')}, "
            f"{format_si(m_bw, 'B/s')})"
        )
    else:
        why = "no measured ceilings" if not c else "the measured peak or bandwidth is missing"
        kind, use_peak, use_bw = Kind.HYPOTHETICAL, float(peak), float(bandwidth)
        note = f"{why}: falls back on the {hypo}"
    if m_dispatch is not None:
        d_kind, dispatch = Kind.MEASURED, m_dispatch
        d_note = f"measured dispatch floor ({format_si(m_dispatch, 's')} per call)"
    else:
        d_kind, dispatch = Kind.HYPOTHETICAL, HYPOTHETICAL_DISPATCH_S
        d_note = f"no measured dispatch floor: assumes {format_si(dispatch, 's')} per call"
    return Budgets(use_peak, use_bw, dispatch, kind, d_kind, note, d_note, compute)


def _ceiling_value(entry: object) -> float | None:
    if not isinstance(entry, Mapping) or entry.get("available", True) is False:
        return None
    value = finite(entry.get("value"))
    return value if value is not None and value > 0 else None


def weaker(*kinds: Kind) -> Kind:
    """The kind of a number derived from several: hypothetical if any input is."""
    if Kind.HYPOTHETICAL in kinds:
        return Kind.HYPOTHETICAL
    if Kind.MEASURED in kinds:
        return Kind.MEASURED
    return Kind.ANALYTIC
