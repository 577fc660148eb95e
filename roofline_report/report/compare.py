"""``roofline-report compare A/results.json B/results.json ... --out DIR`` (no jax).

Sets saved runs side by side: their environments, measured ceilings with ratios to the first run,
the workloads every run holds (times, achieved rates, speed-ups against run 1), each run's own
workloads apart, the experiments' verdicts, and one roofline figure with every run's measured roof
and points. Each run is analysed on its own roofs, as its own report would be; version-2 files are
converted on reading. One file given twice is refused.

``--fail-if COND`` (see :mod:`roofline_report.analysis.gate`) gates run 2 (NEW) against run 1
(BASE): the
report then opens with the regressions, each is one line on stderr, and the exit code is 4.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline_report.analysis import gate
from roofline_report.analysis.analyse import analyse
from roofline_report.analysis.records import Analysis, Program
from roofline_report.analysis.roofs import RoofSet
from roofline_report.errors import InputError
from roofline_report.kinds import Kind
from roofline_report.report import figures as figs
from roofline_report.report import meta, page
from roofline_report.report.blocks import (
    Block,
    BulletList,
    Cell,
    Code,
    Document,
    Figure,
    Group,
    Link,
    Note,
    Section,
    Status,
    Strong,
    text,
)
from roofline_report.report.compare_kernels import KernelComparison, kernel_comparisons
from roofline_report.report.format import Num, n, plural, ratio
from roofline_report.report.markdown import escape as md_escape
from roofline_report.report.section_parts import c, num, p, table
from roofline_report.results import io as results_mod
from roofline_report.results.schema import (
    BandwidthCeiling,
    Ceilings,
    ComputeCeiling,
    Environment,
    Results,
)
from roofline_report.units import format_si


def load_runs(paths: Sequence[str]) -> list[tuple[str, Results]]:
    """Load, convert (version 2) and validate each file; each problem is one line naming the
    file as given."""
    _refuse_repeats(paths)
    runs: list[tuple[str, Results]] = []
    for path in paths:
        data = results_mod.read(path)
        runs.append((_label(path, data.environment.backend, data.environment.device_kind,
                            len(runs)), data))
    return runs


def _refuse_repeats(paths: Sequence[str]) -> None:
    """One file given twice compares a run with itself: refuse it, naming the file."""
    seen: dict[Path, str] = {}
    for path in paths:
        try:
            key = Path(path).resolve()
        except (OSError, RuntimeError):
            key = Path(path).absolute()
        if key in seen:
            same = f"{path}" if seen[key] == path else f"{seen[key]} and {path}"
            raise InputError(f"compare: {same}: the same file is given twice; compare "
                             "different runs")
        seen[key] = path


NOT_MEASURED = "not measured"
NOT_IN_RUN = "not in this run"


def _label(path: str, backend: str, device: str, index: int) -> str:
    folder = Path(path).resolve().parent.name
    return f"{index + 1}: {folder} ({backend}, {device})"


def _ceiling_values(results: Results) -> dict[str, tuple[float | None, str]]:
    """A run's measured ceilings by name ("compute: NAME"), each with its unit; None where a
    ceiling could not be measured, nothing where the run measured none."""
    c = results.ceilings
    out: dict[str, tuple[float | None, str]] = {}
    if not isinstance(c, Ceilings):
        return out
    measured: list[tuple[str, str, list[ComputeCeiling] | list[BandwidthCeiling]]] = [
        ("compute", "FLOP/s", c.compute), ("bandwidth", "B/s", c.bandwidth)]
    for group, unit, entries in measured:
        for e in entries:
            out[f"{group}: {e.name}"] = (e.value if e.available else None, unit)
    d = c.dispatch
    out["dispatch: one tiny call"] = (d.value if d.available else None, "s")
    return out


#: The rows of the environment compared side by side (the fields' names).
ENVIRONMENT_ROWS = ("backend", "device_kind", "cpu_model", "jax", "jaxlib", "python")


def _environment_values(env: Environment) -> tuple[str, ...]:
    """The run's values of :data:`ENVIRONMENT_ROWS`, in their order ('' where not recorded)."""
    return (env.backend, env.device_kind, env.cpu_model or "", env.jax, env.jaxlib, env.python)


