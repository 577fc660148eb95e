"""How long `python generate.py --quick` takes against the seed notebook, in the same run.

    python benchmarks/quick_vs_seed.py --seed PATH/seed_notebook.py [--rounds N]

Runs the seed's runnable form (the notebook that started the project, given by --seed or the
ROOFLINE_SEED_NOTEBOOK environment variable) and `generate.py --quick`
alternately, N rounds each (default 3), each as a fresh process, and prints the median wall
times; the last line is one JSON object with `ratio` (quick ÷ seed) and both medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", metavar="PATH",
                        default=os.environ.get("ROOFLINE_SEED_NOTEBOOK"),
                        help="the seed notebook's runnable form (seed_notebook.py)")
    ns = parser.parse_args()
    seed = Path(ns.seed) if ns.seed else None
    if seed is None or not seed.is_file():
        print("error: give the seed notebook with --seed PATH (or ROOFLINE_SEED_NOTEBOOK)",
              file=sys.stderr)
        return 2
    seed_times, quick_times = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(ns.rounds):
            seed_times.append(_wall([sys.executable, str(seed)]))
            out = Path(tmp) / f"r{i}"
            quick_times.append(_wall([sys.executable, "generate.py", "--quick", "--out", str(out),
                                      "--progress", "none"]))
            print(f"round {i + 1}: seed {seed_times[-1]:.2f} s, --quick {quick_times[-1]:.2f} s")
    seed_s, quick_s = statistics.median(seed_times), statistics.median(quick_times)
    print(json.dumps({"seed_s": round(seed_s, 3), "quick_s": round(quick_s, 3),
                      "ratio": round(quick_s / seed_s, 2), "rounds": ns.rounds}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
