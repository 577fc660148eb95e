"""What the analysis hands the report (no jax): frozen, typed records, one per thing the report
shows, each number computed once and carrying its kind.

* :class:`KernelRow`: one kernel of a program: its counted work and bytes (analytic), its
  measured time from a profiler trace, its prediction (kind *predicted*, with the roofs it was
  priced at, each of its own kind), the miss, the share of the hardware roof at its intensity
  and the reason for a large miss.
* :class:`KernelTable`: every kernel of a program, by time; categories; the trace's coverage
  of the program's time.
* :class:`Program`: one program (a catalog workload, the user's, or one read from a trace): its
  timing statistics, counted work and traffic, its place on the roofline, its prediction, its
  share of the hardware roof, its kernels and what could save it the most time (its levers).
* :class:`HardwareRoof`: the roof at a kernel's or a program's intensity.
* :class:`BelowRoof`, :class:`ExcessTraffic`, :class:`Overhead`: the levers, each with the time
  it could save and the numbers it rests on.
* :class:`SweepPoint` and :class:`Sweep`: a workload at growing sizes, each point predicted.
* :class:`Accuracy`: how well the model predicted this run.
* :class:`Analysis`: all of it, with the roofs, the seed's teaching studies, the lab's
  experiments and the sharded workloads.

Two numbers are kept apart on every kernel and program, each its own field:

* the **share of the hardware roof** (:func:`roof_share`): the achieved rate ÷ the roof at its
  intensity (:class:`HardwareRoof`: its work at the peak of each roof it runs under, its bytes
  at the roof of the memory level holding them), which is the time at that roof ÷ the measured
  time: headroom. Above 100% only where a roof is lower than what ran (:attr:`KernelRow
  .above_roof` names it). On assumed budgets it is a share of an assumed roof, not of any
  hardware's: ``share_of_assumed_roof`` holds it and ``share_of_hardware_roof`` is None;
* the **miss** (:mod:`~roofline_report.analysis.miss`): the model's predicted time against the
  measured one, its accuracy.

And the binding is the largest term of the prediction (its group's total for a kernel).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from roofline_report.analysis.call_accounting import CallAccounting
from roofline_report.analysis.ceilings_origin import CeilingsOrigin
from roofline_report.analysis.levels import Level
from roofline_report.analysis.loop_trips import LoopTrips
from roofline_report.analysis.miss import Miss
from roofline_report.analysis.predict import Prediction
from roofline_report.analysis.roof_check_records import RoofCheck
from roofline_report.analysis.roofs import RoofSet
from roofline_report.analysis.speed_drift import Drift, SpeedChecks
from roofline_report.analysis.stats import Stats, median
from roofline_report.backends import Backend
from roofline_report.errors import InputError
from roofline_report.kinds import Kind, Quantity
from roofline_report.results import schema
from roofline_report.results.schema_run import (
    DEFAULT_INTERCONNECT,
    SEED_BANDWIDTH,
    SEED_PEAK_FLOPS,
)

if TYPE_CHECKING:
    from roofline_report.preset_records import Preset

__all__ = [
    "Accuracy",
    "Analysis",
    "BelowRoof",
    "Budgets",
    "Category",
    "ChosenPreset",
    "ExcessTraffic",
    "Exercise",
    "Experiment",
    "FigureSeries",
    "HardwareRoof",
    "HypotheticalBudgets",
    "KernelRow",
    "KernelTable",
    "Lever",
    "Overhead",
    "Placement",
    "Program",
    "RoofPart",
    "Roofs",
    "Sweep",
    "SweepFigure",
    "SweepPoint",
    "TraceSummary",
    "roof_share",
]

SIGNIFICANT_KERNEL_S = 50e-6  # kernels at least this long enter the kernel accuracy figures
OVERLAP_SAID = 1.05  # summed kernel time over busy time above which kernels ran side by side


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
        2 more')."""
        parts = self.binding_parts
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


