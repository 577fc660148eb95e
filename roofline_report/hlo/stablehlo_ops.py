"""The op rules of our StableHLO count (:mod:`roofline_report.hlo.stablehlo_count`): which ops
are elementwise, transcendental, free or chlo (charged what XLA compiles them into), and one
handler per op with a rule of its own (dots, convolutions, reducers, loops, calls, ...).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from roofline_report.hlo.cost import Cost
from roofline_report.hlo.stablehlo_mlir import (
    SH,
    as_binding,
    conv_dims,
    dot_contracting,
    element_count,
    int_attr,
    int_list_attr,
    mlir_ir,
    parse_dot_contracting,
    string_attr,
    symbol,
    tensor_shape,
)
from roofline_report.hlo.taps import valid_taps


class Walker(Protocol):
    """What an op's handler asks of the walk that called it
    (:class:`roofline_report.hlo.stablehlo_walker.Walker` is the one): notes for the count,
    the custom calls met, and the costs of regions, calls and loops under the op."""

    custom_calls: set[str]

    def note(self, text: str) -> None: ...

    def region(self, region: Any) -> Cost: ...

    def call(self, callee: str) -> Cost: ...

    def result_elements(self, op: Any) -> int: ...

    def body_per_application(self, op: Any, index: int = 0) -> Cost: ...

    def while_loop(self, op: Any, cost: Cost) -> None: ...

    def branches(self, op: Any, cost: Cost) -> None: ...


def _names(prefix: str, words: str) -> frozenset[str]:
    return frozenset(prefix + word for word in words.split())


ELEMENTWISE = _names(
    SH,
    "add subtract multiply divide remainder maximum minimum negate abs sign floor ceil "
    "round_nearest_afz round_nearest_even compare select clamp convert and or xor not "
    "shift_left shift_right_arithmetic shift_right_logical is_finite popcnt "
    "count_leading_zeros real imag complex reduce_precision",
)
# XLA's transcendental opcodes (HloCostAnalysis::HandleElementwiseOp), in StableHLO spelling.
TRANSCENDENTAL = _names(
    SH,
    "exponential exponential_minus_one log log_plus_one logistic power sqrt rsqrt cbrt "
    "tanh sine cosine tan atan2",
)
# chlo operations as XLA compiles them: (flops, transcendentals) per result element, our HLO
# rules applied to the ops XLA expands each into (read from the compiled HLO of each op on f32
# operands, jax 0.10.2, XLA:CPU). The module docstring tabulates them.
CHLO_CHARGES: Mapping[str, tuple[int, int]] = {
    "chlo.square": (1, 0),
    "chlo.erf": (0, 1),
    "chlo.erf_inv": (37, 2),
    "chlo.erfc": (60, 1),
    "chlo.lgamma": (52, 4),
    "chlo.digamma": (73, 3),
    "chlo.polygamma": (254, 19),
    "chlo.zeta": (122, 11),
    "chlo.bessel_i1e": (83, 1),
    "chlo.sinh": (10, 3),
    "chlo.cosh": (3, 2),
    "chlo.tan": (0, 1),
    "chlo.asin": (5, 2),
    "chlo.acos": (3, 2),
    "chlo.atan": (0, 1),
    "chlo.asinh": (11, 3),
    "chlo.acosh": (7, 4),
    "chlo.atanh": (6, 2),
    "chlo.next_after": (20, 0),
    "chlo.conj": (4, 0),
    "chlo.is_inf": (2, 0),
    "chlo.is_pos_inf": (1, 0),
    "chlo.is_neg_inf": (1, 0),
    "chlo.mulhi": (1, 0),
}
# Where XLA expands a float64 operation into more work than a float32 one.
CHLO_CHARGES_F64: Mapping[str, tuple[int, int]] = {
    "chlo.erf_inv": (100, 2),
    "chlo.erfc": (88, 1),
    "chlo.bessel_i1e": (173, 1),
}
FREE = (
    _names(
        SH,
        "constant broadcast_in_dim broadcast dynamic_broadcast_in_dim reshape dynamic_reshape "
        "transpose slice dynamic_slice dynamic_update_slice concatenate pad dynamic_pad iota "
        "dynamic_iota gather dynamic_gather bitcast_convert get_tuple_element tuple "
        "optimization_barrier reverse get_dimension_size set_dimension_size after_all "
        "create_token partition_id replica_id all_gather all_to_all collective_permute "
        "collective_broadcast send recv infeed outfeed uniform_quantize uniform_dequantize",
    )
    | _names("chlo.", "broadcast constant constant_like")
    | _names("sdy.", "sharding_constraint mesh reshard")
)
TERMINATORS = frozenset({"func.return", SH + "return", "sdy.return"})
CONTAINERS = frozenset({"builtin.module", "func.func"})
# Custom-call targets that only annotate sharding or placement: no work.
_FREE_CUSTOM_CALLS = frozenset(
    {
        "Sharding",
        "SPMDFullToShardShape",
        "SPMDShardToFullShape",
        "annotate_device_placement",
        "MoveToHost",
        "MoveToDevice",
        "LayoutConstraint",
        "X64Combine",
        "X64SplitLow",
        "X64SplitHigh",
    }
)


# ---- op handlers ---------------------------------------------------------------------------


def _handle_call(walker: Walker, op: Any, cost: Cost) -> None:
    cost.add(walker.call(symbol(op.attributes["callee"])))


def _handle_composite(walker: Walker, op: Any, cost: Cost) -> None:
    cost.add(walker.call(symbol(op.attributes["decomposition"])))


def _handle_while(walker: Walker, op: Any, cost: Cost) -> None:
    walker.while_loop(op, cost)


def _handle_branches(walker: Walker, op: Any, cost: Cost) -> None:
    walker.branches(op, cost)


def _handle_dot(walker: Walker, op: Any, cost: Cost) -> None:
    lhs = tensor_shape(op.operands[0].type)
    out = element_count(op.results[0].type)
    if op.name == SH + "dot":
        contracting: list[int] | None = [len(lhs[0]) - 1] if lhs and lhs[0] else []
    else:
        contracting = dot_contracting(op)
    if lhs is None or out is None or contracting is None:
        walker.note(f"{op.name}: shapes or dimension numbers unreadable, not costed")
        return
    cost.charge(op.name, flops=2 * out * math.prod(lhs[0][d] for d in contracting))


def _handle_convolution(walker: Walker, op: Any, cost: Cost) -> None:
    lhs = tensor_shape(op.operands[0].type)
    rhs = tensor_shape(op.operands[1].type)
    out = tensor_shape(op.results[0].type)
    dims = conv_dims(op)
    if lhs is None or rhs is None or out is None or dims is None:
        walker.note(f"{op.name}: shapes or dimension numbers unreadable, not costed")
        return
    n = len(dims.kernel_spatial)
    strides = int_list_attr(op, "window_strides") or [1] * n
    padding = int_list_attr(op, "padding") or [0] * (2 * n)
    lhs_dil = int_list_attr(op, "lhs_dilation") or [1] * n
    rhs_dil = int_list_attr(op, "rhs_dilation") or [1] * n
    taps = 1
    for i in range(n):
        taps *= valid_taps(
            lhs[0][dims.input_spatial[i]],
            out[0][dims.output_spatial[i]],
            rhs[0][dims.kernel_spatial[i]],
            strides[i],
            padding[2 * i],
            lhs_dil[i],
            rhs_dil[i],
        )
    groups = int_attr(op, "feature_group_count", 1)
    batch_groups = int_attr(op, "batch_group_count", 1)
    fma = (
        (lhs[0][dims.input_feature] // groups)
        * out[0][dims.output_feature]
        * (lhs[0][dims.input_batch] // batch_groups)
        * taps
    )
    cost.charge(op.name, flops=2 * fma)


def _charge_body(op: Any, cost: Cost, body: Cost, times: int) -> None:
    cost.charge(op.name, flops=body.flops * times, transcendentals=body.transcendentals * times)


def _handle_reduce(walker: Walker, op: Any, cost: Cost) -> None:
    inputs = element_count(op.operands[0].type)
    outputs = element_count(op.results[0].type)
    if inputs is None or outputs is None:
        walker.note(f"{op.name}: dynamic shape, not costed")
        return
    _charge_body(op, cost, walker.body_per_application(op), inputs - outputs)


def _handle_reduce_window(walker: Walker, op: Any, cost: Cost) -> None:
    outputs = element_count(op.results[0].type)
    window = int_list_attr(op, "window_dimensions")
    if outputs is None or window is None:
        walker.note(f"{op.name}: dynamic shape, not costed")
        return
    combines = (math.prod(window) - 1) * outputs
    _charge_body(op, cost, walker.body_per_application(op), combines)


def _handle_select_and_scatter(walker: Walker, op: Any, cost: Cost) -> None:
    source = element_count(op.operands[1].type)
    window = int_list_attr(op, "window_dimensions")
    if source is None or window is None:
        walker.note(f"{op.name}: dynamic shape or no window, not costed")
        return
    _charge_body(op, cost, walker.body_per_application(op, 0), source * (math.prod(window) - 1))
    _charge_body(op, cost, walker.body_per_application(op, 1), source)


def _handle_scatter(walker: Walker, op: Any, cost: Cost) -> None:
    n_inputs = (len(op.operands) - 1) // 2
    updates = element_count(op.operands[n_inputs + 1].type)
    if updates is None:
        walker.note(f"{op.name}: dynamic shape, not costed")
        return
    _charge_body(op, cost, walker.body_per_application(op), updates)


def _handle_map(walker: Walker, op: Any, cost: Cost) -> None:
    _charge_body(op, cost, walker.body_per_application(op), walker.result_elements(op))


def _handle_sort(walker: Walker, op: Any, cost: Cost) -> None:
    n = element_count(op.operands[0].type)
    if n is None:
        walker.note(f"{op.name}: dynamic shape, not costed")
        return
    cost.charge(op.name, flops=n * max(0, math.ceil(math.log2(n))) if n > 0 else 0)


def _handle_cross_replica(walker: Walker, op: Any, cost: Cost) -> None:
    groups = op.attributes["replica_groups"] if "replica_groups" in op.attributes else None  # noqa: SIM401
    dense = None if groups is None else as_binding(mlir_ir().DenseIntElementsAttr, groups)
    shape = None if dense is None else tensor_shape(dense.type)
    if shape is None or len(shape[0]) != 2:
        group_size = 2
        walker.note(f"{op.name}: group size unreadable, 2 participants assumed (as XLA does)")
    else:
        group_size = shape[0][1]
    body = walker.body_per_application(op)
    elements = sum(element_count(result.type) or 0 for result in op.results)
    _charge_body(op, cost, body, elements * max(0, group_size - 1))


def _handle_fft(walker: Walker, op: Any, cost: Cost) -> None:
    n = element_count(op.operands[0].type)
    lengths = int_list_attr(op, "fft_length") or []
    if n is None:
        walker.note(f"{op.name}: dynamic shape, not costed")
        return
    log_factors = math.prod(max(0, int(length).bit_length() - 1) for length in lengths)
    cost.charge(op.name, flops=2 * 4 * log_factors * n)


def _handle_cholesky(walker: Walker, op: Any, cost: Cost) -> None:
    a = tensor_shape(op.operands[0].type)
    if a is None or not a[0]:
        return
    cost.charge(op.name, flops=a[0][-1] * math.prod(a[0]) // 3)


def _handle_triangular_solve(walker: Walker, op: Any, cost: Cost) -> None:
    a = tensor_shape(op.operands[0].type)
    b = element_count(op.operands[1].type)
    if a is None or not a[0] or b is None:
        return
    cost.charge(op.name, flops=2 * a[0][-1] * b)


def _handle_rng(walker: Walker, op: Any, cost: Cost) -> None:
    count = sum(element_count(result.type) or 0 for result in op.results)
    cost.charge(op.name, transcendentals=count)


def _handle_manual_computation(walker: Walker, op: Any, cost: Cost) -> None:
    walker.note(
        f"{op.name} (shard_map): its body is counted once, for one device's shard, while the "
        "minimum bytes are of the global arguments and results"
    )
    cost.add(walker.region(op.regions[0]))


def _handle_custom_call(walker: Walker, op: Any, cost: Cost) -> None:
    target = string_attr(op, "call_target_name")
    if target in _FREE_CUSTOM_CALLS:
        return
    walker.custom_calls.add(target)
    walker.note(f"custom call {target!r}: not costed (0 flops)")


def chlo_charge(op: Any) -> tuple[int, int]:
    """(flops, transcendentals) per element of a chlo operation (:data:`CHLO_CHARGES`)."""
    name = str(op.name)
    shape = tensor_shape(op.results[0].type) if len(op.results) else None
    if shape is not None and str(shape[1]) == "f64" and name in CHLO_CHARGES_F64:
        return CHLO_CHARGES_F64[name]
    return CHLO_CHARGES[name]


def _handle_ragged_dot(walker: Walker, op: Any, cost: Cost) -> None:
    """``chlo.ragged_dot``: each row of the lhs meets one group of the rhs, so 2 x output
    elements x contracted size, as a dot of the lhs with one group."""
    lhs = tensor_shape(op.operands[0].type)
    out = element_count(op.results[0].type)
    key = "ragged_dot_dimension_numbers"
    attr = op.attributes[key] if key in op.attributes else None  # noqa: SIM401
    contracting = None if attr is None else parse_dot_contracting(str(attr))
    if lhs is None or out is None or contracting is None:
        walker.note(f"{op.name}: shapes or dimension numbers unreadable, not costed")
        return
    cost.charge(op.name, flops=2 * out * math.prod(lhs[0][d] for d in contracting))


def _handle_top_k(walker: Walker, op: Any, cost: Cost) -> None:
    walker.custom_calls.add(str(op.name))
    walker.note(f"{op.name}: compiled to a TopK library call (XLA:CPU) or a sort; not costed "
                "(0 flops)")


# The ops with a rule of their own (the walker's dispatch table).
HANDLERS: dict[str, Callable[[Walker, Any, Cost], None]] = {
    "func.call": _handle_call,
    SH + "composite": _handle_composite,
    SH + "while": _handle_while,
    SH + "case": _handle_branches,
    SH + "if": _handle_branches,
    SH + "dot_general": _handle_dot,
    SH + "dot": _handle_dot,
    SH + "convolution": _handle_convolution,
    SH + "reduce": _handle_reduce,
    SH + "reduce_window": _handle_reduce_window,
    SH + "select_and_scatter": _handle_select_and_scatter,
    SH + "scatter": _handle_scatter,
    SH + "map": _handle_map,
    SH + "sort": _handle_sort,
    SH + "all_reduce": _handle_cross_replica,
    SH + "reduce_scatter": _handle_cross_replica,
    SH + "fft": _handle_fft,
    SH + "cholesky": _handle_cholesky,
    SH + "triangular_solve": _handle_triangular_solve,
    SH + "rng": _handle_rng,
    SH + "rng_bit_generator": _handle_rng,
    SH + "custom_call": _handle_custom_call,
    "chlo.ragged_dot": _handle_ragged_dot,
    "chlo.top_k": _handle_top_k,
    "sdy.manual_computation": _handle_manual_computation,
}
