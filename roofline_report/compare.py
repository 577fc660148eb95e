"""``roofline-report compare A/results.json B/results.json ... --out DIR`` (no jax).

Sets saved runs side by side: their environments, measured ceilings with ratios to the first run,
the same workloads' times and achieved rates, the experiments' verdicts, and one roofline figure
with every run's measured roof and points. Runs must share one schema version.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from roofline_report import analysis
from roofline_report import figures as figs
from roofline_report import results as results_mod
from roofline_report.errors import EXIT_OK, InputError
from roofline_report.model import Kind
from roofline_report.report import page
from roofline_report.report.blocks import Document, Figure, Group, Section
from roofline_report.report.format import n, plural, ratio
from roofline_report.report.sections import c, num, p, table


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise InputError(f"compare: {message} (see compare --help)")


def main(argv: Sequence[str]) -> int:
    p = _Parser(prog="roofline-report compare",
                description="Set two or more saved runs (results.json files) side by side.")
    p.add_argument("results", nargs="+", metavar="RESULTS_JSON")
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--debug", action="store_true")
    ns = p.parse_args(list(argv))
    if len(ns.results) < 2:
        raise InputError("compare: give at least two results.json files")
    from roofline_report import output

    out = Path(ns.out)
    output.check_destination(out)
    runs = load_runs(ns.results)
    html, md, svgs, doc = render_comparison(runs)
    files = {"report.html": html, "report.md": md,
             "comparison.json": json.dumps(doc, sort_keys=True, indent=1) + "\n"}
    files.update({f"figures/{k}.svg": v for k, v in svgs.items()})
    output.write_report(out, files)
    import sys

    print(f"wrote {out / 'report.html'} comparing {len(runs)} runs", file=sys.stderr)
    return EXIT_OK


def load_runs(paths: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    """Load and validate each file; refuse mixed schema versions with one line naming both."""
    raw: list[tuple[str, dict[str, Any]]] = []
    versions: dict[Any, str] = {}
    for path in paths:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
            data = json.loads(text)
        except FileNotFoundError:
            raise InputError(f"{path}: no such file") from None
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            # let the validating loader produce its precise message
            data = results_mod.load(p)
        version = data.get("schema_version") if isinstance(data, dict) else None
        versions.setdefault(version, path)
        raw.append((path, data))
    if len(versions) > 1:
        (va, pa), (vb, pb) = list(versions.items())[:2]
        raise InputError(f"compare: {Path(pa).name} has schema version {va} but "
                         f"{Path(pb).name} has {vb}; compare runs of one version")
    runs: list[tuple[str, dict[str, Any]]] = []
    for path, data in raw:
        results_mod.validate(data, source=Path(path).name)
        runs.append((_label(path, data, len(runs)), data))
    return runs


def _label(path: str, data: Mapping[str, Any], index: int) -> str:
    env = data.get("environment", {})
    folder = Path(path).resolve().parent.name
    return f"{index + 1}: {folder} ({env.get('backend', '?')}, {env.get('device_kind', '?')})"


def _ceiling_values(data: Mapping[str, Any]) -> dict[str, tuple[float | None, str]]:
    c = data.get("ceilings", {})
    out: dict[str, tuple[float | None, str]] = {}
    if not c.get("available"):
        return out
    for group, unit in (("compute", "FLOP/s"), ("bandwidth", "B/s")):
        for e in c.get(group, []):
            out[f"{group}: {e.get('name')}"] = (e.get("value") if e.get("available") else None,
                                                unit)
    d = c.get("dispatch", {})
    out["dispatch: one tiny call"] = (d.get("value") if d.get("available") else None, "s")
    return out


def render_comparison(runs: Sequence[tuple[str, Mapping[str, Any]]]
                      ) -> tuple[str, str, dict[str, str], dict[str, Any]]:
    """HTML, Markdown, SVGs and a JSON summary of the comparison (pure)."""
    # Each run is analysed as its own report would be: the same derived values, under the
    # budgets that run was given.
    runs = [(label, analysis.analyse(data, analysis.assumptions_for(data)))
            for label, data in runs]
    labels = [label for label, _ in runs]
    env_keys = ("backend", "device_kind", "cpu_model", "jax", "jaxlib", "python")
    envs = [[str(data.get("environment", {}).get(k, "")) for _, data in runs] for k in env_keys]

    ceilings_by_run = [_ceiling_values(data) for _, data in runs]
    names = sorted({k for c in ceilings_by_run for k in c})
    ceiling_rows: list[dict[str, Any]] = []
    for name in names:
        values = [c.get(name, (None, ""))[0] for c in ceilings_by_run]
        unit = next((c[name][1] for c in ceilings_by_run if name in c), "")
        base = values[0]
        cells = [n(v, unit, Kind.MEASURED) for v in values]
        ratios = [ratio(v / base if base and v else None, Kind.MEASURED, 3) for v in values]
        ceiling_rows.append({"name": name, "cells": cells, "ratios": ratios})

    common = [w["name"] for w in runs[0][1]["workloads"]
              if all(any(x["name"] == w["name"] for x in d["workloads"]) for _, d in runs[1:])]
    workload_rows: list[dict[str, Any]] = []
    for name in common:
        recs = [next(x for x in d["workloads"] if x["name"] == name) for _, d in runs]
        times = [(r.get("timing") or {}).get("per_call", {}).get("median")
                 if (r.get("timing") or {}).get("available") else None for r in recs]
        rates = [(r.get("achieved") or {}).get("flops_per_s")
                 if (r.get("achieved") or {}).get("available") else None for r in recs]
        workload_rows.append({
            "title": recs[0]["title"],
            "times": [n(t, "s", Kind.MEASURED) for t in times],
            "rates": [n(r, "FLOP/s", Kind.MEASURED) for r in rates],
            "speedups": [ratio(times[0] / t if times[0] and t else None, Kind.MEASURED, 3)
                         for t in times],
        })

    verdict_rows = _verdicts(runs)
    roofs, points = [], []
    for label, data in runs:
        c = data.get("ceilings", {})
        peak = (c.get("peak_compute") or {}).get("value") if c.get("available") else None
        bw = (c.get("peak_bandwidth") or {}).get("value") if c.get("available") else None
        if peak and bw:
            roofs.append(figs.Roof(label, Kind.MEASURED.value, float(peak), float(bw)))
        for w in data["workloads"]:
            a, an = w.get("achieved") or {}, w.get("analytic") or {}
            if a.get("available") and "flops" in an and w["name"] in common:
                points.append(figs.Point(f"{w['title']} [{label.split(':')[0]}]",
                                         an["flops"] / an["minimum_bytes"], a["flops_per_s"]))
    svgs: dict[str, str] = {}
    figure = None
    if roofs:
        title = "Measured rooflines of the compared runs"
        desc = (f"{plural(len(roofs), 'measured roof', 'measured roofs')} (solid) with the "
                "workloads each run placed; labels in brackets give the run number.")
        svg, table = figs.roofline_figure("compare_roofline", title, desc, roofs, points)
        figure = figs.FigureOut("compare_roofline", title, desc, svg, table,
                                (Kind.MEASURED.value,))
        svgs["compare_roofline"] = svg
    vm = {"labels": labels, "env": list(zip(env_keys, envs, strict=True)),
          "ceilings": ceiling_rows, "workloads": workload_rows, "verdicts": verdict_rows,
          "figure": figure}
    tree = comparison_document(vm)
    context = {"runs": len(labels), "version": runs[0][1].get("generator", {}).get("version", "")}
    html = page.render_html("compare.html.j2", tree, **context)
    md = page.render_markdown("compare.md.j2", tree, **context)
    doc = {"runs": labels,
           "ceilings": {r["name"]: [c.text for c in r["cells"]] for r in ceiling_rows},
           "workloads": {r["title"]: [t.text for t in r["times"]] for r in workload_rows},
           "verdicts": {r["title"]: r["verdicts"] for r in verdict_rows}}
    return html, md, svgs, doc


def comparison_document(vm: Mapping[str, Any]) -> Document:
    """The comparison's sections from its view model (labels, env, ceilings, workloads,
    verdicts, figure), rendered by the same renderers as the report."""
    labels: list[str] = vm["labels"]
    runs = range(1, len(labels) + 1)
    measured = Kind.MEASURED.value
    sections = [Section("Runs", (table(("", *labels), [(c(k), *(c(v) for v in values))
                                                       for k, values in vm["env"]],
                                       row_headers=True),), id="runs")]
    figure = (Figure(vm["figure"]),) if vm["figure"] else ()
    ceilings = (table(("ceiling", *labels, *(f"ratio {i}" for i in runs)),
                      [(c(r["name"]), *(num(x) for x in r["cells"]),
                        *(num(x) for x in r["ratios"])) for r in vm["ceilings"]])
                if vm["ceilings"] else p("No run measured its ceilings."))
    sections.append(Section("Measured ceilings", (ceilings, *figure), id="ceilings",
                            kind=measured))
    sections.append(Section("Workloads in every run", (table(
        ("workload", *(f"median time, run {i}" for i in runs),
         *(f"achieved, run {i}" for i in runs), *(f"speed-up {i}" for i in runs)),
        [(c(w["title"]), *(num(x) for x in w["times"]), *(num(x) for x in w["rates"]),
          *(num(x) for x in w["speedups"])) for w in vm["workloads"]]),), id="workloads",
        kind=measured))
    if vm["verdicts"]:
        sections.append(Section("Where the model held", (table(
            ("experiment", *labels),
            [(c(r["title"]), *(c(v) for v in r["verdicts"])) for r in vm["verdicts"]]),),
            id="verdicts"))
    return Document((Group("", tuple(sections)),),
                    figures=(vm["figure"].name,) if vm["figure"] else ())


def _verdicts(runs: Sequence[tuple[str, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    by_id: dict[str, dict[str, Any]] = {}
    for i, (_, data) in enumerate(runs):
        for e in data.get("experiments", []) or []:
            row = by_id.setdefault(e.get("id", e.get("title", "?")),
                                   {"title": e.get("title", "?"), "verdicts": [""] * len(runs)})
            row["verdicts"][i] = str((e.get("verdict") or {}).get("text", ""))
    return [by_id[k] for k in sorted(by_id)]


__all__ = ["load_runs", "main", "render_comparison"]
