"""Rendering (no jax): results.json -> the analysis -> a view model of display strings -> one
section tree -> HTML and Markdown, all pure functions.

The view model holds display strings only: every number is one the analysis
(:func:`roofline_report.analysis.analyse.analyse`) computed, formatted with its kind by
``report/format.py``; nothing here computes a number. Its records are typed
(``report/view_records.py`` and the views of programs, sharding and a trace beside it), so a
field renamed is a type error. ``report/sections.py`` turns the view model into one tree of
blocks, which ``report/html.py`` and ``report/markdown.py`` render. Jinja2
(StrictUndefined, autoescaping) only lays out the page around it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from roofline_report.analysis import levels as levels_mod
from roofline_report.analysis import study, words
from roofline_report.analysis.analyse import SEED_NAME, Assumptions, analyse
from roofline_report.analysis.records import Analysis, Program
from roofline_report.analysis.roofs import ComputeRoof, RoofSet
from roofline_report.analysis.seed_records import DoubledTraffic, SeedExercise, SeedModel
from roofline_report.analysis.sharding_records import ProjectedStep
from roofline_report.analysis.speed_drift import Drift
from roofline_report.kinds import Kind, Quantity
from roofline_report.report import comm_figures, meta, page, sections, sharding_view, svg_sharing
from roofline_report.report import figures as figs
from roofline_report.report.ceilings_words import conditions_text, roof_warning
from roofline_report.report.format import (
    KIND_MARKERS,
    Num,
    count,
    decimal,
    miss_text,
    n,
    percent,
    plural,
    ratio,
    whole,
)
from roofline_report.report.kernel_view import kernel_views
from roofline_report.report.model_words import ACCELERATOR_MODEL_TEXT, MODEL_TEXT
from roofline_report.report.program_view import (
    NO_MODEL,
    has_model,
    program_sentence,
    program_view,
    timing_rows,
    tolerance,
    traffic_num,
    tree_summary,
)
from roofline_report.report.programs_roofline import accuracy, placements, programs_figure
from roofline_report.report.reconcile_words import flag_text
from roofline_report.report.roof_words import roofs_words
from roofline_report.report.summary_view import summary
from roofline_report.report.trace_view import trace_view
from roofline_report.report.view_records import (
    AccountingRow,
    AccountingView,
    Achieved,
    Budgets,
    BySize,
    CatalogRow,
    CeilingRow,
    ExerciseView,
    ExperimentRow,
    ExperimentView,
    KindView,
    LabExercise,
    LabRow,
    LabView,
    LevelRow,
    MeasuredView,
    ModelRow,
    ModelView,
    PresetPeak,
    PresetPlaced,
    PresetView,
    RateRow,
    SeedCheck,
    SeedView,
    SpeedCheck,
    SweepPoint,
    SweepRow,
    SweepsView,
    ViewModel,
)
from roofline_report.results import schema
from roofline_report.units import format_binary, format_intensity, format_si

__all__ = ["KIND_MARKERS", "Num", "Rendered", "ViewModel", "count", "n", "ratio", "render",
           "view_model"]


def view_model(results: schema.Results | Mapping[str, Any],
               assumptions: Assumptions | None = None) -> ViewModel:
    """Everything the report shows, as display strings and figure outputs: the observations in
    ``results`` analysed under ``assumptions`` (default: the budgets the run was given)."""
    return view_model_of(analyse(results, assumptions))


def view_model_of(an: Analysis) -> ViewModel:
    """The view model of one analysis."""
    seed = an.seed
    hyp = an.budgets.hypothetical
    seed_p = next((p for p in an.programs if p.name == SEED_NAME), None)
    teaching = an.results.options.teaching
    figures: list[figs.FigureOut] = [
        figs.seed_roofline(seed.model),
        figs.doubled_traffic(seed.experiment, seed.model.ridge),
    ] if teaching else []
    placed = programs_figure(an)
    if placed is not None:
        figures.append(placed)
    sweep_fig = _working_set_figure(an)
    if sweep_fig is not None:
        figures.append(sweep_fig)
    if an.roofs.measured is not None and any(sw.points for sw in an.sweeps):
        figures.append(figs.sweep_trajectories(an.sweeps, an.roofs.measured))
        figures.append(figs.sweep_prediction(an.sweeps, an.accuracy_of_sweeps))
    for e in an.experiments:
        if e.figure is not None and e.figure.series:
            figures.append(figs.experiment_figure(e.id, e.title, e.figure))
    views = kernel_views(an)
    figures += [v.figure_out for v in views if v.figure_out is not None]
    sharding = an.sharding
    if sharding.model is not None and sharding.model.bounds:
        figures.append(comm_figures.comm_times(sharding.model))
        if sharding.model.series is not None:
            figures.append(comm_figures.comm_scaling(sharding.model.series, sharding.model.kind))
    if sharding.steps is not None and any(isinstance(r, ProjectedStep)
                                          for r in sharding.steps.projection.rows):
        figures.append(comm_figures.comm_projection(sharding.steps.projection))
    traced = an.results.trace is not None  # a profile: the machine is the one that ran it
    return ViewModel(
        generator=an.results.generator,
        env=_environment(an.results.environment),
        machine=TRACE_MACHINE if traced else "this machine",
        kinds=[KindView(k.value, k.label, KIND_MARKERS[k.value],
                        TRACE_MEASURED if traced and k is Kind.MEASURED else k.description)
               for k in Kind],
        budgets=Budgets(
            peak=n(hyp.peak.value, "FLOP/s", Kind.HYPOTHETICAL),
            bandwidth=n(hyp.bandwidth.value, "B/s", Kind.HYPOTHETICAL),
            ridge=Num(format_intensity(seed.model.ridge), Kind.HYPOTHETICAL.value),
            source=hyp.source,
        ),
        seed=_seed_workload(seed_p) if seed_p else None,
        model=_model(seed.model),
        experiment=_experiment(seed.experiment),
        exercise=_exercise(seed.exercise),
        measured=_measured(an, seed_p),
        roof_warning=roof_warning(an),
        run_note=an.run_note,
        catalog=[_catalog_row(p) for p in an.programs],
        reconciliation=[_reconciliation(p) for p in an.programs if p.reconciliation],
        sharding=sharding_view.sharding(sharding),
        lab=_lab(an),
        sweeps=_sweeps(an),
        preset=_preset(an),
        figures={f.name: f for f in figures},
        skipped=[dict(s) for s in an.skipped],
        teaching=teaching,
        programs=[program_view(p) for p in an.programs
                  if p.user and p.workload.trace is None],
        trace=trace_view(an),
        kernels=views,
        summary=summary(an),
    )


TRACE_MACHINE = "the machine that ran the trace"
TRACE_MEASURED = "timed on the machine that ran the trace, read from its trace"


def _environment(env: schema.Environment) -> list[tuple[str, str]]:
    memory, clock = env.device_memory_bytes, env.clock_hz
    shown: list[tuple[str, str | int | None]] = [
        ("backend", env.backend), ("device", env.device_kind), ("devices", env.device_count),
        ("chip recognised", env.device_preset), ("vendor", env.device_vendor),
        ("CPU", env.cpu_model), ("CPU cores available", env.cpu_count),
        ("compute capability", env.compute_capability), ("cores", env.core_count),
        ("clock", format_si(clock, "Hz") if clock is not None else None),
        ("device memory", format_si(memory, "B") if memory is not None else None),
        ("platform", env.platform), ("Python", env.python), ("jax", env.jax),
        ("jaxlib", env.jaxlib), ("NumPy", env.numpy),
        ("CPU calls run", None if env.cpu_async_dispatch is None
         else "on a worker thread (asynchronous dispatch)" if env.cpu_async_dispatch
         else "on the calling thread")]
    rows = [(label, str(value)) for label, value in shown if value is not None]
    if env.device_unrecognised:
        rows.append(("chip recognised", f"none: {env.device_unrecognised}"))
    return rows


# --- the seed ---------------------------------------------------------------------------------

def _seed_workload(p: Program) -> SeedView:
    w = p.workload
    low = w.lowering
    lowered = low if isinstance(low, schema.Lowering) else None
    check = w.check
    passed = check if isinstance(check, schema.Check) else None
    xla = w.xla
    mem = w.memory
    ce = Kind.COMPILER_ESTIMATE
    return SeedView(
        args=", ".join(f"{a.dtype}{a.shape}" for a in w.args),
        lowering_available=low.available,
        lowering_reason=low.reason,
        ops=sorted(lowered.ops.items()) if lowered is not None else [],
        required=[(op, op not in p.missing_ops)
                  for op in (lowered.required_ops if lowered is not None else [])],
        stablehlo_text=lowered.stablehlo_text if lowered is not None else "",
        compiled_text=lowered.compiled_text if lowered is not None else "",
        lower_s=n(low.lower_s, "s", Kind.MEASURED),
        compile_s=n(low.compile_s, "s", Kind.MEASURED),
        check=SeedCheck(
            available=passed is not None,
            reason=check.reason if isinstance(check, schema.Unavailable) else "",
            passed=passed is not None and passed.passed,
            max_abs=ratio(passed.max_abs_error if passed is not None else None,
                          Kind.MEASURED, 3),
            max_rel=ratio(passed.max_rel_error if passed is not None else None,
                          Kind.MEASURED, 3),
            tolerance=tolerance(check),
            note=passed.note if passed is not None else "",
        ),
        xla_available=xla is not None and xla.available,
        xla_reason=xla.reason if xla is not None else "",
        xla=[(k, count(v, ce)) for k, v in sorted(xla.values.items())] if xla is not None
        else [],
        xla_raw=[(k, count(v, ce)) for k, v in sorted(xla.raw.items())] if xla is not None
        else [],
        memory_available=mem is not None and mem.available,
        memory=[(k.replace("_in_bytes", "").replace("_", " "), n(v, "B", ce))
                for k, v in sorted(mem.values.items())] if mem is not None else [],
    )


def _model(m: SeedModel) -> ModelView:
    rows = []
    for c, x, mc, r, b in zip(m.contracts, m.intensity, m.memory_ceiling, m.roofline, m.bound,
                              strict=True):
        rows.append(ModelRow(
            n=str(c.m),
            flops=count(c.flops, Kind.ANALYTIC),
            bytes=count(c.minimum_bytes, Kind.ANALYTIC),
            intensity=Num(format_intensity(x), Kind.ANALYTIC.value),
            memory_ceiling=n(mc, "FLOP/s", Kind.HYPOTHETICAL),
            ceiling=n(r, "FLOP/s", Kind.HYPOTHETICAL),
            bound=b,
        ))
    return ModelView(rows=rows, ridge=Num(format_intensity(m.ridge), Kind.HYPOTHETICAL.value),
                     ridge_size=_ridge_size(m))


def _ridge_size(m: SeedModel) -> tuple[str | Num, ...]:
    """What the size of the square matmul at the ridge means: a size, no size below 1 (every
    size compute-bound) or a size whose matrices no memory holds (every size that runs
    memory-bound), from the numbers."""
    size, nbytes = m.ridge_square_size, m.ridge_square_bytes
    parts: tuple[str | Num, ...] = (": a square float32 matmul of size n = ",
                                    Num(whole(size, 4), Kind.HYPOTHETICAL.value))
    if size < 1:
        return (*parts, ", below the smallest size n = 1, so no square float32 matmul is below "
                "the ridge: every size is compute-bound.")
    if nbytes > study.BEYOND_MEMORY_BYTES:
        return (*parts, ", whose three matrices would take ", n(nbytes, "B", Kind.HYPOTHETICAL),
                ", beyond ", n(study.BEYOND_MEMORY_BYTES, "B", Kind.HYPOTHETICAL),
                " (more than any device's memory holds), so every square float32 matmul that "
                "fits in memory is below the ridge: memory-bound.")
    return (*parts, ".")


def _experiment(e: DoubledTraffic) -> ExperimentView:
    rows = []
    for size, x, xr, r, rv, q in zip(e.sizes, e.intensity, e.reduced_intensity, e.roofline,
                                     e.revised, e.ratio, strict=True):
        rows.append(ExperimentRow(
            n=str(size),
            intensity=Num(format_intensity(x), Kind.ANALYTIC.value),
            reduced=Num(format_intensity(xr), Kind.ANALYTIC.value),
            ceiling=n(r, "FLOP/s", Kind.HYPOTHETICAL),
            revised=n(rv, "FLOP/s", Kind.HYPOTHETICAL),
            ratio=ratio(q, Kind.HYPOTHETICAL),
        ))
    return ExperimentView(rows)


def _exercise(x: SeedExercise) -> ExerciseView:
    (m, k), (_, nn) = x.shapes
    return ExerciseView(
        shapes=f"({m}, {k}) and ({k}, {nn})",
        itemsize=str(x.itemsize),
        flops=count(x.flops, Kind.ANALYTIC),
        bytes=count(x.minimum_bytes, Kind.ANALYTIC),
        intensity=Num(f"{decimal(x.intensity, 6)} FLOP/B", Kind.ANALYTIC.value),
        fraction=str(Fraction(int(x.flops), int(x.minimum_bytes))),
        bw_times_intensity=n(x.bandwidth_times_intensity, "FLOP/s", Kind.HYPOTHETICAL),
        peak=n(x.peak, "FLOP/s", Kind.HYPOTHETICAL),
        bandwidth=n(x.bandwidth, "B/s", Kind.HYPOTHETICAL),
        bound=x.bound,
        # The comparison the solution states, from the numbers it states.
        relation=words.relation(x.intensity, x.peak / x.bandwidth),
        m=str(m), k=str(k), n=str(nn),
    )


# --- measured on this machine -----------------------------------------------------------------

def _unstable(timing: schema.Timing | None) -> bool:
    """Whether a ceiling's samples spread too far to trust: their spread (IQR ÷ median) over
    the limit a timing is held to. A ceiling keeps its best sample of a few, by plan, so the
    number of samples alone does not make it unstable."""
    from roofline_report.analysis.stats import UNSTABLE_SPREAD, Stats

    samples = timing.per_call_s if timing is not None else []
    return len(samples) > 1 and Stats(samples).spread > UNSTABLE_SPREAD


def _ceiling_rows(c: schema.Ceilings) -> list[CeilingRow]:
    rows = []
    measured: list[tuple[str, str, list[schema.ComputeCeiling] | list[schema.BandwidthCeiling]]] \
        = [("compute", "FLOP/s", c.compute), ("bandwidth", "B/s", c.bandwidth)]
    for group, unit, entries in measured:
        for e in entries:
            rows.append(CeilingRow(group, e.name, n(e.value, unit, Kind.MEASURED),
                                   e.available, e.reason, _unstable(e.timing)))
    floors: tuple[tuple[schema.LaunchCeiling | schema.SplitLaunchCeiling
                        | schema.PageFaultCeiling | None, str, str], ...] = (
        (c.launch, "launch", "one more kernel in a program"),
        (c.split_launch, "launch", "a kernel split across worker threads, more"),
        (c.page_fault, "page fault", "a first write to a fresh page of memory"))
    for floor, group, name in floors:
        if floor is not None:
            rows.append(CeilingRow(group, name, n(floor.value, "s", Kind.MEASURED),
                                   floor.available, floor.reason, _unstable(floor.timing)))
    split = c.split_launch
    if split is not None and split.available and split.enqueued is not None:
        rows.append(CeilingRow(
            "launch", "a kernel split across worker threads, more, calls enqueued",
            n(split.enqueued, "s", Kind.MEASURED), True, "",
            _unstable(split.timing_enqueued)))
    d = c.dispatch
    if d.enqueued:
        rows.append(CeilingRow("dispatch", "one tiny call among many enqueued",
                               n(d.enqueued, "s", Kind.MEASURED), True, "",
                               _unstable(d.timing_enqueued)))
    rows.append(CeilingRow("dispatch", "one tiny call", n(d.value, "s", Kind.MEASURED),
                           d.available, d.reason, _unstable(d.timing)))
    return rows


def _by_size(roofs: RoofSet | None) -> list[BySize]:
    """Each compute roof measured at several product sizes: the rate at each size, the rates
    a kernel's product is held to (interpolated between them)."""
    if roofs is None:
        return []
    # Each size's rate as measured and the rate a product of that size is held to
    # (ComputeRoof.rate_at: never above the roof), so the table never shows a rate above the
    # roof printed above it without saying which one the model uses.
    return [BySize(r.name, [(n(flops, "FLOP", Kind.MEASURED), n(value, "FLOP/s", Kind.MEASURED),
                             n(r.rate_at(flops), "FLOP/s", Kind.MEASURED))
                            for flops, value in r.by_flops])
            for r in roofs.compute if r.by_flops]