def _measured(value: float | None, unit: str) -> Num:
    """A measured value, or 'not measured' where the run has none (never 'unknown M')."""
    return n(value, unit, Kind.MEASURED) if value is not None else Num(NOT_MEASURED)


def _ratio(value: float | None, base: float | None) -> Num:
    if value is None or not base:
        return Num(NOT_MEASURED)
    return ratio(value / base, Kind.MEASURED, 3)


@dataclass(frozen=True, slots=True)
class _Held:
    """A program name across the runs: its title, anchor, and per run whether the run holds
    it, its time and its rate (None where the run does not hold it)."""

    name: str
    title: str
    anchor: str
    present: list[bool]
    times: list[float | None]
    rates: list[float | None]


@dataclass(frozen=True, slots=True)
class CeilingComparison:
    """A ceiling in every run, and each later run's ratio to run 1."""

    name: str
    cells: list[Num]
    ratios: list[Num]


@dataclass(frozen=True, slots=True)
class WorkloadComparison:
    """A workload every run holds: its time and rate in each, speed-ups against run 1."""

    name: str
    title: str
    anchor: str
    times: list[Num]
    rates: list[Num]
    speedups: list[Num]
    offender: bool


@dataclass(frozen=True, slots=True)
class PartialWorkload:
    """A workload only some runs hold: the runs that do and its time in each."""

    name: str
    title: str
    anchor: str
    times: list[Num]
    runs: str


@dataclass(frozen=True, slots=True)
class VerdictRow:
    """An experiment's verdict in each run ('' where the run did not run it)."""

    title: str
    verdicts: list[str]


@dataclass(frozen=True, slots=True)
class CompareView:
    """The comparison's view model: what its sections show."""

    labels: list[str]
    env: list[tuple[str, list[str]]]
    ceilings: list[CeilingComparison]
    workloads: list[WorkloadComparison]
    partial: list[PartialWorkload]
    verdicts: list[VerdictRow]
    figure: figs.FigureOut | None
    gate: gate.GateResult | None
    kernels: list[KernelComparison]


def _workload_rows(runs: Sequence[tuple[str, Analysis]], names: Sequence[str]
                   ) -> list[_Held]:
    """One row per program name: its title, anchor, and per run its time and rate (or None
    when the run does not hold it)."""
    by_run = [{p.name: p for p in an.programs} for _, an in runs]
    rows = []
    for name in names:
        recs: list[Program | None] = [b.get(name) for b in by_run]
        first = next(r for r in recs if r is not None)
        rows.append(_Held(name=name, title=first.title, anchor=meta.workload_anchor(name),
                          present=[r is not None for r in recs],
                          times=[r.seconds if r is not None else None for r in recs],
                          rates=[r.achieved if r is not None else None for r in recs]))
    return rows


