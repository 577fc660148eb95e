"""The MLIR helpers of our StableHLO count: reading types, attributes and constants of StableHLO
operations through the MLIR python bindings (:mod:`roofline_report.hlo.stablehlo_count`).

The bindings are untyped: Any at the boundary, plain Python values inside. They are read from
jaxlib (``jaxlib.mlir``: the classes ``jax.extend.mlir`` re-exports), imported only when a helper
runs; jax itself is not imported.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

SH = "stablehlo."


def mlir_ir() -> Any:
    from jaxlib.mlir import ir

    return ir


def stablehlo_dialect() -> Any | None:
    try:
        from jaxlib.mlir.dialects import stablehlo
    except ImportError:  # pragma: no cover - depends on the jax build
        return None
    return stablehlo


def as_binding(cls: Any, value: Any) -> Any | None:
    """``value`` as an instance of the binding class ``cls``, or None when it is not one."""
    if isinstance(value, cls):
        return value
    try:
        return cls(value)
    except (ValueError, TypeError):
        return None


def tensor_shape(mlir_type: Any) -> tuple[list[int], Any] | None:
    """(static dims, element type) of a ranked tensor type; None for tokens, tuples, dynamic."""
    ranked = as_binding(mlir_ir().RankedTensorType, mlir_type)
    if ranked is None or not ranked.has_static_shape:
        return None
    return [int(d) for d in ranked.shape], ranked.element_type


def element_count(mlir_type: Any) -> int | None:
    shape = tensor_shape(mlir_type)
    return None if shape is None else math.prod(shape[0])


def itemsize(element_type: Any) -> int | None:
    """Bytes per element: f32 4, bf16/f16 2, f64 8, i32 4, i8 1, i1 (pred) 1, complex<f32> 8."""
    ir = mlir_ir()
    complex_type = as_binding(ir.ComplexType, element_type)
    if complex_type is not None:
        inner = itemsize(complex_type.element_type)
        return None if inner is None else 2 * inner
    for cls in (ir.IntegerType, ir.FloatType):
        typed = as_binding(cls, element_type)
        if typed is not None:
            return max(1, (int(typed.width) + 7) // 8)
    if as_binding(ir.IndexType, element_type) is not None:
        return 8
    match = re.fullmatch(r"(?:[su]?i|f|bf|tf)(\d+).*", str(element_type))
    return max(1, (int(match.group(1)) + 7) // 8) if match else None


def int_attr(op: Any, name: str, default: int) -> int:
    if name not in op.attributes:
        return default
    attr = as_binding(mlir_ir().IntegerAttr, op.attributes[name])
    return default if attr is None else int(attr.value)


def int_list_attr(op: Any, name: str) -> list[int] | None:
    """An ``array<i64: ...>`` or dense integer attribute as a flat list; None when absent."""
    if name not in op.attributes:
        return None
    attr = op.attributes[name]
    ir = mlir_ir()
    dense_array = as_binding(ir.DenseI64ArrayAttr, attr)
    if dense_array is not None:
        return [int(v) for v in dense_array]
    dense = as_binding(ir.DenseIntElementsAttr, attr)
    if dense is not None:
        return [int(dense[i]) for i in range(len(dense))]
    return [int(v) for v in re.findall(r"-?\d+", str(attr).split(":")[0])]


def symbol(attr: Any) -> str:
    ref = as_binding(mlir_ir().FlatSymbolRefAttr, attr)
    return str(ref.value) if ref is not None else str(attr).lstrip("@").strip('"')


def string_attr(op: Any, name: str) -> str:
    if name not in op.attributes:
        return ""
    attr = as_binding(mlir_ir().StringAttr, op.attributes[name])
    return str(attr.value) if attr is not None else str(op.attributes[name]).strip('"')


def const_int(value: Any) -> int | None:
    """The integer held by a scalar (or splat) ``stablehlo.constant``; None otherwise."""
    ir = mlir_ir()
    result = as_binding(ir.OpResult, value)
    if result is None:
        return None
    owner = result.owner.operation
    if owner.name != SH + "constant" or "value" not in owner.attributes:
        return None
    dense = as_binding(ir.DenseIntElementsAttr, owner.attributes["value"])
    if dense is None or len(dense) == 0:
        return None
    if len(dense) > 1 and not dense.is_splat:
        return None
    return int(dense[0])


def block_arg_index(value: Any, block: Any) -> int | None:
    arg = as_binding(mlir_ir().BlockArgument, value)
    if arg is None or arg.owner != block:
        return None
    return int(arg.arg_number)


def owner_op(value: Any) -> Any | None:
    result = as_binding(mlir_ir().OpResult, value)
    return None if result is None else result.owner.operation


def dot_contracting(op: Any) -> list[int] | None:
    """lhs contracting dimensions of a ``dot_general``, via the dialect bindings or the text."""
    attr = op.attributes["dot_dimension_numbers"]
    dialect = stablehlo_dialect()
    if dialect is not None:
        numbers = as_binding(dialect.DotDimensionNumbers, attr)
        if numbers is not None:
            return [int(d) for d in numbers.lhs_contracting_dimensions]
    return parse_dot_contracting(str(attr))


def parse_dot_contracting(text: str) -> list[int] | None:
    """lhs contracting dims from ``#stablehlo.dot<... lhs_contracting_dimensions = [1] ...>``."""
    match = re.search(r"lhs_contracting_dimensions\s*=\s*\[([\d,\s]*)\]", text)
    if match is None:
        return None
    return [int(d) for d in match.group(1).replace(",", " ").split()]


@dataclass(frozen=True, slots=True)
class ConvDims:
    input_batch: int
    input_feature: int
    input_spatial: list[int]
    kernel_input_feature: int
    kernel_spatial: list[int]
    output_feature: int
    output_spatial: list[int]


def conv_dims(op: Any) -> ConvDims | None:
    attr = op.attributes["dimension_numbers"]
    dialect = stablehlo_dialect()
    if dialect is not None:
        dn = as_binding(dialect.ConvDimensionNumbers, attr)
        if dn is not None:
            return ConvDims(
                int(dn.input_batch_dimension),
                int(dn.input_feature_dimension),
                [int(d) for d in dn.input_spatial_dimensions],
                int(dn.kernel_input_feature_dimension),
                [int(d) for d in dn.kernel_spatial_dimensions],
                int(dn.output_feature_dimension),
                [int(d) for d in dn.output_spatial_dimensions],
            )
    return parse_conv_dims(str(attr))


def parse_conv_dims(text: str) -> ConvDims | None:
    """Dimension numbers from ``#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>``."""
    match = re.search(r"\[([^\]]*)\]x\[([^\]]*)\]->\[([^\]]*)\]", text)
    if match is None:
        return None
    lhs, rhs, out = ([s.strip() for s in group.split(",")] for group in match.groups())

    def spatial(labels: list[str]) -> list[int]:
        digits = sorted((int(s), i) for i, s in enumerate(labels) if s.isdigit())
        return [i for _, i in digits]

    try:
        return ConvDims(
            lhs.index("b"),
            lhs.index("f"),
            spatial(lhs),
            rhs.index("i"),
            spatial(rhs),
            out.index("f"),
            spatial(out),
        )
    except ValueError:
        return None