def _measured(an: Analysis, seed_p: Program | None) -> MeasuredView:
    ceilings = an.results.ceilings
    timing, timing_reason, achieved, seed_binding = None, "", None, ""
    if seed_p is not None:
        timing = timing_rows(seed_p)
        timing_reason = seed_p.timing_reason
        if seed_p.achieved is not None and seed_p.bytes and seed_p.seconds:
            achieved = Achieved(
                flops_per_s=n(seed_p.achieved, "FLOP/s", Kind.MEASURED),
                bytes_per_s=n(seed_p.bytes / seed_p.seconds, "B/s", Kind.MEASURED),
            )
        if seed_p.prediction is not None and an.roofs.measured is not None:
            seed_binding = (f"On this machine the seed's prediction is bound by "
                            f"{seed_p.prediction.binding.label} "
                            f"({seed_p.prediction.binding.roof}).")
    out = MeasuredView(
        timing=timing, timing_reason=timing_reason, achieved=achieved,
        seed_binding=seed_binding,
        ceilings_reason=ceilings.reason if isinstance(ceilings, schema.Unavailable) else "",
        placement=placements(an),
        model_text=ACCELERATOR_MODEL_TEXT if an.backend.accelerator else MODEL_TEXT,
        placement_roofs=("this machine's measured roofs" if an.roofs.measured is not None
                         else "the assumed budgets (hypothetical)"
                         if an.roofs.kernels is an.roofs.hypothetical
                         else roofs_words(an.roofs.kernels)))
    if not isinstance(ceilings, schema.Ceilings):
        return out
    origin, notes = _ceilings_origin(an)
    levels, levels_reason, rates, caches = _levels_and_rates(an, ceilings)
    return replace(out, ceilings=_ceiling_rows(ceilings), by_size=_by_size(an.roofs.measured),
                   ceilings_origin=origin, ceilings_notes=notes,
                   ceilings_conditions=conditions_text(an), accuracy=accuracy(an),
                   speed_checks=_speed_checks(an), levels=levels, levels_reason=levels_reason,
                   rates=rates, caches=caches, level_rule=levels_mod.RULE)


