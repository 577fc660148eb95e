"""Rates of the kernel patterns that run below the streaming roofs, by size (imports jax when run).

A kernel that moves data in an order other than the memory's (a transpose, a gather, a scatter,
a reduction along a non-minor axis) or a dot the compiler emits as a loop of its own instead of
handing it to its matmul library runs far below what its bytes at the streaming bandwidth, or its
flops at the matmul roof, would allow. Each pattern here gets a rate of its own, measured by size
as the row reduction's is (:mod:`roofline_report.observe.ceilings.rates`): one jitted call per
enqueued call, dispatch included in each point's time (the analysis takes the dispatch floor
off), the fastest sample of the better of two rounds a whole pass apart.

The kernels, and the sizes each backend's plan measures them at: :mod:`.pattern_plans`; their
programs: :mod:`.pattern_programs`.

Every point's compiled program is checked to hold its pattern (:mod:`.pattern_check`: the
kernel inventory of its optimized HLO, and the inventory's own ``pattern`` label): a size whose
program does not is left out with the reason, and an entry none of whose sizes has the pattern
is recorded unavailable (``available: false``): on a backend that hands every dot to a library
there is no loop-dot to measure.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from roofline_report.analysis.patterns import unit
from roofline_report.analysis.stats import Timing
from roofline_report.errors import reason
from roofline_report.observe import timer as timing
from roofline_report.observe.ceilings.pattern_check import pattern_kernel
from roofline_report.observe.ceilings.pattern_plans import (
    Kernel,
    PatternPlan,
    kernels,
    not_measured,
)
from roofline_report.observe.ceilings.pattern_programs import Point, release

Progress = Callable[[str], None]
ROUNDS = 2
MIN_ROUND_SAMPLES = 2


@dataclass(slots=True)
class _Ready:
    """A compiled point kept between rounds, with its best time so far."""

    point: Point
    compiled: Any
    kernel: str
    args: list[Any]  # the current arguments: a donated argument 0 is the last call's output
    best: Timing | None = None
    baseline: Any = None  # the point's baseline compiled, where it has one
    baseline_best: Timing | None = None  # and its best time so far


def _runner(ready: _Ready, baseline: bool = False) -> timing.Runner:
    compiled, args = (ready.baseline if baseline else ready.compiled), ready.args
    if ready.point.donate:
        def run_donated(n: int) -> None:
            value = args[0]
            for _ in range(n):
                value = compiled(value, *args[1:])
            args[0] = value
            timing.block(value)

        return run_donated

    if ready.point.rotate and not baseline:
        turn = itertools.cycle((tuple(args), *ready.point.rotate))

        def run_in_turn(n: int) -> None:
            out = None
            for _ in range(n):
                out = compiled(*next(turn))  # the next operand of the turn
            timing.block(out)

        return run_in_turn

    def run(n: int) -> None:
        out = None
        for _ in range(n):
            out = compiled(*args)  # each output dropped as the next is made
        timing.block(out)

    return run


def _prepare_point(kernel: Kernel, size: int) -> _Ready | str:
    """Build and compile ``kernel`` at ``size`` and check its pattern: the point ready to time,
    or why it cannot be."""
    import jax

    try:
        point = kernel.build(size)
        compiled = jax.jit(point.fn, donate_argnums=(0,) if point.donate else ()) \
            .lower(*point.args).compile()
        name, described = pattern_kernel(str(compiled.as_text()), kernel.pattern)
        baseline = jax.jit(point.baseline).lower(*point.args).compile() \
            if point.baseline is not None else None
    except Exception as exc:
        return f"{kernel.name} at {size} failed: {reason(exc)}"
    if name is None:
        return (f"the compiled {kernel.name} of shape {list(point.shape)} has no "
                f"{kernel.pattern} kernel (it runs {described})")
    return _Ready(point, compiled, name, list(point.args), baseline=baseline)


COMPILE_THREADS = 4  # points compiled at once (compiling releases the GIL); before any timing


def _prepare(chosen: Sequence[Kernel]) -> list[tuple[dict[int, _Ready], list[str]]]:
    """Every size of every kernel built, compiled and checked, on a few threads (nothing is
    timed meanwhile): per kernel, the sizes ready to time and the reasons of those left out."""
    jobs = [(k, size) for k in chosen for size in k.sizes]
    workers = max(1, min(COMPILE_THREADS, os.cpu_count() or 1))
    with ThreadPoolExecutor(workers) as pool:
        done = list(pool.map(lambda job: _prepare_point(*job), jobs))
    out: list[tuple[dict[int, _Ready], list[str]]] = [({}, []) for _ in chosen]
    for (kernel, size), result in zip(jobs, done, strict=True):
        ready, why = out[chosen.index(kernel)]
        if isinstance(result, str):
            why.append(result)
        else:
            ready[size] = result
    return out


# How a point's call and its baseline's (the same call without the pattern's kernel) are timed.
_METHOD = {False: "jax: one call of the pattern per enqueued call, n calls enqueued, block once",
           True: "jax: the same call without the pattern's kernel, n calls enqueued, block once"}


def _time_round(kernel: Kernel, ready: dict[int, _Ready], samples: int, min_sample_s: float,
                why: list[str]) -> None:
    for size, r in list(ready.items()):
        # The point, then its baseline where it has one, right after it in the same round;
        # each keeps its fastest round.
        for alone in (False, True) if r.baseline is not None else (False,):
            try:
                measured = timing.measure(_runner(r, baseline=alone), samples=samples,
                                          min_sample_seconds=min_sample_s,
                                          method=_METHOD[alone])
            except Exception as exc:
                what = f"{kernel.name}'s baseline" if alone else kernel.name
                why.append(f"{what} at {size} failed: {reason(exc)}")
                del ready[size]
                break
            kept = r.baseline_best if alone else r.best
            if kept is None or measured.per_call.min < kept.per_call.min:
                if alone:
                    r.baseline_best = measured
                else:
                    r.best = measured


def _entry(kernel: Kernel, ready: Mapping[int, _Ready], why: Sequence[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": kernel.name, "op": kernel.pattern, "dtype": kernel.dtype,
        "unit": f"{unit(kernel.pattern)}/s", "kind": "measured", "value": None,
        "available": False, "reason": "; ".join(why), "elements": 1, "reps": 1,
        "ops_per_call": 1, "timing": None, "by_size": [], "variant": kernel.variant,
        "roof": kernel.roof, **({"row": kernel.row} if kernel.row else {}),
        **({"table": kernel.table} if kernel.table else {}),
        **({"computed": True} if kernel.computed else {}),
        **({"from_memory": True} if kernel.from_memory else {}),
    }
    best: tuple[float, _Ready] | None = None
    for size in sorted(ready):
        r = ready[size]
        if r.best is None:
            continue
        seconds = r.best.per_call.min
        if r.baseline is not None:
            # The kernel's own time: the call less the same call without it (each call's
            # dispatch in both). A size where the baseline took as long says nothing of it.
            alone = r.baseline_best.per_call.min if r.baseline_best is not None else None
            if alone is None or alone >= seconds:
                continue
            seconds -= alone
        value = r.point.ops / seconds
        entry["by_size"].append({"elements": r.point.ops, "bytes": r.point.nbytes,
                                 "seconds": seconds, "value": value,
                                 "shape": list(r.point.shape), "kernel": r.kernel})
        if best is None or value > best[0]:
            best = (value, r)
    if best is not None:
        value, r = best
        assert r.best is not None
        entry.update(value=value, available=True, elements=r.point.ops,
                     ops_per_call=r.point.ops, timing=r.best.to_json())
    elif not entry["reason"]:
        entry["reason"] = f"{kernel.name}: no size measured"
    return entry


def measure_patterns(plan: PatternPlan, say: Progress | None = None) -> list[dict[str, Any]]:
    """One rate entry per kernel of :func:`kernels` (``RateCeiling`` records with ``by_size``
    points); never raises for a measurement failure (the entry is unavailable with its
    reason). Every size is compiled and checked once (a few at a time), then timed in
    :data:`ROUNDS` rounds, a pass over all kernels apart, with the plan's samples split between
    them; each size keeps its fastest round."""
    tell = say or (lambda _m: None)
    chosen = kernels(plan)
    absent = not_measured(plan)
    try:
        prepared = _prepare(chosen)
        per_round = max(MIN_ROUND_SAMPLES, -(-plan.samples // ROUNDS))
        for _ in range(ROUNDS):
            for kernel, (ready, why) in zip(chosen, prepared, strict=True):
                _time_round(kernel, ready, per_round, plan.min_sample_s, why)
        entries = [_entry(k, ready, why)
                   for k, (ready, why) in zip(chosen, prepared, strict=True)]
    finally:
        release()
    entries += absent
    for e in entries:
        if e["available"]:
            unit = {"FLOP/s": "GFLOP/s", "comparisons/s": "G comparisons/s",
                    "runs/s": "G runs/s", "bytes/s": "GB/s"}.get(e["unit"], "G elements/s")
            tell(f"{e['name']}: up to {e['value'] / 1e9:.3g} {unit}")
        else:
            tell(f"{e['name']}: not available ({e['reason']})")
    return entries
