"""Rendering (no jax): results.json -> view model -> one section tree -> HTML and Markdown, all
pure functions.

The view model holds display strings only (every number already formatted, with its kind, by
``report/format.py``); ``report/sections.py`` turns it into one tree of blocks, which
``report/html.py`` and ``report/markdown.py`` render. Jinja2 (StrictUndefined, autoescaping)
only lays out the page around it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from roofline_report import analysis
from roofline_report.analysis import levels as levels_mod
from roofline_report.analysis import predict, words
from roofline_report.analysis.roofs import ComputeRoof, Floor, RoofSet
from roofline_report.analysis.seed_model import predicted_seconds
from roofline_report.ingest.view import trace_view
from roofline_report.kinds import Kind
from roofline_report.report import figures as figs
from roofline_report.report import meta, page, sections, sharding_view
from roofline_report.report.format import (
    KIND_MARKERS,
    Num,
    count,
    n,
    percent,
    percent_text,
    plural,
    ratio,
)
from roofline_report.units import format_binary, format_intensity, format_si

__all__ = ["KIND_MARKERS", "Num", "Rendered", "count", "n", "ratio", "render", "view_model"]


# --- the view model -------------------------------------------------------------------------

def view_model(results: Mapping[str, Any], assumptions: analysis.Assumptions | None = None
               ) -> dict[str, Any]:
    """Everything the report shows, as display strings and figure outputs: the observations in
    ``results`` analysed under ``assumptions`` (default: the budgets the run was given)."""
    a = assumptions or analysis.assumptions_for(results)
    return _view_model(analysis.analyse(results, a))


def _view_model(results: Mapping[str, Any]) -> dict[str, Any]:
    """The view model of observations already extended by :func:`analysis.analyse`."""
    seed = results["seed"]
    hyp = results["budgets"]["hypothetical"]
    peak = float(hyp["peak"]["value"])
    bandwidth = float(hyp["bandwidth"]["value"])
    workloads = results["workloads"]
    seed_w = next((w for w in workloads if w["name"] == "seed_tanh_matmul"), None)
    teaching = _teaching(results)
    figures: list[figs.FigureOut] = [
        figs.seed_roofline(seed["model"]),
        figs.doubled_traffic(seed["experiment"], seed["model"]["ridge"]),
    ] if teaching else []
    measured_fig = _measured_roofline(results, peak, bandwidth)
    if measured_fig is not None:
        figures.append(measured_fig)
    sweep_fig = _working_set_figure(results)
    if sweep_fig is not None:
        figures.append(sweep_fig)
    sweep_model = results.get("sweep_model")
    if sweep_model and sweep_model.get("points"):
        figures.append(figs.sweep_trajectories(sweep_model))
        figures.append(figs.sweep_prediction(sweep_model))
    for e in results.get("experiments", []) or []:
        fig_data = (e.get("details") or {}).get("figure")
        if fig_data and fig_data.get("series"):
            figures.append(figs.experiment_figure(e["id"], e["title"], fig_data))
    kernel_views = _kernel_views(results)
    figures += [v["figure_out"] for v in kernel_views if v["figure_out"] is not None]
    sharding = results.get("sharding", {})
    if sharding.get("available") and sharding.get("model", {}).get("bounds"):
        figures.append(figs.comm_times(sharding["model"]))
        if sharding["model"].get("series"):
            figures.append(figs.comm_scaling(sharding["model"]))
    projection = (sharding.get("steps_model") or {}).get("projection") or {}
    if sharding.get("available") and any(r.get("available") for r in projection.get("rows", [])):
        figures.append(figs.comm_projection(projection))
    return {
        "generator": results["generator"],
        "env": _environment(results["environment"]),
        "kinds": [{"value": k.value, "label": k.label, "marker": KIND_MARKERS[k.value],
                   "description": k.description} for k in Kind],
        "budgets": {
            "peak": n(peak, "FLOP/s", Kind.HYPOTHETICAL),
            "bandwidth": n(bandwidth, "B/s", Kind.HYPOTHETICAL),
            "ridge": Num(format_intensity(seed["model"]["ridge"]), Kind.HYPOTHETICAL.value),
            "source": hyp.get("source", ""),
        },
        "seed": _seed_workload(seed_w) if seed_w else None,
        "model": _model(seed["model"]),
        "experiment": _experiment(seed["experiment"]),
        "exercise": _exercise(seed["exercise"]),
        "measured": _measured(results, seed_w),
        "run_note": str(results.get("run_note", "")),
        "catalog": [_without_model(_catalog_row(w), w) for w in workloads],
        "reconciliation": [_accounting_without_model(_reconciliation(w), w)
                           for w in workloads if w.get("reconciliation")],
        "sharding": sharding_view.sharding(sharding),
        "lab": _lab(results),
        "sweeps": _sweeps(results),
        "preset": _preset(results["budgets"].get("preset"), results),
        "figures": {f.name: f for f in figures},
        "skipped": list(results.get("skipped", [])),
        "parts": {"teaching": teaching},
        "programs": [_program_view(w) for w in workloads if w.get("user") and not w.get("trace")],
        "trace": trace_view(results),
        "kernels": kernel_views,
    }


# --- the per-kernel roofline ---------------------------------------------------------------

KERNEL_ROWS = 15  # kernels shown per workload (the rest are summed in one line)
OVERLAP_SAID = 1.05  # summed kernel time over busy time above which the overlap is stated
KERNEL_POINTS = 12  # kernels placed on the figure


def _kernel_views(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The per-kernel view of every workload that has one: the user's first."""
    roof_set = analysis.kernel_roofs(results, _roof_sets(results))
    views = [_kernel_view(w, roof_set, i) for i, w in enumerate(results["workloads"])
             if w.get("kernel_view")]
    return sorted(views, key=lambda v: not v["user"])


