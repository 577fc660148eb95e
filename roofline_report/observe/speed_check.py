"""The machine's speed checked after the programs were timed (imports jax when run).

Every prediction rests on ceilings measured at one time (earlier in the run, or in another
hour, from the cache), and is judged against programs timed at another. On a shared machine its
speed drifts between the two: on a 2-core CPU the median ratio of predicted to measured time
over a run's programs moved from 0.77 to 1.06 between runs minutes apart, all programs of a run
together. So once the programs (and their sweeps) are timed, the float32 matmul ceiling's own
size is timed again by the ceiling's rule (its fastest sample) and recorded beside it
(``speed_check`` in results.json); the analysis says when the two differ by more than it can
ignore (:mod:`roofline_report.analysis.speed_drift`).

A matmul's speed says little of the memory's: a run whose memory-bound programs all ran slow
read its matmul only 2% off. So each memory roof of the working-set sweep (a level's read-write
and write-new roofs) has one of its own points timed again too (``speed_check.memory``): in a
cache, the largest working set the level holds, where another process's share of a shared cache
shows first (on the 2-core development machine the write-new point at 4 MiB, half its 8 MiB
last-level cache, ran at 142, 264 and 292 us a call in three runs of one day); in main memory,
the smallest. Each point is timed as the sweep timed it (the same kernel, calls per sample and
sampling), so its rate compares with the sweep's own.

Nor does a matmul say much of a call's dispatch, the floor a small program's time starts
from: in one run the sweeps' smallest programs ran at 11 to 16 µs a call where the ceilings'
enqueued dispatch read 3.7 µs and the same programs alone ran at 4.5 to 5. So the enqueued
dispatch is timed again too, by its ceiling's runner and rule (``speed_check.dispatch``).
"""

from __future__ import annotations

from typing import Any

from roofline_report.errors import reason
from roofline_report.observe import timer as timing
from roofline_report.results import schema

__all__ = ["MEMORY_KERNELS", "PROBE_SAMPLES", "dispatch_check", "memory_check", "memory_points",
           "probe_entry", "speed_check"]

PROBE_SAMPLES = 7  # samples of the check's timing (its fastest one counts, as a ceiling's)
MEMORY_KERNELS = ("read-write", "write-new")  # the sweep kernels whose roofs are checked


def probe_entry(ceilings: schema.Ceilings) -> schema.ComputeCeiling | None:
    """The ceilings' float32 matmul entry at jax's default precision, measured, with the
    size it was timed at in full; None where there is none."""
    for entry in ceilings.compute:
        if (entry.op == "matmul" and entry.dtype == "float32" and entry.precision == "default"
                and entry.available and entry.size is not None and entry.size > 0
                and entry.value is not None and entry.value > 0):
            return entry
    return None


def speed_check(ceilings: schema.Ceilings, *, quick: bool) -> dict[str, Any]:
    """Time the ceilings' float32 matmul at its own size again; an unavailable record (with
    the reason) where the ceilings have none or the timing fails."""
    entry = probe_entry(ceilings)
    if entry is None or entry.size is None or entry.value is None:
        return {"available": False,
                "reason": "the ceilings have no float32 matmul rate to time again"}
    import jax

    from roofline_report.observe.ceilings.compute import _matmul, _matmul_operands
    from roofline_report.observe.ceilings.sampling import fastest_rate

    n = entry.size
    minimum = entry.timing.min_sample_s if entry.timing is not None else None
    try:
        args = _matmul_operands(n, "float32")
        _, compiled, _, _ = timing.measure_compile(jax.jit(_matmul), args)
        measured = timing.time_jitted(
            compiled, args, quick=quick, samples=PROBE_SAMPLES,
            min_sample_seconds=float(minimum) if minimum is not None else None)
    except Exception as exc:
        return {"available": False,
                "reason": f"timing the float32 matmul again failed: {reason(exc)}"}
    # The ceiling's own work per call, at its own rule (the fastest sample's rate).
    work = entry.flops_per_call
    flops = work if work is not None and work > 0 else 2 * n**3
    return {"available": True, "probe": f"float32 matmul, n={n}", "size": n,
            "ceiling_value": float(entry.value),
            "value": fastest_rate(flops, measured), "timing": measured.to_json(),
            "memory": memory_check(ceilings, quick=quick),
            "dispatch": dispatch_check(ceilings)}


