"""The shapes of a dot that set how XLA:CPU's own loop emitter runs it (see
:mod:`roofline_report.hlo.kernel_patterns`, whose ``mat-vec`` and ``transposed-dot`` patterns
these decide): which operand is narrow, which is contracted along a major axis."""

from __future__ import annotations

import math

from roofline_report.hlo.ir import Instruction
from roofline_report.hlo.kernel_cost import ints_in

# A loop dot whose narrow operand has at most this many elements besides its batch and
# contracted dimensions is a matrix-vector product (``mat-vec``): its time goes with the
# matrix it reads (on a 2-core CPU a [512, 1024] matrix took 1.1 ms by 8, 16 or 32 columns,
# 1.3 ms by 64, 2.8 ms by 128, where it becomes a product of its flops).
NARROW_DOT = 64


FLOAT_DOT_TYPES = ("f16", "bf16", "f32", "f64")  # the operand types of a transposed-dot


def _free_elements(dot: Instruction, side: int) -> int | None:
    """The elements of a dot operand's dimensions that are neither contracted nor batch
    (``side`` 0: the left operand, 1: the right); None where its shape is not known."""
    shape = dot.operand_shapes[side] if len(dot.operand_shapes) > side else None
    if shape is None or shape.array is None:
        return None
    prefix = ("lhs", "rhs")[side]
    skip = set(ints_in(dot.attributes.get(f"{prefix}_contracting_dims"))) \
        | set(ints_in(dot.attributes.get(f"{prefix}_batch_dims")))
    return math.prod(n for d, n in enumerate(shape.array.dims) if d not in skip)


def _contracted_elements(dot: Instruction) -> int | None:
    """The elements of a dot's contracted dimensions (of its left operand); None where its
    shape is not known."""
    shape = dot.operand_shapes[0] if dot.operand_shapes else None
    if shape is None or shape.array is None:
        return None
    dims = shape.array.dims
    return math.prod(dims[d] for d in ints_in(dot.attributes.get("lhs_contracting_dims"))
                     if d < len(dims))


def narrow_side(dot: Instruction) -> tuple[int, int] | None:
    """(the narrow operand's width, the index of the wide operand) of a dot one of whose
    operands has at most :data:`NARROW_DOT` elements besides its batch and contracted
    dimensions (a vector, a few rows) and the other is a matrix: more such elements, or, beside
    a vector, as few over a contraction long enough that it holds more than ``NARROW_DOT``
    squared elements (a head's 64 features by 4,096 cached positions, against one query's
    weights); None for any other dot (two narrow operands make a small product, or, over a
    long contraction, a narrow layer's weight gradient ``x.T @ y``; two wide ones a product of
    its flops)."""
    left, right = _free_elements(dot, 0), _free_elements(dot, 1)
    if left is None or right is None or min(left, right) > NARROW_DOT:
        return None
    if max(left, right) <= NARROW_DOT:
        contracted = _contracted_elements(dot)
        if min(left, right) != 1 or contracted is None \
                or max(left, right) * contracted <= NARROW_DOT * NARROW_DOT:
            return None
    return (left, 1) if left < right else (right, 0)


def contracted_on_major(dot: Instruction, side: int) -> bool:
    """Whether a dot operand is contracted along a dimension other than its minor-most one
    that is neither batch nor of size 1, in its layout (the left operand of ``x.T @ y``, the
    right operand of ``a @ b``); False where its shape is not known."""
    shape = dot.operand_shapes[side] if len(dot.operand_shapes) > side else None
    if shape is None or shape.array is None:
        return False
    array = shape.array
    prefix = ("lhs", "rhs")[side]
    contracted = set(ints_in(dot.attributes.get(f"{prefix}_contracting_dims")))
    batch = set(ints_in(dot.attributes.get(f"{prefix}_batch_dims")))
    minor = next((d for d in array.minor_to_major()
                  if d not in batch and array.dims[d] != 1), None)
    return minor is not None and bool(contracted) and minor not in contracted


def is_float_dot(dot: Instruction) -> bool:
    lhs = dot.operand_shapes[0] if dot.operand_shapes else None
    return lhs is not None and lhs.array is not None and lhs.array.dtype in FLOAT_DOT_TYPES


def is_transposed_dot(dot: Instruction) -> bool:
    """Whether a dot is ``x.T @ y``: float operands, both contracted along a major axis."""
    return is_float_dot(dot) and contracted_on_major(dot, 0) and contracted_on_major(dot, 1)
