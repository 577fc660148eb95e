"""The seed's worked model, experiment and exercise, computed from the pure model (no jax).

Everything here is a function of its arguments and lands in results.json, so the report shows the
numbers the project computed, never numbers typed into a template.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from roofline_report import comm_model, model
from roofline_report.model import Kind


def budgets_json(peak: float, bandwidth: float, *, source: str,
                 interconnect: float = model.DEFAULT_INTERCONNECT) -> dict[str, Any]:
    """Hypothetical budgets as stored in results.json."""
    return {
        "peak": model.Quantity(peak, "FLOP/s", Kind.HYPOTHETICAL, source).to_json(),
        "bandwidth": model.Quantity(bandwidth, "B/s", Kind.HYPOTHETICAL, source).to_json(),
        "interconnect": model.Quantity(interconnect, "B/s", Kind.HYPOTHETICAL,
                                       source).to_json(),
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


def comm_study(
    sharding: Mapping[str, Any], peak: float, bandwidth: float, interconnect: float,
    *, kind: str = Kind.HYPOTHETICAL.value, source: str = "assumed budgets",
) -> dict[str, Any]:
    """Per-device T_math, T_mem, T_comm of each sharded workload under the given budgets, and
    how they scale with the number of devices and the batch size (analytic series)."""
    rows = []
    for index, w in enumerate(sharding.get("workloads", [])):
        per = w.get("per_device") or {}
        if not {"flops", "hbm_bytes", "comm_bytes"} <= set(per):
            continue
        bounds = comm_model.comm_bounds(
            flops=per["flops"], hbm_bytes=per["hbm_bytes"], comm_bytes=per["comm_bytes"],
            peak_flops=peak, hbm_bandwidth=bandwidth, interconnect_bandwidth=interconnect,
        )
        rows.append({"index": index, "name": w.get("name", ""),
                     "sharding": w.get("sharding", ""), **bounds})
    shapes = (sharding.get("workloads") or [{}])[0].get("shapes", {})
    d_model, d_ff = (shapes.get("w") or [512, 256])[:2]
    batch = (shapes.get("x") or [64])[0]
    devices = int(sharding.get("devices", 8))
    series = comm_model.scaling_series(
        d_model=int(d_model), d_ff=int(d_ff), batch=int(batch) * 8,
        device_counts=[1, 2, 4, 8], batches=[8 * 2**i for i in range(0, 9)], devices=devices,
        peak_flops=peak, hbm_bandwidth=bandwidth, interconnect_bandwidth=interconnect,
    )
    return {
        "kind": kind,
        "source": source,
        "budget": {"peak": peak, "bandwidth": bandwidth, "interconnect": interconnect},
        "bounds": rows,
        "series": series,
    }


def _closest_term(seconds: float, terms: Mapping[str, float]) -> str:
    """The term whose time is closest to ``seconds`` on a log scale."""
    positive = {k: v for k, v in terms.items() if v > 0}
    return min(positive, key=lambda k: abs(math.log(seconds / positive[k])))


def sweep_study(
    sweeps: Sequence[Mapping[str, Any]],
    peak: float,
    bandwidth: float,
    dispatch: float,
    *,
    kind: str = Kind.MEASURED.value,
    predictor: Callable[[Mapping[str, Any], Mapping[str, Any]],
                        tuple[float, dict[str, float]] | None] | None = None,
) -> dict[str, Any]:
    """Predicted against measured time for every sweep point, and where each workload crosses
    the ridge, predicted (largest term of the model) and observed (the term the measured time
    is closest to, on a log scale).

    predicted = max(flops / peak, minimum bytes / bandwidth, dispatch floor).
    """
    ridge_x = model.ridge(peak, bandwidth)
    out = []
    errors: list[float] = []
    for sw in sweeps:
        points = []
        for p in sw.get("points", []):
            an, ach = p.get("analytic") or {}, p.get("achieved") or {}
            if "flops" not in an or not ach.get("available"):
                continue
            terms = {
                "compute": an["flops"] / peak,
                "memory": an["minimum_bytes"] / bandwidth,
                "dispatch": dispatch,
            }
            predicted = max(terms.values())
            model_time = predictor(sw, p) if predictor is not None else None
            if model_time is not None:  # the model of the compiled program, when it has one
                predicted, terms = model_time
            measured = float(ach["seconds"])
            error = measured / predicted - 1.0
            errors.append(abs(error))
            points.append(
                {
                    "dims": p["dims"],
                    "intensity": an["flops"] / an["minimum_bytes"],
                    "flops": an["flops"],
                    "minimum_bytes": an["minimum_bytes"],
                    "predicted_s": predicted,
                    "measured_s": measured,
                    "achieved_flops_per_s": an["flops"] / measured,
                    "error": error,
                    "predicted_bound": max(terms, key=lambda k: terms[k]),
                    "observed_bound": _closest_term(measured, terms),
                }
            )
        predicted_cross = next(
            (pt["dims"] for pt in points if pt["predicted_bound"] == "compute"), None
        )
        observed_cross = next(
            (pt["dims"] for pt in points if pt["observed_bound"] == "compute"), None
        )
        out.append(
            {
                "name": sw.get("name", ""),
                "title": sw.get("title", ""),
                "parameters": list(sw.get("parameters", [])),
                "points": points,
                "predicted_crossing": predicted_cross,
                "observed_crossing": observed_cross,
                "median_abs_error": _median([abs(pt["error"]) for pt in points]),
            }
        )
    return {
        "kind": kind,
        "budget": {"peak": peak, "bandwidth": bandwidth, "dispatch": dispatch, "ridge": ridge_x},
        "workloads": out,
        "median_abs_error": _median(errors),
        "points": len(errors),
    }


def _median(values: Sequence[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
