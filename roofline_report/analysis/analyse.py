"""The analysis (no jax): one results document and this render's assumptions in, one typed
:class:`~roofline_report.analysis.records.Analysis` out.

results.json holds observations only. Everything derived from them, the roofs, every program's
and kernel's prediction, miss and share of roof, the placements on the rooflines, the sweeps'
predictions, the accuracy of the model, the seed's teaching studies, the lab's verdicts and
exercises and the communication model, is computed here from the saved observations and the
budgets of *this* render, so ``--from-json`` with ``--peak``/``--bandwidth``/``--interconnect``/
``--preset`` re-renders a saved run under other assumptions, and a fix to the model reaches
every saved run and ``compare``. The observations are never changed.

The document is read typed (:class:`~roofline_report.results.schema.Results`): a plain one, as
``json.load`` gives it, is validated once on the way in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from roofline_report import backends
from roofline_report.analysis import experiments, reconcile, seed_model, study
from roofline_report.analysis import roofs as roofs_mod
from roofline_report.analysis.ceilings_origin import ceilings_origin
from roofline_report.analysis.explain import Evidence, program_reason
from roofline_report.analysis.fresh_pages import footprint_bytes
from roofline_report.analysis.hardware_roof import HardwareRoof
from roofline_report.analysis.headroom import facts_roof, program_roof
from roofline_report.analysis.kernel_records import SIGNIFICANT_KERNEL_S, KernelTable
from roofline_report.analysis.kernels import kernel_table
from roofline_report.analysis.levers import program_levers
from roofline_report.analysis.loop_trips import implied_trips, unknown_loops_in
from roofline_report.analysis.measuring_load import load_of
from roofline_report.analysis.miss import miss
from roofline_report.analysis.predict import (
    Prediction,
    facts,
    predict_facts,
    predict_from_kernels,
    predict_program,
    program_buffers,
    program_footprint,
    program_traffic,
)
from roofline_report.analysis.read_passes import MultiPass, multi_pass_kernels
from roofline_report.analysis.reconcile_records import Reconciliation
from roofline_report.analysis.records import (
    Accuracy,
    Analysis,
    Assumptions,
    Budgets,
    ChosenPreset,
    Exercise,
    Experiment,
    HypotheticalBudgets,
    Program,
    Roofs,
    SpecPlacement,
    Sweep,
    SweepPoint,
)
from roofline_report.analysis.roof_check import roof_check
from roofline_report.analysis.roofs import PAGE_FAULT, RoofSet
from roofline_report.analysis.sharding_records import ShardingStudy
from roofline_report.analysis.slow_floors import named, slow_floors
from roofline_report.analysis.speed_drift import SpeedChecks, checks_of
from roofline_report.analysis.stats import Stats, Timing
from roofline_report.backends import Backend
from roofline_report.errors import InputError, reason
from roofline_report.kinds import Kind, Quantity
from roofline_report.results import io as results_io
from roofline_report.results import schema
from roofline_report.roofline import binding, single_roof_seconds

__all__ = ["ARGUMENT_TRAFFIC", "SEED_NAME", "Assumptions", "analyse", "assumptions_for",
           "preset_record", "roof_sets"]

SEED_NAME = "seed_tanh_matmul"
ARGUMENT_TRAFFIC = "argument + result bytes"


def _typed(results: schema.Results | Mapping[str, Any]) -> schema.Results:
    """The typed document: a plain one (as ``json.load`` gives it) written out in full,
    converted and validated once, as reading a results.json does
    (:func:`roofline_report.results.io.typed`)."""
    return results_io.typed(results)


def assumptions_for(results: schema.Results | Mapping[str, Any], *, peak: float | None = None,
                    bandwidth: float | None = None, interconnect: float | None = None,
                    preset: str | None = None) -> Assumptions:
    """The run's own assumptions, each overridden where this render gives one."""
    saved = _typed(results).assumptions
    overridden = any(v is not None for v in (peak, bandwidth, interconnect))
    source = "assumed budgets given for this rendering" if overridden else saved.source
    return Assumptions(
        peak=peak if peak is not None else float(saved.peak),
        bandwidth=bandwidth if bandwidth is not None else float(saved.bandwidth),
        interconnect=interconnect if interconnect is not None else float(saved.interconnect),
        source=source,
        preset=preset,
    )


