"""Memory levels from a working-set sweep (no jax): one bandwidth roof per level.

The rule, stated so that a reader can check it against the sweep's figure:

* **When the cache sizes are known** (CPU, from the operating system): level k holds the working
  sets larger than level k−1's capacity and at most half its own capacity (the upper half is a
  transition: part of the data already spill to the next level); main memory holds those of at
  least four times the last-level cache (beyond that, caches cannot keep a useful share); a
  working set between the last cache's capacity and main memory's window is priced at the
  sweep's rate at its size, or at the bytes its program moves per call where those are more
  (:attr:`Level.transition`: on the 2-core development machine, whose operating system
  reports an 8 MiB L3, a read-write pass ran at 56 GB/s over 8 MiB, 40 over 16 MiB and 26 to
  28 past 32 MiB, and a 12 MiB axpy ran at 1.8 times main memory's roof). A
  level's bandwidth is the fastest rate measured inside its window, as every ceiling here reports
  the best rate (noise only slows a kernel). A level with no point in its window is not found.
  The write-new kernel's points are kept by size (:attr:`Level.by_size`): a fresh output's cost
  depends on how the allocator serves its size, so a prediction reads that roof at the size a
  kernel writes.
  The window is the level's :attr:`Level.window` (what the report's table shows); a prediction
  applies the roof more widely, up to the level's capacity (:attr:`Level.min_bytes`,
  :attr:`Level.max_bytes`), since a working set in a transition still gets much of its data
  from that level.
* **Otherwise** (accelerators): rates are walked from the smallest working set up; a new level
  starts where two consecutive points fall below :data:`DROP` times the best rate of the current
  level. Each level with at least two points is kept, from its first size to the next level's
  first size; the last is main memory (HBM on an accelerator, DRAM on a CPU). Its window is its
  plateau: from its first size (the smallest size for the first level) to its last (no bound for
  the last level). Main memory's roof is the fastest rate among its working sets of at least a
  quarter of the largest measured (:data:`MAIN_MEMORY_TOP`): a smaller one may still sit in an
  on-chip cache whose size is not known, whose rate the drops do not separate from the small
  sizes' launch-bound rates.

Each kernel of the sweep gives its own levels; a level's roof is the fastest kernel's.

**Plausibility.** Reading alone moves half the bytes of a read-write pass over the same data, so a
level's read roof cannot honestly be far below its read-write roof: one under
:data:`READ_SHARE` of it measures something else (the adds of the reduction that reads, or a burst
of load). A write-new roof under :data:`WRITE_NEW_SHARE` of the level's read-write roof is mostly
dispatch or noise. The sweep re-measures such points while measuring (a bounded number of times,
:func:`implausible` is its test too); a level roof that stays implausible is kept, marked
``unstable`` with the reason, and a prediction prefers the level's plausible roofs
(:meth:`roofline_report.analysis.roofs.RoofSet.bandwidth_for`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from roofline_report import backends
from roofline_report.results import schema
from roofline_report.text import decimal, percent_text
from roofline_report.units import format_si

DROP = 0.6  # a point under 60% of the level's best rate leaves the level
RULE = ("A cache level holds the working sets larger than the capacity of the level below it "
        "and at most half its own capacity (the upper half is a transition); main memory those "
        "of at least four times the last-level cache; a kernel whose working set lies between "
        "the two is priced at the sweep's rate at the larger of its working set and the bytes "
        "its program moves per call. Without cache sizes, a level ends where "
        "two consecutive points fall under 60% of its best rate, and main memory's roof is "
        "taken from its working sets of at least a quarter of the largest measured. A level's "
        "roof is the fastest rate on the working sets it holds, the table's range; predictions "
        "use it up to the level's capacity, except that a kernel writing a fresh output is "
        "priced at the write-new rate measured at its own size (past the allocator's "
        "threshold for new pages, each call faults its output in).")
MAIN_MEMORY_MULTIPLE = 4  # working sets of at least this many last-level caches are DRAM's
# Without cache sizes, main memory's roof comes from the working sets of at least this fraction
# of the largest measured (1/4: the sweep's last two octaves); smaller ones may still sit in a
# cache whose size is not known (an H200's read-write sweep: 5.12 TB/s at 32 MiB, in its L2,
# above the chip's 4.8 TB/s of HBM; 3.78 to 3.96 TB/s from 64 to 256 MiB).
MAIN_MEMORY_TOP = 4
_FRACTION = {4: "quarter"}
REFERENCE = "read-write"  # the kernel a level's other roofs are checked against
READ_SHARE = 0.25  # a read roof under a quarter of the read-write roof is implausible
WRITE_NEW_SHARE = 1 / 20  # a write-new roof 20 times below the read-write roof is too


@dataclass(frozen=True, slots=True)
class Level:
    """A memory level found in the sweep: its bandwidth and the working sets it holds for."""

    name: str
    kernel: str
    value: float  # B/s
    min_bytes: int | None
    max_bytes: int | None
    points: int
    rule: str
    # Why this roof is implausible beside the level's read-write roof, after whatever
    # re-measuring the sweep did; None for a plausible roof.
    unstable: str | None = None
    # The working sets the rule gives the level, which its roof is read from (see window).
    above: int | None = None  # more than this many bytes (the capacity of the level below)
    at_least: int | None = None  # at least this many bytes
    up_to: int | None = None  # at most this many bytes
    # (working set, B/s) of each point where the roof applies, ascending: kept for the
    # write-new kernel, whose rate depends on how the allocator serves an output of that size
    # more than on the level (a prediction reads it at the output's size); () for the others.
    by_size: tuple[tuple[int, float], ...] = ()
    # Main memory's, with cache sizes known, of the kernels that stream over their working set
    # in place (read-write, read): (working set, B/s) of the sweep's points from the last
    # cache's capacity to the first working set of main memory's window, ascending. A working
    # set between those is neither in the cache nor past it; a prediction reads its rate
    # there (:meth:`roofline_report.analysis.roofs.BandwidthRoof.rate_for`). () elsewhere.
    transition: tuple[tuple[int, float], ...] = ()

    @property
    def window(self) -> tuple[int | None, int | None, int | None]:
        """The working sets the rule gives the level, as (more than, at least, at most) bytes,
        None where the rule sets no such bound: ``(None, None, 16384)`` for an L1 of 32 KiB,
        ``(32768, None, 262144)`` for an L2 of 512 KiB above it, ``(None, 134217728, None)``
        for main memory past a 32 MiB last-level cache. ``min_bytes``/``max_bytes`` are wider:
        where a prediction applies the roof."""
        return self.above, self.at_least, self.up_to

    def in_window(self, size: int) -> bool:
        """Whether a working set of ``size`` bytes is one the level's rule gives it
        (:attr:`window`)."""
        above, at_least, up_to = self.window
        return ((above is None or size > above) and (at_least is None or size >= at_least)
                and (up_to is None or size <= up_to))


def implausible(kernel: str, value: float, reference: float | None) -> str | None:
    """Why ``value`` (B/s) of sweep kernel ``kernel`` cannot be believed beside ``reference``,
    the read-write rate of the same working set or level; None when it can (or there is
    nothing to check it against). Pure: the sweep's re-measuring and :func:`find_levels` both
    use it."""
    if not reference or reference <= 0 or value <= 0:
        return None
    ratio = value / reference
    if kernel == "read" and ratio < READ_SHARE:
        return (f"read at {format_si(value, 'B/s')} is {percent_text(ratio)} of read-write's "
                f"{format_si(reference, 'B/s')}: reading alone moves half the bytes of a "
                f"read-write pass, so under {percent_text(READ_SHARE)} it measures something "
                "else")
    if kernel == "write-new" and ratio < WRITE_NEW_SHARE:
        return (f"write-new at {format_si(value, 'B/s')} is {decimal(reference / value, 3)} "
                f"times below read-write's {format_si(reference, 'B/s')} (more than "
                f"{decimal(1 / WRITE_NEW_SHARE, 3)} times): its calls are mostly dispatch or "
                "noise")
    return None


DISPATCH_MARGIN = 1.5  # a write-new call under 1.5 dispatches is mostly dispatch: not used


def point_rate(kernel: str, point: schema.SweepBandwidth, dispatch: float | None
               ) -> float | None:
    """The B/s a level finder reads from one sweep point of ``kernel``; None for a point that
    gives none. A ``write-new`` point is one call with its dispatch: the dispatch floor is
    taken off its time, and a point whose call is mostly dispatch (under
    :data:`DISPATCH_MARGIN` dispatches, or without a dispatch floor) gives none."""
    value = point.value
    if not (point.available and value is not None and value > 0):
        return None
    if kernel != "write-new":
        return float(value)
    seconds = float(point.bytes_per_call) / float(value)
    if not dispatch or seconds < DISPATCH_MARGIN * dispatch:
        return None
    return float(point.bytes_per_call) / (seconds - dispatch)


def _points(kernel: schema.SweepKernel, dispatch: float | None) -> list[tuple[int, float]]:
    """(working set, B/s) of a kernel's points that give a rate (:func:`point_rate`)."""
    rated = ((p.bytes, point_rate(kernel.name, p, dispatch)) for p in kernel.points)
    return sorted((b, v) for b, v in rated if v is not None)