def _kernel_view(w: Mapping[str, Any], roof_set: RoofSet, index: int) -> dict[str, Any]:
    kv = w["kernel_view"]
    timing = kv.get("timing")
    rows = []
    for r in kv["rows"][:KERNEL_ROWS]:
        rows.append({
            "name": str(r["name"]), "category": str(r["category"]),
            "kind": str(r.get("kind") or ""),
            "source": str(r.get("source") or r.get("op_name") or ""),
            "launches": count(r["launches"], Kind.MEASURED) if r["launches"] is not None
            else count(r["trips"], Kind.ANALYTIC),
            "time": n(r["seconds"], "s", Kind.MEASURED),
            "share": percent(r["share"], Kind.MEASURED),
            "flops": count(r["flops"], Kind.ANALYTIC),
            "bytes": n(r["bytes"], "B", Kind.ANALYTIC),
            "intensity": Num(format_intensity(r["intensity"]) if r["intensity"] else "0",
                             Kind.ANALYTIC.value),
            "achieved": n(r["achieved"], "FLOP/s", Kind.MEASURED) if r["achieved"]
            else Num("—"),
            # Held to assumed budgets, a share of roof, a prediction and its error are as
            # hypothetical as the budgets; to this machine's roofs, measured.
            "fraction": percent(r["fraction"], roof_set.kind),
            "binding": str(r["binding"] or "unknown"),
            "predicted": n(r.get("predicted"), "s", roof_set.kind),
            "error": percent(r.get("error"), roof_set.kind),
        })
    rest = kv["rows"][KERNEL_ROWS:]
    more = ""
    if rest:
        share = sum(r["share"] or 0.0 for r in rest)
        more = (f"{plural(len(rest), 'more kernel', 'more kernels')} take "
                f"{percent_text(share)} of the summed kernel time.")
    categories = [{"title": c["title"], "kernels": count(c["kernels"], Kind.ANALYTIC),
                   "time": n(c["seconds"], "s", Kind.MEASURED),
                   "share": percent(c["share"], Kind.MEASURED),
                   "flops": count(c["flops"], Kind.ANALYTIC),
                   "bytes": n(c["bytes"], "B", Kind.ANALYTIC)} for c in kv["categories"]]
    coverage: tuple[str | Num, ...] = ()
    if timing:
        rem = timing["remainder"]
        m = Kind.MEASURED
        coverage = (
            f"Traced over {plural(timing['calls'], 'call', 'calls')}: per call the program ran ",
            n(timing["program_s"], "s", m), ", at least one kernel ran during ",
            n(timing["busy_s"], "s", m), " (coverage ", percent(timing["coverage"], m),
            "), and the kernels' times sum to ", n(timing["kernel_sum_s"], "s", m),
            ". The rest: dispatch ", n(rem["dispatch_s"], "s", m), ", loop control ",
            n(rem["loop_control_s"], "s", m), ", gaps between kernels ",
            n(rem["gaps_s"], "s", m), ".")
        overlap = timing["kernel_sum_s"] / timing["busy_s"] if timing["busy_s"] > 0 else 0.0
        if overlap > OVERLAP_SAID:
            # Kernels that ran beside others shared the cores: each one's time is stretched,
            # and its prediction (made as if it ran alone) falls short by as much.
            coverage += (" Kernels ran side by side: their times sum to ", ratio(overlap, m, 3),
                         "× the time at least one ran, so a kernel that shared the device with "
                         "another took longer than it would alone, and its error against the "
                         "prediction (made for a kernel alone) includes that.")
        launches = float(timing.get("launches_per_call") or 0)
        if launches > 1 and rem["gaps_s"] > 0:
            # The gaps between kernels, per launch after the first: the launch cost as this
            # program's trace shows it, beside the launch ceiling measured on a chain.
            per = rem["gaps_s"] / (launches - 1)
            coverage += (" That is ", n(per, "s", m), " of gap per launch after the first",
                         *((" (the launch ceiling measured on a chain of kernels: ",
                            n(roof_set.launch, "s", m), ")")
                           if roof_set.launch and roof_set.kind is Kind.MEASURED else ()), ".")
        if timing.get("overhead"):
            coverage += (" A traced call took ", ratio(timing["overhead"], m, 3),
                         "× an untraced one.")
    figure_out = None
    points = [figs.KernelPoint(r["name"], r["intensity"], r["achieved"], r["share"] or 0.0)
              for r in kv["rows"][:KERNEL_POINTS]
              if r["intensity"] and r["achieved"] and r["share"]]
    # Named from the workload's name alone (unique in a run), so its anchor stays when the
    # workload set changes.
    name = "kernels_" + meta.workload_anchor(str(w["name"])).removeprefix("w-")
    # A figure for the user's workloads and the seed: a figure per catalog workload would
    # double the time to re-render; their tables hold the same numbers.
    if points and (w.get("user") or w["name"] == analysis.SEED_NAME):
        title = f"Kernels of {w['title']} on the roofline"
        desc = (f"The {plural(len(points), 'kernel', 'kernels')} with the most time, placed at "
                "their boundary intensity and measured FLOP/s under "
                f"{roof_set.label}; marker area grows with the time share.")
        figure_out = figs.kernel_roofline(name, title, desc, roof_set, points,
                                          str(w.get("dtype", "")))
    return {
        "title": str(w["title"]), "user": bool(w.get("user")),
        "summary": (f"{plural(kv['count'], 'kernel', 'kernels')}, "
                    f"{plural(kv['launches'], 'launch', 'launches')} per call; roofs: "
                    f"{kv['roofs'] or 'none'}."
                    + ("" if roof_set.kind is Kind.MEASURED else
                       " No ceilings were measured on the machine that ran it, so the kernels "
                       f"are held to the spec sheet of the {roof_set.label} (published figures, "
                       "not measured; a launch cost, where the preset has one, is assumed); "
                       "their predictions are as good as those figures."
                       if roof_set.kind is Kind.SPEC_SHEET else
                       " This run measured no ceilings of this machine, so the kernels are held "
                       "to the assumed budgets, without a launch cost; their predictions are as "
                       "hypothetical as the budgets (roofline_report.analyze(..., ceilings=True)"
                       " or a run of generate.py measures them).")),
        "coverage": coverage,
        "unavailable": "" if timing else f"Per-kernel times not available: {kv['timing_reason']}.",
        "rows": rows, "more": more, "categories": categories,
        "opportunities": [_opportunity(o, roof_set.kind) for o in kv["opportunities"]],
        "reconciliation": _kernel_reconciliation(kv["reconciliation"]),
        "figure": name if figure_out is not None else None, "figure_out": figure_out,
    }


def _opportunity(o: Mapping[str, Any], roofs: Kind) -> tuple[str | Num, ...]:
    """One opportunity as inline parts, each number with its kind (``roofs``: the kind of the
    roofs the kernels are held to)."""
    share = percent(o.get("share"), Kind.MEASURED)
    if o["what"] == "launch-bound":
        return (plural(o["kernels"], "launch-bound kernel takes", "launch-bound kernels take")
                + " ", share, " of the summed kernel time: each does less work than one "
                "launch's fixed cost, so fusing it into a neighbour removes that time.")
    if o["what"] == "data movement":
        return ("Copies, transposes and other data movement take ", share, " of the summed "
                f"kernel time ({plural(o['kernels'], 'kernel', 'kernels')}, ",
                n(o["bytes"], "B", Kind.ANALYTIC), " per call moved, no arithmetic).")
    if o["what"] == "furthest below its roof":
        return (f"{o['kernel']} is the kernel furthest below its roof: ",
                percent(o["fraction"], roofs), f" of its {o['binding']} roof, ", share,
                " of the summed kernel time.")
    return (f"The largest kernel, {o['kernel']} ({o['category']}), takes ", share,
            " of the time.")


