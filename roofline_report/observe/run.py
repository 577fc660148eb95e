"""The measuring pipeline (imports jax): lower, check, account, time; returns results.json's dict.

Each step of each workload is attempted on its own: a step that fails is recorded as not available
with its reason (and listed under ``skipped``), and the rest of the report still builds.
"""

from __future__ import annotations

import concurrent.futures
import datetime
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import jax

from roofline_report import interrupts, quantiles, tolerances
from roofline_report.analysis.seed_model import (
    DEFAULT_INTERCONNECT,
    SEED_BANDWIDTH,
    SEED_PEAK_FLOPS,
)
from roofline_report.errors import InputError, reason, scrub_paths
from roofline_report.hlo import count_stablehlo, inspect_compiled, strip_metadata
from roofline_report.hlo.ir import Module, parse_module
from roofline_report.observe import donation
from roofline_report.observe import lower as lowering
from roofline_report.observe import timer as timing
from roofline_report.observe.ceilings import load as machine_load
from roofline_report.observe.program import Program
from roofline_report.observe.workloads import NoAnalyticModel, Workload, catalog
from roofline_report.results import io as results_mod
from roofline_report.results import schema
from roofline_report.results.schema import SCHEMA_VERSION
from roofline_report.version import __version__

Progress = Callable[[str], None]
TEXT_LIMIT = 40_000  # characters of HLO text kept per workload
QUICK_SWEEPS = ("matmul", "scale", "attention")  # --quick sweeps these (and user workloads)
# A sweep point's timing: more, longer samples than --quick's (5 of 5 ms), fewer than a
# workload's (15 of 30 ms). 5 samples of 5 ms span 25 ms, so one burst of load elsewhere on
# the machine moved a point's median by 1.5-2x; 9 of 10 ms span 90 ms.
SWEEP_SAMPLES, SWEEP_MIN_SAMPLE_S = 9, 0.01


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
    origin: Literal["command line", "python"] = "command line"  # who asked: words of reasons
    teaching: bool = True  # the seed's teaching sections belong in the report
    remeasure: bool = False  # measure the ceilings even where the cache holds them; not in JSON
    # Measure the ceilings again when most programs beat them (roof_check); not in JSON.
    remeasure_if_suspect: bool = False

    def not_asked(self, flag: str) -> str:
        """Why a part was not measured, in the words of whoever asked for this run."""
        if self.origin == "python":
            return "not measured by roofline_report.analyze()"
        return f"skipped with {flag}"

    def remeasure_hint(self) -> str:
        """How whoever asked for this run measures the ceilings again."""
        if self.origin == "python":
            return "analyze(..., remeasure=True)"
        return "--remeasure"

    def to_json(self) -> dict[str, Any]:
        return {
            "quick": self.quick,
            "ceilings": self.ceilings,
            "sweeps": self.sweeps,
            "sharding": self.sharding,
            "experiments": self.experiments,
            "builtin": self.builtin,
            "preset": self.preset,
            "config": self.config_source,
            "origin": self.origin,
            "teaching": self.teaching,
        }

    def assumptions_json(self) -> dict[str, Any]:
        return {"peak": self.peak, "bandwidth": self.bandwidth,
                "interconnect": self.interconnect, "source": self.budget_source}


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
    # The sharded analysis runs in a child process (it needs its own device count). In quick
    # mode it starts after the ceilings (a child busy beside them would hold the cores they
    # are measured on) and runs alongside the rest, at the cost of noisier timings (the report
    # says so); otherwise it runs last, on an otherwise idle machine.
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1) if options.sharding else None
    try:
        return _run(options, say, pool)
    except BaseException:
        if pool is not None:  # interrupted: the sharded measurement stops too
            from roofline_report.observe import sharding

            pool.shutdown(wait=False, cancel_futures=True)
            sharding.stop_children()
        raise