def preset_record(results: schema.Results, a: Assumptions) -> ChosenPreset | None:
    """The chip preset to draw: this render's, else the run's, else the one matching the
    device; with how it was chosen."""
    from roofline_report import presets

    name = a.preset or results.options.preset
    if name:
        return ChosenPreset(presets.get_preset(name), "by name")
    env = results.environment
    if env.device_preset:  # a trace's device, recognised from its plane's stats
        return ChosenPreset(presets.get_preset(env.device_preset),
                            f"recognised by {env.device_recognised_by or 'stats'}")
    match = presets.match_device_kind(env.device_kind) if env.device_kind else None
    return ChosenPreset(match, "matched to this device") if match is not None else None


def roof_sets(results: schema.Results, a: Assumptions) -> Roofs:
    """The hypothetical, measured and spec-sheet roof sets of one render."""
    preset = preset_record(results, a)
    ceilings = results.ceilings
    levels, measured = [], None
    if isinstance(ceilings, schema.Ceilings):
        levels = roofs_mod.measured_levels(ceilings)
        measured = roofs_mod.measured(ceilings, levels)
    return Roofs(
        hypothetical=roofs_mod.hypothetical(a.peak, a.bandwidth, a.source),
        measured=measured if measured is not None and measured.complete else None,
        spec_sheet=roofs_mod.spec_sheet(preset.preset) if preset is not None else None,
        levels=tuple(levels),
        preset=preset,
        trace=results.trace is not None,
    )


def analyse(results: schema.Results | Mapping[str, Any], a: Assumptions | None = None
            ) -> Analysis:
    """Everything the report shows, from the observations under the assumptions ``a``
    (default: the budgets the run was given). A plain document (as ``json.load`` gives it)
    is validated here, once."""
    typed = _typed(results)
    a = a or assumptions_for(typed)
    backend = backends.describe(typed.environment.backend)
    roofs = roof_sets(typed, a)
    ceilings = typed.ceilings
    cache_bytes = _last_cache(roofs, ceilings)
    origin = ceilings_origin(typed)
    skipped: list[schema.Skip] = list(typed.skipped)
    # The speed check speaks of the measured ceilings: only where the predictions rest on them.
    checks = checks_of(typed) if roofs.measured is not None else None
    programs = tuple(_program(w, roofs, backend, cache_bytes, checks) for w in typed.workloads)
    sweeps = tuple(_sweep(sw, roofs.kernels, backend, cache_bytes, checks)
                   for sw in typed.sweeps)
    programs, sweeps = _floors_named(programs, sweeps)
    accuracy = _accuracy(programs, sweeps) if roofs.measured is not None else Accuracy((), ())
    exps, exercises = _lab(typed, a, roofs, skipped)
    sharding = _sharding(typed, a, roofs, skipped)
    budgets = Budgets(HypotheticalBudgets(
        Quantity(a.peak, "FLOP/s", Kind.HYPOTHETICAL, a.source),
        Quantity(a.bandwidth, "B/s", Kind.HYPOTHETICAL, a.source),
        Quantity(a.interconnect, "B/s", Kind.HYPOTHETICAL, a.source),
        seed_model.ridge(a.peak, a.bandwidth), a.source), roofs.preset)
    return Analysis(
        assumptions=a, backend=backend, roofs=roofs, programs=programs, sweeps=sweeps,
        accuracy=accuracy, seed=study.seed_study(a.peak, a.bandwidth), budgets=budgets,
        experiments=exps, exercises=exercises,
        sharding=sharding, skipped=tuple(_unique(skipped)),
        run_note=_run_note(typed.options, checks), results=typed,
        ceilings_origin=origin,
        roof_check=roof_check(typed, programs, roofs.measured is not None, origin),
        speed_drift=checks.compute if checks is not None else None, speed_checks=checks)


def _floors_named(programs: tuple[Program, ...], sweeps: tuple[Sweep, ...]
                  ) -> tuple[tuple[Program, ...], tuple[Sweep, ...]]:
    """The run's programs and sweep points, a slow dispatch named where several calls bound by
    it ran past it with no other cause (:mod:`.slow_floors`)."""
    found = slow_floors([(p.prediction, p.timing.own, p.why) for p in programs
                         if p.timing is not None]
                        + [(pt.prediction, pt.measured, pt.why)
                           for sw in sweeps for pt in sw.points])
    if found is None:
        return programs, sweeps
    return (tuple(replace(p, why=named(p.why, p.prediction, p.timing.own, found))
                  if p.timing is not None else p for p in programs),
            tuple(replace(sw, points=tuple(replace(pt, why=named(pt.why, pt.prediction,
                                                                 pt.measured, found))
                                           for pt in sw.points)) for sw in sweeps))


