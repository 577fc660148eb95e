"""Whether the smallest timed calls of a build hold steady from run to run: jax's CPU client
running each call on a worker thread (its default, and a build's) against on the calling thread
(``JAX_CPU_ENABLE_ASYNC_DISPATCH=false``, roofline_report.observe.cpu_dispatch).

    python benchmarks/cpu_dispatch.py [--runs N]

Runs the catalog build without ceilings, sharding or experiments (``generate.py --no-ceilings
--no-sharding --no-experiments``) ``N`` times each way, the two interleaved so that both meet
the same load: with ``JAX_CPU_ENABLE_ASYNC_DISPATCH=true`` (the worker thread) and ``false``
(the calling thread).
From each run it reads the time per call (the first quartile of its samples) of the smallest
points of the "2 x" and "3 x + y" sweeps (4 kB of float32), and prints each run's figures, then
each way the median, the fastest and slowest run and how many runs read over 1.5× the fastest
of all: a bimodal way shows as some runs near the fastest and others well above it. Last line:
JSON with the same.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SWEEPS = ("2 x", "3 x + y")
SLOW_BEYOND = 1.5  # a run this many times the fastest run's time or more reads as slow


def _q1(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=4)[0] if len(samples) > 1 else samples[0]


def smallest_calls(results: Path) -> dict[str, float]:
    """Seconds per call of each sweep of :data:`SWEEPS` at its smallest point."""
    document = json.loads(results.read_text(encoding="utf-8"))
    out: dict[str, float] = {}
    for sweep in document["sweeps"]:
        if sweep["title"] in SWEEPS and sweep["points"]:
            timing = sweep["points"][0].get("timing") or {}
            samples = timing.get("per_call_s") or []
            if samples:
                out[sweep["title"]] = _q1(samples)
    return out


VARIABLE = "JAX_CPU_ENABLE_ASYNC_DISPATCH"


def build(asked: str | None, out: Path, cache: Path) -> dict[str, float]:
    """One build with the variable set to ``asked`` (None: unset, jax's own way); its smallest
    calls."""
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    env["ROOFLINE_REPORT_CACHE"] = str(cache)
    if asked is not None:
        env[VARIABLE] = asked
    proc = subprocess.run(
        [sys.executable, str(REPO / "generate.py"), "--no-ceilings", "--no-sharding",
         "--no-experiments", "--progress", "none", "--out", str(out)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900, check=False)
    if proc.returncode not in (0, 3):
        raise SystemExit(f"generate.py exited {proc.returncode}: {proc.stderr[-500:]}")
    return smallest_calls(out / "results.json")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=6, help="builds each way")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    ways = {"worker thread": "true", "calling thread": "false"}
    figures: dict[str, list[dict[str, float]]] = {name: [] for name in ways}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            for name, asked in ways.items():
                calls = build(asked, Path(tmp) / "out", Path(tmp) / "cache")
                figures[name].append(calls)
                shown = ", ".join(f"{k} {v * 1e6:.1f} µs" for k, v in calls.items())
                print(f"run {run + 1}, calls on the {name}: {shown}", flush=True)
    fastest = {s: min(f[s] for runs in figures.values() for f in runs if s in f) for s in SWEEPS}
    summary: dict[str, dict[str, object]] = {}
    for name, runs in figures.items():
        per_sweep: dict[str, object] = {}
        for sweep in SWEEPS:
            times = [f[sweep] for f in runs if sweep in f]
            if not times:
                continue
            slow = sum(t >= SLOW_BEYOND * fastest[sweep] for t in times)
            per_sweep[sweep] = {"median_us": round(statistics.median(times) * 1e6, 2),
                                "fastest_us": round(min(times) * 1e6, 2),
                                "slowest_us": round(max(times) * 1e6, 2),
                                "slow_runs": slow, "runs": len(times)}
            print(f"{name}: {sweep}: median {statistics.median(times) * 1e6:.1f} µs, "
                  f"{min(times) * 1e6:.1f} to {max(times) * 1e6:.1f}; {slow} of {len(times)} "
                  f"runs at {SLOW_BEYOND}× the fastest or more")
        summary[name] = per_sweep
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
