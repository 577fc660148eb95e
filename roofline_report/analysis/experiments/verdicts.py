"""The verdict of a lab experiment (no jax): a measurement against its prediction, on a linear
or a log scale, with the text that states it.
"""

from __future__ import annotations

import math

from roofline_report.analysis.miss import Miss, relative_error
from roofline_report.analysis.records import Verdict
from roofline_report.text import decimal, percent_text, whole

__all__ = ["Verdict", "finite", "number", "verdict"]


def verdict(
    predicted: float | None,
    measured: float | None,
    *,
    tolerance: float,
    log_scale: bool = False,
    reason_if_failed: str = "",
    unit: str = "×",
) -> Verdict:
    """Compare a measurement with its prediction.

    Linear scale: ``error`` = |predicted - measured| / |measured|, the one error of a prediction
    (:func:`~roofline_report.analysis.miss.relative_error`), held when error <= tolerance
    (a fraction: 0.25 is 25%). Log scale: ``error`` = max(measured/predicted, predicted/measured),
    a factor >= 1, held when error <= tolerance (a factor > 1, e.g. 2.0).

    A missing, non-finite (or, on a log scale, non-positive) input gives ``status:
    unavailable`` with the reason in ``text``. ``unit`` formats the values in the text ("×"
    for ratios). Raises ValueError for an invalid tolerance.
    """
    if not (isinstance(tolerance, int | float) and math.isfinite(tolerance) and tolerance > 0):
        raise ValueError(f"tolerance must be positive and finite, got {tolerance!r}")
    if log_scale and tolerance <= 1:
        raise ValueError(f"a log-scale tolerance is a factor above 1, got {tolerance!r}")
    predicted_value, measured_value = finite(predicted), finite(measured)

    def judged(status: str, text: str, error: float | None = None) -> Verdict:
        return Verdict(status, error, float(tolerance), log_scale, predicted_value,
                       measured_value, text)

    if predicted_value is None or measured_value is None:
        which = "prediction" if predicted_value is None else "measurement"
        return judged("unavailable", f"unavailable: no finite {which}")
    if log_scale and (predicted_value <= 0 or measured_value <= 0):
        return judged("unavailable", "unavailable: a log-scale verdict needs positive values")
    if not log_scale and measured_value == 0:
        return judged("unavailable",
                      "unavailable: a relative error needs a non-zero measurement")
    if log_scale:
        error = Miss(predicted_value, measured_value).factor  # both positive, checked above
        size = f"a factor of {decimal(error, 3)}"
        held_text, off = f"held within {size}", f"off by {size}"
    else:
        error = relative_error(predicted_value, measured_value)
        held_text, off = f"held within {_pct(error)}", f"error {_pct(error)}"
    if error <= tolerance:
        return judged("held", held_text, error)
    text = (f"failed: measured {_show(measured_value, unit)} against a predicted "
            f"{_show(predicted_value, unit)} ({off})")
    if reason_if_failed:
        text += f"; likely reason: {reason_if_failed}"
    return judged("failed", text, error)


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