@dataclass(frozen=True, slots=True)
class KernelRow:
    """One kernel of a program (times per call of the program).

    ``seconds``: the kernel's measured time per call, its share of the machine from each launch
    to its completion less the time it sat queued behind other kernels, where the trace kept
    them (``basis``; :func:`roofline_report.analysis.kernels.kernel_samples`), the first
    quartile over the traced calls (waiting for a worker thread only lengthens a call, so the
    low quartile leaves most of it out); ``busy_seconds``: its events' own durations (on a
    CPU an asynchronous kernel's event covers only its dispatch and part of its work; None
    where the trace did not keep them).
    ``flops``/``bytes``: counted per call (trips included), kind analytic.
    """

    name: str
    category: str
    fusion: str | None
    source: str | None
    op_name: str | None
    trips: int
    launches: float | None
    seconds: float | None
    busy_seconds: float | None
    basis: str
    spread: tuple[float, float] | None
    share: float | None
    flops: float
    transcendentals: float
    bytes: float
    prediction: Prediction | None
    miss: Miss | None
    why: str = ""
    pattern: str | None = None
    charged: bool = True  # False for a conditional's branch the program totals do not charge
    # The user's own line that built it (``source`` is the frame JAX recorded, maybe a
    # library's); None where not recorded.
    user_source: str | None = None
    # Operations whose work the count could not price (a custom call such as TopK): the
    # prediction holds it to its bytes and launch alone.
    uncosted: tuple[str, ...] = ()
    by_name: tuple[str, ...] = ()  # how calls known by their name were counted
    # A kernel of a while loop without a known trip count: ``trips`` (and its flops, bytes and
    # prediction) are the launches per call the trace observed (kind measured), where
    # ``trips_observed``; ``static_trips`` is what the static count gives, a lower bound.
    trips_observed: bool = False
    static_trips: int | None = None
    # The roof at its intensity (None where the roofs lack a compute or a bandwidth roof).
    hardware: HardwareRoof | None = None

    @property
    def intensity(self) -> float | None:
        return self.flops / self.bytes if self.bytes and self.flops else None

    @property
    def achieved(self) -> float | None:
        """Measured FLOP/s."""
        return self.flops / self.seconds if self.seconds and self.flops else None

    @property
    def _roof(self) -> HardwareRoof | None:
        """Its roof at its intensity, where its work is counted (an opaque call's is not: no
        roof places it)."""
        return None if self.uncosted else self.hardware

    @property
    def share_of_hardware_roof(self) -> float | None:
        """Achieved rate ÷ the hardware roof at its intensity: headroom (None on assumed
        budgets: :attr:`share_of_assumed_roof`)."""
        return hardware_share(self._roof, self.seconds)

    @property
    def share_of_assumed_roof(self) -> float | None:
        """The same share on the assumed budgets, where no roof was measured: not headroom."""
        return assumed_share(self._roof, self.seconds)

    @property
    def above_roof(self) -> str | None:
        """The roofs it ran above, by name (its share over 100%); None at or below them."""
        return above(self._roof, self.seconds)

    @property
    def headroom(self) -> float | None:
        """Measured − its time at the roof at its intensity (0 at or above it)."""
        return headroom(self._roof, self.seconds)

    @property
    def share_of_roof(self) -> float | None:
        """Deprecated: :attr:`share_of_hardware_roof` (headroom); the model's accuracy is
        :attr:`miss`."""
        warnings.warn("share_of_roof is deprecated: use share_of_hardware_roof (achieved ÷ the "
                      "roof at its intensity) or miss (predicted against measured)",
                      DeprecationWarning, stacklevel=2)
        return self.share_of_hardware_roof

    @property
    def roof(self) -> tuple[float, str] | None:
        """The rate of the prediction: the rate the model holds this kernel to."""
        return self.prediction.roof_rate if self.prediction is not None else None

    @property
    def binding(self) -> str:
        return self.prediction.binding.label if self.prediction is not None else "unknown"

    @property
    def saving(self) -> float | None:
        """Time beyond its prediction per call: measured − predicted (0 when at or under it);
        None without both. The model's gap, which a miss's reason weighs; what it could save
        is its :attr:`headroom` under the hardware roof."""
        return self.miss.shortfall if self.miss is not None else None


