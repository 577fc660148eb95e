"""The seed's worked model, experiment and exercise, computed from the pure model (no jax).

Everything here is a function of its arguments and lands in results.json, so the report shows the
numbers the project computed, never numbers typed into a template.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from roofline_report.analysis import comm as comm_model
from roofline_report.analysis import seed_model as model
from roofline_report.hlo.collectives import COLLECTIVE_OPS
from roofline_report.kinds import Kind, Quantity


def budgets_json(peak: float, bandwidth: float, *, source: str,
                 interconnect: float = model.DEFAULT_INTERCONNECT) -> dict[str, Any]:
    """Hypothetical budgets as stored in results.json."""
    return {
        "peak": Quantity(peak, "FLOP/s", Kind.HYPOTHETICAL, source).to_json(),
        "bandwidth": Quantity(bandwidth, "B/s", Kind.HYPOTHETICAL, source).to_json(),
        "interconnect": Quantity(interconnect, "B/s", Kind.HYPOTHETICAL,
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
    # The analytic series of the built-in matmul, at the batch the matmuls were measured at
    # (none when the run has no built-in matmul, as with --only-config).
    matmul = next((w for w in sharding.get("workloads", [])
                   if w.get("sharding") in comm_model.STRATEGIES and w.get("shapes")), None)
    series = None
    if matmul is not None:
        shapes = matmul["shapes"]
        d_model, d_ff = shapes["w"][:2]
        batch = int(shapes["x"][0])
        devices = int(sharding.get("devices", 8))
        series = comm_model.scaling_series(
            d_model=int(d_model), d_ff=int(d_ff), batch=batch,
            device_counts=[1, 2, 4, 8], batches=sorted({8 * 2**i for i in range(0, 9)} | {batch}),
            devices=devices, peak_flops=peak, hbm_bandwidth=bandwidth,
            interconnect_bandwidth=interconnect,
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
    predictor: Callable[[Mapping[str, Any], dict[str, Any]],
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
            ours = p.get("hlo_count") or {}
            if "flops" not in an and ours.get("minimum_bytes"):
                # No hand model: place the point by our own count of the compiled program.
                an = {"flops": ours.get("flops", 0), "minimum_bytes": ours["minimum_bytes"]}
                ach = _achieved_from(an, p.get("timing"))
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


def _achieved_from(an: Mapping[str, Any], timing: Any) -> dict[str, Any]:
    t = timing if isinstance(timing, Mapping) else {}
    seconds = (t.get("per_call") or {}).get("median") if t.get("available", True) else None
    if not seconds:
        return {"available": False}
    return {"available": True, "seconds": seconds}


def _median(values: Sequence[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


# --------------------------------------------------------------------------------------------
# Sharded steps: the alpha-beta model, the projection, the emulated measurement
# --------------------------------------------------------------------------------------------

DEFAULT_LATENCY = 1e-6
"""Assumed latency of one collective step under the hypothetical budgets (seconds)."""
DEFAULT_PROJECTION_PRESET = "H100 SXM"

#: Whether the collective arrays of a built-in sharding grow with the batch.
_MATMUL_COMM_SCALES = {"data": False, "contracting": True, "fsdp": False}
_SPLIT_BATCH = {"data": True, "contracting": False, "fsdp": True}


def _mesh_text(w: Mapping[str, Any]) -> str:
    mesh = w.get("mesh") or {}
    names, shape = mesh.get("axis_names") or [], mesh.get("shape") or []
    return ", ".join(f"{a}={s}" for a, s in zip(names, shape, strict=False)) or "unknown"


def _devices_of(w: Mapping[str, Any], default: int) -> int:
    shape = (w.get("mesh") or {}).get("shape") or []
    return math.prod(int(s) for s in shape) if shape else default


def workload_batch(w: Mapping[str, Any], devices: int) -> dict[str, Any] | None:
    """``{"global", "per_device", "comm_scales"}`` of a sharded workload, None when it has no
    batch the tool knows (a user's function: its arguments are as declared)."""
    if isinstance(w.get("batch"), Mapping):
        b = w["batch"]
        return {"global": int(b["global"]), "per_device": int(b["per_device"]),
                "comm_scales": bool(w.get("comm_scales_with_batch"))}
    strategy = w.get("sharding", "")
    x = (w.get("shapes") or {}).get("x")
    if strategy in _MATMUL_COMM_SCALES and x:
        batch = int(x[0])
        return {"global": batch,
                "per_device": batch // devices if _SPLIT_BATCH[strategy] else batch,
                "comm_scales": _MATMUL_COMM_SCALES[strategy]}
    return None


def _collective_rows(w: Mapping[str, Any], interconnect: float, latency: float
                     ) -> list[dict[str, Any]]:
    rows = []
    for c in w.get("collectives", []):
        priced = None
        if c.get("op") in COLLECTIVE_OPS and c.get("result_bytes") is not None \
                and c.get("group_size") is not None:
            trips = c.get("trip_count")
            priced = comm_model.collective_time(
                c["op"], int(c["result_bytes"]), int(c["group_size"]), bandwidth=interconnect,
                latency=latency, count=1 if trips is None else int(trips))
        rows.append({"workload": w.get("name", ""), "collective": c, "priced": priced})
    return rows


def _preset_peak(preset: Any) -> tuple[float, str]:
    """The preset's float32 peak (the steps run f32 at HIGHEST precision), else bf16."""
    value = preset.peak("fp32")
    if value is not None:
        return float(value), "fp32"
    return float(preset.peak("bf16")), "bf16 (no published fp32 figure)"


def step_study(
    sharding: Mapping[str, Any],
    peak: float,
    bandwidth: float,
    interconnect: float,
    *,
    latency: float = DEFAULT_LATENCY,
    preset: str | None = None,
    measured_peak: float | None = None,
    measured_bandwidth: float | None = None,
    kind: str = Kind.HYPOTHETICAL.value,
    source: str = "assumed budgets",
) -> dict[str, Any]:
    """The alpha-beta view of every sharded workload, under this render's budgets.

    Returns ``{"kind", "source", "budget": {"peak", "bandwidth", "interconnect", "latency"},
    "algorithms": notes, "rows": [per workload: index, name, sharding, mesh, devices, batch,
    step_bounds(...) keys, critical_batch], "collectives": [per collective: workload,
    collective record, priced alpha-beta time], "jax_roofline": [per workload that has it:
    ours against jax.experimental.roofline], "emulated": {...}, "projection": {...}}``.
    The HLO's collectives (x their loop trip counts) are priced one after another (no overlap
    between collectives).
    """
    from roofline_report import presets

    rows: list[dict[str, Any]] = []
    collectives: list[dict[str, Any]] = []
    compare: list[dict[str, Any]] = []
    emulated: list[dict[str, Any]] = []
    default_devices = int(sharding.get("devices", 8))
    for index, w in enumerate(sharding.get("workloads", [])):
        per = w.get("per_device") or {}
        if not {"flops", "hbm_bytes"} <= set(per):
            continue
        devices = _devices_of(w, default_devices)
        batch = workload_batch(w, devices)
        bounds = comm_model.step_bounds(
            flops=per["flops"], hbm_bytes=per["hbm_bytes"], collectives=w.get("collectives", []),
            peak_flops=peak, hbm_bandwidth=bandwidth, interconnect_bandwidth=interconnect,
            latency=latency,
        )
        critical = None if batch is None else comm_model.critical_batch(
            batch=batch["global"], t_math=bounds["t_math"], t_latency=bounds["t_comm_latency"],
            t_bandwidth=bounds["t_comm_bandwidth"], comm_scales=batch["comm_scales"])
        rows.append({"index": index, "name": w.get("name", ""), "sharding": w.get("sharding", ""),
                     "step": bool(w.get("step")), "mesh": _mesh_text(w), "devices": devices,
                     "batch": batch, "critical_batch": critical, **bounds})
        collectives += _collective_rows(w, interconnect, latency)
        jr = w.get("jax_roofline") or {}
        if jr.get("available"):
            trips = [c.get("trip_count") or 1 for c in w.get("collectives", [])]
            compare.append({
                "name": w.get("name", ""),
                "ours_bytes": per.get("comm_bytes_hlo"),
                "jax_bytes": sum(jr.get("ici_bytes", {}).values()),
                "ours_steps": bounds["comm_steps"],
                "jax_latency": sum(jr.get("ici_latency", {}).values()),
                "ours_flops": per["flops"],
                "jax_flops": jr.get("flops"),
                "in_loops": any(t > 1 for t in trips),
                "collectives": sum(trips),
            })
        seconds = w.get("measured_seconds")
        if seconds and measured_peak and measured_bandwidth:
            serial = devices * max(per["flops"] / measured_peak,
                                   per["hbm_bytes"] / measured_bandwidth)
            emulated.append({"name": w.get("name", ""), "devices": devices,
                             "measured": float(seconds), "serialised": serial,
                             "ratio": float(seconds) / serial if serial else None,
                             "t_math_measured_peak": per["flops"] / measured_peak})
    chosen = presets.get_preset(preset or DEFAULT_PROJECTION_PRESET)
    chip_peak, peak_dtype = _preset_peak(chosen)
    projection_rows = []
    for r in rows:
        w = sharding["workloads"][r["index"]]
        if not r["step"]:
            continue
        per = w["per_device"]
        batch = r["batch"] or {"comm_scales": False, "global": 0}
        for n in comm_model.PROJECTION_DEVICES:
            link = chosen.link_for(n)
            if link is None or link.latency is None:
                projection_rows.append({"name": r["name"], "devices": n, "available": False,
                                        "reason": f"beyond one {chosen.name} domain of "
                                        f"{chosen.domain} chips: no published scale-out link"})
                continue
            point = comm_model.project_step(
                flops=per["flops"], hbm_bytes=per["hbm_bytes"],
                collectives=w.get("collectives", []), devices=r["devices"], to_devices=n,
                comm_scales=batch["comm_scales"], peak_flops=chip_peak,
                hbm_bandwidth=chosen.hbm_bandwidth, interconnect_bandwidth=link.egress,
                latency=link.latency,
            )
            projection_rows.append({"name": r["name"], "available": True, "link": link.name,
                                    "global_batch": int(batch["global"] * n / r["devices"]),
                                    **point})
    return {
        "kind": kind,
        "source": source,
        "budget": {"peak": peak, "bandwidth": bandwidth, "interconnect": interconnect,
                   "latency": latency},
        "algorithms": dict(comm_model.ALGORITHM_NOTES),
        "rows": rows,
        "collectives": collectives,
        "jax_roofline": compare,
        "emulated": {"available": bool(emulated), "rows": emulated},
        "projection": {
            "kind": Kind.SPEC_SHEET.value,
            "preset": chosen.name,
            "peak": chip_peak,
            "peak_dtype": peak_dtype,
            "hbm_bandwidth": chosen.hbm_bandwidth,
            "domain": chosen.domain,
            "links": [link.to_json() for link in (chosen.interconnect, chosen.scale_out)
                      if link is not None],
            "devices": list(comm_model.PROJECTION_DEVICES),
            "rows": projection_rows,
        },
    }
