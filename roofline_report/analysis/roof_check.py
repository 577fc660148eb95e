"""A run's roofs checked against its own measurements (pure; no jax).

A roof is the fastest a kind of work runs on this machine, so a program held to roofs that it
beats says more about the roofs than about the program. One program a little above its roof is
the model's own error; most of a run's programs above theirs, each by more than its timing's
spread, is the mark of ceilings measured too low: measured while other work held the cores,
reused from the ceilings cache after the machine changed, or measured on another machine.

:func:`roof_check` counts the programs (and the significant kernels of their traces) that ran
faster than their predictions, held to this run's measured roofs, allow by more than their
timing's spread (and by more than :data:`~roofline_report.analysis.miss.AS_PREDICTED`), and
calls the roofs **suspect** when at least :data:`SUSPECT_SHARE` of the programs checked (or of
the kernels checked) did. It names the likely reasons from the run's own record: ceilings
measured under load (:mod:`.measuring_load`), reused from the cache, measured on another
device. The report words it; the command line's ``--remeasure`` measures the ceilings again.
It tallies the kernels by the roof each was held to: where the kernels above were held to the
roofs of some kinds of work (on a TPU v5e, every gather held to the gather roofs, 26 of 26)
while the roof most kernels were held to held for all of them (none of 23 to 31 above the
triad stream's), the ceilings as a whole are not too low, and the report says which roofs do
not describe their kernels instead of advising to measure them all again.
A program or kernel whose prediction is bound by the dispatch and launch floors (a trivial
program's) is not checked: beating a floor says nothing of the roofs.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from roofline_report.analysis.ceilings_origin import CeilingsOrigin
from roofline_report.analysis.measuring_load import Conditions
from roofline_report.analysis.miss import AS_PREDICTED, miss
from roofline_report.analysis.predict import Prediction
from roofline_report.analysis.records import SIGNIFICANT_KERNEL_S, Program
from roofline_report.analysis.stats import median
from roofline_report.results import schema

#: Roofs are suspect when at least this share of the programs (or kernels) checked ran above
#: them by more than their spread: half, so that a model error on a few programs of a run is
#: not taken for wrong ceilings.
SUSPECT_SHARE = 0.5
#: A roof held when at least this many significant kernels were checked against it and none
#: ran above it: its ceilings are not too low, whatever the kernels of other kinds did.
HELD_AT_LEAST = 5


class Cause(enum.Enum):
    """A likely reason for roofs that programs beat, from the run's own record."""

    LOADED = "measured under load"
    CACHED = "reused from the ceilings cache"
    OTHER_DEVICE = "measured on another device"


@dataclass(frozen=True, slots=True)
class Above:
    """A program or kernel faster than its prediction allows: ``factor`` = predicted ÷
    measured time (above 1), beyond its ``spread`` (the timing's IQR ÷ median, at least
    AS_PREDICTED)."""

    name: str
    factor: float
    spread: float


@dataclass(frozen=True, slots=True)
class RoofTally:
    """The significant kernels checked against one roof (its name) and how many of them ran
    above it beyond their spread."""

    roof: str
    checked: int
    above: int

    @property
    def held(self) -> bool:
        return self.above == 0 and self.checked >= HELD_AT_LEAST


@dataclass(frozen=True, slots=True)
class RoofCheck:
    """The programs and kernels above their roofs beyond their spread, of how many checked;
    whether that makes the roofs suspect; the likely causes; and the cached ceilings' age
    (days, None when measured in the run or unknown) and the device they were measured on."""

    programs: tuple[Above, ...]
    programs_checked: int
    kernels: tuple[Above, ...]
    kernels_checked: int
    causes: tuple[Cause, ...]
    age_days: int | None = None
    ceilings_device: str = ""
    run_device: str = ""
    # Measured in this run with the machine's load recorded, and no round under load: then
    # nothing recorded makes the roofs suspect, and the model may price the programs high.
    measured_quietly: bool = False
    # The kernels checked, by the roof each was held to: most kernels above first.
    roofs: tuple[RoofTally, ...] = ()

    @property
    def beaten(self) -> tuple[RoofTally, ...]:
        """The roofs some kernel ran above."""
        return tuple(t for t in self.roofs if t.above)

    @property
    def held(self) -> tuple[RoofTally, ...]:
        """The roofs :attr:`RoofTally.held`: many kernels checked, none above."""
        return tuple(t for t in self.roofs if t.held)

    @property
    def by_kind(self) -> bool:
        """Whether the kernels above were held to the roofs of some kinds of work while the
        roof most kernels were held to held for all of them: then the ceilings as a whole are
        not too low (ceilings measured under load, or on another machine, lower that roof as
        much as any), and measuring them again would not change what these kernels beat."""
        if not self.beaten:
            return False
        commonest = max(self.roofs, key=lambda t: (t.checked, -t.above))
        return commonest.held

    @property
    def suspect(self) -> bool:
        return (_share(self.programs, self.programs_checked)
                or _share(self.kernels, self.kernels_checked))

    @property
    def factors(self) -> tuple[float, ...]:
        """How many times faster than allowed, over the programs above (the kernels' where no
        program is)."""
        return tuple(a.factor for a in (self.programs or self.kernels))

    @property
    def median_factor(self) -> float | None:
        return median(self.factors)


