"""The kernel inventory of a compiled program: every kernel the runtime launches, with our count.

:func:`kernel_inventory` lists the kernel sites of the one walk of the program's call graph
(:mod:`roofline_report.hlo.walk`, also read by
:func:`roofline_report.hlo.compiled.inspect_compiled`, so the two agree): fusions (with their
kind: ``kLoop``, ``kInput``, ``kOutput``, ``kCustom`` and the backend's kind such as
``__ynn_fusion`` or a Triton gemm), library custom calls (oneDNN, cuBLAS, cuDNN, ...), copies and
transposes, sorts, collectives (an async ``-start``/``-done`` pair once), and the kernels inside
while-loop bodies and conditions with the loop's trip count (``trips_known`` false when a loop
around it has none: counted once). Control flow (``while``, ``conditional``, ``call``) is not a
kernel: the walk enters it. Every branch of a conditional is listed, each kernel marked with its
``branch``; the totals charge the most expensive branch only (``charged``), weighing each kernel
by (flops + transcendentals, bytes touched, one launch).

Each kernel gets flops and transcendentals from our own count of the HLO it runs (the rules of
:func:`instruction_cost`, which follow the conventions of
:mod:`roofline_report.hlo.stablehlo_count`: 2 x output x contracted size for a dot, one flop per
element for elementwise ops including ``convert``, transcendental opcodes counted apart, a reduce
charged its body x (input - output elements), ...), how many times one call of the program runs
it, its op_name and its source file and line, the path made relative to the user's project
(never absolute).

Bytes (:func:`kernel_traffic`): ``bytes_read``/``bytes_written`` are the bytes a launch TOUCHES,
what the model charges; ``boundary_bytes_read``/``boundary_bytes_written`` keep the old figure,
its operand and result buffers whole; ``bytes_rule`` says why they differ. The rules, those of
XLA's emitters and of JAX's own roofline (``jax.experimental.roofline``: a gather reads the
gathered elements, a scatter 3 x its updates plus its indices):

* ``slice``/``dynamic-slice``: reads the slice's elements of operand 0 (and its indices).
* ``gather``: reads the gathered elements of operand 0 (the result's count), and the indices.
* ``dynamic-update-slice``, alone or as the root of a fusion (through bitcasts) whose operand 0
  is a fusion parameter: XLA runs it in place (copy insertion gives the update and its operand
  one buffer, and the emitter loops over the update only), so it does not read operand 0 and
  writes the update's elements only; ``in_place`` is true.
* ``scatter`` (alone or as a fusion root, in place alike): reads and writes the updated elements
  of its operand (not read when the combiner only overwrites), reads the indices and updates.
* A fusion parameter used only by slices, dynamic slices, gathers and in-place updates inside the
  fusion, possibly through index-only ops (bitcast, reshape, transpose, copy), is read for those
  elements only (their sum, at most the whole parameter); any other use reads it whole.
* Everything else: operands and results whole (a library call's s8 workspace is not output).

Inside a loop, these are per launch: a dynamic-update-slice writing one row of a [32, 32, 256]
buffer per iteration charges one row (32 KiB) per launch, not the buffer (1 MiB).

Patterns (:func:`kernel_pattern`), the kinds of kernel with roofs of their own; a kernel takes the
first that applies, in this order, with ``pattern_size`` per launch and ``pattern_detail``:

* ``loop-dot``: a dot computed by XLA's own loop emitter, an HLO ``dot`` kernel or a fusion
  holding one, not handed to a library (no custom call, no ``kCustom`` fusion, no backend fusion
  kind such as ``__ynn_fusion``, oneDNN or a Triton gemm); size: its flops. On XLA:CPU
  (jax 0.10.2) these stay plain ``dot`` kernels: f32 matrix products below 8 x 8 (4 x 4),
  integer dots (s32 x s32, s8 x s8 -> s8, u8), complex dots and matrix-vector products (a
  1024 x 1024 matrix by a vector); f32, f64 and f16 products from 8 x 8 up, batched products
  and s8 x s8 -> s32 go to ``__ynn_fusion``, inside loops too.
* ``scatter``: a kernel holding a scatter; size: the update elements scattered.
* ``gather``: a kernel holding a gather; size: the elements gathered (its result).
* ``strided-reduction``: a kernel holding a reduce whose reduced dimensions leave out the
  minor-most dimension (of size above 1) of its operand's layout, as ``x.sum(axis=0)`` of a
  row-major matrix; size: the operand elements read. A library fusion counts too (XLA:CPU hands
  that reduce to ``__ynn_fusion``).
* ``transpose``: a copy or transpose kernel, or a loop fusion whose root (bitcasts aside) is a
  copy or transpose, that puts its data in another order in memory: the source's axes (size-1
  axes aside) come out of the root's layout in another order, followed through bitcasts,
  reshapes, broadcasts and elementwise ops; size: the output elements. A copy that only moves a
  size-1 axis is no transpose.

:func:`reconcile_kernels` sets the sum over the kernels beside our program count (the StableHLO
count): equal, or apart only by named rewrites the compiler made, each with its amount.

Pure: no jax. Plain JSON out, for results.json.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from roofline_report.errors import scrub_paths
from roofline_report.hlo.cost import Cost
from roofline_report.hlo.ir import (
    Array,
    Computation,
    Instruction,
    Module,
    Shape,
    SourceLocation,
    parse_module,
)
from roofline_report.hlo.taps import valid_taps
from roofline_report.hlo.walk import COLLECTIVE_OPCODES, Site, Walk, walk

__all__ = [
    "CATEGORIES",
    "PATTERNS",
    "Pattern",
    "Traffic",
    "in_place_kernels",
    "instruction_cost",
    "kernel_inventory",
    "kernel_pattern",
    "kernel_traffic",
    "program_walk",
    "reconcile_kernels",
    "relative_source",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


CATEGORIES = ("matmul", "elementwise", "reduction", "data movement", "collective", "other")

_ELEMENTWISE = _words(
    "add subtract multiply divide remainder maximum minimum negate abs sign floor ceil "
    "round-nearest-afz round-nearest-even compare select clamp convert and or xor not "
    "shift-left shift-right-arithmetic shift-right-logical is-finite popcnt "
    "count-leading-zeros real imag complex reduce-precision mulhi"
)
# XLA's transcendental opcodes (HloCostAnalysis::HandleElementwiseOp).
_TRANSCENDENTAL = _words(
    "exponential exponential-minus-one log log-plus-one logistic power sqrt rsqrt cbrt "
    "tanh sine cosine tan atan2 erf"
)
_MOVEMENT = _words(
    "copy transpose broadcast reshape slice dynamic-slice dynamic-update-slice concatenate pad "
    "gather reverse iota bitcast bitcast-convert copy-start copy-done parameter constant tuple "
    "get-tuple-element"
)
_NOT_KERNELS = _words(
    "parameter constant tuple get-tuple-element bitcast after-all add-dependency opt-barrier "
    "domain partition-id replica-id"
)
_CONTROL = frozenset({"while", "conditional", "call"})
# HLO opcode -> the StableHLO op name our program count charges (for the per-op comparison).
_STABLEHLO_NAME = {"dot": "dot_general", "sine": "sine", "cosine": "cosine", "erf": "erf"}
_GEMM_TARGETS = ("gemm", "matmul", "cublas", "conv", "onednn", "mkl", "ynn", "xnn", "dnn")


def _stablehlo(opcode: str) -> str:
    base = _STABLEHLO_NAME.get(opcode, opcode.replace("-", "_"))
    return ("chlo." if opcode == "erf" else "stablehlo.") + base


# --------------------------------------------------------------------------------------------
# Cost of HLO instructions
# --------------------------------------------------------------------------------------------


def _elements(instr: Instruction) -> int:
    return sum(a.elements for a in instr.shape.arrays() if a.dtype != "token")


def _operand_elements(instr: Instruction, index: int) -> int | None:
    if index >= len(instr.operand_shapes):
        return None
    shape = instr.operand_shapes[index]
    if shape is None or shape.array is None:
        return None
    return shape.array.elements


def _ints(text: str | None) -> list[int]:
    return [int(v) for v in re.findall(r"\d+", text or "")]


def _dot_flops(instr: Instruction) -> int | None:
    lhs = instr.operand_shapes[0] if instr.operand_shapes else None
    if lhs is None or lhs.array is None:
        return None
    contracting = _ints(instr.attributes.get("lhs_contracting_dims"))
    size = math.prod(lhs.array.dims[d] for d in contracting if d < len(lhs.array.dims))
    return 2 * _elements(instr) * size


def _gemm_flops(instr: Instruction) -> int | None:
    """A library gemm custom call (cuBLAS, ...): its dot dimension numbers are in the backend
    config; the result is the first array of the (result, workspace) tuple."""
    config = instr.backend_config or {}
    gemm = config.get("gemm_backend_config")
    if not isinstance(gemm, Mapping):
        return None
    numbers = gemm.get("dot_dimension_numbers")
    lhs = instr.operand_shapes[0] if instr.operand_shapes else None
    result = next(iter(instr.shape.arrays()), None)
    if not isinstance(numbers, Mapping) or lhs is None or lhs.array is None or result is None:
        return None
    contracting = [int(d) for d in numbers.get("lhs_contracting_dimensions", [])]
    size = math.prod(lhs.array.dims[d] for d in contracting if d < len(lhs.array.dims))
    return 2 * result.elements * size


_DIM_LABELS = re.compile(r"^(?P<lhs>\w+)_(?P<rhs>\w+)->(?P<out>\w+)$")


def _conv_flops(instr: Instruction) -> int | None:
    """XLA's convolution count: 2 x input features per group x output features x batch per
    batch group x kernel taps that land on the input (padding and dilation respected)."""
    labels = _DIM_LABELS.match(instr.attributes.get("dim_labels", ""))
    lhs = instr.operand_shapes[0] if instr.operand_shapes else None
    rhs = instr.operand_shapes[1] if len(instr.operand_shapes) > 1 else None
    out = instr.shape.array
    if labels is None or lhs is None or rhs is None or lhs.array is None or rhs.array is None:
        return None
    if out is None:
        return None
    lhs_l, rhs_l, out_l = labels["lhs"], labels["rhs"], labels["out"]
    spatial = [c for c in lhs_l if c.isdigit()]
    window = _window(instr.attributes.get("window", ""), len(spatial))
    taps = 1
    for i, digit in enumerate(sorted(spatial)):
        size, stride, pad_lo, lhs_dil, rhs_dil = window[i]
        taps *= valid_taps(
            lhs.array.dims[lhs_l.index(digit)],
            out.dims[out_l.index(digit)],
            rhs.array.dims[rhs_l.index(digit)] if size == 0 else size,
            stride,
            pad_lo,
            lhs_dil,
            rhs_dil,
        )
    groups = int(instr.attributes.get("feature_group_count", "1"))
    batch_groups = int(instr.attributes.get("batch_group_count", "1"))
    fma = (
        (lhs.array.dims[lhs_l.index("f")] // groups)
        * out.dims[out_l.index("f")]
        * (lhs.array.dims[lhs_l.index("b")] // batch_groups)
        * taps
    )
    return 2 * fma


def _window(text: str, rank: int) -> list[tuple[int, int, int, int, int]]:
    """(size, stride, low padding, lhs dilation, rhs dilation) per spatial dimension of a
    ``window={size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=.. rhs_dilate=..}`` attribute."""
    items = dict(re.findall(r"(\w+)=([\w_]+)", text))

    def per_dim(key: str, default: int) -> list[int]:
        value = items.get(key)
        if value is None:
            return [default] * rank
        return [int(v.split("_")[0]) for v in value.split("x")]

    size = per_dim("size", 0)
    stride = per_dim("stride", 1)
    pad = per_dim("pad", 0)
    lhs = per_dim("lhs_dilate", 1)
    rhs = per_dim("rhs_dilate", 1)
    return [(size[i], stride[i], pad[i], lhs[i], rhs[i]) for i in range(rank)]


class _Coster:
    """Cost of computations of one module, each computed once."""

    def __init__(self, module: Module) -> None:
        self.module = module
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


def instruction_cost(instr: Instruction, coster: _Coster) -> Cost:
    """Our count of one HLO instruction (a fusion: the count of its fused computation).

    Rules (those of the StableHLO count, in HLO spelling): ``dot`` 2 x output elements x
    contracted size; ``convolution`` XLA's valid-tap count; elementwise ops 1 flop per output
    element; transcendental opcodes 1 transcendental per element; ``reduce`` the reducer's
    cost x (input - output elements); ``reduce-window`` body x (window - 1) x outputs; ``scatter``
    body x updates; ``map`` body x outputs; ``sort`` n x ceil(log2 n); all-reduce and
    reduce-scatter body x (group - 1) x elements; data movement 0; a library gemm custom call
    from its backend config's dot dimensions; other custom calls 0 (listed as not costed).
    """
    op = instr.opcode
    cost = Cost()
    if op not in _NOT_KERNELS:
        cost.ops[op] += 1
    name = _stablehlo(op)
    if op == "fusion" or op == "call" or op.startswith("async-start"):
        for callee in instr.called("calls", "to_apply"):
            cost.add(coster.computation(callee), scale_ops=False)
    elif op in _ELEMENTWISE:
        cost.charge(name, flops=_elements(instr))
    elif op in _TRANSCENDENTAL:
        cost.charge(name, transcendentals=_elements(instr))
    elif op == "dot":
        flops = _dot_flops(instr)
        if flops is None:
            cost.uncosted.add(instr.name)
        else:
            cost.charge(name, flops=flops)
    elif op == "convolution":
        flops = _conv_flops(instr)
        if flops is None:
            cost.uncosted.add(instr.name)
        else:
            cost.charge(name, flops=flops)
    elif op == "reduce":
        inputs = _operand_elements(instr, 0)
        outputs = _elements(instr) // max(1, len(instr.operands) // 2)
        if inputs is not None:
            _charge(cost, name, coster.body(instr), inputs - outputs)
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
        _charge(cost, _stablehlo(base), coster.body(instr), _elements(instr) * (size - 1))
    elif op in ("rng", "rng-bit-generator"):
        cost.charge(name, transcendentals=_elements(instr))
    elif op == "custom-call":
        flops = _gemm_flops(instr)
        if flops is not None:
            cost.charge("stablehlo.dot_general", flops=flops)
        else:
            cost.uncosted.add(instr.custom_call_target or instr.name)
    return cost


def _charge(cost: Cost, name: str, body: Cost, times: int) -> None:
    cost.charge(name, flops=body.flops * times, transcendentals=body.transcendentals * times)


# --------------------------------------------------------------------------------------------
# Bytes a kernel touches
# --------------------------------------------------------------------------------------------

# Ops that only map indices inside a fusion: a slice of their result reads the slice's elements
# of their operand, nothing more.
_INDEX_MAPS = frozenset({"bitcast", "reshape", "transpose", "copy", "get-tuple-element"})


def _array_bytes(array: Array, elements: int) -> int:
    """Bytes of ``elements`` elements of ``array``'s type (sub-byte types as it stores them)."""
    size = Array(array.dtype, (max(0, elements),), array.layout).nbytes
    return size or 0


