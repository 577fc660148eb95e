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

The memory roofs are checked too, each at one point of the working-set sweep timed again
(``speed_check.memory``): a program whose binding term is priced at a memory roof that was
checked is judged by that roof's check, the others by the matmul's. A run whose memory-bound
programs all ran slow can read its matmul 2% off. A program bound by its call's dispatch is
judged by the dispatch floor's check (``speed_check.dispatch``), said in the time of a call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from roofline_report.results import schema
from roofline_report.text import percent_text
from roofline_report.units import format_binary, format_si

if TYPE_CHECKING:
    from roofline_report.analysis.predict import Term

__all__ = ["CALLS", "DISPATCH", "DRIFT", "SHARE_OF_MISS", "Drift", "SpeedChecks", "checks_of",
           "drift_of"]

DRIFT = 0.10  # a check this share or more off its ceiling's rate is said
# A drift names a program's miss as its reason when it accounts for at least this share of it
# (in log terms: of the factor between the predicted and the measured time).
SHARE_OF_MISS = 0.25
CALLS = "calls/s"  # the unit of the dispatch check's rates: the page says them as times
DISPATCH = "dispatch"  # the term a prediction's dispatch floor is charged as


@dataclass(frozen=True, slots=True)
class Drift:
    """The check's rate (``value``) against the ceiling's (``ceiling_value``), in ``unit``;
    ``roof``: the memory roof a memory check times ("" for the matmul's)."""

    probe: str
    ceiling_value: float
    value: float
    unit: str = "FLOP/s"
    roof: str = ""

    def as_shown(self, value: float) -> tuple[float, str]:
        """A rate of this check as the page gives it, (value, unit): calls a second as the
        time of one call, in seconds."""
        if self.unit == CALLS:
            return 1.0 / value, "s"
        return value, self.unit

    def shown(self, value: float) -> str:
        """A rate of this check as the page says it (:meth:`as_shown`)."""
        return format_si(*self.as_shown(value))

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
                f"{self.shown(self.value)} against {self.shown(self.ceiling_value)})")

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


@dataclass(frozen=True, slots=True)
class SpeedChecks:
    """A run's checks: the matmul's (``compute``) and each memory roof's (``memory``)."""

    compute: Drift | None
    memory: tuple[Drift, ...] = ()
    dispatch: Drift | None = None

    def for_binding(self, binding: Term) -> Drift | None:
        """The check a prediction bound by ``binding`` is judged by: its memory roof's where
        that roof was checked, the dispatch floor's for one bound by the dispatch of its call
        where that was checked, else the matmul's."""
        if binding.group == "memory":
            for d in self.memory:
                if d.roof == binding.roof:
                    return d
        if binding.name == DISPATCH and self.dispatch is not None:
            return self.dispatch
        return self.compute

    def notes(self) -> list[str]:
        """The run's notes: the matmul's drift, then the memory roofs' that drifted, in one
        sentence built from their rates."""
        out = [self.compute.note()] if self.compute is not None and self.compute.drifted else []
        moved = [d for d in self.memory if d.drifted]
        if moved:
            parts = [f"{d.probe} {percent_text(d.share)} {'slower' if d.slower else 'faster'} "
                     f"({format_si(d.value, d.unit)} against {format_si(d.ceiling_value, d.unit)})"
                     for d in moved]
            listed = parts[0] if len(parts) == 1 else \
                f"{', '.join(parts[:-1])} and {parts[-1]}"
            ways = {d.slower for d in moved}
            effect = ("short of" if ways == {True} else "long of" if ways == {False}
                      else "off")
            what, roofs = (("a memory roof's sweep point", "that roof") if len(moved) == 1
                           else ("memory roofs' sweep points", "those roofs"))
            out.append(f"timed again after its programs, {what} ran {listed}: predictions "
                       f"bound by {roofs} read {effect} the programs' times by about as much")
        d = self.dispatch
        if d is not None and d.drifted:
            out.append(f"timed again after its programs, {d.probe} took {d.shown(d.value)} "
                       f"against {d.shown(d.ceiling_value)}: predictions bound by it read "
                       f"{'short of' if d.slower else 'long of'} the programs' times by about "
                       "as much")
        return out


def drift_of(results: schema.Results) -> Drift | None:
    """The run's matmul check, where it was made."""
    check = results.speed_check
    if not isinstance(check, schema.SpeedCheck):
        return None
    return Drift(check.probe or "the float32 matmul", float(check.ceiling_value),
                 float(check.value))


def checks_of(results: schema.Results) -> SpeedChecks | None:
    """The run's checks (:class:`SpeedChecks`); None where none was made."""
    check = results.speed_check
    if not isinstance(check, schema.SpeedCheck):
        return None
    memory = tuple(Drift(f"{m.roof} at {format_binary(m.bytes)}", float(m.ceiling_value),
                         float(m.value), "B/s", m.roof)
                   for m in check.memory or () if isinstance(m, schema.MemoryCheck))
    floor = check.dispatch
    dispatch = Drift("the dispatch of one call", 1.0 / float(floor.ceiling_seconds),
                     1.0 / float(floor.seconds), CALLS, DISPATCH) if floor is not None else None
    return SpeedChecks(drift_of(results), memory, dispatch)
