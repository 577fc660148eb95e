"""Why a prediction missed, from the evidence (no jax).

A point above its roof, or a prediction off by more than :data:`OFF` of the measured time, gets a
reason built from the numbers at hand, never silence:

* **slow kernels**: slower, and the profiler trace shows a few kernels (at most
  :data:`NAMED_KERNELS`) that account for most of the gap between their measured and predicted
  times: they run far below their roofs (a code path slower than the roofs it was held to);
* **unstable**: the measurement's spread (IQR ÷ median) is over 10%, so the median itself moves;
* **cache level**: faster than predicted while the bytes were charged to main memory, although
  they would fit the last-level cache;
* **unfused intermediates**: slower, and the compiled program moves at least 1.5× the bytes the
  prediction charged (XLA's bytes accessed against the minimum traffic);
* **launch-bound**: slower, with many kernels for the work, the overhead term the largest;
* **dispatch-bound**: faster than the overhead term alone (dispatch and launches), which the
  prediction takes from separate measurements of the floor: the floor itself moved;
* **conversions**: slower, a bfloat16 program on a CPU that computes in float32;
* **loop**: the program runs a loop, whose bodies may not overlap as the model assumes;
* otherwise **unknown**, with the direction of the miss;

and a point above its roof says so first (**above its roof**).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roofline_report.report.format import percent_text
from roofline_report.units import format_si

OFF = 0.5
NAMED_KERNELS = 3  # at most this many kernels are named as the cause of a miss


def explain(prediction: Mapping[str, Any], measured: float, record: Mapping[str, Any],
            backend: str, *, above_roof: bool = False,
            cache_bytes: int | None = None) -> str:
    """'' when the prediction is within :data:`OFF` and the point is under its roof; else the
    likeliest reasons, most specific first, joined by '; '."""
    predicted = float(prediction["seconds"])
    error = abs(predicted - measured) / measured
    if error <= OFF and not above_roof:
        return ""
    slower = measured > predicted
    reasons: list[str] = []
    if slower:
        reasons += _slow_kernels(record)
    timing = (record.get("timing") or {}).get("per_call") or {}
    if timing.get("unstable"):
        reasons.append(f"unstable: the timing's spread is {percent_text(timing.get('spread'))}")
    moved = float(prediction.get("bytes") or 0)
    if not slower and prediction.get("level") in ("DRAM", "HBM") and cache_bytes \
            and moved and moved < cache_bytes:
        reasons.append("cache level: the bytes were charged to main memory but would fit the "
                       "last-level cache")
    xla = ((record.get("xla") or {}).get("raw") or {}).get("bytes accessed")
    if slower and isinstance(xla, int | float) and moved and xla >= 1.5 * moved:
        reasons.append(f"unfused intermediates: the compiled program accesses {xla / moved:.3g}×"
                       " the bytes charged")
    terms = prediction.get("terms") or {}
    kernels = int((record.get("compiled") or {}).get("kernels") or 1)
    if slower and kernels > 1 and terms and max(terms, key=lambda k: terms[k]) == "overhead":
        reasons.append(f"launch-bound: {kernels} kernels, each with a cost the model takes from "
                       "one measured chain")
    overhead = float(terms.get("overhead", 0.0)) if terms else 0.0
    if not slower and overhead and measured < overhead:
        reasons.append(f"dispatch-bound: the call took {format_si(measured, 's')}, under the "
                       f"{format_si(overhead, 's')} of dispatch and launches the model takes "
                       "from its own measurements of the floor, which moved between them")
    if slower and backend == "cpu" and record.get("dtype") == "bfloat16":
        reasons.append("conversions: the CPU computes bfloat16 in float32, converting every "
                       "operand and result")
    if (record.get("compiled") or {}).get("while_loops"):
        reasons.append("loop: its iterations run one after the other, each with its own "
                       "launches")
    if not reasons and error > OFF:
        direction = "slower" if slower else "faster"
        reasons.append(f"unknown: {direction} than predicted, with no evidence of a cause here")
    if above_roof:
        # Said first: the point is above the roof it is drawn under, whatever else is off.
        reasons.insert(0, "above its roof: it ran faster than the roofline at its intensity "
                          "allows (a roof measured lower than this program met)")
    return "; ".join(reasons)


def _slow_kernels(record: Mapping[str, Any]) -> list[str]:
    """The few kernels of the trace behind most of the time the model did not predict, or
    nothing without per-kernel times or when no few of them explain half the gap."""
    rows = (record.get("kernel_view") or {}).get("rows") or []
    timed = [r for r in rows if r.get("seconds") is not None and r.get("predicted") is not None]
    gaps = sorted(((float(r["seconds"]) - float(r["predicted"]), r) for r in timed),
                  key=lambda g: (-g[0], str(g[1].get("name"))))
    total = sum(g for g, _ in gaps if g > 0)
    named = [(g, r) for g, r in gaps[:NAMED_KERNELS] if g > 0]
    share = sum(g for g, _ in named) / total if total > 0 else 0.0
    if not named or share < 0.5:
        return []
    parts = ", ".join(
        f"{r['name']} ({r.get('category', 'kernel')}, {format_si(float(r['seconds']), 's')} "
        f"against {format_si(float(r['predicted']), 's')} predicted)" for _, r in named)
    return [f"slow kernels: {parts} account for {percent_text(share)} of the time the kernels "
            "took beyond their predictions: they run far below their roofs"]