# --- programs --------------------------------------------------------------------------------

def _timing(record: schema.Timing | schema.Unavailable | None) -> tuple[Timing | None, str]:
    if record is None:
        return None, "not measured"
    if isinstance(record, schema.Unavailable):
        return None, record.reason
    return Timing.of(record), ""


def _fault_s(roofs: RoofSet) -> float | None:
    floor = roofs.floor(PAGE_FAULT)
    return floor.seconds if floor is not None else None


def _available(record: Any) -> bool:
    return isinstance(record, Mapping) and record.get("available", True) is not False


def _program_prediction(w: schema.Workload, table: KernelTable | None, roofs: RoofSet
                        ) -> Prediction | None:
    """The per-kernel model of the compiled program when its inventory is known, else the
    model of its totals."""
    if table is not None and table.rows:
        # A conditional's branches are all listed; the program runs (and is charged) one.
        parts = [r.prediction for r in table.rows if r.charged]
        if all(p is not None for p in parts):
            inventory = w.kernels
            buffers = program_buffers(inventory) \
                if isinstance(inventory, schema.KernelInventory) else None
            host = w.host_dispatch
            return predict_program([p for p in parts if p is not None], roofs, buffers,
                                   float(host.seconds) if isinstance(host, schema.HostDispatch)
                                   else None, device_span=w.trace is not None)
        return None
    f = facts(w, w.dtype)
    prediction = predict_facts(f, roofs) if f is not None else None
    if prediction is not None and unknown_loops_in(w.compiled):
        # Known by its totals, a loop without a known trip count counts once.
        prediction = replace(prediction, lower_bound=True)
    return prediction


def _work(w: schema.Workload | schema.SweepPoint) -> tuple[float | None, float | None, str]:
    """(flops, bytes, basis) of the compiled program: its kernels' sums where the inventory
    is known, else our count's work and minimum traffic."""
    inventory = w.kernels
    if isinstance(inventory, schema.KernelInventory):
        moved = float(inventory.bytes_read) + float(inventory.bytes_written)
        return float(inventory.flops), moved or None, "the bytes its kernels touch"
    ours = w.hlo_count
    if isinstance(ours, schema.HloCount):
        minimum = ours.minimum_bytes
        return float(ours.flops), float(minimum) if minimum else None, \
            "our count's minimum traffic"
    return None, None, ""


def _minimum(w: schema.Workload) -> tuple[float | None, str]:
    """The least traffic: the hand model's, else every argument read and every result
    written once (labelled as such)."""
    an = w.analytic
    if isinstance(an, schema.Analytic) and an.minimum_bytes:
        return float(an.minimum_bytes), "analytic minimum traffic"
    tree = w.arguments
    if tree is not None:
        read = tree.bytes
        written = tree.result.bytes if tree.result is not None else 0
        if read + written > 0:
            return float(read + written), ARGUMENT_TRAFFIC
    return None, ""


def _traced_time(w: schema.Workload) -> Stats | None:
    """A program read from a profiler trace has no timing of its own: its time per step or
    call is the traced calls' wall times."""
    timing = w.kernel_timing
    if w.trace is None or not isinstance(timing, schema.KernelTiming):
        return None
    samples = [float(c.program_s) for c in timing.calls if c.program_s > 0]
    return Stats(samples) if samples else None


def _last_cache(roofs: Roofs, ceilings: schema.Ceilings | schema.Unavailable | None
                ) -> int | None:
    """The last-level cache's capacity the reasons speak of: where main memory's measured
    level starts (:meth:`RoofSet.last_cache_bytes`), the size at which the model's own rules
    for data past the cache switch, else the size the operating system reports. The two
    differ on a host whose system reports less than its caches hold (8 MiB where main
    memory's window starts at 32 MiB): a reason must not call a kernel past the cache that
    the model priced inside it."""
    measured = roofs.measured.last_cache_bytes() if roofs.measured is not None else None
    if measured is not None:
        return int(measured)
    return ceilings.cache_bytes if isinstance(ceilings, schema.Ceilings) else None


