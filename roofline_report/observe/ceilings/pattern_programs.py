"""The example program of each kernel pattern that runs below the streaming roofs, by size
(imports jax when used).

Each builder takes the kernel's dtype (an FFT's is fixed) and, where the pattern's rate depends
on it, a row (a top-k's or a sort's row length, a scatter's elements per index, a block
transpose's run, a real FFT's length, a narrow product's width), and returns a function from a
size (elements per call, a sort's keys, or a dot's side) to a :class:`Point`: the function to
jit and its arguments, the work per call in the pattern's unit, the bytes it reads and writes
and the operand shape shown.
The arrays hold random values of a fixed seed; a gather's and a scatter's indices are a fixed
random permutation.

Which of them each backend measures, at which sizes, and what each has shown:
:mod:`.pattern_plans`; timing them: :mod:`.patterns`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

REDUCE_COLUMNS = 1024  # columns of the strided reduction's [R, C] operand
GATHER_ROW = 256  # elements per row of the row gather and scatter
THREE_D_BATCH = 8  # leading axis of the 3-D transpose
TOP_K = 16  # the top-k roofs' k: the k largest of each row (of pattern_plans.TOP_K_ROWS)


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
    # The same call without the kernel measured, whose time is taken off the call's (the
    # kernel that computes its operand); None where the call is the kernel alone.
    baseline: Callable[..., Any] | None = None
    # Further arguments of the same shapes, which successive calls take in turn after
    # ``args``: operands whose turn's bytes outgrow the caches (each call's operand from main
    # memory), or operands of other values (a branch predictor meets each again only a turn
    # later); () where every call takes ``args``.
    rotate: tuple[tuple[Any, ...], ...] = ()


def _side(elements: int, batch: int = 1) -> int:
    return max(1, math.isqrt(elements // batch))


def _rng(seed: int = 0) -> Any:
    import numpy as np

    return np.random.default_rng(seed)


def _array(shape: Sequence[int], dtype: str, seed: int = 0) -> Any:
    import jax
    import jax.numpy as jnp
    import numpy as np

    if jnp.issubdtype(jnp.dtype(dtype), jnp.integer):  # distinct values, as hashes are
        return jax.device_put(jnp.asarray(_rng(seed).integers(0, 1 << 30, tuple(shape)),
                                          dtype=jnp.dtype(dtype)))
    data = _rng(seed).random(tuple(shape), dtype=np.float32)
    if jnp.issubdtype(jnp.dtype(dtype), jnp.complexfloating):
        data = data + 1j * _rng(seed).random(tuple(shape), dtype=np.float32)
    return jax.device_put(jnp.asarray(data, dtype=jnp.dtype(dtype)))


def _itemsize(dtype: str) -> int:
    import jax.numpy as jnp

    return int(jnp.dtype(dtype).itemsize)


def transpose_2d(dtype: str) -> Callable[[int], Point]:
    def build(elements: int) -> Point:
        n = _side(elements)
        x = _array((n, n), dtype)
        return Point(lambda a: a.T, (x,), n * n, 2 * n * n * _itemsize(dtype), (n, n))

    return build


FROM_MEMORY_BYTES = 128 << 20  # the operands a transpose from main memory cycles through


def transpose_from_memory(dtype: str) -> Callable[[int], Point]:
    """``x.T`` of square ``[n, n]``, each call on the next of operands of
    :data:`FROM_MEMORY_BYTES` in all, so that its operand comes from main memory (a
    key-value cache transposed once a step in a program whose data outgrow the caches). One
    batched transpose of them all is not this: its fresh output of that size faults its pages
    in on every call."""
    def build(elements: int) -> Point:
        n = _side(elements)
        count = max(2, FROM_MEMORY_BYTES // (n * n * _itemsize(dtype)))
        operands = [(_array((n, n), dtype),) for _ in range(count)]
        return Point(lambda a: a.T, operands[0], n * n, 2 * n * n * _itemsize(dtype), (n, n),
                     rotate=tuple(operands[1:]))

    return build


def fused_transpose(dtype: str) -> Callable[[int], Point]:
    """``x.T * y`` of square ``[n, n]``: XLA fuses the transposing copy into the multiply, one
    loop over the output that reads ``x`` across its rows."""
    def build(elements: int) -> Point:
        n = _side(elements)
        x, y = _array((n, n), dtype), _array((n, n), dtype)
        return Point(lambda a, b: a.T * b, (x, y), n * n, 3 * n * n * _itemsize(dtype), (n, n))

    return build


def broadcast_transpose(dtype: str) -> Callable[[int], Point]:
    """``(x * 2).T`` of square ``[n, n]``, n a power of two (at least 256): the transposing copy
    of a product by a broadcast constant, one loop fusion holding the broadcast, reading rows
    of a power of two bytes."""
    def build(elements: int) -> Point:
        n = 1 << max(8, _side(elements).bit_length() - 1)
        x = _array((n, n), dtype)
        return Point(lambda a: (a * 2).T, (x,), n * n, 2 * n * n * _itemsize(dtype), (n, n))

    return build


def broadcast_transpose_rows(dtype: str, rows: int) -> Callable[[int], Point]:
    """``(x * 2).T`` of ``[rows, n]``, n a power of two near ``elements / rows`` (at least
    256: source rows of a power of two bytes from 1 KiB, which share cache sets, as
    :func:`broadcast_transpose`'s do): the transposing copy of a product by a broadcast
    constant whose every output run reads ``rows`` source rows (a batch's features moved
    minor-most reads as many rows as the batch holds), by output elements."""
    def build(elements: int) -> Point:
        columns = 1 << max(8, max(1, elements // rows).bit_length() - 1)
        x = _array((rows, columns), dtype)
        count = rows * columns
        return Point(lambda a: (a * 2).T, (x,), count, 2 * count * _itemsize(dtype),
                     (rows, columns))

    return build


def transpose_3d(dtype: str) -> Callable[[int], Point]:
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


def strided_reduction(dtype: str) -> Callable[[int], Point]:
    import jax.numpy as jnp

    def build(elements: int) -> Point:
        x, rows, count = _reduced_rows(elements, dtype)
        return Point(lambda a: jnp.sum(a, axis=0), (x,), count,
                     (count + REDUCE_COLUMNS) * _itemsize(dtype), (rows, REDUCE_COLUMNS))

    return build


INTERLEAVED = (32, 32, 2)  # the interleaved reduction's [R, S, G, C]: sum over S and C


def interleaved_reduction(dtype: str) -> Callable[[int], Point]:
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


def release() -> None:
    """Drop the permutations made for the gathers and scatters: up to 256 MiB each in device
    memory, which the programs measured after the ceilings would otherwise run without."""
    _permutation.cache_clear()


CONVERT_ROW = 256  # the lone conversion's [R, 256]


def lone_convert(source: str, target: str) -> Callable[[int], Point]:
    """``x.astype(target)`` of ``source`` ``[R, CONVERT_ROW]`` alone in its kernel (XLA:CPU's
    ``wrapped_convert``), elements converted per call."""
    import jax.numpy as jnp

    def build(elements: int) -> Point:
        rows = max(1, elements // CONVERT_ROW)
        count = rows * CONVERT_ROW
        return Point(lambda a: a.astype(jnp.dtype(target)), (_array((rows, CONVERT_ROW), source),),
                     count, count * (_itemsize(source) + _itemsize(target)), (rows, CONVERT_ROW))

    return build


def lone_op(dtype: str) -> Callable[[int], Point]:
    """``a + b`` of ``dtype`` ``[R, CONVERT_ROW]`` alone in its kernel (XLA:CPU's
    ``wrapped_add``), elements of the sum per call."""

    def build(elements: int) -> Point:
        rows = max(1, elements // CONVERT_ROW)
        count = rows * CONVERT_ROW
        a, b = _array((rows, CONVERT_ROW), dtype), _array((rows, CONVERT_ROW), dtype)
        return Point(lambda x, y: x + y, (a, b), count, 3 * count * _itemsize(dtype),
                     (rows, CONVERT_ROW))

    return build


NORM_ROW = 64  # the fused layer norm's [R, 64]: a head's or a narrow model's features


def layer_norm(dtype: str) -> Callable[[int], Point]:
    """A layer norm of ``dtype`` ``[R, NORM_ROW]`` (mean, variance about it, normalized rows
    scaled and shifted), which XLA:CPU fuses whole into one library kernel at such short
    rows; elements normalized per call."""
    import jax
    import jax.numpy as jnp

    def norm(a: Any, scale: Any, shift: Any) -> Any:
        mean = jnp.mean(a, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(a - mean), axis=-1, keepdims=True)
        return (a - mean) * jax.lax.rsqrt(var + 1e-6) * scale + shift

    def build(elements: int) -> Point:
        rows = max(2, elements // NORM_ROW)
        count = rows * NORM_ROW
        return Point(norm, (_array((rows, NORM_ROW), dtype), _array((NORM_ROW,), dtype, 1),
                            _array((NORM_ROW,), dtype, 2)),
                     count, 2 * count * _itemsize(dtype), (rows, NORM_ROW))

    return build


def argmax(dtype: str) -> Callable[[int], Point]:
    import jax.numpy as jnp

    def build(elements: int) -> Point:
        x, rows, count = _reduced_rows(elements, dtype)
        return Point(lambda a: jnp.argmax(a, axis=-1), (x,), count,
                     count * _itemsize(dtype) + 4 * rows, (rows, REDUCE_COLUMNS))

    return build


def gather_elements(dtype: str) -> Callable[[int], Point]:
    import jax.numpy as jnp

    def build(elements: int) -> Point:
        x, idx = _array((elements,), dtype), _indices(elements)
        return Point(lambda a, i: jnp.take(a, i), (x, idx), elements,
                     elements * (2 * _itemsize(dtype) + 4), (elements,))

    return build


def gather_rows(dtype: str, row: int = GATHER_ROW) -> Callable[[int], Point]:
    """``jnp.take`` of rows of ``row`` elements from a table as large as its output, the rows
    in a fixed random order, by output elements."""
    import jax.numpy as jnp

    def build(elements: int) -> Point:
        rows = max(1, elements // row)
        x, idx = _array((rows, row), dtype), _indices(rows)
        count = rows * row
        return Point(lambda a, i: jnp.take(a, i, axis=0), (x, idx), count,
                     2 * count * _itemsize(dtype) + 4 * rows, (rows, row))

    return build


def _uniform(count: int, bound: int) -> Any:
    """``count`` fixed random indices into range(bound), int32, uniform and independent (a
    table smaller than the gather repeats rows, as an embedding's lookups do)."""
    import jax
    import numpy as np

    return jax.device_put(_rng().integers(0, bound, count).astype(np.int32))


def gather_table(dtype: str, row: int, table_bytes: int) -> Callable[[int], Point]:
    """``jnp.take`` of rows of ``row`` elements (1: single elements of a vector) from a table
    of a fixed ``table_bytes``, at uniform random indices, by output elements: what a gather
    from a small table costs (a position bias, an embedding of a short vocabulary), apart
    from the size of its output. Bytes: the output written, the rows read, the indices."""
    import jax.numpy as jnp

    item = _itemsize(dtype)
    rows_in = max(1, table_bytes // (item * row))

    def build(elements: int) -> Point:
        count = max(1, elements // row)
        shape = (rows_in, row) if row > 1 else (rows_in,)
        x, idx = _array(shape, dtype), _uniform(count, rows_in)
        return Point(lambda a, i: jnp.take(a, i, axis=0), (x, idx), count * row,
                     2 * count * row * item + 4 * count, shape)

    return build


def _scatter_adder(row: int) -> Callable[[Any, Any, Any], Any]:
    """``scatter(a, i, u)``: ``lax.scatter_add`` of ``row`` elements of ``u`` per index of
    ``i`` (1: single elements of a vector) into ``a`` along its first axis, the indices
    promised in bounds."""
    from jax import lax

    numbers = lax.ScatterDimensionNumbers(update_window_dims=(1,) if row > 1 else (),
                                          inserted_window_dims=(0,),
                                          scatter_dims_to_operand_dims=(0,))

    def scatter(a: Any, i: Any, u: Any) -> Any:
        return lax.scatter_add(a, i[:, None], u, numbers,
                               mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)

    return scatter


def scatter_add(dtype: str, row: int) -> Callable[[int], Point]:
    """Scatter-add of ``row`` elements per index (1: single elements of a vector) into a
    donated operand, one update per row of the operand, in a random order."""
    scatter = _scatter_adder(row)

    def build(elements: int) -> Point:
        rows = max(1, elements // row)
        shape = (rows, row) if row > 1 else (rows,)
        x, idx, u = _array(shape, dtype), _indices(rows), _array(shape, dtype)
        count = rows * row
        # Each update reads and writes one element of x and reads its value; one index a row.
        return Point(scatter, (x, idx, u), count, 3 * count * _itemsize(dtype) + 4 * rows,
                     shape, donate=True)

    return build


def scatter_table(dtype: str, table_bytes: int) -> Callable[[int], Point]:
    """Scatter-add of single elements into a donated vector of a fixed ``table_bytes``, at
    uniform random indices, by updates: what a scatter into a small table costs (a Bloom
    filter's bits, a histogram's bins), apart from the number of its updates. Bytes: each
    update reads and writes its element and reads its value and index."""
    scatter = _scatter_adder(1)
    item = _itemsize(dtype)
    slots = max(1, table_bytes // item)

    def build(elements: int) -> Point:
        x, idx, u = _array((slots,), dtype), _uniform(elements, slots), _array((elements,), dtype)
        return Point(scatter, (x, idx, u), elements, elements * (3 * item + 4), (slots,),
                     donate=True)

    return build


def argsort(dtype: str) -> Callable[[int], Point]:
    """The stable argsort of ``n`` keys in a random order: n ⌈log2 n⌉ comparisons."""
    import jax.numpy as jnp

    from roofline_report.hlo.kernel_patterns import comparisons

    def build(n: int) -> Point:
        keys = _array((n,), dtype)
        return Point(lambda a: jnp.argsort(a, stable=True), (keys,), comparisons(n, n),
                     n * (_itemsize(dtype) + 4), (n,))

    return build


TOP_K_DISTINCT = 1 << 18  # elements of distinct values a top-k's successive calls cycle through
TOP_K_TURNS = 256  # and at most this many operands


def top_k(dtype: str, row: int) -> Callable[[int], Point]:
    """The :data:`TOP_K` largest of each row of ``[R, row]`` (R rows of about the elements
    asked), searched elements per call.

    Successive calls take operands of different values in turn, :data:`TOP_K_DISTINCT`
    elements in all (1 MiB of float32: in the caches). XLA:CPU's ``TopK`` branches on every
    comparison, and a core's branch predictor learns the branches of an operand it meets
    again: on a 2-core CPU the top 16 of ``[16, 1024]`` took 1.6 ns an element on the same
    operand each call, and on up to four operands in turn, but 3.2 to 3.8 on eight or more,
    as on a sampler's new logits each step; at ``[256, 1024]`` 3.7 either way.
    """
    from jax import lax

    def build(elements: int) -> Point:
        rows = max(1, elements // row)
        count = rows * row
        turns = max(1, min(TOP_K_TURNS, -(-TOP_K_DISTINCT // count)))
        operands = [(_array((rows, row), dtype, seed=turn),) for turn in range(turns)]
        return Point(lambda a: lax.top_k(a, TOP_K), operands[0], count,
                     count * _itemsize(dtype) + rows * TOP_K * (_itemsize(dtype) + 4),
                     (rows, row), rotate=tuple(operands[1:]))

    return build


FFT_BATCH = 8  # 2-D FFTs per call of the FFT roof


def fft2(computed: bool = False) -> Callable[[int], Point]:
    """A 2-D FFT of ``complex64[FFT_BATCH, n, n]`` (n a power of two, about the elements
    asked in all), in XLA's flops (:func:`~roofline_report.hlo.kernel_cost.fft_flops`);
    ``computed``: of its operand scaled by a kernel before it, as :func:`rfft`'s."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from roofline_report.hlo.kernel_cost import fft_flops

    def build(elements: int) -> Point:
        n = 1 << max(2, _side(elements, FFT_BATCH).bit_length() - 1)
        real = _rng().random((FFT_BATCH, n, n), dtype=np.float32)
        data = jax.device_put(jnp.asarray(real, dtype=jnp.complex64))
        count = FFT_BATCH * n * n
        ops, nbytes = fft_flops(count, (n, n)), 2 * count * 8
        if computed:
            return Point(lambda a: jnp.fft.fft2(a * COMPUTED_OPERAND), (data,), ops, nbytes,
                         (FFT_BATCH, n, n), baseline=lambda a: a * COMPUTED_OPERAND)
        return Point(lambda a: jnp.fft.fft2(a), (data,), ops, nbytes, (FFT_BATCH, n, n))

    return build


def loop_dot(dtype: str) -> Callable[[int], Point]:
    import jax.numpy as jnp

    def build(n: int) -> Point:
        a, b = _array((n, n), dtype), _array((n, n), dtype)
        return Point(lambda x, y: jnp.einsum("km,nk->mn", x, y), (a, b), 2 * n**3,
                     3 * n * n * _itemsize(dtype), (n, n, n))

    return build


def power_side(elements: int) -> int:
    """The largest power of two whose square is at most ``elements`` (at least 2): the side of
    a matrix as programs size them. XLA:CPU's narrow products run up to three times faster
    on a side of 1,448 than on one of 1,024 or 4,096 (strides of a power of two bytes share
    cache sets), a rate programs of power-of-two widths do not meet."""
    return 1 << max(1, _side(elements).bit_length() - 1)


def vector_matrix(dtype: str, computed: bool = False) -> Callable[[int], Point]:
    """``v @ W`` of a square ``[n, n]`` matrix, n a power of two (one token through a
    projection: the vector contracted with the matrix's major axis), its matrix elements
    per call: a plain ``dot`` on XLA:CPU, outside its matmul library; ``computed``: of the
    matrix scaled by a kernel before it in the same call (a weight re-laid out, a cache just
    updated), that kernel's call alone the baseline (:data:`COMPUTED_OPERAND`)."""
    def build(elements: int) -> Point:
        n = power_side(elements)
        w, v = _array((n, n), dtype), _array((n,), dtype)
        nbytes = (n * n + 2 * n) * _itemsize(dtype)
        if computed:
            return Point(lambda m, x: x @ (m * COMPUTED_OPERAND), (w, v), n * n, nbytes,
                         (n, n), baseline=lambda m, x: m * COMPUTED_OPERAND)
        return Point(lambda m, x: x @ m, (w, v), n * n, nbytes, (n, n))

    return build


def narrow_product(dtype: str, width: int, *, left: bool = False) -> Callable[[int], Point]:
    """``x.T @ y`` of a square ``[n, n]`` matrix, n a power of two, and a ``[n, width]``
    narrow operand, both contracted along their major axis: the narrow one on the right (the
    weight gradient of a layer of ``width`` outputs) or, with ``left``, on the left (of
    ``width`` inputs: the result's rows are the narrow side); its matrix elements per call: a
    plain ``dot`` whose time goes with the matrix, not with its flops."""
    import jax

    def build(elements: int) -> Point:
        n = power_side(elements)
        matrix, narrow = _array((n, n), dtype), _array((n, width), dtype)
        operands = (narrow, matrix) if left else (matrix, narrow)
        dims = (((0,), (0,)), ((), ()))
        return Point(lambda a, b: jax.lax.dot_general(a, b, dims), operands, n * n,
                     (n * n + 2 * n * width) * _itemsize(dtype),
                     (n, width, n) if left else (n, n, width))

    return build


def transposed_dot(dtype: str) -> Callable[[int], Point]:
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


def block_transpose(dtype: str, run: int) -> Callable[[int], Point]:
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


def rfft(length: int, computed: bool = False) -> Callable[[int], Point]:
    """The real FFT of each row of a float32 ``[R, length]`` (frames of a signal; R rows of
    about the elements asked), in XLA's flops (:func:`~roofline_report.hlo.kernel_cost.
    fft_flops`); ``computed``: of its operand scaled by a kernel before it in the same call,
    that kernel's call alone the baseline (:data:`COMPUTED_OPERAND`)."""
    import jax.numpy as jnp

    from roofline_report.hlo.kernel_cost import fft_flops

    def build(elements: int) -> Point:
        rows = max(1, elements // length)
        x = _array((rows, length), "float32")
        count = rows * length
        ops, nbytes = fft_flops(count, (length,)), count * 4 + rows * (length // 2 + 1) * 8
        if computed:
            return Point(lambda a: jnp.fft.rfft(a * COMPUTED_OPERAND, axis=-1), (x,), ops,
                         nbytes, (rows, length), baseline=lambda a: a * COMPUTED_OPERAND)
        return Point(lambda a: jnp.fft.rfft(a, axis=-1), (x,), ops, nbytes, (rows, length))

    return build


# The factor a computed operand is scaled by before its FFT (any kernel computing it will do:
# on a 2-core CPU an FFT of rows of 400 after a multiply, an add or a reversal took 2.64 to
# 2.82 ms where the same FFT of an argument took 1.77).
COMPUTED_OPERAND = 1.5


def sort_rows(dtype: str, row: int) -> Callable[[int], Point]:
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


def on_chip(dtype: str) -> Callable[[int], Point]:
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


UPDATE_LANES = 128  # the update-slice roof's array: [R, 128], one tile of lanes wide
UPDATE_COLUMN = 77  # the column it updates: one lane of every tile


def update_column(dtype: str) -> Callable[[int], Point]:
    """``lax.dynamic_update_slice`` of a column ``[R, 1]`` into a donated ``[R, 128]`` (about
    the elements asked), by tiles crossed: on a TPU every tile of 8 x 128 of the array holds
    one element of the update, and is read and written whole
    (:func:`~roofline_report.hlo.tpu.updated_tiles`); R / 8 tiles a call."""
    from jax import lax

    def build(elements: int) -> Point:
        rows = max(8, elements // UPDATE_LANES // 8 * 8)
        x, column = _array((rows, UPDATE_LANES), dtype), _array((rows, 1), dtype)
        tiles = rows // 8
        return Point(lambda c, u: lax.dynamic_update_slice(c, u, (0, UPDATE_COLUMN)),
                     (x, column), tiles, 2 * rows * UPDATE_LANES * _itemsize(dtype),
                     (rows, UPDATE_LANES), donate=True)

    return build


LANE_BLOCK = 512  # the middle axis of the lane roofs' [B, 512, row] (a [4, 512, 8192] had it)


def log_softmax(dtype: str, row: int) -> Callable[[int], Point]:
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


POOL_IMAGE = (32, 32, 32)  # a window roof's image: [B, 32, 32, 32] (height, width, channels)
POOL_ARRAYS = 5  # a max pool's gradient's window: the values and one index array a dimension


def _pool_images(elements: int) -> tuple[int, ...]:
    """``[B, 16, 16, 32]`` of about the elements asked (at least one image)."""
    return (max(1, elements // math.prod(POOL_IMAGE)), *POOL_IMAGE)


def max_pool(dtype: str) -> Callable[[int], Point]:
    """The 3 x 3 max pool of stride 2 with SAME padding (ResNet's stem pool) of
    ``[B, 16, 16, 32]`` (about the elements asked): a ``reduce-window`` XLA:CPU runs in its
    own loop (a 2 x 2 pool of stride 2 without padding goes to its library); its window
    elements that land on the input per call
    (:func:`~roofline_report.hlo.kernel_patterns.visited`)."""
    from jax import lax

    from roofline_report.hlo.windows import visited

    window, strides = (1, 3, 3, 1), (1, 2, 2, 1)

    def build(elements: int) -> Point:
        shape = _pool_images(elements)
        pads = tuple(lax.padtype_to_pads(shape, window, strides, "SAME"))
        out = [(n + lo + hi - w) // s + 1
               for n, (lo, hi), w, s in zip(shape, pads, window, strides, strict=True)]
        ops = visited(shape, out, [(w, s, lo, 1, 1) for w, s, (lo, _) in
                                   zip(window, strides, pads, strict=True)])
        x = _array(shape, dtype)
        return Point(lambda a: lax.reduce_window(a, -math.inf, lax.max, window, strides, pads),
                     (x,), ops, (math.prod(shape) + math.prod(out)) * _itemsize(dtype), shape)

    return build


def _keep_larger(lhs: tuple[Any, ...], rhs: tuple[Any, ...]) -> tuple[Any, ...]:
    """XLA:CPU's chooser of a max pool's gradient: of two (value, indices...) the left where
    its value is at least the right's and its index set (-1: the initial value), else the
    right."""
    import jax.numpy as jnp

    take = ((lhs[0] >= rhs[0]) & (lhs[1] != -1)) | (rhs[1] == -1)
    return tuple(jnp.where(take, a, b) for a, b in zip(lhs, rhs, strict=True))


def pool_argmax(dtype: str) -> Callable[[int], Point]:
    """The 2 x 2 window of stride 2 over ``[B, 16, 16, 32]`` values and an int32 iota of
    their indices along each of their 4 dimensions, keeping the largest value and its
    indices: the reduce-window of :data:`POOL_ARRAYS` arrays XLA:CPU expands a max pool's
    gradient (a ``select-and-scatter``) into, before the scatter, here alone; its window
    elements times its arrays per call."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    window = (1, 2, 2, 1)

    def build(elements: int) -> Point:
        shape = _pool_images(elements)
        x = _array(shape, dtype)
        indices = tuple(jax.device_put(lax.broadcasted_iota(jnp.int32, shape, d))
                        for d in range(len(shape)))
        starts = (jnp.asarray(-jnp.inf, x.dtype),) + (jnp.asarray(-1, jnp.int32),) * len(shape)
        outputs = math.prod(shape) // 4

        def argmax_pool(a: Any, *index: Any) -> Any:
            return lax.reduce_window((a, *index), starts, _keep_larger, window, window,
                                     "VALID")

        arrays = 1 + len(indices)
        return Point(argmax_pool, (x, *indices), outputs * 4 * arrays,
                     (math.prod(shape) + outputs) * 4 * arrays, shape)

    return build


PREFIX_WINDOW = 16  # the sum-window roof's window: XLA:CPU's step of a cumulative sum
PREFIX_ROW = 512  # its rows: [R, 32, 16], a cumulative sum along rows of 512


def prefix_sums(dtype: str) -> Callable[[int], Point]:
    """The sums of each element and the 15 before it within its block of 16 along rows of
    512 (``[R, 32, 16]``, about the elements asked): the window XLA:CPU rewrites a
    cumulative sum's scan into (``window={size=1x1x16 pad=0_0x0_0x15_0}``, then sums of those
    blocks' totals), here alone; its window elements that land on the input per call,
    136 for each 16."""
    from jax import lax

    from roofline_report.hlo.windows import visited

    width = PREFIX_WINDOW
    window, strides, pads = (1, 1, width), (1, 1, 1), ((0, 0), (0, 0), (width - 1, 0))

    def build(elements: int) -> Point:
        shape = (max(1, elements // PREFIX_ROW), PREFIX_ROW // width, width)
        ops = visited(shape, shape, [(w, 1, lo, 1, 1) for w, (lo, _) in
                                     zip(window, pads, strict=True)])
        x = _array(shape, dtype)
        return Point(lambda a: lax.reduce_window(a, 0.0, lax.add, window, strides, pads),
                     (x,), ops, 2 * math.prod(shape) * _itemsize(dtype), shape)

    return build
