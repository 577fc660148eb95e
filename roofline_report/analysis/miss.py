"""How far a prediction is from a measurement (no jax): the one definition of the error, and
the words for its direction.

``error = |predicted − measured| ÷ measured`` is what the accuracy figures (medians, 90th
percentiles, the benchmarks' targets) are computed from. It cannot exceed 100% for a
prediction that is too low, so a large miss is shown as a ratio instead: measured ÷ predicted,
"2.3× slower than predicted" or "1.4× faster than predicted".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

__all__ = ["AS_PREDICTED", "Miss", "miss", "relative_error"]

AS_PREDICTED = 0.05  # within 5% of the prediction, the miss is said to be none


def relative_error(predicted: float, measured: float) -> float:
    """|predicted − measured| ÷ |measured|: the one error of a prediction, for a time
    (:attr:`Miss.error`) and for any other measured quantity (the lab's verdicts). Raises
    ZeroDivisionError for a zero measurement."""
    return abs(predicted - measured) / abs(measured)


@dataclass(frozen=True, slots=True)
class Miss:
    """A predicted time against a measured one (seconds, both positive)."""

    predicted: float
    measured: float

    @property
    def error(self) -> float:
        """|predicted − measured| ÷ measured (:func:`relative_error`)."""
        return relative_error(self.predicted, self.measured)

    @property
    def ratio(self) -> float:
        """measured ÷ predicted: above 1 when the program ran slower than predicted."""
        return self.measured / self.predicted

    @property
    def direction(self) -> Literal["slower", "faster", "as predicted"]:
        if abs(self.ratio - 1.0) <= AS_PREDICTED:
            return "as predicted"
        return "slower" if self.measured > self.predicted else "faster"

    @property
    def shortfall(self) -> float:
        """Seconds beyond the prediction: measured − predicted where it ran slower, else 0."""
        return max(0.0, self.measured - self.predicted)

    @property
    def factor(self) -> float:
        """How many times slower or faster than predicted (at least 1)."""
        return max(self.ratio, 1.0 / self.ratio)


def miss(predicted: float | None, measured: float | None) -> Miss | None:
    """The miss of two positive finite times; None when either is missing or not positive."""
    if predicted is None or measured is None:
        return None
    if not (math.isfinite(predicted) and math.isfinite(measured)):
        return None
    if predicted <= 0 or measured <= 0:
        return None
    return Miss(float(predicted), float(measured))