def _program(w: schema.Workload, roofs: Roofs, backend: Backend, cache_bytes: int | None,
             checks: SpeedChecks | None = None) -> Program:
    """One program's record."""
    timed, timing_reason = _timing(w.timing)
    stats = timed.per_call if timed is not None else None
    if stats is None and (traced := _traced_time(w)) is not None:
        stats, timing_reason = traced, ""
    table = kernel_table(w, roofs.kernels, backend.name)
    prediction = _program_prediction(w, table, roofs.kernels)
    flops, moved, basis = _work(w)
    if table is not None and any(r.trips_observed for r in table.rows):
        # A loop's trips observed in the trace: the work and bytes of every trip it ran.
        flops = sum(r.flops for r in table.rows if r.charged)
        moved = sum(r.bytes for r in table.rows if r.charged) or None
    m = miss(prediction.seconds if prediction else None, stats.own if stats else None)
    if table is not None and table.lower_bound:
        # What the timing says of a loop whose trips nothing observed, said beside it.
        table = replace(table, loops=implied_trips(
            table.loops, stats.own if stats else None,
            prediction.seconds if prediction else None))
    why = ""
    load = load_of(w.timing_load)
    if prediction is not None and m is not None:
        compiled = w.compiled
        xla = w.xla
        accessed = xla.raw.get("bytes accessed") if xla is not None and xla.available else None
        why = program_reason(prediction, m, Evidence(
            backend=backend, dtype=w.dtype, timing=stats,
            xla_bytes=float(accessed) if accessed is not None else None,
            kernels=(compiled.kernels if compiled is not None else 0) or 1,
            loops=bool(compiled.while_loops) if compiled is not None else False,
            cache_bytes=cache_bytes, rows=table.rows if table is not None else (),
            load=load,
            page_faults=timed.page_faults if timed is not None else None,
            fault_s=_fault_s(roofs.kernels),
            drift=checks.for_binding(prediction.binding) if checks is not None else None,
            footprint=footprint_bytes(w.memory), main_roof=_main_roof(roofs.kernels),
            multi_pass=_multi_pass(w.kernels, w.dtype, roofs.kernels,
                                   {r.name: r.prediction.seconds for r in table.rows
                                    if r.prediction is not None} if table is not None else None)))
    minimum, minimum_basis = _minimum(w)
    low = w.lowering
    missing = tuple(op for op in low.required_ops if op not in low.ops) \
        if isinstance(low, schema.Lowering) else ()
    hardware = _hardware(w, table, roofs.kernels)
    return Program(
        name=w.name, title=w.title, dtype=w.dtype,
        user=w.user, timing=stats, timing_reason=timing_reason, flops=flops,
        bytes=moved, bytes_basis=basis, minimum_bytes=minimum, minimum_basis=minimum_basis,
        prediction=prediction, miss=m, why=why, kernels=table, workload=w,
        reconciliation=_reconciliation(w, table, stats, backend),
        spec_sheet=_spec(flops, moved, w.dtype, roofs.spec_sheet),
        missing_ops=missing,
        timed_without=tuple(w.as_written.not_kept) if w.as_written is not None else (),
        hardware=hardware, timing_load=load,
        levers=program_levers(stats.own if stats else None, table, prediction, minimum,
                              minimum_basis, roofs.kernels))


def _hardware(w: schema.Workload, table: KernelTable | None, roofs: RoofSet
              ) -> HardwareRoof | None:
    """The roof at the program's intensity: its charged kernels' roofs summed where its
    inventory is known, else the roof of its totals."""
    if table is not None and table.rows:
        return program_roof(r.hardware for r in table.rows if r.charged)
    f = facts(w, w.dtype)
    return facts_roof(f, roofs) if f is not None else None


def _reconciliation(w: schema.Workload, table: KernelTable | None, stats: Stats | None,
                    backend: Backend) -> Reconciliation | None:
    if not isinstance(w.lowering, schema.Lowering):
        return None
    ours = w.hlo_count if isinstance(w.hlo_count, schema.HloCount) else None
    try:
        rec = reconcile.reconcile(
            analytic=w.analytic if isinstance(w.analytic, schema.Analytic) else None,
            ours=ours, xla=w.xla, compiled=w.compiled,
            measured_seconds=stats.own if stats else None, backend=backend.name)
    except InputError as exc:
        return Reconciliation.unavailable(reason(exc))
    if rec.rows and (table is not None or w.jax_roofline is not None):
        rec = reconcile.add_kernel_columns(
            rec, kernels=w.kernels, jax_estimate=w.jax_roofline, ours=ours,
            rewrites=table.reconciliation.rewrites if table is not None else None)
    return rec