@dataclass(frozen=True, slots=True)
class Category:
    """Kernels of one category (launch-bound kernels counted apart)."""

    key: str
    title: str
    kernels: int
    seconds: float | None  # None where none of its kernels has a time
    share: float | None
    flops: float
    bytes: float


@dataclass(frozen=True, slots=True)
class BelowRoof:
    """A lever: a kernel below its hardware roof at its intensity, which could save up to its
    measured time less its time at that roof (``saving``, seconds per call; ``share``: of the
    program's measured time), no more than the call's time less its time at the roof
    (``capped`` where that held it: the kernel's time is of the traced calls, which can run
    longer than the timed ones)."""

    kernel: str
    category: str
    seconds: float  # measured, per call
    roof: HardwareRoof
    saving: float
    share: float | None
    call: float  # the program's measured time per call
    capped: bool = False

    what: ClassVar[str] = "below its roof"

    @property
    def of_roof(self) -> float | None:
        """Its share of the roof (:func:`roof_share`)."""
        return roof_share(self.roof, self.seconds)


@dataclass(frozen=True, slots=True)
class ExcessTraffic:
    """A lever: traffic above the program's minimum. Every kernel together moves
    ``total_bytes`` a call against the ``minimum_bytes`` the program must move
    (``minimum_basis``: the analytic minimum, or every argument read and result written once);
    the kernels other than matrix products, convolutions and collectives (``kernels``, by
    category in ``categories``) move ``bytes`` of it in ``seconds``, and fused they could move
    up to ``excess`` less (the smaller of their bytes and the traffic above the minimum), which
    at the ``bandwidth`` of ``roof``, the roof of the memory level the program's traffic per
    call lies in, takes ``saving`` (no more than their measured time)."""

    kernels: tuple[str, ...]
    categories: tuple[tuple[str, int], ...]
    seconds: float
    bytes: float
    total_bytes: float
    minimum_bytes: float
    minimum_basis: str
    excess: float
    bandwidth: float
    roof: str
    roof_kind: Kind
    saving: float
    share: float | None
    call: float  # the program's measured time per call

    what: ClassVar[str] = "traffic above the minimum"

    @property
    def ratio(self) -> float:
        """Every kernel's bytes ÷ the program's minimum."""
        return self.total_bytes / self.minimum_bytes


@dataclass(frozen=True, slots=True)
class Overhead:
    """A lever: the dispatch of a call and its kernels' launches, as the model prices them
    (``dispatch``, and ``launch`` seconds over ``launches`` launches per call, split launches
    included), against the call's measured ``seconds``: work done in fewer, larger calls and
    fewer kernels could save up to all of it but one launch (``floor``), no more than the
    call's time."""

    dispatch: float
    launch: float
    launches: float
    floor: float
    seconds: float
    saving: float
    share: float | None
    roof_kind: Kind

    what: ClassVar[str] = "dispatch and launches"

    @property
    def total(self) -> float:
        return self.dispatch + self.launch


#: A lever: what could save a program time, with the time and the numbers it rests on.
Lever = BelowRoof | ExcessTraffic | Overhead


# A device idle for more than this share of each call of a traced program waits for its host:
# the program is host-bound (as TraceLens's and XProf's overviews call a step whose device
# time is mostly idle).
HOST_BOUND_IDLE = 0.5


