"""``roofline-report compare``: the command line of the comparison (the page itself is
:func:`roofline_report.report.compare.render_comparison`, a pure function of the saved runs):
read the runs, gate NEW against BASE with ``--fail-if``, write the folder, say what it found."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from roofline_report import output
from roofline_report.analysis import gate
from roofline_report.analysis.analyse import analyse
from roofline_report.errors import EXIT_OK, EXIT_REGRESSION, InputError
from roofline_report.report import meta
from roofline_report.report.compare import load_runs, render_comparison
from roofline_report.text import plural

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise InputError(f"compare: {message} (see compare --help)")


def main(argv: Sequence[str]) -> int:
    p = _Parser(prog="roofline-report compare",
                description="Set two or more saved runs (results.json files) side by side; "
                "with --fail-if, gate NEW against BASE.",
                epilog=f"A --fail-if condition is {gate.GRAMMAR}. A change inside both runs' "
                "spread (the IQR of the timing samples) is noise, not a regression. Exit codes: "
                "0 written; 4 written and a --fail-if condition fired; 2 bad input (nothing "
                "written); 1 internal error.")
    p.add_argument("results", nargs="+", metavar="RESULTS_JSON")
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--fail-if", action="append", default=[], metavar="COND",
                   help="exit 4 when COND holds for a workload of NEW against BASE (repeatable)")
    p.add_argument("--title", metavar="TEXT", help="the page's title")
    p.add_argument("--debug", action="store_true")
    ns = p.parse_args(list(argv))
    if len(ns.results) < 2:
        raise InputError(f"compare: give at least two results.json files, got one: "
                         f"{ns.results[0]}")
    conditions = [gate.parse(text) for text in ns.fail_if]
    if conditions and len(ns.results) != 2:
        raise InputError(f"compare: --fail-if gates NEW against BASE: give exactly two "
                         f"results.json files, not {len(ns.results)} "
                         f"({', '.join(ns.results)})")
    title = meta.check_title(ns.title)
    out = Path(ns.out)
    output.check_destination(out)
    runs = load_runs(ns.results)
    if conditions:
        common, only_base, only_new = gate.common_workloads(analyse(runs[0][1]),
                                                            analyse(runs[1][1]))
        if not common:
            raise InputError(f"compare: no workload is in both runs, so --fail-if has nothing "
                             f"to gate (BASE {ns.results[0]} has {_names(only_base)}; NEW "
                             f"{ns.results[1]} has {_names(only_new)})")
    html, md, svgs, doc = render_comparison(runs, conditions=conditions, title=title)
    files = {"report.html": html, "report.md": md,
             "comparison.json": json.dumps(doc, sort_keys=True, indent=1) + "\n"}
    files.update({f"figures/{k}.svg": v for k, v in svgs.items()})
    output.write_report(out, files)
    print(f"wrote {out / 'report.html'} comparing {len(runs)} runs", file=sys.stderr)
    for label, names in (("only in BASE", doc["only"].get("1", [])),
                         ("only in NEW", doc["only"].get("2", []))) if conditions else ():
        if names:
            print(f"note: {plural(len(names), 'workload', 'workloads')} {label}, not gated: "
                  f"{', '.join(names)}", file=sys.stderr)
    if not conditions:
        return EXIT_OK
    for line in doc["gate"]["regressions"]:
        print(f"regression: {line}", file=sys.stderr)
    return EXIT_REGRESSION if doc["gate"]["regressions"] else EXIT_OK


def _names(names: Sequence[str], limit: int = 6) -> str:
    if not names:
        return "none"
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")