def render_comparison(loaded: Sequence[tuple[str, Results | Mapping[str, Any]]],
                      conditions: Sequence[gate.Condition] = (), title: str | None = None,
                      ) -> tuple[str, str, dict[str, str], dict[str, Any]]:
    """HTML, Markdown, SVGs and a JSON summary of the comparison (pure). With ``conditions``,
    run 2 (NEW) is gated against run 1 (BASE) and the summary holds the gate's findings."""
    # Each run is analysed as its own report would be: the same derived values, under the
    # budgets that run was given.
    runs = [(label, analyse(data)) for label, data in loaded]
    labels = [label for label, _ in runs]
    env_keys = ENVIRONMENT_ROWS
    environments = [_environment_values(an.results.environment) for _, an in runs]
    envs = [[run[row] for run in environments] for row in range(len(env_keys))]
    envs.append([meta.measured_date(an.results) or "not recorded" for _, an in runs])
    envs.append([plural(len(an.programs), "workload", "workloads") for _, an in runs])
    env_rows = list(zip((*env_keys, "measured (UTC)", "workloads"), envs, strict=True))

    ceilings_by_run = [_ceiling_values(an.results) for _, an in runs]
    names = sorted({k for c in ceilings_by_run for k in c})
    ceiling_rows: list[CeilingComparison] = []
    for name in names:
        values = [c.get(name, (None, ""))[0] for c in ceilings_by_run]
        unit = next((c[name][1] for c in ceilings_by_run if name in c), "")
        ceiling_rows.append(CeilingComparison(name, [_measured(v, unit) for v in values],
                                              [_ratio(v, values[0]) for v in values[1:]]))

    result = (gate.evaluate(conditions, runs[0][1], runs[1][1]) if conditions else None)
    offenders = result.offenders if result else ()
    all_names = list(dict.fromkeys(p.name for _, an in runs for p in an.programs))
    rows = _workload_rows(runs, all_names)
    common = [r for r in rows if all(r.present)]
    common.sort(key=lambda r: r.name not in offenders)  # offenders first, else run order
    some = [r for r in rows if not all(r.present)]
    workload_rows = [WorkloadComparison(
        name=r.name, title=r.title, anchor=r.anchor,
        times=[_measured(t, "s") for t in r.times],
        rates=[_measured(x, "FLOP/s") for x in r.rates],
        speedups=[_ratio(r.times[0], t) for t in r.times[1:]],
        offender=r.name in offenders) for r in common]
    partial_rows = [PartialWorkload(
        name=r.name, title=r.title, anchor=r.anchor,
        times=[_measured(t, "s") if here else Num(NOT_IN_RUN)
               for t, here in zip(r.times, r.present, strict=True)],
        runs=", ".join(str(i) for i, here in enumerate(r.present, 1) if here)) for r in some]

    verdict_rows = _verdicts(runs)
    sets, points = [], []
    for i, (_, an) in enumerate(runs, 1):
        if an.roofs.measured is not None:
            m = an.roofs.measured
            sets.append(RoofSet(f"run {i}", m.kind, m.compute, m.bandwidth, m.floors, m.rates))
        for prog in an.programs:
            if prog.intensity is not None and prog.achieved is not None:
                points.append(figs.PlotPoint(
                    f"{prog.title} [run {i}]", prog.intensity, prog.achieved, f"run {i}", 0.0,
                    f"{prog.title}, run {i}: {format_si(prog.seconds, 's')} per call"))
    svgs: dict[str, str] = {}
    figure = None
    if sets:
        fig_title = "Measured rooflines of the compared runs"
        desc = (f"{plural(len(sets), 'measured roof set', 'measured roof sets')} with the "
                "programs each run placed at their compiled-program intensity; the colour "
                "and the label in brackets give the run.")
        figure = figs.roofline("compare_roofline", fig_title, desc, sets, points,
                               colour_by_set=True)
        svgs["compare_roofline"] = figure.svg
    kernels = kernel_comparisons(runs)
    vm = CompareView(labels=labels, env=env_rows, ceilings=ceiling_rows,
                     workloads=workload_rows, partial=partial_rows, verdicts=verdict_rows,
                     figure=figure, gate=result, kernels=kernels)
    tree = comparison_document(vm)
    default = meta.DEFAULT_COMPARE_TITLE.format(runs=len(labels))
    provenance = [f"Run {label}: measured "
                  f"{meta.measured_date(an.results) or '(date not recorded)'} "
                  f"on {meta.machine(an.results.environment)}."
                  for label, an in runs]
    context = {"runs": len(labels), "title": title or default,
               "version": runs[0][1].results.generator.version,
               "kinds": _kinds_lede(result)}
    html = page.render_html("compare.html.j2", tree, provenance=provenance, **context)
    md = page.render_markdown("compare.md.j2", tree,
                              provenance=[md_escape(x) for x in provenance],
                              **{**context, "title": md_escape(context["title"])})
    doc: dict[str, Any] = {
        "runs": labels,
        "ceilings": {r.name: [c.text for c in r.cells] for r in ceiling_rows},
        "workloads": {r.title: [t.text for t in r.times] for r in workload_rows},
        "only": {str(i): [r.name for r in some if r.present[i - 1]]
                 for i in range(1, len(labels) + 1)},
        "verdicts": {r.title: r.verdicts for r in verdict_rows},
        "kernels": {k.title: {"every run": {r.name: [t.text for t in r.times]
                                            for r in k.rows},
                              "some runs": {r.name: r.runs for r in k.only}}
                    for k in kernels}}
    if result is not None:
        doc["gate"] = result.to_json()
    return html, md, svgs, doc