def _run(options: RunOptions, say: Progress,
         pool: concurrent.futures.ThreadPoolExecutor | None) -> dict[str, Any]:
    skips = Skips()
    pending_sharding = None
    say("environment")
    env = lowering.environment()
    at = measured_at()
    results: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "generator": {"name": "roofline-report", "version": __version__, "measured_at": at},
        "options": options.to_json(),
        "assumptions": options.assumptions_json(),
        "environment": env,
    }

    if options.ceilings:
        say("ceilings of this machine")
        results["ceilings"] = _ceilings(options, env, at, say, skips)
    else:
        results["ceilings"] = {"available": False, "reason": options.not_asked("--no-ceilings")}
    if pool is not None and options.quick:
        pending_sharding = pool.submit(_run_sharding, options.quick, options.config_path,
                                       options.builtin)

    workloads = [*(catalog(jax.default_backend()) if options.builtin else []),
                 *options.user_workloads]
    # The user's own programs are timed first, nearest the ceilings their predictions rest on
    # (a shared machine's speed drifts over minutes); the records keep the catalog's order.
    builtin = len(workloads) - len(options.user_workloads)
    order = [*range(builtin, len(workloads)), *range(builtin)]
    records: dict[int, dict[str, Any]] = {}
    for step, i in enumerate(order, 1):
        say(f"workload {step}/{len(workloads)}: {workloads[i].title}")
        records[i] = measure_workload(workloads[i], quick=options.quick, skips=skips)
    results["workloads"] = [records[i] for i in range(len(workloads))]
    if options.remeasure_if_suspect:
        results["ceilings"] = _remeasure_if_suspect(options, results, env, at, say, skips)

    if options.sweeps:
        swept = [w for w in workloads
                 if w.sweep and (not options.quick or w.user or w.name in QUICK_SWEEPS)]
        measured = {id(w): records[i] for i, w in enumerate(workloads)}
        results["sweeps"] = [_sweep(w, quick=options.quick, say=say, skips=skips,
                                    measured=measured.get(id(w)))
                             for w in swept]
    else:
        results["sweeps"] = []
    if results["ceilings"].get("available") and (results["workloads"] or results["sweeps"]):
        # The machine's speed now, against its speed when the ceilings were measured: the
        # programs and sweeps above are judged by predictions from those ceilings.
        from roofline_report.observe.speed_check import speed_check

        say("the machine's speed, checked against the ceilings")
        results["speed_check"] = speed_check(
            schema.Ceilings.model_validate(results["ceilings"]), quick=options.quick)

    ceilings_json = results["ceilings"] if results["ceilings"].get("available") else None
    interrupts.safe_point("lab")
    if options.experiments:
        say("lab notebook: experiments")
        results["lab"] = _lab(options.quick, ceilings_json, say, skips)
    else:
        results["lab"] = {"available": False, "reason": options.not_asked("--no-experiments")}
    if pool is not None and pending_sharding is None:
        pending_sharding = pool.submit(_run_sharding, options.quick, options.config_path,
                                       options.builtin)

    if pending_sharding is not None:
        say("sharded workloads (subprocess)")
        results["sharding"] = _sharding_result(pending_sharding.result(), skips)
    else:
        results["sharding"] = {"available": False, "reason": options.not_asked("--no-sharding")}

    if pool is not None:
        pool.shutdown(wait=True)
    results["skipped"] = skips.items
    interrupts.safe_point("measured")
    # What is written must be what the loader accepts: a mismatch is a bug here, not bad input.
    try:
        results_mod.validate(results, source="the measured results")
    except InputError as exc:
        raise RuntimeError(str(exc)) from None
    return results