def _speed_checks(an: Analysis) -> list[SpeedCheck]:
    """Each ceiling timed again after the programs: what was timed, its rate at the ceilings and
    after the programs, and their ratio (below 1: slower after)."""
    checks = an.speed_checks
    if checks is None:
        return []
    drifts = ([checks.compute] if checks.compute is not None else []) + list(checks.memory) \
        + ([checks.dispatch] if checks.dispatch is not None else [])
    return [SpeedCheck(probe=d.probe, before=_checked(d, d.ceiling_value),
                       after=_checked(d, d.value),
                       ratio=ratio(d.ratio, Kind.MEASURED, 3), drifted=d.drifted)
            for d in drifts]


def _checked(d: Drift, value: float) -> Num:
    """A check's rate as the page shows it (:meth:`Drift.as_shown`: the dispatch floor's as
    the time of one call)."""
    shown, unit = d.as_shown(value)
    return n(shown, unit, Kind.MEASURED)


_RATE_UNITS = {"1/s": "/s", "elements/s": " elements/s", "FLOP/s": "FLOP/s",
               "comparisons/s": " comparisons/s", "runs/s": " runs/s"}


def _rate_sizes(rate: schema.RateCeiling) -> str:
    """The sizes a rate was measured at (operations per call), '' for a rate of one size."""
    sizes = sorted(x.elements for x in rate.by_size if x.elements)
    if not sizes:
        return ""
    unit = {"FLOP/s": " FLOP", "comparisons/s": " comparisons",
            "runs/s": " runs"}.get(rate.unit, " elements")
    return ", ".join(f"{x:,}" for x in sizes) + unit