def _kinds_lede(result: gate.GateResult | None) -> str:
    """What kinds the page's numbers are, from the numbers it shows: times, rates and ceilings
    are measured, and the gate's shares of the roof, where it shows any, too (each run's
    achieved rate against its own measured roofs); anything predicted is said."""
    lede = "Times, rates and ceilings are measured (M), each on its own machine"
    shown = ([] if result is None else
             [x for f in result.findings for x in (f.base, f.new, f.change)])
    if any(f.condition.startswith("roof") and f.status != "skipped"
           for f in (result.findings if result is not None else ())):
        lede += ("; the regression gate's shares of the roof are measured too, each run's "
                 "achieved rate against its own measured roof at its intensity")
    if any(x.kind == Kind.PREDICTED.value for x in shown):
        lede += "; numbers marked P are predicted"
    return lede + "."


def _workload_link(r: WorkloadComparison | PartialWorkload) -> Cell:
    """A workload's title cell, carrying its anchor (stable across runs)."""
    return Cell(text(r.title), id=r.anchor)


def _gate_section(result: gate.GateResult, labels: Sequence[str]) -> Section:
    conds = "; ".join(f"{x.text} ({x.meaning})" for x in result.conditions)
    body: list[Block] = [p(f"NEW (run {labels[1]}) is gated against BASE (run {labels[0]}) on "
                           f"{plural(len(result.gated), 'workload', 'workloads')} that both "
                           f"hold, by {conds}. A change inside both runs' spread (the "
                           "interquartile range of the timing samples) is noise, not a "
                           "regression.")]

    def rows(findings: Sequence[gate.Finding]) -> list[tuple[Cell, ...]]:
        return [(c(Link(f.title, f"#{meta.workload_anchor(f.name)}")), c(Code(f.condition)),
                 num(f.base), num(f.new), num(f.change), c(f.why)) for f in findings]

    header = ("workload", "condition", "BASE", "NEW", "change", "why")
    regressions = result.regressions
    if regressions:
        titles = dict.fromkeys(f.title for f in regressions)
        body.append(Note(text(Status(plural(len(titles), "workload regressed",
                                            "workloads regressed"), "bad"),
                              ": ", ", ".join(titles), "."), "bad"))
        body.append(table(header, rows(regressions), caption="Regressions"))
    else:
        body.append(p(Status("No regression", "ok"), ": no condition fired beyond the noise."))
    noise = [f for f in result.findings if f.status == "noise"]
    if noise:
        body.append(table(header, rows(noise),
                          caption="Past a threshold but inside the noise (not regressions)"))
    skipped = [f for f in result.findings if f.status == "skipped"]
    notes = [text(x) for x in result.notes]
    notes += [text(Strong(f.title), f": {f.condition} not checked: {f.why}") for f in skipped]
    for label, names in (("only in BASE", result.only_base), ("only in NEW", result.only_new)):
        if names:
            notes.append(text(f"Not gated, {label}: ", ", ".join(names), "."))
    if notes:
        body.append(BulletList(tuple(notes)))
    return Section("Regression gate", tuple(body), id="gate")


