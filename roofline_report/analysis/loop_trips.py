"""Trip counts of while loops that stop on data, observed in a profiler trace (no jax).

The compiled HLO gives a while loop's trip count (``known_trip_count``) only where the loop
counts up to a constant (a scan, a fori_loop). A loop that stops on data (sampling until every
sequence has emitted its end token) has none: the static count runs its kernels once per call
(:mod:`roofline_report.hlo.walk`), a lower bound on what a call runs. A trace counts what ran:
each kernel's launches per traced call.

:func:`loop_trips` reads, for each loop without a known trip count, the launches per call the
trace observed; :func:`observed_kernel` gives a kernel record those trips in place of the static
ones, so its work, bytes and prediction count every trip. The rule, one place:

* a kernel of such a loop that the trace shows runs its own launches per call: the median over
  the traced calls, rounded, never below its static trips (a loop runs at least once);
* a kernel of the loop the trace does not show (a condition XLA:CPU evaluates inline) runs the
  loop's count: the most common of its kernels' own counts (the body's kernels outnumber the
  condition's, which run once more), the smallest on a tie;
* without a trace, or with no kernel of the loop in it, nothing is observed: the static count
  stands and the prediction built on it is a lower bound (:attr:`LoopTrips.lower_bound`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roofline_report.analysis.stats import median

__all__ = ["LoopTrips", "loop_trips", "observed_kernel", "unknown_loops_in"]


@dataclass(frozen=True, slots=True)
class LoopTrips:
    """A while loop without a known trip count: ``loop`` (the innermost loop's instruction
    name), ``static`` the launches per call the static count gives its kernels (the loops
    around it with known counts multiplied, this one once: a lower bound), ``observed`` the
    launches per call the trace saw (kind measured; None without one), ``kernels`` the
    kernels inside it, ``charged`` whether the program totals charge any of them."""

    loop: str
    static: int
    observed: int | None
    kernels: int
    charged: bool = True

    @property
    def lower_bound(self) -> bool:
        """Whether the static count stands for this loop: its work is then a lower bound."""
        return self.observed is None and self.charged


def _launches(record: Mapping[str, Any] | None) -> int | None:
    """A traced kernel's launches per call: the median over the traced calls, rounded; None
    when the trace kept none."""
    if record is None:
        return None
    counts = [float(x) for x in record.get("launches") or [] if isinstance(x, int | float)]
    value = median(counts) if counts else None
    return round(value) if value is not None and value > 0 else None


def _unknown(k: Mapping[str, Any]) -> bool:
    return k.get("trips_known") is False and k.get("loop") is not None


def loop_trips(kernels: Sequence[Mapping[str, Any]],
               traced: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, int],
                                                                 tuple[LoopTrips, ...]]:
    """(observed launches per call by kernel name, each loop without a known trip count) for
    an inventory's ``kernels`` and a trace's kernel records by name (``{}`` without a trace);
    see the module docstring for the rule."""
    by_loop: dict[str, list[Mapping[str, Any]]] = {}
    for k in kernels:
        if _unknown(k):
            by_loop.setdefault(str(k["loop"]), []).append(k)
    observed: dict[str, int] = {}
    loops: list[LoopTrips] = []
    for loop, members in by_loop.items():
        static = min(max(1, int(k.get("trips") or 1)) for k in members)
        own = {str(k["name"]): n for k in members
               if (n := _launches(traced.get(str(k["name"])))) is not None}
        common: int | None = None
        if own:
            tally = Counter(own.values())
            common = min(tally, key=lambda n: (-tally[n], n))
        for k in members:
            count = own.get(str(k["name"]), common)
            if count is not None:
                observed[str(k["name"])] = max(count, max(1, int(k.get("trips") or 1)))
        loops.append(LoopTrips(loop, static, None if common is None else max(common, static),
                               len(members), any(k.get("charged", True) for k in members)))
    return observed, tuple(sorted(loops, key=lambda x: x.loop))


def observed_kernel(k: Mapping[str, Any], trips: int | None) -> Mapping[str, Any]:
    """``k`` with its launches per call set to the ``trips`` observed and marked so
    (``trips_observed``, ``static_trips`` the count it replaces); ``k`` itself for None."""
    if trips is None:
        return k
    return {**k, "trips": trips, "trips_observed": True,
            "static_trips": max(1, int(k.get("trips") or 1))}


def unknown_loops_in(compiled: Mapping[str, Any] | None) -> int:
    """How many while loops of a program's compiled facts have no known trip count (a program
    known only by its totals: its prediction is then a lower bound)."""
    loops = (compiled or {}).get("while_loops") or []
    return sum(1 for x in loops if isinstance(x, Mapping) and x.get("known_trip_count") is None)
