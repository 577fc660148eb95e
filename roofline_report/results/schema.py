"""The results document, version 3: observations only, as closed typed records (no jax).

results.json is what a run observed and the inputs it ran with: the options, the assumed budgets
it was given, the environment, the compiled programs' facts (operations, our HLO count, XLA's cost
and memory analyses), NumPy checks, timing samples, per-kernel samples from profiler traces,
ceiling measurements, the lab's raw measurements and the sharded programs' collectives. Nothing
derived from them is stored: statistics (medians, quartiles, the judgement "unstable"),
rooflines, predictions, reconciliations, verdicts, exercises and every sentence are computed when
the run is rendered (``roofline_report.analysis``), so a saved run re-renders under other budgets
and a fix to the model reaches old runs.

Version 3 differs from version 2 in what is kept of a measurement: timings keep their per-call
samples (``per_call_s``) and no statistics; per-kernel times keep one sample per traced call of
each kernel's busy time (the events' own durations) and of its launch-to-completion time; every
record is closed (an unknown key is refused with its key path). A version-2 file is converted on
reading (:mod:`roofline_report.results.convert`).

The classes are pydantic models: pydantic checks every field of a nested document in one pass and
names the key path of the first problem, which is what a hand-edited or truncated file needs, and
a hand-written validator of this many records would be longer than the records themselves.
Numbers are checked strictly (no "1" for 1, no true for 1); times and byte counts cannot be
negative; a record that was not available is ``{"available": false, "reason": ...}``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

SCHEMA_VERSION = 3

NonNeg = Annotated[float, Field(ge=0)]
Pos = Annotated[float, Field(gt=0)]
Count = Annotated[int, Field(ge=0)]


class Record(BaseModel):
    """A closed record: unknown keys are refused, so a misspelt key is an error."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class OpenRecord(BaseModel):
    """A record whose known keys are checked and whose further keys are kept as they are
    (facts read from the compiled program, which grow with the HLO reader)."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)


class Unavailable(Record):
    """A measurement that could not be made, with the reason (shown in the report)."""

    available: Literal[False]
    reason: str
    ran: bool | None = None  # for checks: the workload ran but could not be compared


def _available(value: Any) -> str:
    if isinstance(value, dict):
        return "yes" if value.get("available", True) is not False else "no"
    return "yes" if getattr(value, "available", True) is not False else "no"


def maybe(model: type[BaseModel]) -> Any:
    """``model | Unavailable``, told apart by the ``available`` key (errors name one branch)."""
    return Annotated[
        Annotated[model, Tag("yes")] | Annotated[Unavailable, Tag("no")],
        Discriminator(_available),
    ]


# ----------------------------------------------------------------------------- timing


class Timing(Record):
    """A timed executable: the per-call time of each sample (a sample enqueues ``inner_reps``
    calls and blocks once), in the order taken, and how it was timed. Statistics are derived
    (:class:`roofline_report.analysis.stats.Stats`)."""

    available: Literal[True] = True
    inner_reps: Annotated[int, Field(ge=1)]
    method: str
    min_sample_s: NonNeg
    per_call_s: Annotated[list[Pos], Field(min_length=1)]
    resolution_s: NonNeg


# ----------------------------------------------------------------------------- run inputs

MEASURED_AT_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"


class Generator(Record):
    name: str
    version: str
    # When the measurement was made (UTC, ISO 8601, e.g. 2025-01-31T12:00:00Z); rendering shows
    # it and never reads the clock. None in runs saved before it was recorded.
    measured_at: Annotated[str, Field(pattern=MEASURED_AT_PATTERN)] | None = None


class Options(Record):
    """What the run was asked to measure."""

    quick: bool
    ceilings: bool
    sweeps: bool
    sharding: bool
    experiments: bool
    builtin: bool
    preset: str | None  # a chip preset asked for by name (else matched to the device)
    config: str | None  # the config file's name, when one was given
    origin: Literal["command line", "python"] = "command line"  # who asked for the run
    teaching: bool = True  # the seed's teaching sections were asked for (a report about them)


class Assumptions(Record):
    """The hypothetical budgets the run was given (render can override them)."""

    peak: Pos
    bandwidth: Pos
    interconnect: Pos
    source: str


class Environment(Record):
    """The software and device a run measured on (no host or user names)."""

    backend: str
    device_kind: str
    device_count: Count
    python: str
    jax: str
    jaxlib: str
    numpy: str
    platform: str
    cpu_model: str | None = None
    cpu_count: Count | None = None
    compute_capability: str | None = None
    device_memory_bytes: Count | None = None
    hosts: Count | None = None  # hosts of a profile read from a multi-host trace


# ----------------------------------------------------------------------------- ceilings


class MatmulSize(Record):
    """A rough rate of one size (a square matmul's n, a convolution's image side), from the
    sweep that picks the size."""

    n: Annotated[int, Field(gt=0)]
    flops: Annotated[int, Field(gt=0)]
    value: Pos


class ComputeCeiling(Record):
    name: str
    op: Literal["matmul", "convolution"] = "matmul"
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


class DispatchCeiling(Record):
    available: bool
    reason: str = ""
    kind: Literal["measured"] = "measured"
    unit: Literal["s"] = "s"
    value: Pos | None = None
    timing: Timing | None = None
    # Per call when calls are enqueued and blocked once (as workloads are timed).
    enqueued: Pos | None = None
    timing_enqueued: Timing | None = None
    enqueued_reason: str = ""


class CacheLevel(Record):
    """One level of the CPU's data caches, as the operating system describes it."""

    level: Annotated[int, Field(ge=1)]
    type: str
    size: Annotated[int, Field(gt=0)]