def _kernel_reconciliation(r: Mapping[str, Any]) -> tuple[str | Num, ...]:
    """The kernels' flops against our program count, as inline parts (counts: analytic)."""
    a = Kind.ANALYTIC
    flops = r["flops"]
    if flops["program"] is None:
        return ("No program count to reconcile the kernel sum with.",)
    if flops["equal"] and r["transcendentals"]["equal"] and not r["rewrites"]:
        return ("The kernels' flops sum to ", count(flops["kernels"], a),
                ", equal to our program count.")
    parts: list[str | Num] = ["The kernels' flops sum to ", count(flops["kernels"], a),
                              ", our program count is ", count(flops["program"], a),
                              "; the compiler's rewrites: "]
    for i, x in enumerate(r["rewrites"]):
        parts += ["; " if i else "", f"{x['cause']} (",
                  Num(f"{x['amount']:+,} {x['quantity']}", a.value), ")"]
    parts.append(".")
    left = [(q, v) for q, v in r["unexplained"].items() if v]
    if left:
        parts.append(" Not explained by a rewrite: ")
        for i, (q, v) in enumerate(left):
            parts += [", " if i else "", f"{q} ", Num(f"{v:+,}", a.value)]
        parts.append(".")
    return tuple(parts)


def _environment(env: Mapping[str, Any]) -> list[tuple[str, str]]:
    names = [("backend", "backend"), ("device_kind", "device"), ("device_count", "devices"),
             ("cpu_model", "CPU"), ("cpu_count", "CPU cores available"),
             ("compute_capability", "compute capability"),
             ("device_memory_bytes", "device memory"), ("platform", "platform"),
             ("python", "Python"), ("jax", "jax"), ("jaxlib", "jaxlib"), ("numpy", "NumPy")]
    rows = []
    for key, label in names:
        if key in env:
            value = env[key]
            text = format_si(value, "B") if key == "device_memory_bytes" else str(value)
            rows.append((label, text))
    return rows


def _seed_workload(w: Mapping[str, Any]) -> dict[str, Any]:
    low = w.get("lowering", {})
    check = w.get("check", {})
    xla = w.get("xla", {})
    mem = w.get("memory", {})
    ce = Kind.COMPILER_ESTIMATE
    return {
        "args": ", ".join(f"{a['dtype']}{a['shape']}" for a in w.get("args", [])),
        "lowering_available": bool(low.get("available")),
        "lowering_reason": low.get("reason", ""),
        "ops": sorted(low.get("ops", {}).items()),
        "required": [(op, op not in low.get("missing_ops", [])) for op in low.get(
            "required_ops", [])],
        "stablehlo_text": low.get("stablehlo_text", ""),
        "compiled_text": low.get("compiled_text", ""),
        "lower_s": n(low.get("lower_s"), "s", Kind.MEASURED),
        "compile_s": n(low.get("compile_s"), "s", Kind.MEASURED),
        "check": {
            "available": check.get("available", True) and "passed" in check,
            "reason": check.get("reason", ""),
            "passed": check.get("passed", False),
            "max_abs": ratio(check.get("max_abs_error"), Kind.MEASURED, 3),
            "max_rel": ratio(check.get("max_rel_error"), Kind.MEASURED, 3),
            "rtol": f"{check.get('rtol', 0):g}",
            "atol": f"{check.get('atol', 0):g}",
            "tolerance": _tolerance(check),
            "note": str(check.get("note", "")),
        },
        "xla_available": bool(xla.get("available")),
        "xla_reason": xla.get("reason", ""),
        "xla": [(k, count(v, ce)) for k, v in sorted(xla.get("values", {}).items())],
        "xla_raw": [(k, count(v, ce)) for k, v in sorted(xla.get("raw", {}).items())],
        "memory_available": bool(mem.get("available")),
        "memory": [(k.replace("_in_bytes", "").replace("_", " "), n(v, "B", ce))
                   for k, v in sorted(mem.get("values", {}).items())],
    }


def _model(m: Mapping[str, Any]) -> dict[str, Any]:
    rows = []
    for c, x, mc, r, b in zip(m["contracts"], m["intensity"], m["memory_ceiling"],
                              m["roofline"], m["bound"], strict=True):
        rows.append({
            "n": str(c["m"]),
            "flops": count(c["flops"], Kind.ANALYTIC),
            "bytes": count(c["minimum_bytes"], Kind.ANALYTIC),
            "intensity": Num(format_intensity(x), Kind.ANALYTIC.value),
            "memory_ceiling": n(mc, "FLOP/s", Kind.HYPOTHETICAL),
            "ceiling": n(r, "FLOP/s", Kind.HYPOTHETICAL),
            "bound": b,
        })
    return {"rows": rows, "ridge": Num(format_intensity(m["ridge"]), Kind.HYPOTHETICAL.value),
            "ridge_size": Num(f"{m['ridge_square_size']:g}", Kind.HYPOTHETICAL.value)}


def _experiment(e: Mapping[str, Any]) -> dict[str, Any]:
    rows = []
    for size, x, xr, r, rv, q in zip(e["sizes"], e["intensity"], e["reduced_intensity"],
                                     e["roofline"], e["revised"], e["ratio"], strict=True):
        rows.append({
            "n": str(size),
            "intensity": Num(format_intensity(x), Kind.ANALYTIC.value),
            "reduced": Num(format_intensity(xr), Kind.ANALYTIC.value),
            "ceiling": n(r, "FLOP/s", Kind.HYPOTHETICAL),
            "revised": n(rv, "FLOP/s", Kind.HYPOTHETICAL),
            "ratio": ratio(q, Kind.HYPOTHETICAL),
        })
    return {"rows": rows}


def _exercise(x: Mapping[str, Any]) -> dict[str, Any]:
    (m, k), (_, nn) = x["shapes"]
    return {
        "shapes": f"({m}, {k}) and ({k}, {nn})",
        "itemsize": str(x["itemsize"]),
        "flops": count(x["flops"], Kind.ANALYTIC),
        "bytes": count(x["minimum_bytes"], Kind.ANALYTIC),
        "intensity": Num(f"{x['intensity']:.6g} FLOP/B", Kind.ANALYTIC.value),
        "fraction": str(Fraction(int(x["flops"]), int(x["minimum_bytes"]))),
        "bw_times_intensity": n(x["bandwidth_times_intensity"], "FLOP/s", Kind.HYPOTHETICAL),
        "peak": n(x["peak"], "FLOP/s", Kind.HYPOTHETICAL),
        "bandwidth": n(x["bandwidth"], "B/s", Kind.HYPOTHETICAL),
        "bound": x["bound"],
        # The comparison the solution states, from the numbers it states.
        "relation": words.relation(x["intensity"], x["peak"] / x["bandwidth"]),
        "m": str(m), "k": str(k), "n": str(nn),
    }


def _timing_rows(t: Mapping[str, Any]) -> dict[str, Any]:
    s = t["per_call"]
    meas = Kind.MEASURED
    return {
        "median": n(s["median"], "s", meas),
        "min": n(s["min"], "s", meas),
        "q1": n(s["q1"], "s", meas),
        "q3": n(s["q3"], "s", meas),
        "iqr": n(s["iqr"], "s", meas),
        "samples": str(s["n"]),
        "outliers": str(s.get("outliers", 0)),
        "inner": str(t.get("inner_reps", 1)),
        "unstable": bool(s.get("unstable", False)),
        "spread": percent_text(s.get("spread", 0)),
        "method": t.get("method", ""),
    }


