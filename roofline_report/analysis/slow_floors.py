"""Calls bound by their dispatch that all ran well past its floor in one run (pure; no jax).

A call whose prediction is its dispatch and launch floors (a program of a few microseconds)
has nothing else to be slow for: when it runs twice its floors or more, and no load, drift or
other evidence names a cause, its row would say the cause is unknown. On a shared 2-core CPU,
one run's five sweep points of 1 K to 16 K elements took 12 to 16 µs each, where the floors
measured with its ceilings were a blocking dispatch of 5.05 µs (3.47 enqueued), its speed
check timed the enqueued dispatch again after them at 3.33, and the same points took 4 to 9 µs
in most of twelve other runs: the host dispatched them slower while they were timed than
when its floors were measured. Seen on several calls of one run at once, that is the cause
to name, with the run's own figures: :func:`slow_floors` finds it, :func:`named` words it on
each such row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from roofline_report.analysis.explain import OFF, UNKNOWN_SLOWER
from roofline_report.analysis.miss import miss
from roofline_report.analysis.terms import Prediction
from roofline_report.text import decimal

__all__ = ["FEWEST", "SlowFloors", "named", "slow_floors"]

FEWEST = 3  # dispatch-bound calls this far past their floors before the run's dispatch is named


@dataclass(frozen=True, slots=True)
class SlowFloors:
    """The run's dispatch-bound calls that took :data:`~.explain.OFF` times their floors or
    more with no other cause named: how many, and the least and most factor."""

    calls: int
    least: float
    most: float

    def words(self) -> str:
        return (f"dispatch moved: {self.calls} of this run's calls bound by their dispatch "
                f"took {decimal(self.least, 2)} to {decimal(self.most, 2)}× the floors measured "
                "with its ceilings, with no other cause found: the host dispatched them "
                "slower while they were timed than when its floors were measured")


def _factor(prediction: Prediction | None, measured: float, why: str) -> float | None:
    """measured ÷ predicted of a dispatch-bound call whose reason names no cause, where that is
    :data:`~.explain.OFF` or more; else None."""
    if prediction is None or prediction.binding.group != "overhead" \
            or not why.startswith(UNKNOWN_SLOWER):
        return None
    m = miss(prediction.seconds, measured)
    return m.ratio if m is not None and m.ratio >= OFF else None


def slow_floors(calls: Sequence[tuple[Prediction | None, float, str]]) -> SlowFloors | None:
    """Of a run's calls as (prediction, measured seconds, reason), those bound by their
    dispatch that took :data:`~.explain.OFF` times it or more with no cause named; None
    where fewer than :data:`FEWEST` did (one slow call is its own noise)."""
    factors = [f for p, t, why in calls if (f := _factor(p, t, why)) is not None]
    if len(factors) < FEWEST:
        return None
    return SlowFloors(len(factors), min(factors), max(factors))


def named(why: str, prediction: Prediction | None, measured: float,
          found: SlowFloors | None) -> str:
    """``why`` with the run's slow dispatch named in place of an unknown cause, on a call
    :func:`slow_floors` counted; ``why`` unchanged otherwise."""
    if found is None or _factor(prediction, measured, why) is None:
        return why
    return found.words()  # an unknown cause is the whole of a slower call's reason