class SweepBandwidth(Record):
    """One working-set size of the sweep: bytes moved per call and the fastest rate."""

    bytes: Annotated[int, Field(gt=0)]
    reps: Annotated[int, Field(ge=1)]
    bytes_per_call: Annotated[int, Field(gt=0)]
    available: bool
    reason: str = ""
    value: Pos | None = None
    timing: Timing | None = None
    remeasured: Count = 0  # times measured again for being implausible beside read-write
    implausible: str = ""  # why it is implausible beside read-write, after any re-measuring


class SweepKernel(Record):
    name: Literal["read-write", "read", "write-new"]
    points: list[SweepBandwidth]


class WorkingSetPlan(Record):
    """The sweep's sizes (bytes, ascending), bytes moved per call, sampling, kernels."""

    sizes: list[Annotated[int, Field(gt=0)]]
    bytes_per_call: Annotated[int, Field(gt=0)]
    samples: Annotated[int, Field(ge=1)]
    min_sample_s: Pos
    kernels: list[Literal["read-write", "read", "write-new"]]


class WorkingSetSweep(Record):
    """Bandwidth against working-set size (the levels are found at render time)."""

    available: Literal[True] = True
    plan: WorkingSetPlan
    kernels: list[SweepKernel]


class RateSize(Record):
    """One size of a rate measured by size: operations per call (elements; a loop dot's
    flops), bytes read and written, the fastest time per call (dispatch included) and
    operations ÷ that time; for a kernel pattern, the operand shape and the kernel of the
    compiled program that has the pattern."""

    elements: Annotated[int, Field(gt=0)]
    bytes: Annotated[int, Field(gt=0)]
    seconds: Pos
    value: Pos
    shape: list[Count] = []
    kernel: str = ""


class RateCeiling(Record):
    """Operations per second of a transcendental function, a dtype conversion, elementwise
    arithmetic, or (by size) a row reduction or a kernel pattern that runs below the streaming
    roofs (a transpose, a reduction along a non-minor axis, a gather, a scatter, a dot the
    compiler emits as a loop: ``op`` is the pattern's name as the kernel inventory gives it).
    ``variant`` says which kernel measured a pattern; ``roof`` is False for a variant recorded
    beside the pattern's roof (shown, not used by the prediction)."""

    name: str
    op: Literal["exp", "tanh", "log", "convert", "multiply-add", "reduce", "transpose",
                "loop-dot", "strided-reduction", "gather", "scatter"]
    dtype: str
    unit: Literal["1/s", "elements/s", "FLOP/s"] = "1/s"
    kind: Literal["measured"] = "measured"
    available: bool
    reason: str = ""
    value: Pos | None = None
    elements: Annotated[int, Field(gt=0)]
    reps: Annotated[int, Field(ge=1)]
    ops_per_call: Annotated[int, Field(gt=0)]
    timing: Timing | None = None
    by_size: list[RateSize] = []
    variant: str = ""
    roof: bool = True


