"""Roofs as data: any number of compute roofs, bandwidth roofs and floors, each with its kind.

A roofline is not one (peak, bandwidth) pair. A machine has a compute roof per dtype (and per
precision: float32 runs as TF32 by default on NVIDIA GPUs), a bandwidth roof per memory level,
each holding for a range of working-set sizes, and floors below which no call finishes (the
per-call dispatch cost, the launch of one kernel). A :class:`RoofSet` holds them all with their
kind (hypothetical, spec sheet, measured) and where each came from; predictions ask it for the
roof that applies to a given dtype and working set, and figures draw every roof in it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from roofline_report import backends
from roofline_report.analysis import levels as levels_mod
from roofline_report.analysis.dispatch_netting import (
    net_of_dispatch,
    per_buffer,
    positive,
    products_net_of_dispatch,
)
from roofline_report.kinds import Kind
from roofline_report.results import schema
from roofline_report.roofline import attainable, ridge

if TYPE_CHECKING:
    from roofline_report.preset_records import Preset


def _log_interpolate(points: Sequence[tuple[float, float]], size: float) -> float | None:
    """The rate at ``size`` from (size, rate) points in ascending size: interpolated linearly
    in log size between the two around it, the smallest's at or below it; None past the
    largest (each roof says what holds there) or without points or a positive size."""
    if not points or size <= 0:
        return None
    if size <= points[0][0]:
        return points[0][1]
    for (s0, r0), (s1, r1) in itertools.pairwise(points):
        if s0 <= size <= s1:
            w = (math.log(size) - math.log(s0)) / (math.log(s1) - math.log(s0))
            return r0 + w * (r1 - r0)
    return None


def _rate_by_size(points: Sequence[tuple[float, float]], size: float, default: float) -> float:
    """The rate at ``size`` of a rate measured by size: interpolated (in log size) between the
    sizes measured, the nearest end's beyond them; ``default`` without points."""
    if not points:
        return default
    rate = _log_interpolate(points, size)
    return points[-1][1] if rate is None else rate


GROUPED_CONVOLUTION = "grouped-convolution"  # the compute roof of grouped convolutions
LINE_CONVOLUTION = "convolution-1d"  # the compute roof of dense 1-D (a sequence's) convolutions
PADDED_CONVOLUTION = "convolution-padded"  # the compute roof of padded ("same") convolutions
WEIGHT_GRADIENT = "convolution-weight-gradient"  # the compute roof of filters' gradients
GENERIC_CONVOLUTION = "convolution-generic"  # XLA:CPU's own code for the ones no library takes


@dataclass(frozen=True, slots=True)
class ComputeRoof:
    """A compute ceiling in FLOP/s; ``dtype`` None means it applies to any dtype. ``op``: the
    operation it was measured on, ``matmul`` (the roof of matrix products, and the compute roof
    a roofline draws), ``convolution`` (measured apart: another library path),
    ``convolution-padded`` (a padded image convolution's: another path again),
    ``convolution-weight-gradient`` (the gradient of a convolution's filter: below both),
    ``convolution-generic`` (one XLA:CPU hands to no library, run by its own code),
    ``convolution-1d`` (a sequence's: its rate follows its filter) or ``grouped-convolution``
    (depthwise: each group a tiny convolution)."""

    name: str
    value: float
    dtype: str | None
    kind: Kind
    provenance: str
    precision: str = "default"
    op: str = "matmul"
    # (flops of one product, FLOP/s) of smaller products, ascending: a product's rate grows
    # with its size, so one of a given size runs at the rate measured near it.
    by_flops: tuple[tuple[float, float], ...] = ()
    window: int = 0  # a grouped convolution roof's window elements (49 for 7x7; 0: not said)
    positions: int = 0  # a 1-D convolution roof's output positions a call (0: not said)
    channels: int = 0  # an image convolution roof's output features (0: not said)
    # (window elements, FLOP/s) of a generic convolution roof's sizes, ascending: its rate
    # follows the window its kernels slide more than their flops.
    by_window: tuple[tuple[float, float], ...] = ()

    def rate_at_window(self, window: int, flops: float) -> float:
        """The rate of a convolution sliding a window of ``window`` elements: interpolated in
        log window between :attr:`by_window`'s sizes, the nearest end's beyond them; read at
        ``flops`` (:meth:`rate_at`) where the roof or the kernel says no window."""
        if window <= 0 or not self.by_window:
            return self.rate_at(flops)
        return min(self.value, _rate_by_size(self.by_window, window, self.value))

    def patch_flops(self, patch: int, flops: float) -> float:
        """The flops at which a convolution whose patch matrix has ``patch`` elements reads
        this image convolution roof: those its own kernels had with a patch matrix of that
        size (2 x the patch x its output features), since such a convolution's rate follows
        its patch matrix (:func:`~roofline_report.hlo.product_facts.image_conv_patch`);
        ``flops`` where either is not known."""
        return 2.0 * patch * self.channels if patch > 0 and self.channels > 0 else flops

    def rate_at(self, flops: float | None) -> float:
        """The rate of a product of ``flops``: interpolated (in log flops) between the sizes
        measured, the roof's value at and beyond the largest, the smallest's below it. A
        grouped convolution's rate falls with its size (its data leave the caches, its work
        per byte stays small): beyond its largest size, that size's rate."""
        rate = _log_interpolate(self.by_flops, flops) if flops else None
        if rate is None and flops and self.op == GROUPED_CONVOLUTION and self.by_flops:
            rate = self.by_flops[-1][1]
        return self.value if rate is None else min(rate, self.value)


