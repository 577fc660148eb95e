"""Analysis at render time (no jax): observations + this render's assumptions -> what to show.

results.json holds observations only. Everything derived from them, the seed's model, achieved
rates, reconciliations, placements on the roofs, sweep predictions, the lab's verdicts and
exercises, the communication model, and the list of what was not available, is computed here
from the saved observations and the budgets of *this* render, so ``--from-json`` with
``--peak``/``--bandwidth``/``--interconnect``/``--preset`` re-renders a saved run under other
assumptions, and a fix to the model reaches every saved run and ``compare``.

:func:`analyse` returns the observations extended by the derived values (a plain dict, the shape
the view model reads); the observations themselves are not changed.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from roofline_report.analysis import experiments, explain, reconcile, study
from roofline_report.analysis import kernels as kernels_analysis
from roofline_report.analysis import predict as predict_mod
from roofline_report.analysis import roofs as roofs_mod
from roofline_report.analysis.levels import Level
from roofline_report.analysis.roofs import RoofSet
from roofline_report.analysis.seed_model import (
    DEFAULT_INTERCONNECT,
    SEED_BANDWIDTH,
    SEED_PEAK_FLOPS,
)
from roofline_report.errors import InputError, reason
from roofline_report.kinds import Kind

SEED_NAME = "seed_tanh_matmul"


@dataclass(frozen=True, slots=True)
class Assumptions:
    """The hypothetical budgets and chip preset one render uses."""

    peak: float = SEED_PEAK_FLOPS
    bandwidth: float = SEED_BANDWIDTH
    interconnect: float = DEFAULT_INTERCONNECT
    source: str = "the seed's assumed budgets"
    preset: str | None = None  # a preset by name; None: the run's, or matched to the device

    def __post_init__(self) -> None:
        for name in ("peak", "bandwidth", "interconnect"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise InputError(f"the assumed {name} must be a positive number, got {value!r}")


def assumptions_for(results: Mapping[str, Any], *, peak: float | None = None,
                    bandwidth: float | None = None, interconnect: float | None = None,
                    preset: str | None = None) -> Assumptions:
    """The run's own assumptions, each overridden where this render gives one."""
    saved = results.get("assumptions") or {}
    overridden = any(v is not None for v in (peak, bandwidth, interconnect))
    source = ("assumed budgets given for this rendering" if overridden
              else str(saved.get("source", "the seed's assumed budgets")))
    return Assumptions(
        peak=peak if peak is not None else float(saved.get("peak", SEED_PEAK_FLOPS)),
        bandwidth=bandwidth if bandwidth is not None
        else float(saved.get("bandwidth", SEED_BANDWIDTH)),
        interconnect=interconnect if interconnect is not None
        else float(saved.get("interconnect", DEFAULT_INTERCONNECT)),
        source=source,
        preset=preset,
    )


@dataclass(frozen=True, slots=True)
class Roofs:
    """The roof sets of one render."""

    hypothetical: RoofSet
    measured: RoofSet | None
    spec_sheet: RoofSet | None
    levels: tuple[Level, ...] = ()  # the memory levels found in the working-set sweep
    preset: dict[str, Any] | None = None  # the chip preset drawn, with how it was chosen


def roof_sets(results: Mapping[str, Any], a: Assumptions) -> Roofs:
    preset = preset_record(results, a)
    ceilings = results.get("ceilings") or {}
    levels = roofs_mod.measured_levels(ceilings)
    measured = roofs_mod.measured(ceilings, levels)
    return Roofs(
        hypothetical=roofs_mod.hypothetical(a.peak, a.bandwidth, a.source),
        measured=measured if measured is not None and measured.complete else None,
        spec_sheet=roofs_mod.spec_sheet(preset) if preset else None,
        levels=tuple(levels),
        preset=preset,
    )


def preset_record(results: Mapping[str, Any], a: Assumptions) -> dict[str, Any] | None:
    """The chip preset to draw: this render's, else the run's, else the one matching the
    device; with how it was chosen."""
    from roofline_report import presets

    name = a.preset or (results.get("options") or {}).get("preset")
    if name:
        data = presets.get_preset(str(name)).to_json()
        data["chosen"] = "by name"
        return data
    kind = (results.get("environment") or {}).get("device_kind")
    match = presets.match_device_kind(str(kind)) if kind else None
    if match is None:
        return None
    data = match.to_json()
    data["chosen"] = "matched to this device"
    return data


