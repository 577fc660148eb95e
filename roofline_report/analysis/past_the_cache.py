"""What a CPU kernel pays when its data come from main memory rather than the caches (no jax).

Two rules of the per-kernel model (:mod:`roofline_report.analysis.predict`) for data past the
last-level cache, both on a host whose caches were measured:

* :func:`cold_arguments`: a kernel of a program whose data exceed the last-level cache reads
  its arguments from main memory, whatever level its own working set was priced at;
* :func:`passes_in_series`: a kernel that reads its input in several passes, its bytes at
  least the last-level cache's capacity, runs its terms one after another.
"""

from __future__ import annotations

from typing import Protocol

from roofline_report.analysis.roofs import BandwidthRoof, RoofSet

__all__ = ["COLD", "IN_SERIES", "Launch", "cold_arguments", "passes_in_series"]


class Launch(Protocol):
    """What these rules read of one launch's facts
    (:class:`roofline_report.analysis.predict.Facts`)."""

    @property
    def bytes(self) -> float: ...  # read and written
    @property
    def written(self) -> float | None: ...  # written to fresh outputs, where known
    @property
    def arguments(self) -> float: ...  # read from the program's arguments
    @property
    def passes(self) -> int: ...  # times it reads its input


COLD = "arguments from main memory"  # the detail of the terms of cold arguments

IN_SERIES = ("{passes} passes over data no cache holds: each streams its input in again, and "
             "its arithmetic, reductions and traffic are charged one after another")


def passes_in_series(f: Launch, roofs: RoofSet) -> bool:
    """Whether a launch's terms add up rather than overlap: a kernel that reads its input in
    several passes (:func:`~roofline_report.analysis.predict.read_passes`: a softmax's
    maximum, its sum of exponentials, its division) whose bytes are at least the last-level
    cache's capacity and which this run's working-set sweep found gone from the cache
    (:meth:`RoofSet.spilled`), on a host whose caches were measured
    (:meth:`RoofSet.last_cache_bytes`; an accelerator's kernels are not known to do so): each
    pass finds its input gone, and the cores run each pass's loads and arithmetic in turn. On
    a 2-core CPU a softmax fused into one kernel over [4096, 1024] float32 took 1.8 to 2.3 ms
    where its exponentials alone were priced at 1.1 ms and its traffic at 0.57 ms, a layer
    norm 1.0 to 1.1 ms against 0.57 ms of traffic; over [1024, 1024], their data in the
    cache, their kernels took no more than their largest terms. Where the sweep found the
    data still cached the passes overlap, each reading the input again
    (:func:`~roofline_report.analysis.predict._touched`)."""
    return f.passes > 1 and roofs.spilled(f.bytes)


def cold_arguments(f: Launch, roofs: RoofSet, traffic: float | None, level: str,
                   footprint: float | None) -> tuple[float, BandwidthRoof] | None:
    """(seconds, roof) a launch spends more reading its arguments from main memory than the
    level its working set was priced at allows, in a program whose data (``footprint``: its
    arguments and results, :func:`program_footprint`) exceed the last-level cache: between
    one call's read of an argument and the next call's, all of it passed through the caches,
    so no cache holds the argument (a key-value cache transposed once a step, a weight read
    once a step). Its arguments' bytes at main memory's read roof less the same bytes at the
    level's rate; None where the program's data fit the cache or are not known, the caches
    are not known, the kernel reads no argument, or its working set was priced at main memory
    already or is itself past the last cache (it streams from main memory, as
    :meth:`~roofline_report.analysis.roofs.RoofSet.bandwidth_for` prices it: ``3 x + y``
    over 16 MiB arrays, its 32 MiB of arguments at the read roof, read 34 GB/s where it ran
    at a median 47 to 92 on different days). On a 2-core CPU the transposing copy of an 8 MiB
    cache took 390 µs while its source stayed in the cache and 610 µs when it came from main
    memory each time, ``x + 1`` of it 296 and 600 µs."""
    if f.arguments <= 0 or footprint is None:
        return None
    cold = roofs.cold_read()
    if cold is None:
        return None
    read, cache = cold
    if footprint <= cache or level == read.level or read.value <= 0 \
            or roofs.past_the_cache(f.bytes):
        return None
    at_level = roofs.bandwidth_for(f.bytes, f.written, program=True, passes=f.passes,
                                   traffic=traffic)
    hot = f.arguments / at_level.value if at_level is not None and at_level.value > 0 else 0.0
    extra = f.arguments / read.value - hot
    return (extra, read) if extra > 0 else None
