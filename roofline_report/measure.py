"""The measuring pipeline (imports jax): lower, check, account, time; returns results.json's dict.

Each step of each workload is attempted on its own: a step that fails is recorded as not available
with its reason (and listed under ``skipped``), and the rest of the report still builds.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jax

from roofline_report import __version__, experiments, lowering, reconcile, study, timing
from roofline_report.errors import reason, scrub_paths
from roofline_report.hlo import count_stablehlo, inspect_compiled, strip_metadata
from roofline_report.model import DEFAULT_INTERCONNECT, SEED_BANDWIDTH, SEED_PEAK_FLOPS
from roofline_report.results import SCHEMA_VERSION
from roofline_report.workloads import Workload, catalog

Progress = Callable[[str], None]
TEXT_LIMIT = 40_000  # characters of HLO text kept per workload
QUICK_SWEEPS = ("matmul", "scale", "attention")  # --quick sweeps these (and user workloads)


@dataclass(frozen=True)
class RunOptions:
    """What to measure. ``peak``/``bandwidth`` are the hypothetical budgets."""

    quick: bool = False
    ceilings: bool = True
    sweeps: bool = True
    sharding: bool = True
    experiments: bool = True
    peak: float = SEED_PEAK_FLOPS
    bandwidth: float = SEED_BANDWIDTH
    interconnect: float = DEFAULT_INTERCONNECT
    budget_source: str = "the seed's assumed budgets"
    preset: str | None = None
    builtin: bool = True
    user_workloads: tuple[Workload, ...] = ()
    config_source: str | None = None
    config_path: str | None = None  # the config file, for the sharding child; not in JSON

    def to_json(self) -> dict[str, Any]:
        return {
            "quick": self.quick,
            "ceilings": self.ceilings,
            "sweeps": self.sweeps,
            "sharding": self.sharding,
            "experiments": self.experiments,
            "note": "quick mode: fewer samples and a reduced sweep; the sharded analysis ran "
                    "alongside the other measurements, so timings are noisier"
                    if self.quick else "",
            "builtin": self.builtin,
            "preset": self.preset,
            "config": self.config_source,
        }


@dataclass
class Skips:
    """Collects what could not be done, for the report and the exit code."""

    items: list[dict[str, str]] = field(default_factory=list)

    def add(self, what: str, reason: str) -> dict[str, Any]:
        self.items.append({"what": what, "reason": reason})
        return {"available": False, "reason": reason}


def run(options: RunOptions, progress: Progress | None = None) -> dict[str, Any]:
    """Measure everything the options ask for and return the results document."""
    say = progress or (lambda _msg: None)
    skips = Skips()
    # The sharded analysis runs in a child process (it needs its own device count). In quick
    # mode it starts now and runs alongside the rest, at the cost of noisier timings (the
    # report says so); otherwise it runs last, on an otherwise idle machine.
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1) if options.sharding else None
    pending_sharding = None
    if pool is not None and options.quick:
        pending_sharding = pool.submit(_run_sharding, options.quick, options.config_path)
    say("environment")
    env = lowering.environment()
    results: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "generator": {"name": "roofline-report", "version": __version__},
        "options": options.to_json(),
        "environment": env,
        "budgets": {
            "hypothetical": study.budgets_json(
                options.peak, options.bandwidth, source=options.budget_source,
                interconnect=options.interconnect,
            ),
        },
        "seed": seed_study(options.peak, options.bandwidth),
    }
    preset = _preset_json(options.preset, env)
    if preset is not None:
        results["budgets"]["preset"] = preset

    if options.ceilings:
        say("ceilings of this machine")
        results["ceilings"] = _ceilings(options.quick, say, skips)
    else:
        results["ceilings"] = {"available": False, "reason": "skipped with --no-ceilings"}

    workloads = [*(catalog() if options.builtin else []), *options.user_workloads]
    records = []
    for i, w in enumerate(workloads, 1):
        say(f"workload {i}/{len(workloads)}: {w.title}")
        records.append(measure_workload(w, quick=options.quick, skips=skips))
    results["workloads"] = records

    if options.sweeps:
        swept = [w for w in workloads
                 if w.sweep and (not options.quick or w.user or w.name in QUICK_SWEEPS)]
        results["sweeps"] = [_sweep(w, quick=options.quick, say=say, skips=skips)
                             for w in swept]
    else:
        results["sweeps"] = []
    roof = _measured_roof(results["ceilings"])
    if results["sweeps"] and roof is not None:
        results["sweep_model"] = study.sweep_study(results["sweeps"], *roof)

    ceilings_json = results["ceilings"] if results["ceilings"].get("available") else None
    if options.experiments:
        say("lab notebook: experiments")
        results["lab"] = _lab(options.quick, ceilings_json, say, skips)
        results["experiments"] = experiments.analyse(
            results["lab"], ceilings=ceilings_json, peak=options.peak,
            bandwidth=options.bandwidth)
        for e in results["experiments"]:
            if e["verdict"]["status"] == "unavailable":
                skips.add(f"experiment {e['title']}", e["verdict"]["text"])
    else:
        results["lab"] = {"available": False, "reason": "skipped with --no-experiments"}
        results["experiments"] = []
    if pool is not None and pending_sharding is None:
        pending_sharding = pool.submit(_run_sharding, options.quick, options.config_path)
    results["exercises"] = experiments.exercises(
        peak=options.peak, bandwidth=options.bandwidth, ceilings=ceilings_json)

    if pending_sharding is not None:
        say("sharded workloads (subprocess)")
        results["sharding"] = _sharding_result(pending_sharding.result(), skips)
        if results["sharding"].get("available"):
            results["sharding"]["model"] = study.comm_study(
                results["sharding"], options.peak, options.bandwidth, options.interconnect,
                source=options.budget_source)
    else:
        results["sharding"] = {"available": False, "reason": "skipped with --no-sharding"}

    if pool is not None:
        pool.shutdown(wait=True)
    results["skipped"] = skips.items
    return results


def seed_study(peak: float, bandwidth: float) -> dict[str, Any]:
    return {
        "model": study.hypothetical_model(peak, bandwidth),
        "experiment": study.doubled_traffic_experiment(peak, bandwidth),
        "exercise": study.exercise(48, 24, 12, peak, bandwidth),
    }


def _preset_json(name: str | None, env: Mapping[str, Any]) -> dict[str, Any] | None:
    from roofline_report import presets

    preset = presets.get_preset(name) if name else presets.match_device_kind(env["device_kind"])
    if preset is None:
        return None
    data = preset.to_json()
    data["chosen"] = "by name" if name else "matched to this device"
    return data


def _ceilings(quick: bool, say: Progress, skips: Skips) -> dict[str, Any]:
    from roofline_report import ceilings

    try:
        data = ceilings.measure_ceilings(quick=quick, progress=say)
    except Exception as exc:  # a measurement failure must not stop the report
        return skips.add("ceilings", _why(exc))
    data["available"] = True
    for group in ("compute", "bandwidth"):
        for entry in data.get(group, []):
            if not entry.get("available", True):
                skips.add(f"ceiling {entry.get('name')}", entry.get("reason", ""))
    return data


def _measured_roof(ceilings: Mapping[str, Any]) -> tuple[float, float, float] | None:
    """(peak FLOP/s, bandwidth B/s, dispatch s) measured on this machine, or None."""
    if not ceilings.get("available"):
        return None
    peak = (ceilings.get("peak_compute") or {}).get("value")
    bandwidth = (ceilings.get("peak_bandwidth") or {}).get("value")
    dispatch = (ceilings.get("dispatch") or {}).get("value") or 0.0
    if not peak or not bandwidth:
        return None
    return float(peak), float(bandwidth), float(dispatch)


def _lab(quick: bool, ceilings: Mapping[str, Any] | None, say: Progress,
         skips: Skips) -> dict[str, Any]:
    from roofline_report import lab

    try:
        return lab.run_lab(quick=quick, ceilings=ceilings, progress=say)
    except Exception as exc:  # one experiment failing is handled inside; this is all of them
        return {"experiments": {}, **skips.add("lab notebook", _why(exc))}


def _run_sharding(quick: bool, config_path: str | None = None) -> dict[str, Any]:
    from roofline_report import sharding

    return sharding.run_sharded_analysis(devices=8, quick=quick, timeout=180.0,
                                         config_path=config_path)


def _sharding_result(data: dict[str, Any], skips: Skips) -> dict[str, Any]:
    for w in data.get("workloads", []):
        if w.get("error"):
            skips.add(f"sharded workload {w.get('name', '?')}", str(w["error"]))
    if not data.get("available", False):
        skips.add("sharded workloads", str(data.get("reason", "unknown")))
    return data


def measure_workload(w: Workload, *, quick: bool, skips: Skips,
                     keep_text: bool = True) -> dict[str, Any]:
    """Lower, compile, check, account and time one workload; each step may fail on its own."""
    record: dict[str, Any] = {
        "name": w.name,
        "title": w.title,
        "description": w.description,
        "dtype": w.dtype,
        "dims": dict(sorted(w.dims.items())),
        "user": w.user,
    }
    label = f"workload {w.title}"
    try:
        analytic: dict[str, Any] = dict(w.model())
        analytic["intensity"] = analytic["flops"] / analytic["minimum_bytes"]
        record["analytic"] = analytic
    except Exception as exc:
        record["analytic"] = skips.add(f"{label}: analytic model", _why(exc))
    try:
        args, host = w.inputs()
        record["args"] = [{"shape": list(a.shape), "dtype": str(a.dtype)} for a in args]
        low = lowering.lower_and_compile(w.fn, args)
    except Exception as exc:
        record["lowering"] = skips.add(f"{label}: lowering", _why(exc))
        return record

    module: Any = None
    ops: dict[str, int] = {}
    optimized_hlo = low.compiled.as_text()  # read once: both the text and the inspection use it
    try:
        module = lowering.stablehlo_module(low.lowered)
        ops = lowering.stablehlo_ops(module)
        compiled_text = strip_metadata(optimized_hlo)
        record["lowering"] = {
            "available": True,
            "reason": "",
            "lower_s": low.lower_seconds,
            "compile_s": low.compile_seconds,
            "ops": ops,
            "required_ops": list(w.required_ops),
            "missing_ops": [op for op in w.required_ops if op not in ops],
            "stablehlo_text": _clip(scrub_paths(lowering.stablehlo_text(module)))
            if keep_text else "",
            "compiled_text": _clip(scrub_paths(compiled_text)) if keep_text else "",
        }
        if record["lowering"]["missing_ops"]:
            skips.add(f"{label}: operations",
                      "missing from the StableHLO: " + ", ".join(record["lowering"]["missing_ops"]))
    except Exception as exc:
        record["lowering"] = {**skips.add(f"{label}: StableHLO inspection", _why(exc)),
                              "lower_s": low.lower_seconds, "compile_s": low.compile_seconds}
    try:
        out = low.compiled(*args)
        ran = True
    except Exception as exc:
        record["check"] = skips.add(f"{label}: run", _why(exc))
        ran = False
    if ran and w.reference is None:
        record["check"] = {"available": False, "ran": True,
                           "reason": "no NumPy reference was declared"}
    elif ran and w.reference is not None:
        try:
            record["check"] = lowering.check_against_reference(
                out, w.reference(*host), rtol=w.rtol, atol=w.atol
            )
            if not record["check"]["passed"]:
                why = "result differs from the NumPy reference"
                if _tf32_likely(w, ops):
                    why += (": jax runs float32 matmuls as TF32 on NVIDIA GPUs by default; "
                            "JAX_DEFAULT_MATMUL_PRECISION=highest checks at full precision")
                    record["check"]["note"] = why
                skips.add(f"{label}: check", why)
        except Exception as exc:
            record["check"] = skips.add(f"{label}: NumPy reference", _why(exc))
            record["check"]["ran"] = True

    record["xla"] = lowering.xla_cost(low.compiled)
    if not record["xla"]["available"]:
        skips.add(f"{label}: XLA cost analysis", record["xla"]["reason"])
    record["memory"] = lowering.memory_stats(low.compiled)
    if not record["memory"]["available"]:
        skips.add(f"{label}: XLA memory analysis", record["memory"]["reason"])
    try:
        record["compiled"] = inspect_compiled(optimized_hlo)
        if module is None:
            raise RuntimeError("no StableHLO module to count")
        record["hlo_count"] = count_stablehlo(
            module, compiled_loops=record["compiled"].get("while_loops", [])
        )
    except Exception as exc:
        record["hlo_count"] = skips.add(f"{label}: HLO count", _why(exc))
    timing_json: dict[str, Any] | None = None
    if ran:
        try:
            timing_json = timing.time_jitted(low.compiled, args, quick=quick).to_json()
            timing_json["available"] = True
            record["timing"] = timing_json
        except Exception as exc:
            record["timing"] = skips.add(f"{label}: timing", _why(exc))
    else:
        record["timing"] = {"available": False, "reason": "the workload did not run"}
    seconds = timing_json["per_call"]["median"] if timing_json else None
    record["achieved"] = _achieved(record.get("analytic", {}), seconds)
    try:
        record["reconciliation"] = reconcile.reconcile(
            analytic=record["analytic"] if "flops" in record.get("analytic", {}) else None,
            ours=record["hlo_count"] if record["hlo_count"].get("available", True) else {},
            xla=record["xla"]["raw"] if record["xla"]["available"] else None,
            compiled=record.get("compiled"),
            measured_seconds=seconds,
            backend=jax.default_backend(),
        )
    except Exception as exc:
        record["reconciliation"] = skips.add(f"{label}: reconciliation", _why(exc))
    return record


def _tf32_likely(w: Workload, ops: Mapping[str, int]) -> bool:
    """A float32 product on a GPU at jax's default precision (TF32 on NVIDIA)."""
    matmul = any(op in ops for op in ("stablehlo.dot_general", "stablehlo.convolution"))
    return (jax.default_backend() in ("gpu", "cuda") and w.dtype == "float32" and matmul
            and getattr(jax.config, "jax_default_matmul_precision", None) in (None, "default"))