class LaunchCeiling(Record):
    """The time one more kernel adds inside a compiled program (the dispatch floor apart)."""

    available: bool
    reason: str = ""
    kind: Literal["measured"] = "measured"
    unit: Literal["s"] = "s"
    value: Pos | None = None
    kernels: list[Count] = []  # kernels of the short and the long program
    timing: Timing | None = None  # the long program
    timing_short: Timing | None = None


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
    origin: CeilingsOrigin | None = None  # None: measured in the run (files before the cache)


# ----------------------------------------------------------------------------- workloads


class Analytic(Record):
    """A workload's hand model: work and the minimum traffic (every input read, output written
    once)."""

    available: Literal[True] = True
    flops: Count
    minimum_bytes: Annotated[int, Field(gt=0)]
    transcendentals: Count = 0


class Arg(Record):
    shape: list[Count]
    dtype: str


class Lowering(Record):
    available: Literal[True] = True
    reason: str = ""
    lower_s: NonNeg
    compile_s: NonNeg
    ops: dict[str, Count]
    required_ops: list[str]
    stablehlo_text: str
    compiled_text: str


class LoweringFailed(Record):
    available: Literal[False]
    reason: str
    lower_s: NonNeg | None = None
    compile_s: NonNeg | None = None


class Check(Record):
    """The result compared with a NumPy reference at a tolerance."""

    available: Literal[True] = True
    passed: bool
    shape: list[Count]
    expected_shape: list[Count]
    max_abs_error: NonNeg | None
    max_rel_error: NonNeg | None
    rtol: NonNeg
    atol: NonNeg
    note: str = ""
    leaf: str | None = None  # a pytree result: the path of the worst leaf (the one shown)
    leaves: Count | None = None  # a pytree result: how many leaves were compared


class XlaCost(Record):
    """XLA's cost analysis as the backend returned it (keys as XLA names them; -1 kept)."""

    available: bool
    reason: str = ""
    raw: dict[str, float]
    values: dict[str, float]


class MemoryStats(Record):
    available: bool
    reason: str = ""
    values: dict[str, Count]


class ArgumentLeaf(Record):
    """One array in an argument's pytree: its path (``jax.tree_util.keystr``) and size."""

    path: str
    shape: list[Count]
    dtype: str
    bytes: Count


class ArgumentNode(Record):
    """One argument (positional, keyword or the result) as a pytree of arrays."""

    name: str
    keyword: bool = False
    static: bool = False  # held as a Python value, not traced
    type: str
    leaves: list[ArgumentLeaf]
    leaf_count: Count
    bytes: Count
    held_leaves: Count = 0  # leaves held as Python values (functions, numbers), not traced
    omitted: Count = 0  # leaves counted but not listed (very large trees)
    value: str = ""  # a static argument's value, shortened


class ArgumentTree(Record):
    """A program's arguments and result as pytrees, with counts and total bytes."""

    arguments: list[ArgumentNode]
    leaf_count: Count
    bytes: Count
    result: ArgumentNode | None = None


