"""A compiled program's kernels and facts in the results document
(:mod:`roofline_report.results.schema`): the kernel inventory, per-kernel samples from a
profiler trace, the facts of the optimized HLO, our own count of the StableHLO and
``jax.experimental.roofline``'s figures.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from roofline_report.pattern_names import PatternName
from roofline_report.results.schema_base import (
    AtLeastOne,
    Count,
    NonNeg,
    Pos,
    PosInt,
    Record,
)


class KernelRecord(Record):
    """One kernel of the compiled program (:func:`roofline_report.hlo.kernels.kernel_inventory`):
    per launch flops, transcendentals and the bytes it touches, launches per call (``trips``).

    Fields added after the first files were written have defaults, so those files still load:
    the boundary bytes (operand and result buffers whole; None where not recorded: equal to the
    touched bytes then), the rule that made the touched bytes smaller, the kernel's pattern, and
    where it sits (a conditional's branch, whether the totals charge it, whether every loop
    around it has a known trip count), and the user's own line that built it."""

    name: str
    opcode: str
    category: Literal["matmul", "elementwise", "reduction", "data movement", "collective",
                      "other"]
    kind: str | None
    fusion_kind: str | None
    computation: str
    loop: str | None
    trips: AtLeastOne
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
    # Calls counted by their name and config (an opaque call that is a known operation): how.
    counted_by_name: list[str] = []
    source: str | None  # path relative to the user's project, with the line
    # The innermost frame of the op's Python stack outside installed libraries (``source`` is
    # the frame JAX recorded, often a library's: flax, optax); None where not recorded.
    user_source: str | None = None
    in_place: bool = False  # writes a buffer it was given (donated, or updated in place)
    trips_known: bool = True  # False when a loop around it has no known trip count
    branch: str | None = None  # "conditional.3 branch 1 of 2" inside a conditional
    charged: bool = True  # False for a branch the program totals do not charge
    # Of bytes_read, those read from the program's arguments (a kernel of the entry
    # computation reading an entry parameter), per launch.
    argument_bytes_read: Count = 0
    boundary_bytes_read: Count | None = None  # operand buffers whole, per launch
    boundary_bytes_written: Count | None = None  # result buffers whole, per launch
    bytes_rule: str | None = None  # why the touched bytes are fewer than the boundary's
    # A TPU's: bytes read from and written to the core's own memories (vector memory, scalars,
    # sync flags) per launch, apart from bytes_read/bytes_written (HBM traffic); 0 elsewhere.
    on_chip_bytes_read: Count = 0
    on_chip_bytes_written: Count = 0
    # A TPU kernel's: how many of its bytes above are its arrays' tile padding (HBM reads, HBM
    # writes, on chip both ways; a dimension shorter than its tile moves as a whole tile).
    padding_bytes_read: Count = 0
    padding_bytes_written: Count = 0
    padding_on_chip_bytes: Count = 0
    # An asynchronous start/done pair (a copy-start/copy-done, a slice-start/slice-done, a
    # collective's -start/-done) listed once: it overlaps the kernels issued before its done.
    asynchronous: bool = False
    # An asynchronous pair's: the kernels issued between its start and its done, which its
    # transfer runs beside ([] for none: nothing hides it); None where not recorded (another
    # kernel, or documents written before it was).
    overlapped_by: list[str] | None = None
    pattern: PatternName | None = None
    pattern_size: Count = 0  # per launch: the elements the pattern moves (loop-dot: flops)
    pattern_detail: str | None = None  # e.g. "axes (1, 0) of f32[512,1024]"
    # Elements per row where the pattern's rate depends on it: a top-k's row length (the
    # dimension it searches), a sort's, a gather's slice or a scatter's update window per
    # index, a block transpose's run, a matrix-vector product's narrow width, an FFT's length;
    # a reduce-window's arrays reduced together (1 for a plain window); a broadcast
    # transpose's source rows read per run of its output (0 in documents written before it).
    pattern_row: Count = 0
    # A gather's table: the bytes of the operand it gathers from (0: not a gather, or not
    # recorded: documents written before it was).
    pattern_table_bytes: Count = 0
    # Independent matrix products of its largest dot (its batch size; 1 for a plain product).
    matmul_products: AtLeastOne = 1
    # Flops of its convolutions whose windows tile their input (patch embeddings, 1x1
    # convolutions): matrix products of patches in form, yet priced at the convolution roof,
    # as the HLO keeps them convolutions.
    patch_conv_flops: Count = 0
    # Flops of its grouped convolutions (depthwise ones among them): a roof of their own.
    grouped_conv_flops: Count = 0
    # Elements its reduce ops read, summed over them (a fusion reducing its input twice counts
    # it twice); absent from documents written before it was recorded.
    reduced_elements: Count | None = None
    # The multiply-adds per output element of the largest of them (window elements x input
    # features per group: 9 for a 3x3 depthwise one; 0: none): their rate follows it.
    grouped_conv_taps: Count = 0
    # Their flops as if every tap landed on the input (2 x outputs x taps): a grouped
    # convolution's time goes with its outputs, padded or not (0: not recorded, its flops).
    grouped_conv_tap_flops: Count = 0
    # Flops of its dense convolutions over one spatial dimension (a sequence's), and the
    # filter elements (window x input x output features) of the one of the most flops: a
    # roof of their own, read at that size; 0 in documents written before they were recorded.
    line_conv_flops: Count = 0
    line_conv_filter: Count = 0
    # The elements of the patch matrix (output positions x window x input features) of its
    # dense image convolution of the most flops: the convolution roof is read at that size;
    # 0 in documents written before it was recorded (the roof then read at its flops).
    image_conv_patch: Count = 0
    # Whether that convolution pads its input (a "SAME" convolution's): a padded one runs on
    # another path, under a roof of its own; False in documents written before it was recorded.
    image_conv_padded: bool = False
    # Whether it is a weight gradient (its window larger than its output's images): a roof of
    # its own; False in documents written before it was recorded.
    image_conv_weight_gradient: bool = False
    # Flops of a bare convolution XLA:CPU hands to no library (its labels not the libraries'
    # form): a roof of its own; 0 in documents written before they were recorded.
    generic_conv_flops: Count = 0
    # Its window's elements: that roof's rate is read at them (0: none, or not recorded).
    generic_conv_window: Count = 0
    # The integer type its largest dot multiplies ("int8"); None for floats or no dot.
    matmul_dtype: str | None = None
    # The operand precision its largest matrix product asks above the default ("high",
    # "highest": a TPU multiplies float32 in 3 or 6 bfloat16 passes); None for the default.
    matmul_precision: Literal["high", "highest"] | None = None
    # Parts XLA:CPU splits the kernel into to run on as many worker threads (1: not split).
    partitions: AtLeastOne = 1
    # Work a loop fusion repeats per output element beyond the count (an instruction under a
    # broadcast along the output's minor axis is evaluated for every element it reaches).
    recomputed_flops: Count = 0
    recomputed_transcendentals_by_op: dict[str, Count] = {}
    # The real arithmetic of its complex elementwise ops beyond the one flop each is counted
    # (a complex multiply: 6 real flops).
    complex_flops: Count = 0
    # The square roots of its complex magnitudes (|z| as a hypotenuse), by StableHLO op.
    complex_transcendentals_by_op: dict[str, Count] = {}


