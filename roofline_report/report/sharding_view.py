"""The view of "Past one device" (no jax): the sharded workloads, their collectives, the
alpha-beta model of their steps and its projection to real chips, as display strings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roofline_report.kinds import Kind
from roofline_report.report.format import Num, count, n, plural, ratio
from roofline_report.units import format_intensity, format_si


def sharding(sh: Mapping[str, Any]) -> dict[str, Any]:
    if not sh.get("available"):
        return {"available": False, "reason": sh.get("reason", "not measured")}
    model = sh.get("model") or {}
    kind = model.get("kind", Kind.HYPOTHETICAL.value)
    # Bounds rows point back at their workload by index (several user workloads share the
    # sharding "user"); results saved before the index existed are matched by sharding.
    bounds: dict[Any, dict[str, Any]] = {b.get("index", b["sharding"]): b
                                         for b in model.get("bounds", [])}
    budget = model.get("budget", {})
    rows = []
    for i, w in enumerate(sh.get("workloads", [])):
        per = w.get("per_device") or {}
        xla = w.get("xla_per_device") or {}
        b = bounds.get(i, bounds.get(w.get("sharding", ""), {}))
        colls = "; ".join(
            f"{c['op']} {c.get('dtype', '')}{c.get('shape', '')} over "
            f"{plural(c.get('group_size'), 'device', 'devices')}"
            for c in w.get("collectives", [])) or "none"
        check = w.get("check") or {}
        rows.append({
            "name": w.get("name", ""),
            "description": w.get("description", ""),
            "collectives": colls,
            "flops": count(per.get("flops"), Kind.ANALYTIC),
            "hbm": n(per.get("hbm_bytes"), "B", Kind.ANALYTIC),
            "comm": n(per.get("comm_bytes"), "B", Kind.ANALYTIC),
            "comm_hlo": n(per.get("comm_bytes_hlo"), "B", Kind.ANALYTIC),
            "xla_flops": count(xla.get("flops"), Kind.COMPILER_ESTIMATE),
            "check": "passed" if check.get("passed") else "failed" if check else "not run",
            "t_math": n(b.get("t_math"), "s", kind),
            "t_mem": n(b.get("t_mem"), "s", kind),
            "t_comm": n(b.get("t_comm"), "s", kind),
            "lower": n(b.get("lower_bound"), "s", kind),
            "upper": n(b.get("upper_bound"), "s", kind),
            "binding": b.get("binding", ""),
            "comm_intensity": Num(format_intensity(b["comm_intensity"]), Kind.ANALYTIC.value)
            if b.get("comm_intensity") else Num("no communication"),
            "measured": n(w.get("measured_seconds"), "s", Kind.MEASURED),
        })
    crit = next(iter(bounds.values()), {}).get("critical_intensity")
    return {
        "available": True,
        "devices": str(sh.get("devices", "")),
        "note": sh.get("note", ""),
        "emulated": bool(sh.get("emulated")),
        "rows": rows,
        "peak": n(budget.get("peak"), "FLOP/s", kind),
        "bandwidth": n(budget.get("bandwidth"), "B/s", kind),
        "interconnect": n(budget.get("interconnect"), "B/s", kind),
        "critical": Num(format_intensity(crit), kind) if crit else Num("unknown"),
        "steps": _sharded_steps(sh),
    }


def _batch_text(batch: Mapping[str, Any] | None, mesh: str) -> str:
    if not batch:
        return f"arguments as declared; mesh {mesh}"
    return f"B={batch['global']} ({batch['per_device']} per device); mesh {mesh}"


def _ab_collective(row: Mapping[str, Any], kind: str) -> dict[str, Any]:
    c, priced = row["collective"], row["priced"] or {}
    trips = c.get("trip_count", 1)  # results saved before loops were read: once
    loops = c.get("loops") or []
    groups = c.get("replica_groups")
    if groups:
        groups_text = (f"{len(groups)} x {len(groups[0])}: "
                       + "".join("{" + ",".join(map(str, g)) + "}" for g in groups[:2])
                       + (" ..." if len(groups) > 2 else ""))
    else:
        groups_text = "unknown" if c.get("group_size") is None else "all devices"
    return {
        "workload": row["workload"],
        "op": c.get("op", ""),
        "array": f"{c.get('dtype', '')}{c.get('shape', '')}",
        "groups": groups_text,
        "sent": n(c.get("bytes_per_device"), "B", Kind.ANALYTIC),
        "runs": ("unknown (a loop without a known trip count; counted once)" if trips is None
                 else f"{trips} ({plural(len(loops), 'loop', 'loops')})" if loops else "1"),
        "steps": count(priced.get("steps"), Kind.ANALYTIC),
        "t_latency": n(priced.get("t_latency"), "s", kind),
        "t_bandwidth": n(priced.get("t_bandwidth"), "s", kind),
    }


def _jax_roofline_row(r: Mapping[str, Any]) -> dict[str, Any]:
    ours, theirs = r["ours_bytes"], r["jax_bytes"]
    if ours == theirs:
        why = "the same ring formulas: bytes agree"
    elif r["in_loops"] and theirs and ours:
        why = (f"jax costs a loop body once; the HLO runs its collectives {r['collectives']} "
               f"times per step ({ours / theirs:.3g} x its bytes)")
    else:
        why = "differ: see the collectives table"
    return {
        "name": r["name"],
        "ours_bytes": n(ours, "B", Kind.ANALYTIC),
        "jax_bytes": n(theirs, "B", Kind.ANALYTIC),
        "ours_steps": count(r["ours_steps"], Kind.ANALYTIC),
        "jax_latency": count(r["jax_latency"], Kind.ANALYTIC),
        "ours_flops": count(r["ours_flops"], Kind.ANALYTIC),
        "jax_flops": count(r["jax_flops"], Kind.ANALYTIC),
        "why": why,
    }


def _emulated_rows(em: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for r in em.get("rows", []):
        ratio_value = r["ratio"]
        rows.append({
            "name": r["name"],
            "measured": n(r["measured"], "s", Kind.MEASURED),
            "per_device": n(r["t_math_measured_peak"], "s", Kind.MEASURED),
            "serialised": n(r["serialised"], "s", Kind.MEASURED),
            "ratio": ratio(ratio_value, Kind.MEASURED, 3),
            "devices": str(r["devices"]),
        })
    return rows


def _sharded_steps(sh: Mapping[str, Any]) -> dict[str, Any]:
    """Display strings of the alpha-beta model
    (:func:`roofline_report.analysis.study.step_study`)."""
    model = sh.get("steps_model") or {}
    if not model:
        return {"available": False}
    kind = model.get("kind", Kind.HYPOTHETICAL.value)
    budget = model["budget"]
    rows = []
    for r in model["rows"]:
        crit = r["critical_batch"]
        batch = r["batch"]
        if batch is None:
            crit_text = Num("no batch known")
        elif r["t_comm"] == 0:
            crit_text = Num("no communication")
        elif crit is None:
            crit_text = Num("none: communication grows as fast as the math")
        else:
            crit_text = Num(f"B ≈ {crit:,.0f}", kind)
        rows.append({
            "name": r["name"],
            "batch": _batch_text(batch, r["mesh"]),
            "t_math": n(r["t_math"], "s", kind),
            "t_mem": n(r["t_mem"], "s", kind),
            "t_latency": n(r["t_comm_latency"], "s", kind),
            "t_bandwidth": n(r["t_comm_bandwidth"], "s", kind),
            "t_comm": n(r["t_comm"], "s", kind),
            "lower": n(r["lower_bound"], "s", kind),
            "upper": n(r["upper_bound"], "s", kind),
            "binding": r["binding"],
            "critical": crit_text,
        })
    pr = model["projection"]
    pkind = pr["kind"]
    projection = []
    for r in pr["rows"]:
        if not r["available"]:
            projection.append({"name": r["name"], "devices": str(r["devices"]),
                               "available": False, "reason": r["reason"]})
            continue
        projection.append({
            "name": r["name"], "devices": str(r["devices"]), "available": True,
            "link": r["link"], "batch": f"B={r['global_batch']:,}",
            "t_math": n(r["t_math"], "s", pkind), "t_mem": n(r["t_mem"], "s", pkind),
            "t_latency": n(r["t_comm_latency"], "s", pkind),
            "t_bandwidth": n(r["t_comm_bandwidth"], "s", pkind),
            "lower": n(r["lower_bound"], "s", pkind), "binding": r["binding"],
        })
    em = model.get("emulated") or {}
    emulated = _emulated_rows(em)
    ratios = [r["ratio"] for r in em.get("rows", []) if r.get("ratio")]
    links = [f"{link['name']} {format_si(link['egress'], 'B/s')} per direction, "
             f"{format_si(link['latency']['value'], 's')} per step (assumed)"
             for link in pr["links"]]
    return {
        "available": True,
        "latency": n(budget["latency"], "s", kind),
        "interconnect": n(budget["interconnect"], "B/s", kind),
        "algorithms": list(model["algorithms"].values()),
        "rows": rows,
        "collectives": [_ab_collective(r, kind) for r in model["collectives"]],
        "jax_roofline": [_jax_roofline_row(r) for r in model["jax_roofline"]],
        "emulated": emulated,
        "emulated_range": (f"{min(ratios):.2g}–{max(ratios):.2g}" if len(ratios) > 1
                           else f"{ratios[0]:.2g}" if ratios else ""),
        "projection": projection,
        "preset": pr["preset"],
        "peak": n(pr["peak"], "FLOP/s", pkind),
        "peak_dtype": pr["peak_dtype"],
        "hbm": n(pr["hbm_bandwidth"], "B/s", pkind),
        "links": links,
        "domain": str(pr["domain"] or ""),
    }