def _ceilings(options: RunOptions, env: Mapping[str, Any], at: str, say: Progress,
              skips: Skips) -> dict[str, Any]:
    """The machine's ceilings: from the ceilings cache when it holds them for this machine and
    plan (unless ``options.remeasure``), else measured now and saved there; ``origin`` says
    which. The cache's notes go to the progress and into ``origin``; none stops the run."""
    from roofline_report.observe.ceilings import cache
    from roofline_report.observe.ceilings import machine as ceilings

    key = cache.key_for(env, quick=options.quick)
    notes: list[str] = []
    if not options.remeasure:
        entry, notes = cache.lookup(key)
        for note in notes:
            say(f"note: {note}")
        if entry is not None:
            say(f"ceilings of this machine reused from the cache (measured {entry.measured_at})")
            data = {**results_mod.plain(entry.ceilings), "origin": cache.origin(
                cached=True, measured_at=entry.measured_at, key=entry.key, notes=notes)}
            _skip_unavailable(data, skips, f" (reused from the cache; "
                              f"{options.remeasure_hint()} measures again)")
            return data
    try:
        data = ceilings.measure_ceilings(quick=options.quick, progress=say)
    except Exception as exc:  # a measurement failure must not stop the report
        return skips.add("ceilings", _why(exc))
    data["available"] = True
    # The roofs a report uses are chosen at render time from all the entries.
    data.pop("peak_compute", None)
    data.pop("peak_bandwidth", None)
    interrupts.safe_point("ceilings")  # an interrupted measurement is not cached
    with interrupts.critical():  # nor one saved in part
        saved = cache.save(key, data, at)
    for note in saved:
        say(f"note: {note}")
    data["origin"] = cache.origin(cached=False, measured_at=at, key=key, notes=notes + saved)
    _skip_unavailable(data, skips, "")
    return data


def _remeasure_if_suspect(options: RunOptions, results: Mapping[str, Any],
                          env: Mapping[str, Any], at: str, say: Progress,
                          skips: Skips) -> dict[str, Any]:
    """The run's ceilings, measured once more when its programs beat them."""
    from dataclasses import replace

    from roofline_report.observe import suspect_ceilings

    ceilings: dict[str, Any] = results["ceilings"]
    check = suspect_ceilings.suspect(results)
    if check is None:
        return ceilings
    cached = bool((ceilings.get("origin") or {}).get("cached"))
    why = suspect_ceilings.note(check, cached)
    say(f"ceilings {why.replace('measured again in this run', 'suspect', 1)}: measuring again")
    again = _ceilings(replace(options, remeasure=True), env, at, say, skips)
    if again.get("available") and isinstance(again.get("origin"), dict):
        again["origin"]["notes"] = [why, *again["origin"]["notes"]]
        return again
    return ceilings


def _skip_unavailable(data: Mapping[str, Any], skips: Skips, suffix: str) -> None:
    for group in ("compute", "bandwidth"):
        for entry in data.get(group, []):
            if not entry.get("available", True):
                skips.add(f"ceiling {entry.get('name')}", entry.get("reason", "") + suffix)


def _lab(quick: bool, ceilings: Mapping[str, Any] | None, say: Progress,
         skips: Skips) -> dict[str, Any]:
    from roofline_report.observe import lab

    try:
        return lab.run_lab(quick=quick, ceilings=ceilings, progress=say)
    except Exception as exc:  # one experiment failing is handled inside; this is all of them
        return {"experiments": {}, **skips.add("lab notebook", _why(exc))}


def _run_sharding(quick: bool, config_path: str | None = None,
                  builtin: bool = True) -> dict[str, Any]:
    from roofline_report.observe import sharding

    return sharding.run_sharded_analysis(devices=8, quick=quick, timeout=180.0,
                                         config_path=config_path, builtin=builtin)


def _sharding_result(data: dict[str, Any], skips: Skips) -> dict[str, Any]:
    for w in data.get("workloads", []):
        if w.get("error"):
            skips.add(f"sharded workload {w.get('name', '?')}", str(w["error"]))
    if not data.get("available", False):
        skips.add("sharded workloads", str(data.get("reason", "unknown")))
        return {"available": False, "reason": str(data.get("reason", "unknown"))}
    return data