def _ceilings_origin(an: Analysis) -> tuple[str, tuple[str, ...]]:
    """The sentence saying whether the ceilings were measured in this run or reused from the
    ceilings cache (when, and their age as of this run), and the cache's notes."""
    o = an.ceilings_origin
    if o is None:
        return "", ()
    if not o.cached:
        return "These ceilings were measured in this run.", o.notes
    when = (f" on {o.measured_at[:10]} at {o.measured_at[11:19]} UTC"
            if o.measured_at and len(o.measured_at) >= 19 else "")
    age = ("" if o.age_days is None else
           " (less than a day old as of this run)" if o.age_days == 0 else
           f" (age {plural(o.age_days, 'day', 'days')} as of this run)")
    again = ("analyze(..., remeasure=True)"
             if an.results.options.origin == "python"
             else "--remeasure")
    return (f"These ceilings were measured{when} on this machine and reused from the "
            f"ceilings cache{age}; {again} measures them again.", o.notes)


def _levels_and_rates(an: Analysis, c: schema.Ceilings
                      ) -> tuple[list[LevelRow], str, list[RateRow], list[str]]:
    """The memory levels found in the working-set sweep (and why none, where none), the
    measured operation rates and the caches the machine reports (of the ceilings ``c``)."""
    sweep = c.working_set
    levels = [LevelRow(level=lv.name, kernel=lv.kernel, range=figs.working_sets(*lv.window),
                       value=n(lv.value, "B/s", Kind.MEASURED), rule=lv.rule,
                       unstable=lv.unstable or "")
              for lv in an.roofs.levels]
    if sweep is None:
        why = "not measured in this run"
    elif isinstance(sweep, schema.Unavailable):
        why = sweep.reason
    else:
        why = "" if levels else "no level found: the rates did not form plateaus"
    rates = [RateRow(name=e.name,
                     value=n(e.value, _RATE_UNITS.get(e.unit, "/s"), Kind.MEASURED)
                     if e.available else Num("not available"),
                     roof=e.roof, reason=e.reason, available=e.available,
                     unstable=_unstable(e.timing), sizes=_rate_sizes(e),
                     one_thread=e.threads == 1 and any(
                         o.op == e.op and o.dtype == e.dtype and (o.threads or 0) > 1
                         for o in c.rates),
                     from_memory=e.from_memory)
             for e in c.rates]
    caches = [f"L{x.level} {format_binary(x.size)}" for x in c.caches]
    return levels, why, rates, caches


