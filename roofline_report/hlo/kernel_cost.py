"""Our count of one HLO instruction's work: flops and transcendentals by the rules of
:func:`instruction_cost`, which follow the conventions of
:mod:`roofline_report.hlo.stablehlo_count` in HLO spelling (2 x output x contracted size for a
dot, one flop per element for elementwise ops including ``convert``, transcendental opcodes
counted apart, a reduce charged its body x (input - output elements), ...). A fusion costs its
fused computation, each computation counted once (:class:`Coster`).

Pure: no jax.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

from roofline_report.hlo.cost import Cost
from roofline_report.hlo.ir import Instruction, Module
from roofline_report.hlo.taps import DIM_LABELS, convolution_flops, window_dims
from roofline_report.hlo.tpu import (
    NO_FLOP_TARGETS,
    TPU,
    lane_reduction,
    product_convolution,
)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


ELEMENTWISE = _words(
    "add subtract multiply divide remainder maximum minimum negate abs sign floor ceil "
    "round-nearest-afz round-nearest-even compare select clamp convert and or xor not "
    "shift-left shift-right-arithmetic shift-right-logical is-finite popcnt "
    "count-leading-zeros real imag complex reduce-precision mulhi"
)
# XLA's transcendental opcodes (HloCostAnalysis::HandleElementwiseOp).
TRANSCENDENTAL = _words(
    "exponential exponential-minus-one log log-plus-one logistic power sqrt rsqrt cbrt "
    "tanh sine cosine tan atan2 erf"
)
MOVEMENT = _words(
    "copy transpose broadcast reshape slice dynamic-slice dynamic-update-slice concatenate pad "
    "gather reverse iota bitcast bitcast-convert copy-start copy-done parameter constant tuple "
    "get-tuple-element"
)
_NOT_KERNELS = _words(
    "parameter constant tuple get-tuple-element bitcast after-all add-dependency opt-barrier "
    "domain partition-id replica-id"
)
# HLO opcode -> the StableHLO op name our program count charges (for the per-op comparison).
_STABLEHLO_NAME = {"dot": "dot_general", "sine": "sine", "cosine": "cosine", "erf": "erf"}


def stablehlo_name(opcode: str) -> str:
    base = _STABLEHLO_NAME.get(opcode, opcode.replace("-", "_"))
    return ("chlo." if opcode == "erf" else "stablehlo.") + base


def _elements(instr: Instruction) -> int:
    return sum(a.elements for a in instr.shape.arrays() if a.dtype != "token")


def _operand_elements(instr: Instruction, index: int) -> int | None:
    if index >= len(instr.operand_shapes):
        return None
    shape = instr.operand_shapes[index]
    if shape is None or shape.array is None:
        return None
    return shape.array.elements


def ints_in(text: str | None) -> list[int]:
    return [int(v) for v in re.findall(r"\d+", text or "")]


def dot_flops(instr: Instruction) -> int | None:
    lhs = instr.operand_shapes[0] if instr.operand_shapes else None
    if lhs is None or lhs.array is None:
        return None
    contracting = ints_in(instr.attributes.get("lhs_contracting_dims"))
    size = math.prod(lhs.array.dims[d] for d in contracting if d < len(lhs.array.dims))
    return 2 * _elements(instr) * size


_DIM_LABELS = DIM_LABELS
_window = window_dims


def conv_flops(instr: Instruction) -> int | None:
    """XLA's convolution count of a ``convolution`` instruction (:func:`convolution_flops`)."""
    lhs = instr.operand_shapes[0] if instr.operand_shapes else None
    rhs = instr.operand_shapes[1] if len(instr.operand_shapes) > 1 else None
    out = instr.shape.array
    if lhs is None or rhs is None or lhs.array is None or rhs.array is None or out is None:
        return None
    return convolution_flops(lhs.array.dims, rhs.array.dims, out.dims, instr.attributes)


def window_elements(instr: Instruction) -> int:
    """The elements of a convolution's window (3x3: 9), from its ``window`` attribute's sizes
    (XLA prints them for every convolution with spatial dimensions); 0 where it has none."""
    size = re.search(r"size=(\d+(?:x\d+)*)", instr.attributes.get("window", ""))
    return math.prod(int(v) for v in size.group(1).split("x")) if size is not None else 0


