"""Capture a trace of the shipped training step on a GPU and read it back with ``profile``.

    python benchmarks/capture_gpu_trace.py [--logdir DIR] [--out DIR] [--steps N]

One short run on the default jax backend (meant for a GPU; it runs on any backend): the Flax
NNX transformer step of examples/transformer.py is compiled and warmed, then ``--steps`` steps
(default 5) are traced with plain ``jax.profiler.trace(LOGDIR)``, each marked with
``jax.profiler.StepTraceAnnotation``, the way a user's job captures a profile. The trace is then
read as ``roofline-report profile LOGDIR --out OUT`` reads it. The last line is one JSON object:
the backend and device the trace names, the program read, its kernels, how many of them were
matched to a time, the events left unmatched, times per step or call, and the roofs used.

This is the check of the GPU path of the reader (CUPTI kernel events on ``/device:GPU:N``
planes carrying ``hlo_op``/``hlo_module``) on a real trace; the tests read CPU traces and
GPU-shaped synthetic ones.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--logdir", help="where the trace is written (default: a temporary folder)")
    p.add_argument("--out", default="gpu-profile", help="the report folder (default gpu-profile)")
    p.add_argument("--steps", type=int, default=5)
    ns = p.parse_args(argv)

    import jax

    from examples.transformer import setup

    fn, args = setup()
    step = jax.jit(fn)
    jax.block_until_ready(step(*args))  # type: ignore[no-untyped-call]
    logdir = ns.logdir or tempfile.mkdtemp(prefix="gpu-trace-")
    with jax.profiler.trace(logdir):
        for i in range(ns.steps):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                jax.block_until_ready(step(*args))  # type: ignore[no-untyped-call]

    import roofline_report

    data = roofline_report.profile(logdir, out=ns.out, origin="command line")
    summary = []
    for w in data["workloads"]:
        kernels = w["kernels"]
        timing = w["kernel_timing"]
        names = {k["name"] for k in kernels.get("kernels", [])}
        rows = timing.get("kernels", []) if timing.get("available") else []
        timed = {k["name"] for k in rows}
        busiest = sorted(rows, key=lambda k: -sum(_floats(k.get("busy_s"))))[:5]
        summary.append({
            "workload": w["title"],
            "device": w["trace"]["device"],
            "per": w["trace"]["per"],
            "steps_s": w["trace"]["steps_s"],
            "timing_source": timing.get("source"),
            "kernels": kernels.get("count"),
            "timed": len(names & timed),
            "untimed": sorted(names - timed)[:10],
            "unmatched": timing.get("unmatched", []),
            "calls": timing.get("calls"),
            "busiest_kernels": [{"name": k["name"], "busy_s": k.get("busy_s"),
                                 "launches": k.get("launches")} for k in busiest],
            "notes": w["trace"]["notes"] + timing.get("notes", []),
        })
    print(json.dumps({
        "backend": data["environment"]["backend"],
        "device_kind": data["environment"]["device_kind"],
        "jax": data["environment"]["jax"],
        "logdir": logdir,
        "module": data["trace"]["module"],
        "modules": [m["name"] for m in data["trace"]["modules"]],
        "preset": data["options"]["preset"],
        "skipped": data["skipped"],
        "workloads": summary,
    }))


def _floats(v: object) -> list[float]:
    """A per-call column as floats (empty where it is written as another column's name)."""
    return [float(x) for x in v] if isinstance(v, list) else []


if __name__ == "__main__":
    main()
