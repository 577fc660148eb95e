"""The machine's speed checked after the programs were timed (imports jax when run).

Every prediction rests on ceilings measured at one time (earlier in the run, or in another
hour, from the cache), and is judged against programs timed at another. On a shared machine its
speed drifts between the two: on a 2-core CPU the median ratio of predicted to measured time
over a run's programs moved from 0.77 to 1.06 between runs minutes apart, all programs of a run
together. So once the programs (and their sweeps) are timed, the float32 matmul ceiling's own
size is timed again by the ceiling's rule (its fastest sample) and recorded beside it
(``speed_check`` in results.json); the analysis says when the two differ by more than it can
ignore (:mod:`roofline_report.analysis.speed_drift`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roofline_report.errors import reason
from roofline_report.observe import timer as timing

__all__ = ["PROBE_SAMPLES", "probe_entry", "speed_check"]

PROBE_SAMPLES = 7  # samples of the check's timing (its fastest one counts, as a ceiling's)


def probe_entry(ceilings: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ceilings' float32 matmul entry at jax's default precision, measured, with the
    size it was timed at in full; None where there is none."""
    entries: list[Mapping[str, Any]] = list(ceilings.get("compute") or [])
    for entry in entries:
        if (entry.get("op") == "matmul" and entry.get("dtype") == "float32"
                and entry.get("precision", "default") == "default" and entry.get("available")
                and isinstance(entry.get("size"), int) and entry["size"] > 0
                and isinstance(entry.get("value"), int | float) and entry["value"] > 0):
            return entry
    return None


def speed_check(ceilings: Mapping[str, Any], *, quick: bool) -> dict[str, Any]:
    """Time the ceilings' float32 matmul at its own size again; an unavailable record (with
    the reason) where the ceilings have none or the timing fails."""
    if not ceilings.get("available"):
        return {"available": False, "reason": "no ceilings to check the machine's speed against"}
    entry = probe_entry(ceilings)
    if entry is None:
        return {"available": False,
                "reason": "the ceilings have no float32 matmul rate to time again"}
    import jax

    from roofline_report.observe.ceilings.compute import _matmul, _matmul_operands
    from roofline_report.observe.ceilings.sampling import fastest_rate

    n = int(entry["size"])
    minimum = ((entry.get("timing") or {}).get("min_sample_s"))
    try:
        args = _matmul_operands(n, "float32")
        _, compiled, _, _ = timing.measure_compile(jax.jit(_matmul), args)
        measured = timing.time_jitted(
            compiled, args, quick=quick, samples=PROBE_SAMPLES,
            min_sample_seconds=float(minimum) if isinstance(minimum, int | float) else None)
    except Exception as exc:
        return {"available": False,
                "reason": f"timing the float32 matmul again failed: {reason(exc)}"}
    # The ceiling's own work per call, at its own rule (the fastest sample's rate).
    work = entry.get("flops_per_call")
    flops = int(work) if isinstance(work, int) and work > 0 else 2 * n**3
    return {"available": True, "probe": f"float32 matmul, n={n}", "size": n,
            "ceiling_value": float(entry["value"]),
            "value": fastest_rate(flops, measured), "timing": measured.to_json()}