def _achieved(analytic: Mapping[str, Any], seconds: float | None) -> dict[str, Any]:
    if not seconds or "flops" not in analytic:
        return {"available": False, "reason": "no timing or no analytic model"}
    return {
        "available": True,
        "seconds": seconds,
        "flops_per_s": analytic["flops"] / seconds,
        "bytes_per_s": analytic["minimum_bytes"] / seconds,
        "intensity": analytic["flops"] / analytic["minimum_bytes"],
    }


def _sweep(w: Workload, *, quick: bool, say: Progress, skips: Skips) -> dict[str, Any]:
    names = sorted(w.sweep)
    count = min(len(w.sweep[n]) for n in names)
    indices = range(count) if not quick else sorted({0, count // 2, count - 1})
    points = []
    for i in indices:
        dims = {n: w.sweep[n][i] for n in names}
        say(f"sweep {w.title}: {dims}")
        rec = measure_workload(w.with_dims(dims), quick=True, skips=skips, keep_text=False)
        points.append({
            "dims": dims,
            "analytic": rec.get("analytic"),
            "achieved": rec.get("achieved"),
            "timing": rec.get("timing"),
            "check": rec.get("check"),
        })
    return {"name": w.name, "title": w.title, "dtype": w.dtype, "parameters": names,
            "points": points}


def _clip(text: str) -> str:
    if len(text) <= TEXT_LIMIT:
        return text
    return text[:TEXT_LIMIT] + f"\n... ({len(text) - TEXT_LIMIT} more characters not shown)\n"


def _why(exc: BaseException) -> str:
    return reason(exc)