class KernelRecord(Record):
    """One kernel of the compiled program (:func:`roofline_report.hlo.kernels.kernel_inventory`):
    per launch flops, transcendentals and the bytes it touches, launches per call (``trips``).

    Fields added after the first files were written have defaults, so those files still load:
    the boundary bytes (operand and result buffers whole; None where not recorded: equal to the
    touched bytes then), the rule that made the touched bytes smaller, the kernel's pattern, and
    where it sits (a conditional's branch, whether the totals charge it, whether every loop
    around it has a known trip count)."""

    name: str
    opcode: str
    category: Literal["matmul", "elementwise", "reduction", "data movement", "collective",
                      "other"]
    kind: str | None
    fusion_kind: str | None
    computation: str
    loop: str | None
    trips: Annotated[int, Field(ge=1)]
    flops: Count
    transcendentals: Count
    bytes_read: Count
    bytes_written: Count
    read_by_dtype: dict[str, Count]
    written_by_dtype: dict[str, Count]
    flops_by_op: dict[str, Count]
    transcendentals_by_op: dict[str, Count]
    ops: dict[str, Count]
    uncosted: list[str]
    op_name: str | None
    source: str | None  # path relative to the user's project, with the line
    in_place: bool = False  # writes a buffer it was given (donated, or updated in place)
    trips_known: bool = True  # False when a loop around it has no known trip count
    branch: str | None = None  # "conditional.3 branch 1 of 2" inside a conditional
    charged: bool = True  # False for a branch the program totals do not charge
    boundary_bytes_read: Count | None = None  # operand buffers whole, per launch
    boundary_bytes_written: Count | None = None  # result buffers whole, per launch
    bytes_rule: str | None = None  # why the touched bytes are fewer than the boundary's
    pattern: Literal["transpose", "loop-dot", "strided-reduction", "gather", "scatter"] | None \
        = None
    pattern_size: Count = 0  # per launch: the elements the pattern moves (loop-dot: flops)
    pattern_detail: str | None = None  # e.g. "axes (1, 0) of f32[512,1024]"


class KernelInventory(Record):
    """Every kernel the runtime launches, with sums (loop kernels x their launches)."""

    available: Literal[True] = True
    module: str
    count: Count
    launches: Count
    flops: Count
    transcendentals: Count
    bytes_read: Count
    bytes_written: Count
    boundary_bytes_read: Count | None = None  # the kernels' operand buffers whole
    boundary_bytes_written: Count | None = None  # the kernels' result buffers whole
    flops_by_op: dict[str, Count]
    transcendentals_by_op: dict[str, Count]
    by_category: dict[str, Count]
    kernels: list[KernelRecord]
    notes: list[str]


class KernelTime(Record):
    """One kernel's samples from a profiler trace, one per traced call of the program:
    ``launches`` its launches in that call, ``busy_s`` the sum of its events' own durations
    (the time the kernel itself ran; None in runs converted from version 2, which did not keep
    it), ``span_s`` the sum from each launch to its completion (an asynchronous thunk's ``end:``
    event: includes waiting for busy worker threads). Nested events count their self time."""

    name: str
    launches: list[NonNeg]
    busy_s: list[NonNeg] | None = None
    span_s: list[NonNeg]

    @model_validator(mode="after")
    def _one_per_call(self) -> KernelTime:
        lengths = {len(self.launches), len(self.span_s)}
        if self.busy_s is not None:
            lengths.add(len(self.busy_s))
        if len(lengths) != 1:
            raise ValueError("launches, busy_s and span_s must hold one sample per traced call")
        return self


class TraceCall(Record):
    """One traced call of the program (seconds): its wall time from the runtime's execute event
    to the end of its last kernel, the time during which at least one kernel ran, and the rest
    by cause: dispatch (execute to the first kernel), loop control (the self time of control
    flow), gaps between kernels."""

    program_s: NonNeg
    busy_s: NonNeg
    dispatch_s: NonNeg
    loop_control_s: NonNeg
    gaps_s: NonNeg


class KernelTiming(Record):
    """Per-kernel samples read from a profiler trace of repeated calls."""

    available: Literal[True] = True
    source: Literal["host", "device"]
    calls: list[TraceCall]
    # Traced calls each sample averages: 1, unless the events carry no run id (then the whole
    # trace is one sample of this many calls).
    calls_per_sample: Annotated[int, Field(ge=1)] = 1
    kernels: list[KernelTime]
    unmatched: list[str]
    notes: list[str]
    # Calls of the same program timed just before the trace, untraced and traced (seconds),
    # when the run measured them: the trace's overhead is their ratio.
    untraced_s: list[Pos] = []
    traced_s: list[Pos] = []