def dispatch_check(ceilings: schema.Ceilings) -> dict[str, Any] | None:
    """The ceilings' enqueued dispatch of one call timed again as they timed it (the same
    runner, sample length and rule: the fastest sample): ``seconds`` against the ceiling's
    ``ceiling_seconds``; None where the ceilings have no enqueued dispatch or the timing
    fails (nothing is checked, and nothing said)."""
    from roofline_report.observe.ceilings.dispatch import dispatch_runner

    floor = ceilings.dispatch
    if not isinstance(floor, schema.DispatchCeiling) or not floor.enqueued:
        return None
    minimum = floor.timing_enqueued.min_sample_s if floor.timing_enqueued is not None else None
    try:
        measured = timing.measure(
            dispatch_runner(enqueued=True), samples=PROBE_SAMPLES,
            min_sample_seconds=float(minimum) if minimum else 0.005,
            method="jax: scalar add, n calls enqueued, block once on the last")
    except Exception:
        return None
    return {"available": True, "ceiling_seconds": float(floor.enqueued),
            "seconds": float(measured.per_call.min), "timing": measured.to_json()}


def memory_points(ceilings: schema.Ceilings) -> list[tuple[str, str, int, float]]:
    """(roof, kernel, working set, B/s as the sweep measured it) of the sweep point each memory
    roof of :data:`MEMORY_KERNELS` is checked at: in a cache level the largest working set the
    level's rule gives it, in main memory the smallest; [] without a sweep. Pure."""
    from roofline_report.analysis.roofs import measured_levels

    sweep = ceilings.working_set
    points: dict[str, list[tuple[int, float]]] = {}
    for kernel in sweep.kernels if isinstance(sweep, schema.WorkingSetSweep) else []:
        points[kernel.name] = sorted(
            (p.bytes, float(p.value)) for p in kernel.points
            if p.available and p.value is not None and p.value > 0)
    out = []
    for level in measured_levels(ceilings):
        if level.kernel not in MEMORY_KERNELS:
            continue
        inside = [(b, v) for b, v in points.get(level.kernel, []) if level.in_window(b)]
        if inside:
            size, value = inside[-1] if level.up_to is not None else inside[0]
            out.append((f"{level.name} {level.kernel}", level.kernel, size, value))
    return out


def memory_check(ceilings: schema.Ceilings, *, quick: bool) -> list[dict[str, Any]]:
    """Each memory roof's point (:func:`memory_points`) timed again as the sweep timed it: a
    record per roof with the sweep's rate (``ceiling_value``) and the rate now (``value``), or
    unavailable with the reason."""
    from roofline_report.observe.ceilings.working_set import SweepPlan, measure_point, sweep_plan

    chosen = memory_points(ceilings)
    if not chosen:
        return []
    # The sweep's own bytes per call and sample length where it saved them, else its defaults.
    sweep = ceilings.working_set
    if isinstance(sweep, schema.WorkingSetSweep):
        per_call, min_sample = sweep.plan.bytes_per_call, sweep.plan.min_sample_s
    else:
        default = sweep_plan(ceilings.backend, quick=quick, cache_bytes=None, free_bytes=None)
        per_call, min_sample = default.bytes_per_call, default.min_sample_s
    plan = SweepPlan((), int(per_call), samples=PROBE_SAMPLES, min_sample_s=float(min_sample))
    out = []
    for roof, kernel, size, value in chosen:
        point = measure_point(kernel, size, plan)
        record: dict[str, Any] = {"roof": roof, "kernel": kernel, "bytes": size}
        if point["available"]:
            record.update(available=True, ceiling_value=value, value=float(point["value"]),
                          timing=point["timing"])
        else:
            record.update(available=False, reason=str(point["reason"]))
        out.append(record)
    return out