def measure_workload(w: Workload, *, quick: bool, skips: Skips,
                     keep_text: bool = True, kernels: bool = True,
                     trace: bool = True,
                     sampling: tuple[int, float] | None = None) -> dict[str, Any]:
    """Lower, compile, check, account and time one workload; each step may fail on its own.
    ``kernels``: record the kernel inventory; ``trace``: also time each kernel from a profiler
    trace and ask JAX's own roofline estimate; ``sampling``: (samples, seconds per sample) of
    the timing, instead of those ``quick`` sets."""
    record: dict[str, Any] = {
        "name": w.name,
        "title": w.title,
        "description": w.description,
        "dtype": w.dtype,
        "dims": dict(sorted(w.dims.items())),
        "user": w.user,
    }
    label = f"workload {w.title}"
    interrupts.safe_point("lowering")
    record["analytic"] = _analytic(w, label, skips)
    kwargs: dict[str, Any] = {}
    host_kwargs: dict[str, Any] = {}
    as_written: dict[str, Any] = {"kept": [], "not_kept": []}
    try:
        if w.program is not None:
            low, args, kwargs, host, host_kwargs, as_written = _program_inputs(w.program, record)
        else:
            args, host = w.inputs()
            record["args"] = [{"shape": list(a.shape), "dtype": str(a.dtype)} for a in args]
            low = lowering.lower_and_compile(w.fn, args)
            if w.user:
                record["arguments"] = _arrays_tree(args, low)
    except Exception as exc:
        record["lowering"] = skips.add(f"{label}: lowering", _why(exc))
        return record

    optimized_hlo = low.compiled.as_text()  # read once: both the text and the inspection use it
    program = parse_module(optimized_hlo)  # parsed once: the inspection and the inventory
    module, ops = _inspect_lowering(w, low, optimized_hlo, record, label, skips,
                                    keep_text=keep_text)
    # The compiled program called as written: no call is given a buffer already donated.
    calls = donation.calls_of(low.compiled, args, kwargs)
    if w.user:
        record["as_written"] = {**as_written, "donated_leaves": calls.donated_leaves,
                                "donated_bytes": calls.donated_bytes}
    ran = _run_and_check(w, calls, (host, host_kwargs), ops, record, label, skips)
    _xla_analyses(low, record, label, skips)
    _compiled_facts(program, module, record, label, skips)
    interrupts.safe_point("measuring")
    if ran:
        # The machine's load while the program is timed: other processes on its cores
        # lengthen its calls, and the page says so where they held a share of them.
        before = machine_load.PROBE()
        record["timing"] = _timing_record(calls, quick=quick, sampling=sampling,
                                          label=label, skips=skips)
        if record["timing"].get("available"):
            record["timing_load"] = machine_load.load_between(before, machine_load.PROBE())
        if timing.accelerator_backend():
            record["host_dispatch"] = _host_dispatch(calls, low.compiled)
    else:
        record["timing"] = {"available": False, "reason": "the workload did not run"}
    if kernels:
        _measure_kernels(record, w, calls, (args, kwargs), program, ran=ran, skips=skips,
                         quick=quick, trace=trace, compiled=low.compiled)
    return record


def _analytic(w: Workload, label: str, skips: Skips) -> dict[str, Any]:
    """The workload's hand model (work and minimum traffic), or why it has none."""
    try:
        return {key: int(value) for key, value in w.model().items()}
    except NoAnalyticModel as exc:
        return {"available": False, "reason": str(exc)}
    except Exception as exc:
        return skips.add(f"{label}: analytic model", _why(exc))


