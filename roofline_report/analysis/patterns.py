"""Kernels that run below the streaming roofs, timed at their pattern's measured rate (no jax).

A transpose (alone or fused into other work), a reduction along a non-minor axis, a reduction
of several operands (an argmax), a gather, a scatter, a sort, a top-k or a dot the compiler
emits as a loop of its own (not handed to its matmul library) runs far below what its bytes at
the streaming bandwidth, or its flops at the matmul roof, allow: on a 2-core CPU the layout
changes of a transpose ran at about 1% of the streaming roof. The kernel inventory labels such
a kernel with its ``pattern`` and a ``pattern_size`` per launch (a transpose, alone or fused
into other work, or a block transpose moving whole runs: output elements; a strided or a
variadic reduction: operand elements read; a gather: output elements gathered; a scatter:
update elements scattered; a sort: its comparisons; a top-k: the elements it searches; a loop
dot or a transposed dot: its flops; a matrix-vector product: its matrix's elements; an FFT:
XLA's flops; a reduce-window or a sum-window: the window elements it visits on its operand
times the arrays it reduces together) and, where the rate depends on it, a ``pattern_row`` (a
top-k's row, a sort's, a gather's or scatter's elements per index, a block transpose's run, a
matrix-vector product's narrow width, an FFT's length, a reduce-window's arrays); the
ceilings measure each pattern's rate by size, some by row too
(:mod:`roofline_report.observe.ceilings.pattern_plans`), and a kernel takes the roof of the
row nearest its own.
:func:`pattern_time` is the one place that turns the two into a time: ``pattern_size`` ÷
the pattern's rate at that size, the rate interpolated in log size between the sizes measured
(the nearest end's beyond them), with the dispatch floor already taken off each measured point
(:func:`roofline_report.analysis.roofs.measured`). A prediction takes the larger of that time
and its other terms for the launch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from roofline_report.analysis.roofs import RateRoof, RoofSet
from roofline_report.config.spec import DTYPES
from roofline_report.hlo.product_facts import INTEGER_TYPES
from roofline_report.hlo.shapes import FLOAT_TYPES
from roofline_report.kinds import Kind
from roofline_report.pattern_names import PATTERNS
from roofline_report.results import schema

# What a pattern's size and rate count: a loop dot's flops, a sort's comparisons, a
# matrix-vector product's matrix elements, the other patterns' elements.
UNITS = {"loop-dot": "FLOP", "sort": "comparisons", "fft": "FLOP",
         "interleaved-reduction": "runs", "on-chip": "bytes", "transposed-dot": "FLOP",
         "update-slice": "tiles"}
NO_ROOF = "no roof measured for this kind"
NO_SIZE = "no pattern size in the kernel record"


def unit(pattern: str) -> str:
    """What ``pattern_size`` counts for ``pattern``: ``FLOP`` or ``elements``."""
    return UNITS.get(pattern, "elements")


@dataclass(frozen=True, slots=True)
class PatternTime:
    """One launch of a kernel at its pattern's measured rate: ``size`` operations (``unit``)
    at ``rate`` per second (the roof ``roof``'s rate at that size) take ``seconds``."""

    pattern: str
    size: float
    unit: str
    seconds: float
    rate: float
    roof: str
    kind: Kind


def _pattern(kernel: schema.KernelRecord) -> str | None:
    pattern = kernel.pattern
    return pattern if pattern in PATTERNS else None


def _size(kernel: schema.KernelRecord) -> float | None:
    return float(kernel.pattern_size) if kernel.pattern_size > 0 else None


# A pattern measured later than another it resembles: ceilings measured before it was take the
# other's rate (a transpose fused into other work runs about as a transposing copy does).
STAND_IN = {"fused-transpose": "transpose", "block-transpose": "transpose",
            "transposed-dot": "loop-dot", "vec-mat": "mat-vec"}


# HLO complex types: an FFT's operands, a complex dot's.
COMPLEX_TYPES = {"c64": "complex64", "c128": "complex128"}


def _operand_family(kernel: schema.KernelRecord) -> str | None:
    """``int32`` for a kernel that reads mostly integers (HLO ``s32``, ``u32``, ...),
    ``complex64`` for one that reads mostly complex numbers, None for floats."""
    read = kernel.read_by_dtype
    totals = {None: sum(float(b) for t, b in read.items() if t in FLOAT_TYPES),
              "int32": sum(float(b) for t, b in read.items() if t in INTEGER_TYPES),
              "complex64": sum(float(b) for t, b in read.items() if t in COMPLEX_TYPES)}
    family = max(totals, key=lambda name: totals[name])  # floats first: they win a tie
    return family if totals[family] > 0 else None


def pattern_roof(kernel: schema.KernelRecord, dtype: str, roofs: RoofSet) -> RateRoof | None:
    """The measured rate of ``kernel``'s pattern in ``dtype`` (float32's where that dtype was
    not measured; the :data:`STAND_IN` pattern's where the set has none of its own); a
    kernel that reads mostly integers takes the int32 rate where one was measured (an integer
    argmax skips a float's NaN tests), one that reads complex numbers (an FFT, a complex dot)
    the complex64 rate; a kernel whose pattern was measured by row (a top-k, a TPU's
    reduce-window spanning a row, a scatter, a block transpose, a matrix-vector product, a
    real FFT, a CPU's reduce-window by the arrays it reduces together) the roof measured on
    the row nearest its own (in log; an FFT's among lengths
    that are, or are not, powers of two as its own is; a top-k's rate falls
    with shorter rows: more of each row is kept; a matrix-vector product of one column
    streams its matrix thirty times faster than one of 16). None when the kernel has
    no pattern or the set no rate for it."""
    pattern = _pattern(kernel)
    if pattern is None:
        return None
    # A matrix-vector product reads mostly its matrix: computed where under half its reads
    # are arguments (a decode step's weights re-laid out, its caches just updated).
    computed = _operand_computed(kernel) if pattern == FFT \
        else _operand_computed(kernel, 0.5) if pattern == MAT_VEC and kernel.pattern_row == 1 \
        else None
    family = _operand_family(kernel)
    if family is not None:
        own = roofs.rate_for(pattern, family)
        if own is not None and own.dtype == family:
            return _as_operand_comes(own, computed, roofs)
    found = roofs.rate_for(pattern, dtype)
    if found is None and pattern in STAND_IN:
        found = roofs.rate_for(STAND_IN[pattern], dtype)
    if found is not None:
        found = _as_operand_comes(found, computed, roofs)
    if found is not None and found.computed and pattern == MAT_VEC \
            and (_size(kernel) or 0.0) < min((s for s, _ in found.by_size), default=0.0):
        # A matrix smaller than any measured so stays in the cache that wrote it: its
        # product runs as an argument's does (NeRF's and DLRM's of 0.4 to 0.8 MB read 1.5 to
        # 2.7 times their time at the smallest computed size's rate, 0.8 to 1.5 at the
        # argument's).
        found = _as_operand_comes(found, False, roofs)
    row = kernel.pattern_row
    if found is not None and not found.row and row > 0 and pattern == BROADCAST_TRANSPOSE:
        # A broadcast transpose's roofs by the source rows each output run reads, where the
        # set has them (the square's roof stands in otherwise: :func:`_rate_size`).
        found = next((r for r in roofs.rates if r.op == found.op and r.dtype == found.dtype
                      and r.row and not r.from_memory), found)
    if found is not None and found.row and row > 0:
        # A top-k's rate depends on its row length: the roof measured nearest it (in log).
        same = [r for r in roofs.rates if r.op == found.op and r.dtype == found.dtype and r.row
                and r.computed == found.computed]
        if pattern == FFT:
            # An FFT's rate goes with its length's factors: a length with a factor other than
            # 2 takes the roof of such a length where one was measured, a power of two a
            # power of two's.
            same = [r for r in same if _power_of_two(r.row) == _power_of_two(row)] or same
        nearest = min(same, key=lambda r: (abs(math.log(r.row / row)), r.row)).row
        found = _by_table(kernel, [r for r in same if r.row == nearest])
    return found


FFT = "fft"  # the pattern, and the StableHLO op, of a Fourier transform


MAT_VEC = "mat-vec"  # the pattern of a product of a matrix with a narrow operand


def _operand_computed(kernel: schema.KernelRecord, share: float = 1.0) -> bool:
    """Whether a kernel's operand is computed in its program: under ``share`` of its reads
    are of the program's arguments (all of them: an FFT's one operand; half: a
    matrix-vector product's matrix, most of its reads). On a CPU an FFT then runs after the
    kernel that computes it, on about one worker thread, and a product of one column reads
    a matrix just written (:mod:`roofline_report.observe.ceilings.pattern_plans`)."""
    return kernel.argument_bytes_read < share * kernel.bytes_read


def _as_operand_comes(found: RateRoof, computed: bool | None, roofs: RoofSet) -> RateRoof:
    """Of the roofs of ``found``'s operation and dtype, one measured with its operand as the
    kernel's comes (``computed``; None: either), row-measured where ``found`` is; ``found``
    where the set has none such (ceilings measured before the computed operand's were)."""
    if computed is None or found.computed == computed:
        return found
    return roofs.alike(found, computed=computed) or found


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _by_table(kernel: schema.KernelRecord, roofs: list[RateRoof]) -> RateRoof:
    """Of roofs of one row, the one whose table is nearest the kernel's gather table (in log);
    a roof whose table grows with its output (``table`` 0: float32, as large as the output)
    is read at the kernel's own output, within the sizes it was measured at. Without the
    kernel's table (another pattern, a record written before tables were), the roof of a
    growing table where there is one."""
    table = kernel.pattern_table_bytes
    if table <= 0 or not any(r.table for r in roofs):
        return min(roofs, key=lambda r: r.table)

    def distance(r: RateRoof) -> float:
        # A growing table is as large as the output at the size it was measured nearest the
        # kernel's (within the sizes measured: beyond them its rate is the nearest end's).
        sizes = [s for s, _ in r.by_size] or [float(kernel.pattern_size)]
        at = min(max(float(kernel.pattern_size), min(sizes)), max(sizes))
        own = r.table or 4 * max(1.0, at)
        return abs(math.log(own / table))

    return min(roofs, key=lambda r: (distance(r), r.table))


def pattern_time(kernel: schema.KernelRecord, dtype: str, roofs: RoofSet,
                 from_memory: float = 0.0) -> PatternTime | None:
    """Seconds per launch of ``kernel`` (a kernel inventory record) at its pattern's measured
    rate at its ``pattern_size``, in ``dtype`` (the dtype the kernel computes in); None when
    the kernel has no pattern (or no positive size) or no rate was measured for its pattern
    (:func:`missing` then says so). ``from_memory``: the share of its reads that come from
    main memory (a program's arguments in a program whose data outgrow the caches,
    :func:`~roofline_report.analysis.past_the_cache.cold_arguments`); that share of its
    elements goes at the roof measured with its operand there, where the set has one (a
    transposing copy's), the rest at its own."""
    pattern, size = _pattern(kernel), _size(kernel)
    roof = pattern_roof(kernel, dtype, roofs)
    if pattern is None or size is None or roof is None:
        return None
    rate = _rate_in(dtype, roof, roof.rate_at(_rate_size(kernel, pattern, size, roof)),
                    pattern)
    if not (math.isfinite(rate) and rate > 0):
        return None
    between = _between_rows(kernel, roof, roofs, size) if pattern in BY_INDEX else None
    if between is not None:
        rate = _rate_in(dtype, roof, between, pattern)
    cold = roofs.alike(roof, from_memory=True) if from_memory > 0 else None
    # Never faster than its operand in the cache (a small copy's time is mostly its start).
    cold_rate = min(rate, _rate_in(dtype, roof, cold.rate_at(size), pattern)) \
        if cold is not None else 0.0
    if cold is not None and math.isfinite(cold_rate) and cold_rate > 0:
        share = min(1.0, from_memory)
        seconds = size * (share / cold_rate + (1.0 - share) / rate)
        return PatternTime(pattern, size, unit(pattern), seconds, size / seconds, cold.name,
                           cold.kind)
    return PatternTime(pattern, size, unit(pattern), size / rate, rate, roof.name, roof.kind)


BROADCAST_TRANSPOSE = "broadcast-transpose"  # read at the square of the rows it walks


def _rate_size(kernel: schema.KernelRecord, pattern: str, size: float,
               roof: RateRoof) -> float:
    """The size at which a kernel's pattern rate is read from ``roof``: its own, but for a
    broadcast transpose whose record gives the source rows each run of its output reads (its
    row) priced at the square's roof (ceilings measured before the roofs by row), the
    square of that many rows, and for a dot its loop emitter computes, the flops of one of
    its products. A broadcast transpose's misses go with those rows: on a 2-core CPU the swap
    of the last two axes of a float32 ``[2, 1, 128, 4096]`` (1 M elements, runs of 128 rows)
    ran at 0.78 to 0.84 G elements/s, as the square's 128 to 256 rows did, where the square
    of 1 M ran at 0.42 to 0.54; priced at its size, two such kernels of a Perceiver's and a
    Mamba block's read 2.0 and 2.6 times their time. Its roofs by row are read at its own
    size: the square of its rows is in the cache where its own operand is not."""
    if pattern == BROADCAST_TRANSPOSE and kernel.pattern_row > 0 and not roof.row:
        return float(kernel.pattern_row) ** 2
    if pattern in BY_PRODUCT:
        # A batched dot runs at the rate of one of its products, as the matmul's term reads
        # it (a batch of 512 products [27, 27]ᵀ @ [27, 64] of DLRM's interaction gradient
        # ran at 59 to 77 GFLOP/s, below the roof's smallest product, not at the 190 of a
        # product of its summed flops).
        return size / kernel.matmul_products
    return size


#: Patterns whose size is a dot's flops, measured on single products.
BY_PRODUCT = ("loop-dot", "transposed-dot")


def _rate_in(dtype: str, roof: RateRoof, rate: float, pattern: str) -> float:
    """``rate``, of ``roof``'s dtype, in ``dtype``: where another dtype's roof stands in for a
    layout change, which moves bytes, its rate in elements scales with the widths (a bfloat16
    transposing copy on a TPU v5e ran 4.6 times faster per element than the float32 roof,
    near its bytes at HBM's rate)."""
    if pattern in BY_BYTES and roof.dtype != dtype and dtype in DTYPES and roof.dtype in DTYPES:
        return rate * DTYPES[roof.dtype] / DTYPES[dtype]
    return rate


#: Patterns that move data without arithmetic: where another dtype's roof stands in for the
#: kernel's, its rate in elements is scaled by their widths.
BY_BYTES = ("transpose", "fused-transpose", "block-transpose")


#: Patterns whose time goes with their indices and their elements (:func:`_between_rows`),
#: each with the smallest row of the roofs that model spans: a gather's single elements are
#: priced by their table (cache misses), not as rows of one.
BY_INDEX = {"scatter": 1, "gather": 2}


def _between_rows(kernel: schema.KernelRecord, nearest: RateRoof, roofs: RoofSet,
                  size: float) -> float | None:
    """The rate of a scatter or a gather whose row lies between two rows measured, from a
    cost of each index and a cost of each element solved from those two roofs at the
    kernel's size: t(row) = a / row + b per element, through both (the time goes with the
    indices where rows are short and with the elements where they are long: on a TPU v5e a
    scatter took 11 ns an index, 0.03 ns an element; on a 2-core CPU a gather of rows of 64
    ran at 5 G elements/s where rows of 256 ran at 9.5, about 8 ns an index and 0.07 ns an
    element). None beyond the rows measured (a gather's from rows of
    :data:`BY_INDEX`'s), at one of them, or where the two do not make both costs positive
    (the nearest roof then stands)."""
    row = kernel.pattern_row
    least = BY_INDEX.get(nearest.op, 1)
    same = sorted((r for r in roofs.rates if r.op == nearest.op and r.dtype == nearest.dtype
                   and r.row >= least and not r.table), key=lambda r: r.row)
    below = [r for r in same if r.row < row]
    above = [r for r in same if r.row > row]
    if row <= 0 or not below or not above or any(r.row == row for r in same):
        return None
    low, high = below[-1], above[0]
    slow, fast = 1.0 / low.rate_at(size), 1.0 / high.rate_at(size)  # seconds an element
    per_index = (slow - fast) / (1.0 / low.row - 1.0 / high.row)
    per_element = fast - per_index / high.row
    if not (per_index > 0 and per_element > 0):
        return None
    return 1.0 / (per_index / row + per_element)


def missing(kernel: schema.KernelRecord, dtype: str, roofs: RoofSet) -> str | None:
    """Why a kernel with a pattern gets no :func:`pattern_time`: :data:`NO_ROOF` when the set
    lacks its pattern's rate, :data:`NO_SIZE` when the record gives no positive size; None for
    a kernel without a pattern or with a time."""
    if _pattern(kernel) is None:
        return None
    if pattern_roof(kernel, dtype, roofs) is None:
        return NO_ROOF
    return NO_SIZE if _size(kernel) is None else None