def _measured(results: Mapping[str, Any], seed_w: Mapping[str, Any] | None) -> dict[str, Any]:
    ceilings = results.get("ceilings", {})
    out: dict[str, Any] = {"timing": None, "timing_reason": "", "achieved": None,
                           "seed_binding": "",
                           "ceilings": None,
                           "ceilings_reason": ceilings.get("reason", ""), "placement": None,
                           "accuracy": ()}
    if seed_w is not None:
        t = seed_w.get("timing", {})
        if t.get("available"):
            out["timing"] = _timing_rows(t)
        else:
            out["timing_reason"] = t.get("reason", "not measured")
        a = seed_w.get("achieved", {})
        if a.get("available"):
            out["achieved"] = {
                "flops_per_s": n(a["flops_per_s"], "FLOP/s", Kind.MEASURED),
                "bytes_per_s": n(a["bytes_per_s"], "B/s", Kind.MEASURED),
            }
    if ceilings.get("available"):
        rows = []
        for group, unit in (("compute", "FLOP/s"), ("bandwidth", "B/s")):
            for e in ceilings.get(group, []):
                rows.append({
                    "group": group,
                    "name": e.get("name", ""),
                    "value": n(e.get("value"), unit, Kind.MEASURED),
                    "available": bool(e.get("available")),
                    "reason": e.get("reason", ""),
                    "unstable": bool(((e.get("timing") or {}).get("per_call") or {})
                                     .get("unstable", False)),
                })
        launch = ceilings.get("launch") or {}
        if launch:
            rows.append({"group": "launch", "name": "one more kernel in a program",
                         "value": n(launch.get("value"), "s", Kind.MEASURED),
                         "available": bool(launch.get("available")),
                         "reason": launch.get("reason", ""),
                         "unstable": bool(((launch.get("timing") or {}).get("per_call") or {})
                                          .get("unstable", False))})
        d = ceilings.get("dispatch", {})
        if d.get("enqueued"):
            rows.append({"group": "dispatch", "name": "one tiny call among many enqueued",
                         "value": n(d.get("enqueued"), "s", Kind.MEASURED), "available": True,
                         "reason": "",
                         "unstable": bool(((d.get("timing_enqueued") or {}).get("per_call")
                                           or {}).get("unstable", False))})
        rows.append({"group": "dispatch", "name": "one tiny call",
                     "value": n(d.get("value"), "s", Kind.MEASURED),
                     "available": bool(d.get("available")), "reason": d.get("reason", ""),
                     "unstable": bool(((d.get("timing") or {}).get("per_call") or {})
                                      .get("unstable", False))})
        out["ceilings"] = rows
        out["placement"] = _placements(results)
        out["accuracy"] = _accuracy(results)
        out.update(_levels_and_rates(results))
        seed_row = next((p for p in out["placement"] if seed_w and p["title"] == seed_w["title"]),
                        None)
        if seed_row is not None:
            out["seed_binding"] = _BINDING_SENTENCES[seed_row["binding"]]
    return out


_BINDING_SENTENCES = {
    "dispatch": "On this machine the seed is bound by the cost of one call (the dispatch floor "
                "and its kernels' launches), not by the compute or memory ceilings.",
    "memory": "On this machine the seed's largest term is memory traffic.",
    "compute": "On this machine the seed's largest term is compute.",
}


def _roof_sets(results: Mapping[str, Any]) -> analysis.Roofs:
    roofs: analysis.Roofs = results["roofs"]
    return roofs


def _placement(w: Mapping[str, Any], roof_set: RoofSet) -> dict[str, Any] | None:
    """Where a workload sits under ``roof_set``: the compute roof of its dtype, the bandwidth
    roof of the level holding its minimum traffic, the dispatch floor; None without a model."""
    an = w.get("analytic") or {}
    if "flops" not in an:
        return None
    compute = roof_set.compute_for(str(w.get("dtype", "")))
    memory = roof_set.bandwidth_for(an["minimum_bytes"])
    if compute is None or memory is None:
        return None
    x = an["flops"] / an["minimum_bytes"]
    roof_at = roof_set.roof_at(an["flops"], an["minimum_bytes"], str(w.get("dtype", "")))
    dispatch = roof_set.dispatch or 0.0
    terms = {"compute": an["flops"] / compute.value,
             "memory": an["minimum_bytes"] / memory.value,
             "dispatch": dispatch}
    binding = max(terms, key=lambda k: terms[k])
    predicted = predicted_seconds(an["flops"], an["minimum_bytes"], compute.value,
                                  memory.value, dispatch)
    model = w.get("prediction") if roof_set.kind is Kind.MEASURED else None
    if model:  # the model of the compiled program (kernels, rates, levels), when it has one
        predicted = float(model["seconds"])
        binding = {"alu": "compute", "overhead": "dispatch"}.get(
            model["binding"], model["binding"])
    return {"intensity": x, "roof_at": roof_at,
            "predicted": predicted, "binding": binding, "compute": compute, "memory": memory,
            "ridge": compute.value / memory.value}