def _inspect_lowering(w: Workload, low: lowering.Lowered, optimized_hlo: str,
                      record: dict[str, Any], label: str, skips: Skips, *,
                      keep_text: bool) -> tuple[Any, dict[str, int]]:
    """Record the lowering (times, the StableHLO's ops, the program texts) and check the
    operations the workload requires; returns (the StableHLO module or None, its ops)."""
    module: Any = None
    ops: dict[str, int] = {}
    try:
        module = lowering.stablehlo_module(low.lowered)
        ops = lowering.stablehlo_ops(module)
        record["lowering"] = {
            "available": True,
            "reason": "",
            "lower_s": low.lower_seconds,
            "compile_s": low.compile_seconds,
            "ops": ops,
            "required_ops": list(w.required_ops),
            "stablehlo_text": _clip(scrub_paths(lowering.stablehlo_text(module)))
            if keep_text else "",
            "compiled_text": _clip(scrub_paths(strip_metadata(optimized_hlo)))
            if keep_text else "",
        }
        missing = [op for op in w.required_ops if op not in ops]
        if missing:
            skips.add(f"{label}: operations", "missing from the StableHLO: " + ", ".join(missing))
    except Exception as exc:
        record["lowering"] = {**skips.add(f"{label}: StableHLO inspection", _why(exc)),
                              "lower_s": low.lower_seconds, "compile_s": low.compile_seconds}
    return module, ops


def _run_and_check(w: Workload, calls: donation.Calls,
                   host_inputs: tuple[tuple[Any, ...], dict[str, Any]], ops: Mapping[str, int],
                   record: dict[str, Any], label: str, skips: Skips) -> bool:
    """Run the compiled program once and check its result against the NumPy reference (when
    one is declared); returns whether it ran."""
    host, host_kwargs = host_inputs
    try:
        out = calls.call(*calls.inputs())
    except Exception as exc:
        record["check"] = skips.add(f"{label}: run", _why(exc))
        return False
    if w.reference is None:
        record["check"] = {"available": False, "ran": True,
                           "reason": "no NumPy reference was declared"}
        return True
    rtol, atol = w.rtol, w.atol
    passes = _bfloat16_passes_likely(w, ops)
    if passes:  # checked at bfloat16's precision, what the products computed in
        loose = tolerances.for_dtype("bfloat16")
        rtol, atol = max(rtol, loose.rtol), max(atol, loose.atol)
    try:
        record["check"] = lowering.check_tree_against_reference(
            out, w.reference(*host, **host_kwargs), rtol=rtol, atol=atol
        )
        if passes:
            record["check"]["note"] = (
                "checked at bfloat16's tolerance: jax runs float32 matrix products in "
                "bfloat16 passes on TPUs by default (JAX_DEFAULT_MATMUL_PRECISION=highest "
                "computes them in full float32)")
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
    return True


def _xla_analyses(low: lowering.Lowered, record: dict[str, Any], label: str,
                  skips: Skips) -> None:
    """XLA's cost and memory analyses of the compiled program, each possibly unavailable."""
    record["xla"] = lowering.xla_cost(low.compiled)
    if not record["xla"]["available"]:
        skips.add(f"{label}: XLA cost analysis", record["xla"]["reason"])
    record["memory"] = lowering.memory_stats(low.compiled)
    if not record["memory"]["available"]:
        skips.add(f"{label}: XLA memory analysis", record["memory"]["reason"])


def _compiled_facts(program: Module, module: Any, record: dict[str, Any], label: str,
                    skips: Skips) -> None:
    """The compiled program's facts and our own count of its StableHLO, its loops paired
    with the compiled while loops."""
    try:
        record["compiled"] = inspect_compiled(program)
        if module is None:
            raise RuntimeError("no StableHLO module to count")
        record["hlo_count"] = count_stablehlo(
            module, compiled_loops=record["compiled"].get("while_loops", [])
        )
        if record["hlo_count"].get("available") is False:  # past the count's time limit
            skips.add(f"{label}: HLO count", record["hlo_count"]["reason"])
    except Exception as exc:
        record["hlo_count"] = skips.add(f"{label}: HLO count", _why(exc))