def _working_set_figure(an: Analysis) -> figs.FigureOut | None:
    ceilings = an.results.ceilings
    if not isinstance(ceilings, schema.Ceilings):
        return None
    sweep = ceilings.working_set
    if not isinstance(sweep, schema.WorkingSetSweep):
        return None
    series = [figs.SweepSeries(k.name, tuple(
        (p.bytes, float(p.value)) for p in k.points
        if p.available and p.value)) for k in sweep.kernels]
    bands = [figs.LevelBand(lv.name, lv.kernel, lv.value, lv.above or lv.at_least, lv.up_to,
                            figs.working_sets(*lv.window)) for lv in an.roofs.levels]
    caches = [(f"L{x.level}", x.size) for x in ceilings.caches]
    return figs.working_set(series, bands, caches)


# --- the catalog and the accounting -----------------------------------------------------------

def _catalog_row(p: Program) -> CatalogRow:
    w = p.workload
    analytic = w.analytic if isinstance(w.analytic, schema.Analytic) else None
    check = w.check
    passed = check if isinstance(check, schema.Check) else None
    tree = w.arguments
    args = ", ".join(f"{x.dtype}{x.shape}" for x in w.args)
    if tree is not None and not args:
        args = tree_summary(tree)
    return CatalogRow(
        title=p.title, dtype=p.dtype, args=args,
        flops=count(analytic.flops, Kind.ANALYTIC) if analytic is not None
        else Num(NO_MODEL),
        bytes=n(analytic.minimum_bytes, "B", Kind.ANALYTIC) if analytic is not None
        else traffic_num(p),
        intensity=Num(format_intensity(analytic.flops / analytic.minimum_bytes),
                      Kind.ANALYTIC.value) if analytic is not None else Num(NO_MODEL),
        check=("passed" if passed is not None and passed.passed else
               "failed" if passed is not None else "not run"),
        check_max_abs=ratio(passed.max_abs_error if passed is not None else None,
                            Kind.MEASURED, 3),
        check_max_rel=ratio(passed.max_rel_error if passed is not None else None,
                            Kind.MEASURED, 3),
        check_tolerance=tolerance(check),
        check_note=passed.note if passed is not None else "",
        time=n(p.seconds, "s", Kind.MEASURED) if p.timing else Num("not measured"),
        unstable=bool(p.timing and p.timing.unstable),
        achieved=n(p.achieved, "FLOP/s", Kind.MEASURED) if p.achieved is not None
        else Num("not measured"),
        user=p.user,
        anchor=meta.workload_anchor(p.name),
    )


