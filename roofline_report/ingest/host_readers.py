"""Several hosts' traces read side by side, each host in a worker process (no jax).

A job of many hosts writes one trace per host, and each is decoded on its own (tens to
hundreds of megabytes each). :func:`read_hosts` gives the hosts to up to ``jobs`` workers, the
largest first to the least loaded, and takes back what each read: a host's reading is columns
(numpy arrays and the stats' columns), which pickle back in a fraction of the time decoding
took (a 100 MB CPU host: read 2.9 s, pickled 0.65 s and unpickled 0.45 s; a 110 MB H200 host:
2.5, 0.22 and 0.07 s). Where there is one host, one job, or less to read than
:data:`PARALLEL_BYTES`, the hosts are read here, one after another (a worker's start costs
about half a second).

A worker is a fresh interpreter (not a fork: the caller may have threads, jax's among them, and
a fork copies their locks as they are) that imports the reader only and decodes its hosts alone
(without the line helper of :mod:`roofline_report.traces.line_aside`: the workers hold the
cores). It sends back each host's reading, or the one-line error reading it raised, pickled in
a temporary file. The hosts come back in their order, and the first error in that order is
raised, as reading them one after another would raise it; a worker that cannot start, fails or
dies has its hosts read here, so the result never depends on it.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from roofline_report import children
from roofline_report.errors import InputError

__all__ = ["PARALLEL_BYTES", "read_hosts", "shares", "trace_bytes"]

PARALLEL_BYTES = 32 * 2**20  # less than this in all: read here, one host after another
_REQUEST, _RESULT = "request-{}.pickle", "result-{}.pickle"


def shares(sizes: Sequence[int], workers: int) -> list[list[int]]:
    """The hosts (indices into ``sizes``) each worker reads: the largest first, each to the
    worker with the fewest bytes so far (the first such), each worker's in the hosts' order;
    workers left without a host are dropped."""
    load = [0] * workers
    given: list[list[int]] = [[] for _ in range(workers)]
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        w = min(range(workers), key=lambda w: (load[w], w))
        load[w] += sizes[i]
        given[w].append(i)
    return [sorted(g) for g in given if g]


def read_hosts(files: Sequence[Any], jobs: int, read: Callable[[Any], Any]) -> list[Any]:
    """``read`` of each host file (``.path`` its trace), in order: in up to ``jobs`` workers
    where there are several hosts and :data:`PARALLEL_BYTES` to read, else here."""
    sizes = [trace_bytes(f.path) for f in files]
    workers = min(jobs, len(files))
    if workers < 2 or sum(sizes) < PARALLEL_BYTES:
        return [read(f) for f in files]
    folder = tempfile.mkdtemp(prefix="roofline-report-hosts-")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        given = shares(sizes, workers)
        for w, hosts in enumerate(given):
            with open(os.path.join(folder, _REQUEST.format(w)), "wb") as fh:
                pickle.dump([(i, files[i]) for i in hosts], fh,
                            protocol=pickle.HIGHEST_PROTOCOL)
            try:
                procs.append(children.start("roofline_report.ingest.host_worker",
                                            [folder, str(w)]))
            except children.NotStarted:  # no interpreter to start: read its hosts here
                break
        done: dict[int, Any] = {}
        for w, proc in enumerate(procs):
            if proc.wait() == 0:
                done.update(_result(folder, w))
        out = []
        for i, f in enumerate(files):
            got = done[i] if i in done else read(f)  # a worker failed: its hosts read here
            if isinstance(got, InputError):
                raise InputError(str(got))
            out.append(got)
        return out
    finally:
        for proc in procs:
            children.end(proc)
        shutil.rmtree(folder, ignore_errors=True)


def trace_bytes(path: Path) -> int:
    """A trace file's size (0 where it cannot be read: the reader then says why)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _result(folder: str, worker: int) -> dict[int, Any]:
    try:
        with open(os.path.join(folder, _RESULT.format(worker)), "rb") as fh:
            got = pickle.load(fh)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError,
            ValueError):
        return {}
    return dict(got) if isinstance(got, list) else {}
