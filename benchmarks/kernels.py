"""The per-kernel analysis on a training step: kernels, trace coverage, overhead, seconds.

    python benchmarks/kernels.py [--setup module:function] [--calls N]

``--setup`` names a function returning ``(fn, args)`` (default: the plain-JAX transformer step
of benchmarks/train_step.py). The step is compiled first (not counted); then the kernel
inventory is read from its optimized HLO, ``--calls`` calls (default 20) are timed untraced and
then under the profiler, and the per-kernel view is derived. The last line is one JSON object:
``kernels`` (kernels in the inventory), ``launches`` (per call), ``coverage`` (median over calls
of the wall time with at least one kernel running ÷ the call's program time), ``overhead``
(median traced call ÷ median untraced call, same run), ``seconds`` (the per-kernel analysis
beyond compile) and the remainder of each call by cause.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]


def _setup(spec: str) -> tuple[Any, tuple[Any, ...]]:
    module, _, function = spec.partition(":")
    if not module or not function:
        raise SystemExit(f"error: --setup needs module:function, got {spec!r}")
    try:
        made = getattr(importlib.import_module(module), function)()
    except Exception as exc:
        raise SystemExit(f"error: setup {spec} failed: {type(exc).__name__}: {exc}") from None
    if not (isinstance(made, tuple) and len(made) == 2 and callable(made[0])):
        raise SystemExit(f"error: setup {spec} must return (fn, args)")
    return made[0], tuple(made[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--setup", default="train_step:setup")
    parser.add_argument("--calls", type=int, default=20)
    ns = parser.parse_args()
    import jax

    from roofline_report.analysis.kernels import kernel_table
    from roofline_report.analysis.roofs import hypothetical
    from roofline_report.hlo.kernels import kernel_inventory
    from roofline_report.observe.trace import trace_kernels
    from roofline_report.results import schema

    fn, args = _setup(ns.setup)
    compiled = (fn if hasattr(fn, "lower") else jax.jit(fn)).lower(*args).compile()
    start = time.perf_counter()
    inventory = kernel_inventory(str(compiled.as_text()))
    timing = trace_kernels(compiled, args, module=inventory["module"],
                           kernels=[k["name"] for k in inventory["kernels"]], calls=ns.calls)
    # The workload's typed record holds only what the kernel table reads: the inventory and
    # the timing validated as results.json's are (as JSON), the rest left out.
    def written(record: dict[str, Any]) -> Any:
        return json.loads(json.dumps(record))

    timed = schema.KernelTiming.model_validate(written(timing)) if timing.get("available") \
        else schema.Unavailable.model_validate(written(timing))
    fields: dict[str, Any] = {"dtype": "float32", "kernel_timing": timed,
                              "kernels": schema.KernelInventory.model_validate(written(inventory))}
    workload = schema.Workload.model_construct(**fields)
    table = kernel_table(workload, hypothetical(1e11, 2e10, "assumed budgets"), "cpu")
    seconds = time.perf_counter() - start
    if not timing.get("available"):
        print(f"per-kernel times not available: {timing.get('reason')}")
    elif table is not None:
        for row in table.rows[:10]:
            print(f"{row.name:<40} {row.category:<14} {(row.seconds or 0) * 1e6:9.1f} us "
                  f"{100 * (row.share or 0):5.1f} %  {row.source or ''}")
        for c in table.categories:
            print(f"{c.title:<24} {c.kernels:4d} kernels {100 * (c.share or 0):5.1f} %")
    trace = table.trace if table is not None else None
    print(json.dumps({
        "kernels": inventory["count"],
        "launches": trace.launches if trace else None,
        "coverage": trace.coverage if trace else None,
        "overhead": trace.overhead if trace else None,
        "seconds": round(seconds, 3),
        "program_s": trace.program_s if trace else None,
        "busy_s": trace.busy_s if trace else None,
        "kernel_sum_s": trace.kernel_sum_s if trace else None,
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