@dataclass(frozen=True, slots=True)
class BandwidthRoof:
    """A bandwidth ceiling in B/s of one memory level, for working sets in
    [``min_bytes``, ``max_bytes``) (None: unbounded on that side)."""

    name: str
    value: float
    level: str
    kind: Kind
    provenance: str
    min_bytes: int | None = None
    max_bytes: int | None = None
    unstable: str | None = None  # why the level finder found this roof implausible
    # (working set, B/s) measured by size where the roof applies, ascending (the write-new
    # roof's: a fresh output's cost depends on its size more than on the level).
    by_size: tuple[tuple[float, float], ...] = ()
    # (working set, B/s) of the sweep from the last cache's capacity to this level's window,
    # ascending (main memory's read-write and read roofs, where cache sizes are known).
    transition: tuple[tuple[float, float], ...] = ()

    def holds(self, working_set: float) -> bool:
        low = self.min_bytes if self.min_bytes is not None else 0
        high = self.max_bytes if self.max_bytes is not None else math.inf
        return low <= working_set < high

    def rate_at(self, working_set: float) -> float:
        """The rate at ``working_set``: interpolated (in log size) between the sizes measured,
        the nearest end's beyond them, never above the roof; ``value`` without sizes."""
        return min(self.value, _rate_by_size(self.by_size, working_set, self.value))

    def rate_for(self, working_set: float | None) -> float:
        """The roof a kernel of ``working_set`` bytes meets: in the transition from the last
        cache (:attr:`transition`), the sweep's rate at its size, interpolated in log size,
        never below the level's roof nor above the fastest transition point; else the roof."""
        points = self.transition
        if working_set is None or not points or working_set >= points[-1][0]:
            return self.value
        rate = _rate_by_size(points, working_set, self.value)
        return max(self.value, min(rate, max(v for _, v in points)))


ALL_THREADS = 1 << 20  # a rate whose threads were not recorded ranks as on every thread
SPLIT_LAUNCH = "split launch"  # the floor a kernel split across worker threads adds
# The same with calls enqueued, as programs are timed (may be 0: below the noise).
SPLIT_LAUNCH_ENQUEUED = "split launch enqueued"
PAGE_FAULT = "page fault"  # a first write to a fresh page of memory, per page
# The floors measured apart from the dispatch: (floor name, provenance) of the launch, the
# split launch and the page fault.
_LAUNCH_FLOOR = ("launch", "measured: one more kernel inside a program")
_SPLIT_LAUNCH_FLOOR = (SPLIT_LAUNCH, "measured: a kernel split across worker threads less the "
                       "same kernel one row smaller, run on one")
_PAGE_FAULT_FLOOR = (PAGE_FAULT, "measured: a fresh output's first write, less the same write "
                     "in place, per page faulted")
FRESH = "write-new"  # the sweep kernel that writes a fresh output once per call
# A fresh output at least this share of a kernel's bytes is priced at the write-new roof of its
# own size's level where the working set's level has none for it.
FRESH_SHARE = 0.25
READ_STREAM = "reduce"  # the streaming ceiling that only reads (a sum)
READ_KERNEL = "read"  # the working-set sweep's kernel that only reads
READ_WRITE_KERNEL = "read-write"  # the working-set sweep's kernel that reads and writes in place
# A working set past the last cache's capacity whose sweep rate is at least this many times
# main memory's roof is still largely in the cache (:meth:`RoofSet.spilled`).
STILL_CACHED = 1.5
# A kernel writing less than this share of the bytes it touches reads, as a reduction does.
READ_MOSTLY = 0.1
STREAM = " stream"  # the streaming ceilings on huge-page arrays past the last-level cache


@dataclass(frozen=True, slots=True)
class Floor:
    """A time no call (``dispatch``) or kernel (``launch``) goes below, in seconds. A dispatch
    floor measured by the buffers a call passes adds ``per_buffer`` seconds for each argument
    or result beyond the ``buffers`` of the call it was measured on (:meth:`at_buffers`)."""

    name: str
    seconds: float
    kind: Kind
    provenance: str
    per_buffer: float = 0.0
    buffers: int = 0

    def at_buffers(self, buffers: int | None) -> float:
        """The floor of a call passing ``buffers`` arguments and results (None: unknown, the
        floor as measured)."""
        if buffers is None or self.per_buffer <= 0:
            return self.seconds
        return self.seconds + self.per_buffer * max(0, buffers - self.buffers)