def _reconciliation(p: Program) -> AccountingView:
    rec = p.reconciliation
    if rec is None or not rec.rows:
        return AccountingView(title=p.title, rows=[],
                              reason=rec.reason if rec is not None else "", efficiency=None)
    model = has_model(p)
    rows = []
    for r in rec.rows:
        analytic = count(r.analytic, Kind.ANALYTIC)
        if not model:
            analytic = traffic_num(p) if r.quantity == "bytes" else Num(NO_MODEL)
        rows.append(AccountingRow(
            quantity=r.quantity, analytic=analytic,
            ours=count(r.ours, Kind.ANALYTIC),
            xla=count(r.xla, Kind.COMPILER_ESTIMATE),
            kernels=count(r.kernels, Kind.ANALYTIC),
            jax=count(r.jax, Kind.COMPILER_ESTIMATE),
            agree=r.agree,
            flags=[(f.cause, flag_text(f)) for f in r.flags],
        ))
    eff = rec.traffic_efficiency
    return AccountingView(
        title=p.title, rows=rows, reason="",
        efficiency=ratio(eff, Kind.COMPILER_ESTIMATE, 3) if eff else None,
        program=program_sentence(p.workload.compiled),
        extra=rec.kernel_columns)


# --- the lab, the sweeps, the spec sheet ------------------------------------------------------

