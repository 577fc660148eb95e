"""A worker process of :mod:`roofline_report.ingest.host_readers`: the hosts' traces its request
names, read as the process that started it would read them (no jax).

Its own module, apart from the one that starts it: the worker runs the reader
(:mod:`.pipeline`), and the reader starts the workers.
"""

from __future__ import annotations

import os
import pickle
import sys
from typing import Any

from roofline_report.errors import InputError
from roofline_report.ingest.host_readers import _REQUEST, _RESULT
from roofline_report.ingest.pipeline import read_host
from roofline_report.traces import line_aside

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """A worker: read the hosts its request in the folder names, each reading or its error,
    and write them beside it (through a temporary name, so a worker stopped midway leaves
    nothing to be taken for a whole result)."""
    folder, worker = (sys.argv[1:] if argv is None else argv)[:2]
    line_aside.helping = False  # the workers hold the cores
    with open(os.path.join(folder, _REQUEST.format(worker)), "rb") as fh:
        hosts = pickle.load(fh)
    out: list[tuple[int, Any]] = []
    for i, f in hosts:
        try:
            out.append((i, read_host(f)))
        except InputError as exc:
            out.append((i, exc))
    partial = os.path.join(folder, _RESULT.format(worker) + ".partial")
    with open(partial, "wb") as fh:
        pickle.dump(out, fh, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(partial, os.path.join(folder, _RESULT.format(worker)))
    return 0