@dataclass(frozen=True, slots=True)
class RateRoof:
    """Operations per second of one operation (``exp``, ``tanh``, ``log``, ``convert``) in one
    dtype: the ceiling of kernels that evaluate many transcendentals or conversions; or, by
    size, of a reduction or a kernel pattern (``transpose``, ``gather``, ... elements per
    second; ``loop-dot`` FLOP/s)."""

    name: str
    op: str
    dtype: str
    value: float
    kind: Kind
    provenance: str
    # (operations per call, operations per second) by size, ascending, where the rate was
    # measured by size (a row reduction): its rate at a size is interpolated between them.
    by_size: tuple[tuple[float, float], ...] = ()
    row: int = 0  # a top-k roof's row length (0: not said)
    threads: int | None = None  # the worker threads its kernel ran on (None: not recorded)
    table: int = 0  # a gather roof's fixed table in bytes (0: as large as its output)
    # Measured with its operand computed by a kernel before it (an FFT as programs run it);
    # False: of an argument.
    computed: bool = False
    # Measured with its operand in main memory (a transposing copy whose source the caches no
    # longer hold); False: its operand in the cache, as a call repeated on it leaves it.
    from_memory: bool = False

    def rate_at(self, ops: float) -> float:
        """The rate at ``ops`` operations per call: interpolated (in log size) between the
        sizes measured, the nearest end's beyond them; ``value`` without sizes."""
        return _rate_by_size(self.by_size, ops, self.value)