def analyse(results: Mapping[str, Any], a: Assumptions) -> dict[str, Any]:
    """The observations with every derived value added, under the assumptions ``a``."""
    out: dict[str, Any] = copy.deepcopy(dict(results))
    skipped: list[dict[str, str]] = list(out.get("skipped", []))
    roofs = roof_sets(out, a)
    out["roofs"] = roofs
    out["budgets"] = {"hypothetical": study.budgets_json(
        a.peak, a.bandwidth, source=a.source, interconnect=a.interconnect)}
    if roofs.preset is not None:
        out["budgets"]["preset"] = roofs.preset
    out["seed"] = {
        "model": study.hypothetical_model(a.peak, a.bandwidth),
        "experiment": study.doubled_traffic_experiment(a.peak, a.bandwidth),
        "exercise": study.exercise(48, 24, 12, a.peak, a.bandwidth),
    }
    ceilings = out.get("ceilings") or {}
    if ceilings.get("available") and roofs.measured is not None:
        _default_roofs(ceilings, roofs.measured)
    backend = str((out.get("environment") or {}).get("backend", "cpu"))
    for w in out.get("workloads", []):
        _workload(w, backend)
        _argument_traffic(w)
    _kernel_views(out, roofs)
    for sw in out.get("sweeps", []):
        for p in sw.get("points", []):
            p["analytic"] = _analytic(p.get("analytic"))
            p["achieved"] = _achieved(p["analytic"], p.get("timing"))
    m = roofs.measured
    if m is not None:
        cache = ceilings.get("cache_bytes")
        for w in out.get("workloads", []):
            w["prediction"] = _prediction(w, str(w.get("dtype", "float32")), m)
            _judge(w, m, backend, cache if isinstance(cache, int) else None)
    if out.get("sweeps") and m is not None and m.peak and m.memory_bandwidth:
        out["sweep_model"] = study.sweep_study(out["sweeps"], m.peak, m.memory_bandwidth,
                                               m.dispatch or 0.0,
                                               predictor=_sweep_predictor(m))
        cache = ceilings.get("cache_bytes")
        _explain_sweeps(out["sweeps"], out["sweep_model"], m, backend,
                        cache if isinstance(cache, int) else None)
    measured_ceilings = ceilings if ceilings.get("available") else None
    lab = out.get("lab") or {}
    if lab.get("available", True) and lab.get("experiments"):
        out["experiments"] = experiments.analyse(lab, ceilings=measured_ceilings, peak=a.peak,
                                                 bandwidth=a.bandwidth, roofs=roofs.measured)
        for e in out["experiments"]:
            if e["verdict"]["status"] == "unavailable":
                skipped.append({"what": f"experiment {e['title']}", "reason": e["verdict"]["text"]})
    else:
        out["experiments"] = []
    out["exercises"] = experiments.exercises(peak=a.peak, bandwidth=a.bandwidth,
                                             ceilings=measured_ceilings)
    sharding = out.get("sharding") or {}
    if sharding.get("available"):
        sharding["model"] = study.comm_study(sharding, a.peak, a.bandwidth, a.interconnect,
                                             source=a.source)
        sharding["steps_model"] = _steps_model(sharding, a, roofs.preset, roofs.measured)
        for w in sharding.get("workloads", []):
            check = w.get("check") or {}
            if check and check.get("passed") is False:
                skipped.append({"what": f"sharded workload {w.get('name', '?')}: check",
                                "reason": "result differs from the NumPy reference"})
    out["skipped"] = _unique(skipped)
    out["run_note"] = _run_note(out.get("options") or {})
    return out


def _prediction(record: Mapping[str, Any], dtype: str, roof_set: RoofSet
                ) -> dict[str, Any] | None:
    """The model's prediction for a workload or sweep point, as plain data; None without the
    facts it needs."""
    inventory = record.get("kernels")
    p = None
    if isinstance(inventory, Mapping) and inventory.get("available", True) \
            and inventory.get("kernels"):
        p = predict_mod.predict_from_kernels(inventory, dtype, roof_set)
    if p is None:
        f = predict_mod.facts(record, dtype)
        p = predict_mod.predict(f, roof_set) if f is not None else None
    if p is None:
        return None
    return {"seconds": p.seconds, "terms": dict(p.terms), "binding": p.binding,
            "bytes": p.bytes, "bytes_source": p.bytes_source, "level": p.level,
            "roofs": list(p.roofs), "notes": list(p.notes)}