@dataclass(frozen=True, slots=True)
class TraceSummary:
    """A program's profiler trace, medians over the traced calls (seconds per call)."""

    calls: int
    source: str
    program_s: float
    busy_s: float
    kernel_sum_s: float
    dispatch_s: float
    loop_control_s: float
    gaps_s: float
    launches: float
    traced_calls: tuple[float, ...]  # the traced calls' times, seconds
    untraced_calls: tuple[float, ...]  # as many calls timed just before the trace
    basis: str  # what a kernel's time is: one of analysis.kernels' bases (DEVICE_EVENT,
    # DEVICE_SHARED, SHARED_CORES, SHARED, LESS_WAITS, LAUNCH_TO_COMPLETION)
    notes: tuple[str, ...] = ()

    @property
    def coverage(self) -> float:
        return min(1.0, self.busy_s / self.program_s) if self.program_s > 0 else 0.0

    @property
    def idle(self) -> float:
        """The share of a call during which no kernel of the program ran on the device."""
        return 1.0 - self.coverage

    @property
    def host_bound(self) -> bool:
        """Whether a device trace shows the device idle for most of each call
        (:data:`HOST_BOUND_IDLE`): the device waited for the host, so its kernels' roofs do
        not bound the program's time."""
        return self.source == "device" and self.program_s > 0 and self.idle > HOST_BOUND_IDLE

    @property
    def overlap(self) -> float:
        """Summed kernel time ÷ the time at least one kernel ran."""
        return self.kernel_sum_s / self.busy_s if self.busy_s > 0 else 0.0

    @property
    def side_by_side(self) -> bool:
        """Whether kernels ran side by side: their summed time over :data:`OVERLAP_SAID` × the
        time at least one ran."""
        return self.overlap > OVERLAP_SAID

    @property
    def traced_call_s(self) -> float | None:
        """The median traced call; None where the trace kept no call times."""
        return median(list(self.traced_calls)) if self.traced_calls else None

    @property
    def untraced_call_s(self) -> float | None:
        """The median of the calls timed just before the trace, untraced."""
        return median(list(self.untraced_calls)) if self.untraced_calls else None

    @property
    def overhead(self) -> float | None:
        """Traced ÷ untraced median call time: what tracing cost a call."""
        t, u = self.traced_call_s, self.untraced_call_s
        return t / u if t is not None and u else None

    @property
    def overhead_within_spread(self) -> bool:
        """Whether the median traced call lies within the untraced calls' own range, so that
        the trace's cost is not told apart from the calls' spread."""
        t = self.traced_call_s
        return (t is not None and bool(self.untraced_calls)
                and min(self.untraced_calls) <= t <= max(self.untraced_calls))

    @property
    def gap_per_launch(self) -> float | None:
        """The gaps between kernels per launch after the first; None without a gap or without
        a second launch."""
        if self.launches <= 1 or self.gaps_s <= 0:
            return None
        return self.gaps_s / (self.launches - 1)


@dataclass(frozen=True, slots=True)
class KernelTable:
    """Every kernel of a program, longest first, under one roof set."""

    count: int
    launches: int
    rows: tuple[KernelRow, ...]
    categories: tuple[Category, ...]
    trace: TraceSummary | None
    trace_reason: str
    roofs: RoofSet
    reconciliation: Mapping[str, Any]
    notes: tuple[str, ...] = ()
    # Pages the kernels fault on fresh memory per call, and the temporaries that make them
    # fresh (see analysis.fresh_pages); 0 and None where none are charged.
    fresh_pages: float = 0.0
    temp_bytes: int | None = None
    # Every traced call's time in parts on the table's basis (analysis.call_accounting).
    accounting: CallAccounting | None = None
    # The while loops without a known trip count, each with the launches per call the trace
    # observed (or none: its kernels then count once, a lower bound).
    loops: tuple[LoopTrips, ...] = ()

    @property
    def lower_bound(self) -> bool:
        """Whether a charged loop's trip count is neither known nor observed."""
        return any(x.lower_bound for x in self.loops)

    @property
    def uncounted(self) -> tuple[KernelRow, ...]:
        """The kernels whose work is not counted (an opaque custom call, a library call whose
        config cannot be read): their bytes are, their flops are not."""
        return tuple(r for r in self.rows if r.uncosted)

    @property
    def counted_share(self) -> float | None:
        """The share of the summed kernel time taken by kernels whose work is counted; None
        where no kernel was timed."""
        timed = [r for r in self.rows if r.seconds is not None]
        total = sum(r.seconds or 0.0 for r in timed)
        if total <= 0:
            return None
        return sum(r.seconds or 0.0 for r in timed if not r.uncosted) / total

    def share_after(self, shown: int) -> float:
        """The share of the summed kernel time taken by the kernels after the first ``shown``."""
        return sum(r.share or 0.0 for r in self.rows[shown:])


