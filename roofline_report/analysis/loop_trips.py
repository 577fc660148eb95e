"""Trip counts of while loops that stop on data, observed in a profiler trace (no jax).

The compiled HLO gives a while loop's trip count (``known_trip_count``) only where the loop
counts up to a constant (a scan, a fori_loop). A loop that stops on data (sampling until every
sequence has emitted its end token) has none: the static count runs its kernels once per call
(:mod:`roofline_report.hlo.walk`), a lower bound on what a call runs. A trace counts what ran:
each kernel's launches per traced call.

:func:`loop_trips` reads, for each loop without a known trip count, the launches per call the
trace observed; :func:`observed_kernel` gives a kernel record those trips in place of the static
ones, so its work, bytes and prediction count every trip. The rule, one place:

* each kernel of such a loop that the trace shows has its own launches per call: the median
  over the traced calls, rounded;
* the loop runs the most common of its kernels' counts (the body's kernels outnumber the
  condition's, which run once more, and a library call that runs as two device kernels per
  trip), the smallest on a tie, never below the static count (a loop runs at least once);
* every kernel of the loop runs the loop's count, a kernel the trace does not show too (a
  condition XLA:CPU evaluates inline), except a kernel of a conditional's branch inside the
  loop, which runs its own count where the trace shows it (the branch is taken on some trips);
* without a trace, or with no kernel of the loop in it, nothing is observed: the static count
  stands and the prediction built on it is a lower bound (:attr:`LoopTrips.lower_bound`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from roofline_report.analysis.stats import median
from roofline_report.results import schema

__all__ = ["LoopTrips", "implied_trips", "loop_trips", "observed_kernel", "per_trip",
           "unknown_loops_in"]


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
    # Without a trace: the predicted seconds of one trip of its kernels (None where unpriced)
    # and the trips the program's measured time would hold at that (:func:`implied_trips`).
    per_trip_s: float | None = None
    implied: float | None = None

    @property
    def lower_bound(self) -> bool:
        """Whether the static count stands for this loop: its work is then a lower bound."""
        return self.observed is None and self.charged


def _launches(record: schema.KernelTime | None) -> int | None:
    """A traced kernel's launches per call: the median over the traced calls, rounded; None
    when the trace kept none."""
    if record is None:
        return None
    counts = [float(x) for x in record.launches]
    value = median(counts) if counts else None
    return math.floor(value + 0.5) if value is not None and value > 0 else None


def _unknown(kernel: schema.KernelRecord) -> bool:
    return not kernel.trips_known and kernel.loop is not None


def loop_trips(kernels: Sequence[schema.KernelRecord],
               traced: Mapping[str, schema.KernelTime]) -> tuple[dict[str, int],
                                                                 tuple[LoopTrips, ...]]:
    """(observed launches per call by kernel name, each loop without a known trip count) for
    an inventory's ``kernels`` and a trace's kernel records by name (``{}`` without a trace);
    see the module docstring for the rule."""
    by_loop: dict[str, list[schema.KernelRecord]] = {}
    for kernel in kernels:
        if kernel.loop is not None and _unknown(kernel):
            by_loop.setdefault(kernel.loop, []).append(kernel)
    observed: dict[str, int] = {}
    loops: list[LoopTrips] = []
    for loop, members in by_loop.items():
        static = min(kernel.trips for kernel in members)
        own = {kernel.name: n for kernel in members
               if (n := _launches(traced.get(kernel.name))) is not None}
        common: int | None = None
        if own:
            tally = Counter(own.values())
            common = min(tally, key=lambda n: (-tally[n], n))
        for kernel in members:
            count = own.get(kernel.name, common) if kernel.branch is not None else common
            if count is not None:
                observed[kernel.name] = max(count, kernel.trips)
        loops.append(LoopTrips(loop, static, None if common is None else max(common, static),
                               len(members), any(kernel.charged for kernel in members)))
    return observed, tuple(sorted(loops, key=lambda x: x.loop))


def observed_kernel(kernel: schema.KernelRecord, trips: int | None
                    ) -> tuple[schema.KernelRecord, int | None]:
    """``kernel`` with its launches per call set to the ``trips`` observed, and the static
    count they replace; ``kernel`` itself and None for None."""
    if trips is None:
        return kernel, None
    return kernel.model_copy(update={"trips": trips}), kernel.trips


def unknown_loops_in(compiled: schema.Compiled | None) -> int:
    """How many while loops of a program's compiled facts have no known trip count (a program
    known only by its totals: its prediction is then a lower bound)."""
    if compiled is None:
        return 0
    return sum(1 for x in compiled.while_loops if x.known_trip_count is None)


def per_trip(loops: Sequence[LoopTrips], kernels: Sequence[schema.KernelRecord],
             seconds: Mapping[str, float]) -> tuple[LoopTrips, ...]:
    """``loops`` with the predicted seconds of one trip of each loop whose trips nothing
    observed: its charged kernels' predicted ``seconds`` per call (by kernel name) summed over
    its static count; a loop with a kernel left unpriced keeps None."""
    out = []
    for x in loops:
        members = [kernel for kernel in kernels
                   if _unknown(kernel) and kernel.loop == x.loop and kernel.charged]
        if x.observed is not None or not members \
                or any(kernel.name not in seconds for kernel in members):
            out.append(x)
            continue
        total = sum(seconds[kernel.name] for kernel in members)
        out.append(replace(x, per_trip_s=total / x.static if total > 0 else None))
    return tuple(out)


def implied_trips(loops: Sequence[LoopTrips], measured: float | None,
                  predicted: float | None) -> tuple[LoopTrips, ...]:
    """``loops`` with, where exactly one loop's trips are unknown and priced, the trips the
    program's ``measured`` time per call would hold: its static count plus the measured time
    beyond the ``predicted`` (a lower bound) over one trip's predicted time. A reading of the
    timing, said beside the prediction; the prediction never uses it (it would then match
    the measurement by construction)."""
    unknown = [x for x in loops if x.lower_bound]
    if len(unknown) != 1 or measured is None or predicted is None:
        return tuple(loops)
    x = unknown[0]
    if not x.per_trip_s or measured <= predicted:
        return tuple(loops)
    implied = x.static + (measured - predicted) / x.per_trip_s
    return tuple(replace(y, implied=implied) if y is x else y for y in loops)
