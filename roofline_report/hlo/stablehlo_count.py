"""Our own count of a JAX program's work and traffic, read from its StableHLO.

:func:`count_stablehlo` walks the StableHLO module (``jax.jit(f).lower(*args)
.compiler_ir('stablehlo')``) with the MLIR python bindings and counts what the program asks for:
an operation histogram, flops, transcendentals, and the minimum traffic (bytes of the entry
function's arguments and results). Unlike XLA's cost analysis it follows ``func.call`` into the
outlined scan/fori bodies and multiplies loop bodies by their trip count.
:func:`count_workload` lowers and compiles once and returns this count beside
:func:`roofline_report.hlo.compiled.inspect_compiled` of the optimized HLO.

Loops are paired with the compiled program's while loops by identity (:func:`match_loops`): the
same source file, line and column, or the same op_name; by position only when the two programs
have as many loops and the metadata leaves some unpaired (a note says so).

Counting conventions (chosen to match XLA's ``HloCostAnalysis`` where the program allows it):

* ``dot_general``: 2 x output elements x contracted size (= 2 x batch x M x N x K).
* ``convolution``: 2 x (input features / feature groups) x output features x (batch / batch
  groups) x in-bounds kernel taps. With no padding, dilation or stride effects this is
  2 x output elements x kernel spatial size x input features per group; with padding or
  dilation only the taps that land on the input are counted, as XLA does, in closed form
  (:func:`roofline_report.hlo.taps.valid_taps`: no loop over taps or outputs, so an
  ``lhs_dilation`` of 524,288 counts in microseconds).
* Elementwise ops (add, subtract, multiply, divide, maximum, minimum, negate, abs, compare,
  select, clamp, convert, logical and bitwise ops, ...): 1 flop per output element.
* Transcendentals are counted apart, one per output element: exp, expm1, log, log1p, logistic,
  power, sqrt, rsqrt, cbrt, tanh, sin, cos, tan, atan2 (XLA's list).
* ``chlo`` operations are charged what XLA compiles them into (:data:`CHLO_CHARGES`): the ops of
  XLA's expansion of each, counted by the rules here, per result element. Read from the compiled
  HLO of each op on float32 operands (jax 0.10.2, XLA:CPU); float64 where it differs. Narrower
  floats are charged the float32 figure (XLA:CPU computes them in float32: its converts show as
  rewrites when the kernels are reconciled with this count).

  ===================  =====  ===============  =======================================
  chlo op              flops  transcendentals  note
  ===================  =====  ===============  =======================================
  square               1      0                one multiply
  erf                  0      1                XLA's ``erf`` opcode
  erf_inv              37     2                f64: 100 flops, 2 transcendentals
  erfc                 60     1                f64: 88 flops, 1 transcendental
  lgamma               52     4
  digamma              73     3
  polygamma            254    19
  zeta                 122    11
  bessel_i1e           83     1                f64: 173 flops, 1 transcendental
  sinh                 10     3
  cosh                 3      2
  tan                  0      1                XLA's ``tan`` opcode
  asin                 5      2
  acos                 3      2
  atan                 0      1                an ``atan2``
  asinh                11     3
  acosh                7      4
  atanh                6      2
  next_after           20     0                compares, bit operations, selects
  conj                 4      0                real, imag, negate, complex
  is_inf               2      0                abs and compare
  is_pos_inf           1      0                a compare
  is_neg_inf           1      0                a compare
  mulhi                1      0                XLA's ``mulhi`` opcode
  ragged_dot           2 x output elements x contracted size (a dot with one group)
  top_k                0      0                a TopK library call: listed, not costed
  ===================  =====  ===============  =======================================

  Another chlo operation (none that jax 0.10 emits) counts 0 and a note says so.
* ``reduce``: the body's cost x (input elements - output elements). ``reduce_window``: the body's
  cost x (window elements - 1) x output elements: padding taps count, as in the op's semantics
  and in XLA (which, on CPU, may rewrite a cumulative reduce_window into a cheaper scan).
  ``scatter``: body x update elements; ``map``: body x output elements; ``sort``: n x
  ceil(log2 n) flops with n the operand's elements (XLA's formula); ``all_reduce``/
  ``reduce_scatter``: body x (group size - 1) x elements.
* ``while``: (condition + body) x trip count. The trip count is inferred from the condition region
  (compare of the induction variable against a constant, a constant init, an add-by-constant step)
  or taken from ``known_trip_count``; when neither is known the loop is counted once and a note
  says so. ``case``/``if``: the most expensive branch (as XLA does).
* Data movement (broadcast, reshape, transpose, slice, pad, concatenate, gather, iota, ...) and
  constants cost no flops. Custom calls cannot be costed: they count 0 and are listed.
* The op histogram counts executed op instances (loop bodies x trip count, callees once per call);
  ops inside a reducer body belong to their reduce. ``ops_static`` counts each op once as written.

The count always returns: its walks check a cooperative deadline at every operation
(``time_limit_s``, :data:`DEFAULT_TIME_LIMIT_S` by default), and past it
:func:`count_stablehlo` answers ``{"available": false, "reason": "not counted: ..."}``.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roofline_report.errors import InputError
from roofline_report.hlo.compiled import inspect_compiled
from roofline_report.hlo.cost import Cost
from roofline_report.hlo.taps import valid_taps

__all__ = [
    "CHLO_CHARGES",
    "CHLO_CHARGES_F64",
    "DEFAULT_TIME_LIMIT_S",
    "LoopIdentity",
    "count_stablehlo",
    "count_workload",
    "loop_identity",
    "match_loops",
    "parse_conv_dims",
    "parse_dot_contracting",
]

_SH = "stablehlo."


def _names(prefix: str, words: str) -> frozenset[str]:
    return frozenset(prefix + word for word in words.split())


_ELEMENTWISE = _names(
    _SH,
    "add subtract multiply divide remainder maximum minimum negate abs sign floor ceil "
    "round_nearest_afz round_nearest_even compare select clamp convert and or xor not "
    "shift_left shift_right_arithmetic shift_right_logical is_finite popcnt "
    "count_leading_zeros real imag complex reduce_precision",
)
# XLA's transcendental opcodes (HloCostAnalysis::HandleElementwiseOp), in StableHLO spelling.
_TRANSCENDENTAL = _names(
    _SH,
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
_FREE = (
    _names(
        _SH,
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
_TERMINATORS = frozenset({"func.return", _SH + "return", "sdy.return"})
_CONTAINERS = frozenset({"builtin.module", "func.func"})
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


# --------------------------------------------------------------------------------------------
# MLIR helpers (the bindings are untyped: Any at the boundary, plain Python values inside)
# --------------------------------------------------------------------------------------------


def _ir() -> Any:
    from jax.extend.mlir import ir

    return ir


def _stablehlo_dialect() -> Any | None:
    try:
        from jax.extend.mlir.dialects import stablehlo
    except ImportError:  # pragma: no cover - depends on the jax build
        return None
    return stablehlo


def _cast(cls: Any, value: Any) -> Any | None:
    """``value`` as an instance of the binding class ``cls``, or None when it is not one."""
    if isinstance(value, cls):
        return value
    try:
        return cls(value)
    except (ValueError, TypeError):
        return None


def _tensor_shape(mlir_type: Any) -> tuple[list[int], Any] | None:
    """(static dims, element type) of a ranked tensor type; None for tokens, tuples, dynamic."""
    ranked = _cast(_ir().RankedTensorType, mlir_type)
    if ranked is None or not ranked.has_static_shape:
        return None
    return [int(d) for d in ranked.shape], ranked.element_type


def _elements(mlir_type: Any) -> int | None:
    shape = _tensor_shape(mlir_type)
    return None if shape is None else math.prod(shape[0])


def _itemsize(element_type: Any) -> int | None:
    """Bytes per element: f32 4, bf16/f16 2, f64 8, i32 4, i8 1, i1 (pred) 1, complex<f32> 8."""
    ir = _ir()
    complex_type = _cast(ir.ComplexType, element_type)
    if complex_type is not None:
        inner = _itemsize(complex_type.element_type)
        return None if inner is None else 2 * inner
    for cls in (ir.IntegerType, ir.FloatType):
        typed = _cast(cls, element_type)
        if typed is not None:
            return max(1, (int(typed.width) + 7) // 8)
    if _cast(ir.IndexType, element_type) is not None:
        return 8
    match = re.fullmatch(r"(?:[su]?i|f|bf|tf)(\d+).*", str(element_type))
    return max(1, (int(match.group(1)) + 7) // 8) if match else None


def _int_attr(op: Any, name: str, default: int) -> int:
    if name not in op.attributes:
        return default
    attr = _cast(_ir().IntegerAttr, op.attributes[name])
    return default if attr is None else int(attr.value)


def _int_list_attr(op: Any, name: str) -> list[int] | None:
    """An ``array<i64: ...>`` or dense integer attribute as a flat list; None when absent."""
    if name not in op.attributes:
        return None
    attr = op.attributes[name]
    ir = _ir()
    dense_array = _cast(ir.DenseI64ArrayAttr, attr)
    if dense_array is not None:
        return [int(v) for v in dense_array]
    dense = _cast(ir.DenseIntElementsAttr, attr)
    if dense is not None:
        return [int(dense[i]) for i in range(len(dense))]
    return [int(v) for v in re.findall(r"-?\d+", str(attr).split(":")[0])]


def _symbol(attr: Any) -> str:
    ref = _cast(_ir().FlatSymbolRefAttr, attr)
    return str(ref.value) if ref is not None else str(attr).lstrip("@").strip('"')


def _string_attr(op: Any, name: str) -> str:
    if name not in op.attributes:
        return ""
    attr = _cast(_ir().StringAttr, op.attributes[name])
    return str(attr.value) if attr is not None else str(op.attributes[name]).strip('"')


def _const_int(value: Any) -> int | None:
    """The integer held by a scalar (or splat) ``stablehlo.constant``; None otherwise."""
    ir = _ir()
    result = _cast(ir.OpResult, value)
    if result is None:
        return None
    owner = result.owner.operation
    if owner.name != _SH + "constant" or "value" not in owner.attributes:
        return None
    dense = _cast(ir.DenseIntElementsAttr, owner.attributes["value"])
    if dense is None or len(dense) == 0:
        return None
    if len(dense) > 1 and not dense.is_splat:
        return None
    return int(dense[0])


def _block_arg_index(value: Any, block: Any) -> int | None:
    arg = _cast(_ir().BlockArgument, value)
    if arg is None or arg.owner != block:
        return None
    return int(arg.arg_number)


def _owner_op(value: Any) -> Any | None:
    result = _cast(_ir().OpResult, value)
    return None if result is None else result.owner.operation


def _dot_contracting(op: Any) -> list[int] | None:
    """lhs contracting dimensions of a ``dot_general``, via the dialect bindings or the text."""
    attr = op.attributes["dot_dimension_numbers"]
    dialect = _stablehlo_dialect()
    if dialect is not None:
        numbers = _cast(dialect.DotDimensionNumbers, attr)
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
class _ConvDims:
    input_batch: int
    input_feature: int
    input_spatial: list[int]
    kernel_input_feature: int
    kernel_spatial: list[int]
    output_feature: int
    output_spatial: list[int]


def _conv_dims(op: Any) -> _ConvDims | None:
    attr = op.attributes["dimension_numbers"]
    dialect = _stablehlo_dialect()
    if dialect is not None:
        dn = _cast(dialect.ConvDimensionNumbers, attr)
        if dn is not None:
            return _ConvDims(
                int(dn.input_batch_dimension),
                int(dn.input_feature_dimension),
                [int(d) for d in dn.input_spatial_dimensions],
                int(dn.kernel_input_feature_dimension),
                [int(d) for d in dn.kernel_spatial_dimensions],
                int(dn.output_feature_dimension),
                [int(d) for d in dn.output_spatial_dimensions],
            )
    return parse_conv_dims(str(attr))


def parse_conv_dims(text: str) -> _ConvDims | None:
    """Dimension numbers from ``#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>``."""
    match = re.search(r"\[([^\]]*)\]x\[([^\]]*)\]->\[([^\]]*)\]", text)
    if match is None:
        return None
    lhs, rhs, out = ([s.strip() for s in group.split(",")] for group in match.groups())

    def spatial(labels: list[str]) -> list[int]:
        digits = sorted((int(s), i) for i, s in enumerate(labels) if s.isdigit())
        return [i for _, i in digits]

    try:
        return _ConvDims(
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


# --------------------------------------------------------------------------------------------
# The StableHLO count
# --------------------------------------------------------------------------------------------


DEFAULT_TIME_LIMIT_S = 10.0


class _Deadline:
    """The count's time limit, checked cooperatively: each operation the walks visit asks
    :meth:`check`, which raises :class:`_OutOfTime` once the limit has passed."""

    def __init__(self, limit_s: float | None) -> None:
        self.limit_s = limit_s
        self.end = None if limit_s is None else time.monotonic() + limit_s
        self.visited = 0

    def passed(self) -> bool:
        self.visited += 1
        return self.end is not None and time.monotonic() > self.end

    def check(self, where: str) -> None:
        if self.passed():
            raise _OutOfTime(where, self)


class _OutOfTime(Exception):
    def __init__(self, where: str, deadline: _Deadline) -> None:
        super().__init__(where)
        self.where = where
        self.visited = deadline.visited
        self.limit_s = deadline.limit_s or 0.0

    def record(self) -> dict[str, Any]:
        return {
            "available": False,
            "reason": f"not counted: the count passed its {self.limit_s:g} s time limit at "
                      f"{self.where}, after {self.visited} operations (a larger time_limit_s "
                      "counts further)",
        }


class _Walker:
    """Recursive cost of regions, following calls and multiplying loops by trip counts."""

    def __init__(
        self,
        functions: Mapping[str, Any],
        known_trip_counts: Mapping[int, int],
        compiled: Mapping[int, Mapping[str, Any]],
        deadline: _Deadline | None = None,
    ):
        self.functions = functions
        self.known = known_trip_counts
        self.compiled = compiled
        self.deadline = deadline or _Deadline(None)
        self.loops: list[dict[str, Any]] = []
        self.identities: list[LoopIdentity] = []
        self.notes: list[str] = []
        self.custom_calls: set[str] = set()
        self._stack: list[str] = []

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def region(self, region: Any) -> Cost:
        cost = Cost()
        for block in region.blocks:
            for op in block.operations:
                cost.add(self.op(op.operation))
        return cost

    def call(self, callee: str) -> Cost:
        func = self.functions.get(callee)
        if func is None:
            self.note(f"call to unknown function @{callee}: not counted")
            return Cost()
        if callee in self._stack:
            self.note(f"recursive call to @{callee}: counted once")
            return Cost()
        self._stack.append(callee)
        try:
            return self.region(func.regions[0])
        finally:
            self._stack.pop()

    def op(self, op: Any) -> Cost:
        name = str(op.name)
        self.deadline.check(name if not self._stack else f"{name} in @{self._stack[-1]}")
        cost = Cost()
        if name in _TERMINATORS:
            return cost
        cost.ops[name] += 1
        handler = _HANDLERS.get(name)
        if handler is not None:
            handler(self, op, cost)
        elif name in _ELEMENTWISE:
            cost.charge(name, flops=self.result_elements(op))
        elif name in _TRANSCENDENTAL:
            cost.charge(name, transcendentals=self.result_elements(op))
        elif name in CHLO_CHARGES:
            flops, transcendentals = _chlo_charge(op)
            elements = self.result_elements(op)
            cost.charge(name, flops=flops * elements, transcendentals=transcendentals * elements)
        elif name in _FREE:
            pass
        elif len(op.regions) > 0:
            self.note(f"{name}: regions counted once")
            for region in op.regions:
                cost.add(self.region(region))
        else:
            self.note(f"{name}: not costed (0 flops)")
        return cost

    def result_elements(self, op: Any) -> int:
        if len(op.results) == 0:
            return 0
        count = _elements(op.results[0].type)
        if count is None:
            self.note(f"{op.name}: dynamic or non-tensor result, not costed")
            return 0
        return count

    def body_per_application(self, op: Any, index: int = 0) -> Cost:
        """Cost of one application of a reducer/comparator region (its ops are scalars)."""
        return self.region(op.regions[index])

    # ---- while loops ------------------------------------------------------------------------

    def while_loop(self, op: Any, cost: Cost) -> None:
        iteration = self.region(op.regions[0])
        iteration.add(self.region(op.regions[1]))
        index = len(self.loops)
        inferred = _trip_from_cond(op)
        paired = self.compiled.get(index) or {}
        known = self.known.get(index)
        if known is None and paired.get("known_trip_count") is not None:
            known = int(paired["known_trip_count"])
        if inferred is not None:
            trip, source = inferred, "cond"
            if known is not None and known != inferred:
                self.note(
                    f"loop {index}: condition gives {inferred} trips, compiled HLO says "
                    f"{known}; kept {inferred}"
                )
        elif known is not None:
            trip, source = known, "known_trip_count"
        else:
            trip, source = None, "unknown"
            self.note(f"loop {index}: trip count not found; its body is counted once")
        identity = loop_identity(op)
        self.identities.append(identity)
        self.loops.append(
            {
                "index": index,
                "trip_count": trip,
                "source": source,
                "body_flops": iteration.flops,
                "body_transcendentals": iteration.transcendentals,
                "op_name": identity.op_name,
                "location": identity.text(),
                "compiled_while": paired.get("name"),
                "matched_by": paired.get("matched_by"),
            }
        )
        cost.add(iteration, 1 if trip is None else trip)

    def branches(self, op: Any, cost: Cost) -> None:
        """Each quantity from its most expensive branch, as XLA costs a conditional."""
        options = [self.region(region) for region in op.regions]
        if not options:
            return
        most_flops = max(options, key=lambda c: c.flops)
        most_transcendentals = max(options, key=lambda c: c.transcendentals)
        combined = Cost(
            flops=most_flops.flops,
            transcendentals=most_transcendentals.transcendentals,
            flops_by_op=most_flops.flops_by_op,
            transcendentals_by_op=most_transcendentals.transcendentals_by_op,
            ops=most_flops.ops,
        )
        cost.add(combined)
        if len(options) > 1:
            self.note(f"{op.name}: the most expensive branch is counted")


def _trip_from_cond(op: Any) -> int | None:
    """Trip count of a ``stablehlo.while`` from its regions, or None when the pattern differs.

    Recognises ``compare DIR, iv, limit`` in the condition where ``iv`` is a carried value with a
    constant initial value, stepped in the body by adding (or subtracting) a constant, and
    ``limit`` is a constant or a carried value passed through unchanged from a constant.
    """
    cond_block = op.regions[0].blocks[0]
    body_block = op.regions[1].blocks[0]
    cond_ops = list(cond_block.operations)
    body_ops = list(body_block.operations)
    if not cond_ops or not body_ops:
        return None
    compare = _owner_op(cond_ops[-1].operation.operands[0])
    if compare is None or compare.name != _SH + "compare":
        return None
    direction = _comparison_direction(compare)
    body_return = body_ops[-1].operation
    lhs, rhs = compare.operands[0], compare.operands[1]

    def step_of(index: int) -> int | None:
        stepped = _owner_op(body_return.operands[index])
        if stepped is None or stepped.name not in (_SH + "add", _SH + "subtract"):
            return None
        a, b = stepped.operands[0], stepped.operands[1]
        if _block_arg_index(a, body_block) == index and (c := _const_int(b)) is not None:
            return c if stepped.name == _SH + "add" else -c
        if stepped.name == _SH + "add" and _block_arg_index(b, body_block) == index:
            return _const_int(a)
        return None

    def invariant(value: Any) -> int | None:
        constant = _const_int(value)
        if constant is not None:
            return constant
        index = _block_arg_index(value, cond_block)
        if index is None or _block_arg_index(body_return.operands[index], body_block) != index:
            return None
        return _const_int(op.operands[index])

    for iv, other, flipped in ((lhs, rhs, False), (rhs, lhs, True)):
        index = _block_arg_index(iv, cond_block)
        if index is None:
            continue
        init, step, limit = _const_int(op.operands[index]), step_of(index), invariant(other)
        if init is None or step is None or limit is None or step == 0:
            continue
        trips = _count_trips(init, step, limit, _flip(direction) if flipped else direction)
        if trips is not None:
            return trips
    return None


def _comparison_direction(compare: Any) -> str:
    attr = compare.attributes["comparison_direction"]
    dialect = _stablehlo_dialect()
    if dialect is not None:
        typed = _cast(dialect.ComparisonDirectionAttr, attr)
        if typed is not None:
            return str(typed.value)
    match = re.search(r"comparison_direction\s+(\w+)", str(attr))
    return match.group(1) if match else ""


def _flip(direction: str) -> str:
    return {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE"}.get(direction, direction)


def _count_trips(init: int, step: int, limit: int, direction: str) -> int | None:
    """Iterations of ``for (i = init; i DIR limit; i += step)``; None if it would not end."""
    if direction in ("LT", "LE") and step > 0:
        span = limit - init + (1 if direction == "LE" else 0)
        return max(0, -(-span // step))
    if direction in ("GT", "GE") and step < 0:
        span = init - limit + (1 if direction == "GE" else 0)
        return max(0, -(-span // -step))
    if direction == "NE":
        span = limit - init
        if span % step == 0 and span // step >= 0:
            return span // step
    return None


# ---- op handlers ---------------------------------------------------------------------------


def _handle_call(walker: _Walker, op: Any, cost: Cost) -> None:
    cost.add(walker.call(_symbol(op.attributes["callee"])))


def _handle_composite(walker: _Walker, op: Any, cost: Cost) -> None:
    cost.add(walker.call(_symbol(op.attributes["decomposition"])))


def _handle_while(walker: _Walker, op: Any, cost: Cost) -> None:
    walker.while_loop(op, cost)


def _handle_branches(walker: _Walker, op: Any, cost: Cost) -> None:
    walker.branches(op, cost)


def _handle_dot(walker: _Walker, op: Any, cost: Cost) -> None:
    lhs = _tensor_shape(op.operands[0].type)
    out = _elements(op.results[0].type)
    if op.name == _SH + "dot":
        contracting: list[int] | None = [len(lhs[0]) - 1] if lhs and lhs[0] else []
    else:
        contracting = _dot_contracting(op)
    if lhs is None or out is None or contracting is None:
        walker.note(f"{op.name}: shapes or dimension numbers unreadable, not costed")
        return
    cost.charge(op.name, flops=2 * out * math.prod(lhs[0][d] for d in contracting))


def _handle_convolution(walker: _Walker, op: Any, cost: Cost) -> None:
    lhs = _tensor_shape(op.operands[0].type)
    rhs = _tensor_shape(op.operands[1].type)
    out = _tensor_shape(op.results[0].type)
    dims = _conv_dims(op)
    if lhs is None or rhs is None or out is None or dims is None:
        walker.note(f"{op.name}: shapes or dimension numbers unreadable, not costed")
        return
    n = len(dims.kernel_spatial)
    strides = _int_list_attr(op, "window_strides") or [1] * n
    padding = _int_list_attr(op, "padding") or [0] * (2 * n)
    lhs_dil = _int_list_attr(op, "lhs_dilation") or [1] * n
    rhs_dil = _int_list_attr(op, "rhs_dilation") or [1] * n
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
    groups = _int_attr(op, "feature_group_count", 1)
    batch_groups = _int_attr(op, "batch_group_count", 1)
    fma = (
        (lhs[0][dims.input_feature] // groups)
        * out[0][dims.output_feature]
        * (lhs[0][dims.input_batch] // batch_groups)
        * taps
    )
    cost.charge(op.name, flops=2 * fma)


def _charge_body(op: Any, cost: Cost, body: Cost, times: int) -> None:
    cost.charge(op.name, flops=body.flops * times, transcendentals=body.transcendentals * times)


def _handle_reduce(walker: _Walker, op: Any, cost: Cost) -> None:
    inputs = _elements(op.operands[0].type)
    outputs = _elements(op.results[0].type)
    if inputs is None or outputs is None:
        walker.note(f"{op.name}: dynamic shape, not costed")
        return
    _charge_body(op, cost, walker.body_per_application(op), inputs - outputs)


def _handle_reduce_window(walker: _Walker, op: Any, cost: Cost) -> None:
    outputs = _elements(op.results[0].type)
    window = _int_list_attr(op, "window_dimensions")
    if outputs is None or window is None:
        walker.note(f"{op.name}: dynamic shape, not costed")
        return
    combines = (math.prod(window) - 1) * outputs
    _charge_body(op, cost, walker.body_per_application(op), combines)


def _handle_select_and_scatter(walker: _Walker, op: Any, cost: Cost) -> None:
    source = _elements(op.operands[1].type)
    window = _int_list_attr(op, "window_dimensions")
    if source is None or window is None:
        walker.note(f"{op.name}: dynamic shape or no window, not costed")
        return
    _charge_body(op, cost, walker.body_per_application(op, 0), source * (math.prod(window) - 1))
    _charge_body(op, cost, walker.body_per_application(op, 1), source)


def _handle_scatter(walker: _Walker, op: Any, cost: Cost) -> None:
    n_inputs = (len(op.operands) - 1) // 2
    updates = _elements(op.operands[n_inputs + 1].type)
    if updates is None:
        walker.note(f"{op.name}: dynamic shape, not costed")
        return
    _charge_body(op, cost, walker.body_per_application(op), updates)


def _handle_map(walker: _Walker, op: Any, cost: Cost) -> None:
    _charge_body(op, cost, walker.body_per_application(op), walker.result_elements(op))


def _handle_sort(walker: _Walker, op: Any, cost: Cost) -> None:
    n = _elements(op.operands[0].type)
    if n is None:
        walker.note(f"{op.name}: dynamic shape, not costed")
        return
    cost.charge(op.name, flops=n * max(0, math.ceil(math.log2(n))) if n > 0 else 0)


def _handle_cross_replica(walker: _Walker, op: Any, cost: Cost) -> None:
    groups = op.attributes["replica_groups"] if "replica_groups" in op.attributes else None  # noqa: SIM401
    dense = None if groups is None else _cast(_ir().DenseIntElementsAttr, groups)
    shape = None if dense is None else _tensor_shape(dense.type)
    if shape is None or len(shape[0]) != 2:
        group_size = 2
        walker.note(f"{op.name}: group size unreadable, 2 participants assumed (as XLA does)")
    else:
        group_size = shape[0][1]
    body = walker.body_per_application(op)
    elements = sum(_elements(result.type) or 0 for result in op.results)
    _charge_body(op, cost, body, elements * max(0, group_size - 1))


def _handle_fft(walker: _Walker, op: Any, cost: Cost) -> None:
    n = _elements(op.operands[0].type)
    lengths = _int_list_attr(op, "fft_length") or []
    if n is None:
        walker.note(f"{op.name}: dynamic shape, not costed")
        return
    log_factors = math.prod(max(0, int(length).bit_length() - 1) for length in lengths)
    cost.charge(op.name, flops=2 * 4 * log_factors * n)


def _handle_cholesky(walker: _Walker, op: Any, cost: Cost) -> None:
    a = _tensor_shape(op.operands[0].type)
    if a is None or not a[0]:
        return
    cost.charge(op.name, flops=a[0][-1] * math.prod(a[0]) // 3)


def _handle_triangular_solve(walker: _Walker, op: Any, cost: Cost) -> None:
    a = _tensor_shape(op.operands[0].type)
    b = _elements(op.operands[1].type)
    if a is None or not a[0] or b is None:
        return
    cost.charge(op.name, flops=2 * a[0][-1] * b)


def _handle_rng(walker: _Walker, op: Any, cost: Cost) -> None:
    count = sum(_elements(result.type) or 0 for result in op.results)
    cost.charge(op.name, transcendentals=count)


def _handle_manual_computation(walker: _Walker, op: Any, cost: Cost) -> None:
    walker.note(
        f"{op.name} (shard_map): its body is counted once, for one device's shard, while the "
        "minimum bytes are of the global arguments and results"
    )
    cost.add(walker.region(op.regions[0]))


def _handle_custom_call(walker: _Walker, op: Any, cost: Cost) -> None:
    target = _string_attr(op, "call_target_name")
    if target in _FREE_CUSTOM_CALLS:
        return
    walker.custom_calls.add(target)
    walker.note(f"custom call {target!r}: not costed (0 flops)")


def _chlo_charge(op: Any) -> tuple[int, int]:
    """(flops, transcendentals) per element of a chlo operation (:data:`CHLO_CHARGES`)."""
    name = str(op.name)
    shape = _tensor_shape(op.results[0].type) if len(op.results) else None
    if shape is not None and str(shape[1]) == "f64" and name in CHLO_CHARGES_F64:
        return CHLO_CHARGES_F64[name]
    return CHLO_CHARGES[name]


def _handle_ragged_dot(walker: _Walker, op: Any, cost: Cost) -> None:
    """``chlo.ragged_dot``: each row of the lhs meets one group of the rhs, so 2 x output
    elements x contracted size, as a dot of the lhs with one group."""
    lhs = _tensor_shape(op.operands[0].type)
    out = _elements(op.results[0].type)
    key = "ragged_dot_dimension_numbers"
    attr = op.attributes[key] if key in op.attributes else None  # noqa: SIM401
    contracting = None if attr is None else parse_dot_contracting(str(attr))
    if lhs is None or out is None or contracting is None:
        walker.note(f"{op.name}: shapes or dimension numbers unreadable, not costed")
        return
    cost.charge(op.name, flops=2 * out * math.prod(lhs[0][d] for d in contracting))


def _handle_top_k(walker: _Walker, op: Any, cost: Cost) -> None:
    walker.custom_calls.add(str(op.name))
    walker.note(f"{op.name}: compiled to a TopK library call (XLA:CPU) or a sort; not costed "
                "(0 flops)")


_Handler = Callable[[_Walker, Any, Cost], None]
_HANDLERS: dict[str, _Handler] = {
    "func.call": _handle_call,
    _SH + "composite": _handle_composite,
    _SH + "while": _handle_while,
    _SH + "case": _handle_branches,
    _SH + "if": _handle_branches,
    _SH + "dot_general": _handle_dot,
    _SH + "dot": _handle_dot,
    _SH + "convolution": _handle_convolution,
    _SH + "reduce": _handle_reduce,
    _SH + "reduce_window": _handle_reduce_window,
    _SH + "select_and_scatter": _handle_select_and_scatter,
    _SH + "scatter": _handle_scatter,
    _SH + "map": _handle_map,
    _SH + "sort": _handle_sort,
    _SH + "all_reduce": _handle_cross_replica,
    _SH + "reduce_scatter": _handle_cross_replica,
    _SH + "fft": _handle_fft,
    _SH + "cholesky": _handle_cholesky,
    _SH + "triangular_solve": _handle_triangular_solve,
    _SH + "rng": _handle_rng,
    _SH + "rng_bit_generator": _handle_rng,
    _SH + "custom_call": _handle_custom_call,
    "chlo.ragged_dot": _handle_ragged_dot,
    "chlo.top_k": _handle_top_k,
    "sdy.manual_computation": _handle_manual_computation,
}


def _signature_bytes(
    types: Iterable[Any], by_dtype: Counter[str], notes: list[str], what: str
) -> int:
    total = 0
    for mlir_type in types:
        shape = _tensor_shape(mlir_type)
        if shape is None:
            if "token" not in str(mlir_type):
                notes.append(f"{what} of type {mlir_type} has no static size: not counted")
            continue
        dims, element = shape
        size = _itemsize(element)
        if size is None:
            notes.append(f"{what} element type {element} has no known size: not counted")
            continue
        nbytes = math.prod(dims) * size
        by_dtype[str(element)] += nbytes
        total += nbytes
    return total


def _as_module(module: Any) -> Any:
    if hasattr(module, "compiler_ir"):  # a jax.stages.Lowered
        module = module.compiler_ir("stablehlo")
    ir = _ir()
    if not isinstance(module, ir.Module):
        raise InputError(
            f"count_stablehlo needs a StableHLO MLIR module, got {type(module).__name__}"
        )
    return module


@dataclass(frozen=True, slots=True)
class LoopIdentity:
    """What names a loop across the two programs: op_name and the innermost source location
    (file base name, line, column), each None when the metadata does not give it."""

    op_name: str | None = None
    file: str | None = None
    line: int | None = None
    column: int | None = None

    def text(self) -> str | None:
        """``name.py:12`` or None."""
        if self.file is None:
            return None
        return self.file if self.line is None else f"{self.file}:{self.line}"

    @staticmethod
    def of_compiled(loop: Mapping[str, Any]) -> LoopIdentity:
        """The identity of one :func:`~roofline_report.hlo.compiled.while_loops` record."""
        file = loop.get("source_file")
        line, column = loop.get("source_line"), loop.get("source_column")
        return LoopIdentity(
            loop.get("op_name") or None,
            re.split(r"[/\\]", file)[-1] if isinstance(file, str) and file else None,
            line if isinstance(line, int) and line > 0 else None,
            column if isinstance(column, int) and column > 0 else None,
        )


_LOC_NAME = re.compile(r'^loc\("((?:[^"\\]|\\.)*)"(?=[()])')
_LOC_FILE = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)')


def loop_identity(op: Any) -> LoopIdentity:
    """The :class:`LoopIdentity` of an MLIR op from its location: the name of a name location
    and the first file location in it (the innermost frame of a call-site chain)."""
    text = str(op.location)
    name = _LOC_NAME.match(text)
    where = _LOC_FILE.search(text)
    return LoopIdentity(
        name.group(1) if name else None,
        re.split(r"[/\\]", where.group(1))[-1] if where else None,
        int(where.group(2)) if where else None,
        int(where.group(3)) if where else None,
    )


def _location_key(identity: LoopIdentity) -> Any:
    if identity.file is None or identity.line is None or identity.column is None:
        return None
    return (identity.file, identity.line, identity.column)


def _line_key(identity: LoopIdentity) -> Any:
    if identity.file is None or identity.line is None:
        return None
    return (identity.file, identity.line)


def _name_key(identity: LoopIdentity) -> Any:
    return identity.op_name


_PASSES: tuple[tuple[str, Callable[[LoopIdentity], Any]], ...] = (
    ("source location", _location_key),
    ("source line", _line_key),
    ("op_name", _name_key),
)


def match_loops(
    ours: Sequence[LoopIdentity], theirs: Sequence[LoopIdentity]
) -> tuple[dict[int, tuple[int, str]], list[str]]:
    """Pair the program's loops (``ours``) with the compiled while loops (``theirs``).

    Pass by pass (same file, line and column; same file and line; same op_name), the loops
    sharing a key are paired in order when both sides hold as many of them. Loops left over are
    paired by position only when both programs have as many loops; a note then says so.
    Returns ({our index: (their index, how)}, notes); ``how`` is ``"source location"``,
    ``"source line"``, ``"op_name"`` or ``"position"``.
    """
    pairs: dict[int, tuple[int, str]] = {}
    taken: set[int] = set()
    for how, key in _PASSES:
        mine: dict[Any, list[int]] = {}
        other: dict[Any, list[int]] = {}
        for i, identity in enumerate(ours):
            if i not in pairs and key(identity) is not None:
                mine.setdefault(key(identity), []).append(i)
        for j, identity in enumerate(theirs):
            if j not in taken and key(identity) is not None:
                other.setdefault(key(identity), []).append(j)
        for value, indices in mine.items():
            candidates = other.get(value, [])
            if len(candidates) == len(indices):
                for i, j in zip(indices, candidates, strict=True):
                    pairs[i] = (j, how)
                    taken.add(j)
    notes: list[str] = []
    left = [i for i in range(len(ours)) if i not in pairs]
    left_theirs = [j for j in range(len(theirs)) if j not in taken]
    if not left:
        return pairs, notes
    if len(ours) == len(theirs):
        for i, j in zip(left, left_theirs, strict=True):
            pairs[i] = (j, "position")
        notes.append(
            f"loop{'s' if len(left) > 1 else ''} {', '.join(map(str, left))} paired with the "
            "compiled while loops by position: the metadata does not identify them"
        )
    else:
        notes.append(
            f"{len(theirs)} compiled loops do not pair up with the program's {len(ours)}: "
            f"loop{'s' if len(left) > 1 else ''} {', '.join(map(str, left))} matched by "
            "neither source location nor op_name, their known_trip_count not used"
        )
    return pairs, notes


def count_stablehlo(
    module: Any,
    trip_counts: Mapping[int, int] | None = None,
    *,
    compiled_loops: Sequence[Mapping[str, Any]] | None = None,
    time_limit_s: float | None = DEFAULT_TIME_LIMIT_S,
) -> dict[str, Any]:
    """Count a StableHLO module's work and minimum traffic (conventions: module docstring).

    ``module``: ``lowered.compiler_ir('stablehlo')`` (or the ``Lowered`` itself).
    ``trip_counts``: loop index (the ``loops[i]["index"]`` order, a post-order walk from the
    entry function) -> trip count, for loops whose condition region gives none.
    ``compiled_loops``: the compiled program's while loops
    (:func:`~roofline_report.hlo.compiled.inspect_compiled`'s ``while_loops``), paired with the
    program's loops by :func:`match_loops`; a paired loop's ``known_trip_count`` serves when the
    condition region gives none (and ``trip_counts`` does not either), and is checked against it
    when it does.

    Returns plain JSON: ``{"entry", "ops", "ops_static", "flops", "transcendentals",
    "flops_by_op", "transcendentals_by_op", "argument_bytes", "result_bytes", "minimum_bytes",
    "bytes_by_dtype", "loops": [{"index", "trip_count", "source", "body_flops",
    "body_transcendentals", "op_name", "location", "compiled_while", "matched_by"}],
    "unknown_trip_counts", "custom_calls", "notes"}``.

    ``time_limit_s`` bounds the count's time (None: no bound): the walks check it at every
    operation, and past it the count stops and returns ``{"available": false, "reason":
    "not counted: ..."}`` naming the limit and the operation it had reached. Every rule is
    closed-form (a convolution's taps included), so only a very large program comes near it.
    Raises InputError when ``module`` is not a module or has no public function, when
    ``trip_counts`` is not a mapping, or when ``time_limit_s`` is not a positive number.
    """
    if trip_counts is not None and not isinstance(trip_counts, Mapping):
        raise InputError(
            "trip_counts must map loop indices to trip counts; pass the compiled while loops "
            "as compiled_loops"
        )
    if time_limit_s is not None and (
        isinstance(time_limit_s, bool) or not isinstance(time_limit_s, int | float)
        or not time_limit_s > 0
    ):
        raise InputError(f"time_limit_s must be a positive number of seconds or None, got "
                         f"{time_limit_s!r}")
    known = {int(i): int(n) for i, n in (trip_counts or {}).items()}
    deadline = _Deadline(None if time_limit_s is None else float(time_limit_s))
    try:
        return _count_paired(module, known, compiled_loops, deadline)
    except _OutOfTime as out:
        return out.record()


def _count_paired(
    module: Any,
    known: Mapping[int, int],
    compiled_loops: Sequence[Mapping[str, Any]] | None,
    deadline: _Deadline,
) -> dict[str, Any]:
    counted, identities = _count_module(module, known, {}, deadline)
    if compiled_loops is None or not identities:
        return counted
    theirs = [LoopIdentity.of_compiled(loop) for loop in compiled_loops]
    pairs, notes = match_loops(identities, theirs)
    paired = {
        i: {
            "name": compiled_loops[j].get("name"),
            "known_trip_count": compiled_loops[j].get("known_trip_count"),
            "matched_by": how,
        }
        for i, (j, how) in pairs.items()
    }
    counted, _ = _count_module(module, known, paired, deadline)
    counted["notes"].extend(notes)
    return counted


def _count_module(
    module: Any,
    known: Mapping[int, int],
    compiled: Mapping[int, Mapping[str, Any]],
    deadline: _Deadline,
) -> tuple[dict[str, Any], list[LoopIdentity]]:
    module = _as_module(module)
    with module.context:
        functions: dict[str, Any] = {}
        static: Counter[str] = Counter()
        stopped: list[str] = []

        def visit(op: Any) -> Any:
            operation = op.operation
            name = str(operation.name)
            if deadline.passed():
                stopped.append(f"{name} (listing the module's operations)")
                return _ir().WalkResult.INTERRUPT
            if name == "func.func" and operation.parent is not None:
                functions[_string_attr(operation, "sym_name")] = operation
            if name not in _TERMINATORS and name not in _CONTAINERS:
                static[name] += 1
            return _ir().WalkResult.ADVANCE

        module.operation.walk(visit)
        if stopped:
            raise _OutOfTime(stopped[0], deadline)
        entry = _entry_function(functions)
        if entry is None:
            raise InputError("the StableHLO module has no public function to count")
        walker = _Walker(functions, known, compiled, deadline)
        cost = walker.call(entry)
        func_type = _ir().FunctionType(
            _ir().TypeAttr(functions[entry].attributes["function_type"]).value
        )
        by_dtype: Counter[str] = Counter()
        notes = list(walker.notes)
        arg_bytes = _signature_bytes(func_type.inputs, by_dtype, notes, "argument")
        res_bytes = _signature_bytes(func_type.results, by_dtype, notes, "result")
    counted = {
        "entry": entry,
        "ops": dict(sorted(cost.ops.items())),
        "ops_static": dict(sorted(static.items())),
        "flops": cost.flops,
        "transcendentals": cost.transcendentals,
        "flops_by_op": dict(sorted(cost.flops_by_op.items())),
        "transcendentals_by_op": dict(sorted(cost.transcendentals_by_op.items())),
        "argument_bytes": arg_bytes,
        "result_bytes": res_bytes,
        "minimum_bytes": arg_bytes + res_bytes,
        "bytes_by_dtype": dict(sorted(by_dtype.items())),
        "loops": walker.loops,
        "unknown_trip_counts": sum(1 for loop in walker.loops if loop["trip_count"] is None),
        "custom_calls": sorted(walker.custom_calls),
        "notes": notes,
    }
    return counted, walker.identities


def _entry_function(functions: Mapping[str, Any]) -> str | None:
    public = [
        name
        for name, func in functions.items()
        if _string_attr(func, "sym_visibility") in ("", "public")
    ]
    if "main" in public:
        return "main"
    return public[0] if public else None


# --------------------------------------------------------------------------------------------
# One call for a workload
# --------------------------------------------------------------------------------------------


def count_workload(fn: Callable[..., Any], *args: Any) -> dict[str, Any]:
    """Lower and compile ``fn(*args)`` once; return ``{"stablehlo": count_stablehlo(...),
    "compiled": inspect_compiled(...)}``, the program's loops paired with the compiled while
    loops (:func:`match_loops`), whose ``known_trip_count`` serves loops whose trip count the
    condition region does not give.

    Raises InputError when ``fn`` is not callable or cannot be lowered/compiled with ``args``.
    """
    import jax

    if not callable(fn):
        raise InputError(f"the workload must be callable, got {type(fn).__name__}")
    label = getattr(fn, "__name__", type(fn).__name__)
    try:
        lowered = fn.lower(*args) if hasattr(fn, "lower") else jax.jit(fn).lower(*args)
        compiled = lowered.compile()
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise InputError(
            f"workload {label} cannot be lowered: {type(exc).__name__}: {first}"
        ) from exc
    module = lowered.compiler_ir("stablehlo")
    inspected = inspect_compiled(str(compiled.as_text()))
    counted = count_stablehlo(module, compiled_loops=inspected["while_loops"])
    return {"stablehlo": counted, "compiled": inspected}