def _kernels_section(k: KernelComparison, runs: range, later: range) -> Section:
    """One program's kernels in every run side by side, and those only some runs hold."""
    body: list[Block] = [p(
        f"The kernels of {k.title}, matched by the HLO op they run (a name that differs "
        "only by a trailing .0 is the same op renamed between compilations), each with its "
        "time per call in every run and its speed-up against run 1.")]
    if k.rows:
        body.append(table(("kernel", *(f"time per call, run {i}" for i in runs),
                           *(f"speed-up, run {i} vs 1" for i in later)),
                          [(c(Code(r.name)), *(num(x) for x in r.times),
                            *(num(x) for x in r.speedups)) for r in k.rows]))
    if k.only:
        body.append(table(("kernel in some runs only", "in runs",
                           *(f"time per call, run {i}" for i in runs)),
                          [(c(Code(r.name)), c(r.runs), *(num(x) for x in r.times))
                           for r in k.only]))
    return Section(f"Kernels of {k.title}, run by run", tuple(body),
                   id=f"kernels-{meta.workload_anchor(k.name)}", kind=Kind.MEASURED.value)


def comparison_document(vm: CompareView) -> Document:
    """The comparison's sections from its view model (labels, env, ceilings, workloads,
    partial, verdicts, figure, gate), rendered by the same renderers as the report."""
    labels: list[str] = vm.labels
    runs = range(1, len(labels) + 1)
    later = range(2, len(labels) + 1)
    measured = Kind.MEASURED.value
    sections: list[Section] = []
    if vm.gate is not None:
        sections.append(_gate_section(vm.gate, labels))
    sections.append(Section("Runs", (table(("", *labels), [(c(k), *(c(v) for v in values))
                                                           for k, values in vm.env],
                                           row_headers=True),), id="runs"))
    figure = (Figure(vm.figure),) if vm.figure else ()
    ceilings = (table(("ceiling", *labels, *(f"run {i} ÷ run 1" for i in later)),
                      [(c(r.name), *(num(x) for x in r.cells),
                        *(num(x) for x in r.ratios)) for r in vm.ceilings])
                if vm.ceilings else p("No run measured its ceilings."))
    sections.append(Section("Measured ceilings", (ceilings, *figure), id="ceilings",
                            kind=measured))
    common: Block = (table(
        ("workload", *(f"time per call, run {i}" for i in runs),
         *(f"achieved, run {i}" for i in runs), *(f"speed-up, run {i} vs 1" for i in later)),
        [(_workload_link(w), *(num(x) for x in w.times), *(num(x) for x in w.rates),
          *(num(x) for x in w.speedups)) for w in vm.workloads])
        if vm.workloads else
        p("No workload is in every run: each run's own workloads are listed in ",
          Link("workloads in some runs only", "#workloads-some"), "."))
    sections.append(Section("Workloads in every run", (common,), id="workloads", kind=measured))
    if vm.partial:
        sections.append(Section("Workloads in some runs only", (
            p("The workloads that not every run holds, each with its time per call in the runs "
              "that hold it: no workload of a run is left out."),
            table(("workload", "in runs", *(f"time per call, run {i}" for i in runs)),
                  [(_workload_link(w), c(w.runs), *(num(x) for x in w.times))
                   for w in vm.partial])), id="workloads-some", kind=measured))
    for k in vm.kernels:
        sections.append(_kernels_section(k, runs, later))
    if vm.verdicts:
        sections.append(Section("Where the model held", (table(
            ("experiment", *labels),
            [(c(r.title), *(c(v) for v in r.verdicts)) for r in vm.verdicts]),),
            id="verdicts"))
    return Document((Group("", tuple(sections)),),
                    figures=(vm.figure.name,) if vm.figure else ())


def _verdicts(runs: Sequence[tuple[str, Analysis]]) -> list[VerdictRow]:
    by_id: dict[str, VerdictRow] = {}
    for i, (_, an) in enumerate(runs):
        for e in an.experiments:
            row = by_id.setdefault(e.id, VerdictRow(e.title, [""] * len(runs)))
            row.verdicts[i] = e.verdict.text
    return [by_id[k] for k in sorted(by_id)]


__all__ = ["load_runs", "render_comparison"]
