"""How many elements a gather reads, and a scatter writes, in one run per index (no jax).

A CPU walks an indexed slice in its operand's layout, and an index's cost goes with the run
of contiguous elements it reads or writes, not with the slice's elements: eight elements of a
column are eight single elements. A TPU stores arrays in tiles and keeps the slice's elements.
The kernel inventory gives these as the ``row`` of a kernel's ``gather`` or ``scatter``
pattern (:mod:`roofline_report.hlo.kernel_patterns`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from roofline_report.hlo.ir import Instruction
from roofline_report.hlo.kernel_bytes import scatter_parts
from roofline_report.hlo.kernel_cost import ints_in
from roofline_report.hlo.shapes import Array

__all__ = ["contiguous_run", "gather_row", "scatter_row"]


def scatter_row(scatter: Instruction, tpu: bool) -> int:
    """The elements a scatter writes in one run per index: on a CPU its update window's
    contiguous run in its table's layout (a window ``[512, 1, 1]`` into ``[512, 27, 27]``, a
    column of one element per row, is 512 single elements 729 apart: a row of 1), on a TPU,
    which stores arrays in tiles, its window's elements (1 for scattered single elements); 0
    where the update shape is not known."""
    updates = scatter_parts(scatter)[1]
    shape = updates[0] if updates else None
    if shape is None or shape.array is None:
        return 0
    window = ints_in(scatter.attributes.get("update_window_dims"))
    extents = [shape.array.dims[d] for d in window if d < len(shape.array.dims)]
    first = scatter.operand_shapes[0] if scatter.operand_shapes else None
    table = first.array if first is not None else None
    if tpu or table is None:
        return math.prod(extents)
    # The table's dimensions the window spans: those not inserted (nor batching), in order.
    inserted = set(ints_in(scatter.attributes.get("inserted_window_dims"))) \
        | set(ints_in(scatter.attributes.get("input_batching_dims")))
    spanned = [d for d in range(len(table.dims)) if d not in inserted]
    if len(spanned) != len(extents):
        return math.prod(extents)
    sizes = [1] * len(table.dims)
    for d, extent in zip(spanned, extents, strict=True):
        sizes[d] = extent
    return contiguous_run(sizes, table)


def contiguous_run(sizes: Sequence[int], array: Array) -> int:
    """The elements of a slice of ``sizes`` of ``array`` that lie in one run in its layout:
    the slice's extent along the minor-most axis, times the next axis's while each one before
    spans its whole axis."""
    run = 1
    for d in array.minor_to_major():
        run *= sizes[d]
        if sizes[d] != array.dims[d]:
            break
    return run


def gather_row(gather: Instruction, tpu: bool) -> int:
    """The elements a gather reads in one run per index: on a CPU its slice's contiguous run
    in its operand's layout (:func:`contiguous_run`: a row of 128 of ``[32768, 128]``, 1
    for the slice ``{8, 1}`` of ``[8, 160400]``, eight single elements 641 KB apart); on a
    TPU, which stores arrays in tiles, its slice's elements."""
    sizes = ints_in(gather.attributes.get("slice_sizes"))
    operand = gather.operand_shapes[0] if gather.operand_shapes else None
    array = operand.array if operand is not None else None
    if tpu or array is None or len(sizes) != len(array.dims):
        return math.prod(sizes)
    return contiguous_run(sizes, array)
