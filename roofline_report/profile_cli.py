"""Profiles captured anywhere, the entry point: :func:`profile` (``roofline_report.profile()``),
which ``roofline-report profile LOGDIR --out DIR`` runs (:mod:`roofline_report.cli`): a
per-kernel roofline from a profiler trace.

People who need a roofline run their programs on accelerators, in jobs this tool cannot run, and
many already capture profiles with ``jax.profiler.trace(LOGDIR)``. :func:`profile` reads such a
trace (every host's ``.xplane.pb``: :mod:`roofline_report.traces.xspace`), counts the kernels of
one program from the HLO the trace holds with the project's own counter, times them from the
trace's events and renders the same per-kernel sections as a measured run::

    import roofline_report

    results = roofline_report.profile("logs/", out="profile-report")

or ``roofline-report profile logs/ --out profile-report``. The reading is
:mod:`roofline_report.ingest`'s; this module writes the report.

Reading a trace needs jaxlib installed (to print the HLO proto the trace holds as text) but not
the trace's backend: a GPU or TPU trace reads on a CPU-only machine.

Exit codes of the command as the rest of the command line: 0 the report was built; 3 built,
with something not available (a trace without the program's HLO: its per-op times are shown
and the work is not counted); 2 bad input (one line, nothing written); 1 an internal failure.
"""

from __future__ import annotations

import gc
import reprlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from roofline_report.errors import InputError

__all__ = ["profile"]

_API = "profile():"


def _path(value: Any, key: str) -> str | Path | None:
    if value is None:
        return None
    if not isinstance(value, str | Path) or not str(value):
        raise InputError(f"{_API} {key} must be a path (str or pathlib.Path), got "
                         f"{type(value).__name__} {reprlib.repr(value)}")
    return value


def _name(value: Any, key: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{_API} {key} must be a non-empty string, got {reprlib.repr(value)}")
    return value


def _jobs(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{_API} jobs= must be a whole number of at least 1 (worker "
                         f"processes reading hosts), got {reprlib.repr(value)}")
    return value


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused (as it was before, after): reading a trace builds
    millions of objects, none in a cycle, and the collector's passes over them took a third
    of the reading time of a 10 MB trace; rendering its results walks as many."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def profile(path: str | Path, out: str | Path | None = None, *, run: str | None = None,
            module: str | None = None, ceilings: str | Path | None = None,
            preset: str | None = None, title: str | None = None, jobs: int | None = None,
            origin: str = "python",
            progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Read the profiler trace under ``path`` and return its results document (observations,
    as results.json holds them); with ``out``, also write the report folder there.

    ``path``: the folder given to ``jax.profiler.trace`` (its newest run, or ``run``), a run
    folder, or one ``.xplane.pb`` (``.gz``) file. ``module``: the program to read (default: the
    one with the most kernel time). ``ceilings``: a results.json measured on the machine that
    ran the trace (its ceilings record gives the roofs); else ``preset`` (a chip's spec
    sheet) or the preset matching the device the trace names; else no roof (the kernels'
    achieved rates, without a prediction: the seed's budgets describe no machine). ``jobs``:
    how many worker processes read the hosts' traces side by side (default: the cores).
    ``progress``, where given, is told each step as it starts (the command line's live line).

    Needs jaxlib installed (it prints the trace's HLO), not the trace's backend. Bad input
    (no trace, a corrupt, truncated or newer trace, an unknown module or run) raises
    :class:`~roofline_report.errors.InputError` with one line; nothing is written then.
    """
    from roofline_report import output
    from roofline_report.ingest.pipeline import read_profile
    from roofline_report.ingest.records import check_document, results_document
    from roofline_report.report import meta

    checked = _path(path, "path")
    if checked is None:
        raise InputError(f"{_API} path must be a trace folder or file, got None")
    destination = _path(out, "out=")
    ceilings_path = _path(ceilings, "ceilings=")
    label = f"{_API} out={str(out)!r}" if origin == "python" else None
    if destination is not None:
        output.check_destination(Path(destination), label=label)
    page_title = meta.check_title(title)
    workers = _jobs(jobs)
    with _no_cycle_collection():
        reading = read_profile(checked, run=_name(run, "run="), module=_name(module, "module="),
                               ceilings=ceilings_path, preset=_name(preset, "preset="),
                               jobs=workers, progress=progress)
        # With a report to write, the document is validated while its text is written beside
        # it (the write's ``check``), not before.
        data = results_document(reading,
                                origin="python" if origin == "python" else "command line",
                                checked=destination is None)
        module_read = reading.module
        del reading  # the decoded events: freed before rendering
        gc.collect()  # with those of them some cycle holds (else kept while rendering)
        # Rendering a long trace's samples (millions of numbers in lists) with the collector
        # running cost it a sixth more: its passes walk the document again and again.
        if destination is not None:
            if progress is not None:
                progress("writing the report")
            output.write_results(Path(destination), data, label=label,
                                 title=page_title or f"Profile of {module_read}",
                                 check=check_document)
    return data
