"""Whether the smallest timed calls of a build hold steady from run to run: glibc's own malloc
arena limit against the one the entry points set (roofline_report.malloc_arenas).

    python benchmarks/malloc_arenas.py [--runs N]

Runs the catalog build without ceilings, sharding or experiments (``generate.py --no-ceilings
--no-sharding --no-experiments``) ``N`` times under each limit, the two interleaved so that
both meet the same load: glibc's own (``MALLOC_ARENA_MAX`` set to eight a core, what glibc
computes) and the build's own (the variable unset: ``generate.py`` raises the limit itself).
From each run it reads the time per call (the first quartile of its samples) of the smallest
points of the "2 x" and "3 x + y" sweeps (4 kB of float32), and prints each run's figures, then
per limit the median, the fastest and slowest run and how many runs read over 1.5× the fastest
of all: a bimodal limit shows as some runs near the fastest and others well above it. Last line:
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


def build(limit: str | None, out: Path, cache: Path) -> dict[str, float]:
    """One build under the arena ``limit`` (None: the build's own); its smallest calls."""
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    env["ROOFLINE_REPORT_CACHE"] = str(cache)
    if limit is not None:
        env["MALLOC_ARENA_MAX"] = limit
    proc = subprocess.run(
        [sys.executable, str(REPO / "generate.py"), "--no-ceilings", "--no-sharding",
         "--no-experiments", "--progress", "none", "--out", str(out)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900, check=False)
    if proc.returncode not in (0, 3):
        raise SystemExit(f"generate.py exited {proc.returncode}: {proc.stderr[-500:]}")
    return smallest_calls(out / "results.json")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=6, help="builds under each limit")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    limits = {"glibc's own": str(8 * (cores or 1)), "the build's": None}
    figures: dict[str, list[dict[str, float]]] = {name: [] for name in limits}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            for name, limit in limits.items():
                calls = build(limit, Path(tmp) / "out", Path(tmp) / "cache")
                figures[name].append(calls)
                shown = ", ".join(f"{k} {v * 1e6:.1f} µs" for k, v in calls.items())
                print(f"run {run + 1} {name} limit ({limit or 'raised'}): {shown}", flush=True)
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
