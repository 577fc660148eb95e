"""The per-kernel roofline of a workload, derived at render time from its observations.

From the kernel inventory (our count of each kernel's work and boundary bytes) and the
per-kernel times of the profiler trace, under a :class:`~roofline_report.analysis.roofs.RoofSet`:

* one row per kernel, by time share: time per call, share of the summed kernel time (kernels
  can overlap, so shares are of that sum), flops and bytes per call, intensity, achieved rate,
  the roof at that intensity (the compute roof of the workload's dtype, the bandwidth roof of
  the level that holds the kernel's bytes per launch), the fraction of it reached and the
  binding term (compute, memory, or launch: the roof's time for one launch is below the
  shortest time per launch seen in this program, the runtime's fixed cost of a launch);
* where the time goes, by category (matmul and convolution, elementwise, reductions, data
  movement, collectives, other; launch-bound kernels counted apart);
* the largest opportunities, as numbers (the report words them);
* the kernel sum reconciled with the program count (:func:`~roofline_report.hlo.kernels
  .reconcile_kernels`).

Pure: no jax.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roofline_report.analysis import predict
from roofline_report.analysis.roofs import RoofSet
from roofline_report.hlo.kernels import reconcile_kernels

__all__ = ["CATEGORY_TITLES", "kernel_analysis"]

CATEGORY_TITLES = {
    "matmul": "matmul and convolution",
    "elementwise": "elementwise",
    "reduction": "reductions",
    "data movement": "data movement",
    "collective": "collectives",
    "other": "other",
    "launch-bound": "launch-bound",
}
OPPORTUNITY_MIN_SHARE = 0.02  # a kernel below its roof is named when it takes this much time


def _available(record: Any) -> bool:
    return isinstance(record, Mapping) and record.get("available", True) is not False


def kernel_analysis(w: Mapping[str, Any], roof_set: RoofSet | None) -> dict[str, Any] | None:
    """The per-kernel view of one workload (see the module docstring); None when the workload
    has no kernel inventory. Times are per call of the program."""
    found = w.get("kernels")
    if not isinstance(found, Mapping) or not _available(found):
        return None
    inventory: Mapping[str, Any] = found
    raw_timing = w.get("kernel_timing")
    timing: Mapping[str, Any] = raw_timing if isinstance(raw_timing, Mapping) else {}
    timed = bool(timing) and _available(timing)
    times: dict[str, Mapping[str, Any]] = {}
    if timed:
        times = {str(k["name"]): k for k in timing.get("kernels", [])}
    dtype = str(w.get("dtype", ""))
    compute = roof_set.compute_for(dtype) if roof_set is not None else None
    per_launch = [float(t["per_launch_s"]) for t in times.values() if t.get("per_launch_s")]
    launch_floor = min(per_launch) if per_launch else None
    total = sum(float(t["total_s"]) for t in times.values()) if times else 0.0
    rows: list[dict[str, Any]] = []
    for k in inventory["kernels"]:
        trips = int(k["trips"])
        flops = int(k["flops"]) * trips
        nbytes = (int(k["bytes_read"]) + int(k["bytes_written"])) * trips
        t = times.get(str(k["name"]))
        seconds = float(t["total_s"]) if t is not None else None
        row: dict[str, Any] = {
            "name": k["name"], "category": k["category"], "kind": k.get("kind"),
            "source": k.get("source"), "op_name": k.get("op_name"), "trips": trips,
            "launches": float(t["launches"]) if t is not None else None,
            "seconds": seconds, "spread": (float(t["q1_s"]), float(t["q3_s"])) if t else None,
            "share": seconds / total if seconds is not None and total > 0 else None,
            "flops": flops, "transcendentals": int(k["transcendentals"]) * trips,
            "bytes": nbytes, "intensity": flops / nbytes if nbytes and flops else None,
            "achieved": flops / seconds if seconds and flops else None,
            "roof": None, "fraction": None, "binding": None, "roof_seconds": None,
        }
        model = predict.predict_kernel(k, dtype, roof_set) if roof_set is not None else None
        row["predicted"] = model.seconds if model is not None else None
        row["error"] = (abs(model.seconds - seconds) / seconds
                        if model is not None and seconds else None)
        memory = roof_set.bandwidth_for(nbytes / trips) if roof_set is not None else None
        if compute is not None and memory is not None and nbytes:
            terms = {"compute": flops / compute.value, "memory": nbytes / memory.value}
            binding = max(terms, key=lambda key: terms[key])
            roof_seconds = max(terms.values())
            if launch_floor is not None and roof_seconds / trips < launch_floor:
                binding = "launch"
            row["binding"] = binding
            row["roof_seconds"] = roof_seconds
            if row["intensity"] is not None:
                row["roof"] = min(compute.value, memory.value * row["intensity"])
            if seconds:
                row["fraction"] = roof_seconds / seconds  # of the roof's rate (time ratio)
        rows.append(row)
    rows.sort(key=lambda r: (-(r["seconds"] or 0.0), -r["flops"], str(r["name"])))
    by_category: dict[str, dict[str, float]] = {}
    for r in rows:
        key = "launch-bound" if r["binding"] == "launch" else str(r["category"])
        entry = by_category.setdefault(key, {"kernels": 0, "seconds": 0.0, "flops": 0.0,
                                             "bytes": 0.0})
        entry["kernels"] += 1
        entry["seconds"] += r["seconds"] or 0.0
        entry["flops"] += r["flops"]
        entry["bytes"] += r["bytes"]
    for entry in by_category.values():
        entry["share"] = entry["seconds"] / total if total > 0 else 0.0
    categories = [{"category": key, "title": CATEGORY_TITLES.get(key, key), **value}
                  for key, value in sorted(by_category.items(),
                                           key=lambda kv: (-kv[1]["seconds"], kv[0]))]
    return {
        "count": inventory["count"],
        "launches": inventory["launches"],
        "rows": rows,
        "categories": categories,
        "opportunities": _opportunities(rows, by_category, total) if total > 0 else [],
        "timing": timing if timed else None,
        "timing_reason": None if timed else str(timing.get("reason",
                                                           "the workload was not traced")),
        "launch_floor": launch_floor,
        "kernel_seconds": total,
        "roofs": None if roof_set is None else roof_set.label,
        "reconciliation": reconcile_kernels(inventory, w.get("hlo_count")),
        "notes": list(inventory.get("notes", [])),
    }


def _opportunities(rows: list[dict[str, Any]], by_category: Mapping[str, Mapping[str, float]],
                   total: float) -> list[dict[str, Any]]:
    """The largest opportunities as numbers (the report words them): launch-bound kernels,
    data movement, the kernel furthest below its roof, the largest kernel."""
    out: list[dict[str, Any]] = []
    launch = by_category.get("launch-bound")
    if launch and launch["seconds"] > 0:
        out.append({"what": "launch-bound", "kernels": int(launch["kernels"]),
                    "share": launch["share"]})
    movement = by_category.get("data movement")
    if movement and movement["seconds"] > 0:
        out.append({"what": "data movement", "kernels": int(movement["kernels"]),
                    "share": movement["share"], "bytes": movement["bytes"]})
    below = [r for r in rows if r["fraction"] is not None and (r["share"] or 0.0)
             >= OPPORTUNITY_MIN_SHARE and r["binding"] != "launch"]
    if below:
        worst = min(below, key=lambda r: r["fraction"])
        out.append({"what": "furthest below its roof", "kernel": worst["name"],
                    "fraction": worst["fraction"], "binding": worst["binding"],
                    "share": worst["share"]})
    top = rows[0] if rows and rows[0]["share"] else None
    if top is not None:
        out.append({"what": "largest", "kernel": top["name"], "category": top["category"],
                    "share": top["share"]})
    return out
