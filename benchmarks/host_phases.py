"""The host's share of measuring the catalog at an accelerator's sizes: drawing the inputs,
converting them, the float64 NumPy reference and the check, each on one core and on every core
(:mod:`roofline_report.observe.host_arrays`), in the same run.

    python benchmarks/host_phases.py [--backend tpu] [--only NAME,NAME] [--repeat N]

Each catalog workload at the sizes the default build uses on ``--backend`` (default ``tpu``;
no chip is needed: the program itself is not run) is prepared as the build prepares it
(:meth:`Workload.inputs`), its reference computed on the float64 copies and checked against
itself rounded to the workload's dtype (``check_against_reference``) three ways: every array
in one piece on one core (as before the blocks; its inputs are drawn from one stream, so its
values differ), the blocks on one core (``host_arrays.workers`` held at 1), and the blocks on
every core, as the build does it. Prints seconds per phase for each, the best of
``--repeat`` (default 1), and the ratio of the first to the last; the last line is JSON. The
references and checks of the last two must be equal (the script says so, and exits 1, where
they are not). A TPU v5e's host has 13 cores; this machine's count is printed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from roofline_report.observe import host_arrays
from roofline_report.observe.lower import check_against_reference
from roofline_report.observe.workloads import catalog

PHASES = ("inputs", "reference", "check")


def _phases(w: Any) -> tuple[dict[str, float], Any]:
    times: dict[str, float] = {}
    start = time.perf_counter()
    device, rounded = w.inputs()
    times["inputs"] = time.perf_counter() - start
    start = time.perf_counter()
    want = np.asarray(w.reference(*rounded))
    times["reference"] = time.perf_counter() - start
    got = want.astype(np.asarray(device[0]).dtype) if want.dtype.kind == "f" else want
    start = time.perf_counter()
    record = check_against_reference(got, want, rtol=w.rtol, atol=w.atol)
    times["check"] = time.perf_counter() - start
    del device, rounded
    return times, (want, record)


def _best(run: Callable[[], tuple[dict[str, float], Any]], repeat: int
          ) -> tuple[dict[str, float], Any]:
    best: dict[str, float] = {}
    out: Any = None
    for _ in range(repeat):
        times, out = run()
        best = {k: min(v, best.get(k, v)) for k, v in times.items()}
    return best, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="tpu")
    parser.add_argument("--only", default="", help="comma-separated workload names")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    wanted = {n for n in args.only.split(",") if n}
    chosen = [w for w in catalog(args.backend) if not wanted or w.name in wanted]
    if wanted - {w.name for w in chosen}:
        print(f"host_phases: no catalog workload named {sorted(wanted - {w.name for w in chosen})}",
              file=sys.stderr)
        return 2
    print(f"{host_arrays.workers()} cores; sizes of the {args.backend} catalog; seconds in one "
          "piece (as before) / in blocks on one core / in blocks on every core")
    cores, threshold = host_arrays.workers, host_arrays.PARALLEL_ELEMENTS
    rows = []
    for w in chosen:
        def measure(w: Any = w) -> tuple[dict[str, float], Any]:
            return _phases(w)

        # As before the blocks: every array in one piece (its values drawn otherwise).
        host_arrays.PARALLEL_ELEMENTS = 1 << 62
        try:
            whole, _ = _best(measure, args.repeat)
        finally:
            host_arrays.PARALLEL_ELEMENTS = threshold
        host_arrays.workers = lambda: 1  # type: ignore[assignment]  # the blocks, one core
        try:
            one, (want_one, rec_one) = _best(measure, args.repeat)
        finally:
            host_arrays.workers = cores  # type: ignore[assignment]
        every, (want_all, rec_all) = _best(measure, args.repeat)
        same = bool(np.array_equal(want_one, want_all, equal_nan=True)) and rec_one == rec_all
        del want_one, want_all
        totals = [sum(t.values()) for t in (whole, one, every)]
        print(f"{w.name:20s} " + "  ".join(
            f"{p} {whole[p]:5.2f} / {one[p]:5.2f} / {every[p]:5.2f}" for p in PHASES)
            + "  total " + " / ".join(f"{t:6.2f}" for t in totals)
            + f" s ({totals[0] / totals[2]:.2f}x)" + ("" if same else "  RESULTS DIFFER"))
        rows.append({"name": w.name, "whole": whole, "one_core": one, "every_core": every,
                     "same": same})
    print(json.dumps({"cores": host_arrays.workers(), "backend": args.backend,
                      "workloads": rows}, sort_keys=True))
    return 0 if all(r["same"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
