"""The hardware roof at a kernel's or a program's intensity, and the shares of it (no jax).

:class:`HardwareRoof`: its work at the peak of each roof it runs under and its bytes at the roof
of the memory level holding them (:class:`RoofPart` each), the time that takes and the roof
that binds. The **share of the hardware roof** (:func:`roof_share`) is the achieved rate ÷ that
roof at its intensity, which is the time at that roof ÷ the measured time: headroom, above 100%
only where a roof is lower than what ran (:func:`above` names it). On assumed budgets it is a
share of an assumed roof, not of any hardware's (:func:`assumed_share`; :func:`hardware_share`
is then None). The model's miss, its accuracy, is another number
(:mod:`~roofline_report.analysis.miss`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from roofline_report.kinds import Kind


def roof_share(roof: HardwareRoof | None, measured: float | None) -> float | None:
    """The share of the roof at its intensity a kernel or program reached: its achieved rate ÷
    the roof's rate at its intensity, which is its time at that roof ÷ its measured time (the
    one definition; the roof's kind says whose roof it is). None without a roof, a measured
    time, or a time at the roof (no work and no bytes)."""
    if roof is None or not measured or measured <= 0 or roof.seconds <= 0:
        return None
    return roof.seconds / measured


#: A roof whose part of a hardware roof's binding time is under this share goes unnamed.
NAMED_PART = 0.1


@dataclass(frozen=True, slots=True)
class RoofPart:
    """One part of a :class:`HardwareRoof`'s time: ``work`` per call (flops, operations of a
    function or, ``group`` memory, bytes) at the roof called ``name``, taking ``seconds``.
    ``value``: its rate in ``unit`` (FLOP/s, op/s, B/s), work ÷ seconds (parts of one roof
    summed over kernels read it at their own sizes: their mean rate)."""

    group: Literal["compute", "memory"]
    name: str
    work: float
    seconds: float
    unit: str

    @property
    def value(self) -> float:
        return self.work / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True, slots=True)
class HardwareRoof:
    """The roof at a kernel's (or a program's) intensity, for its dtype and memory level
    (:mod:`~roofline_report.analysis.headroom` computes it): its work at the peak of each roof
    it runs under and its bytes at the roof of the memory level holding them, whichever takes
    longer (a program's: its kernels' compute parts summed against their memory parts summed,
    the roof at the program's intensity). ``kind``: the roofs' (measured, spec sheet, or
    hypothetical: assumed budgets, whose share is no headroom)."""

    flops: float
    bytes: float
    parts: tuple[RoofPart, ...]  # the largest first
    kind: Kind

    def group_seconds(self, group: str) -> float:
        return sum(x.seconds for x in self.parts if x.group == group)

    @property
    def seconds(self) -> float:
        """The time at the roof, per call: max(its compute parts summed, its memory parts
        summed)."""
        return max(self.group_seconds("compute"), self.group_seconds("memory"))

    @property
    def binding(self) -> Literal["compute", "memory"]:
        """The group that sets the time at the roof (compute at a tie, the ridge's rule)."""
        compute = self.group_seconds("compute")
        return "compute" if compute > 0 and compute >= self.group_seconds("memory") \
            else "memory"

    @property
    def binding_parts(self) -> tuple[RoofPart, ...]:
        """The parts of the binding group, the largest first."""
        return tuple(x for x in self.parts if x.group == self.binding)

    @property
    def names(self) -> str:
        """The binding roofs' names: 'matmul float32', 'L3 read-write', several joined, those
        under :data:`NAMED_PART` of the binding group's time counted ('matmul float32 and
        2 more'); empty for a roof of no counted work (an uncounted custom call's)."""
        parts = self.binding_parts
        if not parts:
            return ""
        total = sum(x.seconds for x in parts)
        named = [x.name for x in parts if x.seconds >= NAMED_PART * total] or \
            [x.name for x in parts[:1]]
        rest = len(parts) - len(named)
        if rest:
            return ", ".join(named) + f" and {rest} more"
        return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]

    @property
    def rate(self) -> tuple[float, str] | None:
        """The roof's rate at its intensity: flops ÷ the time at the roof in FLOP/s, or for
        one that computes nothing its bytes ÷ that time in B/s; None without either."""
        t = self.seconds
        if t <= 0:
            return None
        if self.flops > 0:
            return self.flops / t, "FLOP/s"
        if self.bytes > 0:
            return self.bytes / t, "B/s"
        return None

    @property
    def hypothetical(self) -> bool:
        """Whether the roof is assumed (no hardware's): its share is then no headroom."""
        return self.kind is Kind.HYPOTHETICAL


def hardware_share(roof: HardwareRoof | None, measured: float | None) -> float | None:
    """:func:`roof_share` where the roof is a hardware's (measured, or a chip's spec sheet):
    headroom; None on assumed budgets."""
    return None if roof is None or roof.hypothetical else roof_share(roof, measured)


def assumed_share(roof: HardwareRoof | None, measured: float | None) -> float | None:
    """:func:`roof_share` where the roof is the assumed budgets' (no hardware's: not
    headroom); None on any other roof."""
    return roof_share(roof, measured) if roof is not None and roof.hypothetical else None


def above(roof: HardwareRoof | None, measured: float | None) -> str | None:
    """The roofs a kernel or program ran above (its share of the roof at its intensity over
    100%), by name; None at or below them."""
    share = roof_share(roof, measured)
    return roof.names if roof is not None and share is not None and share > 1.0 else None


def headroom(roof: HardwareRoof | None, measured: float | None) -> float | None:
    """Seconds per call beyond the time at the roof (measured − at the roof; 0 at or above
    it); None without both."""
    if roof is None or measured is None or roof.seconds <= 0:
        return None
    return max(0.0, measured - roof.seconds)


__all__ = ["NAMED_PART", "HardwareRoof", "RoofPart", "above", "assumed_share", "hardware_share",
           "headroom", "roof_share"]