def _placements(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    roof_set = _roof_sets(results).measured
    if roof_set is None:
        return []
    rows = []
    for w in results["workloads"]:
        a = w.get("achieved", {})
        p = _placement(w, roof_set)
        if not a.get("available") or p is None:
            continue
        measured = float(a["seconds"])
        model = w.get("prediction") or {}
        rows.append({
            "error": percent(model.get("error", abs(p["predicted"] - measured) / measured),
                             Kind.MEASURED),
            "why": model.get("why", "no model of the compiled program (no HLO count)"),
            "title": w["title"],
            "intensity": Num(format_intensity(p["intensity"]), Kind.ANALYTIC.value),
            "achieved": n(a["flops_per_s"], "FLOP/s", Kind.MEASURED),
            "roof": n(p["roof_at"], "FLOP/s", Kind.MEASURED),
            "roof_name": f"{p['compute'].name}; {p['memory'].level}",
            "fraction": percent(a["flops_per_s"] / p["roof_at"], Kind.MEASURED),
            "binding": p["binding"],
            "predicted": n(p["predicted"], "s", Kind.MEASURED),
            "measured": n(a["seconds"], "s", Kind.MEASURED),
        })
    return rows


def _accuracy(results: Mapping[str, Any]) -> tuple[str | Num, ...]:
    """One sentence on how well the model predicted this run: the median and 90th percentile
    of |predicted - measured| / measured over the workloads and sweep points, and over the
    kernels of at least 50 us."""
    errors = [w["prediction"]["error"] for w in results.get("workloads", [])
              if "error" in (w.get("prediction") or {})]
    for sw in (results.get("sweep_model") or {}).get("workloads", []):
        errors += [abs(pt["predicted_s"] - pt["measured_s"]) / pt["measured_s"]
                   for pt in sw.get("points", [])]
    kernels = [r["error"] for w in results.get("workloads", [])
               for r in (w.get("kernel_view") or {}).get("rows", [])
               if r.get("error") is not None and (r.get("seconds") or 0) >= 50e-6]
    if not errors:
        return ()
    median, p90 = predict.error_summary(errors)
    parts: list[str | Num] = [
        f"Over {plural(len(errors), 'prediction', 'predictions')} of this run (workloads and "
        "sweep points), the median error is ", percent(median, Kind.MEASURED),
        " and the 90th percentile ", percent(p90, Kind.MEASURED)]
    if kernels:
        parts += [f"; over {plural(len(kernels), 'kernel', 'kernels')} of at least 50 µs, the "
                  "median error is ", percent(predict.error_summary(kernels)[0], Kind.MEASURED)]
    return (*parts, ".")


def _levels(results: Mapping[str, Any]) -> tuple[levels_mod.Level, ...]:
    return _roof_sets(results).levels  # found once, by the analysis


def _levels_and_rates(results: Mapping[str, Any]) -> dict[str, Any]:
    """The memory levels found in the working-set sweep and the measured operation rates."""
    c = results.get("ceilings") or {}
    sweep = c.get("working_set")
    levels = [{"level": lv.name, "kernel": lv.kernel,
               "range": figs._range(lv.min_bytes, lv.max_bytes),
               "value": n(lv.value, "B/s", Kind.MEASURED), "rule": lv.rule}
              for lv in _levels(results)]
    if not sweep:
        why = "not measured in this run"
    elif not sweep.get("available"):
        why = str(sweep.get("reason", "not available"))
    else:
        why = "" if levels else "no level found: the rates did not form plateaus"
    rates = [{"name": str(e.get("name", "")),
              "value": n(e.get("value"), "/s", Kind.MEASURED) if e.get("available")
              else Num("not available"),
              "reason": str(e.get("reason", "")),
              "available": bool(e.get("available")),
              "unstable": bool(((e.get("timing") or {}).get("per_call") or {})
                               .get("unstable", False))}
             for e in c.get("rates", [])]
    caches = [f"L{x['level']} {format_binary(x['size'])}" for x in c.get("caches", [])]
    return {"levels": levels, "levels_reason": why, "rates": rates, "caches": caches,
            "level_rule": levels_mod.RULE}


def _working_set_figure(results: Mapping[str, Any]) -> figs.FigureOut | None:
    sweep = (results.get("ceilings") or {}).get("working_set") or {}
    if not sweep.get("available"):
        return None
    series = [figs.SweepSeries(str(k["name"]), tuple(
        (int(p["bytes"]), float(p["value"])) for p in k["points"]
        if p.get("available") and p.get("value"))) for k in sweep["kernels"]]
    bands = [figs.LevelBand(lv.name, lv.kernel, lv.value, lv.min_bytes, lv.max_bytes)
             for lv in _levels(results)]
    caches = [(f"L{x['level']}", int(x["size"]))
              for x in (results.get("ceilings") or {}).get("caches", [])]
    return figs.working_set(series, bands, caches)


def _measured_roofline(results: Mapping[str, Any], peak: float,
                       bandwidth: float) -> figs.FigureOut | None:
    roofs = _roof_sets(results)
    if roofs.measured is None:
        return None
    sets = [roofs.measured, roofs.hypothetical]
    if roofs.spec_sheet is not None and roofs.spec_sheet.complete:
        sets.append(roofs.spec_sheet)
    points = []
    seed_flops = None
    for w in results["workloads"]:
        a, an = w.get("achieved", {}), w.get("analytic", {})
        if a.get("available") and "flops" in an:
            points.append(figs.Point(w["title"], an["flops"] / an["minimum_bytes"],
                                     a["flops_per_s"]))
            if w["name"] == analysis.SEED_NAME:
                seed_flops = an["flops"]
    m = roofs.measured
    title = "Measured roofline of this machine, with the workloads placed"
    compute = ", ".join(f"{r.name} {format_si(r.value, 'FLOP/s')}" for r in m.compute)
    memory = ", ".join(f"{r.name} {format_si(r.value, 'B/s')}" for r in m.bandwidth)
    placed = len(points)
    desc = (f"Measured roofs (solid): {compute}; {memory}. The assumed budgets dashed"
            + (", the spec sheet dotted" if len(sets) > 2 else "") + ". "
            + f"{plural(placed, 'workload is', 'workloads are')} placed at "
            "their analytic intensity and measured FLOP/s.")
    svg, table = figs.roofset_figure("measured_roofline", title, desc, sets, points,
                                     dispatch_floor=m.dispatch, dispatch_work=seed_flops)
    return figs.FigureOut("measured_roofline", title, desc, svg, table,
                          tuple(dict.fromkeys(r.kind.value for r in sets)))


def _catalog_row(w: Mapping[str, Any]) -> dict[str, Any]:
    an = w.get("analytic", {})
    check = w.get("check", {})
    a = w.get("achieved", {})
    t = w.get("timing", {})
    return {
        "title": w["title"],
        "dtype": w["dtype"],
        "args": ", ".join(f"{x['dtype']}{x['shape']}" for x in w.get("args", [])),
        "flops": count(an.get("flops"), Kind.ANALYTIC),
        "bytes": n(an.get("minimum_bytes"), "B", Kind.ANALYTIC),
        "intensity": Num(format_intensity(an["flops"] / an["minimum_bytes"]),
                         Kind.ANALYTIC.value) if "flops" in an else Num("unknown"),
        "check": ("passed" if check.get("passed") else
                  "failed" if "passed" in check else "not run"),
        "check_max_abs": ratio(check.get("max_abs_error"), Kind.MEASURED, 3),
        "check_max_rel": ratio(check.get("max_rel_error"), Kind.MEASURED, 3),
        "check_tolerance": _tolerance(check),
        "check_note": str(check.get("note") or ""),
        "median": n(t["per_call"]["median"], "s", Kind.MEASURED) if t.get("available")
        else Num("not measured"),
        "unstable": bool(t.get("available") and t["per_call"].get("unstable")),
        "achieved": n(a.get("flops_per_s"), "FLOP/s", Kind.MEASURED) if a.get("available")
        else Num("not measured"),
        "user": bool(w.get("user")),
        "anchor": meta.workload_anchor(str(w["name"])),
    }


def _tolerance(check: Mapping[str, Any]) -> str:
    return f"rtol = {check.get('rtol', 0):g}, atol = {check.get('atol', 0):g}"


def _reconciliation(w: Mapping[str, Any]) -> dict[str, Any]:
    rec = w["reconciliation"]
    if not rec.get("rows"):
        return {"title": w["title"], "rows": [], "reason": rec.get("reason", ""),
                "efficiency": None}
    rows = []
    for r in rec["rows"]:
        rows.append({
            "quantity": r["quantity"],
            "analytic": count(r.get("analytic"), Kind.ANALYTIC),
            "ours": count(r.get("ours"), Kind.ANALYTIC),
            "xla": count(r.get("xla"), Kind.COMPILER_ESTIMATE),
            "agree": bool(r.get("agree")),
            "flags": [(f.get("cause", ""), f.get("explanation", "")) for f in r.get("flags", [])],
        })
    eff = rec.get("traffic_efficiency")
    return {"title": w["title"], "rows": rows, "reason": "",
            "efficiency": ratio(eff, Kind.COMPILER_ESTIMATE, 3) if eff else None,
            "program": _program(w.get("compiled") or {}),
            "extra": _extra_columns(rec, rows)}


def _extra_columns(rec: Mapping[str, Any], rows: list[dict[str, Any]]) -> bool:
    """The kernel sum and JAX's estimate beside the three columns, when the run has them."""
    extra = any("kernels" in r or "jax" in r for r in rec["rows"])
    for shown, r in zip(rows, rec["rows"], strict=True):
        shown["kernels"] = count(r.get("kernels"), Kind.ANALYTIC)
        shown["jax"] = count(r.get("jax"), Kind.COMPILER_ESTIMATE)
    return extra


def _program(c: Mapping[str, Any]) -> str:
    """One sentence on the optimized program: kernels, fusions, custom calls, loops."""
    if not c:
        return ""
    parts = [plural(c.get("kernels"), "kernel launch", "kernel launches")]
    fusions = (c.get("fusions") or {}).get("count")
    if fusions:
        parts.append(plural(fusions, "fusion", "fusions"))
    calls = sorted({str(x.get("target", "")) for x in c.get("custom_calls", [])})
    if calls:
        parts.append("custom calls " + ", ".join(calls))
    loops = [x.get("known_trip_count") for x in c.get("while_loops", [])]
    if loops:
        parts.append("loops with trip counts " + ", ".join(str(t) for t in loops))
    colls = c.get("collectives", [])
    if colls:
        parts.append(plural(len(colls), "collective", "collectives"))
    return "The optimized program: " + "; ".join(parts) + "."


def _quantity(q: Mapping[str, Any] | None) -> Num:
    if not q:
        return Num("unknown")
    unit = q.get("unit", "")
    value = q.get("value")
    if value is None:
        return Num("unknown", q.get("kind", ""))
    if unit in ("×", "x", "ratio", "columns", "elements", "") or "FLOP/B" in unit:
        number = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
        if unit == "×":
            return Num(f"{number}×", q.get("kind", ""))
        return Num(number + (f" {unit}" if unit not in ("", "ratio") else ""), q.get("kind", ""))
    return Num(format_si(value, unit), q.get("kind", ""))


def _lab(results: Mapping[str, Any]) -> dict[str, Any]:
    exps = results.get("experiments") or []
    exercises = results.get("exercises") or []
    by_after: dict[str, list[dict[str, Any]]] = {}
    for x in exercises:
        by_after.setdefault(x.get("after", ""), []).append({
            "id": x["id"], "question": x["question"], "solution": list(x.get("solution", []))})
    rows = []
    for e in exps:
        v = e.get("verdict") or {}
        rows.append({
            "id": e["id"],
            "title": e["title"],
            "hypothesis": e.get("hypothesis", ""),
            "prediction": _quantity(e.get("prediction")),
            "prediction_note": (e.get("prediction") or {}).get("note", ""),
            "measurement": _quantity(e.get("measurement")),
            "measurement_note": (e.get("measurement") or {}).get("note", ""),
            "status": v.get("status", "unavailable"),
            "verdict": v.get("text", ""),
            "figure": f"lab_{e['id']}",
            "exercises": by_after.pop(e["id"], []),
        })
    leftover = [x for xs in by_after.values() for x in xs]
    lab = results.get("lab") or {}
    held = sum(1 for r in rows if r["status"] == "held")
    return {"rows": rows, "exercises": leftover, "held": str(held), "count": str(len(rows)),
            "reason": "" if rows else lab.get("reason", "not run")}


def _dims_text(dims: Mapping[str, Any] | None) -> str:
    return ", ".join(f"{k} = {v}" for k, v in sorted(dims.items())) if dims else "not reached"


def _sweeps(results: Mapping[str, Any]) -> dict[str, Any]:
    sm = results.get("sweep_model")
    if not results.get("sweeps"):
        options = results.get("options") or {}
        if options.get("sweeps", True):
            why = "no workload in this run declares a sweep"
        elif options.get("origin") == "python":
            why = "roofline_report.analyze() runs no sweeps"
        else:
            why = "no sweeps in this run (--no-sweeps)"
        return {"available": False, "reason": why}
    if not sm:
        return {
            "available": False,
            "reason": "the sweeps are predicted from this machine's measured ceilings, "
            + ("which this run did not measure"
               if not (results.get("options") or {}).get("ceilings", True)
               else "which could not be measured (see what was not available)"),
        }
    rows = []
    for w in sm["workloads"]:
        med = w.get("median_abs_error")
        rows.append(
            {
                "title": w["title"],
                "points": str(len(w["points"])),
                "predicted": _dims_text(w.get("predicted_crossing")),
                "observed": _dims_text(w.get("observed_crossing")),
                "error": percent(med, Kind.MEASURED) if med is not None else Num("unknown"),
            }
        )
    points = [{"title": w["title"], "size": _dims_text(pt["dims"]),
               "predicted": n(pt["predicted_s"], "s", Kind.MEASURED),
               "measured": n(pt["measured_s"], "s", Kind.MEASURED),
               "error": percent(predict.error(pt["predicted_s"], pt["measured_s"]),
                                Kind.MEASURED),
               "bound": str(pt["predicted_bound"]), "why": str(pt.get("why", ""))}
              for w in sm["workloads"] for pt in w["points"]]
    med = sm.get("median_abs_error")
    return {
        "available": True,
        "rows": rows,
        "point_rows": points,
        "points": str(sm.get("points", 0)),
        "median_error": percent(med, Kind.MEASURED) if med is not None else Num("unknown"),
    }


def _preset(preset: Mapping[str, Any] | None, results: Mapping[str, Any]) -> dict[str, Any]:
    if not preset:
        return {"available": False}
    sp = Kind.SPEC_SHEET
    hbm = preset["hbm_bandwidth"]["value"]
    peaks = []
    for dtype, q in sorted(preset["peaks"].items()):
        if q.get("value"):
            peaks.append(
                {
                    "dtype": dtype,
                    "value": n(q["value"], q.get("unit", "FLOP/s"), sp),
                    "ridge": Num(format_intensity(q["value"] / hbm), sp.value),
                    "note": q.get("note", ""),
                }
            )
    ic = preset.get("interconnect") or {}
    roof_set = _roof_sets(results).spec_sheet
    launch = roof_set.floor("launch") if roof_set is not None else None
    placed = []
    for w in results["workloads"] if roof_set is not None else []:
        p = _placement(w, roof_set) if roof_set is not None else None
        if p is None:
            continue
        roofline, predicted, binding, kind = _spec_prediction(p, launch)
        placed.append(
            {
                "title": w["title"],
                "intensity": Num(format_intensity(p["intensity"]), Kind.ANALYTIC.value),
                "roof_name": p["compute"].name,
                "bound": binding,
                "roofline": n(roofline, "s", sp),
                "time": n(predicted, "s", kind),
            }
        )
    default = roof_set.compute_for("float32") if roof_set is not None else None
    launch_record = preset.get("launch") or {}
    return {
        "available": True,
        "name": preset["name"],
        "chosen": preset.get("chosen", ""),
        "peaks": peaks,
        "hbm": n(hbm, "B/s", sp),
        "interconnect": n((ic.get("bandwidth") or {}).get("value"), "B/s", sp)
        if ic
        else Num("not published"),
        "interconnect_name": ic.get("name", ""),
        "sources": [(s_["title"], s_["url"]) for s_ in preset.get("sources", [])],
        "notes": preset.get("notes", ""),
        "roof_label": default.name if default is not None else "",
        "float32_roof": _float32_roof_text(default),
        "placed": placed,
        "launch": n(launch.seconds, "s", launch.kind) if launch is not None else None,
        "launch_note": launch.provenance if launch is not None else "",
        "launch_sources": [(s_["title"], s_["url"])
                           for s_ in launch_record.get("sources", [])] if launch else [],
        "launch_binds": _launch_binds(placed) if launch is not None else "",
    }


def _float32_roof_text(roof: ComputeRoof | None) -> str:
    """Which spec-sheet roof float32 work is held to, and why that one."""
    if roof is None:
        return "float32 work to no published roof"
    if roof.dtype == "float32" and roof.name.endswith(" tf32"):
        return (f"float32 work to the {roof.name} roof, at which jax runs float32 matrix "
                "products on NVIDIA GPUs by default")
    if roof.dtype == "float32":
        return f"float32 work to the {roof.name} roof"
    return (f"float32 work to the {roof.name} roof: the chip publishes no float32 figure, and "
            "jax runs float32 matrix products there in 16-bit passes by default")


def _spec_prediction(p: Mapping[str, Any], launch: Floor | None
                     ) -> tuple[float, float, str, Kind]:
    """A workload's time on a spec sheet: (the roofline's time max(flops / compute roof,
    minimum bytes / HBM), the predicted time max(that, launch floor), what binds, the predicted
    time's kind). The launch binds only where its floor is above the roofline's time; the kind
    is then the floor's (the weakest input), else spec sheet."""
    roofline = float(p["predicted"])  # a spec sheet has no dispatch floor: the roofline alone
    if launch is not None and words.relation(launch.seconds, roofline) == "above":
        return roofline, launch.seconds, "launch", launch.kind
    return roofline, roofline, words.bound(p["intensity"], p["ridge"]), Kind.SPEC_SHEET


def _launch_binds(placed: Sequence[Mapping[str, Any]]) -> str:
    """How many of the placed workloads the launch floor binds (those whose roofline time is
    below it), as a sentence; '' when none is placed."""
    total = len(placed)
    bound = sum(1 for r in placed if r["bound"] == "launch")
    if total == 0:
        return ""
    if total == 1:
        return ("The launch floor binds the one workload placed: its roofline time is below it."
                if bound else "The launch floor does not bind the one workload placed: its "
                "roofline time is at or above it.")
    workloads = plural(total, "workload", "workloads")
    if bound == 0:
        return f"The launch floor binds none of the {workloads}: no roofline time is below it."
    if bound == total:
        return f"The launch floor binds all {workloads}: every roofline time is below it."
    times = "time is" if bound == 1 else "times are"
    return (f"The launch floor binds {bound} of the {workloads}, whose roofline {times} below "
            "it; the others keep their roofline time.")


# --- a user's programs ----------------------------------------------------------------------

NO_MODEL = "no analytic model"
#: Leaves an argument may have before its tree is folded to its top levels.
FOLD_AFTER = 8
#: Rows of a folded tree's top levels at most (the rest are summed in one row).
MAX_GROUPS = 24
_PATH_PART = re.compile(r"\[[^\]]*\]|\.[^.\[]+")


def _teaching(results: Mapping[str, Any]) -> bool:
    """Whether the run asked for the seed's teaching sections (runs saved before the option
    existed did: they always had them)."""
    return bool((results.get("options") or {}).get("teaching", True))


def _no_model(w: Mapping[str, Any]) -> bool:
    an = w.get("analytic")
    return not (isinstance(an, Mapping) and "flops" in an)


def _traffic_num(w: Mapping[str, Any]) -> Num:
    t = w.get("argument_traffic") or {}
    if not t:
        return Num(NO_MODEL)
    return Num(f"{format_si(t['minimum_bytes'], 'B')} ({t['basis']})", Kind.ANALYTIC.value)


def _without_model(row: dict[str, Any], w: Mapping[str, Any]) -> dict[str, Any]:
    """A catalog row of a workload without a hand model: says so, shows the argument + result
    bytes (labelled) as its minimum traffic, and its arguments as a summary of their trees."""
    tree = w.get("arguments") or {}
    if tree and not w.get("args"):
        row["args"] = _tree_summary(tree)
    if not _no_model(w):
        return row
    row["flops"] = Num(NO_MODEL)
    row["bytes"] = _traffic_num(w)
    row["intensity"] = Num(NO_MODEL)
    return row


def _accounting_without_model(r: dict[str, Any], w: Mapping[str, Any]) -> dict[str, Any]:
    """Three-way rows of a workload without a hand model: the analytic column says so, and the
    bytes row shows the argument + result bytes, labelled; never a copy of our count."""
    if not _no_model(w) or not r.get("rows"):
        return r
    rows = []
    for row in r["rows"]:
        analytic = _traffic_num(w) if row["quantity"] == "bytes" else Num(NO_MODEL)
        rows.append({**row, "analytic": analytic})
    return {**r, "rows": rows}


def _tree_summary(tree: Mapping[str, Any]) -> str:
    nodes = [a for a in tree.get("arguments", []) if not a.get("static")]
    return (f"{plural(len(nodes), 'argument', 'arguments')}, "
            f"{plural(tree.get('leaf_count', 0), 'array', 'arrays')}, "
            f"{format_si(tree.get('bytes', 0), 'B')}")


def _path_parts(path: str) -> list[str]:
    return _PATH_PART.findall(path) or ([path] if path else [])


def _groups(leaves: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The top levels of a tree: the shallowest depth (1 to 3) with at least 3 groups, each
    with its leaf count, bytes and dtypes."""
    chosen: dict[str, list[Mapping[str, Any]]] = {}
    for depth in (1, 2, 3):
        groups: dict[str, list[Mapping[str, Any]]] = {}
        for leaf in leaves:
            parts = _path_parts(str(leaf["path"]))
            groups.setdefault("".join(parts[:depth]) or "(the argument itself)", []).append(leaf)
        chosen = groups
        if len(groups) >= 3:
            break
    items = sorted(chosen.items(), key=lambda kv: -sum(int(x["bytes"]) for x in kv[1]))
    rows = []
    for prefix, members in items[:MAX_GROUPS]:
        rows.append(_group_row(prefix, members))
    rest = [x for _, members in items[MAX_GROUPS:] for x in members]
    if rest:
        rows.append(_group_row(f"{len(items) - MAX_GROUPS} more", rest))
    return rows


def _group_row(prefix: str, members: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {"path": prefix, "leaves": str(len(members)),
            "bytes": n(sum(int(x["bytes"]) for x in members), "B", Kind.ANALYTIC),
            "dtypes": ", ".join(sorted({str(x["dtype"]) for x in members}))}


def _leaf_row(leaf: Mapping[str, Any]) -> dict[str, Any]:
    return {"path": str(leaf["path"]) or "(the argument itself)", "shape": str(list(leaf["shape"])),
            "dtype": str(leaf["dtype"]), "bytes": n(leaf["bytes"], "B", Kind.ANALYTIC)}


def _bare(leaves: Sequence[Mapping[str, Any]]) -> bool:
    """An argument that is one array (no tree to show)."""
    return len(leaves) == 1 and not leaves[0].get("path")


def _type_name(name: str, leaves: int) -> str:
    return "array" if name in ("ArrayImpl", "ndarray", "ShapeDtypeStruct") and leaves == 1 \
        else name


def _argument_view(node: Mapping[str, Any]) -> dict[str, Any]:
    leaves = list(node.get("leaves", []))
    count_ = int(node.get("leaf_count", 0))
    role = "static" if node.get("static") else "keyword" if node.get("keyword") else ""
    return {
        "name": str(node["name"]),
        "role": role,
        "type": (f"{leaves[0]['dtype']}{list(leaves[0]['shape'])}" if _bare(leaves)
                 else _type_name(str(node.get("type", "")), count_)),
        "bare": _bare(leaves),
        "value": str(node.get("value", "")),
        "leaves": str(count_),
        "bytes": n(node.get("bytes", 0), "B", Kind.ANALYTIC),
        "held": str(node.get("held_leaves", 0)),
        "omitted": str(node.get("omitted", 0)),
        "folded": count_ > FOLD_AFTER,
        "groups": _groups(leaves) if count_ > FOLD_AFTER else [],
        "rows": [_leaf_row(x) for x in leaves],
    }


def _program_view(w: Mapping[str, Any]) -> dict[str, Any]:
    """One of the user's workloads as the subject of the report."""
    tree = w.get("arguments") or {}
    low = w.get("lowering") or {}
    check = w.get("check") or {}
    t = w.get("timing") or {}
    ours = w.get("hlo_count") or {}
    xla = (w.get("xla") or {}).get("values") or {}
    an = w.get("analytic") or {}
    return {
        "title": str(w["title"]),
        "description": str(w.get("description", "")),
        "has_tree": bool(tree),
        "arguments": [_argument_view(a) for a in tree.get("arguments", [])],
        "result": _argument_view(tree["result"]) if tree.get("result") else None,
        "summary": _tree_summary(tree) if tree else "",
        "args": ", ".join(f"{a['dtype']}{a['shape']}" for a in w.get("args", [])),
        "lowering_available": bool(low.get("available")),
        "lowering_reason": str(low.get("reason", "")),
        "lower_s": n(low.get("lower_s"), "s", Kind.MEASURED),
        "compile_s": n(low.get("compile_s"), "s", Kind.MEASURED),
        "program": _program(w.get("compiled") or {}),
        "model": NO_MODEL if _no_model(w) else "",
        "flops_analytic": count(an.get("flops"), Kind.ANALYTIC),
        "flops_ours": count(ours.get("flops") if ours.get("available", True) else None,
                            Kind.ANALYTIC),
        "flops_xla": count(xla.get("flops"), Kind.COMPILER_ESTIMATE),
        "traffic": _traffic_num(w) if _no_model(w) else n(an.get("minimum_bytes"), "B",
                                                            Kind.ANALYTIC),
        "xla_bytes": n(xla.get("bytes accessed"), "B", Kind.COMPILER_ESTIMATE),
        "bytes_ours": n(ours.get("minimum_bytes") if ours.get("available", True) else None,
                        "B", Kind.ANALYTIC),
        "check_available": check.get("available", True) and "passed" in check,
        "check_reason": str(check.get("reason", "")),
        "check_passed": bool(check.get("passed")),
        "check_max_abs": ratio(check.get("max_abs_error"), Kind.MEASURED, 3),
        "check_max_rel": ratio(check.get("max_rel_error"), Kind.MEASURED, 3),
        "check_tolerance": _tolerance(check) if check else "",
        "check_note": str(check.get("note") or ""),
        "check_leaf": str(check.get("leaf") or ""),
        "check_leaves": str(check.get("leaves") or ""),
        "timing": _timing_rows(t) if t.get("available") else None,
        "timing_reason": str(t.get("reason", "not measured")),
        "prediction": _prediction_view(w),
    }


def _prediction_view(w: Mapping[str, Any]) -> dict[str, Any] | None:
    """The model's time for a workload beside its measured median, with the error and, when
    off by more than half, why."""
    model = w.get("prediction")
    if not model or "error" not in model:
        return None
    terms = model["terms"]
    largest = max(terms, key=lambda k: terms[k])
    return {
        "predicted": n(model["seconds"], "s", Kind.MEASURED),
        "error": percent(model["error"], Kind.MEASURED),
        "binding": {"alu": "compute", "memory": "memory traffic",
                    "overhead": "dispatch and launches"}[largest],
        "bytes_source": str(model.get("bytes_source", "")),
        "why": str(model["why"]),
    }


# --- entry points ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Rendered:
    html: str
    markdown: str
    figures: dict[str, str]  # name -> SVG text
    skipped: list[dict[str, str]]  # what was not available, measured or derived


def render(results: Mapping[str, Any], assumptions: analysis.Assumptions | None = None,
           *, title: str | None = None) -> Rendered:
    """Render HTML, Markdown and SVGs from a validated results document (observations), under
    ``assumptions`` (default: the budgets the run was given); ``title`` replaces the page's
    default title."""
    vm = view_model(results, assumptions)
    doc = sections.document(vm)
    context = {"generator": vm["generator"], "kinds": vm["kinds"]}
    page_meta = meta.page_meta(results, title)
    return Rendered(
        html=page.render_html("report.html.j2", doc, meta=page_meta, **context),
        markdown=page.render_markdown("report.md.j2", doc, meta=page_meta.for_markdown(),
                                      **context),
        figures={name: f.svg for name, f in vm["figures"].items()},
        skipped=list(vm["skipped"]),
    )
