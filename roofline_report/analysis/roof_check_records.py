"""The records of a run's roof check (pure; no jax): a program or kernel above its roof
(:class:`Above`), the kernels checked against each roof (:class:`RoofTally`), the likely
causes of roofs that programs beat (:class:`Cause`) and the check itself (:class:`RoofCheck`),
whose properties say whether the roofs are suspect and whether the roofs of some kinds of
work, not the ceilings as a whole, are what the kernels beat. :mod:`.roof_check` makes them
from a run's programs; the report words them.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from roofline_report.analysis.miss import AS_PREDICTED, miss
from roofline_report.analysis.stats import median

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


__all__ = ["HELD_AT_LEAST", "SUSPECT_SHARE", "Above", "Cause", "RoofCheck", "RoofTally", "above"]
