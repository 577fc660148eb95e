"""Rates of the kernel patterns that run below the streaming roofs, by size (imports jax when run).

A kernel that moves data in an order other than the memory's (a transpose, a gather, a scatter,
a reduction along a non-minor axis) or a dot the compiler emits as a loop of its own instead of
handing it to its matmul library runs far below what its bytes at the streaming bandwidth, or its
flops at the matmul roof, would allow. Each pattern here gets a rate of its own, measured by size
as the row reduction's is (:mod:`roofline_report.observe.ceilings.rates`): one jitted call per
enqueued call, dispatch included in each point's time (the analysis takes the dispatch floor
off), the fastest sample of the better of two rounds a whole pass apart.

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
  element, not a roof: its reads miss the caches once the vector outgrows them, while a
  gather of single elements from a small table (a Bloom filter's) ran nearer the rows' rate.
  Indices are a fixed random permutation, as many as rows (or elements).
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
  roofs' sizes (every other one).
* ``fused-transpose`` (output elements per second): ``x.T * y`` of square float32 ``[n, n]``,
  the 2-D swap fused into a multiply (a gradient fused with the transpose of its input), at
  half the roofs' sizes (every other one).
* ``broadcast-transpose`` (output elements per second): ``(x * 2).T`` of square float32
  ``[n, n]``, n a power of two: a transposing copy fused with a broadcast (here of a constant)
  reading rows of a power of two bytes, which XLA:CPU runs several times slower than the plain
  swap (0.48 against 1.9 G elements/s at ``[1024, 1024]`` on a 2-core CPU; at n = 1000 both
  ran at about 2), at half the roofs' sizes (every other one).
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
  is wider than a narrow product's side.
* ``transposed-dot`` (FLOP/s): ``x.T @ y`` of square operands, both contracted along their
  major axis (a dense layer's weight gradient), at the loop dot's sides past a narrow
  product's.
* ``block-transpose`` (elements per second): a cache's layout change ``[1, S, 8, run] ->
  [1, 8, S, run]``, whole runs of 64 elements (a head's features) and of 1,024 (a weight's
  row) moved.
* ``fft`` (FLOP/s, XLA's count) in float32: the real FFT of each row of ``[R, n]`` for rows
  of 256, 512 and 2,048 (frames of a signal); the complex 2-D roof stays the complex FFT's.
* ``scatter``: the scatter-add of rows of 16 and of 64 (an embedding's gradient of narrow
  rows), beside the rows of 256 and the scattered elements.

Every point's compiled program is checked to hold its pattern (the kernel inventory of its
optimized HLO, and the inventory's own ``pattern`` label): a size whose program
does not is left out with the reason, and an entry none of whose sizes has the pattern is
recorded unavailable (``available: false``): on a backend that hands every dot to a library there
is no loop-dot to measure.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from roofline_report.analysis.patterns import unit
from roofline_report.analysis.stats import Timing
from roofline_report.errors import reason
from roofline_report.observe import timer as timing

Progress = Callable[[str], None]
REDUCE_COLUMNS = 1024  # columns of the strided reduction's [R, C] operand
GATHER_ROW = 256  # elements per row of the row gather and scatter
THREE_D_BATCH = 8  # leading axis of the 3-D transpose
TOP_K, TOP_K_ROWS = 16, (1024, 4096)  # the top-k roofs: the k largest of rows of these
ROUNDS = 2
MIN_ROUND_SAMPLES = 2


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
class Point:
    """One size of one kernel, ready to time: the jitted function's arguments, the work per call
    in the entry's unit, the bytes it reads and writes, the operand shape shown, and whether
    argument 0 is donated (then each call's output is the next call's argument 0)."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    ops: int
    nbytes: int
    shape: tuple[int, ...]
    donate: bool = False


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

    @property
    def name(self) -> str:
        return f"{self.pattern} {self.dtype} ({self.variant})"


