"""A ``reduce-window``'s work as the kernel patterns count it (pure: no jax): whether its
reducer only sums (:func:`sums`), the arrays it reduces together (:func:`window_arrays`) and
the window elements it visits on its operand (:func:`window_elements`, :func:`visited`): the
one rule of the inventory's ``reduce-window`` and ``sum-window`` sizes
(:mod:`~roofline_report.hlo.kernel_patterns`) and of the window roofs' work per call
(:mod:`~roofline_report.observe.ceilings.pattern_programs`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from roofline_report.hlo.ir import Instruction, Module
from roofline_report.hlo.taps import valid_taps, window_dims

__all__ = ["SUMMING", "sums", "visited", "window_arrays", "window_elements"]

#: The reducers of a ``sum-window``: arithmetic that combines its two operands, no comparison.
SUMMING = frozenset({"add", "multiply", "and", "or", "xor"})
_PLUMBING = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast",
                       "convert"})


def sums(window: Instruction, module: Module) -> bool:
    """Whether a ``reduce-window``'s reducer only combines its operands by :data:`SUMMING`
    arithmetic (a sum's add: a cumulative sum, an average pool's gradient, a reduction's
    partial sums), not by a comparison (a maximum, a minimum, a max pool's gradient's choice
    of the larger value and its indices)."""
    names = window.called("to_apply")
    comp = module.computations.get(names[0]) if names else None
    if comp is None:
        return False
    ops = {i.opcode for i in comp.instructions} - _PLUMBING
    return bool(ops) and ops <= SUMMING



def window_arrays(window: Instruction) -> int:
    """The arrays a ``reduce-window`` reduces together: its operands less their initial
    values (1 for a plain window; a max pool's gradient on XLA:CPU, the values and one array
    of indices per dimension)."""
    return max(1, len(window.operands) // 2)


def window_elements(window: Instruction) -> int:
    """The window elements a ``reduce-window`` visits that land on its operand, summed over
    its outputs (of one of its arrays): per dimension the window positions that fall on an
    element, not on padding nor between base-dilated elements (:func:`~roofline_report.hlo.
    taps.valid_taps`, a convolution's rule), multiplied over the dimensions; where its
    window attribute does not fit its rank, its outputs times its window's size. The one
    rule of the inventory's ``reduce-window`` size and of the roof's work per call."""
    operand = window.operand_shapes[0] if window.operand_shapes else None
    result = window.shape.array if window.shape.array is not None else next(
        (s.array for s in window.shape.elements if s.array is not None), None)
    if operand is None or operand.array is None or result is None:
        return 0
    source, dims = operand.array.dims, result.dims
    sizes = window_dims(window.attributes.get("window", ""), len(source))
    if len(dims) != len(source) or len(sizes) != len(source) \
            or any(size < 1 for size, *_ in sizes):
        return result.elements * math.prod(max(1, size) for size, *_ in sizes)
    return visited(source, dims, sizes)


def visited(source: Sequence[int], result: Sequence[int],
            windows: Sequence[tuple[int, int, int, int, int]]) -> int:
    """The window elements that land on a ``source`` of these dimensions, summed over the
    outputs of a ``result`` of these, for windows of (size, stride, low padding, base
    dilation, window dilation) along each dimension: :func:`window_elements`'s count."""
    return math.prod(valid_taps(n, out, size, stride, pad, base, dilation)
                     for n, out, (size, stride, pad, base, dilation)
                     in zip(source, result, windows, strict=True))