def _spec(flops: float | None, moved: float | None, dtype: str, spec: RoofSet | None
          ) -> SpecPlacement | None:
    """A program's time on a chip's spec sheet: max(flops ÷ its dtype's compute roof, the
    bytes its kernels touch ÷ HBM), no less than one launch floor."""
    if spec is None or flops is None or not moved:
        return None
    compute = spec.compute_for(dtype)
    memory = spec.bandwidth_for(None)
    if compute is None or memory is None:
        return None
    times = {"compute": flops / compute.value, "memory": moved / memory.value}
    roofline = single_roof_seconds(flops, moved, compute.value, memory.value)
    launch = spec.floor("launch")
    if launch is not None:
        times["launch"] = launch.seconds
    bound = binding(times)
    if bound == "launch" and launch is not None:
        return SpecPlacement(compute.name, roofline, launch.seconds, "launch", launch.kind)
    return SpecPlacement(compute.name, roofline, roofline, bound, Kind.SPEC_SHEET)


# --- sweeps -----------------------------------------------------------------------------------

def _closest_group(seconds: float, p: Prediction) -> str:
    """The group (compute, memory, overhead) whose predicted time is closest to ``seconds``
    on a log scale."""
    times = {g: p.group_seconds(g) for g in ("compute", "memory", "pattern", "overhead")}  # type: ignore[arg-type]
    positive = {g: t for g, t in times.items() if t > 0}
    if not positive:
        return "unknown"
    return min(positive, key=lambda g: (abs(math.log(seconds / positive[g])), g))


def _point(sw: schema.Sweep, pt: schema.SweepPoint, roofs: RoofSet, backend: Backend,
           cache_bytes: int | None, checks: SpeedChecks | None = None) -> SweepPoint | None:
    """One point of a sweep."""
    timed, _ = _timing(pt.timing)
    stats = timed.per_call if timed is not None else None
    dtype = sw.dtype
    flops, moved, _ = _work(pt)
    an = pt.analytic
    if (flops is None or not moved) and isinstance(an, schema.Analytic):
        flops, moved = float(an.flops), float(an.minimum_bytes)
    if stats is None or flops is None or not moved:
        return None
    inventory = pt.kernels
    prediction: Prediction | None = None
    if isinstance(inventory, schema.KernelInventory) and inventory.kernels:
        prediction = predict_from_kernels(inventory.kernels, dtype, roofs,
                                          program_traffic(inventory),
                                          program_buffers(inventory),
                                          program_footprint(inventory))
    else:
        f = facts(pt, dtype)
        prediction = predict_facts(f, roofs) if f is not None else None
    m = miss(prediction.seconds if prediction else None, stats.own)
    why = ""
    observed = "unknown"
    if prediction is not None and m is not None:
        compiled = pt.compiled
        why = program_reason(prediction, m, Evidence(
            backend=backend, dtype=dtype, timing=stats,
            kernels=(compiled.kernels if compiled is not None else 0) or 1,
            loops=bool(compiled.while_loops) if compiled is not None else False,
            cache_bytes=cache_bytes,
            page_faults=timed.page_faults if timed is not None else None,
            fault_s=_fault_s(roofs),
            drift=checks.for_binding(prediction.binding) if checks is not None else None,
            main_roof=_main_roof(roofs), multi_pass=_multi_pass(inventory, dtype, roofs)))
        observed = _closest_group(stats.own, prediction)
    return SweepPoint(dict(pt.dims), flops, moved, stats.own, prediction, observed, why)


def _sweep(sw: schema.Sweep, roofs: RoofSet, backend: Backend, cache_bytes: int | None,
           checks: SpeedChecks | None = None) -> Sweep:
    points = tuple(p for p in (_point(sw, pt, roofs, backend, cache_bytes, checks)
                               for pt in sw.points)
                   if p is not None)
    predicted = next((p.dims for p in points if p.predicted_bound == "compute"), None)
    observed = next((p.dims for p in points if p.observed_bound == "compute"), None)
    return Sweep(sw.name, sw.title, sw.dtype, tuple(sw.parameters), points, predicted, observed)


