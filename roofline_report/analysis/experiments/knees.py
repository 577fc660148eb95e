"""The knee of a lab sweep (no jax): the fit ``t = max(flat, slope · x)`` of the measured times
and of the model's over the same points, the side of the fit that moved a knee, and the figure
of a sweep.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from roofline_report.analysis.experiments.verdicts import finite, number
from roofline_report.analysis.records import FigureSeries, SweepFigure
from roofline_report.kinds import Kind

__all__ = ["KNEE_NOTE", "MODEL_KNEE_NOTE", "NO_KNEE", "NO_MODEL_KNEE", "knee", "knee_fit",
           "knee_reason", "model_knee_note", "outside_sweep", "sweep_figure"]


def knee_fit(xs: Sequence[float], times: Sequence[float]) -> dict[str, Any] | None:
    """Fit ``t = max(flat, slope * x)`` to a sweep and return where the two lines meet.

    For each split of the points (sorted by x) into a leading and a trailing part, the flat line
    is the geometric mean of the leading times and the proportional line's slope the geometric
    mean of the trailing t/x; the split with the least squared log error wins (the first on a
    tie). Returns ``{"knee": flat / slope, "flat", "slope", "split": points in the flat part,
    "at_edge": whether the knee lies outside (x_first, x_last)}``, or None with fewer than three
    points, mismatched lengths, or a non-positive or non-finite value.
    """
    if len(xs) != len(times) or len(xs) < 3:
        return None
    points = sorted(zip(xs, times, strict=True))
    if not all(
        finite(x) is not None and finite(t) is not None and x > 0 and t > 0 for x, t in points
    ):
        return None
    logs_x = [math.log(x) for x, _ in points]
    logs_t = [math.log(t) for _, t in points]
    best: tuple[float, int, float, float] | None = None
    for split in range(1, len(points)):
        log_flat = _mean(logs_t[:split])
        log_slope = _mean([lt - lx for lx, lt in zip(logs_x[split:], logs_t[split:], strict=True)])
        error = math.fsum(
            (lt - max(log_flat, log_slope + lx)) ** 2 for lx, lt in zip(logs_x, logs_t, strict=True)
        )
        if best is None or error < best[0]:
            best = (error, split, log_flat, log_slope)
    assert best is not None
    _, split, log_flat, log_slope = best
    knee_x = math.exp(log_flat - log_slope)
    return {
        "knee": knee_x,
        "flat": math.exp(log_flat),
        "slope": math.exp(log_slope),
        "split": split,
        "at_edge": not points[0][0] < knee_x < points[-1][0],
    }


def knee(xs: Sequence[float], times: Sequence[float]) -> float | None:
    """The knee of a flat-then-proportional sweep (see :func:`knee_fit`); None if undefined."""
    fit = knee_fit(xs, times)
    return None if fit is None else float(fit["knee"])


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def sweep_figure(
    xs: Sequence[int],
    times: Sequence[float],
    fit: Mapping[str, Any] | None,
    model_times: Sequence[float],
    model_kind: Kind,
    xlabel: str,
) -> SweepFigure:
    """A sweep's figure: the measured times, the model's, and the knee fit where there is one."""
    series = [
        FigureSeries("measured", Kind.MEASURED, tuple(times)),
        FigureSeries("model", model_kind, tuple(model_times)),
    ]
    if fit is not None:
        series.append(FigureSeries("flat-then-proportional fit", Kind.MEASURED,
                                   tuple(max(fit["flat"], fit["slope"] * x) for x in xs)))
    return SweepFigure(tuple(xs), xlabel, "time per call (s)", tuple(series))


KNEE_NOTE = (
    "knee of the measured times: where the flat line through the small sizes meets the "
    "proportional line through the large ones (knee_fit)"
)
NO_KNEE = "no knee: the sweep needs at least three points with positive times"
MODEL_KNEE_NOTE = (
    "knee of the per-kernel model's predicted times over the same sweep points, by the fit that "
    "gives the measured knee (knee_fit)"
)
NO_MODEL_KNEE = "no knee: the model's times need at least three points with positive times"


def outside_sweep(fit: Mapping[str, Any] | None, knee_at: float, xs: Sequence[int]) -> str:
    """Why a knee missed when the fitted knee ``knee_at`` lies outside the sweep ``xs``; ''
    when it lies inside (or nothing was fitted)."""
    if fit is None or not fit["at_edge"]:
        return ""
    return (f"the fitted knee ({number(knee_at)}) lies outside the sweep "
            f"({xs[0]}..{xs[-1]}): widen it")


def model_knee_note(fit: Mapping[str, Any] | None) -> str:
    """How the predicted knee was found from the model's times, or why there is none."""
    if fit is None:
        return NO_MODEL_KNEE
    return MODEL_KNEE_NOTE + (" (outside the sweep's range)" if fit["at_edge"] else "")


def knee_reason(
    measured: float,
    predicted: float,
    flat_eff: float,
    slope_eff: float,
    flat_text: Callable[[bool], str],
    slope_text: Callable[[bool], str],
) -> str:
    """Pick the side that moved the knee. knee ∝ flat / slope, so the knee's shift is
    (flat / model flat) ÷ (slope / model slope): flat_eff and slope_eff are those two ratios."""
    wants_up = measured > predicted
    # Which factor moved the knee the way it moved, and by how much (in log terms)?
    flat_push = math.log(flat_eff) if flat_eff > 0 else 0.0
    slope_push = -math.log(slope_eff) if slope_eff > 0 else 0.0
    candidates = []
    if (flat_push > 0) == wants_up and flat_push != 0:
        candidates.append((abs(flat_push), flat_text(wants_up)))
    if (slope_push > 0) == wants_up and slope_push != 0:
        candidates.append((abs(slope_push), slope_text(wants_up)))
    candidates.sort(key=lambda c: -c[0])
    return candidates[0][1] if candidates else ""