class JaxRoofline(Record):
    """``jax.experimental.roofline`` of the workload, as it reports it."""

    available: Literal[True] = True
    flops: NonNeg
    unfused_flops: NonNeg
    hbm_bytes: NonNeg
    unfused_hbm_bytes: NonNeg
    peak_hbm_bytes: NonNeg | None = None


class FusionCounts(Record):
    count: Count
    by_kind: dict[str, Count]
    by_backend_kind: dict[str, Count]


class CustomCall(Record):
    """A library call of the optimized HLO (cuBLAS, oneDNN, ...)."""

    name: str
    target: str
    shape: str
    bytes: Count | None = None
    op_name: str | None = None
    source: str | None = None


class WhileLoop(Record):
    """A while loop of the optimized HLO, with the identity that pairs it with the StableHLO's."""

    name: str
    known_trip_count: Count | None
    condition: str | None
    body: str | None
    op_name: str | None
    source_file: str | None
    source_line: Count | None
    source_column: Count | None


class Compiled(Record):
    """Facts of the optimized HLO (:func:`roofline_report.hlo.compiled.inspect_compiled`)."""

    entry: str | None
    fusions: FusionCounts
    custom_calls: list[CustomCall]
    collectives: list[dict[str, Any]]
    while_loops: list[WhileLoop]
    kernels: Count
    kernels_static: Count
    converts: Count
    opcodes: dict[str, Count]
    notes: list[str]


class CountedLoop(Record):
    """A loop of the StableHLO as our count found it, with its trip count and how it was
    paired with the compiled program's while loop."""

    index: Count
    trip_count: Count | None
    source: str
    body_flops: NonNeg
    body_transcendentals: NonNeg
    op_name: str | None
    location: str | None
    compiled_while: str | None
    matched_by: str | None


class HloCount(Record):
    """Our own count of the lowered program (:mod:`roofline_report.hlo.stablehlo_count`)."""

    available: Literal[True] = True
    entry: str | None
    ops: dict[str, Count]
    ops_static: dict[str, Count]
    flops: NonNeg
    transcendentals: NonNeg
    flops_by_op: dict[str, NonNeg]
    transcendentals_by_op: dict[str, NonNeg]
    argument_bytes: Count
    result_bytes: Count
    minimum_bytes: Count
    bytes_by_dtype: dict[str, Count]
    loops: list[CountedLoop]
    unknown_trip_counts: Count
    custom_calls: list[str]
    notes: list[str]


# ------------------------------------------------------------------ traces read elsewhere


class LaneTiming(Record):
    """One device of a traced host: its per-kernel samples of the program, as a measured run's
    ``kernel_timing`` records them (statistics are derived when rendering)."""

    device: str  # "GPU:0", "TPU:0", "CPU:0" (an emulated or real device of the host)
    timing: KernelTiming


class TracedProgram(Record):
    """Where a workload read from a profiler trace comes from (``roofline-report profile``):
    the host's trace file, the device whose events give the per-kernel times, whether times
    are per step (step markers) or per call, each step marker's duration, every device of the
    host side by side, and whether the trace held the program's HLO (else its work is not
    counted)."""

    host: str
    file: str
    device: str
    program_id: int | None
    per: Literal["step", "call"]
    steps_s: list[NonNeg] = []
    devices: list[LaneTiming]
    hlo: bool
    notes: list[str] = []


class TraceModule(Record):
    """A program whose kernels ran in the trace: kernel events and their summed time over the
    whole trace (every host and device), and whether the trace holds its HLO."""

    name: str
    program_ids: list[Count]
    events: Count
    seconds: NonNeg
    hlo: bool


class TraceHost(Record):
    """One host's trace file: its size, the devices with kernel events, the profiler's
    versions and the errors and warnings it recorded."""

    name: str
    file: str
    bytes: Count
    devices: list[str]
    jax: str | None = None
    jaxlib: str | None = None
    errors: list[str] = []
    warnings: list[str] = []