@dataclass(frozen=True, slots=True)
class RoofSet:
    """All the roofs of one machine or budget, with the label figures show."""

    label: str
    kind: Kind
    compute: tuple[ComputeRoof, ...]
    bandwidth: tuple[BandwidthRoof, ...]
    floors: tuple[Floor, ...] = ()
    rates: tuple[RateRoof, ...] = ()
    # Whether a call's dispatch on the host overlaps the device's work when calls are enqueued
    # (an accelerator: a GPU or TPU runs one call while the host dispatches the next), so that
    # a call takes the longer of the two, not their sum (a CPU runs both on its cores).
    dispatch_overlaps: bool = False
    # Whether its compute units work side by side within a kernel (a TPU's matrix, vector and
    # transcendental units): a kernel's compute is then the largest of its units' times.
    units_overlap: bool = False

    def rate_for(self, op: str, dtype: str) -> RateRoof | None:
        """The measured rate of ``op`` in ``dtype`` (float32's when that dtype has none); of
        rates measured on different numbers of worker threads, the one on the most (a
        kernel on fewer takes its own: :meth:`alike`)."""
        for wanted in (dtype, "float32"):
            matches = [r for r in self.rates if r.op == op and r.dtype == wanted
                       and not r.from_memory]
            if matches:
                return max(matches, key=lambda r: ALL_THREADS if r.threads is None
                           else r.threads)
        return None

    def alike(self, roof: RateRoof, *, computed: bool | None = None, from_memory: bool = False,
              threads: int | None = None) -> RateRoof | None:
        """Another roof of ``roof``'s operation and dtype, measured by row where ``roof`` is,
        measured as asked: with its operand computed by a kernel before it or not
        (``computed``; None: either), from main memory or not (``from_memory``), on
        ``threads`` worker threads (None: any); None where the set has none (ceilings
        measured before such roofs were)."""
        return next((r for r in self.rates if r is not roof and r.op == roof.op
                     and r.dtype == roof.dtype and bool(r.row) == bool(roof.row)
                     and r.from_memory == from_memory
                     and (computed is None or r.computed == computed)
                     and (threads is None or r.threads == threads)), None)

    def levels(self) -> list[str]:
        """The memory levels of the bandwidth roofs, innermost first."""
        lower: dict[str, int] = {}
        for r in self.bandwidth:
            lower[r.level] = min(lower.get(r.level, r.min_bytes or 0), r.min_bytes or 0)
        return sorted(lower, key=lambda name: lower[name])

    def compute_for(self, dtype: str | None = None, op: str = "matmul") -> ComputeRoof | None:
        """The roof a ``dtype``'s ``op`` runs under: that dtype's at default precision, else a
        roof for any dtype, else the float32 one, else a 16-bit float's (a TPU runs float32
        matmuls in bfloat16 passes by default), never an integer or 8-bit roof while a float one
        exists; None if the set has no roof of ``op``."""
        roofs = [r for r in self.compute if r.op == op]
        if not roofs:
            return None
        ranked = sorted(roofs, key=lambda r: (r.precision != "default", -r.value))
        for wanted in (dtype, None, "float32", "bfloat16", "float16"):
            match = next((r for r in ranked if r.dtype == wanted), None)
            if match is not None:
                return match
        return ranked[0]

    def compute_at_precision(self, dtype: str, precision: str) -> ComputeRoof | None:
        """The matmul roof of ``dtype`` (float32's where that dtype has none) measured at
        ``precision`` ("highest": full float32 on a GPU's or TPU's matrix units); None where
        none was."""
        for wanted in (dtype, "float32"):
            found = [r for r in self.compute if r.op == "matmul" and r.dtype == wanted
                     and r.precision == precision]
            if found:
                return max(found, key=lambda r: r.value)
        return None

    def grouped_convolution(self, dtype: str, flops: float, taps: int
                            ) -> tuple[ComputeRoof, float] | None:
        """The roof and rate of a grouped convolution of ``flops`` whose outputs each take
        ``taps`` multiply-adds (window elements × input features per group; 0: not known).

        Its time goes with its outputs more than with its multiply-adds (on XLA:CPU a
        depthwise convolution took about the same time an output at 3x3 and 7x7), so its rate
        grows with its taps. With roofs measured at several windows (depthwise: taps = window
        elements) the rate is read in log taps on the line through the two measured around
        it, each read at the flops of the same outputs under its own taps; below the fewest
        taps measured, on the line through the two smallest; beyond the most (a grouped
        convolution of 128 taps over groups of 16 features has 2,048), that roof's rate, not
        the line: the rate stops growing so fast once the groups' features fill the vector
        lanes (on a 2-core CPU: 0.59 GFLOP/s at 9 taps, 1.3 at 49, 19 to 21 at 144 (3x3
        over groups of 16), 32 at 256, 34 at 1,024 and 49 at 2,048 (1-D, groups of 16)).
        Never above the dense convolution's rate at those flops. With one window measured,
        or taps not known, that roof's rate. The roof named is the nearest window's; None
        without a grouped-convolution roof."""
        first = self.compute_for(dtype, op=GROUPED_CONVOLUTION)
        if first is None:
            return None
        same = sorted((r for r in self.compute if r.op == GROUPED_CONVOLUTION
                       and r.dtype == first.dtype and r.precision == first.precision
                       and r.window > 0), key=lambda r: r.window)
        if taps <= 0 or not same:
            return first, first.rate_at(flops)

        def rate(r: ComputeRoof) -> float:
            return r.rate_at(flops * r.window / taps)

        nearest = min(same, key=lambda r: abs(math.log(r.window / taps)))
        windows = sorted({r.window for r in same})
        if len(windows) < 2 or taps in windows or taps > windows[-1]:
            dense = self.compute_for(dtype, op="convolution") or self.compute_for(dtype)
            own = rate(nearest)
            return nearest, min(own, dense.rate_at(flops)) if dense is not None else own
        above = next((w for w in windows if w > taps), windows[-1])
        below = max((w for w in windows if w < above), default=windows[0])
        if below == above:  # taps below every window: the line through the two smallest
            below, above = windows[0], windows[1]
        lo = next(r for r in same if r.window == below)
        hi = next(r for r in same if r.window == above)
        t = math.log(taps / lo.window) / math.log(hi.window / lo.window)
        read = math.exp((1 - t) * math.log(rate(lo)) + t * math.log(rate(hi)))
        dense = self.compute_for(dtype, op="convolution") or self.compute_for(dtype)
        return nearest, min(read, dense.rate_at(flops)) if dense is not None else read

    def line_convolution(self, dtype: str, filter_elements: int
                         ) -> tuple[ComputeRoof, float] | None:
        """The roof and rate of a dense 1-D convolution whose filter has ``filter_elements``
        (window x input features x output features): the 1-D convolution roof read at the
        flops its own kernel had with a filter of that size (2 x its positions x the
        filter), that is between the two feature counts measured around it (interpolated in
        log flops), the smallest's rate below them, the roof's beyond. On XLA:CPU such a
        convolution's rate follows its filter, not its length (a 2-core CPU: 78 GFLOP/s at
        16 features over a window of 3, 160 at 32, 180 to 210 at 64 to 256, strided or not).
        None without that roof or a filter size."""
        roof = self.compute_for(dtype, op=LINE_CONVOLUTION)
        if roof is None or filter_elements <= 0 or roof.positions <= 0:
            return None
        return roof, roof.rate_at(2.0 * roof.positions * filter_elements)

    def bandwidth_for(self, working_set: float | None = None,
                      written: float | None = None, *,
                      program: bool = False, passes: int = 1,
                      traffic: float | None = None) -> BandwidthRoof | None:
        """The roof of the innermost level whose range holds ``working_set``; with no working
        set (or none holding it), the outermost level (main memory), never a cache's just
        because it is faster. Within the level, the write-new roof (measured writing a fresh
        output once per call, by the output's size) read at the ``written`` fresh bytes when
        they are of a size the level holds, else the level's fastest other roof, each read at
        the working set's size where it lies between the last cache and main memory's window
        (:meth:`BandwidthRoof.rate_for`) at the larger of the working set and the program's
        ``traffic`` per call, where known (the sweep times one kernel called again and again:
        its data is in the cache when it comes back only if less than the cache's worth passed
        through it in between, which for a program is all its kernels' bytes), but not for a
        kernel that reads its input ``passes`` times, whose later passes find it gone from the
        cache (with
        ``program``, the fastest of the working-set sweep's where the level has one: what a
        program meets). A large fresh output of a size another level holds (at least
        :data:`FRESH_SHARE` of the bytes) is read at that level's write-new roof where that is
        slower than the working set's own level, never where it is faster. A fresh output
        smaller than any the write-new sweep told apart from its dispatch
        (:meth:`told_apart`) meets the level's other roofs."""
        if not self.bandwidth:
            return None
        order = self.levels()
        if self.dispatch_overlaps:
            return self._device_memory(order[-1], working_set, written)
        candidates: Sequence[BandwidthRoof] = ()
        if working_set is not None:
            candidates = [r for r in self.bandwidth if r.holds(working_set)]
        if not candidates:
            candidates = [r for r in self.bandwidth if r.level == order[-1]]
        inner = min(order.index(r.level) for r in candidates)
        level = [r for r in candidates if order.index(r.level) == inner]
        level = [r for r in level if r.unstable is None] or level  # plausible roofs first
        # Between the last cache and main memory's window: the sweep's rate at this size.
        if working_set is not None and (passes <= 1 or not self.spilled(working_set)):
            cycled = max(working_set, traffic or 0.0)
            level = [replace(r, value=r.rate_for(cycled)) if r.transition else r
                     for r in level]
        # A program streams into freshly allocated outputs, one call at a time: where the
        # level was measured that way, that is its roof; else the level's fastest.
        fresh = [r for r in level if r.name.endswith(FRESH)]
        if written is not None and written > 0:
            # Read at the size it writes: the allocator serves a large output with new pages
            # that each call faults in, at a fraction of the level's rate.
            told = self.told_apart(written)
            held = [r for r in fresh if r.holds(written)] if told else []
            borrowed = False
            if not held and told and working_set is not None \
                    and written >= FRESH_SHARE * working_set:
                # A fresh output of a size another level holds, a large part of the traffic
                # (a 16 MiB output of a kernel whose reads take it past the last cache):
                # what a fresh output of its size costs, not an in-place pass's rate.
                # Only a plausible one: a write-new roof of tiny outputs measures dispatch.
                held = [r for r in self.bandwidth if r.name.endswith(FRESH)
                        and r.holds(written) and r.unstable is None]
                borrowed = True
            fresh = [replace(r, value=r.rate_at(written)) for r in held]
            if borrowed:
                # Never faster than the working set's own level: a 4 MiB output written from
                # 8 MiB of reads is read from main memory whatever a cache-sized fresh output
                # alone costs (a layer norm's backward kernels so priced at the last-level
                # cache's write-new rate ran at main memory's).
                own = max(r.value for r in level)
                # Past the last cache this is the sweep's rate at the working set's size, as
                # measured in this run: how much of the shared cache the machine's other work
                # leaves. On a 2-core CPU with a 32 MiB last-level cache, 2 x of 16 MiB ran at
                # 73 to 125 GB/s (median 89) and 3 x + y over 16 MiB arrays at 51 to 140
                # (median 92) over seven runs of two days, where the transition read about
                # 100 to 137 and main memory's roof 60 to 74; an earlier day's 17 runs of
                # 3 x + y read a median 47. Main memory's roof past its window priced both at
                # 1.5 to 2.6 times their time, run after run.
                fresh = [r for r in fresh if r.value < own]
        else:
            fresh = []
        others = [r for r in level if not r.name.endswith(FRESH)] or level
        if program:
            # A program's arrays are allocated as the working-set sweep's are; the streaming
            # ceilings run on arrays given huge pages (fewer TLB misses), a best case programs
            # do not get: where the level has a sweep roof, that is the one a program meets.
            others = [r for r in others if not r.name.endswith(STREAM)] or others
        return max(fresh or others, key=lambda r: r.value)

    def told_apart(self, size: float) -> bool:
        """Whether a fresh output of ``size`` bytes is as large as the smallest whose write-new
        call the sweep told apart from its dispatch (the smallest size of a plausible
        write-new roof; any size without one). Under it the sweep's calls cost their dispatch
        alone: on the 2-core CPU this was built on, outputs of 64 and 128 KiB took 4.3 to
        4.9 µs a call against 4.8 to 6.2 µs of dispatch, in three runs, where 256 KiB took 9.2
        to 12 µs. The allocator hands such an output the buffer the last call freed, still in
        the cache, and a roof read from a larger size (3 x + y over 64 KiB arrays priced at
        256 KiB's rate and above: 1.3 to 1.4 times its time, run after run) charges it a cost
        no measurement showed."""
        sizes = [r.by_size[0][0] for r in self.bandwidth
                 if r.name.endswith(FRESH) and r.by_size and r.unstable is None]
        return not sizes or size >= min(sizes)

    def _main_sweep(self, kernel: str) -> BandwidthRoof | None:
        """The fastest plausible roof of the working-set sweep's ``kernel`` at main memory's
        level; None without one."""
        main = self.levels()[-1]
        roofs = [r for r in self.bandwidth
                 if r.level == main and r.name == f"{main} {kernel}" and r.unstable is None]
        return max(roofs, key=lambda r: r.value) if roofs else None

    def _device_memory(self, level: str, touched: float | None, written: float | None
                       ) -> BandwidthRoof:
        """An accelerator's memory roof (no cache the tool knows of, no page to fault in, no
        huge pages): a kernel that mostly reads (writes under :data:`READ_MOSTLY` of the
        bytes it touches: a reduction) at the read stream's roof (on a TPU v5e an HBM read ran
        at 755 GB/s where a copy ran at 657), any other at the fastest of the level's others."""
        roofs = [r for r in self.bandwidth if r.level == level]
        plausible = [r for r in roofs if r.unstable is None] or roofs
        reads = [r for r in plausible if r.name == f"{READ_STREAM}{STREAM}"]
        if reads and touched and written is not None and written <= READ_MOSTLY * touched:
            return reads[0]
        return max([r for r in plausible if r not in reads] or plausible, key=lambda r: r.value)

    def floor(self, name: str) -> Floor | None:
        return next((f for f in self.floors if f.name == name), None)

    def last_cache_bytes(self) -> float | None:
        """The last-level cache's capacity where a host's caches are known (where main
        memory's level starts); None on an accelerator or without a sweep past the caches."""
        if self.dispatch_overlaps or not self.bandwidth:
            return None
        main = self.levels()[-1]
        starts = [r.min_bytes for r in self.bandwidth if r.level == main and r.min_bytes]
        return float(min(starts)) if starts else None

    def past_the_cache(self, nbytes: float) -> bool:
        """Whether ``nbytes`` reach the last-level cache's capacity (:meth:`last_cache_bytes`):
        no cache holds them from one call to the next. False where the caches are not
        known."""
        cache = self.last_cache_bytes()
        return cache is not None and nbytes >= cache

    def spilled(self, nbytes: float) -> bool:
        """Whether a working set of ``nbytes`` is :meth:`past_the_cache` and this run's
        working-set sweep found it gone from the cache too: a shared last-level cache holds
        what the machine's other work leaves of it, and where the sweep's in-place rate at
        ``nbytes`` (its transition from the cache) is at least :data:`STILL_CACHED` times main
        memory's read-write roof, much of it is still there from one pass to the next (on a
        2-core CPU with a 32 MiB cache, the sweep read 137 GB/s at 32 MiB against 63 past 128
        MiB, and a softmax over 16 MiB ran in 1.0 to 1.2 ms where its passes priced in series
        at main memory's rate read 1.75). True past the capacity where the sweep has no
        transition."""
        if not self.past_the_cache(nbytes):
            return False
        main = self._main_sweep(READ_WRITE_KERNEL)
        if main is None or not main.transition:
            return True
        return main.rate_for(nbytes) < STILL_CACHED * main.value

    def cold_read(self) -> tuple[BandwidthRoof, float] | None:
        """Where a host's caches are known: main memory's read roof (the working-set sweep's
        reading kernel past the last-level cache, the rate of bytes no cache holds) and the
        last-level cache's capacity (where main memory's level starts); None on an
        accelerator, without a sweep past the caches or without a plausible read roof."""
        cache = self.last_cache_bytes()
        read = self._main_sweep(READ_KERNEL) if cache is not None else None
        return (read, cache) if read is not None and cache is not None else None

    @property
    def peak(self) -> float | None:
        roof = self.compute_for("float32")
        return roof.value if roof else None

    @property
    def highest_compute(self) -> float | None:
        """The highest compute roof of any dtype or operation: no kernel runs faster."""
        return max((c.value for c in self.compute), default=None)

    @property
    def memory_bandwidth(self) -> float | None:
        roof = self.bandwidth_for(None)
        return roof.value if roof else None

    def ridge(self, dtype: str | None = "float32") -> float | None:
        """The ridge (FLOP/byte) of the compute roof ``dtype`` runs under against main memory
        (:func:`roofline_report.roofline.ridge`); None without either roof."""
        compute, memory = self.compute_for(dtype), self.memory_bandwidth
        return None if compute is None or not memory else ridge(compute.value, memory)

    def roof_at(self, intensity: float, dtype: str | None = "float32") -> float | None:
        """The attainable rate at ``intensity`` under ``dtype``'s compute roof and main memory
        (:func:`roofline_report.roofline.attainable`); None without either roof."""
        compute, memory = self.compute_for(dtype), self.memory_bandwidth
        return None if compute is None or not memory else attainable(intensity, compute.value,
                                                                       memory)

    @property
    def dispatch(self) -> float | None:
        f = self.floor("dispatch")
        return f.seconds if f else None

    @property
    def dispatch_enqueued(self) -> float | None:
        """The cost per call when calls are enqueued (how workloads are timed); the blocking
        floor where that was not measured."""
        f = self.floor("dispatch enqueued")
        return f.seconds if f else self.dispatch

    @property
    def launch(self) -> float | None:
        f = self.floor("launch")
        return f.seconds if f else None

    @property
    def complete(self) -> bool:
        """Whether the set has both a compute and a bandwidth roof (a roofline can be drawn)."""
        return bool(self.compute) and bool(self.bandwidth)