def _full(shape: Shape | None) -> Counter[str]:
    return Counter(shape.bytes_by_dtype()) if shape is not None else Counter()


def _part(array: Array | None, elements: int) -> Counter[str]:
    if array is None:
        return Counter()
    nbytes = _array_bytes(array, min(elements, array.elements))
    return Counter({array.dtype: nbytes}) if nbytes else Counter()


def _elements_of(shape: Shape | None) -> int:
    return shape.array.elements if shape is not None and shape.array is not None else 0


def _reads_old_value(module: Module, scatter: Instruction) -> bool:
    """Whether a scatter's combiner reads the value it replaces (an add does; an overwrite,
    whose root is its second parameter, does not)."""
    for name in scatter.called("to_apply"):
        comp = module.computations.get(name)
        root = comp.root if comp is not None else None
        if root is not None and root.opcode == "parameter":
            return root.parameter_number == 0
    return True


def _scatter_parts(instr: Instruction) -> tuple[int, list[Shape | None]]:
    """(number of inputs, update shapes) of a scatter: operands are inputs..., indices,
    updates..."""
    inputs = max(1, (len(instr.operands) - 1) // 2)
    return inputs, list(instr.operand_shapes[inputs + 1:])


@dataclass
class Traffic:
    """The bytes one launch of a kernel reads and writes: touched (what it moves) and at its
    boundary (its operand and result buffers), by element type, with the rules that made them
    differ and whether it writes a buffer it was given (in place)."""

    read: Counter[str] = field(default_factory=Counter)
    written: Counter[str] = field(default_factory=Counter)
    boundary_read: Counter[str] = field(default_factory=Counter)
    boundary_written: Counter[str] = field(default_factory=Counter)
    rules: list[str] = field(default_factory=list)
    in_place: bool = False

    @property
    def touched(self) -> int:
        return sum(self.read.values()) + sum(self.written.values())


class _Fused:
    """What a fusion's own computation says about the bytes it touches: per parameter, the
    elements it reads; per output, the elements it writes (in-place updates)."""

    def __init__(self, module: Module, comp: Computation) -> None:
        self.module = module
        self.comp = comp
        self.users: dict[str, list[tuple[Instruction, int]]] = {}
        for instr in comp.instructions:
            for index, name in enumerate(instr.operands):
                self.users.setdefault(name, []).append((instr, index))
        root = comp.root
        self.outputs: list[str] = []
        if root is not None:
            self.outputs = list(root.operands) if root.opcode == "tuple" else [root.name]
        self.updates: dict[str, Instruction] = {}  # in-place update by the output it gives
        for name in self.outputs:
            update = self._in_place_update(name)
            if update is not None:
                self.updates[name] = update

    def _through_maps(self, name: str, maps: frozenset[str]) -> Instruction | None:
        instr = self.comp.instruction(name)
        while instr is not None and instr.opcode in maps and instr.operands:
            instr = self.comp.instruction(instr.operands[0])
        return instr

    def _is_parameter_view(self, name: str) -> bool:
        source = self._through_maps(name, frozenset({"bitcast", "get-tuple-element"}))
        return source is not None and source.opcode == "parameter"

    def _in_place_update(self, output: str) -> Instruction | None:
        """The dynamic-update-slice or scatter that gives this output in place: it writes into
        the buffer of a fusion parameter (operand 0 of the update, bitcasts and tuple elements
        aside), which XLA's buffer assignment shares with the output."""
        instr = self._through_maps(output, frozenset({"bitcast"}))
        if instr is None:
            return None
        if instr.opcode == "dynamic-update-slice" and instr.operands \
                and self._is_parameter_view(instr.operands[0]):
            return instr
        if instr.opcode == "scatter":
            inputs, _ = _scatter_parts(instr)
            if all(self._is_parameter_view(n) for n in instr.operands[:inputs]):
                return instr
        return None

    def read_elements(self, param: Instruction) -> int:
        """Elements of a fusion parameter the fusion reads: all of them, unless every use only
        slices, gathers from or updates in place the parameter (through index maps)."""
        full = _elements_of(param.shape)
        in_place = set(id(u) for u in self.updates.values())
        total = 0
        pending = [param]
        seen: set[str] = set()
        while pending:
            value = pending.pop()
            if value.name in seen:
                continue
            seen.add(value.name)
            if value.name in self.outputs:
                return full
            for user, index in self.users.get(value.name, []):
                op = user.opcode
                if op in _INDEX_MAPS:
                    pending.append(user)
                elif op in ("slice", "dynamic-slice", "gather") and index == 0:
                    total += _elements_of(user.shape)  # the slice or the gathered elements
                elif op == "dynamic-update-slice" and index == 0 and id(user) in in_place:
                    pass  # written in place, never read
                elif op == "scatter" and id(user) in in_place \
                        and index < _scatter_parts(user)[0]:
                    _, updates = _scatter_parts(user)
                    if _reads_old_value(self.module, user):
                        total += _elements_of(updates[index] if index < len(updates) else None)
                elif op in ("dynamic-slice", "dynamic-update-slice", "gather") and index > 0:
                    total += _elements_of(value.shape)  # start indices: read whole
                else:
                    return full
            if total >= full:
                return full
        return min(total, full)


def kernel_traffic(instr: Instruction, module: Module, done: Instruction | None = None,
                   fused: dict[str, _Fused] | None = None) -> Traffic:
    """The bytes one launch of a kernel reads and writes (rules in the module docstring)."""
    traffic = Traffic()
    result = done.shape if done is not None else instr.shape
    for shape in instr.operand_shapes:
        traffic.boundary_read.update(_full(shape))
    outputs: list[Shape] = list(result.elements) if result.is_tuple else [result]
    last = outputs[-1] if result.is_tuple and outputs else None
    if instr.opcode == "custom-call" and last is not None and last.array is not None \
            and last.array.dtype in ("s8", "u8"):
        outputs = outputs[:-1]  # a library call's scratch workspace
    for shape in outputs:
        traffic.boundary_written.update(_full(shape))
    op = instr.opcode
    operands = list(instr.operand_shapes)
    reads: list[Counter[str]] = [_full(s) for s in operands]
    writes: list[Counter[str]] = [_full(s) for s in outputs]
    first = operands[0].array if operands and operands[0] is not None else None
    if op in ("slice", "dynamic-slice") and operands:
        reads[0] = _part(first, _elements_of(result))
        traffic.rules.append(f"{op}: reads only the slice of operand 0")
    elif op == "gather" and operands:
        reads[0] = _part(first, _elements_of(result))
        traffic.rules.append("gather: reads only the gathered elements of operand 0")
    elif op == "dynamic-update-slice" and len(operands) > 1:
        reads[0] = Counter()
        writes = [_part(result.array, _elements_of(operands[1]))]
        traffic.in_place = True
        traffic.rules.append("dynamic-update-slice in place: writes only the update")
    elif op == "scatter":
        inputs, updates = _scatter_parts(instr)
        old = _reads_old_value(module, instr)
        for i in range(min(inputs, len(operands))):
            given = operands[i]
            arr = given.array if given is not None else None
            count = _elements_of(updates[i] if i < len(updates) else None)
            reads[i] = _part(arr, count) if old else Counter()
        writes = [_part(r.array, _elements_of(updates[i] if i < len(updates) else None))
                  for i, r in enumerate(outputs)]
        traffic.in_place = True
        traffic.rules.append("scatter in place: reads and writes only the scattered elements")
    elif op == "fusion":
        _fusion_traffic(instr, module, fused, reads, writes, outputs, traffic)
    for counter in reads:
        traffic.read.update(counter)
    for counter in writes:
        traffic.written.update(counter)
    return traffic


def _fusion_traffic(instr: Instruction, module: Module, cache: dict[str, _Fused] | None,
                    reads: list[Counter[str]], writes: list[Counter[str]],
                    outputs: list[Shape], traffic: Traffic) -> None:
    names = instr.called("calls")
    comp = module.computations.get(names[0]) if names else None
    if comp is None:
        return
    fused = cache.get(comp.name) if cache is not None else None
    if fused is None:
        fused = _Fused(module, comp)
        if cache is not None:
            cache[comp.name] = fused
    for param in comp.instructions:
        index = param.parameter_number
        if param.opcode != "parameter" or index is None or index >= len(reads):
            continue
        shape = instr.operand_shapes[index]
        if shape is None or shape.array is None or param.shape.array is None:
            continue
        elements = fused.read_elements(param)
        if elements < shape.array.elements:
            reads[index] = _part(shape.array, elements)
            traffic.rules.append(
                f"operand {index}: not read (updated in place)" if elements == 0 else
                f"operand {index}: {elements} of its {shape.array.elements} elements read "
                "(sliced, gathered or updated in place)"
            )
    results = outputs
    for i, name in enumerate(fused.outputs):
        update = fused.updates.get(name)
        if update is None or i >= len(results) or i >= len(writes):
            continue
        if update.opcode == "dynamic-update-slice":
            count = _elements_of(update.operand_shapes[1] if len(update.operand_shapes) > 1
                                 else None)
        else:
            _, updates = _scatter_parts(update)
            count = _elements_of(updates[0] if updates else None)
        writes[i] = _part(results[i].array, count)
        traffic.in_place = True
        traffic.rules.append(f"output {i}: {update.opcode} in place, only the update written")


# --------------------------------------------------------------------------------------------
# Kernel patterns (the kinds of kernel measured with roofs of their own)
# --------------------------------------------------------------------------------------------

PATTERNS = ("transpose", "loop-dot", "strided-reduction", "gather", "scatter")


@dataclass(frozen=True, slots=True)
class Pattern:
    """A kernel's pattern: its name (one of :data:`PATTERNS`, None for none), its size per
    launch (elements moved, or flops for ``loop-dot``; 0 with no pattern) and a short text."""

    name: str | None = None
    size: int = 0
    detail: str | None = None


def _plain(shape: Shape | None) -> str:
    if shape is None or shape.array is None:
        return "?"
    return f"{shape.array.dtype}[{','.join(map(str, shape.array.dims))}]"


def _minor_to_major(array: Array) -> list[int]:
    """The array's dimensions, minor-most first (its layout, or row-major when none)."""
    rank = len(array.dims)
    found = re.match(r"\{([\d,\s]*)", array.layout or "")
    order = [int(v) for v in found.group(1).replace(" ", "").split(",") if v] if found else []
    return order if sorted(order) == list(range(rank)) else list(range(rank - 1, -1, -1))


def _is_library(instr: Instruction) -> bool:
    return instr.opcode == "custom-call" or instr.fusion_kind == "kCustom" \
        or _backend_kind(instr) is not None


def _fused_instructions(instr: Instruction, module: Module) -> list[Instruction]:
    if instr.opcode != "fusion":
        return [instr]
    out: list[Instruction] = []
    for name in instr.called("calls"):
        comp = module.computations.get(name)
        if comp is not None:
            out.extend(comp.instructions)
    return out


def _strided(reduce: Instruction) -> bool:
    operand = reduce.operand_shapes[0] if reduce.operand_shapes else None
    if operand is None or operand.array is None:
        return False
    array = operand.array
    reduced = set(_ints(reduce.attributes.get("dimensions")))
    minor = next((d for d in _minor_to_major(array) if array.dims[d] != 1), None)
    return minor is not None and bool(reduced) and minor not in reduced


# An atom: (source parameter, source axis, size). A value's logical dimension is a tuple of
# atoms (major to minor); None when the walk cannot follow it.
_Atom = tuple[int, int, int]
_Axes = list[tuple[_Atom, ...]]


def _regroup(atoms: list[_Atom], dims: Sequence[int]) -> _Axes | None:
    """Cut a sequence of atoms (size-1 atoms dropped) into dimensions of these sizes, in
    order; None when a dimension would split an atom."""
    seq = [a for a in atoms if a[2] != 1]
    out: _Axes = []
    position = 0
    for size in dims:
        group: list[_Atom] = []
        product = 1
        while product < size and position < len(seq):
            group.append(seq[position])
            product *= seq[position][2]
            position += 1
        if product != size:
            return None
        out.append(tuple(group))
    return out if position == len(seq) else None


def _physical(axes: _Axes, array: Array) -> list[_Atom]:
    return [atom for d in reversed(_minor_to_major(array)) for atom in axes[d]]


def _logical(axes: _Axes) -> list[_Atom]:
    return [atom for dim in axes for atom in dim]


def _follow(instr: Instruction, known: Mapping[str, _Axes]) -> _Axes | None:
    """The atoms of an instruction's result from those of its operands, for the ops that move
    elements without combining them; None for any other."""
    op = instr.opcode
    array = instr.shape.array
    if array is None:
        return None
    if op == "transpose":
        source = known.get(instr.operands[0]) if instr.operands else None
        perm = _ints(instr.attributes.get("dimensions"))
        if source is None or sorted(perm) != list(range(len(source))):
            return None
        return [source[p] for p in perm]
    if op == "broadcast":
        source = known.get(instr.operands[0]) if instr.operands else None
        if source is None:
            return None
        mapped = dict(zip(_ints(instr.attributes.get("dimensions")), source, strict=False))
        return [mapped.get(d, ((-1, d, size),) if size != 1 else ())
                for d, size in enumerate(array.dims)]
    if op in ("bitcast", "reshape"):
        source = known.get(instr.operands[0]) if instr.operands else None
        operand = instr.operand_shapes[0] if instr.operand_shapes else None
        if source is None or operand is None or operand.array is None:
            return None
        if op == "bitcast":
            order = list(reversed(_minor_to_major(array)))
            groups = _regroup(_physical(source, operand.array), [array.dims[d] for d in order])
            if groups is None:
                return None
            axes: _Axes = [()] * len(array.dims)
            for d, group in zip(order, groups, strict=True):
                axes[d] = group
            return axes
        return _regroup(_logical(source), list(array.dims))
    if op in _ELEMENTWISE or op in _TRANSCENDENTAL or op == "copy":
        for name in instr.operands:
            source = known.get(name)
            if source is not None and len(source) == len(array.dims) \
                    and any(a[0] >= 0 for a in _logical(source)):
                return source
    return None


def _transpose(instr: Instruction, module: Module) -> Pattern:
    """A copy or transpose kernel, or a loop fusion whose root is one, that changes the order
    of its data in memory: the source's axes (size-1 axes aside) come out in another order."""
    if instr.opcode == "fusion":
        if _is_library(instr):
            return Pattern()
        names = instr.called("calls")
        comp = module.computations.get(names[0]) if names else None
        root = comp.root if comp is not None else None
        while root is not None and root.opcode == "bitcast" and comp is not None:
            root = comp.instruction(root.operands[0]) if root.operands else None
        if comp is None or root is None or root.opcode not in ("copy", "transpose"):
            return Pattern()
        program = list(comp.instructions)
        target = comp.root
    elif instr.opcode in ("copy", "transpose"):
        program = [instr]
        target = instr
    else:
        return Pattern()
    known: dict[str, _Axes] = {}
    sources: dict[int, Array] = {}
    for step in program:
        if step.opcode == "parameter" and step.shape.array is not None \
                and step.parameter_number is not None:
            n = step.parameter_number
            sources[n] = step.shape.array
            known[step.name] = [((n, d, size),) for d, size in enumerate(step.shape.array.dims)]
            continue
        if step is instr and instr.opcode != "fusion":  # an unfused kernel: operand 0 is source
            operand = instr.operand_shapes[0] if instr.operand_shapes else None
            if operand is None or operand.array is None or not instr.operands:
                return Pattern()
            sources[0] = operand.array
            known[instr.operands[0]] = [((0, d, size),)
                                        for d, size in enumerate(operand.array.dims)]
        axes = _follow(step, known)
        if axes is not None:
            known[step.name] = axes
    if target is None or target.shape.array is None or target.name not in known:
        return Pattern()
    out = _physical(known[target.name], target.shape.array)
    for n, source in sorted(sources.items()):
        came = [a[1] for a in out if a[0] == n and a[2] != 1]
        if not came:
            continue
        base = [d for d in reversed(_minor_to_major(source)) if source.dims[d] != 1]
        if came != base:
            dims = ",".join(map(str, source.dims))
            return Pattern("transpose", target.shape.array.elements,
                           f"axes {tuple(came)} of {source.dtype}[{dims}]")
    return Pattern()


def kernel_pattern(instr: Instruction, module: Module) -> Pattern:
    """The kernel's pattern (the first that applies, in this order): ``loop-dot``, ``scatter``,
    ``gather``, ``strided-reduction``, ``transpose``; see the module docstring."""
    inside = _fused_instructions(instr, module)
    dots = [i for i in inside if i.opcode == "dot"]
    if dots and not _is_library(instr):
        flops = sum(_dot_flops(d) or 0 for d in dots)
        first = dots[0]
        detail = " x ".join(_plain(s) for s in first.operand_shapes) + " -> " + \
            _plain(first.shape)
        return Pattern("loop-dot", flops, f"dot {detail}")
    scatters = [i for i in inside if i.opcode == "scatter"]
    if scatters:
        size = sum(_elements_of(s) for i in scatters for s in _scatter_parts(i)[1])
        first = scatters[0]
        updates = _scatter_parts(first)[1]
        return Pattern("scatter", size, f"updates {_plain(updates[0] if updates else None)} "
                                        f"into {_plain(first.operand_shapes[0])}")
    gathers = [i for i in inside if i.opcode == "gather"]
    if gathers:
        size = sum(_elements_of(i.shape) for i in gathers)
        first = gathers[0]
        return Pattern("gather", size, f"{_plain(first.shape)} gathered from "
                                       f"{_plain(first.operand_shapes[0])}")
    strided = [i for i in inside if i.opcode == "reduce" and _strided(i)]
    if strided:
        size = sum(_elements_of(s) for i in strided
                   for s in i.operand_shapes[: max(1, len(i.operands) // 2)])
        first = strided[0]
        dims = tuple(_ints(first.attributes.get("dimensions")))
        operand = first.operand_shapes[0]
        layout = operand.array.layout if operand is not None and operand.array else ""
        return Pattern("strided-reduction", size,
                       f"dimensions {dims} of {_plain(operand)}{layout}")
    return _transpose(instr, module)


# --------------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------------


def relative_source(source: SourceLocation | None, cwd: str | None = None) -> str | None:
    """``path:line`` with the path as its reader knows it: an installed library's from its
    package (the part after ``site-packages/``, even when that folder sits inside the project,
    as a virtual environment does), else relative to the current working directory; any other
    absolute path keeps only its file name (``<path>/name.py``). Never an absolute path."""
    if source is None or not source.file:
        return None
    path = source.file.replace("\\", "/")
    base = (cwd if cwd is not None else os.getcwd()).replace("\\", "/").rstrip("/") + "/"
    if "site-packages/" in path:
        path = path.rsplit("site-packages/", 1)[1]
    elif "dist-packages/" in path:
        path = path.rsplit("dist-packages/", 1)[1]
    elif base != "/" and path.startswith(base):
        path = path[len(base) :]
    path = scrub_paths(path)
    return f"{path}:{source.line}" if source.line else path


def _backend_kind(instr: Instruction) -> str | None:
    config = instr.backend_config or {}
    for key in ("fusion_backend_config", "fusion_config"):
        section = config.get(key)
        if isinstance(section, Mapping) and "kind" in section:
            return str(section["kind"])
    return None


def _category(instr: Instruction, cost: Cost) -> str:
    op = instr.opcode
    base = op[: -len("-start")] if op.endswith("-start") else op
    if base in COLLECTIVE_OPCODES or (op == "async-start" and any(
        o in COLLECTIVE_OPCODES for o in cost.ops
    )):
        return "collective"
    if cost.ops.get("dot") or cost.ops.get("convolution"):
        return "matmul"
    if op == "custom-call":
        target = (instr.custom_call_target or "").lower()
        if cost.flops_by_op.get("stablehlo.dot_general") or any(t in target for t in _GEMM_TARGETS):
            return "matmul"
        return "other"
    if any(o in cost.ops for o in ("reduce", "reduce-window", "all-reduce")):
        return "reduction"
    if instr.fusion_kind == "kInput":
        return "reduction"
    inside = {o for o in cost.ops if o != "fusion"}
    if inside and inside <= _MOVEMENT:
        return "data movement"
    if op in ("sort", "rng", "rng-bit-generator", "infeed", "outfeed", "send", "recv"):
        return "other"
    if cost.flops or cost.transcendentals or inside & (_ELEMENTWISE | _TRANSCENDENTAL):
        return "elementwise"
    return "other"


class _Program:
    """One module's kernels, each costed once: the walk (with the conditional rule's weights),
    the costs, the traffic and the patterns."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.coster = _Coster(module)
        self.fused: dict[str, _Fused] = {}
        self._costs: dict[int, Cost] = {}
        self._traffic: dict[int, Traffic] = {}
        self.walk = walk(module, self.weigh)

    def cost(self, site: Site) -> Cost:
        key = id(site.instruction)
        if key not in self._costs:
            self._costs[key] = instruction_cost(site.instruction, self.coster)
        return self._costs[key]

    def traffic(self, site: Site) -> Traffic:
        key = id(site.instruction)
        if key not in self._traffic:
            self._traffic[key] = kernel_traffic(site.instruction, self.module, site.done,
                                                self.fused)
        return self._traffic[key]

    def weigh(self, site: Site) -> tuple[float, float, float]:
        """A kernel's weight for the conditional rule: (flops + transcendentals, bytes it
        touches, one launch)."""
        cost = self.cost(site)
        return (float(cost.flops + cost.transcendentals), float(self.traffic(site).touched), 1.0)


def program_walk(module: Module) -> Walk:
    """The walk of ``module`` (:func:`roofline_report.hlo.walk.walk`) with the kernel
    inventory's weights: the one walk both the compiled facts and the inventory read."""
    return _Program(module).walk


def _bytes_rule(traffic: Traffic) -> str | None:
    if traffic.read == traffic.boundary_read and traffic.written == traffic.boundary_written:
        return None
    return "; ".join(traffic.rules) or None


def _kernel(program: _Program, site: Site, cwd: str | None,
            in_place: frozenset[str]) -> dict[str, Any]:
    instr, comp = site.instruction, site.computation
    cost = program.cost(site)
    traffic = program.traffic(site)
    pattern = kernel_pattern(instr, program.module)
    kind = _backend_kind(instr) or instr.fusion_kind or instr.custom_call_target
    branch = site.context.branch
    return {
        "name": instr.name,
        "opcode": instr.opcode,
        "category": _category(instr, cost),
        "kind": kind,
        "fusion_kind": instr.fusion_kind,
        "computation": comp.name,
        "loop": site.context.loop,
        "trips": site.trips,
        "trips_known": site.context.trips_known,
        "branch": None if branch is None else branch.text(),
        "charged": site.context.charged,
        "flops": cost.flops,
        "transcendentals": cost.transcendentals,
        "bytes_read": sum(traffic.read.values()),
        "bytes_written": sum(traffic.written.values()),
        "read_by_dtype": dict(sorted((k, v) for k, v in traffic.read.items() if v)),
        "written_by_dtype": dict(sorted((k, v) for k, v in traffic.written.items() if v)),
        "boundary_bytes_read": sum(traffic.boundary_read.values()),
        "boundary_bytes_written": sum(traffic.boundary_written.values()),
        "bytes_rule": _bytes_rule(traffic),
        "flops_by_op": dict(sorted(cost.flops_by_op.items())),
        "transcendentals_by_op": dict(sorted(cost.transcendentals_by_op.items())),
        "ops": dict(sorted(cost.ops.items())),
        "uncosted": sorted(cost.uncosted),
        "op_name": instr.op_name,
        "source": relative_source(instr.source, cwd),
        "in_place": traffic.in_place or (comp.is_entry and instr.name in in_place),
        "pattern": pattern.name,
        "pattern_size": pattern.size,
        "pattern_detail": pattern.detail,
    }


_PASS_THROUGH = ("bitcast", "get-tuple-element")


def in_place_kernels(module: Module) -> frozenset[str]:
    """The entry instructions whose result is an output aliasing a parameter (a donated
    argument): they write in place, into memory the program already holds, not a fresh
    output. Bitcasts and tuple elements are followed to the instruction that writes."""
    entry = module.entry_computation
    root = entry.root if entry is not None else None
    if entry is None or root is None:
        return frozenset()
    by_name = {i.name: i for i in entry.instructions}
    names = set()
    for index in module.aliased_outputs:
        instr: Instruction | None = root
        if index and root.opcode == "tuple":
            instr = by_name.get(root.operands[index[0]]) if index[0] < len(root.operands) \
                else None
        while instr is not None and instr.opcode in _PASS_THROUGH and instr.operands:
            instr = by_name.get(instr.operands[0])
        if instr is not None:
            names.add(instr.name)
    return frozenset(names)


def kernel_inventory(hlo: str | Module, cwd: str | None = None) -> dict[str, Any]:
    """The kernels of the optimized HLO (see the module docstring) as plain JSON::

        {"module", "kernels": [{"name", "opcode", "category", "kind", "fusion_kind", "computation",
                      "loop", "trips", "trips_known", "branch", "charged", "flops",
                      "transcendentals", "bytes_read", "bytes_written", "read_by_dtype",
                      "written_by_dtype", "boundary_bytes_read", "boundary_bytes_written",
                      "bytes_rule", "flops_by_op", "transcendentals_by_op", "ops", "uncosted",
                      "op_name", "source", "in_place", "pattern", "pattern_size",
                      "pattern_detail"}],
         "count", "launches", "flops", "transcendentals", "bytes_read", "bytes_written",
         "boundary_bytes_read", "boundary_bytes_written", "flops_by_op",
         "transcendentals_by_op", "by_category": {category: kernels}, "notes"}

    Per-kernel flops and bytes are per launch; ``trips`` is the launches per call of the
    program (a loop's trip count, a condition counted as many times as its body, as the
    program count does). ``count`` is the kernels listed (every branch of a conditional);
    the totals (``launches``, flops, bytes) count the ``charged`` kernels times their trips,
    so ``launches`` is :func:`~roofline_report.hlo.compiled.inspect_compiled`'s ``kernels``.
    ``cwd`` is the user's project root for source paths (default: the current working
    directory).
    """
    module = hlo if isinstance(hlo, Module) else parse_module(hlo)
    program = _Program(module)
    in_place = in_place_kernels(module)
    kernels = [_kernel(program, site, cwd, in_place) for site in program.walk.sites]
    notes = list(program.walk.notes)
    charged = [k for k in kernels if k["charged"]]
    flops_by_op: Counter[str] = Counter()
    trans_by_op: Counter[str] = Counter()
    for k in charged:
        for key, value in k["flops_by_op"].items():
            flops_by_op[key] += value * k["trips"]
        for key, value in k["transcendentals_by_op"].items():
            trans_by_op[key] += value * k["trips"]
    uncosted = sorted({u for k in kernels for u in k["uncosted"]})
    if uncosted:
        notes.append("not costed (0 flops): " + ", ".join(uncosted))

    def total(key: str) -> int:
        return sum(k[key] * k["trips"] for k in charged)

    return {
        "module": module.name,
        "count": len(kernels),
        "launches": sum(k["trips"] for k in charged),
        "flops": total("flops"),
        "transcendentals": total("transcendentals"),
        "bytes_read": total("bytes_read"),
        "bytes_written": total("bytes_written"),
        "boundary_bytes_read": total("boundary_bytes_read"),
        "boundary_bytes_written": total("boundary_bytes_written"),
        "flops_by_op": dict(sorted(flops_by_op.items())),
        "transcendentals_by_op": dict(sorted(trans_by_op.items())),
        "by_category": dict(Counter(k["category"] for k in kernels)),
        "kernels": kernels,
        "notes": notes,
    }


# --------------------------------------------------------------------------------------------
# Reconciliation with the program count
# --------------------------------------------------------------------------------------------


def _rewrite(op: str, amount: int, unit: str) -> dict[str, Any]:
    short = op.split(".", 1)[-1]
    if short == "convert" and amount > 0:
        cause = "converts inserted by the compiler (narrow floats computed in a wider type)"
        kind = "converts_inserted"
    elif amount > 0:
        cause = f"{short} duplicated into several kernels or added by the compiler"
        kind = "duplicated"
    else:
        cause = f"{short} simplified away by the compiler"
        kind = "simplified_away"
    return {"op": op, "kind": kind, "quantity": unit, "amount": amount, "cause": cause}


def reconcile_kernels(
    inventory: Mapping[str, Any], program: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The kernel sums beside our program count (``hlo_count``), per quantity::

        {"flops": {"kernels", "program", "difference", "equal"},
         "transcendentals": {...},
         "rewrites": [{"op", "kind", "quantity", "amount", "cause"}],
         "unexplained": {"flops": n, "transcendentals": n}}

    The difference of each quantity is split by op: every op whose kernel sum differs from the
    program's is one named rewrite (converts inserted, an op duplicated into several kernels,
    an op simplified away), so the rewrites' amounts add up to the difference; what no op
    accounts for is ``unexplained``. ``program`` None (or not available) compares nothing.
    """
    out: dict[str, Any] = {"rewrites": [], "unexplained": {}}
    available = program is not None and program.get("available", True) is not False
    for quantity, by_op in (("flops", "flops_by_op"), ("transcendentals",
                                                      "transcendentals_by_op")):
        ours = int(inventory.get(quantity, 0))
        theirs = int(program.get(quantity, 0)) if program is not None and available else None
        out[quantity] = {
            "kernels": ours,
            "program": theirs,
            "difference": None if theirs is None else ours - theirs,
            "equal": theirs is not None and ours == theirs,
        }
        if theirs is None or program is None:
            continue
        mine: Mapping[str, int] = inventory.get(by_op, {})
        other: Mapping[str, int] = program.get(by_op, {})
        explained = 0
        for op in sorted(set(mine) | set(other)):
            diff = int(mine.get(op, 0)) - int(other.get(op, 0))
            if diff:
                out["rewrites"].append(_rewrite(op, diff, quantity))
                explained += diff
        out["unexplained"][quantity] = (ours - theirs) - explained
    return out
