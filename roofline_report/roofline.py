"""The roofline's own arithmetic (no jax, no analysis): the one definition of the ridge, the
attainable rate at an intensity, the bound a term or an intensity puts on a time, and which term
binds.

Every part of the project that states a ridge, a roof at an intensity, a single-roof time or a
binding goes through these functions: the seed's teaching model
(:mod:`roofline_report.analysis.seed_model` re-exports them under its names), the lab's
single-roof budgets, spec-sheet placements, the collective model's time bounds, chip presets and
the figures. The roofline model (Williams, Waterman and Patterson, "Roofline: an insightful
visual performance model for multicore architectures", CACM 2009): attainable = min(peak,
bandwidth × intensity); the ridge is peak ÷ bandwidth; at the ridge, compute binds.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Literal

__all__ = ["attainable", "binding", "bound_at", "check_budget", "ridge", "single_roof_seconds"]


def check_budget(peak_flops: float, bandwidth: float) -> None:
    """Raise ValueError unless both are positive finite numbers."""
    for name, value in (("peak", peak_flops), ("bandwidth", bandwidth)):
        if not (isinstance(value, numbers.Real) and math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a positive finite number, got {value!r}")


def ridge(peak_flops: float, bandwidth: float) -> float:
    """Intensity (FLOP/byte) where the bandwidth ceiling meets the compute ceiling."""
    check_budget(peak_flops, bandwidth)
    return peak_flops / bandwidth


def bound_at(intensity: float, ridge_intensity: float) -> Literal["memory", "compute"]:
    """The ceiling that binds at ``intensity``: memory under the ridge, compute at or over."""
    return "memory" if intensity < ridge_intensity else "compute"


def attainable(intensity: float, peak_flops: float, bandwidth: float) -> float:
    """The roof at ``intensity``: min(peak, bandwidth × intensity)."""
    check_budget(peak_flops, bandwidth)
    if not intensity > 0 or not math.isfinite(intensity):
        raise ValueError(f"intensity must be positive and finite, got {intensity!r}")
    # Compare intensities, not rates: bandwidth * (peak / bandwidth) may round below peak.
    if bound_at(intensity, peak_flops / bandwidth) == "compute":
        return float(peak_flops)
    return min(peak_flops, bandwidth * intensity)


def binding(times: Mapping[str, float]) -> str:
    """The term that binds a time bounded by several: the name of the largest, the first named
    among equals (so callers list terms in the order ties should go: compute before memory
    before communication, the ridge's rule). Raises ValueError for no terms."""
    if not times:
        raise ValueError("binding needs at least one term")
    top = max(times.values())
    return next(name for name, t in times.items() if t == top)


def single_roof_seconds(flops: float, traffic_bytes: float, peak_flops: float,
                        bandwidth: float, floor_seconds: float = 0.0) -> float:
    """The single-roof lower bound on a time: max(work ÷ peak, traffic ÷ bandwidth, a floor
    such as the dispatch of one call)."""
    check_budget(peak_flops, bandwidth)
    return max(flops / peak_flops, traffic_bytes / bandwidth, floor_seconds)
