"""The verdict of a lab experiment (no jax): a measurement against its prediction, on a linear
or a log scale, with the text that states it.
"""

from __future__ import annotations

import math
from typing import Any

from roofline_report.analysis.miss import Miss, relative_error
from roofline_report.text import decimal, percent_text, whole

__all__ = ["finite", "number", "verdict"]


def verdict(
    predicted: float | None,
    measured: float | None,
    *,
    tolerance: float,
    log_scale: bool = False,
    reason_if_failed: str = "",
    unit: str = "×",
) -> dict[str, Any]:
    """Compare a measurement with its prediction.

    Linear scale: ``error`` = |predicted - measured| / |measured|, the one error of a prediction
    (:func:`~roofline_report.analysis.miss.relative_error`), held when error <= tolerance
    (a fraction: 0.25 is 25%). Log scale: ``error`` = max(measured/predicted, predicted/measured),
    a factor >= 1, held when error <= tolerance (a factor > 1, e.g. 2.0).

    Returns ``{"status": "held"|"failed"|"unavailable", "error", "tolerance", "log_scale",
    "predicted", "measured", "text"}``; a missing, non-finite (or, on a log scale, non-positive)
    input gives ``status: unavailable`` with the reason in ``text``. ``unit`` formats the values
    in the text ("×" for ratios). Raises ValueError for an invalid tolerance.
    """
    if not (isinstance(tolerance, int | float) and math.isfinite(tolerance) and tolerance > 0):
        raise ValueError(f"tolerance must be positive and finite, got {tolerance!r}")
    if log_scale and tolerance <= 1:
        raise ValueError(f"a log-scale tolerance is a factor above 1, got {tolerance!r}")
    out: dict[str, Any] = {
        "status": "unavailable",
        "error": None,
        "tolerance": float(tolerance),
        "log_scale": log_scale,
        "predicted": finite(predicted),
        "measured": finite(measured),
        "text": "",
    }
    p, m = out["predicted"], out["measured"]
    if p is None or m is None:
        which = "prediction" if p is None else "measurement"
        out["text"] = f"unavailable: no finite {which}"
        return out
    if log_scale and (p <= 0 or m <= 0):
        out["text"] = "unavailable: a log-scale verdict needs positive values"
        return out
    if not log_scale and m == 0:
        out["text"] = "unavailable: a relative error needs a non-zero measurement"
        return out
    if log_scale:
        error = Miss(p, m).factor  # both positive, checked above
        held = error <= tolerance
        size = f"a factor of {decimal(error, 3)}"
        out["text"] = f"held within {size}" if held else ""
        off = f"off by {size}"
    else:
        error = relative_error(p, m)
        held = error <= tolerance
        out["text"] = f"held within {_pct(error)}" if held else ""
        off = f"error {_pct(error)}"
    out["error"] = error
    out["status"] = "held" if held else "failed"
    if not held:
        text = f"failed: measured {_show(m, unit)} against a predicted {_show(p, unit)} ({off})"
        if reason_if_failed:
            text += f"; likely reason: {reason_if_failed}"
        out["text"] = text
    return out


def _pct(fraction: float) -> str:
    return percent_text(fraction)


def _show(value: float, unit: str) -> str:
    if unit == "×":
        return f"{decimal(value, 3)}×"
    return f"{number(value)} {unit}".strip()


def number(value: float) -> str:
    """Three significant digits and every digit of the whole part, positional below 10⁶:
    '12500', '10.2', '0.00123' (beyond, a power of ten)."""
    return whole(value, 3)


def finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None
