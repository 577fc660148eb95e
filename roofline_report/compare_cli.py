"""Saved runs side by side, the entry point: :func:`compare` (``roofline_report.compare()``),
which ``roofline-report compare`` runs (:mod:`roofline_report.cli`). The page itself is
:func:`roofline_report.report.compare.render_comparison`, a pure function of the saved runs;
this module reads the runs, gates NEW against BASE with ``fail_if`` and writes the folder."""

from __future__ import annotations

import json
import reprlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from roofline_report import output
from roofline_report.analysis import gate
from roofline_report.analysis.analyse import analyse
from roofline_report.errors import InputError
from roofline_report.report import meta
from roofline_report.report.compare import load_runs, render_comparison

__all__ = ["compare"]

_API = "compare():"


def _paths(runs: Any) -> list[str]:
    """The runs as given (str or pathlib.Path each), as messages name them."""
    if isinstance(runs, str | Path) or not isinstance(runs, Sequence) or not all(
            isinstance(r, str | Path) and str(r) for r in runs):
        raise InputError(f"{_API} runs must be a list of results.json paths (str or "
                         f"pathlib.Path), got {reprlib.repr(runs)}")
    return [str(r) for r in runs]


def _texts(values: Any, key: str) -> list[str]:
    if isinstance(values, str) or not isinstance(values, Sequence) or not all(
            isinstance(v, str) for v in values):
        raise InputError(f"{_API} {key} must be a list of strings, got {reprlib.repr(values)}")
    return list(values)


def compare(runs: Sequence[str | Path], out: str | Path | None = None, *,
            fail_if: Sequence[str] = (), title: str | None = None, origin: str = "python",
            progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Set two or more saved runs (results.json files) side by side and return the
    comparison's document (``comparison.json``): each workload's numbers per run, the lab's
    verdicts, the workloads only some runs hold (``only``) and, with ``fail_if``, the gate's
    findings (``gate``: its ``regressions`` and what was ``noise``); with ``out``, also write
    the report folder there (``report.html``, ``report.md``, ``comparison.json``, figures).

    ``fail_if``: conditions (``"time>10%"``, ``"roof<-5pp"``, ``"top5-new"``: see
    :data:`roofline_report.analysis.gate.GRAMMAR`) that gate the second run (NEW) against the
    first (BASE); they need exactly two runs holding a workload in common. A change inside
    both runs' spread is noise, not a regression. ``title``: the page's title. ``progress``,
    where given, is told each step as it starts.

    Needs no jax. Bad input (fewer than two runs, the same file twice, a file that is not a
    results.json of a version this tool reads, a malformed condition, a destination that may
    not be replaced) raises :class:`~roofline_report.errors.InputError` with one line; nothing
    is written then.
    """
    paths = _paths(runs)
    texts = _texts(fail_if, "fail_if=")
    if len(paths) < 2:
        got = f"one: {paths[0]}" if paths else "none"
        raise InputError(f"compare: give at least two results.json files, got {got}")
    conditions = [gate.parse(text) for text in texts]
    if conditions and len(paths) != 2:
        raise InputError(f"compare: --fail-if gates NEW against BASE: give exactly two "
                         f"results.json files, not {len(paths)} ({', '.join(paths)})")
    if title is not None and not isinstance(title, str):
        raise InputError(f"{_API} title= must be a string, got {reprlib.repr(title)}")
    page_title = meta.check_title(title)
    destination = None if out is None else Path(out)
    if destination is not None:
        label = f"{_API} out={str(out)!r}" if origin == "python" else None
        output.check_destination(destination, label=label)
    if progress is not None:
        progress(f"reading {len(paths)} runs")
    read = load_runs(paths)
    if conditions:
        common, only_base, only_new = gate.common_workloads(analyse(read[0][1]),
                                                            analyse(read[1][1]))
        if not common:
            raise InputError(f"compare: no workload is in both runs, so --fail-if has nothing "
                             f"to gate (BASE {paths[0]} has {_names(only_base)}; NEW "
                             f"{paths[1]} has {_names(only_new)})")
    if progress is not None:
        progress("setting the runs side by side")
    html, md, svgs, doc = render_comparison(read, conditions=conditions, title=page_title)
    if destination is not None:
        if progress is not None:
            progress("writing the report")
        files = {"report.html": html, "report.md": md,
                 "comparison.json": json.dumps(doc, sort_keys=True, indent=1) + "\n"}
        files.update({f"figures/{k}.svg": v for k, v in svgs.items()})
        output.write_report(destination, files)
    return doc


def _names(names: Sequence[str], limit: int = 6) -> str:
    if not names:
        return "none"
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")
