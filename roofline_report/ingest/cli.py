"""``roofline-report profile LOGDIR --out DIR``: a per-kernel roofline from a profiler trace.

Exit codes as the rest of the command line: 0 the report was built; 3 built, with something not
available (a trace without the program's HLO: its per-op times are shown and the work is not
counted); 2 bad input (one line, nothing written); 1 an internal failure.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from roofline_report.errors import EXIT_OK, EXIT_PARTIAL, InputError

__all__ = ["build_parser", "main"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise InputError(f"{self.prog}: {message} (see --help)")


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="roofline-report profile",
        description="Read a profiler trace captured anywhere (jax.profiler.trace(LOGDIR) on a "
        "GPU, TPU or CPU job) and write the per-kernel roofline of one of its programs: "
        "kernels counted from the HLO the trace holds, timed from its events.",
        epilog="Roofs, in this order: --ceilings (measured on the machine that ran the trace), "
        "the spec sheet of --preset or of the device the trace names; with neither, no roof: "
        "the kernels' achieved rates are shown without a prediction. "
        "Reading a trace needs jaxlib installed, not the trace's backend. Exit codes: 0 "
        "written; 3 written with something not available (see the report); 2 bad input "
        "(nothing written); 1 internal error.",
    )
    p.add_argument("logdir", metavar="LOGDIR",
                   help="the folder given to jax.profiler.trace (or a run folder under "
                   "plugins/profile, or one .xplane.pb file)")
    p.add_argument("--out", required=True, metavar="DIR", help="folder to write the report into")
    p.add_argument("--run", metavar="NAME", help="the run to read (default: the newest)")
    p.add_argument("--module", metavar="NAME",
                   help="the program to read, e.g. jit_train_step (default: the one with the "
                   "most kernel time)")
    p.add_argument("--ceilings", metavar="FILE",
                   help="a results.json measured on the machine that ran the trace: its "
                   "ceilings are the roofs")
    p.add_argument("--preset", metavar="NAME",
                   help="a chip's spec sheet as the roofs (default: the preset matching the "
                   "device the trace names, if any)")
    p.add_argument("--title", metavar="TEXT", help="the page's title")
    p.add_argument("--progress", choices=("auto", "bar", "plain", "none"), default="auto",
                   help="progress on stderr: a live line on a terminal (auto: only there), "
                   "plain log lines, or none")
    p.add_argument("--jobs", metavar="N", type=_jobs,
                   help="worker processes reading the hosts' traces side by side (default: the "
                   "cores; a run of one host, or of little to read, is read in one; 1: all in "
                   "one process, on one core)")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    return p


def main(argv: Sequence[str]) -> int:
    """Run ``roofline-report profile`` with ``argv`` (after the word ``profile``)."""
    from roofline_report import output
    from roofline_report.cli import Progress
    from roofline_report.ingest import profile

    ns = build_parser().parse_args(list(argv))
    # auto: a live line on a terminal, else nothing (a log or a pipe gets the outcome only).
    progress = Progress(ns.progress if ns.progress != "auto" or sys.stderr.isatty() else "none")
    try:
        data = profile(ns.logdir, out=ns.out, run=ns.run, module=ns.module,
                       ceilings=ns.ceilings, preset=ns.preset, title=ns.title, jobs=ns.jobs,
                       origin="command line", progress=progress)
    finally:
        progress.done()  # the live line cleared before the outcome or the error is printed
    out = Path(ns.out)
    skipped = data.get("skipped") or []
    print(output.wrote_line(out, len(skipped)), file=sys.stderr)
    return EXIT_PARTIAL if skipped else EXIT_OK