def _timing_record(calls: donation.Calls, *, quick: bool,
                   sampling: tuple[int, float] | None, label: str, skips: Skips
                   ) -> dict[str, Any]:
    """The timing record of the compiled program (the sampling ``quick`` sets, unless
    ``sampling`` gives it), or why it could not be timed. A program that donates inputs is
    given fresh copies of them in every call, made before each sample."""
    try:
        samples, min_sample = sampling if sampling is not None else (None, None)
        warm = timing.QUICK_PROGRAM_WARMUP_SECONDS if quick and sampling is None \
            else timing.PROGRAM_WARMUP_SECONDS
        call, args = calls.plain()
        pool, most, method = donation.timed_calls(calls) if calls.donates \
            else (None, timing.DEFAULT_MAX_INNER, "")
        timing_json = timing.time_jitted(
            call, args, quick=quick, samples=samples,
            min_sample_seconds=min_sample, warmup_seconds=warm, pool=pool,
            max_inner=min(timing.DEFAULT_MAX_INNER, most), pool_method=method).to_json()
        timing_json["available"] = True
        return timing_json
    except Exception as exc:
        return skips.add(f"{label}: timing", _why(exc))


def _host_dispatch(calls: donation.Calls, compiled: Any) -> dict[str, Any]:
    """What one call of the program costs the host on an accelerator, where the device runs
    one call while the host dispatches the next: a program that computes nothing, called with
    the same arguments (none pruned) and returning a scalar for each array of the result, in
    its structure, timed with its calls enqueued. A training step passes a hundred buffers or
    more, each handled by jax on the host (a TPU v5e step that ran 32 us on the device took
    764 us a call, the host's time). Never raises: a failure is an unavailable record."""
    try:
        import jax.numpy as jnp

        shapes = compiled.out_info
        leaves = jax.tree_util.tree_leaves(shapes)
        args, kwargs = calls.split(calls.values)

        def nothing(*_args: Any, **_kwargs: Any) -> Any:
            return jax.tree_util.tree_map(lambda s: jnp.zeros((), s.dtype), shapes)

        twin = jax.jit(nothing, keep_unused=True).lower(*args, **kwargs).compile()
        buffers = len(jax.tree_util.tree_leaves(calls.values)) + len(leaves)
        measured = timing.time_jitted(functools.partial(twin, **kwargs) if kwargs else twin,
                                      args, quick=True)
        return {"available": True, "seconds": measured.per_call.min, "buffers": buffers,
                "timing": measured.to_json()}
    except Exception as exc:
        return {"available": False, "reason": f"the host's dispatch not timed: {_why(exc)}"}


def _program_inputs(p: Program, record: dict[str, Any]
                    ) -> tuple[lowering.Lowered, tuple[Any, ...], dict[str, Any],
                               tuple[Any, ...], dict[str, Any], dict[str, Any]]:
    """Lower and compile a user's program through its pytrees; record its argument tree.
    Returns (lowered, arguments, keyword arguments, both as NumPy for a reference, and the
    options of the user's jit kept and not kept)."""
    low, args, kwargs, as_written = p.lower_and_compile()
    record["arguments"] = p.arguments_json(low.lowered.out_info)
    host, host_kwargs = p.host_inputs(args, kwargs)
    return low, args, kwargs, host, host_kwargs, as_written


def _arrays_tree(args: tuple[Any, ...], low: lowering.Lowered) -> dict[str, Any]:
    """The argument tree of a user's workload of plain arrays (a TOML ``function``)."""
    from roofline_report.observe.program import arrays_tree

    return arrays_tree(args, [f"args[{i}]" for i in range(len(args))], low.lowered.out_info)


