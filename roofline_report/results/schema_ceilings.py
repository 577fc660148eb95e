"""The machine's measured ceilings in the results document
(:mod:`roofline_report.results.schema`): compute by dtype and size, streaming bandwidth, the
dispatch and launch floors, the working-set sweep and the operation and pattern rates.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Discriminator, Field, Tag

from roofline_report.pattern_names import PatternName
from roofline_report.results.schema_base import (
    AtLeastOne,
    Count,
    NonNeg,
    Pos,
    PosInt,
    Record,
    Timing,
    available_tag,
    maybe,
)
from roofline_report.results.schema_run import MEASURED_AT_PATTERN


class MatmulSize(Record):
    """A rough rate of one size (a square matmul's n, a convolution's image side), from the
    sweep that picks the size; or of ``batch`` square products of side n timed in one call
    (sides below the sweep's). ``flops``: per call."""

    n: PosInt
    flops: PosInt
    value: Pos
    batch: PosInt = 1


class LoadReading(Record):
    """The machine's load over one span (a round of the ceilings' measurement, a program's
    timing): its wall time, the CPU
    time other processes took over it (all cores' busy time less this process's own; None
    where the system does not tell), the cores that busy time is counted over, and the 1-minute
    load average at the span's start and end (where the system gives one). See
    :mod:`roofline_report.analysis.measuring_load`."""

    wall_s: NonNeg
    others_cpu_s: NonNeg | None = None
    cores: PosInt | None = None
    loadavg: list[NonNeg] = []


class ComputeCeiling(Record):
    name: str
    op: Literal["matmul", "convolution", "convolution-padded", "convolution-weight-gradient",
                "convolution-generic", "convolution-1d", "grouped-convolution"] = "matmul"
    dtype: str
    precision: str = "default"
    available: bool
    reason: str = ""
    kind: Literal["measured"] = "measured"
    unit: Literal["FLOP/s"] = "FLOP/s"
    value: Pos | None = None
    flops_per_call: Count | None = None
    size: Count | None = None
    timing: Timing | None = None
    by_size: list[MatmulSize] = []
    rounds: list[Pos | None] = []  # each round's rate at ``size`` (None: failed); value: best
    round_loads: list[LoadReading | None] = []  # the load during each round (None: unknown)
    repeated: Count = 0  # rounds taken again because other work held the cores
    window: PosInt | None = None  # a grouped convolution's window side (3: 3x3)
    group: PosInt | None = None  # its input features per group (None: 1, depthwise)
    rank: PosInt | None = None  # its window's dimensions (None: 2, an image's; 1: a sequence's)
    # a 1-D convolution roof's output positions a call (batch x length): each size's flops
    # are 2 x positions x its filter's elements, so a kernel's filter reads the roof's rate
    positions: PosInt | None = None
    # an image convolution roof's output features: each size's flops are 2 x its patch
    # matrix's elements x these, so a kernel's patch matrix reads the roof's rate
    channels: PosInt | None = None


class BandwidthCeiling(Record):
    name: str
    available: bool
    reason: str = ""
    kind: Literal["measured"] = "measured"
    unit: Literal["B/s"] = "B/s"
    value: Pos | None = None
    array_bytes: Count | None = None
    bytes_per_call: Count | None = None
    huge_pages: bool | None = None
    timing: Timing | None = None
    rounds: list[Pos | None] = []  # each round's rate (None: that round failed); value: best
    round_loads: list[LoadReading | None] = []  # the load during each round (None: unknown)
    repeated: Count = 0  # rounds taken again because other work held the cores


class TimeFloor(Record):
    """A floor in seconds measured on this machine (what a call or a kernel costs at the
    least), or the reason it could not be measured."""

    available: bool
    reason: str = ""
    kind: Literal["measured"] = "measured"
    unit: Literal["s"] = "s"
    value: Pos | None = None


class BufferDispatch(Record):
    """The enqueued dispatch of a call passing ``buffers`` arguments and results."""

    buffers: AtLeastOne
    enqueued: Pos
    timing: Timing | None = None


class DispatchCeiling(TimeFloor):
    timing: Timing | None = None
    # Per call when calls are enqueued and blocked once (as workloads are timed).
    enqueued: Pos | None = None
    timing_enqueued: Timing | None = None
    enqueued_reason: str = ""
    # The enqueued dispatch by the buffers a call passes (ascending); [] where not measured.
    by_buffers: list[BufferDispatch] = []
    by_buffers_reason: str = ""


class CacheLevel(Record):
    """One level of the CPU's data caches, as the operating system describes it."""

    level: AtLeastOne
    type: str
    size: PosInt


class SweepBandwidth(Record):
    """One working-set size of the sweep: bytes moved per call and the fastest rate."""

    bytes: PosInt
    reps: AtLeastOne
    bytes_per_call: PosInt
    available: bool
    reason: str = ""
    value: Pos | None = None
    timing: Timing | None = None
    remeasured: Count = 0  # times measured again for being implausible beside read-write
    implausible: str = ""  # why it is implausible beside read-write, after any re-measuring


#: The kernels of the working-set sweep: read and write in place, only read, only write.
SweepKernelName = Literal["read-write", "read", "write-new"]


class SweepKernel(Record):
    name: SweepKernelName
    points: list[SweepBandwidth]


class WorkingSetPlan(Record):
    """The sweep's sizes (bytes, ascending), bytes moved per call, sampling, kernels."""

    sizes: list[PosInt]
    bytes_per_call: PosInt
    samples: AtLeastOne
    min_sample_s: Pos
    kernels: list[SweepKernelName]


class WorkingSetSweep(Record):
    """Bandwidth against working-set size (the levels are found at render time)."""

    available: Literal[True] = True
    plan: WorkingSetPlan
    kernels: list[SweepKernel]


class RateSize(Record):
    """One size of a rate measured by size: operations per call (elements; a loop dot's
    flops), bytes read and written, the fastest time per call (dispatch included; where the
    rate's operand is computed, the kernel's own time: :attr:`RateCeiling.computed`) and
    operations ÷ that time; for a kernel pattern, the operand shape and the kernel of the
    compiled program that has the pattern."""

    elements: PosInt
    bytes: PosInt
    seconds: Pos
    value: Pos
    shape: list[Count] = []
    kernel: str = ""
    # The same call without the kernel (the same buffers in and out, a kernel that moves
    # almost nothing), fastest time per call, where it was timed: the call less it is the
    # kernel's own time (a small row reduction's, which is mostly dispatch).
    alone: Pos | None = None


class RateCeiling(Record):
    """Operations per second of a transcendental function, a dtype conversion, elementwise
    arithmetic, or (by size) a row reduction or a kernel pattern that runs below the streaming
    roofs (a transpose, a reduction along a non-minor axis, a gather, a scatter, a dot the
    compiler emits as a loop: ``op`` is the pattern's name as the kernel inventory gives it).
    ``variant`` says which kernel measured a pattern; ``roof`` is False for a variant recorded
    beside the pattern's roof (shown, not used by the prediction)."""

    name: str
    # An operation's rate, a kernel pattern's, or the on-chip streaming of a TPU's loop.
    op: Literal["exp", "tanh", "log", "sqrt", "rsqrt", "sine", "convert", "multiply-add",
                "log1p", "expm1", "power", "tan", "atan2", "reduce", "on-chip"] | PatternName
    dtype: str
    unit: Literal["1/s", "elements/s", "FLOP/s", "comparisons/s", "runs/s", "bytes/s",
                  "tiles/s"] = "1/s"
    kind: Literal["measured"] = "measured"
    available: bool
    reason: str = ""
    value: Pos | None = None
    elements: PosInt
    reps: AtLeastOne
    ops_per_call: PosInt
    timing: Timing | None = None
    by_size: list[RateSize] = []
    variant: str = ""
    roof: bool = True
    # A top-k's (or a reduce-window-lane's) row length: one roof per row length measured; a
    # reduce-window's arrays reduced together: one roof per count of arrays.
    row: PosInt | None = None
    # A gather's fixed table, in bytes: one roof per table size (None: a table as large as
    # the gather's output).
    table: PosInt | None = None
    # The worker threads its kernel ran on (XLA:CPU's split of the kernel, at most the
    # cores); None where not recorded (an accelerator, or ceilings measured before).
    threads: AtLeastOne | None = None
    # Its kernel's operand computed by a kernel before it in the same call: each point's
    # seconds are the call's less the same call without the kernel (so without its dispatch
    # too); ``timing`` is the whole call's at the best size.
    computed: bool = False
    # Each call's operand read from main memory (the calls take operands past the caches in
    # turn): a CPU's transposing copy as a program whose data outgrow the caches runs it.
    from_memory: bool = False


class LaunchCeiling(TimeFloor):
    """The time one more kernel adds inside a compiled program (the dispatch floor apart)."""

    kernels: list[Count] = []  # kernels of the short and the long program
    timing: Timing | None = None  # the long program
    timing_short: Timing | None = None
    # The chain's steps kept apart by optimization barriers (a compiler that fused the plain
    # chain into one kernel: XLA's GPU backend).
    barriers: bool = False
    # "difference": (long - short) / (kernels apart), a call's dispatch in both; "long": the
    # long program's time per kernel, on an accelerator whose dispatch overlaps the device's
    # work (the short program times the host, not the device).
    method: Literal["difference", "long"] = "difference"


class SplitLaunchCeiling(TimeFloor):
    """What splitting a kernel across worker threads adds to it (XLA:CPU): the same
    elementwise kernel at the fewest ``rows`` the compiler splits (into ``parts``) less one row
    fewer, which it does not split, each call blocked on."""

    rows: list[Count] = []  # the unsplit and the split kernel's rows
    parts: AtLeastOne = 1
    timing: Timing | None = None  # the split kernel
    timing_unsplit: Timing | None = None
    # The same with the calls enqueued, as programs are timed (0: below the noise); None in
    # files that did not measure it.
    enqueued: NonNeg | None = None
    enqueued_reason: str = ""
    timing_enqueued: Timing | None = None
    timing_unsplit_enqueued: Timing | None = None


class PageFaultCeiling(TimeFloor):
    """Seconds per page on a fresh output's first write (CPU): a kernel writing a fresh
    ``bytes`` output each call less the same kernel writing in place, over the minor page
    faults counted per fresh call."""

    page_bytes: PosInt | None = None
    bytes: PosInt
    faults_per_call: NonNeg | None = None
    timing: Timing | None = None  # the fresh output's calls
    timing_in_place: Timing | None = None


class CeilingsOrigin(Record):
    """Where a run's ceilings came from: measured in the run (``cached`` False) or reused from
    the ceilings cache, when they were measured (UTC, as ``generator.measured_at``), the digest
    of the cache key they were saved or found under, and notes on the cache (a damaged file
    ignored, a folder that could not be written)."""

    cached: bool
    measured_at: Annotated[str, Field(pattern=MEASURED_AT_PATTERN)]
    key: str
    notes: list[str] = []


class Ceilings(Record):
    available: Literal[True] = True
    backend: str
    device_kind: str
    cache_bytes: Count | None
    quick: bool
    compute: list[ComputeCeiling]
    bandwidth: list[BandwidthCeiling]
    dispatch: DispatchCeiling
    caches: list[CacheLevel] = []
    working_set: maybe(WorkingSetSweep) | None = None  # type: ignore[valid-type]
    rates: list[RateCeiling] = []
    launch: LaunchCeiling | None = None
    split_launch: SplitLaunchCeiling | None = None
    page_fault: PageFaultCeiling | None = None
    origin: CeilingsOrigin | None = None  # None: measured in the run (files before the cache)
    conditions: LoadReading | None = None  # the load over the whole measurement (None: not kept)


class MemoryCheck(Record):
    """One memory roof's sweep point timed again once the programs were timed (``roof`` as the
    analysis names it, e.g. "L3 write-new"; the sweep ``kernel`` at the working set ``bytes``):
    ``value`` B/s against the sweep's own ``ceiling_value`` at that point."""

    available: Literal[True] = True
    roof: str
    kernel: str
    bytes: PosInt
    ceiling_value: Pos
    value: Pos
    timing: Timing


class MemoryCheckFailed(Record):
    """A memory roof's point that could not be timed again, with the reason."""

    available: Literal[False]
    roof: str
    kernel: str
    bytes: PosInt
    reason: str


class DispatchCheck(Record):
    """The enqueued dispatch of one call (the floor a program's predicted time starts from)
    timed again once the programs were timed, by the ceiling's own rule (its fastest sample):
    ``seconds`` a call against the ceiling's ``ceiling_seconds``."""

    available: Literal[True] = True
    ceiling_seconds: Pos
    seconds: Pos
    timing: Timing


class SpeedCheck(Record):
    """The machine's speed checked once the programs were timed: the float32 matmul ceiling's
    own size (``size``, a square product) timed again by the same rule (its fastest sample),
    ``value`` FLOP/s against the ceiling's ``ceiling_value``. A machine slower at the end of
    a run than when its ceilings were measured (ceilings from a faster hour, or from the
    cache) makes every prediction from them read short by about as much. ``memory``: each
    memory roof's point checked the same way (None: files written before memory was
    checked)."""

    available: Literal[True] = True
    probe: str
    size: PosInt
    ceiling_value: Pos
    value: Pos
    timing: Timing
    memory: list[Annotated[Annotated[MemoryCheck, Tag("yes")]
                           | Annotated[MemoryCheckFailed, Tag("no")],
                           Discriminator(available_tag)]] | None = None
    # The dispatch floor checked the same way (None: not checked, or files written before).
    dispatch: DispatchCheck | None = None