def _quantity(q: Quantity) -> Num:
    if q.value is None:
        return Num("unknown", q.kind.value)
    value, unit = q.value, q.unit
    if unit in ("×", "x", "ratio", "columns", "elements", "") or "FLOP/B" in unit:
        number = whole(value, 3)
        if unit == "×":
            return Num(f"{number}×", q.kind.value)
        return Num(number + (f" {unit}" if unit not in ("", "ratio") else ""), q.kind.value)
    return Num(format_si(value, unit), q.kind.value)


def _lab(an: Analysis) -> LabView:
    by_after: dict[str, list[LabExercise]] = {}
    for x in an.exercises:
        by_after.setdefault(x.after, []).append(LabExercise(x.id, x.question, list(x.solution)))
    rows = [LabRow(id=e.id, title=e.title, hypothesis=e.hypothesis,
                   prediction=_quantity(e.prediction), prediction_note=e.prediction.note,
                   measurement=_quantity(e.measurement), measurement_note=e.measurement.note,
                   status=e.status, verdict=e.verdict.text, figure=f"lab_{e.id}",
                   exercises=by_after.pop(e.id, [])) for e in an.experiments]
    leftover = [x for xs in by_after.values() for x in xs]
    lab = an.results.lab
    held = sum(1 for r in rows if r.status == "held")
    return LabView(rows=rows, exercises=leftover, held=str(held), count=str(len(rows)),
                   reason="" if rows else lab.reason if isinstance(lab, schema.Unavailable)
                   else "not run")


def _dims_text(dims: Mapping[str, Any] | None) -> str:
    return ", ".join(f"{k} = {v}" for k, v in sorted(dims.items())) if dims else "not reached"


def _sweeps(an: Analysis) -> SweepsView:
    options = an.results.options
    if not an.sweeps:
        if options.sweeps:
            why = "no workload in this run declares a sweep"
        elif options.origin == "python":
            why = "roofline_report.analyze() runs no sweeps"
        else:
            why = "no sweeps in this run (--no-sweeps)"
        return SweepsView(available=False, reason=why)
    if an.roofs.measured is None:
        return SweepsView(
            available=False,
            reason="the sweeps are predicted from this machine's measured ceilings, "
            + ("which this run did not measure" if not options.ceilings
               else "which could not be measured (see what was not available)"))
    rows = [SweepRow(title=sw.title, points=str(len(sw.points)),
                     predicted=_dims_text(sw.predicted_crossing),
                     observed=_dims_text(sw.observed_crossing),
                     error=percent(sw.median_error, Kind.PREDICTED)) for sw in an.sweeps]
    points = [SweepPoint(title=sw.title, size=_dims_text(pt.dims),
                         predicted=n(pt.prediction.seconds if pt.prediction else None, "s",
                                     Kind.PREDICTED),
                         measured=n(pt.measured, "s", Kind.MEASURED), miss=miss_text(pt.miss),
                         bound=pt.prediction.binding.label if pt.prediction else "unknown",
                         why=pt.why)
              for sw in an.sweeps for pt in sw.points]
    return SweepsView(available=True, rows=rows, point_rows=points,
                      points=str(sum(len(sw.points) for sw in an.sweeps)),
                      median_error=percent(an.accuracy_of_sweeps, Kind.PREDICTED))


