"""What XLA's TPU compiler writes that its CPU and GPU compilers do not (pure: no jax).

Read from the optimized HLO of programs compiled for a TPU v5e by jax 0.10.2 (the fixtures
under ``tests/fixtures/tpu_v5e_hlo/``), each fact checked there; the kernel inventory
(:mod:`roofline_report.hlo.kernels`) applies them to a module compiled for a TPU only:

* **The backend** (:func:`hlo_backend`). Every layout of a TPU program carries tiles
  (``f32[8,128]{1,0:T(8,128)}``, ``bf16[..]{1,0:T(8,128)(2,1)}``); XLA's CPU and GPU compilers
  print none. A caller that knows the backend says so; otherwise a module whose layouts carry
  tiles is a TPU's, and any other is read by the rules the project holds for XLA:CPU and GPU.
* **Memory spaces** (:func:`on_chip`). A layout's ``S(n)`` names where the array lives: none
  (space 0) is the chip's HBM; ``S(1)`` is the core's vector memory (VMEM), where the compiler
  keeps operands, intermediate results and whole tensors that fit (a log-softmax's 64 MiB
  intermediate); ``S(2)`` holds the sync flags of asynchronous copies, ``S(6)`` scalars;
  ``S(5)`` is the host's memory, as on every backend. Only the HBM's (and the host's) bytes
  are memory traffic: an operand or result on chip is not.
* **Matrix products as convolutions** (:func:`product_convolution`). The TPU has no ``dot``:
  every ``dot_general`` becomes a ``convolution`` inside a ``kOutput`` fusion (the trace calls
  it a "convolution fusion"), int8 x int8 -> int32 products too, in forms a CPU never shows:
  ``dim_labels=bf_io->bf`` with no spatial dimension (a plain product); a batch dimension made a
  spatial one whose window pairs each input position with one filter position
  (``window={size=64 stride=63 lhs_dilate=64}``, ``0bf_0io->0bf``); a contracted dimension
  made a spatial one the window spans whole (``window={size=1024}``, ``0fb_0io->bf0``); a free
  dimension of one side made a spatial one of size 1 on the other, padded
  (``size=1x4 pad=0_0x3_3 rhs_reversal=0x1``). Such a convolution is still a matrix product.
  The FFT is computed the same way: several convolution fusions multiply by the DFT's
  factors (``operand_precision={highest,highest}``), with ``X64SplitLow``, ``X64SplitHigh``
  and ``X64Combine`` custom calls taking the complex numbers apart and back.
* **Whole-row reduce-windows** (:func:`lane_reduction`). A reduction whose result is broadcast
  back along the reduced axis (a log-softmax's maximum) becomes a ``reduce-window`` whose
  window spans the whole row from every position (``window={size=1x1x16383
  pad=0_0x0_0x8191_8191}`` over an axis of 8192), in an output fusion with the emitter
  ``EmitReduceWindowLane``. It computes each row's reduction once per row element; counted as
  a window per output it would be 16,382 operations an element (275 GFLOP for a [4, 512, 8192]
  array whose whole program XLA counts at 50 MFLOP). It is counted as what it computes, the
  row's reduction (``reduce``'s rule: the body's cost x (row - 1) per row), and given a
  pattern of its own: on a TPU v5e the log-softmax's fusion took 5.8 ms, 0.34 ns an element
  of the row it reduces, where a row sum of 64 M floats streamed at 0.005 ns an element.
* **Custom calls that do no arithmetic** (:data:`NO_FLOP_TARGETS`): ``X64SplitLow``,
  ``X64SplitHigh`` and ``X64Combine`` move their operands and results (a split reads the
  complex array and writes one float half); ``ConcatBitcast`` concatenates slices already
  written where they lie, and ``AllocateBuffer`` hands out an uninitialised buffer: neither
  moves a byte (the traces show them taking no time); ``AssumeGatherIndicesInBound`` and
  ``GatherScatterIndicesBitpacked`` mark or pack the indices of a gather or a scatter inside
  its fusion.
* **Updates of tiled arrays** (:func:`updated_tiles`). An HBM array's layout stores it in
  tiles (``T(8,128)``: 8 rows of the second-minor dimension by 128 of the minor-most, padded),
  and an in-place ``dynamic-update-slice`` moves whole tiles: one that writes part of a tile
  reads and writes all of it. A key-value cache laid out with its positions minor-most
  (``f32[64,4096,8,64]{1,3,2,0:T(8,128)}``, as the compiler chose for a decode step's
  attention) takes one token's update as one lane of 4,096 tiles: 16 MiB of tiles for 128 KiB
  of update. On a TPU v5e such updates took 15 to 20 ns a tile (4 KiB), the tiles' bytes read
  and written at 410 to 550 GB/s, whether the update crossed tiles along their lanes (a
  column of [8192, 4096]: 17.6 µs), their rows (a [256, 1, 256] update of a [128, 256, 256]
  carry whose second axis is second-minor: 10.4 µs an iteration of a loop) or a cache's
  positions (the 16 MiB above: 70 µs); an update of whole rows of tiles writes them only.
* **Padded tiles** (:attr:`~roofline_report.hlo.shapes.Array.padded_nbytes`). A tiled
  dimension shorter than its tile, or not a whole number of them, is stored padded to whole
  tiles, and moves so: a DLRM step's kernels over ``f32[65536,27,27]{0,2,1:T(8,128)}`` (27
  rows padded to 32) and ``bf16[65536,1,64]`` in tiles of 2 x 128 (1 row padded to 2, 64
  lanes to 128) streamed their padded bytes at 620 to 700 GB/s on a TPU v5e, as unpadded
  arrays stream, and their logical bytes at 110 to 300. XLA's own per-op figures count the
  logical bytes.
* **While loops** (:func:`inferred_trip_count`). The TPU compiler writes no
  ``known_trip_count``; a ``fori_loop``'s trip count is read from its condition (a compare of
  the induction variable with a constant), its body (the variable stepped by a constant) and
  its initial value, as XLA's own loop analysis reads it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from roofline_report.hlo.ir import Computation, Instruction, Module
from roofline_report.hlo.shapes import Array, dtype_bits
from roofline_report.hlo.taps import DIM_LABELS, valid_taps, window_dims

__all__ = [
    "CPU",
    "GPU",
    "HOST_MEMORY_SPACE",
    "MOVEMENT_TARGETS",
    "NO_BYTES_TARGETS",
    "NO_FLOP_TARGETS",
    "TPU",
    "backend_name",
    "hlo_backend",
    "inferred_trip_count",
    "lane_reduction",
    "on_chip",
    "product_batch",
    "product_convolution",
    "updated_tiles",
]

TPU, CPU, GPU = "tpu", "cpu", "gpu"
HOST_MEMORY_SPACE = 5  # pinned host memory, on every backend (XLA's host memory space)

# The custom calls of the TPU compiler that do no arithmetic.
X64_TARGETS = ("X64SplitLow", "X64SplitHigh", "X64Combine")
#: Calls that move no byte either: a concatenation of slices written in place, a buffer.
NO_BYTES_TARGETS = ("ConcatBitcast", "AllocateBuffer")
#: Calls that only mark or pack a gather's or scatter's indices.
INDEX_TARGETS = ("AssumeGatherIndicesInBound", "GatherScatterIndicesBitpacked")
NO_FLOP_TARGETS = (*X64_TARGETS, *NO_BYTES_TARGETS, *INDEX_TARGETS)
#: Those of them a kernel's category counts as data movement (all but the allocation).
MOVEMENT_TARGETS = (*X64_TARGETS, "ConcatBitcast", *INDEX_TARGETS)

# jax's platform names by the backend whose compiler's rules hold.
_PLATFORMS = {"tpu": TPU, "cpu": CPU, "gpu": GPU, "cuda": GPU, "rocm": GPU}


def backend_name(name: str | None) -> str | None:
    """The backend whose compiler's rules hold for a platform as jax names it: ``tpu``,
    ``cpu``, ``gpu`` (``cuda`` and ``rocm`` too); another name as given, lower case; None for
    None."""
    if name is None:
        return None
    text = str(name).strip().lower()
    return _PLATFORMS.get(text, text) or None


def _arrays(module: Module) -> Iterator[Array]:
    for _, instr in module.instructions():
        yield from instr.shape.arrays()


def hlo_backend(module: Module, given: str | None = None) -> str | None:
    """The backend ``module`` was compiled for: ``given`` when the caller knows it
    (:func:`backend_name`), else :data:`TPU` when its layouts carry tiles, else None (the rules
    the project holds for XLA:CPU and GPU apply)."""
    if given is not None:
        return backend_name(given)
    if ":T(" in module.attributes.get("entry_computation_layout", ""):
        return TPU
    return TPU if any(array.tiled for array in _arrays(module)) else None


def on_chip(array: Array, backend: str | None) -> bool:
    """Whether an array lives in a TPU core's own memory (vector memory, scalar memory, sync
    flags: any memory space but the HBM's and the host's), where reading or writing it is no
    memory traffic. Never on another backend."""
    return backend == TPU and array.memory_space not in (0, HOST_MEMORY_SPACE)


# --------------------------------------------------------------------------------------------
# Matrix products written as convolutions
# --------------------------------------------------------------------------------------------

# The op jax lowered a convolution from, by the last part of its op_name.
_PRODUCT_OPS = ("dot_general", "dot")
_CONVOLUTION_OPS = ("conv_general_dilated",)


_Window = tuple[int, int, int, int, int]


def _spatial(conv: Instruction) -> list[tuple[int, int, int, _Window]] | None:
    """(input, filter, output) sizes and window of each spatial dimension of a convolution;
    None where its labels or shapes cannot be read."""
    labels = DIM_LABELS.match(conv.attributes.get("dim_labels", ""))
    shapes = [s.array if s is not None else None for s in conv.operand_shapes[:2]]
    out = conv.shape.array
    if labels is None or len(shapes) < 2 or shapes[0] is None or shapes[1] is None \
            or out is None:
        return None
    lhs, rhs = shapes[0].dims, shapes[1].dims
    lhs_l, rhs_l, out_l = labels["lhs"], labels["rhs"], labels["out"]
    if len(lhs_l) != len(lhs) or len(rhs_l) != len(rhs) or len(out_l) != len(out.dims):
        return None
    digits = sorted(c for c in lhs_l if c.isdigit())
    if any(d not in rhs_l or d not in out_l for d in digits):
        return None
    window = window_dims(conv.attributes.get("window", ""), len(digits))
    return [(lhs[lhs_l.index(d)], rhs[rhs_l.index(d)], out.dims[out_l.index(d)], window[i])
            for i, d in enumerate(digits)]


def _op_name(conv: Instruction) -> str:
    return (conv.op_name or "").rsplit("/", 1)[-1]


def product_convolution(conv: Instruction) -> bool:
    """Whether a TPU ``convolution`` computes a matrix product (module docstring): one without
    feature or batch groups that jax lowered from a ``dot_general`` (its op_name says so), or,
    where the op_name names neither a product nor a convolution (an FFT's factors, a module
    without metadata), one in which every spatial dimension either gives each output position
    at most one filter tap that lands on the input (a batch or free dimension written as a
    spatial one) or is contracted whole into a single output position. A convolution jax
    lowered from ``conv_general_dilated`` stays one, a 1x1 convolution included: the program
    asked for a convolution, and the count of the program says so."""
    if conv.opcode != "convolution":
        return False
    if conv.attributes.get("feature_group_count", "1") != "1" \
            or conv.attributes.get("batch_group_count", "1") != "1":
        return False
    name = _op_name(conv)
    if name in _PRODUCT_OPS:
        return True
    if name in _CONVOLUTION_OPS:
        return False
    spatial = _spatial(conv)
    if spatial is None:
        return False
    for lhs, rhs, out, (size, stride, pad, base, dilation) in spatial:
        if out == 1:
            continue  # contracted whole into one position
        taps = valid_taps(lhs, out, rhs if size == 0 else size, stride, pad, base, dilation)
        if taps > out:
            return False  # a window sliding over positions other outputs read: a convolution
    return True


def product_batch(conv: Instruction) -> int:
    """The independent matrix products a product convolution computes: the product of its
    spatial dimensions that are a batch (input, filter and output of one size above 1, each
    output position reading its own input and filter position); 1 for a plain product."""
    spatial = _spatial(conv) or []
    return math.prod(out for lhs, rhs, out, _ in spatial if lhs == rhs == out > 1)


# --------------------------------------------------------------------------------------------
# Whole-row reduce-windows
# --------------------------------------------------------------------------------------------


def lane_reduction(window: Instruction) -> tuple[int, int] | None:
    """(dimension, its length) of a ``reduce-window`` whose window spans its operand's whole
    row along that one dimension from every output position (stride 1, no dilation, the output
    as long as the input, at least ``length - 1`` padding on each side: every output reduces
    the whole row) and is 1 along every other; None for any other reduce-window."""
    if window.opcode != "reduce-window" or not window.operand_shapes:
        return None
    operand = window.operand_shapes[0]
    result = window.shape.array if window.shape.array is not None else next(
        (s.array for s in window.shape.elements if s.array is not None), None)
    if operand is None or operand.array is None or result is None \
            or result.dims != operand.array.dims:
        return None
    dims = operand.array.dims
    sizes = window_dims(window.attributes.get("window", ""), len(dims))
    wide = [d for d, w in enumerate(sizes) if w != (1, 1, 0, 1, 1)]
    if len(wide) != 1:
        return None
    d = wide[0]
    size, stride, pad, base, dilation = sizes[d]
    n = dims[d]
    if stride != 1 or base != 1 or dilation != 1 or n < 2:
        return None
    if pad >= n - 1 and size - 1 - pad >= n - 1:
        return d, n
    return None


# --------------------------------------------------------------------------------------------
# Trip counts of while loops
# --------------------------------------------------------------------------------------------

_FLIP = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "NE": "NE", "EQ": "EQ"}


def _int(instr: Instruction | None) -> int | None:
    if instr is None or instr.opcode != "constant" or instr.literal is None:
        return None
    try:
        return int(instr.literal)
    except ValueError:
        return None


def _through(comp: Computation, name: str) -> Instruction | None:
    """The instruction named ``name`` in ``comp``, through copies and bitcasts."""
    instr = comp.instruction(name)
    while instr is not None and instr.opcode in ("copy", "bitcast") and instr.operands:
        instr = comp.instruction(instr.operands[0])
    return instr


def _element(comp: Computation, name: str) -> int | None:
    """The tuple index of a ``get-tuple-element`` of ``comp``'s parameter."""
    instr = _through(comp, name)
    if instr is None or instr.opcode != "get-tuple-element" or not instr.operands:
        return None
    source = comp.instruction(instr.operands[0])
    if source is None or source.opcode != "parameter":
        return None
    index = instr.attributes.get("index", "")
    return int(index) if index.isdigit() else None