def _judge(w: dict[str, Any], roof_set: RoofSet, backend: str, cache_bytes: int | None) -> None:
    """The prediction's error against the measured median and, when off or above its roof, the
    likeliest reason: computed once, for every place that shows them."""
    model = w.get("prediction")
    t = w.get("timing") or {}
    median = (t.get("per_call") or {}).get("median") if t.get("available", True) else None
    if not model or not median:
        return
    achieved = w.get("achieved") or {}
    an = w.get("analytic") or {}
    roof = roof_set.roof_at(an["flops"], an["minimum_bytes"], str(w.get("dtype", ""))) \
        if "flops" in an and an.get("minimum_bytes") else None
    above = bool(roof and achieved.get("available") and achieved["flops_per_s"] > roof)
    model["error"] = predict_mod.error(model["seconds"], median)
    model["why"] = explain.explain(model, float(median), w, backend, above_roof=above,
                                   cache_bytes=cache_bytes)


def _sweep_predictor(roof_set: RoofSet) -> Any:
    def predictor(sweep: Mapping[str, Any], point: dict[str, Any]
                  ) -> tuple[float, dict[str, float]] | None:
        p = _prediction(point, str(sweep.get("dtype", "float32")), roof_set)
        if p is None:
            return None
        point["prediction"] = p  # kept for the point's explanation
        t = p["terms"]
        return p["seconds"], {"compute": t["alu"], "memory": t["memory"],
                              "dispatch": t["overhead"]}

    return predictor


def _explain_sweeps(sweeps: list[dict[str, Any]], model: Mapping[str, Any], roof_set: RoofSet,
                    backend: str, cache_bytes: int | None) -> None:
    """Each predicted sweep point's reason, when off by more than half or above its roof, from
    the evidence of that point (as a workload's): added to the model's point as ``why``."""
    by_name = {sw.get("name"): sw for sw in sweeps}
    for row in model.get("workloads", []):
        sw = by_name.get(row.get("name"))
        if sw is None:
            continue
        raw = {_dims_key(p["dims"]): p for p in sw.get("points", [])}
        for pt in row.get("points", []):
            point = raw.get(_dims_key(pt["dims"]))
            prediction = (point or {}).get("prediction")
            if point is None or not prediction:
                pt["why"] = ""
                continue
            dtype = str(sw.get("dtype", ""))
            roof = roof_set.roof_at(pt["flops"], pt["minimum_bytes"], dtype)
            record = {**point, "dtype": dtype}
            pt["why"] = explain.explain(prediction, float(pt["measured_s"]), record, backend,
                                        above_roof=bool(roof and pt["achieved_flops_per_s"] > roof),
                                        cache_bytes=cache_bytes)