def _preset(an: Analysis) -> PresetView | None:
    preset = an.roofs.preset.to_json() if an.roofs.preset is not None else None
    roof_set = an.roofs.spec_sheet
    if not preset or roof_set is None:
        return None
    sp = Kind.SPEC_SHEET
    hbm = preset["hbm_bandwidth"]["value"]
    peaks = [PresetPeak(dtype=dtype, value=n(q["value"], q.get("unit", "FLOP/s"), sp),
                        ridge=Num(format_intensity(q["value"] / hbm), sp.value),
                        note=q.get("note", ""))
             for dtype, q in sorted(preset["peaks"].items()) if q.get("value")]
    ic = preset.get("interconnect") or {}
    launch = roof_set.floor("launch")
    placed: list[PresetPlaced] = []
    for p in an.programs:
        s = p.spec_sheet
        if s is None or p.intensity is None:
            continue
        placed.append(PresetPlaced(
            title=p.title, intensity=Num(format_intensity(p.intensity), Kind.ANALYTIC.value),
            roof_name=s.roof_name, bound=s.binding, roofline=n(s.roofline_s, "s", sp),
            time=n(s.predicted_s, "s", s.kind)))
    default = roof_set.compute_for("float32")
    launch_record = preset.get("launch") or {}
    return PresetView(
        name=preset["name"], chosen=preset.get("chosen", ""),
        peaks=peaks, hbm=n(hbm, "B/s", sp),
        interconnect=n((ic.get("bandwidth") or {}).get("value"), "B/s", sp) if ic
        else Num("not published"),
        interconnect_name=ic.get("name", ""),
        sources=[(s_["title"], s_["url"]) for s_ in preset.get("sources", [])],
        notes=preset.get("notes", ""),
        roof_label=default.name if default is not None else "",
        float32_roof=_float32_roof_text(default),
        placed=placed,
        launch=n(launch.seconds, "s", launch.kind) if launch is not None else None,
        launch_note=launch.provenance if launch is not None else "",
        launch_sources=[(s_["title"], s_["url"])
                        for s_ in launch_record.get("sources", [])] if launch else [],
        launch_binds=_launch_binds(placed) if launch is not None else "",
        # The kernels were predicted on this sheet too: the page says how the two times differ.
        kernels_on_sheet=an.roofs.kernels is roof_set,
    )


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


def _launch_binds(placed: Sequence[PresetPlaced]) -> str:
    """How many of the placed programs the launch floor binds (those whose roofline time is
    below it), as a sentence; '' when none is placed."""
    total = len(placed)
    bound = sum(1 for r in placed if r.bound == "launch")
    if total == 0:
        return ""
    if total == 1:
        return ("The launch floor binds the one program placed: its roofline time is below it."
                if bound else "The launch floor does not bind the one program placed: its "
                "roofline time is at or above it.")
    programs = plural(total, "program", "programs")
    if bound == 0:
        return f"The launch floor binds none of the {programs}: no roofline time is below it."
    if bound == total:
        return f"The launch floor binds all {programs}: every roofline time is below it."
    times = "time is" if bound == 1 else "times are"
    return (f"The launch floor binds {bound} of the {programs}, whose roofline {times} below "
            "it; the others keep their roofline time.")


# --- entry points -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Rendered:
    html: str
    markdown: str
    figures: dict[str, str]  # name -> SVG text
    skipped: list[dict[str, str]]  # what was not available, measured or derived


def render(results: schema.Results | Mapping[str, Any], assumptions: Assumptions | None = None,
           *, title: str | None = None) -> Rendered:
    """Render HTML, Markdown and SVGs from a validated results document (observations), under
    ``assumptions`` (default: the budgets the run was given); ``title`` replaces the page's
    default title."""
    an = analyse(results, assumptions)
    return render_analysis(an, title=title)


def render_analysis(an: Analysis, *, title: str | None = None) -> Rendered:
    """Render one analysis (its figures' SVG written on two cores where there are two:
    :mod:`.svg_sharing`)."""
    with svg_sharing.sharing():
        vm = view_model_of(an)
    doc = sections.document(vm)
    context = {"generator": vm.generator, "kinds": vm.kinds}
    page_meta = meta.page_meta(an.results, title,
                               [p.title for p in an.programs if p.user])
    return Rendered(
        html=page.render_html("report.html.j2", doc, meta=page_meta, **context),
        markdown=page.render_markdown("report.md.j2", doc, meta=page_meta.for_markdown(),
                                      **context),
        figures={name: f.svg for name, f in vm.figures.items()},
        skipped=list(vm.skipped),
    )