@dataclass(frozen=True, slots=True)
class Placement:
    """A program on a roofline: its compiled-program intensity (counted flops over the bytes
    its kernels touch), the rate it achieved and the rate its prediction implies."""

    intensity: float
    achieved: float | None
    predicted_rate: float | None
    roofs: RoofSet


@dataclass(frozen=True, slots=True)
class Program:
    """One program of the run and everything derived from its observations."""

    name: str
    title: str
    dtype: str
    user: bool
    timing: Stats | None
    timing_reason: str
    flops: float | None  # counted (the kernels' sum, else our count), per call
    bytes: float | None  # the bytes its kernels touch, per call (else the minimum traffic)
    bytes_basis: str
    minimum_bytes: float | None  # the analytic minimum, or every argument and result once
    minimum_basis: str
    prediction: Prediction | None
    miss: Miss | None
    why: str
    kernels: KernelTable | None
    observation: Mapping[str, Any]  # the workload's record in results.json
    workload: schema.Workload  # the same record, typed
    reconciliation: Mapping[str, Any] | None = None
    spec_sheet: SpecPlacement | None = None
    missing_ops: tuple[str, ...] = ()  # operations the workload requires that its lowering lacks
    # Options of the user's jit its compiled program was timed without (jax's names, or
    # "jit_options" when jax did not expose them): its time is not that of the program as written.
    timed_without: tuple[str, ...] = ()
    # The roof at its intensity (its kernels' parts summed); None where it cannot be placed.
    hardware: HardwareRoof | None = None
    # What could save it the most time, the largest saving first (:mod:`.levers`).
    levers: tuple[Lever, ...] = ()

    @property
    def seconds(self) -> float | None:
        return self.timing.own if self.timing is not None else None

    @property
    def intensity(self) -> float | None:
        if self.flops is None or not self.bytes:
            return None
        return self.flops / self.bytes

    @property
    def achieved(self) -> float | None:
        """Measured FLOP/s of the counted work."""
        if self.flops is None or not self.seconds:
            return None
        return self.flops / self.seconds

    @property
    def share_of_hardware_roof(self) -> float | None:
        """Achieved rate ÷ the hardware roof at its intensity: headroom (None on assumed
        budgets: :attr:`share_of_assumed_roof`)."""
        return hardware_share(self.hardware, self.seconds)

    @property
    def share_of_assumed_roof(self) -> float | None:
        """The same share on the assumed budgets, where no roof was measured: not headroom."""
        return assumed_share(self.hardware, self.seconds)

    @property
    def above_roof(self) -> str | None:
        """The roofs it ran above, by name (its share over 100%); None at or below them."""
        return above(self.hardware, self.seconds)

    @property
    def roof(self) -> tuple[float, str] | None:
        """The rate the prediction implies: the rate the model holds the program to."""
        return self.prediction.roof_rate if self.prediction is not None else None

    @property
    def binding(self) -> str:
        return self.prediction.binding.label if self.prediction is not None else "unknown"

    def placement(self, roofs: RoofSet) -> Placement | None:
        """Where it sits on ``roofs``' roofline (its prediction's rate when priced on them)."""
        x = self.intensity
        if x is None:
            return None
        rate = self.roof
        predicted = rate[0] if rate is not None and rate[1] == "FLOP/s" else None
        return Placement(x, self.achieved, predicted, roofs)