def _measure_kernels(record: dict[str, Any], w: Workload, calls: donation.Calls,
                     inputs: tuple[Any, Mapping[str, Any]], program: Module, *, ran: bool,
                     skips: Skips, quick: bool, trace: bool = True,
                     compiled: Any = None) -> None:
    """The kernel inventory and, with ``trace``, each kernel timed from a profiler trace and
    JAX's own roofline estimate; each may fail on its own (the inventory stays when the trace
    yields nothing). Each kernel's Python stack is read from ``compiled``'s serialized module
    when it gives one (else from the stack frames printed in the text)."""
    from roofline_report.hlo.kernels import kernel_inventory
    from roofline_report.observe.stack_frames import stack_frame_table

    args, kwargs = inputs
    label = f"workload {w.title}"
    inventory: dict[str, Any] | None = None
    try:
        frames = None if compiled is None else stack_frame_table(compiled)
        inventory = kernel_inventory(program, frames=frames)
        record["kernels"] = inventory
    except Exception as exc:
        record["kernels"] = skips.add(f"{label}: kernel inventory", _why(exc))
    if not trace:
        return
    if not ran:
        record["kernel_timing"] = {"available": False, "reason": "the workload did not run"}
    elif inventory is not None:
        try:
            record["kernel_timing"] = _trace(calls, inventory, record.get("timing"),
                                             quick=quick)
        except Exception as exc:
            record["kernel_timing"] = {"available": False, "reason": _why(exc)}
        if not record["kernel_timing"].get("available", True):
            skips.add(f"{label}: per-kernel times", record["kernel_timing"]["reason"])
    record["jax_roofline"] = _jax_roofline(w, args, kwargs)


KERNEL_TRACE_CALLS = 5  # calls traced per workload for per-kernel times
KERNEL_TRACE_CALLS_QUICK = 3
# A trace whose calls ran this many times the timed median caught a burst of load elsewhere:
# it is taken again (at most RETRACES times) and the trace nearest the timing is kept.
RETRACE_FACTOR = 1.5
RETRACES = 2


def _trace(calls: donation.Calls, inventory: Mapping[str, Any],
           timed: Mapping[str, Any] | None, *, quick: bool) -> dict[str, Any]:
    """Per-kernel times from a profiler trace of a few calls; traced again when its calls ran
    :data:`RETRACE_FACTOR` times slower than the program's timed median, with a note."""
    from roofline_report.observe import trace as kernel_timing

    samples = (timed or {}).get("per_call_s") if (timed or {}).get("available") else None
    median = quantiles.median([float(s) for s in samples]) if samples else None
    names = [k["name"] for k in inventory["kernels"]]
    trips = {k["name"]: int(k.get("trips", 1)) for k in inventory["kernels"]}
    count = KERNEL_TRACE_CALLS_QUICK if quick else KERNEL_TRACE_CALLS
    cores = kernel_timing.cores()
    wants = kernel_timing.wants(inventory["kernels"], cores)
    traces = []
    for _ in range(1 + RETRACES):
        t = kernel_timing.trace_kernels(*calls.plain(), module=inventory["module"],
                                        kernels=names, calls=count, cores=cores, wants=wants,
                                        pool=donation.timed_calls(calls)[0] if calls.donates
                                        else None, launches=trips)
        traces.append(t)
        if not t.get("available") or not median or _traced_call_s(t) <= RETRACE_FACTOR * median:
            break
    if len(traces) == 1 or not median:
        return traces[-1]
    best = min((t for t in traces if t.get("available")), key=_traced_call_s)
    first = _traced_call_s(traces[0]) / median
    best["notes"] = [*best["notes"],
                     f"traced {len(traces)} times: the first trace's calls ran {first:.3g}× the "
                     "timed median (load elsewhere on the machine); the fastest trace is kept"]
    return best


def _traced_call_s(record: Mapping[str, Any]) -> float:
    """The median of a kernel-timing record's traced calls' program times (seconds)."""
    return quantiles.median([float(c["program_s"]) for c in record.get("calls") or []]) \
        or float("inf")


