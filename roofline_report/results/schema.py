"""The results document, version 2: observations only, as typed classes (no jax).

results.json is what a run observed and the inputs it ran with: the options, the assumed budgets
it was given, the environment, the compiled programs' facts (operations, our HLO count, XLA's cost
and memory analyses), NumPy checks, timing samples and their statistics, ceiling measurements, the
lab's raw measurements and the sharded programs' collectives. Nothing derived from them is stored:
rooflines, predictions, reconciliations, verdicts, exercises and every sentence are computed at
render time (``roofline_report.analysis``), so a saved run re-renders under other budgets and a fix
to the model reaches old runs.

The classes are pydantic models: pydantic checks every field of a nested document in one pass and
names the key path of the first problem, which is what a hand-edited or truncated file needs, and
a hand-written validator of this many records would be longer than the records themselves.
Numbers are checked strictly (no "1" for 1, no true for 1); times and byte counts cannot be
negative; a record that was not available is ``{"available": false, "reason": ...}``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

SCHEMA_VERSION = 2

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


class Stats(Record):
    """Per-call statistics of timing samples (seconds)."""

    samples: list[NonNeg]
    n: Count
    min: NonNeg
    max: NonNeg
    mean: NonNeg
    median: NonNeg
    q1: NonNeg
    q3: NonNeg
    iqr: NonNeg
    outliers: Count
    spread: NonNeg
    unstable: bool

    @model_validator(mode="after")
    def _ordered(self) -> Stats:
        if not self.min <= self.median <= self.max:
            raise ValueError("min <= median <= max does not hold")
        if self.n != len(self.samples):
            raise ValueError(f"n is {self.n} but there are {len(self.samples)} samples")
        return self


class Timing(Record):
    """A timed executable: samples of enqueued calls, per-call statistics, how it was timed."""

    available: Literal[True] = True
    inner_reps: Annotated[int, Field(ge=1)]
    method: str
    min_sample_s: NonNeg
    per_call: Stats
    resolution_s: NonNeg
    samples: Count


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


class Environment(OpenRecord):
    backend: str
    device_kind: str
    device_count: Count
    python: str
    jax: str
    jaxlib: str
    numpy: str
    platform: str


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


class SweepKernel(Record):
    name: Literal["read-write", "read", "write-new"]
    points: list[SweepBandwidth]


class WorkingSetSweep(Record):
    """Bandwidth against working-set size (the levels are found at render time)."""

    available: Literal[True] = True
    plan: dict[str, Any]
    kernels: list[SweepKernel]


class RateSize(Record):
    """One size of a rate measured by size: elements per call, bytes, the fastest time per
    call (dispatch included) and elements ÷ that time."""

    elements: Annotated[int, Field(gt=0)]
    bytes: Annotated[int, Field(gt=0)]
    seconds: Pos
    value: Pos


class RateCeiling(Record):
    """Operations per second of a transcendental function, a dtype conversion, elementwise
    arithmetic, or (by size) a row reduction."""

    name: str
    op: Literal["exp", "tanh", "log", "convert", "multiply-add", "reduce"]
    dtype: str
    unit: Literal["1/s"] = "1/s"
    kind: Literal["measured"] = "measured"
    available: bool
    reason: str = ""
    value: Pos | None = None
    elements: Annotated[int, Field(gt=0)]
    reps: Annotated[int, Field(ge=1)]
    ops_per_call: Annotated[int, Field(gt=0)]
    timing: Timing | None = None
    by_size: list[RateSize] = []


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
    per launch flops, transcendentals and boundary bytes, launches per call (``trips``)."""

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
    in_place: bool = False  # writes a donated argument's buffer, not a fresh output


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
    flops_by_op: dict[str, Count]
    transcendentals_by_op: dict[str, Count]
    by_category: dict[str, Count]
    kernels: list[KernelRecord]
    notes: list[str]


class KernelTime(Record):
    """One kernel's time per call of the program, from the profiler trace (medians over calls;
    q1/q3 the spread; ``samples_s`` one per traced call)."""

    name: str
    launches: NonNeg
    total_s: NonNeg
    per_launch_s: NonNeg
    q1_s: NonNeg
    q3_s: NonNeg
    samples_s: list[NonNeg]


class TraceRemainder(Record):
    """The program's time per call in which no kernel runs, by cause (seconds, medians)."""

    dispatch_s: NonNeg
    loop_control_s: NonNeg
    gaps_s: NonNeg


class KernelTiming(Record):
    """Per-kernel times read from a profiler trace of repeated calls."""

    available: Literal[True] = True
    source: Literal["host", "device"]
    calls: Annotated[int, Field(ge=1)]
    launches_per_call: NonNeg
    program_s: NonNeg
    kernel_sum_s: NonNeg
    busy_s: NonNeg
    coverage: Annotated[float, Field(ge=0, le=1)]
    coverage_per_call: list[NonNeg]
    remainder: TraceRemainder
    overhead: NonNeg | None
    kernels: list[KernelTime]
    unmatched: list[str]
    notes: list[str]


class JaxRoofline(Record):
    """``jax.experimental.roofline`` of the workload, as it reports it."""

    available: Literal[True] = True
    flops: NonNeg
    unfused_flops: NonNeg
    hbm_bytes: NonNeg
    unfused_hbm_bytes: NonNeg
    peak_hbm_bytes: NonNeg | None = None


# ------------------------------------------------------------------ traces read elsewhere


class LaneTiming(Record):
    """One device of a traced host: the program's time per step (or call) there, medians over
    the steps, and each collective kernel's time (from the trace's events)."""

    device: str  # "GPU:0", "TPU:0", "CPU:0" (an emulated or real device of the host)
    calls: Annotated[int, Field(ge=1)]  # steps or calls timed
    program_s: NonNeg
    kernel_sum_s: NonNeg
    busy_s: NonNeg
    collectives: dict[str, NonNeg] = {}  # collective kernel -> seconds per step or call


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
    compiled: dict[str, Any] | None = None  # facts of the optimized HLO
    hlo_count: dict[str, Any] | None = None  # our own count (or {"available": false, ...})
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
    hlo_count: dict[str, Any] | None = None
    compiled: dict[str, Any] | None = None
    xla: XlaCost | None = None
    kernels: maybe(KernelInventory) | None = None  # type: ignore[valid-type]


class Sweep(Record):
    name: str
    title: str
    dtype: str
    parameters: list[str]
    points: list[SweepPoint]


# ----------------------------------------------------------------------------- the lab


class LabExperiment(OpenRecord):
    """One experiment's raw measurements; the analysis checks the fields it reads and names
    any that is missing or malformed."""

    available: bool
    reason: str = ""


class Lab(Record):
    available: Literal[True] = True
    backend: str
    device_kind: str
    quick: bool
    cache_bytes: Count | None
    plan: dict[str, Any]
    experiments: dict[str, LabExperiment]


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

    schema_version: Literal[2]
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
