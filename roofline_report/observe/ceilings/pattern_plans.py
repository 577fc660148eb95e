"""The kernels each backend measures below the streaming roofs (imports jax when listing them).

:func:`pattern_plan` sizes a backend's run (pure); :func:`kernels` lists its kernels, each a
pattern's roof or a variant beside it, with its dtype, its sizes and its program (the builders
of :mod:`.pattern_programs`, which import jax); :func:`not_measured` names the patterns the
backend never runs (:data:`NOT_ON_BACKEND`).

Kernels (``op`` is the pattern's name, as the kernel inventory names it):

* ``transpose`` (elements of the output per second): the roof is the **2-D swap** of a square
  ``[n, n]`` (``x.T``: the minor axis moves; the layout changes of weights and activations in a
  training step are of this kind); beside it, not a roof, the 3-D permutation
  ``[8, m, m] -> (2, 0, 1)`` that also moves the minor axis. float32, and bfloat16 for the 2-D
  swap outside quick mode.
* ``strided-reduction`` (operand elements per second): ``sum(x, axis=0)`` of a row-major
  ``[R, 1024]``, by R. XLA:CPU runs small ones as a loop of its own and large ones through its
  library (``__ynn_fusion``): each point records which kernel ran.
* ``variadic-reduction`` (operand elements per second): ``argmax(x, axis=-1)`` of a row-major
  float32 ``[R, 1024]``, by R: a reduce of two operands (the values and their indices) that
  XLA:CPU emits as a loop of its own. It has an int32 roof too (the same argmax of distinct
  integers): without a float's NaN tests it ran 4 to 5 times faster on a 2-core CPU.
* ``gather`` (output elements per second): the roof is ``jnp.take`` of rows of
  :data:`GATHER_ROW` elements of a table (an embedding lookup, a mixture of experts routing its
  tokens: the bulk of what a training step gathers); beside it, ``jnp.take`` of scattered
  elements of a vector as large as the gather (a label per row), several times slower per
  element, not a roof: its reads miss the caches once the vector outgrows them. The roofs
  of single elements are ``jnp.take`` from tables of a fixed size
  (:data:`GATHER_ELEMENT_TABLES`, uniform random indices), where a gather reads one element
  per index (a Bloom filter's probes, a column's framing). Indices of the rows are a fixed
  random permutation, as many as rows (or elements).
* ``scatter`` (update elements per second): the roof is ``lax.scatter_add`` of rows of
  :data:`GATHER_ROW` elements into a donated table (an embedding's gradient: what
  ``x.at[idx].add(u)`` runs once its indices are normalised, a kernel of its own), and the
  scatter-add of scattered elements into a vector.

  The scatter's rows and scattered elements are both roofs (outside quick mode, which
  measures the rows alone), each with its elements per index (``row``: 256 or 1); the
  inventory gives a scatter its update window per index (and a gather its slice), and the
  model takes the roof whose row is nearest (in log). On a 2-core CPU a Bloom filter's
  scatter of single elements ran 5.6 times slower than its price at the rows' rate.
* ``sort`` (comparisons per second, n ⌈log2 n⌉ for n keys): the stable ``argsort`` of a
  float32 vector in a random order (a sort of two operands, keys and their indices: how a
  mixture of experts groups its tokens by expert). XLA:CPU calls the comparator once per
  comparison, at a small fraction of the multiply-add rate; its sizes are smaller than the
  other patterns' (2^8 to 2^14 keys on a CPU: the largest takes several milliseconds).
* ``top-k`` (operand elements searched per second): ``lax.top_k`` of the :data:`TOP_K`
  largest of rows of each of :data:`TOP_K_ROWS` float32 values (a sampler's top-k over a
  vocabulary; a roof for each row length, which the model reads by the kernel's own: at a
  million elements on a 2-core CPU the top 16 of rows of 1,024 ran at 0.19 G elements/s, of
  rows of 4,096 at 0.39 and of rows of 32,768 at 0.44),
  by rows: XLA:CPU runs it as a ``TopK`` custom call of its own, not as a sort. Half the
  roofs' sizes (every other one), each on operands of other values in turn
  (:func:`.pattern_programs.top_k`: a branch predictor learns an operand it meets again).
* ``update-slice`` (tiles per second; a TPU's only): ``lax.dynamic_update_slice`` of a column
  ``[R, 1]`` into a donated float32 ``[R, 128]``: one lane of each of its R / 8 tiles
  written, each tile read and written whole. On a TPU v5e such updates took 15 to 20 ns a
  tile whatever their bytes or memory: a key-value cache's one-token update (4,096 tiles,
  70 µs), a loop's step along a second-minor axis (512 tiles, 10.4 µs a trip). This program
  read 26 ns a tile there (39 M tiles/s at 65,536 tiles): its call also lays the column out
  in tiles, so the roof prices such kernels up to 1.7 times slow.
* ``fused-transpose`` (output elements per second): ``x.T * y`` of square float32 ``[n, n]``,
  the 2-D swap fused into a multiply (a gradient fused with the transpose of its input), at
  half the roofs' sizes (every other one).
* ``broadcast-transpose`` (output elements per second): ``(x * 2).T`` of square float32
  ``[n, n]``, n a power of two: a transposing copy fused with a broadcast (here of a constant)
  reading rows of a power of two bytes, which XLA:CPU runs several times slower than the plain
  swap (0.48 against 1.9 G elements/s at ``[1024, 1024]`` on a 2-core CPU; at n = 1000 both
  ran at about 2), at half the roofs' sizes (every other one). A CPU's also by the source rows
  each output run reads (:data:`BROADCAST_TRANSPOSE_ROWS`): ``(x * 2).T`` of ``[rows, n]``.
* ``interleaved-reduction`` (contiguous runs per second): the sum over axes (1, 3) of
  ``[R, 32, 32, 2]``, by R: a reduce over the minor axis and a non-minor one with an axis kept
  between them (a group norm's statistics), whose time goes with the runs of adjacent elements
  it reads (here 2 each), not with its elements. Half the roofs' sizes (every other one).
* ``loop-dot`` (FLOP/s): ``einsum('km,nk->mn')`` of square operands, both contracted on their
  "wrong" axis. XLA:CPU (jax 0.10) hands ``a @ b``, ``a @ b.T`` and batched products to its
  matmul library but emits a plain ``dot`` (Eigen, outside the library's fusion) when the left
  operand is contracted on its first axis (``a.T @ b``, ``a.T @ b.T``: the weight gradients of a
  dense layer) and for matrix-vector products; n×n×n, 2n³ FLOP per call. It has a complex64
  roof too, in XLA's flops (2 per complex multiply-add): XLA:CPU emits every complex dot as a
  plain ``dot`` (``a @ b`` included), each complex multiply-add four real ones; on a 2-core CPU
  a complex64 ``[512, 512]`` product ran at 15 such GFLOP/s beside 98 for the float32 loop dot.

A CPU's own kinds (:func:`cpu_kernels`; an accelerator's plan leaves them out: its compiler
runs every product on its matrix unit or library, and changes layouts with copies that stream),
each a roof of its row, the kernel taking the roof whose row is nearest its own (in log), at the
roofs' sizes and, outside quick mode, twice the largest (an operand of 16 MiB, past a 32 MiB
last-level cache once read and written):

* ``mat-vec`` (matrix elements per second): ``v @ W`` of a square ``[n, n]`` (row 1: one token
  through a projection) and ``x.T @ y`` of a square ``x`` by a ``y`` of 16 columns (row 16: the
  weight gradient of a narrow layer), n a power of two as programs size their layers (a side
  of 1,448 ran up to three times faster than one of 1,024 or 4,096 here); sizes whose matrix
  is wider than a narrow product's side. ``v @ W`` once more with its matrix computed by a
  kernel before it (scaled; that kernel alone the baseline): a decode step's products read
  weights its program re-lays out and caches it has just updated, each a fresh copy, and ran
  1.5 to 1.9 times the time of the same product of an argument.
* ``vec-mat`` (matrix elements per second): the mirror, ``x.T @ y`` of an ``x`` of 16 columns
  by a square ``y`` (row 16: the weight gradient of a layer of 16 inputs, the result's rows
  the narrow side), at the same sizes.
* ``transposed-dot`` (FLOP/s): ``x.T @ y`` of square operands, both contracted along their
  major axis (a dense layer's weight gradient), at the loop dot's sides past a narrow
  product's.
* ``block-transpose`` (elements per second): a cache's layout change ``[1, S, 8, run] ->
  [1, 8, S, run]``, whole runs of 64 elements (a head's features) and of 1,024 (a weight's
  row) moved.
* ``fft`` (FLOP/s, XLA's count) in float32: the real FFT of each row of ``[R, n]`` for rows
  of 256, 512 and 2,048 (frames of a signal), and of 400 (2^4 x 5^2: a speech frame of
  25 ms at 16 kHz), a length a mixed-radix FFT runs at a rate of its own (a Whisper front
  end's rows of 400 ran at half the rate of rows of 512 at its size here); the complex 2-D
  roof stays the complex FFT's.
  Each is measured a second time with its operand computed by a kernel before it in the
  same call (rows of 400 and of 512, and the 2-D FFT), that kernel's call alone taken off:
  XLA:CPU runs such an FFT on about one worker thread, where an FFT of an argument uses them
  all (rows of 400: 2.64 to 2.82 ms against 1.77 on 2 cores); a program's FFT takes the roof
  measured as its operand comes (an argument or not).
* ``scatter``: the scatter-add of rows of 16 and of 64 (an embedding's gradient of narrow
  rows), beside the rows of 256 and the scattered elements.
* ``transpose`` with its operand in main memory: the 2-D swap of
  ``[1024, 1024]``, each call on the next of 128 MiB of operands, so that no cache holds it
  (one batched swap of them all faults its fresh output's pages in on every call instead).
  A program whose data outgrow the last-level cache reads its arguments from main memory,
  and a transposing copy of one ran 1.3 to 3 times as long as with its operand in the cache
  (``[8, 4096, 64] -> (1, 2, 0)``, 8 MiB: 330 µs against 730), where a streaming copy grows
  by its reads' time only; such a copy takes this roof for the share of its elements read
  from the arguments.
* ``reduce-window`` (window elements that land on the input, times the arrays reduced
  together, per second), by those arrays: the 3 x 3 max pool of stride 2 with SAME padding
  of ``[B, 32, 32, 32]`` (row 1: ResNet's stem pool, which XLA:CPU runs in its own loop; a
  2 x 2 pool of stride 2 without padding goes to its library; 0.24 to 0.29 ns a window
  element on 2 cores) and the 2 x 2 window of stride 2 over such values beside an iota of their
  indices along each of their 4 dimensions, keeping the largest value and its indices
  (row 5: the window XLA:CPU expands a max pool's gradient, a ``select-and-scatter``, into
  before its scatter; 0.5 to 0.66 ns an array's element), at the roofs' sizes from one
  image up (the largest size in quick mode). A window of 6 arrays (an Equinox pool's 5
  dimensions) takes the row of 5: from 4 arrays up the cost goes with the arrays.
* ``sum-window`` (window elements that land on the input per second): the sums of each
  element and the 15 before it within its block of 16 along rows of 512, the window
  XLA:CPU rewrites a cumulative sum into (0.09 to 0.15 ns a window element, two to three
  times faster than a maximum's window), at the roofs' sizes (the largest in quick mode).
* ``lone-op`` (elements per second): ``a + b`` of float32 ``[R, 256]`` alone, a kernel
  XLA:CPU names ``wrapped_add``, at the lone conversion's sizes. On 2 cores one operation
  alone in its kernel (an add, a product, a maximum, a negation) ran at 5 to 6 G elements/s
  over 1 M elements, where the same add fused with a product by a scalar ran at 9.6: priced
  at the streaming roofs, a GRU's gradient accumulators (``wrapped_add`` in its backward
  loop) read a fifth to a tenth of their time.
* ``normalization`` (elements per second): the layer norm of float32 ``[R, 64]`` (mean,
  variance about it, the rows normalized, scaled and shifted), which XLA:CPU fuses whole into
  one ``__ynn_fusion`` (from about 4,096 rows: fewer it splits into several kernels), at the
  roofs' sizes from 256 K elements. On a 2-core CPU it ran at 0.18 to 0.38 ns an element, up
  to eight times its terms at the row reduction's and the streaming roofs; it prices such
  kernels over rows shorter than 256 elements.
* ``lone-convert`` (elements per second): ``x.astype(bfloat16)`` of float32 ``[R, 256]``
  alone, a kernel XLA:CPU names ``wrapped_convert``, at half the roofs' sizes (the largest
  in quick mode). Such a kernel converted 4.5 to 6.5 G elements/s on 2 cores either way,
  where the conversion rate measured in a loop of conversions and multiplies is 25 to 35 G:
  a float32 product of bfloat16 operands (their conversions before it, its own after) read
  three to five times faster than it ran at that rate.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from roofline_report.analysis.patterns import unit
from roofline_report.observe import timer as timing
from roofline_report.observe.ceilings.pattern_programs import (
    CACHE_HEADS,
    CONVERT_ROW,
    FFT_BATCH,
    GATHER_ROW,
    INTERLEAVED,
    NORM_ROW,
    ON_CHIP_TRIPS,
    POOL_ARRAYS,
    POOL_IMAGE,
    PREFIX_ROW,
    PREFIX_WINDOW,
    REDUCE_COLUMNS,
    THREE_D_BATCH,
    TOP_K,
    UPDATE_LANES,
    Point,
    argmax,
    argsort,
    block_transpose,
    broadcast_transpose,
    broadcast_transpose_rows,
    fft2,
    fused_transpose,
    gather_elements,
    gather_rows,
    gather_table,
    interleaved_reduction,
    layer_norm,
    log_softmax,
    lone_convert,
    lone_op,
    loop_dot,
    max_pool,
    narrow_product,
    on_chip,
    pool_argmax,
    power_side,
    prefix_sums,
    rfft,
    scatter_add,
    scatter_table,
    sort_rows,
    strided_reduction,
    top_k,
    transpose_2d,
    transpose_3d,
    transpose_from_memory,
    transposed_dot,
    update_column,
    vector_matrix,
)

# A CPU's broadcast transposes by the source rows each output run reads: on 2 cores the swap
# of a product by a constant ran at 3.8 G elements/s reading 8 rows a run over 64 K elements,
# 10.6 over 1 M, but at 0.5 to 0.9 reading 64 to 1,024 rows, within a factor of two across
# sizes; read at the square of its rows (a square of 64 K elements for rows of 256, whose
# operand stays in the cache), a Perceiver's swap of 1 M elements reading 128 rows and
# wav2vec 2.0's of 512 K reading 256 read 0.5 and 0.3 to 0.5 times their time, and ResNet's
# reading 8 rows 2.3 to 2.5 times it.
BROADCAST_TRANSPOSE_ROWS = (8, 16, 64, 128, 256, 1024)
TOP_K_ROWS = (1024, 4096)  # the top-k roofs: the TOP_K largest of rows of these
MAT_VEC_WIDTHS = (1, 16)  # the matrix-vector roofs: a vector, and a layer of 16 outputs
VEC_MAT_WIDTHS = (16,)  # the mirrored product's: a layer of 16 inputs
BLOCK_RUNS = (64, 1024)  # the block-transpose roofs' runs: a head's features, a weight's row
RFFT_LENGTHS = (256, 400, 512, 2048)  # the real FFT roofs' row lengths: powers of two and not
COMPUTED_RFFT_LENGTHS = (400, 512)  # those measured with their operand computed too
FROM_MEMORY_SIZES = (1 << 20,)  # the 2-D swap from main memory: [1024, 1024], 4 MiB
SCATTER_ROWS = (16, 64)  # a CPU's further row scatter roofs (beside GATHER_ROW's)
# A CPU's further row gather roof (beside GATHER_ROW's): on a 2-core CPU rows of 64 from a
# table as large as the gather ran at 5 to 7 G elements/s where rows of 256 ran at 9.5 to 18;
# priced at the rows of 256, a graph network's gathers of rows of 64 (524,288 elements from a
# 512 KiB table) read 1.5 to 4 times faster than they ran.
GATHER_ROWS = (64,)
# A CPU's scatters of single elements into tables of a fixed size (bytes): on a 2-core CPU
# scatter-adds into a 16 KiB table ran at 1.6 to 1.7 G updates/s, into 1 MiB at 1.1 and into
# 16 MiB at 0.08 to 0.15, where the scattered elements' roof (a table as large as its
# updates) priced a Bloom filter's 1 M updates into 16 KiB at 2.5 to 3.6 times their time.
SCATTER_TABLES = (1 << 14, 1 << 20)
NORM_FUSED_FROM = 1 << 18  # the fused layer norm's smallest size (elements)
LANE_ROWS = (2048, 8192)  # row lengths of the TPU's reduce-window-lane roofs
SORT_ROWS = (1024, 32768)  # row lengths of an accelerator's sort roofs
# An accelerator's gathers from tables of a fixed size (bytes), of rows of GATHER_ROW and of
# single elements: on a TPU v5e the gathers of real programs from tables of 16 MiB ran two to
# five times faster per output element than the rows roof, whose table grows with its output
# (268 MB at its largest size), and a gather of single elements from a 384-byte table
# (a position bias) 28 times faster than the scattered elements' roof.
GATHER_TABLES = (1 << 20, 1 << 24, 1 << 28)
GATHER_ELEMENT_TABLES = (1 << 14, 1 << 20, 1 << 26)
# Output elements of the element gathers from a fixed table (a random element of a large
# table costs over ten nanoseconds there: the largest size takes tens of milliseconds).
GATHER_ELEMENT_SIZES = (1 << 18, 1 << 22)
# Carries of the on-chip rate's loop (float32 elements: 4, 16 and 32 MiB; a TPU v5e core's
# vector memory holds 128 MiB, and a training step's loop kept a 32 MiB carry there).
ON_CHIP_SIZES = (1 << 20, 1 << 22, 1 << 23)


@dataclass(frozen=True, slots=True)
class PatternPlan:
    """Elements per call of the patterns' roofs (ascending), of the variants beside them and of
    the bfloat16 transpose (() for none), sides of the loop dots, and the sampling settings
    (samples over both rounds)."""

    sizes: tuple[int, ...]
    dot_sides: tuple[int, ...]
    variant_sizes: tuple[int, ...]
    bfloat16_sizes: tuple[int, ...]
    samples: int
    min_sample_s: float
    sort_sizes: tuple[int, ...] = ()  # keys per call of the sort
    backend: str = "cpu"  # the backend planned for: some patterns exist on one backend only


#: Patterns a backend's compiler never emits, with the reason each is not measured there (the
#: ceilings record them unavailable with it, and kernels of another backend's trace priced by
#: those roofs fall back as any missing roof's do).
NOT_ON_BACKEND: dict[str, dict[str, str]] = {
    "tpu": {
        "loop-dot": "the TPU runs every matrix product on its matrix unit, as a convolution "
                    "fusion: no dot outside it to measure",
        "broadcast-transpose": "a code path of XLA:CPU's loop emitter; the TPU's compiler "
                               "changes layouts with copies that stream",
        "fft": "the TPU computes an FFT as matrix products by the DFT's factors (convolution "
               "fusions) and custom calls that split and join complex numbers: priced as "
               "those kernels",
    },
}


def _mib(size: int) -> str:
    """``16 KiB``, ``1 MiB``, ``256 MiB``: a table's bytes as its roof's name shows them."""
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"


def pattern_plan(backend: str, *, quick: bool) -> PatternPlan:
    """CPU: 2^12 to 2^21 elements per call by 8 (every other one for the variants and the
    bfloat16 transpose), loop dots of side 32 to 512 by 2; quick: 2^14 and 2^18 elements, sides
    64 and 256, no variant and no bfloat16. Accelerators: 2^17 to 2^26 elements, sides 256 to
    4096 (a TPU adds its reduce-window spanning a row and its on-chip rate;
    :data:`NOT_ON_BACKEND` the patterns it has not). Each size is compiled once (a tenth of a
    second on a 2-core CPU): the sizes are few, and the log-size interpolation of the
    analysis fills in between. Pure."""
    if backend == "cpu":
        first, last, sides = 1 << 12, 1 << 21, (32, 64, 128, 256, 512)
        quick_sides: tuple[int, ...] = (64, 256)
        sorts, quick_sorts = timing.geometric(1 << 8, 1 << 14, 4), (1 << 9, 1 << 13)
    else:  # a TPU v5e streams 2^25 float32 elements (128 MiB) in about 0.2 ms: larger too
        first, last, sides = 1 << 17, 1 << 26, (256, 512, 1024, 2048, 4096)
        quick_sides = (512, 2048)
        sorts, quick_sorts = timing.geometric(1 << 12, 1 << 22, 4), (1 << 14, 1 << 20)
    accelerator = backend != "cpu"
    if quick:
        # An accelerator's smaller sizes time its host's dispatch: the largest two.
        quick_sizes = (last // 16, last) if accelerator else timing.geometric(4 * first, last, 16)
        return PatternPlan(sizes=quick_sizes, dot_sides=quick_sides,
                           variant_sizes=(), bfloat16_sizes=(), samples=4,
                           min_sample_s=timing.min_sample_for(accelerator, 0.002),
                           sort_sizes=quick_sorts, backend=backend)
    sizes = timing.geometric(first, last, 8)
    return PatternPlan(sizes=sizes, dot_sides=sides, variant_sizes=sizes[1::2],
                       bfloat16_sizes=sizes[1::2], samples=6,
                       min_sample_s=timing.min_sample_for(accelerator, 0.003),
                       sort_sizes=sorts, backend=backend)


@dataclass(frozen=True, slots=True)
class Kernel:
    """A measured kernel: its pattern, what it is, whether it is the pattern's roof, its dtype
    and how to build its call at a size (elements per call, or a dot's side)."""

    pattern: str
    variant: str
    roof: bool
    dtype: str
    sizes: tuple[int, ...]
    build: Callable[[int], Point]
    # Elements per row where the rate depends on it (a top-k's row length, a gather's or a
    # scatter's elements per index), 0 where not: the model takes the roof of the nearest.
    row: int = 0
    # A gather's fixed table, in bytes (0: a table as large as the gather's output).
    table: int = 0
    # Whether its operand is computed by a kernel before it in the same call, that kernel's
    # time taken off (each point's ``baseline``): an FFT as programs run it on a CPU.
    computed: bool = False
    # Whether each call's operand comes from main memory (the calls take operands past the
    # caches in turn): a transposing copy as a program past the cache runs it on a CPU.
    from_memory: bool = False

    @property
    def name(self) -> str:
        return f"{self.pattern} {self.dtype} ({self.variant})"


def cpu_kernels(plan: PatternPlan) -> list[Kernel]:
    """The kinds a CPU runs at rates of their own that an accelerator's plan leaves out: a
    dot with a narrow side by its width (``mat-vec``: matrix elements per second), ``x.T @
    y`` (``transposed-dot``), a cache's block transpose by its run, a real FFT by its
    length, a row gather and a row scatter by their widths, a scatter of single elements by
    its table, a reduce-window by the arrays it reduces together, a conversion alone and a
    layer norm of short rows in one library kernel, one arithmetic operation alone, a
    broadcast transpose by the rows each output run reads; each a roof, the kernel taking
    the nearest row (and table)."""
    sizes = plan.sizes
    half = sizes[1::2] or sizes
    # One size more, twice the largest, outside quick mode: a 16 MiB operand, whose kernel's
    # reads and writes no longer fit a 32 MiB last-level cache (a real FFT of rows of 400
    # ran at 2.3 G elements/s at 2 M elements here and at 1.6 at 3.2 M).
    large = (*sizes, 2 * sizes[-1]) if plan.variant_sizes else sizes
    from roofline_report.hlo.dot_patterns import NARROW_DOT

    # A matrix wider than a narrow product's side: a smaller one makes a small product.
    matrices = tuple(n for n in large if power_side(n) > NARROW_DOT) or large[-1:]
    out = [Kernel("mat-vec", "v @ W" if width == 1 else f"x.T @ y, y of {width} columns",
                  True, "float32", matrices,
                  vector_matrix("float32") if width == 1
                  else narrow_product("float32", width), row=width)
           for width in MAT_VEC_WIDTHS]
    # The product of one column with its matrix computed by a kernel before it, as a decode
    # step's are (its weights re-laid out, its cache just updated, each a fresh copy): here
    # 1.5 to 1.9 times the time of the same product of an argument (v @ W of 16 MiB, 144 to
    # 149 µs of an argument, 218 to 278 after a multiply).
    out.append(Kernel("mat-vec", "v @ W, W computed", True, "float32", matrices,
                      vector_matrix("float32", computed=True), row=1, computed=True))
    out += [Kernel("vec-mat", f"x.T @ y, x of {width} columns", True, "float32", matrices,
                   narrow_product("float32", width, left=True), row=width)
            for width in VEC_MAT_WIDTHS]
    # Sides past a narrow product's width: a smaller one is a matrix-vector product.
    sides = tuple(n for n in plan.dot_sides if n > NARROW_DOT) or plan.dot_sides[-1:]
    out.append(Kernel("transposed-dot", "x.T @ y", True, "float32", sides,
                      transposed_dot("float32")))
    out += [Kernel("block-transpose", f"[1, S, {CACHE_HEADS}, {run}] -> (0, 2, 1, 3)", True,
                   "float32", large, block_transpose("float32", run), row=run)
            for run in BLOCK_RUNS]
    out += [Kernel("fft", f"rfft of [R, {n}]", True, "float32", large, rfft(n), row=n)
            for n in RFFT_LENGTHS]
    # The same FFTs with their operand computed by a kernel before them, as a program's are:
    # XLA:CPU then runs the FFT after that kernel's parts, on about one worker thread (an FFT
    # of rows of 400 took 2.64 to 2.82 ms so, 1.77 ms of an argument; on one core 3.1 and
    # 3.0). A power of two and a length that is not: the other lengths take the nearest.
    out += [Kernel("fft", f"rfft of [R, {n}], its operand computed", True, "float32", large,
                   rfft(n, computed=True), row=n, computed=True) for n in COMPUTED_RFFT_LENGTHS]
    out.append(Kernel("fft", f"2-D FFT of [{FFT_BATCH}, n, n], its operand computed", True,
                      "complex64", sizes, fft2(computed=True), computed=True))
    # The 2-D swap with its operand in main memory, as a program whose data outgrow the
    # caches reads a key-value cache it transposes: 1.3 to 3 times the time of its operand in
    # the cache here (an [8, 4096, 64] cache's swap of its minor axes, 8 MiB: 330 µs from the
    # cache, 730 from main memory), where a streaming copy's time grows by its reads' share
    # only. Quick mode too: one size, well under a second.
    out.append(Kernel("transpose", "2-D swap, its operand from main memory", True,
                      "float32", FROM_MEMORY_SIZES, transpose_from_memory("float32"),
                      from_memory=True))
    out += [Kernel("gather", f"rows of {row}", True, "float32", sizes,
                   gather_rows("float32", row), row=row) for row in GATHER_ROWS]
    out += [Kernel("scatter", f"scatter-add of rows of {row}", True, "float32", half,
                   scatter_add("float32", row), row=row) for row in SCATTER_ROWS]
    out += [Kernel("scatter", f"scatter-add of scattered elements into a table of "
                   f"{_mib(table)}", True, "float32", half, scatter_table("float32", table),
                   row=1, table=table) for table in SCATTER_TABLES]
    # A reduce-window outside the library, by the arrays it reduces together: a plain window
    # (ResNet's stem pool: 0.24 ns a window element here, ten times its bytes' time) and a
    # max pool's gradient's window of the values and their indices (about 0.6 ns an array's
    # element, whatever the arrays from 4 up: an Equinox CNN's two such windows, of 6
    # arrays, took 8.8 and 3.7 ms where their bytes priced 3.6 and 0.24). Quick mode too: one
    # size, well under a second.
    image = "[B, {}, {}, {}]".format(*POOL_IMAGE)
    # Sizes of one image or more: a smaller size would repeat one image's point.
    windows = tuple(n for n in sizes if n >= math.prod(POOL_IMAGE)) or sizes[-1:]
    windows = windows if plan.variant_sizes else windows[-1:]
    out.append(Kernel("reduce-window", f"3 x 3 max pool of stride 2, SAME, of {image}", True,
                      "float32", windows, max_pool("float32"), row=1))
    out.append(Kernel("reduce-window", f"2 x 2 window of stride 2 over {image} and the "
                      f"indices of its dimensions ({POOL_ARRAYS} arrays: a max pool's "
                      "gradient)", True, "float32", windows, pool_argmax("float32"),
                      row=POOL_ARRAYS))
    # A window that sums runs two to three times faster than a maximum's: a cumulative sum's
    # blocks (its form on XLA:CPU), an average pool's gradient, a reduction's partial sums.
    out.append(Kernel("sum-window", f"a cumulative sum's windows of {PREFIX_WINDOW} along "
                      f"rows of {PREFIX_ROW}", True, "float32",
                      sizes if plan.variant_sizes else sizes[-1:], prefix_sums("float32")))
    out.append(Kernel("lone-convert", f"float32 [R, {CONVERT_ROW}] to bfloat16 alone", True,
                      "float32", half if plan.variant_sizes else sizes[-1:],
                      lone_convert("float32", "bfloat16")))
    out.append(Kernel("lone-op", f"float32 [R, {CONVERT_ROW}] added alone", True, "float32",
                      half if plan.variant_sizes else sizes[-1:], lone_op("float32")))
    out += [Kernel("broadcast-transpose", f"swap of a product by a constant reading {row} rows "
                   f"a run ((x * 2).T of [{row}, n])", True, "float32", half,
                   broadcast_transpose_rows("float32", row), row=row)
            for row in BROADCAST_TRANSPOSE_ROWS]
    # XLA:CPU fuses such a layer norm whole from about 4,096 rows (at 512 it split it in five
    # kernels here): the roofs' sizes from 256 K elements.
    norms = tuple(n for n in sizes if n >= NORM_FUSED_FROM) or sizes[-1:]
    out.append(Kernel("normalization", f"layer norm of float32 [R, {NORM_ROW}] in one library "
                      "kernel", True, "float32", norms, layer_norm("float32"), row=NORM_ROW))
    return out


def kernels(plan: PatternPlan) -> list[Kernel]:
    """The kernels of ``plan``: each pattern's roof in float32, then the bfloat16 transpose and
    the variants beside the roofs where the plan has sizes for them."""
    sizes = plan.sizes
    out = [Kernel("transpose", "2-D swap", True, "float32", sizes, transpose_2d("float32")),
           Kernel("strided-reduction", f"sum over axis 0 of [R, {REDUCE_COLUMNS}]", True,
                  "float32", sizes, strided_reduction("float32")),
           Kernel("variadic-reduction", f"argmax over rows of [R, {REDUCE_COLUMNS}]", True,
                  "float32", sizes, argmax("float32")),
           # An integer argmax runs without a float's NaN tests: 4 to 5 times faster here.
           Kernel("variadic-reduction", f"argmax over rows of [R, {REDUCE_COLUMNS}]", True,
                  "int32", sizes, argmax("int32")),
           Kernel("gather", f"rows of {GATHER_ROW}", True, "float32", sizes,
                  gather_rows("float32"), row=GATHER_ROW),
           Kernel("scatter", f"scatter-add of rows of {GATHER_ROW}", True, "float32", sizes,
                  scatter_add("float32", GATHER_ROW), row=GATHER_ROW),
           Kernel("loop-dot", "a.T @ b.T", True, "float32", plan.dot_sides,
                  loop_dot("float32")),
           # A complex dot stays a plain dot too, each complex multiply-add four real ones:
           # about a sixth of the float32 loop dot's rate in XLA's flops here.
           Kernel("loop-dot", "a.T @ b.T", True, "complex64", plan.dot_sides,
                  loop_dot("complex64"))]
    accelerator = plan.backend != "cpu"
    if plan.sort_sizes and not accelerator:
        out.append(Kernel("sort", "stable argsort of a vector", True, "float32",
                          plan.sort_sizes, argsort("float32")))
    if accelerator:
        # A TPU sorts rows (a sampler's vocabulary, a mixture of experts' routing) at rates
        # that differ with their length: a roof per row length, each kernel taking the
        # nearest; and a gather of single elements runs far below one of rows there.
        out += [Kernel("sort", f"sort of rows of {row}", True, "float32", sizes[1::2] or sizes,
                       sort_rows("float32", row), row=row) for row in SORT_ROWS]
        out.append(Kernel("gather", "scattered elements", True, "float32",
                          sizes[1::2] or sizes, gather_elements("float32"), row=1))
        out += [Kernel("gather", f"rows of {GATHER_ROW} of a table of {_mib(table)}", True,
                       "float32", sizes, gather_table("float32", GATHER_ROW, table),
                       row=GATHER_ROW, table=table) for table in GATHER_TABLES]
    # Single elements from tables of a fixed size, on every backend: a CPU gathers them four
    # to six times slower per element than rows of 256 (1.5 to 2.9 G elements/s from 16 KiB
    # to 4 MiB on 2 cores, 1.4 from 16 MiB, 0.6 from 64 MiB, against about 10 for the rows),
    # and priced at the rows' roof a Bloom filter's and an audio front end's framing gathers
    # read 0.7 and 0.25 times their time. Quick mode: the larger size alone.
    element_sizes = GATHER_ELEMENT_SIZES if accelerator or plan.variant_sizes \
        else GATHER_ELEMENT_SIZES[-1:]
    out += [Kernel("gather", f"scattered elements of a table of {_mib(table)}", True,
                   "float32", element_sizes, gather_table("float32", 1, table),
                   row=1, table=table) for table in GATHER_ELEMENT_TABLES]
    out += [Kernel("top-k", f"top {TOP_K} of rows of {row}", True, "float32",
                   sizes[1::2] or sizes, top_k("float32", row), row=row) for row in TOP_K_ROWS]
    out.append(Kernel("fused-transpose", "2-D swap fused into a multiply (x.T * y)", True,
                      "float32", sizes[1::2] or sizes, fused_transpose("float32")))
    out.append(Kernel("broadcast-transpose", "2-D swap of a product by a constant ((x * 2).T)",
                      True, "float32", sizes[1::2] or sizes, broadcast_transpose("float32")))
    out.append(Kernel("interleaved-reduction",
                      "sum over axes (1, 3) of [R, {}, {}, {}]".format(*INTERLEAVED), True,
                      "float32", sizes[1::2] or sizes, interleaved_reduction("float32")))
    # Every size: an FFT's rate climbs steeply with its planes (114 GFLOP/s at [8, 64, 64],
    # 406 at [8, 512, 512] here), and every other size left a gap that mispriced the planes
    # between them.
    out.append(Kernel("fft", f"2-D FFT of [{FFT_BATCH}, n, n]", True, "complex64", sizes,
                      fft2()))
    if plan.bfloat16_sizes:
        out.append(Kernel("transpose", "2-D swap", True, "bfloat16", plan.bfloat16_sizes,
                          transpose_2d("bfloat16")))
    if plan.backend == "tpu":
        # The TPU compiler's form of a reduction broadcast back along its row (a
        # log-softmax's maximum): a reduce-window spanning the row, at a rate of its own.
        out += [Kernel("reduce-window-lane", f"log-softmax of rows of {row}", True, "float32",
                       sizes[1::2] or sizes, log_softmax("float32", row), row=row)
                for row in LANE_ROWS]
        # What a kernel moving data within the core's vector memory takes: the compiler
        # keeps a loop's carry there.
        out.append(Kernel("on-chip", f"a loop's carry scaled and shifted, {ON_CHIP_TRIPS} "
                          "trips", True, "float32", ON_CHIP_SIZES, on_chip("float32")))
        # An in-place update of part of each tile it crosses (a cache's one position laid
        # out minor-most, a loop's step along a tiled axis): a rate of tiles, not of bytes.
        out.append(Kernel("update-slice", f"a column of [R, {UPDATE_LANES}] updated in place",
                          True, "float32", sizes, update_column("float32")))
    if plan.variant_sizes:
        out += [Kernel("transpose", f"3-D [{THREE_D_BATCH}, m, m] -> (2, 0, 1)", False,
                       "float32", plan.variant_sizes, transpose_3d("float32"))]
        if not accelerator:
            out.append(Kernel("gather", "scattered elements", False, "float32",
                              plan.variant_sizes, gather_elements("float32")))
    if plan.variant_sizes or accelerator:
        out.append(Kernel("scatter", "scatter-add of scattered elements", True, "float32",
                          plan.variant_sizes or sizes[1::2] or sizes,
                          scatter_add("float32", 1), row=1))
    if not accelerator:
        out += cpu_kernels(plan)
    skipped = NOT_ON_BACKEND.get(plan.backend, {})
    return [k for k in out if k.pattern not in skipped]


def not_measured(plan: PatternPlan) -> list[dict[str, Any]]:
    """An unavailable rate entry, with its reason, for each pattern the plan's backend never
    runs (:data:`NOT_ON_BACKEND`)."""
    return [{"name": f"{pattern} (not on this backend)", "op": pattern, "dtype": "float32",
             "unit": f"{unit(pattern)}/s", "kind": "measured", "value": None,
             "available": False, "reason": reason, "elements": 1, "reps": 1,
             "ops_per_call": 1, "timing": None, "by_size": [], "roof": True}
            for pattern, reason in sorted(NOT_ON_BACKEND.get(plan.backend, {}).items())]
