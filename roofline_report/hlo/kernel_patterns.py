"""Kernel patterns (:func:`kernel_pattern`): the kinds of kernel measured with roofs of their
own. A kernel takes the first that applies, in this order, with ``pattern_size`` per launch and
``pattern_detail``:

* ``loop-dot``: a dot computed by XLA's own loop emitter, an HLO ``dot`` kernel or a fusion
  holding one, not handed to a library (no custom call, no ``kCustom`` fusion, no backend fusion
  kind such as ``__ynn_fusion``, oneDNN or a Triton gemm); size: its flops. On XLA:CPU
  (jax 0.10.2) these stay plain ``dot`` kernels: f32 matrix products below 8 x 8 (4 x 4),
  integer dots (s32 x s32, s8 x s8 -> s8, u8), complex dots, matrix-vector products (a
  1024 x 1024 matrix by a vector) and products whose left operand is contracted along its
  major axis (``a.T @ b``); f32, f64 and f16 products from 8 x 8 up, batched products and
  s8 x s8 -> s32 go to ``__ynn_fusion``, inside loops too.
  Two kinds of dot outside the library run at rates of their own on a CPU (never given on a
  TPU, whose compiler runs every product on its matrix unit):

  * ``mat-vec``: a loop dot one of whose operands is a vector or a few rows (at most
    :data:`NARROW_DOT` elements besides its batch and contracted dimensions: one token through
    a projection, a query against a cache of keys, the weight gradient of a layer of ten
    classes) and the other a matrix (more than that); size: the elements of the wide
    operand; row: the narrow operand's width.
    Its time goes with the matrix it reads, not with its flops: on a 2-core CPU ``v @ W`` of a
    float32 ``[2048, 2048]`` took 270 µs (15 G matrix elements/s, 31 GFLOP/s), and
    ``x.T @ y`` of a ``[512, 1024]`` by 8, 16 or 32 columns about 1.1 ms each, 0.5 G matrix
    elements/s whatever the width (one column: a vector, 30 times faster).
  * ``vec-mat``: a ``mat-vec`` whose narrow operand, of more than one row, is the left one
    (``x.T @ y`` with ``x`` of a few columns: the result's rows are the narrow side): XLA:CPU
    walks the wide operand along its rows, several times faster than the mirrored product
    (a GRU's weight gradient, ``f32[384,16] x f32[384,128]``, ran at 2.4 G matrix
    elements/s where ``x.T @ y`` by 16 columns of ``y`` runs at about 0.5); size and row as
    a ``mat-vec``'s.
  * ``transposed-dot``: a float loop dot whose left operand is contracted along its major
    axis and whose right operand is contracted along its major axis too (``x.T @ y``: the
    weight gradient of a dense layer, ``lhs_contracting_dims={0}, rhs_contracting_dims={0}``);
    size: its flops. XLA:CPU hands it to Eigen with the left operand transposed, faster than
    the loop dot's ``a.T @ b.T`` (``rhs_contracting_dims={1}``: both transposed): 158 against
    123 GFLOP/s for a 512-cubed product here.
* ``fft``: a kernel holding an FFT; size: its flops by XLA's rule (8 per operand element per
  floor(log2 n) of each transformed length); row: the length of its last transformed axis.
  XLA:CPU runs it through its FFT library (DUCC) at a rate of its own: a 2-D FFT of
  c64[8, 128, 256] ran at about twice the multiply-add rate those flops would give; a real
  FFT (``RFFT``, float operands) of rows at a rate set by their length (here 0.9 G elements/s
  for rows of 256, 2.1 for rows of 512, 1.5 for rows of 2048 at 2 M elements).
* ``sort``: a kernel holding a sort; size: its comparisons, the elements of its first operand
  times ⌈log2⌉ of the length of the dimension it sorts (XLA:CPU runs a comparator call per
  comparison: a stable argsort of 2048 int32 keys took about 0.5 ms on a 2-core CPU, 40 M
  comparisons/s, 0.3 µs at the multiply-add rate its flops would give).
* ``scatter``: a kernel holding a scatter; size: the update elements scattered; row: the
  elements it writes in one run per index (on a CPU its update window's contiguous run in
  its table's layout, as a gather's: :mod:`roofline_report.hlo.index_runs`).
* ``variadic-reduction``: a kernel holding a reduce of several operands (an argmax or argmin
  carries each value's index beside it); size: the elements of its first operand. XLA:CPU
  emits it as a scalar loop of its own, not through its library: an argmax over rows of 1024
  float32 ran at about 0.5 G elements/s on a 2-core CPU, against 7 to 14 G for a sum.
* ``gather``: a kernel holding a gather; size: the elements gathered (its result); row: the
  elements it reads in one run per index (on a CPU its slice's contiguous run, so that
  eight elements of a column are eight single elements: :mod:`roofline_report.hlo.index_runs`).
* ``strided-reduction``: a kernel holding a reduce whose reduced dimensions leave out the
  minor-most dimension (of size above 1) of its operand's layout, as ``x.sum(axis=0)`` of a
  row-major matrix; size: the operand elements read. A library fusion counts too (XLA:CPU hands
  that reduce to ``__ynn_fusion``).
* ``interleaved-reduction``: a kernel holding a reduce that reduces its operand's minor-most
  dimension but keeps a dimension lying between two it reduces, in the layout's order (size-1
  dimensions aside), as a group norm's statistics over (height, width, channels of a group) of
  ``[N, H, W, G, C/G]``; size: its contiguous runs, the operand's elements over the run of
  reduced dimensions at the minor end. XLA:CPU walks it one run at a time, and its time goes
  with the runs: on a 2-core CPU, the sum over (1, 3) of ``[4, n, 32, m]`` took about 4.4 ns a
  run for runs of 2, 8 and 16 elements (0.47, 1.8 and 3.6 G elements/s), against 7 to 14 G
  elements/s for a sum over rows.
* ``top-k``: a kernel holding a ``TopK`` custom call (``__gpu$TopK`` on a GPU; XLA's partial
  sort of the k largest along the last dimension, ``jax.lax.top_k``); size: the elements of
  its operand searched.
The four transposing patterns below are found by :mod:`~roofline_report.hlo.transpose_patterns`.

* ``transpose``: a copy or transpose kernel, or a loop fusion whose root (bitcasts aside) is a
  copy or transpose, that puts its data in another order in memory: the source's axes (size-1
  axes aside) come out of the root's layout in another order, followed through bitcasts,
  reshapes (which may split an axis), broadcasts, elementwise ops and slices (one of a
  projection's query, key and value cut from their joint product, as Swin's window attention
  swaps its heads forward); size: the output elements. A copy that only moves a size-1 axis is
  no transpose.
* ``block-transpose`` (not on a TPU): a ``transpose`` or ``fused-transpose`` that keeps the
  source's minor-most axis minor-most, so that it moves whole runs of contiguous elements
  (a key-value cache re-laid out between ``[B, S, H, D]`` and ``[B, H, S, D]``: runs of D, a
  weight re-laid out as ``[2, D, F] -> [D, 2, F]``: runs of F); row: the run, in elements.
  XLA:CPU copies such runs several times faster than it swaps a minor axis: the cache layout
  change of a float32 ``[1, 4096, 8, 64]`` ran at 7 to 10 G elements/s here, its 2-D swap
  of as many elements at 1.4 to 1.7.
* ``fused-transpose``: a loop fusion holding a copy or transpose whose result feeds other work
  (its root is not the copy: a gradient fused with the transpose of its input), where some
  source, followed alone to the root, comes out of the root's layout in another order; size:
  the root's elements. XLA:CPU emits it as one loop over the output that reads the source
  across its rows. A ``transpose`` loop fusion (its root the copy) that also holds arithmetic
  with a broadcast operand (a bias, a scale) and whose rows do not alias (below) is one too:
  detail "... with a broadcast". On a 2-core CPU ``(x * 2).T`` and ``(x + b).T`` of float32
  ``[n, m]`` ran at 1.5 to 3.5 G elements/s for ``[1000, 1000]``, ``[362, 362]``,
  ``[8192, 64]``, ``[16384, 80]`` and ``[2048, 96]``, about half the plain swap's 4 to 5.5,
  where ``x.T * y`` of the same shapes ran at 1.2 to 3.2 (a Perceiver's bias-added keys and an
  embedding's scaled gradient swapped from ``[8192, 64]`` and ``[32, 128, 64]``: 2.6 to 2.8
  G elements/s in their programs).
* ``broadcast-transpose``: a ``transpose`` or ``fused-transpose`` loop fusion that also holds a
  broadcast (a scale, a bias, a softmax's normaliser, a constant) and reads a matrix whose rows
  are a power of two bytes long, 1 KiB or more, or walks its source in steps of such a power
  of two (the full reversal of a float32 ``[256, 16, 128]``: 8 KiB); size: as the
  transpose's; row: the source rows each run of its output reads (n for ``(x * 2).T`` of
  ``[n, n]``, 128 for the swap of the last two axes of ``[2, 1, 128, 4096]``). XLA:CPU then
  walks the source across its rows in a plain loop, every read in the same few cache sets,
  and its time goes with those rows more than with its size (that swap of 1 M elements ran
  at 0.78 to 0.84 G elements/s where the square of 1 M ran at 0.42 to 0.54): on a
  2-core CPU, ``(x * 2).T`` of a float32 ``[n, n]`` ran at 1.0, 0.74, 0.48 and 0.31 G
  elements/s for n = 256, 512, 1024 and 2048, against 3.4, 3.4, 1.9 and 0.87 for ``x.T``
  (rows that do not alias: a ``fused-transpose``, above). ``(x + y).T`` and ``(x * x).T`` (no
  broadcast) ran as fast as ``x.T`` at n = 1024. An XLA:CPU fact: never given on a TPU.
* ``reduce-window-lane`` (a TPU's only): a kernel holding a ``reduce-window`` whose window
  spans its operand's whole row from every position (:func:`~roofline_report.hlo.tpu.
  lane_reduction`: the TPU compiler's form of a reduction broadcast back along its row, a
  log-softmax's maximum); size: the elements of its operand; row: the row's length. On a
  TPU v5e the log-softmax of a float32 ``[4, 512, 8192]`` spent 5.8 ms in that fusion, 0.34
  ns an element, where a row sum of 64 M floats streamed at 0.005 ns an element.
* ``normalization`` (not on a TPU): a library fusion (XLA:CPU's ``__ynn_fusion``) holding a
  reduce of rows whose operand is computed from another reduce's result in the same kernel: a
  layer norm's mean, its variance about that mean and the normalized rows in one library
  kernel, over rows of fewer than 256 elements (a softmax's maximum and its sum of
  exponentials about it too); size: the elements normalized; row: the elements of a row.
  Rows of 1,024 fused whole (a softmax or a layer norm of ``[4096, 1024]``) ran at the rates
  their row reduction and streaming terms give, 2 to 2.9 times faster than this roof. On a
  2-core CPU such a kernel ran at 0.25 to 0.38 ns an element (rows of 64 and 128, 256 K to
  1 M elements), where its terms at the row reduction's and the streaming roofs priced it at
  about 0.05: the held-out S5, Perceiver and wav2vec 2.0 layer norms ran 3.5 to 6.6 times
  their predictions.
* ``lone-convert`` (not on a TPU): a kernel of XLA's loop emitter that only converts its
  operand's element type (XLA:CPU's ``wrapped_convert``); size: the elements converted. On a
  2-core CPU such a kernel converted 4.5 to 6.5 G elements/s, either way between float32 and
  bfloat16, where the same conversion fused with a multiply ran at 10 to 17.
* ``lone-op`` (a CPU's): a kernel of XLA's loop emitter that holds one arithmetic operation
  and nothing else (bitcasts aside: XLA:CPU's ``wrapped_add``, ``wrapped_multiply``, ...);
  size: the elements of its result. On a 2-core CPU such kernels ran at 5 to 6 G elements/s
  over 1 M elements whatever the operation (an add, a product, a maximum, a negation), where
  the same add fused with a product by a scalar ran at 9.6 and a negation fused so at 16;
  inside a loop, an accumulator's add of ``[96, 128]`` took 3.6 µs a trip on one thread, the
  same add with the accumulator scaled first 0.8 µs.
* ``reduce-window`` and ``sum-window`` (not on a TPU): a kernel of XLA's own loop emitter
  (not a library fusion: XLA:CPU hands a 2 x 2 max or average pool of stride 2 without
  padding to ``__ynn_fusion``) holding a ``reduce-window`` that is not a whole-row one: a
  ``sum-window`` where every such window's reducer only adds (:func:`sums`: a cumulative
  sum, which XLA:CPU rewrites into windows of 16 and sums of their totals, an average pool's
  gradient, a reduction's partial sums), else a ``reduce-window`` (a maximum or a minimum:
  a max pool, a cumulative maximum, and a max pool's gradient, a ``select-and-scatter``
  that XLA:CPU expands into a window of the values beside one iota of indices per
  dimension, keeping the larger value and its indices, then a scatter); size: the window
  elements it visits that land on its operand (padding and dilation holes left out,
  :func:`window_elements`) times the arrays it reduces together; a ``reduce-window``'s row:
  those arrays (1 for a plain window). XLA:CPU runs either as a scalar loop over each
  output's window, far below the streaming roofs; on a 2-core CPU the 3 x 3 max pool of
  stride 2 of a float32 ``[64, 32, 32, 32]`` (ResNet's stem pool) took 0.24 to 0.29 ns a
  window element (its bytes stream in a tenth of that time), a sum's windows of 16 along
  rows 0.09 to 0.15 ns, and a max pool's gradient's 2 x 2 window 0.5 to 0.66 ns an array's
  element
  with 5 arrays (the values and the indices of 4 dimensions: 2.7 to 3.2 ns an element),
  0.56 to 0.78 with 6 (an Equinox pool's 5 dimensions) and 0.59 with 4 or 7: from 4 arrays
  up its time goes with them, while 2 ran at 0.32 and 3 at 0.98. A 2 x 2 window of stride 1
  padded at one end ran ten times faster than that (0.03 ns an element): its roof holds it
  several times slow. Tiny windows (a mean's partial sums, a few hundred elements) cost less
  than their launch at these rates.

* ``update-slice`` (a TPU's only): a kernel whose in-place ``dynamic-update-slice`` writes
  part of the tiles of an array stored in tiles (:func:`~roofline_report.hlo.tpu.
  updated_tiles`: a cache's one position, a loop's step along a second-minor or minor-most
  axis); size: the tiles it crosses. On a TPU v5e such an update took 15 to 20 ns a tile,
  in HBM or in vector memory alike, whatever the tile's bytes: what it costs goes with the
  tiles, not with the update's elements (a column of 8,192 floats, 17.6 µs) nor with the
  tiles' bytes at the HBM's rate.

A TPU's kernels are read with the fusions nested inside them (its compiler wraps a scatter in
a fusion inside the kernel's), and their matrix products include the convolutions that
compute one (:func:`~roofline_report.hlo.tpu.product_convolution`).

Pure: no jax.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from roofline_report.hlo.dot_patterns import is_float_dot, is_transposed_dot, narrow_side
from roofline_report.hlo.index_runs import gather_row, scatter_row
from roofline_report.hlo.ir import Instruction, Module
from roofline_report.hlo.kernel_bytes import elements_of, scatter_parts
from roofline_report.hlo.kernel_cost import (
    dot_flops,
    fft_instruction_flops,
    ints_in,
)
from roofline_report.hlo.pattern import Pattern, is_library, plain
from roofline_report.hlo.tpu import CPU, TPU, lane_reduction, updated_tiles
from roofline_report.hlo.transpose_patterns import ARITHMETIC, transpose_pattern
from roofline_report.hlo.windows import sums, window_arrays, window_elements

TOP_K_TARGET = "TopK"  # the custom call XLA emits for jax.lax.top_k
# XLA's GPU backend names its own: an H200's top-k roof (jax 0.11.2) ran custom-call.1
# (__gpu$TopK) and found no top-k kernel under the CPU's name.
TOP_K_TARGETS = (TOP_K_TARGET, "__gpu$TopK")


def _fused_instructions(instr: Instruction, module: Module, nested: bool = False
                        ) -> list[Instruction]:
    """The instructions a kernel runs: a fusion's computation's (with ``nested``, a TPU's, those
    of the fusions inside it too: its compiler wraps a scatter in a fusion inside the kernel's,
    and relayouts of a product's operands in fusions of their own), else the kernel itself."""
    if instr.opcode != "fusion":
        return [instr]
    out: list[Instruction] = []
    seen: set[str] = set()
    pending = list(instr.called("calls"))
    while pending:
        name = pending.pop(0)
        comp = module.computations.get(name)
        if comp is None or name in seen:
            continue
        seen.add(name)
        out.extend(comp.instructions)
        if nested:
            pending.extend(c for i in comp.instructions if i.opcode == "fusion"
                           for c in i.called("calls"))
    return out


def _strided(reduce: Instruction) -> bool:
    operand = reduce.operand_shapes[0] if reduce.operand_shapes else None
    if operand is None or operand.array is None:
        return False
    array = operand.array
    reduced = set(ints_in(reduce.attributes.get("dimensions")))
    minor = next((d for d in array.minor_to_major() if array.dims[d] != 1), None)
    return minor is not None and bool(reduced) and minor not in reduced


def interleaved_runs(reduce: Instruction) -> int | None:
    """The length of the contiguous runs a reduce reads, where it reduces its operand's
    minor-most dimension and keeps one lying between two it reduces (layout order, size-1
    dimensions aside): the product of the reduced dimensions at the minor end. None for any
    other reduce (over the minor dimensions alone, or a strided one)."""
    operand = reduce.operand_shapes[0] if reduce.operand_shapes else None
    if operand is None or operand.array is None:
        return None
    array = operand.array
    reduced = set(ints_in(reduce.attributes.get("dimensions")))
    order = [d for d in array.minor_to_major() if array.dims[d] != 1]
    if not order or order[0] not in reduced:
        return None
    run, i = 1, 0
    while i < len(order) and order[i] in reduced:
        run *= array.dims[order[i]]
        i += 1
    if not any(d in reduced for d in order[i:]):
        return None  # the reduced dimensions are the minor ones: a row reduction
    return run


# An atom: (source parameter, source axis, size, stride): ``size`` consecutive steps of
# ``stride`` elements along the source axis (a whole axis has stride 1; a bitcast or reshape
# that splits an axis cuts it into atoms of larger strides, major part first). A value's
# logical dimension is a tuple of atoms (major to minor); None when the walk cannot follow it.
def comparisons(elements: int, length: int) -> int:
    """The comparisons of sorting ``elements`` keys in runs of ``length``: ⌈log2 length⌉ per
    key (0 for runs of one key). The one rule: the inventory's sort size and the sort ceiling's
    work per call."""
    return elements * math.ceil(math.log2(length)) if length > 1 else 0


def sort_row(sort: Instruction) -> int:
    """The length of the dimension a sort sorts (its runs of keys); 0 where not known."""
    operand = sort.operand_shapes[0] if sort.operand_shapes else None
    if operand is None or operand.array is None or not operand.array.dims:
        return 0
    dims = ints_in(sort.attributes.get("dimensions"))
    axis = dims[0] if dims and dims[0] < len(operand.array.dims) else len(operand.array.dims) - 1
    return int(operand.array.dims[axis])


def sort_comparisons(sort: Instruction) -> int:
    """A sort's comparisons (:func:`comparisons`): its first operand's elements, in runs of
    the length of the dimension it sorts."""
    operand = sort.operand_shapes[0] if sort.operand_shapes else None
    if operand is None or operand.array is None or not operand.array.dims:
        return 0
    dims = ints_in(sort.attributes.get("dimensions"))
    axis = dims[0] if dims and dims[0] < len(operand.array.dims) else len(operand.array.dims) - 1
    return comparisons(operand.array.elements, operand.array.dims[axis])


def _top_k(inside: Sequence[Instruction]) -> Pattern | None:
    calls = [i for i in inside if i.opcode == "custom-call"
             and i.custom_call_target in TOP_K_TARGETS]
    if not calls:
        return None
    size = sum(elements_of(i.operand_shapes[0]) for i in calls if i.operand_shapes)
    first = calls[0]
    result = first.shape.elements[0] if first.shape.is_tuple and first.shape.elements \
        else first.shape
    operand = first.operand_shapes[0] if first.operand_shapes else None
    row = operand.array.dims[-1] if operand is not None and operand.array is not None \
        and operand.array.dims else 0
    return Pattern("top-k", size, f"{plain(result)} of {plain(operand)}"
                   if operand is not None else None, row)


def kernel_pattern(instr: Instruction, module: Module, backend: str | None = None) -> Pattern:
    """The kernel's pattern (the first that applies, in this order): ``loop-dot`` (or
    ``mat-vec``, ``transposed-dot``: not on a TPU), ``fft``, ``sort``,
    ``top-k``, ``scatter``, ``gather``, ``reduce-window-lane`` and ``update-slice`` (a TPU's
    only), ``lone-convert``, ``lone-op`` (a CPU's), ``sum-window`` or ``reduce-window`` (not on
    a TPU),
    ``variadic-reduction``,
    ``strided-reduction``,
    ``interleaved-reduction``, ``transpose`` or ``fused-transpose`` (``broadcast-transpose``,
    ``block-transpose``: not on a TPU); see the module docstring.
    ``backend``: the backend the module was compiled for."""
    tpu = backend == TPU
    inside = _fused_instructions(instr, module, tpu)
    dots = [i for i in inside if i.opcode == "dot"]
    if dots and not is_library(instr):
        return _loop_dot(dots, tpu)
    ffts = [i for i in inside if i.opcode == "fft"]
    if ffts:
        first = ffts[0]
        lengths = tuple(ints_in(first.attributes.get("fft_length")))
        return Pattern("fft", sum(fft_instruction_flops(i) or 0 for i in ffts),
                       f"{first.attributes.get('fft_type', 'FFT')} of "
                       f"{plain(first.operand_shapes[0] if first.operand_shapes else None)}, "
                       f"lengths {lengths}", lengths[-1] if lengths else 0)
    sorts = [i for i in inside if i.opcode == "sort"]
    if sorts:
        first = sorts[0]
        operands = len(first.operands)
        keys = first.operand_shapes[0] if first.operand_shapes else None
        return Pattern("sort", sum(sort_comparisons(i) for i in sorts),
                       f"sort of {plain(keys)} along "
                       f"{tuple(ints_in(first.attributes.get('dimensions')))}"
                       + (f", {operands} operands" if operands > 1 else ""), sort_row(first))
    top_k = _top_k(inside)
    if top_k is not None:
        return top_k
    scatters = [i for i in inside if i.opcode == "scatter"]
    if scatters:
        size = sum(elements_of(s) for i in scatters for s in scatter_parts(i)[1])
        first = scatters[0]
        updates = scatter_parts(first)[1]
        table = first.operand_shapes[0] if first.operand_shapes else None
        return Pattern("scatter", size, f"updates {plain(updates[0] if updates else None)} "
                                        f"into {plain(table)}",
                       scatter_row(first, tpu),
                       table=(table.nbytes or 0) if table is not None else 0)
    gathers = [i for i in inside if i.opcode == "gather"]
    if gathers:
        size = sum(elements_of(i.shape) for i in gathers)
        first = gathers[0]
        table = first.operand_shapes[0] if first.operand_shapes else None
        return Pattern("gather", size, f"{plain(first.shape)} gathered from "
                                       f"{plain(table)}",
                       gather_row(first, tpu),
                       table=(table.nbytes or 0) if table is not None else 0)
    lanes = [(i, found) for i in inside if tpu and (found := lane_reduction(i)) is not None]
    if lanes:
        size = sum(elements_of(i.operand_shapes[0]) for i, _ in lanes if i.operand_shapes)
        first, (axis, length) = lanes[0]
        return Pattern("reduce-window-lane", size,
                       f"rows of {length} along dimension {axis} of "
                       f"{plain(first.operand_shapes[0] if first.operand_shapes else None)}, "
                       "each reduced whole at every position", length)
    partial = [(i, crossed) for i in inside if tpu and i.opcode == "dynamic-update-slice"
               and (crossed := _partial_tiles(i)) is not None]
    if partial:
        first, _ = partial[0]
        target = first.shape.array
        given = first.operand_shapes[1] if len(first.operand_shapes) > 1 else None
        return Pattern("update-slice", sum(tiles for _, tiles in partial),
                       f"{plain(given)} into {plain(first.shape)}"
                       f"{target.layout if target else ''}")
    lone = _lone_convert(instr, inside) if not tpu else None
    if lone is not None:
        return lone
    alone = _lone_op(instr, inside) if backend in (None, CPU) else None
    if alone is not None:
        return alone
    windows = [i for i in inside if not tpu and i.opcode == "reduce-window"
               and lane_reduction(i) is None] if not is_library(instr) else []
    if windows:
        return _window(windows, module)
    norm = _normalization(instr, inside) if not tpu else None
    if norm is not None:
        return norm
    variadic = [i for i in inside if i.opcode == "reduce" and len(i.operands) > 2]
    if variadic:
        size = sum(elements_of(i.operand_shapes[0]) for i in variadic if i.operand_shapes)
        first = variadic[0]
        dims = tuple(ints_in(first.attributes.get("dimensions")))
        return Pattern("variadic-reduction", size,
                       f"{len(first.operands) // 2} operands over dimensions {dims} of "
                       f"{plain(first.operand_shapes[0] if first.operand_shapes else None)}")
    strided = [i for i in inside if i.opcode == "reduce" and _strided(i)]
    if strided:
        size = sum(elements_of(s) for i in strided
                   for s in i.operand_shapes[: max(1, len(i.operands) // 2)])
        first = strided[0]
        dims = tuple(ints_in(first.attributes.get("dimensions")))
        operand = first.operand_shapes[0]
        layout = operand.array.layout if operand is not None and operand.array else ""
        return Pattern("strided-reduction", size,
                       f"dimensions {dims} of {plain(operand)}{layout}")
    interleaved = [(i, run) for i in inside if i.opcode == "reduce"
                   and (run := interleaved_runs(i)) is not None]
    if interleaved:
        size = sum(elements_of(s) // run for i, run in interleaved
                   for s in i.operand_shapes[: max(1, len(i.operands) // 2)])
        first, run = interleaved[0]
        dims = tuple(ints_in(first.attributes.get("dimensions")))
        operand = first.operand_shapes[0]
        layout = operand.array.layout if operand is not None and operand.array else ""
        return Pattern("interleaved-reduction", size,
                       f"dimensions {dims} of {plain(operand)}{layout}, runs of {run}")
    return transpose_pattern(instr, module, tpu)


# Rows from this long are no ``normalization``: a softmax and a layer norm of float32
# [4096, 1024], each fused whole into one library kernel, ran 2 to 2.9 times faster than the
# roof of rows of 64 allows, at the rates their row reduction and streaming terms give.
NORMALIZATION_ROWS_BELOW = 256


def _normalization(instr: Instruction, inside: Sequence[Instruction]) -> Pattern | None:
    """``normalization`` for a library fusion (XLA:CPU's ``__ynn_fusion``) without a product,
    holding a reduce of its rows whose operand is computed from another such reduce's result
    (a layer norm's variance from its mean, the pair fused with the normalizing arithmetic
    into one kernel) over rows shorter than :data:`NORMALIZATION_ROWS_BELOW`;
    size: the elements of the first reduce's operand; row: the elements it reduces per row.
    None for any other kernel."""
    if not is_library(instr) or any(i.opcode in ("dot", "convolution") for i in inside):
        return None
    reduces = [i for i in inside if i.opcode == "reduce" and len(i.operands) == 2
               and not _strided(i)]
    if len(reduces) < 2:
        return None
    by_name = {i.name: i for i in inside}

    def reaches(start: Instruction, target: str) -> bool:
        stack, seen = list(start.operands), set()
        while stack:
            name = stack.pop()
            if name == target:
                return True
            if name in seen or name not in by_name:
                continue
            seen.add(name)
            stack.extend(by_name[name].operands)
        return False

    later = [r for r in reduces if any(reaches(r, e.name) for e in reduces if e is not r)]
    if not later:
        return None
    first = next(r for r in reduces if r not in later)
    operand = first.operand_shapes[0] if first.operand_shapes else None
    if operand is None or operand.array is None:
        return None
    dims = ints_in(first.attributes.get("dimensions"))
    row = math.prod(operand.array.dims[d] for d in dims if 0 <= d < len(operand.array.dims))
    if row >= NORMALIZATION_ROWS_BELOW:
        return None
    return Pattern("normalization", elements_of(operand),
                   f"rows of {row} of {plain(operand)}, {len(reduces)} reductions", row)


def _lone_convert(instr: Instruction, inside: Sequence[Instruction]) -> Pattern | None:
    """``lone-convert`` for a kernel of XLA's loop emitter that converts and does nothing else
    (bitcasts aside: XLA:CPU's ``wrapped_convert``); size: the elements it converts. None
    for any other kernel."""
    ops = {i.opcode for i in inside} - {"parameter", "bitcast"}
    if ops != {"convert"} or is_library(instr):
        return None
    converts = [i for i in inside if i.opcode == "convert"]
    first = converts[0]
    source = first.operand_shapes[0] if first.operand_shapes else None
    return Pattern("lone-convert", sum(elements_of(i.shape) for i in converts),
                   f"{plain(source)} to {plain(first.shape)}")


def _lone_op(instr: Instruction, inside: Sequence[Instruction]) -> Pattern | None:
    """``lone-op`` for a kernel of XLA's loop emitter whose one instruction (bitcasts and
    parameters aside) is an arithmetic operation (:data:`ARITHMETIC`: not a conversion, which
    is :func:`_lone_convert`'s); size: the elements of its result. None for any other kernel."""
    ops = [i for i in inside if i.opcode not in ("parameter", "bitcast")]
    if len(ops) != 1 or ops[0].opcode not in ARITHMETIC or is_library(instr):
        return None
    op = ops[0]
    return Pattern("lone-op", elements_of(op.shape), f"{op.opcode} of {plain(op.shape)}")


def _window(windows: Sequence[Instruction], module: Module) -> Pattern:
    """The pattern of a kernel of XLA's loop emitter holding these windows (``reduce-window``):
    ``sum-window`` where every one of them sums (:func:`sums`), else ``reduce-window`` with
    the arrays its first window reduces together as its row; size: their window elements
    (:func:`window_elements`) times their arrays."""
    first = windows[0]
    arrays = window_arrays(first)
    operand = first.operand_shapes[0] if first.operand_shapes else None
    size = sum(window_elements(i) * window_arrays(i) for i in windows)
    detail = (f"window {first.attributes.get('window', '').strip('{}')} of {plain(operand)}"
              + (f", {arrays} arrays" if arrays > 1 else ""))
    if all(sums(i, module) for i in windows):
        return Pattern("sum-window", size, detail)
    return Pattern("reduce-window", size, detail, arrays)


def _partial_tiles(update: Instruction) -> int | None:
    """The tiles a TPU's ``dynamic-update-slice`` crosses where it writes part of them (it
    reads them too); None where it writes whole tiles or its array carries none."""
    shapes = update.operand_shapes
    given = shapes[1].array if len(shapes) > 1 and shapes[1] is not None else None
    found = updated_tiles(update.shape.array, given)
    return found[0] if found is not None and found[1] > 0 else None


def _loop_dot(dots: Sequence[Instruction], tpu: bool) -> Pattern:
    """The pattern of a kernel whose ``dots`` its own loop emitter computes: ``mat-vec`` where
    every dot multiplies floats and has a narrow side, ``transposed-dot`` where every dot is
    ``x.T @ y`` (neither on a TPU), else ``loop-dot`` (integer and complex dots among them)."""
    first = dots[0]
    detail = "dot " + " x ".join(plain(s) for s in first.operand_shapes) + " -> " + \
        plain(first.shape)
    flops = sum(dot_flops(d) or 0 for d in dots)
    narrow = [narrow_side(d) for d in dots]
    if not tpu and all(n is not None for n in narrow) and all(is_float_dot(d) for d in dots):
        found = [n for n in narrow if n is not None]
        wide = sum(elements_of(d.operand_shapes[side]) for d, (_, side) in zip(dots, found,
                                                                                strict=True))
        width = max(w for w, _ in found)
        # A few vectors on the left (the wide operand on the right, the narrow side leading
        # the result) run at a rate of their own; one vector on either side is a mat-vec.
        name = "vec-mat" if width > 1 and all(side == 1 for _, side in found) else "mat-vec"
        return Pattern(name, wide, f"{detail}, {width} wide", width)
    if not tpu and all(is_transposed_dot(d) for d in dots):
        return Pattern("transposed-dot", flops, detail)
    return Pattern("loop-dot", flops, detail)