def _by_caches(points: list[tuple[int, float]], caches: Sequence[schema.CacheLevel],
               kernel: str, main: str) -> list[Level]:
    levels = []
    lower = 0
    for cache in caches:
        size = cache.size
        inside = [v for b, v in points if lower < b <= size // 2]
        if inside:
            levels.append(Level(f"L{cache.level}", kernel, max(inside), lower or None, size,
                                len(inside), f"working sets in ({lower} B, {size // 2} B]",
                                above=lower or None, up_to=size // 2,
                                by_size=_sizes(points, kernel, lower, size)))
        lower = size
    if caches:
        start = MAIN_MEMORY_MULTIPLE * caches[-1].size
        beyond = [(b, v) for b, v in points if b >= start]
        if beyond:
            # A fresh output's cost depends on how the allocator serves its size (mapping new
            # pages past a threshold), so that roof holds only from where it was measured.
            low = beyond[0][0] if kernel == "write-new" else lower
            between = () if kernel == "write-new" else tuple(
                (b, v) for b, v in points if lower <= b <= start)
            levels.append(Level(main, kernel, max(v for _, v in beyond), low, None,
                                len(beyond), f"working sets of at least {start} B",
                                at_least=start, by_size=_sizes(points, kernel, low, None),
                                transition=between if len(between) >= 2 else ()))
    return levels


def _sizes(points: list[tuple[int, float]], kernel: str, low: int, high: int | None
           ) -> tuple[tuple[int, float], ...]:
    """The write-new points a level's roof applies to (sizes in [low, high)); () for the
    other kernels. A write-new point's size is its array's, input and output alike, and a
    fresh output's cost changes inside a level: past the allocator's threshold for mapping new
    pages, each call faults its output's pages in (on the 2-core development machine, 44.5 GB/s
    writing a 16 MiB output and 7.5 GB/s a 32 MiB one, both in its 300 MiB L3)."""
    if kernel != "write-new":
        return ()
    return tuple((b, v) for b, v in points if b >= low and (high is None or b < high))


def _by_drops(points: list[tuple[int, float]], kernel: str, main: str) -> list[Level]:
    groups: list[list[tuple[int, float]]] = []
    current: list[tuple[int, float]] = []
    for i, (size, value) in enumerate(points):
        best = max((v for _, v in current), default=0.0)
        nxt = points[i + 1][1] if i + 1 < len(points) else value
        if current and value < DROP * best and nxt < DROP * best:
            groups.append(current)
            current = []
        current.append((size, value))
    if current:
        groups.append(current)
    kept = [g for g in groups if len(g) >= 2]
    levels = []
    for i, g in enumerate(kept):
        last = i == len(kept) - 1
        upper = kept[i + 1][0][0] if not last else None
        name = main if last else f"level {i + 1}"
        rated = g
        how = f"a plateau of {len(g)} sizes (drops under {percent_text(DROP)})"
        if last:  # main memory: its roof from the largest working sets alone
            rated = [(b, v) for b, v in g if b * MAIN_MEMORY_TOP >= g[-1][0]]
            if len(rated) < len(g):
                how += (f", its roof from the {len(rated)} of at least a "
                        f"{_FRACTION[MAIN_MEMORY_TOP]} of the largest")
        levels.append(Level(name, kernel, max(v for _, v in rated), g[0][0] if i else None,
                            upper, len(g), how, at_least=g[0][0] if i else None,
                            up_to=None if last else g[-1][0]))
    return levels


def find_levels(sweep: schema.WorkingSetSweep | schema.Unavailable | None,
                caches: Sequence[schema.CacheLevel],
                backend: str, dispatch: float | None = None) -> list[Level]:
    """The levels of every kernel of ``sweep`` (the ``working_set`` record), innermost first,
    implausible roofs marked ``unstable`` (see the module docstring); [] when the sweep is
    missing or unavailable. ``dispatch``: the per-call floor, taken off the calls of the
    ``write-new`` kernel (without it, that kernel gives no level)."""
    if not isinstance(sweep, schema.WorkingSetSweep):
        return []
    main = backends.describe(backend).main_memory
    levels: list[Level] = []
    retried: dict[str, list[tuple[int, int]]] = {}
    for kernel in sweep.kernels:
        points = _points(kernel, dispatch)
        name = kernel.name
        found = (_by_caches(points, caches, name, main) if caches
                 else _by_drops(points, name, main))
        levels.extend(found)
        retried[name] = [(p.bytes, p.remeasured) for p in kernel.points if p.remeasured > 0]
    levels = _mark(levels, retried)
    return sorted(levels, key=lambda lv: (lv.min_bytes or 0, -lv.value))


def _mark(levels: list[Level], retried: Mapping[str, Sequence[tuple[int, int]]]
          ) -> list[Level]:
    """Each level's read and write-new roofs checked against its read-write roof
    (:func:`implausible`); an implausible one is marked ``unstable`` with the reason and how
    many times the sweep re-measured its points (``retried``: (working set, times) of the
    re-measured points, by kernel)."""
    reference = {lv.name: lv.value for lv in levels if lv.kernel == REFERENCE}
    out = []
    for lv in levels:
        why = None if lv.kernel == REFERENCE else implausible(lv.kernel, lv.value,
                                                              reference.get(lv.name))
        low, high = lv.min_bytes or 0, lv.max_bytes or math.inf
        times = max((t for b, t in retried.get(lv.kernel, ()) if low <= b <= high), default=0)
        if why and times:
            why += f"; still so after {times} re-measurement{'s' if times > 1 else ''}"
        out.append(replace(lv, unstable=why) if why else lv)
    return out