@dataclass(frozen=True, slots=True)
class SpecPlacement:
    """A program on a chip's spec sheet: the roofline's time max(flops ÷ the dtype's compute
    roof, bytes ÷ HBM), the predicted time (no less than one launch floor), what binds, and
    the kind of the predicted time (the launch floor's where it binds: an assumption)."""

    roof_name: str
    roofline_s: float
    predicted_s: float
    binding: str
    kind: Kind


@dataclass(frozen=True, slots=True)
class SweepPoint:
    dims: Mapping[str, int]
    flops: float
    bytes: float
    measured: float
    prediction: Prediction | None
    observed_bound: str
    why: str

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else 0.0

    @property
    def achieved(self) -> float:
        return self.flops / self.measured

    @property
    def miss(self) -> Miss | None:
        from roofline_report.analysis.miss import miss

        return miss(self.prediction.seconds if self.prediction else None, self.measured)

    @property
    def predicted_bound(self) -> str:
        return self.prediction.binding.group if self.prediction is not None else "unknown"


@dataclass(frozen=True, slots=True)
class Sweep:
    name: str
    title: str
    dtype: str
    parameters: tuple[str, ...]
    points: tuple[SweepPoint, ...]
    predicted_crossing: Mapping[str, int] | None
    observed_crossing: Mapping[str, int] | None

    @property
    def median_error(self) -> float | None:
        from roofline_report.analysis.stats import median

        errors = [m.error for p in self.points if (m := p.miss) is not None]
        return median(errors)


@dataclass(frozen=True, slots=True)
class Accuracy:
    """How well the model predicted this run: errors of programs and sweep points, and of the
    kernels of at least :data:`SIGNIFICANT_KERNEL_S`."""

    errors: tuple[float, ...]
    kernel_errors: tuple[float, ...]

    @property
    def median(self) -> float | None:
        from roofline_report.analysis.stats import error_summary

        return error_summary(self.errors)[0]

    @property
    def p90(self) -> float | None:
        from roofline_report.analysis.stats import error_summary

        return error_summary(self.errors)[1]

    @property
    def kernel_median(self) -> float | None:
        from roofline_report.analysis.stats import error_summary

        return error_summary(self.kernel_errors)[0]


# The roofs of a profile whose device no preset describes and whose ceilings were not given:
# none. Kernels get achieved rates only, no prediction and no share of a roof.
NO_ROOF = RoofSet("no roof", Kind.SPEC_SHEET, (), ())