class TraceSource(Record):
    """A results document read from a profiler trace captured anywhere (``roofline-report
    profile LOGDIR``): the run read, its hosts, the program chosen and how, every program seen,
    the ceilings file given (its name), and what the reader noted (fields of a newer profiler
    it skipped, hosts without the program)."""

    run: str
    runs: list[str]
    hosts: list[TraceHost]
    module: str
    module_choice: Literal["most kernel time", "by name"]
    modules: list[TraceModule]
    ceilings_file: str | None = None
    unknown_fields: dict[str, list[Count]] = {}
    notes: list[str] = []


class Workload(Record):
    name: str
    title: str
    description: str
    dtype: str
    dims: dict[str, int]
    user: bool
    analytic: maybe(Analytic)  # type: ignore[valid-type]
    args: list[Arg] = []
    lowering: Annotated[
        Annotated[Lowering, Tag("yes")] | Annotated[LoweringFailed, Tag("no")],
        Discriminator(_available),
    ]
    check: maybe(Check) | None = None  # type: ignore[valid-type]
    xla: XlaCost | None = None
    memory: MemoryStats | None = None
    compiled: Compiled | None = None  # facts of the optimized HLO
    hlo_count: maybe(HloCount) | None = None  # type: ignore[valid-type]
    timing: maybe(Timing) | None = None  # type: ignore[valid-type]
    arguments: ArgumentTree | None = None  # a user's program: arguments and result as trees
    kernels: maybe(KernelInventory) | None = None  # type: ignore[valid-type]
    kernel_timing: maybe(KernelTiming) | None = None  # type: ignore[valid-type]
    jax_roofline: maybe(JaxRoofline) | None = None  # type: ignore[valid-type]
    trace: TracedProgram | None = None  # read from a profiler trace (roofline-report profile)


class SweepPoint(Record):
    dims: dict[str, int]
    analytic: maybe(Analytic) | None = None  # type: ignore[valid-type]
    timing: maybe(Timing) | None = None  # type: ignore[valid-type]
    check: maybe(Check) | None = None  # type: ignore[valid-type]
    hlo_count: maybe(HloCount) | None = None  # type: ignore[valid-type]
    compiled: Compiled | None = None
    xla: XlaCost | None = None
    kernels: maybe(KernelInventory) | None = None  # type: ignore[valid-type]


class Sweep(Record):
    name: str
    title: str
    dtype: str
    parameters: list[str]
    points: list[SweepPoint]


# ----------------------------------------------------------------------------- the lab


Inventory = maybe(KernelInventory)
MaybeTiming = maybe(Timing)


class DoubledTraffic(Record):
    """sum(2x) against sum(w x): the same flops over one and two streamed arrays."""

    available: Literal[True] = True
    elements: Annotated[int, Field(gt=0)]
    itemsize: Annotated[int, Field(gt=0)]
    one_array: Timing
    two_arrays: Timing
    programs: dict[Literal["one_array", "two_arrays"], Inventory]  # type: ignore[valid-type]


class Fusion(Record):
    """tanh(a @ b) fused, against the same with an optimization barrier between its parts."""

    available: Literal[True] = True
    m: Annotated[int, Field(gt=0)]
    k: Annotated[int, Field(gt=0)]
    n: Annotated[int, Field(gt=0)]
    itemsize: Annotated[int, Field(gt=0)]
    kernels: dict[Literal["fused", "unfused"], Count | None]
    fused: Timing
    unfused: Timing
    programs: dict[Literal["fused", "unfused"], Inventory]  # type: ignore[valid-type]


class Bf16Pair(Record):
    """One program in float32 and in bfloat16 (an in-place scale, or a square matmul)."""

    available: Literal[True] = True
    elements: Annotated[int, Field(gt=0)] | None = None  # the in-place scale's size
    size: Annotated[int, Field(gt=0)] | None = None  # the matmul's n
    converts: dict[str, Count | None]
    programs: dict[str, Inventory]  # type: ignore[valid-type]
    dtypes: dict[str, str]
    float32: Timing
    bfloat16: Timing


class Sweep1D(Record):
    """Programs timed at growing sizes (batch columns, or elements), aligned lists."""

    available: Literal[True] = True
    itemsize: Annotated[int, Field(gt=0)]
    d: Annotated[int, Field(gt=0)] | None = None  # batching: W is d x d
    batches: list[Annotated[int, Field(gt=0)]] | None = None
    sizes: list[Annotated[int, Field(gt=0)]] | None = None
    times: list[Timing]
    programs: list[Inventory]  # type: ignore[valid-type]


