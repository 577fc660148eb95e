"""The seed's worked model, experiment and exercise, computed from the pure model (no jax).

Everything here is a function of its arguments and lands in results.json, so the report shows the
numbers the project computed, never numbers typed into a template.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from roofline_report import model
from roofline_report.model import Kind


def budgets_json(peak: float, bandwidth: float, *, source: str) -> dict[str, Any]:
    """Hypothetical budgets as stored in results.json."""
    return {
        "peak": model.Quantity(peak, "FLOP/s", Kind.HYPOTHETICAL, source).to_json(),
        "bandwidth": model.Quantity(bandwidth, "B/s", Kind.HYPOTHETICAL, source).to_json(),
        "ridge": model.ridge(peak, bandwidth),
        "source": source,
    }


def hypothetical_model(
    peak: float, bandwidth: float, sizes: Sequence[int] = model.SEED_SIZES, itemsize: int = 4
) -> dict[str, Any]:
    """Step 3 of the seed: square-matmul intensities n/6 and their ceilings under the budgets."""
    contracts = [model.contract(n, n, n, itemsize) for n in sizes]
    intensity = [c.intensity for c in contracts]
    memory_ceiling = [bandwidth * x for x in intensity]
    roofline = model.attainable_series(intensity, peak, bandwidth)
    ridge = model.ridge(peak, bandwidth)
    return {
        "kind": Kind.HYPOTHETICAL.value,
        "itemsize": itemsize,
        "sizes": list(sizes),
        "contracts": [c.to_json() for c in contracts],
        "intensity": intensity,
        "closed_form_intensity": [model.square_intensity(n, itemsize) for n in sizes],
        "memory_ceiling": memory_ceiling,
        "roofline": roofline,
        "bound": [model.bound_by(x, peak, bandwidth) for x in intensity],
        "ridge": ridge,
        "ridge_square_size": ridge * 3 * itemsize / 2,
        "figure": roofline_figure_data(intensity, peak, bandwidth),
    }


def roofline_figure_data(
    intensity: Sequence[float], peak: float, bandwidth: float
) -> dict[str, Any]:
    """The seed's figure data: the intensities plus the ridge, and the three series."""
    xs = sorted([*intensity, model.ridge(peak, bandwidth)])
    return {
        "x": xs,
        "xlabel": "minimum-traffic operations per byte (FLOP/byte)",
        "ylabel": "hypothetical ceiling (GFLOP/s)",
        "series": [
            {"label": "bandwidth budget", "y": [bandwidth * x / 1e9 for x in xs]},
            {"label": "compute budget", "y": [peak / 1e9] * len(xs)},
            {"label": "combined ceiling", "y": [min(peak, bandwidth * x) / 1e9 for x in xs]},
        ],
    }


def doubled_traffic_experiment(
    peak: float, bandwidth: float, sizes: Sequence[int] = model.SEED_SIZES, itemsize: int = 4
) -> dict[str, Any]:
    """The seed's experiment: the work is unchanged; doubling traffic halves the intensity."""
    base = hypothetical_model(peak, bandwidth, sizes, itemsize)
    reduced = [x / 2 for x in base["intensity"]]
    revised = model.attainable_series(reduced, peak, bandwidth)
    ratio = [r / b for r, b in zip(revised, base["roofline"], strict=True)]
    return {
        "kind": Kind.HYPOTHETICAL.value,
        "sizes": list(sizes),
        "intensity": base["intensity"],
        "reduced_intensity": reduced,
        "roofline": base["roofline"],
        "revised": revised,
        "ratio": ratio,
        "halved": [model.bound_by(x, peak, bandwidth) == "memory" for x in reduced],
        "unchanged": [r == peak for r in revised],
    }


def exercise(
    m: int, k: int, n: int, peak: float, bandwidth: float, itemsize: int = 4
) -> dict[str, Any]:
    """The seed's exercise: work, minimum traffic, intensity and bound of an (m,k)x(k,n) matmul."""
    c = model.contract(m, k, n, itemsize)
    ceiling = model.attainable(c.intensity, peak, bandwidth)
    return {
        "kind": Kind.ANALYTIC.value,
        "shapes": [[m, k], [k, n]],
        "itemsize": itemsize,
        "flops": c.flops,
        "minimum_bytes": c.minimum_bytes,
        "intensity": c.intensity,
        "bandwidth_times_intensity": bandwidth * c.intensity,
        "attainable": ceiling,
        "bound": model.bound_by(c.intensity, peak, bandwidth),
        "peak": peak,
        "bandwidth": bandwidth,
    }
