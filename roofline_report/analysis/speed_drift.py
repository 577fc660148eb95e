"""Whether the machine ran at its ceilings' speed while the programs were timed (no jax).

A run's predictions rest on ceilings measured at one time and are judged against programs
timed at another; on a shared machine its speed drifts between the two, and every program of a
run then misses in the same direction (on a 2-core CPU the median ratio of predicted to measured
time over a run's programs moved from 0.77 to 1.06 between runs minutes apart). The run times
the float32 matmul ceiling's own size again once its programs are timed
(:mod:`roofline_report.observe.speed_check`, ``speed_check`` in results.json); here that check
is read: a machine more than :data:`DRIFT` slower or faster than at its ceilings is said so in
the run's note and named as a reason on a program that missed in the same direction, where it
accounts for at least :data:`SHARE_OF_MISS` of the miss. The words follow from the two rates,
whichever way they differ.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from roofline_report.text import percent_text
from roofline_report.units import format_si

__all__ = ["DRIFT", "SHARE_OF_MISS", "Drift", "drift_of"]

DRIFT = 0.10  # a check this share or more off its ceiling's rate is said
# A drift names a program's miss as its reason when it accounts for at least this share of it
# (in log terms: of the factor between the predicted and the measured time).
SHARE_OF_MISS = 0.25


@dataclass(frozen=True, slots=True)
class Drift:
    """The check's rate (``value``) against the ceiling's (``ceiling_value``), FLOP/s."""

    probe: str
    ceiling_value: float
    value: float

    @property
    def ratio(self) -> float:
        """The machine's speed at the check over its speed at the ceilings (below 1: slower)."""
        return self.value / self.ceiling_value

    @property
    def slower(self) -> bool:
        return self.value < self.ceiling_value

    @property
    def drifted(self) -> bool:
        """Off by :data:`DRIFT` or more either way (as a share of the faster rate)."""
        low, high = sorted((self.value, self.ceiling_value))
        return low <= (1.0 - DRIFT) * high

    @property
    def share(self) -> float:
        """How much slower or faster, as a share: 1 − ratio when slower, ratio − 1 when faster."""
        return 1.0 - self.ratio if self.slower else self.ratio - 1.0

    def words(self) -> str:
        """'the machine ran 23% slower when checked after its programs were timed than when its
        ceilings were measured (a float32 matmul, n=512: 131 GFLOP/s against 170 GFLOP/s)'."""
        way = "slower" if self.slower else "faster"
        return (f"the machine ran {percent_text(self.share)} {way} when checked after its "
                f"programs were timed than when its ceilings were measured ({self.probe}: "
                f"{format_si(self.value, 'FLOP/s')} against "
                f"{format_si(self.ceiling_value, 'FLOP/s')})")

    def note(self) -> str:
        """The run's note: what the drift does to every prediction of the run."""
        effect = ("predictions from those ceilings read short of the programs' times"
                  if self.slower else
                  "predictions from those ceilings read long of the programs' times")
        return f"{self.words()}: {effect} by about as much"

    def explains(self, predicted: float, measured: float) -> bool:
        """Whether the drift accounts for a program's miss: the same way (measured slower than
        predicted on a machine found slower, or faster on one found faster), and for at least
        :data:`SHARE_OF_MISS` of it as a factor (a 12% slower machine does not explain a
        program 2.4 times slower than predicted)."""
        if not self.drifted or predicted <= 0 or measured <= 0:
            return False
        if (measured > predicted) != self.slower:
            return False
        miss = abs(math.log(measured / predicted))
        return abs(math.log(self.ratio)) >= SHARE_OF_MISS * miss


def drift_of(doc: Mapping[str, Any]) -> Drift | None:
    """The run's speed check, where it was made and both rates are positive numbers."""
    check = doc.get("speed_check")
    if not isinstance(check, Mapping) or not check.get("available"):
        return None
    before, now = _rate(check.get("ceiling_value")), _rate(check.get("value"))
    if before is None or now is None:
        return None
    return Drift(str(check.get("probe") or "the float32 matmul"), before, now)


def _rate(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None