class KernelInventory(Record):
    """Every kernel the runtime launches, with sums (loop kernels x their launches)."""

    available: Literal[True] = True
    module: str
    # The backend whose compiler's rules read it ("tpu"; None: XLA:CPU's and GPU's rules).
    backend: str | None = None
    # The buffers one call passes (its entry's parameters and result arrays): a call's
    # dispatch grows with them. None in results saved before it was counted.
    buffers: Count | None = None
    # The bytes of a call's arguments and of its results that alias none of them (what it
    # holds at least between calls). None in results saved before it was counted.
    call_bytes: Count | None = None
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
    event: includes waiting for busy worker threads), ``wait_s`` how much of that span came
    after its own event while other kernels' events ran that ended before it completed (the
    time it sat queued behind their work; None in runs that did not keep it), ``share_s`` its
    share of the machine over the rest of the span (kernels the runtime ran at the same time
    split the cores, by the threads each keeps busy alone where the record gives ``cores``,
    evenly otherwise; None in runs that did not keep it). Nested events count their self
    time. ``calls_at``: where the kernel did not run in every traced call, the calls (indices
    into the record's ``calls``) its samples belong to; None: one sample per call, in order."""

    name: str
    launches: list[NonNeg]
    busy_s: list[NonNeg] | None = None
    span_s: list[NonNeg]
    wait_s: list[NonNeg] | None = None
    share_s: list[NonNeg] | None = None
    calls_at: list[Count] | None = None

    @model_validator(mode="after")
    def _one_per_call(self) -> KernelTime:
        lengths = {len(self.launches), len(self.span_s)}
        for extra in (self.busy_s, self.wait_s, self.share_s):
            if extra is not None:
                lengths.add(len(extra))
        if self.calls_at is not None:
            lengths.add(len(self.calls_at))
        if len(lengths) != 1:
            raise ValueError("launches, busy_s, span_s, wait_s, share_s and calls_at must hold "
                             "one sample per traced call")
        return self


class TraceCall(Record):
    """One traced call of the program (seconds): its wall time from the runtime's execute event
    to the end of its last kernel (on a TPU, its module event's span on the device), the time
    during which at least one kernel ran, and the rest by cause: dispatch (execute to the first
    kernel), loop control (the self time of control flow), gaps between kernels."""

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
    calls_per_sample: AtLeastOne = 1
    kernels: list[KernelTime]
    unmatched: list[str]
    notes: list[str]
    # Calls of the same program timed just before the trace, untraced and traced (seconds),
    # when the run measured them: the trace's overhead is their ratio.
    untraced_s: list[Pos] = []
    traced_s: list[Pos] = []
    # The worker threads the kernels shared (the machine's cores), when the shares were
    # weighted by the threads each kernel keeps busy alone; None: split evenly.
    cores: PosInt | None = None


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


class CompiledCollectiveArray(Record):
    """One array a compiled collective's result holds (tokens left out): its element type,
    dimensions and bytes (None for an element type of unknown width)."""

    dtype: str
    shape: list[Count]
    bytes: Count | None


class CompiledCollectiveLoop(Record):
    """A while loop around a compiled collective: its instruction and known trip count (None
    when the compiler states none)."""

    name: str
    known_trip_count: Count | None


class CompiledCollective(Record):
    """One collective of the compiled program, as
    :func:`roofline_report.hlo.compiled.collective_records` writes it (an async
    ``-start``/``-done`` pair once). The bytes and the group are None where they could not be
    read; the loops around it were not recorded before the trip count was (those records load
    with no loops and an unknown trip count)."""

    # "async" is a keyword: the field is named async_ and read and written as "async"
    model_config = ConfigDict(serialize_by_alias=True)

    instruction: str
    computation: str
    op: str
    async_: bool = Field(alias="async")
    shape: str  # the result's HLO text
    dtype: str | None  # None when its arrays differ
    arrays: list[CompiledCollectiveArray]
    result_bytes: Count | None
    operand_bytes: Count | None
    group_size: Count | None
    replica_groups: list[list[Count]] | None  # each group's devices
    source_target_pairs: list[list[Count]] | None  # a collective-permute's [source, target]
    channel_id: Count | None
    bytes_per_device: Count | None  # sent per execution; None without a cost formula
    op_name: str | None
    source: str | None  # "name.py:12"
    loops: list[CompiledCollectiveLoop] = []  # the while loops around it, outermost first
    trip_count: Count | None = None  # runs per call: the loops' trip counts; None when unknown


class Compiled(Record):
    """Facts of the optimized HLO (:func:`roofline_report.hlo.compiled.inspect_compiled`)."""

    entry: str | None
    fusions: FusionCounts
    custom_calls: list[CustomCall]
    collectives: list[CompiledCollective]
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