def _accuracy(programs: Sequence[Program], sweeps: Sequence[Sweep]) -> Accuracy:
    errors = [p.miss.error for p in programs if p.miss is not None]
    errors += [m.error for sw in sweeps for pt in sw.points if (m := pt.miss) is not None]
    kernels = [r.miss.error for p in programs if p.kernels is not None for r in p.kernels.rows
               if r.miss is not None and (r.seconds or 0.0) >= SIGNIFICANT_KERNEL_S]
    return Accuracy(tuple(errors), tuple(kernels))


# --- the lab, the sharded workloads ------------------------------------------------------------

def _lab(results: schema.Results, a: Assumptions, roofs: Roofs, skipped: list[schema.Skip]
         ) -> tuple[tuple[Experiment, ...], tuple[Exercise, ...]]:
    """The lab's experiments and exercises, from the run's typed lab record, priced on this
    machine's measured ceilings."""
    measured_ceilings = experiments.MeasuredCeilings.of(results.ceilings, roofs.measured) \
        if isinstance(results.ceilings, schema.Ceilings) else None
    lab = results.lab
    exps: list[Experiment] = []
    # A lab record that names no experiment has no notebook.
    if isinstance(lab, schema.Lab) and lab.experiments.model_fields_set:
        # Every experiment is priced by the per-kernel model, on this machine's roofs where
        # they were measured and on the assumed budgets otherwise.
        exps = experiments.analyse(lab.experiments, cache_bytes=lab.cache_bytes,
                                   ceilings=measured_ceilings, peak=a.peak,
                                   bandwidth=a.bandwidth, roofs=roofs.kernels)
        skipped.extend(schema.Skip(what=f"experiment {e.title}", reason=e.verdict.text)
                       for e in exps if e.status == "unavailable")
    exercises = experiments.exercises(peak=a.peak, bandwidth=a.bandwidth,
                                      ceilings=measured_ceilings)
    return tuple(exps), tuple(exercises)


def _sharding(results: schema.Results, a: Assumptions, roofs: Roofs,
              skipped: list[schema.Skip]) -> ShardingStudy:
    """The sharded workloads' record with the communication and step models, or why the run
    has none."""
    observed = results.sharding
    if not isinstance(observed, schema.Sharding):
        return ShardingStudy(None, observed.reason)
    preset = roofs.preset
    measured = roofs.measured
    steps = study.step_study(
        observed, a.peak, a.bandwidth, a.interconnect, source=a.source,
        preset=preset.preset.name if preset is not None else None,
        measured_peak=measured.peak if measured is not None else None,
        measured_bandwidth=measured.memory_bandwidth if measured is not None else None)
    for w in observed.workloads:
        if w.check.get("passed") is False:
            skipped.append(schema.Skip(what=f"sharded workload {w.name}: check",
                                       reason="result differs from the NumPy reference"))
    return ShardingStudy(observed, model=study.comm_study(observed, a.peak, a.bandwidth,
                                                          a.interconnect, source=a.source),
                         steps=steps)


def _multi_pass(inventory: schema.KernelInventory | schema.Unavailable | None, dtype: str,
                roofs: RoofSet, predicted: Mapping[str, float] | None = None
                ) -> tuple[MultiPass, ...]:
    """The kernels of a kernel inventory that read their input more than once (their
    predictions ``predicted``'s where the kernel table has them)."""
    if not isinstance(inventory, schema.KernelInventory):
        return ()
    return multi_pass_kernels(inventory.kernels, dtype, roofs, predicted)


def _main_roof(roofs: RoofSet) -> tuple[str, float] | None:
    """The roof a program meets in main memory (name, B/s); None without bandwidth roofs."""
    roof = roofs.bandwidth_for(None, program=True)
    return (roof.name, roof.value) if roof is not None else None


def _run_note(options: schema.Options, checks: SpeedChecks | None = None) -> str:
    """What this run's options and its speed check mean for its numbers; only what
    happened."""
    notes: list[str] = []
    if options.quick:
        note = "quick mode: fewer timing samples"
        if options.sweeps:
            note += " and a reduced sweep"
        if options.sharding:
            note += "; the sharded analysis ran alongside the other measurements, so timings " \
                    "are noisier"
        notes.append(note)
    if checks is not None:
        notes.extend(checks.notes())
    return "; ".join(notes)


def _unique(items: list[schema.Skip]) -> list[schema.Skip]:
    seen: set[tuple[str, str]] = set()
    out = []
    for item in items:
        key = (item.what, item.reason)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out
