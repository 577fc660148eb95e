"""A program's kernels as the analysis hands them to the report (no jax): each kernel's row
(:class:`KernelRow`: its counted work and bytes, measured time, prediction, miss, share of the
hardware roof and reason), the categories, the trace's summary of a program's calls
(:class:`TraceSummary`) and the table of them all (:class:`KernelTable`); and the levers, what
could save a program time, each with the time it could save and the numbers it rests on
(:class:`BelowRoof`, :class:`ExcessTraffic`, :class:`FreshPages`, :class:`Overhead`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from roofline_report.analysis.call_accounting import CallAccounting
from roofline_report.analysis.hardware_roof import (
    HardwareRoof,
    above,
    assumed_share,
    hardware_share,
    headroom,
    roof_share,
)
from roofline_report.analysis.loop_trips import LoopTrips
from roofline_report.analysis.miss import Miss
from roofline_report.analysis.predict import Prediction, faults_charged
from roofline_report.analysis.roofs import RoofSet
from roofline_report.analysis.stats import median
from roofline_report.hlo.kernel_reconciliation import KernelReconciliation
from roofline_report.kinds import Kind

SIGNIFICANT_KERNEL_S = 50e-6  # kernels at least this long enter the kernel accuracy figures
OVERLAP_SAID = 1.05  # summed kernel time over busy time above which kernels ran side by side


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
    # An asynchronous pair (a copy-start and its copy-done, a slice-start, an async
    # collective): its event on the device is its transfer's issue and whatever of the
    # transfer the kernels between its start and its done did not hide, so no roof at its
    # intensity times it (its roof still counts in its program's).
    asynchronous: bool = False

    @property
    def intensity(self) -> float | None:
        return self.flops / self.bytes if self.bytes and self.flops else None

    @property
    def achieved(self) -> float | None:
        """Measured FLOP/s."""
        return self.flops / self.seconds if self.seconds and self.flops else None

    @property
    def placed_roof(self) -> HardwareRoof | None:
        """Its roof at its intensity as its measured time is set against it: where its work is
        counted (an opaque call's is not: no roof places it) and its event is its work (an
        asynchronous pair's is not); None otherwise."""
        return None if self.uncosted or self.asynchronous else self.hardware

    @property
    def share_of_hardware_roof(self) -> float | None:
        """Achieved rate ÷ the hardware roof at its intensity: headroom (None on assumed
        budgets: :attr:`share_of_assumed_roof`)."""
        return hardware_share(self.placed_roof, self.seconds)

    @property
    def share_of_assumed_roof(self) -> float | None:
        """The same share on the assumed budgets, where no roof was measured: not headroom."""
        return assumed_share(self.placed_roof, self.seconds)

    @property
    def above_roof(self) -> str | None:
        """The roofs it ran above, by name (its share over 100%); None at or below them."""
        return above(self.placed_roof, self.seconds)

    @property
    def headroom(self) -> float | None:
        """Measured − its time at the roof at its intensity (0 at or above it)."""
        return headroom(self.placed_roof, self.seconds)

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
    pattern: str | None = None  # the kernel's pattern (KernelRow.pattern), None for none
    # The time its first writes to fresh pages are charged (the prediction's page-fault term),
    # left out of ``saving``: those pages are a lever of their own (FreshPages).
    faults: float = 0.0

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
class FreshPages:
    """A lever: first writes to pages the C allocator maps afresh on every call. The kernels
    that write first (``kernels``, the most pages first) are charged ``pages`` page faults a
    call at the measured ``fault`` seconds a page (the prediction's page-fault terms:
    ``saving``, no more than the call's time). The pages are as many as the process took
    while the call was timed (``counted``) where it counted them, else the temporaries'
    (``temp_bytes``) past glibc's largest mmap threshold. Memory the allocator keeps between
    calls faults no page (see :mod:`~roofline_report.analysis.levers`)."""

    pages: float
    fault: float
    kernels: tuple[str, ...]
    counted: float | None
    temp_bytes: int | None
    saving: float
    share: float | None
    call: float  # the program's measured time per call

    what: ClassVar[str] = "fresh pages"


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
Lever = BelowRoof | ExcessTraffic | FreshPages | Overhead


# A device idle for more than this share of each call of a traced program waits for its host:
# the program is host-bound (as TraceLens's and XProf's overviews call a step whose device
# time is mostly idle).
HOST_BOUND_IDLE = 0.5


def step_seconds(steps: Sequence[float]) -> float | None:
    """A traced program's step: the median of its step markers' times; None without any."""
    kept = [float(x) for x in steps if x > 0]
    return median(kept) if kept else None


def idle_between_steps(steps: Sequence[float], program_s: float) -> float | None:
    """The share of a traced step during which its program's call did not run on the device:
    the steps' median (by their markers) less the call's device span, over that median;
    None without step markers or a positive span. Past :data:`HOST_BOUND_IDLE` the step
    waits on its host between calls (a TPU v5e trace of the shipped training step: steps of
    1.68 ms around calls of 32.4 µs)."""
    step = step_seconds(steps)
    if step is None or step <= 0 or program_s <= 0:
        return None
    return max(0.0, step - program_s) / step


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
    reconciliation: KernelReconciliation
    notes: tuple[str, ...] = ()
    # Pages the kernels fault on fresh memory per call, the temporaries that make them fresh
    # and the faults a call its timing counted, where those set them (see
    # analysis.fresh_pages); 0 and None where none are charged.
    fresh_pages: float = 0.0
    temp_bytes: int | None = None
    counted_pages: float | None = None
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
    def fault_seconds(self) -> float:
        """What the fresh pages cost a call: the kernels' predicted page-fault terms
        (:func:`~roofline_report.analysis.predict.faults_charged`)."""
        return faults_charged(r.prediction for r in self.rows if r.prediction is not None)

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


__all__ = ["HOST_BOUND_IDLE", "OVERLAP_SAID", "SIGNIFICANT_KERNEL_S", "BelowRoof", "Category",
           "ExcessTraffic", "FreshPages", "KernelRow", "KernelTable", "Lever", "Overhead",
           "TraceSummary"]