def _trips(start: int, limit: int, step: int, direction: str) -> int | None:
    if direction == "LT" and step > 0:
        return max(0, -(-(limit - start) // step))
    if direction == "LE" and step > 0:
        return max(0, -(-(limit + 1 - start) // step))
    if direction == "GT" and step < 0:
        return max(0, -(-(start - limit) // -step))
    if direction == "GE" and step < 0:
        return max(0, -(-(start - limit + 1) // -step))
    if direction == "NE" and step and (limit - start) % step == 0 and (limit - start) // step >= 0:
        return (limit - start) // step
    return None


def inferred_trip_count(loop: Instruction, caller: Computation, module: Module) -> int | None:
    """The trip count of a ``while`` read from its computations (module docstring): its
    condition compares one element of the loop's tuple with a constant, its body steps that
    element by a constant, and the loop starts it at a constant (through copies and bitcasts);
    None for any other loop."""
    conds, bodies = loop.called("condition"), loop.called("body")
    cond = module.computations.get(conds[0]) if conds else None
    body = module.computations.get(bodies[0]) if bodies else None
    root = cond.root if cond is not None else None
    if cond is None or body is None or root is None or root.opcode != "compare" \
            or len(root.operands) != 2:
        return None
    direction = root.attributes.get("direction", "")
    index, limit = _element(cond, root.operands[0]), _int(_through(cond, root.operands[1]))
    if index is None:
        index, limit = _element(cond, root.operands[1]), _int(_through(cond, root.operands[0]))
        direction = _FLIP.get(direction, "")
    if index is None or limit is None:
        return None
    step = _step(body, index)
    init = caller.instruction(loop.operands[0]) if loop.operands else None
    if step is None or init is None or init.opcode != "tuple" or index >= len(init.operands):
        return None
    start = _int(_through(caller, init.operands[index]))
    return None if start is None else _trips(start, limit, step, direction)


def _step(body: Computation, index: int) -> int | None:
    """What the body adds to element ``index`` of the loop's tuple each trip, where it adds
    (or subtracts) a constant to that element; None otherwise."""
    root = body.root
    if root is None or root.opcode != "tuple" or index >= len(root.operands):
        return None
    update = _through(body, root.operands[index])
    if update is None or update.opcode not in ("add", "subtract") or len(update.operands) != 2:
        return None
    left, right = update.operands
    if _element(body, left) == index and (value := _int(_through(body, right))) is not None:
        return value if update.opcode == "add" else -value
    if update.opcode == "add" and _element(body, right) == index \
            and (value := _int(_through(body, left))) is not None:
        return value
    return None


# --------------------------------------------------------------------------------------------
# In-place updates of tiled arrays
# --------------------------------------------------------------------------------------------


def updated_tiles(target: Array | None, update: Array | None) -> tuple[int, int, int] | None:
    """(tiles, bytes read, bytes written) of an in-place update of ``update``'s extent into
    ``target``, a TPU array stored in tiles: the tiles the update crosses, each moved whole
    (its padding included), read too where the update covers only part of it. Along each of
    the tiled (minor-most) dimensions the update crosses ``ceil(extent / tile)`` tiles
    (starting on a tile boundary, as a cache's rows and a loop's steps do); it covers them
    whole where its extent is a multiple of the tile's or the whole dimension. None where
    ``target`` carries no tile or the shapes do not pair."""
    if target is None or update is None or len(update.dims) != len(target.dims):
        return None
    tile = target.tile
    rank = len(target.dims)
    if not tile or len(tile) > rank:
        return None
    bits = dtype_bits(target.dtype)
    if not bits:
        return None
    order = target.minor_to_major()
    tiled = {order[i]: tile[len(tile) - 1 - i] for i in range(len(tile))}
    tiles, whole = 1, True
    for d, (size, extent) in enumerate(zip(target.dims, update.dims, strict=True)):
        extent = min(extent, size)
        if d in tiled:
            step = max(1, tiled[d])
            tiles *= -(-extent // step)
            whole = whole and (extent % step == 0 or extent == size)
        else:
            tiles *= extent
    nbytes = tiles * math.prod(tile) * max(8, bits) // 8
    return tiles, (0 if whole else nbytes), nbytes