def _dims_key(dims: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """A sweep point's dims as a key (the same sizes, in any order)."""
    return tuple(sorted(dims.items()))


def _steps_model(sharding: Mapping[str, Any], a: Assumptions, preset: Mapping[str, Any] | None,
                 measured: RoofSet | None) -> dict[str, Any]:
    """The alpha-beta model of the sharded workloads under this render's budgets, projected on
    this render's chip preset (or the default one), the emulated timings set against this
    machine's measured roofs."""
    return study.step_study(
        sharding, a.peak, a.bandwidth, a.interconnect, source=a.source,
        preset=str(preset["name"]) if preset else None,
        measured_peak=measured.peak if measured is not None else None,
        measured_bandwidth=measured.memory_bandwidth if measured is not None else None,
    )  # fmt: skip


def _default_roofs(ceilings: dict[str, Any], measured: RoofSet) -> None:
    """The roofs the single-roof consumers (the lab, compare) use, named in the ceilings."""
    compute = measured.compute_for("float32")
    bandwidth = measured.bandwidth_for(None)
    ceilings["peak_compute"] = {"value": compute.value if compute else None,
                                "name": compute.name if compute else None}
    ceilings["peak_bandwidth"] = {"value": bandwidth.value if bandwidth else None,
                                  "name": bandwidth.name.removesuffix(" stream")
                                  if bandwidth else None}


def _analytic(a: Any) -> Any:
    if isinstance(a, dict) and "flops" in a and a.get("minimum_bytes"):
        return {**a, "intensity": a["flops"] / a["minimum_bytes"]}
    return a


def _achieved(analytic: Any, timing: Any) -> dict[str, Any]:
    t = timing if isinstance(timing, dict) else {}
    seconds = (t.get("per_call") or {}).get("median") if t.get("available", True) else None
    if not seconds or not isinstance(analytic, dict) or "flops" not in analytic:
        return {"available": False, "reason": "no timing or no analytic model"}
    return {
        "available": True,
        "seconds": seconds,
        "flops_per_s": analytic["flops"] / seconds,
        "bytes_per_s": analytic["minimum_bytes"] / seconds,
        "intensity": analytic["flops"] / analytic["minimum_bytes"],
    }


def _workload(w: dict[str, Any], backend: str) -> None:
    w["analytic"] = _analytic(w.get("analytic"))
    low = w.get("lowering") or {}
    if low.get("available"):
        low["missing_ops"] = [op for op in low.get("required_ops", [])
                              if op not in low.get("ops", {})]
    timing = w.get("timing")
    w["achieved"] = _achieved(w["analytic"], timing)
    ours = w.get("hlo_count") or {}
    xla = w.get("xla") or {}
    analytic = w["analytic"] if isinstance(w["analytic"], dict) and "flops" in w["analytic"] \
        else None
    seconds = w["achieved"].get("seconds")
    if not low.get("available"):
        return
    try:
        w["reconciliation"] = reconcile.reconcile(
            analytic=analytic,
            ours=ours if ours.get("available", True) else {},
            xla=xla.get("raw") if xla.get("available") else None,
            compiled=w.get("compiled"),
            measured_seconds=seconds,
            backend=backend,
        )
    except InputError as exc:
        w["reconciliation"] = {"available": False, "reason": reason(exc)}


ARGUMENT_TRAFFIC = "argument + result bytes"


def _argument_traffic(w: dict[str, Any]) -> None:
    """For a workload without a hand model: the least traffic any implementation needs, every
    argument read once and every result written once, from its argument tree. Labelled as what
    it is; it is not a model of the work."""
    an = w.get("analytic")
    tree = w.get("arguments")
    if (isinstance(an, dict) and "flops" in an) or not isinstance(tree, dict):
        return
    read = int(tree.get("bytes", 0))
    written = int((tree.get("result") or {}).get("bytes", 0))
    if read + written <= 0:
        return
    w["argument_traffic"] = {"minimum_bytes": read + written, "read": read, "written": written,
                             "basis": ARGUMENT_TRAFFIC, "kind": Kind.ANALYTIC.value}


def kernel_roofs(results: Mapping[str, Any], roofs: Roofs) -> RoofSet:
    """The roofs kernels are held to: the measured ones; for a profile read from a trace
    (``results["trace"]``) without them, the spec sheet of its chip where one is drawn; else
    the assumed budgets."""
    if roofs.measured is not None:
        return roofs.measured
    if results.get("trace") and roofs.spec_sheet is not None and roofs.spec_sheet.complete:
        return roofs.spec_sheet
    return roofs.hypothetical


def _kernel_views(out: dict[str, Any], roofs: Roofs) -> None:
    """Each workload's per-kernel roofline, on the measured roofs (else, for a trace, the spec
    sheet's; else the assumed budgets), and the kernel sum and JAX's estimate added to its
    accounting."""
    roof_set = kernel_roofs(out, roofs)
    for w in out.get("workloads", []):
        view = kernels_analysis.kernel_analysis(w, roof_set)
        if view is not None:
            w["kernel_view"] = view
        rec = w.get("reconciliation")
        if rec and rec.get("rows") and (view is not None or w.get("jax_roofline")):
            ours = w.get("hlo_count") or {}
            reconcile.add_kernel_columns(
                rec, kernels=w.get("kernels"), jax_estimate=w.get("jax_roofline"),
                ours=ours if ours.get("available", True) else {},
                rewrites=view["reconciliation"]["rewrites"] if view is not None else None)


def _run_note(options: Mapping[str, Any]) -> str:
    """What this run's options mean for its numbers; only what happened."""
    if not options.get("quick"):
        return ""
    note = "quick mode: fewer timing samples"
    if options.get("sweeps"):
        note += " and a reduced sweep"
    if options.get("sharding"):
        note += "; the sharded analysis ran alongside the other measurements, so timings are " \
                "noisier"
    return note


def _unique(items: list[dict[str, str]]) -> list[dict[str, str]]:
    seen: set[tuple[str, str]] = set()
    out = []
    for item in items:
        key = (item["what"], item["reason"])
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


__all__ = ["Assumptions", "Kind", "Roofs", "analyse", "assumptions_for", "kernel_roofs",
           "preset_record", "roof_sets"]