def _side(elements: int, batch: int = 1) -> int:
    return max(1, math.isqrt(elements // batch))


def _rng() -> Any:
    import numpy as np

    return np.random.default_rng(0)


def _array(shape: Sequence[int], dtype: str) -> Any:
    import jax
    import jax.numpy as jnp
    import numpy as np

    if jnp.issubdtype(jnp.dtype(dtype), jnp.integer):  # distinct values, as hashes are
        return jax.device_put(jnp.asarray(_rng().integers(0, 1 << 30, tuple(shape)),
                                          dtype=jnp.dtype(dtype)))
    data = _rng().random(tuple(shape), dtype=np.float32)
    if jnp.issubdtype(jnp.dtype(dtype), jnp.complexfloating):
        data = data + 1j * _rng().random(tuple(shape), dtype=np.float32)
    return jax.device_put(jnp.asarray(data, dtype=jnp.dtype(dtype)))


def _itemsize(dtype: str) -> int:
    import jax.numpy as jnp

    return int(jnp.dtype(dtype).itemsize)


def _transpose_2d(dtype: str) -> Callable[[int], Point]:
    def build(elements: int) -> Point:
        n = _side(elements)
        x = _array((n, n), dtype)
        return Point(lambda a: a.T, (x,), n * n, 2 * n * n * _itemsize(dtype), (n, n))

    return build


def _fused_transpose(dtype: str) -> Callable[[int], Point]:
    """``x.T * y`` of square ``[n, n]``: XLA fuses the transposing copy into the multiply, one
    loop over the output that reads ``x`` across its rows."""
    def build(elements: int) -> Point:
        n = _side(elements)
        x, y = _array((n, n), dtype), _array((n, n), dtype)
        return Point(lambda a, b: a.T * b, (x, y), n * n, 3 * n * n * _itemsize(dtype), (n, n))

    return build


def _broadcast_transpose(dtype: str) -> Callable[[int], Point]:
    """``(x * 2).T`` of square ``[n, n]``, n a power of two (at least 256): the transposing copy
    of a product by a broadcast constant, one loop fusion holding the broadcast, reading rows
    of a power of two bytes."""
    def build(elements: int) -> Point:
        n = 1 << max(8, _side(elements).bit_length() - 1)
        x = _array((n, n), dtype)
        return Point(lambda a: (a * 2).T, (x,), n * n, 2 * n * n * _itemsize(dtype), (n, n))

    return build


def _transpose_3d(dtype: str) -> Callable[[int], Point]:
    import jax.numpy as jnp

    def build(elements: int) -> Point:
        m = _side(elements, THREE_D_BATCH)
        x = _array((THREE_D_BATCH, m, m), dtype)
        count = THREE_D_BATCH * m * m
        return Point(lambda a: jnp.transpose(a, (2, 0, 1)), (x,), count,
                     2 * count * _itemsize(dtype), (THREE_D_BATCH, m, m))

    return build


def _reduced_rows(elements: int, dtype: str) -> tuple[Any, int, int]:
    """The operand of a reduction kernel: ``[R, REDUCE_COLUMNS]`` with about ``elements``
    elements (at least two rows), its rows and its elements."""
    rows = max(2, elements // REDUCE_COLUMNS)
    return _array((rows, REDUCE_COLUMNS), dtype), rows, rows * REDUCE_COLUMNS


def _strided_reduction(dtype: str) -> Callable[[int], Point]:
    import jax.numpy as jnp

    def build(elements: int) -> Point:
        x, rows, count = _reduced_rows(elements, dtype)
        return Point(lambda a: jnp.sum(a, axis=0), (x,), count,
                     (count + REDUCE_COLUMNS) * _itemsize(dtype), (rows, REDUCE_COLUMNS))

    return build


INTERLEAVED = (32, 32, 2)  # the interleaved reduction's [R, S, G, C]: sum over S and C


def _interleaved_reduction(dtype: str) -> Callable[[int], Point]:
    """The sum over axes (1, 3) of ``[R, 32, 32, 2]`` (a group norm's statistics over the
    positions and the channels of each of 32 groups, two channels a group): minor runs of 2
    elements, 32 groups kept between the reduced axes; its work is its runs, R × 32 × 32."""
    import jax.numpy as jnp

    spatial, groups, channels = INTERLEAVED

    def build(elements: int) -> Point:
        rows = max(1, elements // (spatial * groups * channels))
        x = _array((rows, spatial, groups, channels), dtype)
        count = rows * spatial * groups * channels
        return Point(lambda a: jnp.sum(a, axis=(1, 3)), (x,), count // channels,
                     (count + rows * groups) * _itemsize(dtype),
                     (rows, spatial, groups, channels))

    return build


@functools.lru_cache(maxsize=8)
def _permutation(count: int) -> Any:
    """A fixed random permutation of range(count) as int32, made once per count (the gather
    and the scatter of a size share it; never donated)."""
    import jax
    import numpy as np

    return jax.device_put(_rng().permutation(count).astype(np.int32))


def _indices(count: int) -> Any:
    return _permutation(count)


def _argmax(dtype: str) -> Callable[[int], Point]:
    import jax.numpy as jnp

    def build(elements: int) -> Point:
        x, rows, count = _reduced_rows(elements, dtype)
        return Point(lambda a: jnp.argmax(a, axis=-1), (x,), count,
                     count * _itemsize(dtype) + 4 * rows, (rows, REDUCE_COLUMNS))

    return build


def _gather_elements(dtype: str) -> Callable[[int], Point]:
    import jax.numpy as jnp

    def build(elements: int) -> Point:
        x, idx = _array((elements,), dtype), _indices(elements)
        return Point(lambda a, i: jnp.take(a, i), (x, idx), elements,
                     elements * (2 * _itemsize(dtype) + 4), (elements,))

    return build


def _gather_rows(dtype: str) -> Callable[[int], Point]:
    import jax.numpy as jnp

    def build(elements: int) -> Point:
        rows = max(1, elements // GATHER_ROW)
        x, idx = _array((rows, GATHER_ROW), dtype), _indices(rows)
        count = rows * GATHER_ROW
        return Point(lambda a, i: jnp.take(a, i, axis=0), (x, idx), count,
                     2 * count * _itemsize(dtype) + 4 * rows, (rows, GATHER_ROW))

    return build


def _scatter_add(dtype: str, row: int) -> Callable[[int], Point]:
    """Scatter-add of ``row`` elements per index (1: single elements of a vector) into a
    donated operand, one update per row of the operand, in a random order."""
    from jax import lax

    numbers = lax.ScatterDimensionNumbers(update_window_dims=(1,) if row > 1 else (),
                                          inserted_window_dims=(0,),
                                          scatter_dims_to_operand_dims=(0,))

    def scatter(a: Any, i: Any, u: Any) -> Any:
        return lax.scatter_add(a, i[:, None], u, numbers,
                               mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)

    def build(elements: int) -> Point:
        rows = max(1, elements // row)
        shape = (rows, row) if row > 1 else (rows,)
        x, idx, u = _array(shape, dtype), _indices(rows), _array(shape, dtype)
        count = rows * row
        # Each update reads and writes one element of x and reads its value; one index a row.
        return Point(scatter, (x, idx, u), count, 3 * count * _itemsize(dtype) + 4 * rows,
                     shape, donate=True)

    return build


def _argsort(dtype: str) -> Callable[[int], Point]:
    """The stable argsort of ``n`` keys in a random order: n ⌈log2 n⌉ comparisons."""
    import jax.numpy as jnp

    from roofline_report.hlo.kernel_patterns import comparisons

    def build(n: int) -> Point:
        keys = _array((n,), dtype)
        return Point(lambda a: jnp.argsort(a, stable=True), (keys,), comparisons(n, n),
                     n * (_itemsize(dtype) + 4), (n,))

    return build


def _top_k(dtype: str, row: int) -> Callable[[int], Point]:
    """The :data:`TOP_K` largest of each row of ``[R, row]`` (R rows of about the elements
    asked), searched elements per call."""
    from jax import lax

    def build(elements: int) -> Point:
        rows = max(1, elements // row)
        x = _array((rows, row), dtype)
        count = rows * row
        return Point(lambda a: lax.top_k(a, TOP_K), (x,), count,
                     count * _itemsize(dtype) + rows * TOP_K * (_itemsize(dtype) + 4),
                     (rows, row))

    return build


FFT_BATCH = 8  # 2-D FFTs per call of the FFT roof


def _fft2() -> Callable[[int], Point]:
    """A 2-D FFT of ``complex64[FFT_BATCH, n, n]`` (n a power of two, about the elements
    asked in all), in XLA's flops (:func:`~roofline_report.hlo.kernel_cost.fft_flops`)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from roofline_report.hlo.kernel_cost import fft_flops

    def build(elements: int) -> Point:
        n = 1 << max(2, _side(elements, FFT_BATCH).bit_length() - 1)
        real = _rng().random((FFT_BATCH, n, n), dtype=np.float32)
        data = jax.device_put(jnp.asarray(real, dtype=jnp.complex64))
        count = FFT_BATCH * n * n
        return Point(lambda a: jnp.fft.fft2(a), (data,), fft_flops(count, (n, n)),
                     2 * count * 8, (FFT_BATCH, n, n))

    return build


def _loop_dot(dtype: str) -> Callable[[int], Point]:
    import jax.numpy as jnp

    def build(n: int) -> Point:
        a, b = _array((n, n), dtype), _array((n, n), dtype)
        return Point(lambda x, y: jnp.einsum("km,nk->mn", x, y), (a, b), 2 * n**3,
                     3 * n * n * _itemsize(dtype), (n, n, n))

    return build


def _power_side(elements: int) -> int:
    """The largest power of two whose square is at most ``elements`` (at least 2): the side of
    a matrix as programs size them. XLA:CPU's narrow products run up to three times faster
    on a side of 1,448 than on one of 1,024 or 4,096 (strides of a power of two bytes share
    cache sets), a rate programs of power-of-two widths do not meet."""
    return 1 << max(1, _side(elements).bit_length() - 1)


def _vector_matrix(dtype: str) -> Callable[[int], Point]:
    """``v @ W`` of a square ``[n, n]`` matrix, n a power of two (one token through a
    projection: the vector contracted with the matrix's major axis), its matrix elements
    per call: a plain ``dot`` on XLA:CPU, outside its matmul library."""
    def build(elements: int) -> Point:
        n = _power_side(elements)
        w, v = _array((n, n), dtype), _array((n,), dtype)
        return Point(lambda m, x: x @ m, (w, v), n * n, (n * n + 2 * n) * _itemsize(dtype),
                     (n, n))

    return build


def _narrow_product(dtype: str, width: int) -> Callable[[int], Point]:
    """``x.T @ y`` of a square ``[n, n]`` ``x``, n a power of two, and a ``[n, width]``
    ``y`` (the weight gradient of a layer of ``width`` outputs), its matrix elements (those
    of ``x``) per call: a plain ``dot`` whose time goes with ``x``, not with its flops."""
    import jax

    def build(elements: int) -> Point:
        n = _power_side(elements)
        x, y = _array((n, n), dtype), _array((n, width), dtype)
        dims = (((0,), (0,)), ((), ()))
        return Point(lambda a, b: jax.lax.dot_general(a, b, dims), (x, y), n * n,
                     (n * n + 2 * n * width) * _itemsize(dtype), (n, n, width))

    return build


def _transposed_dot(dtype: str) -> Callable[[int], Point]:
    """``x.T @ y`` of square ``[n, n]`` operands (a dense layer's weight gradient: both
    contracted along their major axis), 2n³ FLOP per call."""
    import jax

    def build(n: int) -> Point:
        a, b = _array((n, n), dtype), _array((n, n), dtype)
        dims = (((0,), (0,)), ((), ()))
        return Point(lambda x, y: jax.lax.dot_general(x, y, dims), (a, b), 2 * n**3,
                     3 * n * n * _itemsize(dtype), (n, n, n))

    return build


CACHE_HEADS = 8  # the key-value cache layout of the block-transpose roof: [1, S, 8, run]


def _block_transpose(dtype: str, run: int) -> Callable[[int], Point]:
    """A cache's layout change ``[1, S, H, run] -> [1, H, S, run]`` (whole runs of ``run``
    elements moved; :data:`CACHE_HEADS` heads), its elements per call."""
    import jax.numpy as jnp

    def build(elements: int) -> Point:
        seq = max(2, elements // (CACHE_HEADS * run))
        x = _array((1, seq, CACHE_HEADS, run), dtype)
        count = seq * CACHE_HEADS * run
        return Point(lambda a: jnp.transpose(a, (0, 2, 1, 3)), (x,), count,
                     2 * count * _itemsize(dtype), (1, seq, CACHE_HEADS, run))

    return build


def _rfft(length: int) -> Callable[[int], Point]:
    """The real FFT of each row of a float32 ``[R, length]`` (frames of a signal; R rows of
    about the elements asked), in XLA's flops (:func:`~roofline_report.hlo.kernel_cost.
    fft_flops`)."""
    import jax.numpy as jnp

    from roofline_report.hlo.kernel_cost import fft_flops

    def build(elements: int) -> Point:
        rows = max(1, elements // length)
        x = _array((rows, length), "float32")
        count = rows * length
        return Point(lambda a: jnp.fft.rfft(a, axis=-1), (x,), fft_flops(count, (length,)),
                     count * 4 + rows * (length // 2 + 1) * 8, (rows, length))

    return build


MAT_VEC_WIDTHS = (1, 16)  # the matrix-vector roofs: a vector, and a layer of 16 outputs
BLOCK_RUNS = (64, 1024)  # the block-transpose roofs' runs: a head's features, a weight's row
RFFT_LENGTHS = (256, 512, 2048)  # the real FFT roofs' row lengths
SCATTER_ROWS = (16, 64)  # a CPU's further row scatter roofs (beside GATHER_ROW's)


def cpu_kernels(plan: PatternPlan) -> list[Kernel]:
    """The kinds a CPU runs at rates of their own that an accelerator's plan leaves out: a
    dot with a narrow side by its width (``mat-vec``: matrix elements per second), ``x.T @
    y`` (``transposed-dot``), a cache's block transpose by its run, a real FFT by its
    length and a row scatter by its width; each a roof, the kernel taking the nearest row."""
    sizes = plan.sizes
    half = sizes[1::2] or sizes
    # One size more, twice the largest, outside quick mode: a 16 MiB operand, whose kernel's
    # reads and writes no longer fit a 32 MiB last-level cache (a real FFT of rows of 400
    # ran at 2.3 G elements/s at 2 M elements here and at 1.6 at 3.2 M).
    large = (*sizes, 2 * sizes[-1]) if plan.variant_sizes else sizes
    from roofline_report.hlo.dot_patterns import NARROW_DOT

    # A matrix wider than a narrow product's side: a smaller one makes a small product.
    matrices = tuple(n for n in large if _power_side(n) > NARROW_DOT) or large[-1:]
    out = [Kernel("mat-vec", "v @ W" if width == 1 else f"x.T @ y, y of {width} columns",
                  True, "float32", matrices,
                  _vector_matrix("float32") if width == 1
                  else _narrow_product("float32", width), row=width)
           for width in MAT_VEC_WIDTHS]
    # Sides past a narrow product's width: a smaller one is a matrix-vector product.
    sides = tuple(n for n in plan.dot_sides if n > NARROW_DOT) or plan.dot_sides[-1:]
    out.append(Kernel("transposed-dot", "x.T @ y", True, "float32", sides,
                      _transposed_dot("float32")))
    out += [Kernel("block-transpose", f"[1, S, {CACHE_HEADS}, {run}] -> (0, 2, 1, 3)", True,
                   "float32", large, _block_transpose("float32", run), row=run)
            for run in BLOCK_RUNS]
    out += [Kernel("fft", f"rfft of [R, {n}]", True, "float32", large, _rfft(n), row=n)
            for n in RFFT_LENGTHS]
    out += [Kernel("scatter", f"scatter-add of rows of {row}", True, "float32", half,
                   _scatter_add("float32", row), row=row) for row in SCATTER_ROWS]
    return out


def kernels(plan: PatternPlan) -> list[Kernel]:
    """The kernels of ``plan``: each pattern's roof in float32, then the bfloat16 transpose and
    the variants beside the roofs where the plan has sizes for them."""
    sizes = plan.sizes
    out = [Kernel("transpose", "2-D swap", True, "float32", sizes, _transpose_2d("float32")),
           Kernel("strided-reduction", f"sum over axis 0 of [R, {REDUCE_COLUMNS}]", True,
                  "float32", sizes, _strided_reduction("float32")),
           Kernel("variadic-reduction", f"argmax over rows of [R, {REDUCE_COLUMNS}]", True,
                  "float32", sizes, _argmax("float32")),
           # An integer argmax runs without a float's NaN tests: 4 to 5 times faster here.
           Kernel("variadic-reduction", f"argmax over rows of [R, {REDUCE_COLUMNS}]", True,
                  "int32", sizes, _argmax("int32")),
           Kernel("gather", f"rows of {GATHER_ROW}", True, "float32", sizes,
                  _gather_rows("float32"), row=GATHER_ROW),
           Kernel("scatter", f"scatter-add of rows of {GATHER_ROW}", True, "float32", sizes,
                  _scatter_add("float32", GATHER_ROW), row=GATHER_ROW),
           Kernel("loop-dot", "a.T @ b.T", True, "float32", plan.dot_sides,
                  _loop_dot("float32")),
           # A complex dot stays a plain dot too, each complex multiply-add four real ones:
           # about a sixth of the float32 loop dot's rate in XLA's flops here.
           Kernel("loop-dot", "a.T @ b.T", True, "complex64", plan.dot_sides,
                  _loop_dot("complex64"))]
    accelerator = plan.backend != "cpu"
    if plan.sort_sizes and not accelerator:
        out.append(Kernel("sort", "stable argsort of a vector", True, "float32",
                          plan.sort_sizes, _argsort("float32")))
    if accelerator:
        # A TPU sorts rows (a sampler's vocabulary, a mixture of experts' routing) at rates
        # that differ with their length: a roof per row length, each kernel taking the
        # nearest; and a gather of single elements runs far below one of rows there.
        out += [Kernel("sort", f"sort of rows of {row}", True, "float32", sizes[1::2] or sizes,
                       _sort_rows("float32", row), row=row) for row in SORT_ROWS]
        out.append(Kernel("gather", "scattered elements", True, "float32",
                          sizes[1::2] or sizes, _gather_elements("float32"), row=1))
    out += [Kernel("top-k", f"top {TOP_K} of rows of {row}", True, "float32",
                   sizes[1::2] or sizes, _top_k("float32", row), row=row) for row in TOP_K_ROWS]
    out.append(Kernel("fused-transpose", "2-D swap fused into a multiply (x.T * y)", True,
                      "float32", sizes[1::2] or sizes, _fused_transpose("float32")))
    out.append(Kernel("broadcast-transpose", "2-D swap of a product by a constant ((x * 2).T)",
                      True, "float32", sizes[1::2] or sizes, _broadcast_transpose("float32")))
    out.append(Kernel("interleaved-reduction",
                      "sum over axes (1, 3) of [R, {}, {}, {}]".format(*INTERLEAVED), True,
                      "float32", sizes[1::2] or sizes, _interleaved_reduction("float32")))
    # Every size: an FFT's rate climbs steeply with its planes (114 GFLOP/s at [8, 64, 64],
    # 406 at [8, 512, 512] here), and every other size left a gap that mispriced the planes
    # between them.
    out.append(Kernel("fft", f"2-D FFT of [{FFT_BATCH}, n, n]", True, "complex64", sizes,
                      _fft2()))
    if plan.bfloat16_sizes:
        out.append(Kernel("transpose", "2-D swap", True, "bfloat16", plan.bfloat16_sizes,
                          _transpose_2d("bfloat16")))
    if plan.backend == "tpu":
        # The TPU compiler's form of a reduction broadcast back along its row (a
        # log-softmax's maximum): a reduce-window spanning the row, at a rate of its own.
        out += [Kernel("reduce-window-lane", f"log-softmax of rows of {row}", True, "float32",
                       sizes[1::2] or sizes, _log_softmax("float32", row), row=row)
                for row in LANE_ROWS]
        # What a kernel moving data within the core's vector memory takes: the compiler
        # keeps a loop's carry there.
        out.append(Kernel("on-chip", f"a loop's carry scaled and shifted, {ON_CHIP_TRIPS} "
                          "trips", True, "float32", ON_CHIP_SIZES, _on_chip("float32")))
    if plan.variant_sizes:
        out += [Kernel("transpose", f"3-D [{THREE_D_BATCH}, m, m] -> (2, 0, 1)", False,
                       "float32", plan.variant_sizes, _transpose_3d("float32"))]
        if not accelerator:
            out.append(Kernel("gather", "scattered elements", False, "float32",
                              plan.variant_sizes, _gather_elements("float32")))
    if plan.variant_sizes or accelerator:
        out.append(Kernel("scatter", "scatter-add of scattered elements", True, "float32",
                          plan.variant_sizes or sizes[1::2] or sizes,
                          _scatter_add("float32", 1), row=1))
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


LANE_ROWS = (2048, 8192)  # row lengths of the TPU's reduce-window-lane roofs
SORT_ROWS = (1024, 32768)  # row lengths of an accelerator's sort roofs


def _sort_rows(dtype: str, row: int) -> Callable[[int], Point]:
    """``jnp.sort`` of each row of ``[R, row]`` (R rows of about the elements asked), its
    comparisons per call (:func:`~roofline_report.hlo.kernel_patterns.comparisons`)."""
    import jax.numpy as jnp

    from roofline_report.hlo.kernel_patterns import comparisons

    def build(elements: int) -> Point:
        rows = max(1, elements // row)
        x = _array((rows, row), dtype)
        return Point(lambda a: jnp.sort(a, axis=-1), (x,), comparisons(rows * row, row),
                     2 * rows * row * _itemsize(dtype), (rows, row))

    return build
ON_CHIP_TRIPS = 32  # trips of the on-chip rate's loop
# Carries of the on-chip rate's loop (float32 elements: 4, 16 and 32 MiB; a TPU v5e core's
# vector memory holds 128 MiB, and a training step's loop kept a 32 MiB carry there).
ON_CHIP_SIZES = (1 << 20, 1 << 22, 1 << 23)


def _on_chip(dtype: str) -> Callable[[int], Point]:
    """``ON_CHIP_TRIPS`` trips of ``c * a + b`` over a carry ``[R, 1024]`` of about the
    elements asked: each trip reads and writes the carry where the compiler keeps it (a TPU:
    its vector memory; checked by the inventory: no HBM bytes in the loop's kernel), the bytes
    moved on chip per call the point's size."""
    import jax.numpy as jnp
    from jax import lax

    def build(elements: int) -> Point:
        rows = max(8, elements // 1024)
        x = _array((rows, 1024), dtype)
        one = jnp.asarray(1.0001, x.dtype)
        half = jnp.asarray(0.5, x.dtype)

        def loop(c: Any) -> Any:
            return lax.fori_loop(0, ON_CHIP_TRIPS, lambda _i, v: v * one + half, c)

        moved = 2 * ON_CHIP_TRIPS * rows * 1024 * _itemsize(dtype)
        return Point(loop, (x,), moved, moved, (rows, 1024))

    return build


LANE_BLOCK = 512  # the middle axis of the lane roofs' [B, 512, row] (a [4, 512, 8192] had it)


def _log_softmax(dtype: str, row: int) -> Callable[[int], Point]:
    """``jax.nn.log_softmax`` over the last axis of ``[B, 512, row]``, elements per call: on a
    TPU v5e its row maximum, broadcast back, became a reduce-window spanning the row for a
    float32 ``[4, 512, 8192]`` (and not for a two-dimensional ``[1024, 8192]``)."""
    import jax

    def build(elements: int) -> Point:
        batch = max(1, elements // (LANE_BLOCK * row))
        x = _array((batch, LANE_BLOCK, row), dtype)
        count = batch * LANE_BLOCK * row
        return Point(lambda a: jax.nn.log_softmax(a, axis=-1), (x,), count,
                     2 * count * _itemsize(dtype), (batch, LANE_BLOCK, row))

    return build


# ------------------------------------------------------------------------------------ checks


def _library(kernel: Mapping[str, Any]) -> bool:
    kind = str(kernel.get("kind") or "")
    return kind.startswith("__") or kernel.get("opcode") == "custom-call"


def _minor_reduced(module: Any) -> bool | None:
    """Whether every reduce of ``module`` (an :class:`~roofline_report.hlo.ir.Module`) reduces
    its operand's minor axis; None when it has no reduce."""
    found = []
    for _comp, instr in module.instructions():
        if instr.opcode != "reduce" or not instr.operand_shapes:
            continue
        operand = instr.operand_shapes[0]
        array = operand.array if operand is not None else None
        dims = {int(d) for d in str(instr.attributes.get("dimensions", "")).strip("{}")
                .split(",") if d.strip()}
        if array is None or not array.dims:
            continue
        found.append(array.minor_to_major()[0] in dims)
    return all(found) if found else None


def pattern_kernel(text: str, pattern: str) -> tuple[str | None, str]:
    """The kernel of the optimized HLO ``text`` that has ``pattern`` (None when none has it) and
    a line naming the program's kernels (each with its kind): the check every measured point
    passes. Pure."""
    from roofline_report.hlo.ir import parse_module
    from roofline_report.hlo.kernels import kernel_inventory

    module = parse_module(text)
    found = kernel_inventory(module)["kernels"]
    described = ", ".join(f"{k['name']} ({k.get('kind') or k.get('opcode')})" for k in found)

    @functools.cache
    def minor_reduced() -> bool | None:  # a scan of the whole module: at most once
        return _minor_reduced(module)

    def has(k: Mapping[str, Any]) -> bool:
        ops = k.get("ops") or {}
        if pattern == "transpose":  # a TPU changes layouts with copies
            return bool(ops.get("transpose") or ops.get("copy")) and not _library(k)
        if pattern == "reduce-window-lane":
            return bool(ops.get("reduce-window"))
        if pattern in ("loop-dot", "mat-vec", "transposed-dot"):
            return bool(ops.get("dot")) and not _library(k)
        if pattern == "strided-reduction":
            return bool(ops.get("reduce")) and minor_reduced() is False
        if pattern in ("variadic-reduction", "interleaved-reduction"):
            return bool(ops.get("reduce"))
        if pattern in ("fused-transpose", "broadcast-transpose", "block-transpose"):
            return bool(ops.get("transpose") or ops.get("copy")) and not _library(k)
        if pattern == "top-k":
            return k.get("opcode") == "custom-call" or bool(ops.get("custom-call"))
        return bool(ops.get(pattern))  # gather, scatter, sort

    if pattern == "on-chip":  # no pattern of the inventory: a loop's kernel moving no HBM byte
        for k in found:
            chip = int(k.get("on_chip_bytes_read") or 0) + int(k.get("on_chip_bytes_written")
                                                              or 0)
            if int(k.get("trips") or 1) > 1 and chip > 0 \
                    and int(k["bytes_read"]) + int(k["bytes_written"]) == 0:
                return str(k["name"]), described
        return None, described
    for k in found:  # the inventory labels every kernel with its pattern (None for none)
        if k["pattern"] == pattern and has(k):
            return str(k["name"]), described
    return None, described


# --------------------------------------------------------------------------------- measuring


@dataclass(slots=True)
class _Ready:
    """A compiled point kept between rounds, with its best time so far."""

    point: Point
    compiled: Any
    kernel: str
    args: list[Any]  # the current arguments: a donated argument 0 is the last call's output
    best: Timing | None = None


def _runner(ready: _Ready) -> timing.Runner:
    compiled, args = ready.compiled, ready.args
    if ready.point.donate:
        def run_donated(n: int) -> None:
            value = args[0]
            for _ in range(n):
                value = compiled(value, *args[1:])
            args[0] = value
            timing.block(value)

        return run_donated

    def run(n: int) -> None:
        out = None
        for _ in range(n):
            out = compiled(*args)  # each output dropped as the next is made
        timing.block(out)

    return run


def _prepare_point(kernel: Kernel, size: int) -> _Ready | str:
    """Build and compile ``kernel`` at ``size`` and check its pattern: the point ready to time,
    or why it cannot be."""
    import jax

    try:
        point = kernel.build(size)
        compiled = jax.jit(point.fn, donate_argnums=(0,) if point.donate else ()) \
            .lower(*point.args).compile()
        name, described = pattern_kernel(str(compiled.as_text()), kernel.pattern)
    except Exception as exc:
        return f"{kernel.name} at {size} failed: {reason(exc)}"
    if name is None:
        return (f"the compiled {kernel.name} of shape {list(point.shape)} has no "
                f"{kernel.pattern} kernel (it runs {described})")
    return _Ready(point, compiled, name, list(point.args))


COMPILE_THREADS = 4  # points compiled at once (compiling releases the GIL); before any timing


def _prepare(chosen: Sequence[Kernel]) -> list[tuple[dict[int, _Ready], list[str]]]:
    """Every size of every kernel built, compiled and checked, on a few threads (nothing is
    timed meanwhile): per kernel, the sizes ready to time and the reasons of those left out."""
    jobs = [(k, size) for k in chosen for size in k.sizes]
    workers = max(1, min(COMPILE_THREADS, os.cpu_count() or 1))
    with ThreadPoolExecutor(workers) as pool:
        done = list(pool.map(lambda job: _prepare_point(*job), jobs))
    out: list[tuple[dict[int, _Ready], list[str]]] = [({}, []) for _ in chosen]
    for (kernel, size), result in zip(jobs, done, strict=True):
        ready, why = out[chosen.index(kernel)]
        if isinstance(result, str):
            why.append(result)
        else:
            ready[size] = result
    return out


def _time_round(kernel: Kernel, ready: dict[int, _Ready], samples: int, min_sample_s: float,
                why: list[str]) -> None:
    for size, r in list(ready.items()):
        try:
            measured = timing.measure(_runner(r), samples=samples, min_sample_seconds=min_sample_s,
                                      method="jax: one call of the pattern per enqueued call, "
                                             "n calls enqueued, block once")
        except Exception as exc:
            why.append(f"{kernel.name} at {size} failed: {reason(exc)}")
            del ready[size]
            continue
        if r.best is None or measured.per_call.min < r.best.per_call.min:
            r.best = measured


def _entry(kernel: Kernel, ready: Mapping[int, _Ready], why: Sequence[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": kernel.name, "op": kernel.pattern, "dtype": kernel.dtype,
        "unit": f"{unit(kernel.pattern)}/s", "kind": "measured", "value": None,
        "available": False, "reason": "; ".join(why), "elements": 1, "reps": 1,
        "ops_per_call": 1, "timing": None, "by_size": [], "variant": kernel.variant,
        "roof": kernel.roof, **({"row": kernel.row} if kernel.row else {}),
    }
    best: tuple[float, _Ready] | None = None
    for size in sorted(ready):
        r = ready[size]
        if r.best is None:
            continue
        seconds = r.best.per_call.min
        value = r.point.ops / seconds
        entry["by_size"].append({"elements": r.point.ops, "bytes": r.point.nbytes,
                                 "seconds": seconds, "value": value,
                                 "shape": list(r.point.shape), "kernel": r.kernel})
        if best is None or value > best[0]:
            best = (value, r)
    if best is not None:
        value, r = best
        assert r.best is not None
        entry.update(value=value, available=True, elements=r.point.ops,
                     ops_per_call=r.point.ops, timing=r.best.to_json())
    elif not entry["reason"]:
        entry["reason"] = f"{kernel.name}: no size measured"
    return entry


def measure_patterns(plan: PatternPlan, say: Progress | None = None) -> list[dict[str, Any]]:
    """One rate entry per kernel of :func:`kernels` (``RateCeiling`` records with ``by_size``
    points); never raises for a measurement failure (the entry is unavailable with its
    reason). Every size is compiled and checked once (a few at a time), then timed in
    :data:`ROUNDS` rounds, a pass over all kernels apart, with the plan's samples split between
    them; each size keeps its fastest round."""
    tell = say or (lambda _m: None)
    chosen = kernels(plan)
    absent = not_measured(plan)
    prepared = _prepare(chosen)
    per_round = max(MIN_ROUND_SAMPLES, -(-plan.samples // ROUNDS))
    for _ in range(ROUNDS):
        for kernel, (ready, why) in zip(chosen, prepared, strict=True):
            _time_round(kernel, ready, per_round, plan.min_sample_s, why)
    entries = [_entry(k, ready, why) for k, (ready, why) in zip(chosen, prepared, strict=True)]
    entries += absent
    for e in entries:
        if e["available"]:
            unit = {"FLOP/s": "GFLOP/s", "comparisons/s": "G comparisons/s",
                    "runs/s": "G runs/s", "bytes/s": "GB/s"}.get(e["unit"], "G elements/s")
            tell(f"{e['name']}: up to {e['value'] / 1e9:.3g} {unit}")
        else:
            tell(f"{e['name']}: not available ({e['reason']})")
    return entries