def _jax_roofline(w: Workload, args: Any, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``jax.experimental.roofline`` of the workload as JAX reports it, or why not. A user's
    program goes in as it was lowered: the function with its static and held values put back,
    called with the same positional and keyword arguments."""
    try:
        from jax.experimental import roofline as jax_roofline

        fn = w.program.jitted() if w.program is not None else w.fn
        names = list(kwargs)

        def positional(*values: Any) -> Any:  # jax's estimator takes positional arguments only
            return fn(*values[:len(args)], **dict(zip(names, values[len(args):], strict=True)))

        _, result = jax_roofline.roofline(positional)(*args, *kwargs.values())
        return {
            "available": True,
            "flops": float(result.flops),
            "unfused_flops": float(result.unfused_flops),
            "hbm_bytes": float(result.hbm_bytes),
            "unfused_hbm_bytes": float(result.unfused_hbm_bytes),
            "peak_hbm_bytes": None if getattr(result, "peak_hbm_bytes", None) is None
            else float(result.peak_hbm_bytes),
        }
    except Exception as exc:  # an estimator without a rule for some primitive
        return {"available": False, "reason": _why(exc)}


def _bfloat16_passes_likely(w: Workload, ops: Mapping[str, int]) -> bool:
    """A float32 product on a TPU at jax's default precision (one bfloat16 pass)."""
    matmul = any(op in ops for op in ("stablehlo.dot_general", "stablehlo.convolution"))
    return (jax.default_backend() == "tpu" and w.dtype == "float32" and matmul
            and getattr(jax.config, "jax_default_matmul_precision", None) in (None, "default"))


def _tf32_likely(w: Workload, ops: Mapping[str, int]) -> bool:
    """A float32 product on a GPU at jax's default precision (TF32 on NVIDIA)."""
    matmul = any(op in ops for op in ("stablehlo.dot_general", "stablehlo.convolution"))
    return (jax.default_backend() in ("gpu", "cuda") and w.dtype == "float32" and matmul
            and getattr(jax.config, "jax_default_matmul_precision", None) in (None, "default"))


def _sweep(w: Workload, *, quick: bool, say: Progress, skips: Skips,
           measured: dict[str, Any] | None = None) -> dict[str, Any]:
    """The points of ``w``'s sweep, each measured at its dims; a point at the workload's own
    dims takes ``measured``, the workload's record where it was timed (the same program at
    the same size, timed with more samples: on a TPU v5e the catalog's sweeps measured six
    of their points again, about 85 s of a build that did not fit ten minutes)."""
    names = sorted(w.sweep)
    count = min(len(w.sweep[n]) for n in names)
    indices = range(count) if not quick else sorted({0, count // 2, count - 1})
    points = []
    for i in indices:
        dims = {n: w.sweep[n][i] for n in names}
        own = measured is not None and measured.get("timing") is not None \
            and all(w.dims.get(n) == v for n, v in dims.items())
        say(f"sweep {w.title}: {dims}" + (" (the workload's own measurement)" if own else ""))
        # The inventory (parsed from the compiled text, no trace) is what the prediction of
        # each point is built from, as for the catalog's workloads.
        rec = measured if own and measured is not None else measure_workload(
            w.with_dims(dims), quick=True, skips=skips, keep_text=False, trace=False,
            sampling=None if quick else (SWEEP_SAMPLES, SWEEP_MIN_SAMPLE_S))
        points.append({
            "dims": dims,
            "analytic": rec.get("analytic"),
            "timing": rec.get("timing"),
            "check": rec.get("check"),
            # What the prediction needs of the compiled program at this size.
            "hlo_count": rec.get("hlo_count"),
            "compiled": rec.get("compiled"),
            "xla": rec.get("xla"),
            "kernels": rec.get("kernels"),
        })
    return {"name": w.name, "title": w.title, "dtype": w.dtype, "parameters": names,
            "points": points}


def _clip(text: str) -> str:
    if len(text) <= TEXT_LIMIT:
        return text
    return text[:TEXT_LIMIT] + f"\n... ({len(text) - TEXT_LIMIT} more characters not shown)\n"


def _why(exc: BaseException) -> str:
    return reason(exc)


def measured_at() -> str:
    """The time of this measurement, UTC, ISO 8601 to the second (recorded in results.json, so
    that a report rendered again from it shows the same date)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
