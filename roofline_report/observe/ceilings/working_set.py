"""Bandwidth against working-set size, measured (imports jax when run).

The Empirical Roofline Toolkit and Intel Advisor's cache-aware roofline find one bandwidth roof
per memory level by streaming over working sets of growing size: while the data fit in a cache,
the stream runs at that cache's bandwidth; past it, at the next level's. This module measures the
points; :mod:`roofline_report.analysis.levels` finds the plateaus at render time.

Two kernels, both repeated ``reps`` times inside one jitted call (a ``fori_loop`` whose every
iteration depends on the previous one, so XLA can neither hoist nor merge them) so that the bytes
moved per call dwarf the cost of dispatching the call:

* ``read-write``: ``x <- c · x`` on a donated float32 array, 2 × size bytes per iteration
  (read and write);
* ``read``: ``acc <- sum(x + acc) · ε``, size bytes per iteration; a reduction, so on some
  backends it is limited by the adds rather than by the memory;
* ``write-new``: ``y = c · x`` once per call into a fresh output, as a program writes its
  results, timed as workloads are: calls enqueued, each call's output dropped when the next is
  made, so the allocator may hand the freed buffer back (it does for cache-sized arrays; past
  some size each output is new memory, mapped and page-faulted every call). Each call pays its
  dispatch, which the analysis subtracts. Its rates are what a single kernel streaming into an
  output of its own attains. (Holding every output alive instead makes each call take fresh
  pages, several times slower at cache sizes: a different program from the one users run.)

Sizes grow by a fixed factor from a few KiB to past the last-level cache (several times it where
memory allows). Each point is timed like every other ceiling: calibrated enqueued calls, the
fastest sample's rate reported, the full statistics kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from roofline_report.analysis import levels
from roofline_report.errors import reason
from roofline_report.observe import timer as timing
from roofline_report.results import schema

Progress = Callable[[str], None]
KiB = 1 << 10
MiB = 1 << 20
ITEMSIZE = 4  # float32
KERNELS = ("read-write", "read", "write-new")
TRAFFIC_FACTOR = {"read-write": 2, "read": 1, "write-new": 2}


@dataclass(frozen=True, slots=True)
class SweepPlan:
    """Working-set sizes (bytes, ascending), bytes to move per call, and sampling settings."""

    sizes: tuple[int, ...]
    bytes_per_call: int
    samples: int
    min_sample_s: float
    kernels: tuple[str, ...] = KERNELS

    def to_json(self) -> dict[str, Any]:
        return {"sizes": list(self.sizes), "bytes_per_call": self.bytes_per_call,
                "samples": self.samples, "min_sample_s": self.min_sample_s,
                "kernels": list(self.kernels)}


def sweep_plan(backend: str, *, quick: bool, cache_bytes: int | None,
               free_bytes: int | None) -> SweepPlan:
    """Sizes from 4 KiB (CPU) or 1 MiB (accelerators, where a kernel launch costs more than
    streaming a cache) growing by 2 (4 in quick mode) to 8× the last-level cache, at least
    256 MiB, at most 512 MiB (CPU) or 4 GiB, and an eighth of the free memory. Quick mode
    measures the read-write and write-new kernels only, moving a quarter of the bytes per call.
    Pure."""
    factor = 4 if quick else 2
    if backend == "cpu":
        first, cap, per_call = 4 * KiB, 512 * MiB, 32 * MiB
    else:
        first, cap, per_call = 1 * MiB, 4096 * MiB, 1024 * MiB
    last = max(256 * MiB, 8 * cache_bytes) if cache_bytes else 256 * MiB
    last = min(last, cap, free_bytes // 8 if free_bytes else cap)
    return SweepPlan(timing.geometric(first, last, factor), per_call // 4 if quick else per_call,
                     samples=5 if quick else 7,
                     min_sample_s=timing.min_sample_for(backend != "cpu",
                                                         0.003 if quick else 0.005),
                     kernels=("read-write", "write-new") if quick else KERNELS)


def _kernel(kind: str, reps: int) -> Any:
    import jax
    import jax.numpy as jnp
    from jax import lax

    if kind == "write-new":
        return jax.jit(lambda x, c: x * c)
    if kind == "read-write":
        def read_write(x: Any, c: Any) -> Any:
            return lax.fori_loop(0, reps, lambda _i, y: y * c, x)

        return jax.jit(read_write, donate_argnums=0)

    def read(x: Any, c: Any) -> Any:
        return lax.fori_loop(0, reps, lambda _i, acc: jnp.sum(x + acc) * jnp.float32(1e-9), c)

    return jax.jit(read)


def _runner(kind: str, compiled: Any, x: Any, c: Any) -> timing.Runner:
    if kind == "read":
        def run_read(n: int) -> None:
            timing.enqueue_held(lambda: compiled(x, c), n)

        return run_read
    if kind == "write-new":
        def run_write_new(n: int) -> None:
            timing.enqueue_dropped(lambda: compiled(x, c), n)

        return run_write_new
    state = {"x": x}

    def run_read_write(n: int) -> None:
        value = state["x"]
        for _ in range(n):
            value = compiled(value, c)
        state["x"] = value
        timing.block(value)

    return run_read_write


def measure_point(kind: str, size: int, plan: SweepPlan) -> dict[str, Any]:
    """One kernel at one working set: its point record (unavailable, with the reason, when it
    fails)."""
    import jax.numpy as jnp

    traffic = TRAFFIC_FACTOR[kind] * size
    reps = 1 if kind == "write-new" else max(1, plan.bytes_per_call // traffic)
    point: dict[str, Any] = {"bytes": size, "reps": reps, "bytes_per_call": traffic * reps,
                             "value": None, "available": False, "reason": "", "timing": None}
    try:
        x = timing.block(jnp.ones((size // ITEMSIZE,), jnp.float32))
        c = jnp.float32(-1.0 if kind == "read-write" else 0.0)
        compiled = _kernel(kind, reps).lower(x, c).compile()
        measured = timing.measure(
            _runner(kind, compiled, x, c), samples=plan.samples,
            min_sample_seconds=plan.min_sample_s,
            method="jax: a fori_loop of the kernel per call, n calls enqueued")
    except Exception as exc:
        point["reason"] = f"{kind} on {size} B failed: {reason(exc)}"
        return point
    point.update(value=point["bytes_per_call"] / measured.per_call.min, available=True,
                 timing=measured.to_json())
    return point


REMEASURE = 2  # times an implausible point is measured again, at most
REMEASURE_GAIN = 1.1  # a re-measurement that gains less than 10% ends the retries
FUTILE_POINTS = 2  # points in a row whose retries gained nothing end a kernel's retries


def _recheck(kernels: list[dict[str, Any]], plan: SweepPlan, dispatch: float | None) -> int:
    """Measure again, up to :data:`REMEASURE` times, each read or write-new point that is
    implausible beside the read-write point of its working set (the rule of
    :func:`roofline_report.analysis.levels.implausible`), keeping its fastest measurement; a
    point that stays implausible records why. A point's retries stop when one gains less than
    :data:`REMEASURE_GAIN`, and a kernel's when :data:`FUTILE_POINTS` points in a row ended
    so: a steady shortfall of the kernel (the read kernel's adds), not a burst of load, which
    more retries cannot mend. Returns the number of re-measurements."""
    def rate_of(kernel: str, point: dict[str, Any]) -> float | None:
        """The point's rate as the level finder reads it, from the point as results.json
        will hold it (validated by the schema's record)."""
        return levels.point_rate(kernel, schema.SweepBandwidth.model_validate(point), dispatch)

    by_name = {k["name"]: k for k in kernels}
    reference = {p["bytes"]: rate_of(levels.REFERENCE, p)
                 for p in by_name.get(levels.REFERENCE, {}).get("points", [])}
    done = 0
    for name in ("read", "write-new"):
        points = by_name.get(name, {}).get("points", [])
        futile = 0
        for i, point in enumerate(points):
            tries, gain = 0, math.inf
            while True:
                rate = rate_of(name, point)
                why = None if rate is None else levels.implausible(
                    name, rate, reference.get(point["bytes"]))
                if (why is None or tries >= REMEASURE or gain < REMEASURE_GAIN
                        or futile >= FUTILE_POINTS):
                    break
                again = measure_point(name, point["bytes"], plan)
                tries += 1
                done += 1
                if again["available"] and again["value"] > point["value"]:
                    gain = again["value"] / point["value"]
                    point = again
                else:
                    gain = 1.0
            if tries:
                futile = futile + 1 if why and gain < REMEASURE_GAIN else 0
            if tries or why:
                points[i] = {**point, "remeasured": tries, "implausible": why or ""}
    return done


def measure_sweep(plan: SweepPlan, say: Progress | None = None,
                  dispatch: float | None = None) -> dict[str, Any]:
    """Measure every kernel at every size; plain JSON::

        {"available": True, "plan": {...}, "kernels": [{"name", "points": [{"bytes",
         "reps", "bytes_per_call", "value" (B/s, fastest sample) | None, "available",
         "reason", "timing"[, "remeasured", "implausible"]}]}]}

    A size that fails (out of memory) is recorded unavailable and the sweep goes on; never
    raises for a measurement failure. Then each read or write-new point implausible beside
    the read-write point of its working set is measured again (:func:`_recheck`; ``dispatch``,
    the per-call floor, is taken off the write-new calls as the level finder does), with
    ``remeasured`` (how many times) and ``implausible`` (why it still is, or ""); a kernel
    steadily short of plausible is re-measured at a few points only.
    """
    tell = say or (lambda _m: None)
    kernels: list[dict[str, Any]] = []
    for kind in plan.kernels:
        points = [measure_point(kind, size, plan) for size in plan.sizes]
        kernels.append({"name": kind, "points": points})
    again = _recheck(kernels, plan, dispatch)
    for k in kernels:
        best = max((p["value"] or 0.0 for p in k["points"]), default=0.0)
        left = sum(1 for p in k["points"] if p.get("implausible"))
        tell(f"working-set sweep {k['name']}: {len(k['points'])} sizes, up to "
             f"{best / 1e9:.3g} GB/s" + (f", {left} implausible" if left else ""))
    if again:
        tell(f"working-set sweep: {again} implausible points measured again")
    return {"available": True, "plan": plan.to_json(), "kernels": kernels}