def _share(above: Sequence[Above], checked: int) -> bool:
    return bool(above) and checked > 0 and len(above) >= SUSPECT_SHARE * checked


def above(name: str, predicted: float, measured: float, spread: float) -> Above | None:
    """The :class:`Above` record when ``measured`` beats ``predicted`` by more than the
    spread (and AS_PREDICTED), else None."""
    m = miss(predicted, measured)
    if m is None:
        return None
    allowed = max(spread, AS_PREDICTED)
    factor = 1.0 / m.ratio  # how many times faster than predicted
    return Above(name, factor, allowed) if factor > 1.0 + allowed else None


def _on_floors(p: Prediction) -> bool:
    """Whether a prediction is bound by its floors (the dispatch of a call, the launches of
    its kernels): a trivial program faster than them says nothing of the roofs."""
    return p.binding.group == "overhead"


def _kernels(programs: Sequence[Program]) -> tuple[list[Above], int, tuple[RoofTally, ...]]:
    found: list[Above] = []
    checked = 0
    tally: dict[str, list[int]] = {}
    for p in programs:
        if p.kernels is None:
            continue
        for r in p.kernels.rows:
            if not r.charged or r.prediction is None or r.miss is None \
                    or (r.seconds or 0.0) < SIGNIFICANT_KERNEL_S or _on_floors(r.prediction):
                continue
            checked += 1
            q1, q3 = r.spread if r.spread is not None else (0.0, 0.0)
            spread = (q3 - q1) / r.miss.measured if q3 > q1 else 0.0
            counts = tally.setdefault(r.prediction.binding.roof, [0, 0])
            counts[0] += 1
            if (a := above(f"{p.name}: {r.name}", r.prediction.seconds, r.miss.measured,
                           spread)) is not None:
                found.append(a)
                counts[1] += 1
    roofs = sorted((RoofTally(roof, n, up) for roof, (n, up) in tally.items()),
                   key=lambda t: (-t.above, -t.checked, t.roof))
    return found, checked, tuple(roofs)


def roof_check(results: schema.Results, programs: Sequence[Program], measured_roofs: bool,
               measuring: Conditions, origin: CeilingsOrigin | None) -> RoofCheck | None:
    """The check of ``programs`` against the run's measured roofs; None where the run has no
    measured roofs (its predictions then rest on assumed budgets). ``measuring``: the load the
    ceilings were measured under; ``origin``: where they came from."""
    ceilings = results.ceilings
    if not measured_roofs or not isinstance(ceilings, schema.Ceilings):
        return None
    found: list[Above] = []
    checked = 0
    for p in programs:
        if p.prediction is None or p.timing is None or p.seconds is None \
                or _on_floors(p.prediction):
            continue
        checked += 1
        if (a := above(p.name, p.prediction.seconds, p.seconds, p.timing.spread)) is not None:
            found.append(a)
    kernels, kernels_checked, roofs = _kernels(programs)
    causes: list[Cause] = []
    if measuring.loaded:
        causes.append(Cause.LOADED)
    if origin is not None and origin.cached:
        causes.append(Cause.CACHED)
    env = results.environment
    ceilings_device = f"{ceilings.backend} {ceilings.device_kind}".strip()
    run_device = f"{env.backend} {env.device_kind}".strip()
    if ceilings_device and run_device and ceilings_device != run_device:
        causes.append(Cause.OTHER_DEVICE)
    return RoofCheck(programs=tuple(found), programs_checked=checked, kernels=tuple(kernels),
                     kernels_checked=kernels_checked, causes=tuple(causes),
                     age_days=origin.age_days if origin is not None and origin.cached else None,
                     ceilings_device=ceilings.device_kind,
                     measured_quietly=(not causes and measuring.recorded and origin is not None
                                       and not origin.cached),
                     run_device=env.device_kind, roofs=roofs)


__all__ = ["HELD_AT_LEAST", "SUSPECT_SHARE", "Above", "Cause", "RoofCheck", "RoofTally", "above",
           "roof_check"]