class Scan(Record):
    """A scan of ``steps`` tanh(c @ x) steps against one step."""

    available: Literal[True] = True
    size: Annotated[int, Field(gt=0)]
    steps: Annotated[int, Field(gt=0)]
    xla_flops: dict[Literal["body", "scan"], float | None]
    our_flops: dict[Literal["body", "scan"], Count | None]
    kernels: dict[Literal["body", "scan"], Count | None]
    programs: dict[Literal["body", "scan"], Inventory]  # type: ignore[valid-type]
    body: Timing
    scan: Timing


def _lab(model: type[BaseModel]) -> Any:
    return maybe(model) | None


class LabExperiments(Record):
    """Each experiment's raw measurements, or why it could not run."""

    doubled_traffic: _lab(DoubledTraffic) = None  # type: ignore[valid-type]
    fusion: _lab(Fusion) = None  # type: ignore[valid-type]
    bf16_memory: _lab(Bf16Pair) = None  # type: ignore[valid-type]
    bf16_compute: _lab(Bf16Pair) = None  # type: ignore[valid-type]
    batching: _lab(Sweep1D) = None  # type: ignore[valid-type]
    dispatch: _lab(Sweep1D) = None  # type: ignore[valid-type]
    scan: _lab(Scan) = None  # type: ignore[valid-type]


class LabPlan(Record):
    """The sizes and sampling the lab ran with."""

    samples: Annotated[int, Field(ge=1)]
    min_sample_s: Pos
    stream_elements: Annotated[int, Field(gt=0)]
    fusion_shape: list[Annotated[int, Field(gt=0)]]
    bf16_elements: Annotated[int, Field(gt=0)]
    bf16_matmul: Annotated[int, Field(gt=0)]
    batch_d: Annotated[int, Field(gt=0)]
    batches: list[Annotated[int, Field(gt=0)]]
    dispatch_sizes: list[Annotated[int, Field(gt=0)]]
    scan_size: Annotated[int, Field(gt=0)]
    scan_steps: Annotated[int, Field(gt=0)]


class Lab(Record):
    available: Literal[True] = True
    backend: str
    device_kind: str
    quick: bool
    cache_bytes: Count | None
    plan: LabPlan
    experiments: LabExperiments


# ----------------------------------------------------------------------------- sharding


class ShardedWorkload(OpenRecord):
    name: str
    description: str = ""
    sharding: str = ""
    collectives: list[dict[str, Any]] = []
    per_device: dict[str, Any] = {}
    xla_per_device: dict[str, Any] = {}
    check: dict[str, Any] = {}
    measured_seconds: NonNeg | None = None
    error: str | None = None


class Sharding(OpenRecord):
    available: Literal[True] = True
    devices: Annotated[int, Field(ge=1)]
    emulated: bool
    platform: str = ""
    quick: bool = False
    workloads: list[ShardedWorkload]


class Skip(Record):
    what: str
    reason: str


# ----------------------------------------------------------------------------- the document


class Results(Record):
    """The whole results.json."""

    schema_version: Literal[3]
    generator: Generator
    options: Options
    assumptions: Assumptions
    environment: Environment
    ceilings: maybe(Ceilings)  # type: ignore[valid-type]
    workloads: list[Workload]
    sweeps: list[Sweep]
    lab: maybe(Lab)  # type: ignore[valid-type]
    sharding: maybe(Sharding)  # type: ignore[valid-type]
    skipped: list[Skip]
    trace: TraceSource | None = None  # read from a profiler trace (roofline-report profile)

    @model_validator(mode="after")
    def _unique_names(self) -> Results:
        seen: dict[str, int] = {}
        for i, w in enumerate(self.workloads):
            if w.name in seen:
                raise ValueError(f"workloads[{i}].name {w.name!r} is also the name of "
                                 f"workloads[{seen[w.name]}]; workload names are unique in a run")
            seen[w.name] = i
        return self