def hypothetical(peak: float, bandwidth: float, source: str) -> RoofSet:
    """The assumed budgets: one compute roof and one bandwidth roof for every working set."""
    return RoofSet(
        label="assumed budgets",
        kind=Kind.HYPOTHETICAL,
        compute=(ComputeRoof("assumed compute budget", peak, None, Kind.HYPOTHETICAL, source),),
        bandwidth=(BandwidthRoof("assumed memory bandwidth", bandwidth, "memory",
                                 Kind.HYPOTHETICAL, source),),
    )


def measured_levels(ceilings: schema.Ceilings) -> list[levels_mod.Level]:
    """The memory levels of the ceilings' working-set sweep (the dispatch floor taken off the
    write-new calls); [] without a sweep."""
    d = ceilings.dispatch
    dispatch = positive(d.value) if d.available else None
    return levels_mod.find_levels(ceilings.working_set, ceilings.caches, ceilings.backend,
                                  dispatch)


def _generic_windows(entry: schema.ComputeCeiling, by_flops: Sequence[tuple[float, float]]
                     ) -> tuple[tuple[float, float], ...]:
    """(window elements, FLOP/s) of a generic convolution roof's sizes: each size n's kernel,
    the filter gradient of a transposed convolution onto n x n outputs from (n/2) x (n/2)
    inputs, slides a window of its input's (n/2)² elements; () for any other roof."""
    if entry.op != GENERIC_CONVOLUTION:
        return ()
    window = {float(s.flops): float((s.n // 2) ** 2) for s in entry.by_size if s.n}
    return tuple(sorted((window[f], rate) for f, rate in by_flops if f in window))


def measured(ceilings: schema.Ceilings,
             levels: Sequence[levels_mod.Level] | None = None) -> RoofSet:
    """This machine's measured roofs from the ceilings record.
    ``levels``: those of :func:`measured_levels`, when the caller already has them.

    Streaming kernels run on arrays larger than the last-level cache measure main memory: their
    roofs hold for working sets from that cache's size up (from 0 when the size is unknown).
    """
    backend = ceilings.backend
    level = backends.describe(backend).main_memory
    overlaps = backends.describe(backend).accelerator
    cache_bytes = ceilings.cache_bytes
    d = ceilings.dispatch
    pipelined = positive(d.enqueued) if d.available else None
    compute = []
    for e in ceilings.compute:
        value = positive(e.value) if e.available else None
        if value is None:
            continue
        by_flops = products_net_of_dispatch(e.by_size, pipelined, overlaps)
        compute.append(ComputeRoof(
            e.name, value, e.dtype or None,
            Kind.MEASURED, f"measured: {e.name}" + (f" ({e.reason})" if e.reason else ""),
            precision=e.precision, by_flops=by_flops, op=e.op, window=_window_of(e),
            positions=e.positions or 0, channels=e.channels or 0,
            by_window=_generic_windows(e, by_flops)))
    found = measured_levels(ceilings) if levels is None else levels
    bandwidth = [BandwidthRoof(f"{lv.name} {lv.kernel}", lv.value, lv.name, Kind.MEASURED,
                               f"measured: working-set sweep, {lv.rule}",
                               min_bytes=lv.min_bytes, max_bytes=lv.max_bytes,
                               unstable=lv.unstable,
                               by_size=tuple((float(b), v) for b, v in lv.by_size),
                               transition=tuple((float(b), v) for b, v in lv.transition))
                 for lv in found]
    # The streams on arrays past the last-level cache measure main memory: their roofs hold
    # where the sweep's main-memory level starts (else from the last-level cache's size).
    main_start = next((lv.min_bytes for lv in found if lv.name == level), cache_bytes)
    for b in ceilings.bandwidth:
        value = positive(b.value) if b.available else None
        if value is None:
            continue
        array_bytes = "?" if b.array_bytes is None else b.array_bytes
        bandwidth.append(BandwidthRoof(
            f"{b.name}{STREAM}", value, level, Kind.MEASURED,
            f"measured: {b.name} on {array_bytes} B", min_bytes=main_start))
    floors = []
    seconds = positive(d.value) if d.available else None
    if seconds is not None:
        floors.append(Floor("dispatch", seconds, Kind.MEASURED,
                            "measured: one tiny call, blocked after every call"))
    if pipelined is not None:
        slope, buffers = per_buffer(d.by_buffers)
        floors.append(Floor("dispatch enqueued", pipelined, Kind.MEASURED,
                            "measured: one tiny call among many enqueued, blocked once"
                            + (", and by the buffers a call passes" if slope else ""),
                            per_buffer=slope, buffers=buffers))
    measured_floors: tuple[tuple[schema.LaunchCeiling | schema.SplitLaunchCeiling
                                 | schema.PageFaultCeiling | None, str, str], ...] = (
        (ceilings.launch, *_LAUNCH_FLOOR), (ceilings.split_launch, *_SPLIT_LAUNCH_FLOOR),
        (ceilings.page_fault, *_PAGE_FAULT_FLOOR))
    for entry, name, provenance in measured_floors:
        seconds = positive(entry.value) if entry is not None and entry.available else None
        if seconds is not None:
            floors.append(Floor(name, seconds, Kind.MEASURED, provenance))
    split = ceilings.split_launch
    enqueued = split.enqueued if split is not None else None
    if split is not None and split.available and enqueued is not None and enqueued >= 0 \
            and math.isfinite(enqueued):
        floors.append(Floor(SPLIT_LAUNCH_ENQUEUED, float(enqueued), Kind.MEASURED,
                            "measured: as the split launch, with the calls enqueued"))
    rates = []
    for r in ceilings.rates:
        value = positive(r.value) if r.available else None
        if value is None or r.roof is False:  # a variant beside a pattern's roof
            continue
        # A computed operand's points are the kernel's own time already: the call less the
        # same call without it, dispatch and all.
        by_size = tuple(sorted((float(p.elements), float(p.value)) for p in r.by_size)) \
            if r.computed else net_of_dispatch(r.by_size, pipelined, overlaps)
        if r.by_size and not by_size:
            continue  # every size was mostly dispatch: no rate of the kernel itself
        taken = ", the call without the kernel taken off" if r.computed else \
            "" if overlaps else ", the dispatch floor taken off"
        rates.append(RateRoof(r.name, r.op, r.dtype,
                              max((rate for _, rate in by_size), default=value), Kind.MEASURED,
                              f"measured: {r.name}" + (", by size" + taken if by_size else ""),
                              by_size=by_size, row=r.row or 0, threads=r.threads,
                              table=r.table or 0, computed=r.computed,
                              from_memory=r.from_memory))
    return RoofSet("this machine", Kind.MEASURED, tuple(compute), tuple(bandwidth),
                   tuple(floors), tuple(rates), dispatch_overlaps=overlaps,
                   units_overlap=backends.describe(backend).name == "tpu")


def _window_of(entry: schema.ComputeCeiling) -> int:
    """A grouped-convolution ceiling's taps: its window elements (``window``: its side, to the
    power of its ``rank``, 2 where not said: an image's; 1: a sequence's) times its input
    features per group (``group``, 1 where not said: depthwise); 0 where the entry does not
    give its window."""
    if entry.window is None:
        return 0
    return int(entry.window ** (entry.rank or 2)) * (entry.group or 1)


_PRESET_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "tf32": "float32",
                  "fp8": "float8", "int8": "int8"}


def spec_sheet(preset: Preset) -> RoofSet:
    """A chip's published roofs: a compute roof per dtype, HBM bandwidth; and, where the preset
    carries one, its kernel launch floor (``launch``, an assumption: kind hypothetical, the
    preset's note its provenance). A preset without ``launch`` gives a set without floors."""
    compute = []
    for peak in sorted(preset.peaks, key=lambda p: p.dtype):
        value = positive(peak.value)
        if value is None:
            continue
        key = peak.dtype
        dtype = _PRESET_DTYPES.get(key, key)
        # jax runs float32 matmuls as TF32 on NVIDIA GPUs by default; full float32 is the
        # "highest" precision there.
        precision = {"tf32": "default", "fp32": "highest"}.get(key, "default")
        compute.append(ComputeRoof(f"{preset.name} {key}", value, dtype, Kind.SPEC_SHEET,
                                   peak.note or "spec sheet", precision=precision))
    bandwidth = []
    hbm = positive(preset.hbm_bandwidth)
    if hbm is not None:
        bandwidth.append(BandwidthRoof(f"{preset.name} HBM", hbm, "HBM", Kind.SPEC_SHEET,
                                       "spec sheet"))
    floors = []
    seconds = positive(preset.launch)
    if seconds is not None:
        floors.append(Floor("launch", seconds, Kind.HYPOTHETICAL,
                            preset.launch_note or "assumed launch floor"))
    # Every preset is an accelerator's (its calls' dispatch overlaps its work); a TPU's
    # (Google's) matrix, vector and transcendental units work side by side.
    return RoofSet(preset.name, Kind.SPEC_SHEET, tuple(compute), tuple(bandwidth),
                   tuple(floors), dispatch_overlaps=True,
                   units_overlap=preset.vendor == "Google")
