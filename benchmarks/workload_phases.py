"""Where the measurement of each catalog workload spends its wall time, on this machine's
backend and at its sizes (an accelerator's catalog is far larger than a CPU's).

    python benchmarks/workload_phases.py [--only NAME,NAME] [--top N] [--budget SECONDS]

Each workload is measured as the default build measures it
(:func:`roofline_report.observe.run.measure_workload`, full timing) under ``cProfile``; the
script prints its wall time, then the ``--top`` functions (default 12) by cumulative time,
so that a slow build names its step: the inputs' generation, the NumPy reference, the check,
the timing, the trace. Workloads are taken in the catalog's order until ``--budget`` seconds
(default 480) are spent; the last lines give each workload's seconds. No ceilings are
measured.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax

from roofline_report.observe import workloads
from roofline_report.observe.run import Skips, measure_workload


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated workload names")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--budget", type=float, default=480.0)
    args = parser.parse_args(argv)
    wanted = {n for n in args.only.split(",") if n}
    chosen = [w for w in workloads.catalog(jax.default_backend())
              if not wanted or w.name in wanted]
    if wanted and not chosen:
        print(f"workload_phases: no catalog workload is named {args.only!r}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    spent: list[tuple[str, float]] = []
    for w in chosen:
        if time.perf_counter() - start > args.budget:
            print(f"budget spent: {w.title} and those after it not measured")
            break
        profile = cProfile.Profile()
        began = time.perf_counter()
        profile.enable()
        measure_workload(w, quick=False, skips=Skips())
        profile.disable()
        seconds = time.perf_counter() - began
        spent.append((w.title, seconds))
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(args.top)
        print(f"== {w.title} ({w.dtype}, {dict(w.dims)}): {seconds:.1f} s")
        print("\n".join(line for line in text.getvalue().splitlines()[6:] if line.strip()))
    for title, seconds in spent:
        print(f"{seconds:8.1f} s  {title}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
