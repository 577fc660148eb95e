"""Our own count of a JAX program's work and traffic, read from its StableHLO.

:func:`count_stablehlo` walks the StableHLO module (``jax.jit(f).lower(*args)
.compiler_ir('stablehlo')``) with the MLIR python bindings and counts what the program asks for:
an operation histogram, flops, transcendentals, and the minimum traffic (bytes of the entry
function's arguments and results). Unlike XLA's cost analysis it follows ``func.call`` into the
outlined scan/fori bodies and multiplies loop bodies by their trip count.
:func:`roofline_report.observe.lower.count_workload` lowers and compiles once and returns this
count beside :func:`roofline_report.hlo.compiled.inspect_compiled` of the optimized HLO (lowering
is measuring: it lives in observe/, the one package that imports jax).

Loops are paired with the compiled program's while loops by identity (:func:`match_loops`): the
same source file, line and column, or the same op_name; by position only when the two programs
have as many loops and the metadata leaves some unpaired (a note says so).

The count is in parts: :mod:`~roofline_report.hlo.stablehlo_walker` (the walk of regions, calls
and loops under the time limit), :mod:`~roofline_report.hlo.stablehlo_ops` (the op tables and
one handler per op with a rule of its own), :mod:`~roofline_report.hlo.stablehlo_loops` (trip
counts from condition regions, loop identities and :func:`match_loops`) and
:mod:`~roofline_report.hlo.stablehlo_mlir` (reading types and attributes through the MLIR
bindings). This module puts them together.

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
* ``chlo`` operations are charged what XLA compiles them into
  (:data:`~roofline_report.hlo.stablehlo_ops.CHLO_CHARGES`): the ops of XLA's expansion of
  each, counted by the rules here, per result element. Read from the compiled
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
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from roofline_report.errors import InputError
from roofline_report.hlo.stablehlo_loops import LoopIdentity, match_loops
from roofline_report.hlo.stablehlo_mlir import itemsize, mlir_ir, string_attr, tensor_shape
from roofline_report.hlo.stablehlo_ops import CONTAINERS, TERMINATORS
from roofline_report.hlo.stablehlo_walker import Deadline, OutOfTime, Walker

__all__ = ["DEFAULT_TIME_LIMIT_S", "count_stablehlo"]

# --------------------------------------------------------------------------------------------
# The StableHLO count
# --------------------------------------------------------------------------------------------


DEFAULT_TIME_LIMIT_S = 10.0


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
    deadline = Deadline(None if time_limit_s is None else float(time_limit_s))
    try:
        return _count_paired(module, known, compiled_loops, deadline)
    except OutOfTime as out:
        return out.record()


def _count_paired(
    module: Any,
    known: Mapping[int, int],
    compiled_loops: Sequence[Mapping[str, Any]] | None,
    deadline: Deadline,
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
    deadline: Deadline,
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
                return mlir_ir().WalkResult.INTERRUPT
            if name == "func.func" and operation.parent is not None:
                functions[string_attr(operation, "sym_name")] = operation
            if name not in TERMINATORS and name not in CONTAINERS:
                static[name] += 1
            return mlir_ir().WalkResult.ADVANCE

        module.operation.walk(visit)
        if stopped:
            raise OutOfTime(stopped[0], deadline)
        entry = _entry_function(functions)
        if entry is None:
            raise InputError("the StableHLO module has no public function to count")
        walker = Walker(functions, known, compiled, deadline)
        cost = walker.call(entry)
        func_type = mlir_ir().FunctionType(
            mlir_ir().TypeAttr(functions[entry].attributes["function_type"]).value
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
        if string_attr(func, "sym_visibility") in ("", "public")
    ]
    if "main" in public:
        return "main"
    return public[0] if public else None


def _signature_bytes(
    types: Iterable[Any], by_dtype: Counter[str], notes: list[str], what: str
) -> int:
    total = 0
    for mlir_type in types:
        shape = tensor_shape(mlir_type)
        if shape is None:
            if "token" not in str(mlir_type):
                notes.append(f"{what} of type {mlir_type} has no static size: not counted")
            continue
        dims, element = shape
        size = itemsize(element)
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
    ir = mlir_ir()
    if not isinstance(module, ir.Module):
        raise InputError(
            f"count_stablehlo needs a StableHLO MLIR module, got {type(module).__name__}"
        )
    return module