def features_per_group(instr: Instruction) -> int:
    """The input features each group of a convolution reads (1 for a depthwise one): its input's
    feature dimension (``dim_labels``) over ``feature_group_count``; 1 where the labels do not
    fit the shapes."""
    labels = _DIM_LABELS.match(instr.attributes.get("dim_labels", ""))
    lhs = instr.operand_shapes[0] if instr.operand_shapes else None
    if labels is None or lhs is None or lhs.array is None \
            or len(labels["lhs"]) != len(lhs.array.dims) or "f" not in labels["lhs"]:
        return 1
    groups = max(1, int(instr.attributes.get("feature_group_count", "1")))
    return max(1, lhs.array.dims[labels["lhs"].index("f")] // groups)


def pads(instr: Instruction) -> bool:
    """Whether a convolution's ``window`` pads any side of any spatial dimension, negative
    padding too (:func:`_window` keeps only the low side)."""
    pad = re.search(r"pad=(\S+)", instr.attributes.get("window", ""))
    return pad is not None and any(int(v) for v in re.findall(r"-?\d+", pad.group(1)))


def tiles_input(instr: Instruction) -> bool:
    """Whether a convolution's windows tile its input: in every spatial dimension a stride
    equal to its window, no padding, no dilation, one feature group and one batch group. Such
    a convolution (a vision transformer's patch embedding, a 1x1 convolution) reads each input
    element once per output feature: it is the matrix product of the input's patches with the
    filters, not a window sliding over overlapping pixels."""
    if instr.opcode != "convolution":
        return False
    if instr.attributes.get("feature_group_count", "1") != "1" \
            or instr.attributes.get("batch_group_count", "1") != "1":
        return False
    if pads(instr):
        return False
    text = instr.attributes.get("window", "")
    size = re.search(r"size=([\dx]+)", text)
    if size is None:
        return False
    return all(width == stride and lhs == rhs == 1
               for width, stride, _pad, lhs, rhs in _window(text, len(size.group(1).split("x"))))


class Coster:
    """Cost of computations of one module, each computed once. ``backend`` is the backend the
    module was compiled for (:func:`roofline_report.hlo.tpu.hlo_backend`): a TPU's rules
    apply to a TPU's module only."""

    def __init__(self, module: Module, backend: str | None = None) -> None:
        self.module = module
        self.backend = backend
        self.tpu = backend == TPU
        self._done: dict[str, Cost] = {}
        self._stack: set[str] = set()

    def computation(self, name: str) -> Cost:
        if name in self._done:
            return self._done[name]
        comp = self.module.computations.get(name)
        if comp is None or name in self._stack:
            return Cost()
        self._stack.add(name)
        cost = Cost()
        for instr in comp.instructions:
            cost.add(instruction_cost(instr, self), scale_ops=False)
        self._stack.discard(name)
        self._done[name] = cost
        return cost

    def body(self, instr: Instruction, role: str = "to_apply") -> Cost:
        total = Cost()
        for callee in instr.called(role):
            total.add(self.computation(callee), scale_ops=False)
        return total


def fft_flops(elements: int, lengths: Sequence[int]) -> int:
    """XLA's rule (HloCostAnalysis::HandleFft): 8 flops (4 complex FMAs) per element of the
    operand per factor floor(log2 n) of each transformed length, the factors multiplied."""
    return 8 * math.prod(max(0, n.bit_length() - 1) for n in lengths) * elements


def fft_instruction_flops(instr: Instruction) -> int | None:
    """An ``fft`` instruction's flops (:func:`fft_flops`); None where its shapes are not
    known."""
    elements = _operand_elements(instr, 0)
    lengths = ints_in(instr.attributes.get("fft_length"))
    if elements is None or not lengths:
        return None
    return fft_flops(elements, lengths)


# Opcodes whose flops follow from their shapes and attributes; None: not costed.
_SHAPED_FLOPS: dict[str, Callable[[Instruction], int | None]] = {
    "dot": dot_flops, "convolution": conv_flops, "fft": fft_instruction_flops}


def instruction_cost(instr: Instruction, coster: Coster) -> Cost:
    """Our count of one HLO instruction (a fusion: the count of its fused computation).

    Rules (those of the StableHLO count, in HLO spelling): ``dot`` 2 x output elements x
    contracted size; ``convolution`` XLA's valid-tap count; elementwise ops 1 flop per output
    element; transcendental opcodes 1 transcendental per element; ``reduce`` the reducer's
    cost x (input - output elements); ``reduce-window`` body x (window - 1) x outputs; ``scatter``
    body x updates; ``map`` body x outputs; ``sort`` n x ceil(log2 n); ``fft`` XLA's 8 x
    operand elements x the product of floor(log2) of its lengths; all-reduce and
    reduce-scatter body x (group - 1) x elements; data movement 0; a library custom call (a
    convolution, gemm or fused attention: :mod:`~roofline_report.hlo.library_calls`) as the
    library does it; other custom calls 0 flops, listed as not counted with why.

    In a TPU's module (:mod:`~roofline_report.hlo.tpu`): a convolution that computes a matrix
    product is charged as the ``dot_general`` it is (priced at the matmul roof); a whole-row
    reduce-window as its row's ``reduce`` (body x (row - 1) per row); the compiler's custom
    calls that do no arithmetic (``X64Split*``, ``ConcatBitcast``, ...) 0, counted.
    """
    op = instr.opcode
    cost = Cost()
    if op not in _NOT_KERNELS:
        cost.ops[op] += 1
    name = stablehlo_name(op)
    if op == "fusion" or op == "call" or op.startswith("async-start"):
        for callee in instr.called("calls", "to_apply"):
            cost.add(coster.computation(callee), scale_ops=False)
    elif op in ELEMENTWISE:
        cost.charge(name, flops=_elements(instr))
    elif op in TRANSCENDENTAL:
        cost.charge(name, transcendentals=_elements(instr))
    elif op in _SHAPED_FLOPS:
        flops = _SHAPED_FLOPS[op](instr)
        if flops is None:
            cost.uncosted.add(instr.name)
        else:
            if coster.tpu and product_convolution(instr):
                name = stablehlo_name("dot")  # a matrix product the TPU writes as a convolution
            cost.charge(name, flops=flops)
    elif op == "reduce":
        inputs = _operand_elements(instr, 0)
        outputs = _elements(instr) // max(1, len(instr.operands) // 2)
        if inputs is not None:
            _charge(cost, name, coster.body(instr), inputs - outputs)
    elif op == "reduce-window" and coster.tpu and (lane := lane_reduction(instr)) is not None:
        # A reduction broadcast back along the row it reduces: the row's reduce, once per row.
        _, length = lane
        rows = _elements(instr) // max(1, length) // max(1, len(instr.operands) // 2)
        _charge(cost, stablehlo_name("reduce"), coster.body(instr), (length - 1) * rows)
    elif op == "reduce-window":
        window = _window(instr.attributes.get("window", ""), len(instr.shape.array.dims)
                         if instr.shape.array is not None else 0)
        taps = math.prod(w[0] or 1 for w in window)
        _charge(cost, name, coster.body(instr), (taps - 1) * _elements(instr))
    elif op == "scatter":
        updates = _operand_elements(instr, len(instr.operands) - 1)
        if updates is not None:
            _charge(cost, name, coster.body(instr), updates)
    elif op == "map":
        _charge(cost, name, coster.body(instr), _elements(instr))
    elif op == "sort":
        n = _operand_elements(instr, 0) or 0
        cost.charge(name, flops=n * max(0, math.ceil(math.log2(n))) if n > 0 else 0)
    elif op in ("all-reduce", "all-reduce-start", "reduce-scatter"):
        size = 2
        if instr.replica_groups is not None:
            size = instr.replica_groups.group_size(coster.module.device_count) or 2
        base = "all-reduce" if op.startswith("all-reduce") else op
        _charge(cost, stablehlo_name(base), coster.body(instr), _elements(instr) * (size - 1))
    elif op in ("rng", "rng-bit-generator"):
        cost.charge(name, transcendentals=_elements(instr))
    elif op == "custom-call" and coster.tpu and instr.custom_call_target in NO_FLOP_TARGETS:
        pass  # moves or marks data, computes nothing (roofline_report.hlo.tpu)
    elif op == "custom-call":
        from roofline_report.hlo.library_calls import library_call

        counted = library_call(instr)
        if counted.flops is not None:
            cost.charge(counted.op, flops=counted.flops)
            if counted.reason:  # a call known by its name: how it was counted
                cost.by_name.add(counted.reason)
        else:
            cost.uncosted.add(counted.reason)
    return cost


def _charge(cost: Cost, name: str, body: Cost, times: int) -> None:
    cost.charge(name, flops=body.flops * times, transcendentals=body.transcendentals * times)