@dataclass(frozen=True, slots=True)
class Assumptions:
    """The hypothetical budgets and chip preset one render uses."""

    peak: float = SEED_PEAK_FLOPS
    bandwidth: float = SEED_BANDWIDTH
    interconnect: float = DEFAULT_INTERCONNECT
    source: str = "the seed's assumed budgets"
    preset: str | None = None  # a preset by name; None: the run's, or matched to the device

    def __post_init__(self) -> None:
        for name in ("peak", "bandwidth", "interconnect"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise InputError(f"the assumed {name} must be a positive number, got {value!r}")


@dataclass(frozen=True, slots=True)
class ChosenPreset:
    """The chip preset a render draws, and how it was chosen ("by name", "recognised by
    stats", "matched to this device")."""

    preset: Preset
    chosen: str

    def to_json(self) -> dict[str, Any]:
        """The preset's published figures, with how it was chosen."""
        return {**self.preset.to_json(), "chosen": self.chosen}


@dataclass(frozen=True, slots=True)
class HypotheticalBudgets:
    """The assumed budgets of a render, each a hypothetical quantity noted with their source,
    and the ridge between them (FLOP/byte)."""

    peak: Quantity
    bandwidth: Quantity
    interconnect: Quantity
    ridge: float
    source: str


@dataclass(frozen=True, slots=True)
class Budgets:
    """The budgets a render states: the assumed ones, and the chip preset drawn (None: none)."""

    hypothetical: HypotheticalBudgets
    preset: ChosenPreset | None = None


@dataclass(frozen=True, slots=True)
class Roofs:
    """The roof sets of one render."""

    hypothetical: RoofSet
    measured: RoofSet | None
    spec_sheet: RoofSet | None
    levels: tuple[Level, ...] = ()  # the memory levels found in the working-set sweep
    preset: ChosenPreset | None = None  # the chip preset drawn, with how it was chosen
    trace: bool = False  # the run was read from a profiler trace captured elsewhere

    @property
    def kernels(self) -> RoofSet:
        """The set kernels and programs are predicted on: the measured roofs; for a profile
        read from a trace without them, the spec sheet of its chip where one is drawn, else
        no roof at all (the assumed budgets describe no device a trace ran on); else the
        assumed budgets."""
        if self.measured is not None:
            return self.measured
        if self.trace:
            if self.spec_sheet is not None and self.spec_sheet.complete:
                return self.spec_sheet
            return NO_ROOF
        return self.hypothetical


@dataclass(frozen=True, slots=True)
class FigureSeries:
    """One line of a lab sweep's figure: its label, its kind, a value per size."""

    label: str
    kind: Kind
    y: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class SweepFigure:
    """A lab experiment's sweep as drawn: the sizes, the axes' labels and each series over
    the sizes."""

    x: tuple[float, ...]
    xlabel: str
    ylabel: str
    series: tuple[FigureSeries, ...]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SweepFigure:
        """From the figure an experiment's details hold
        (:func:`roofline_report.analysis.experiments.knees.sweep_figure`)."""
        return cls(tuple(data["x"]), str(data.get("xlabel", "")), str(data.get("ylabel", "")),
                   tuple(FigureSeries(str(s["label"]), Kind(s["kind"]), tuple(s["y"]))
                         for s in data["series"]))


@dataclass(frozen=True, slots=True)
class Experiment:
    """One lab experiment: the model's prediction, the measurement, the verdict, and the
    sweep it drew (None for an experiment of two programs)."""

    id: str
    title: str
    hypothesis: str
    prediction: Quantity
    measurement: Quantity
    status: str
    verdict: str
    figure: SweepFigure | None = None


@dataclass(frozen=True, slots=True)
class Exercise:
    id: str
    after: str
    question: str
    solution: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Analysis:
    """Everything the report shows, derived from one results document under one set of
    assumptions."""

    assumptions: Assumptions
    backend: Backend
    roofs: Roofs
    programs: tuple[Program, ...]
    sweeps: tuple[Sweep, ...]
    accuracy: Accuracy
    seed: Mapping[str, Any]  # the seed's hypothetical model, experiment and exercise
    budgets: Budgets
    experiments: tuple[Experiment, ...]
    exercises: tuple[Exercise, ...]
    sharding: Mapping[str, Any]
    skipped: tuple[schema.Skip, ...]  # what the run or this analysis could not do, and why
    run_note: str
    # The typed document analysed, and the same as results.json holds it (the plain form is
    # kept for the readers not yet written for the typed one).
    results: schema.Results = field(repr=False)
    observations: Mapping[str, Any] = field(repr=False, default_factory=dict)
    # Where the ceilings came from and their age as of the run (None without ceilings).
    ceilings_origin: CeilingsOrigin | None = None
    # The run's roofs checked against its own programs (None without measured roofs).
    roof_check: RoofCheck | None = None
    # The machine's speed checked after the programs against its ceilings (None: not checked,
    # or the predictions do not rest on the measured ceilings).
    speed_drift: Drift | None = None  # the matmul's check
    speed_checks: SpeedChecks | None = None  # every check of the run (matmul and memory)

    @property
    def accuracy_of_sweeps(self) -> float | None:
        """The median error over every predicted sweep point."""
        from roofline_report.analysis.stats import median

        return median([m.error for sw in self.sweeps for pt in sw.points
                       if (m := pt.miss) is not None])

    def program(self, name: str) -> Program | None:
        return next((p for p in self.programs if p.name == name), None)
