"""The kernel inventory of a compiled program: every kernel the runtime launches, with our count.

:func:`kernel_inventory` walks the :mod:`roofline_report.hlo.ir` of the optimized HLO from ENTRY
and lists each instruction that launches work: fusions (with their kind: ``kLoop``, ``kInput``,
``kOutput``, ``kCustom`` and the backend's kind such as ``__ynn_fusion`` or a Triton gemm),
library custom calls (oneDNN, cuBLAS, cuDNN, ...), copies and transposes, sorts, collectives (an
async ``-start``/``-done`` pair once), and the kernels inside while-loop bodies and conditions with
the loop's trip count. Control flow (``while``, ``conditional``, ``call``) is not a kernel: the
walk enters it.

Each kernel gets flops and transcendentals from our own count of the HLO it runs (the rules of
:func:`instruction_cost`, which follow the conventions of
:mod:`roofline_report.hlo.stablehlo_count`: 2 x output x contracted size for a dot, one flop per
element for elementwise ops including ``convert``, transcendental opcodes counted apart, a reduce
charged its body x (input - output elements), ...), the bytes read and written at its boundary
(operands and result, by dtype), how many times one call of the program runs it, its op_name and
its source file and line, the path made relative to the user's project (never absolute).

:func:`reconcile_kernels` sets the sum over the kernels beside our program count (the StableHLO
count): equal, or apart only by named rewrites the compiler made, each with its amount.

Pure: no jax. Plain JSON out, for results.json.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from roofline_report.errors import scrub_paths
from roofline_report.hlo.compiled import COLLECTIVE_OPCODES
from roofline_report.hlo.cost import Cost
from roofline_report.hlo.ir import Computation, Instruction, Module, SourceLocation, parse_module
from roofline_report.hlo.taps import valid_taps

__all__ = [
    "CATEGORIES",
    "instruction_cost",
    "kernel_inventory",
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


def _bytes(shapes: Any) -> dict[str, int]:
    out: Counter[str] = Counter()
    for shape in shapes:
        if shape is not None:
            out.update(shape.bytes_by_dtype())
    return dict(sorted(out.items()))


@dataclass
class _Walk:
    module: Module
    coster: _Coster
    cwd: str | None
    kernels: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    done_of: dict[tuple[str, str], Instruction] = field(default_factory=dict)

    in_place: frozenset[str] = frozenset()

    def computation(self, name: str, trips: int, loop: str | None, stack: frozenset[str]) -> None:
        comp = self.module.computations.get(name)
        if comp is None or name in stack:
            return
        inner = stack | {name}
        for instr in comp.instructions:
            op = instr.opcode
            if op in _NOT_KERNELS or op.endswith("-done") or op == "async-update":
                continue
            if op == "while":
                n = instr.known_trip_count
                if n is None:
                    self.notes.append(
                        f"while {instr.name}: no known trip count; its kernels counted once"
                    )
                for callee in instr.called("condition") + instr.called("body"):
                    self.computation(callee, trips * (1 if n is None else n), instr.name, inner)
            elif op == "conditional":
                branches = instr.called(
                    "branch_computations", "true_computation", "false_computation"
                )
                self.notes.append(
                    f"conditional {instr.name}: the kernels of all {len(branches)} branches are "
                    "listed, each as if it ran"
                )
                for branch in branches:
                    self.computation(branch, trips, loop, inner)
            elif op == "call":
                for callee in instr.called("to_apply"):
                    self.computation(callee, trips, loop, inner)
            else:
                self.kernels.append(self.kernel(comp, instr, trips, loop))

    def kernel(
        self, comp: Computation, instr: Instruction, trips: int, loop: str | None
    ) -> dict[str, Any]:
        cost = instruction_cost(instr, self.coster)
        result = instr.shape
        done = self.done_of.get((comp.name, instr.name))
        if done is not None:
            result = done.shape
        read = _bytes(instr.operand_shapes)
        outputs = [result]
        last = result.elements[-1] if result.is_tuple and result.elements else None
        if instr.opcode == "custom-call" and last is not None and last.array is not None \
                and last.array.dtype in ("s8", "u8"):
            outputs = list(result.elements[:-1])  # a library call's scratch workspace
        written = _bytes(outputs)
        kind = _backend_kind(instr) or instr.fusion_kind or instr.custom_call_target
        return {
            "name": instr.name,
            "opcode": instr.opcode,
            "category": _category(instr, cost),
            "kind": kind,
            "fusion_kind": instr.fusion_kind,
            "computation": comp.name,
            "loop": loop,
            "trips": trips,
            "flops": cost.flops,
            "transcendentals": cost.transcendentals,
            "bytes_read": sum(read.values()),
            "bytes_written": sum(written.values()),
            "read_by_dtype": read,
            "written_by_dtype": written,
            "flops_by_op": dict(sorted(cost.flops_by_op.items())),
            "transcendentals_by_op": dict(sorted(cost.transcendentals_by_op.items())),
            "ops": dict(sorted(cost.ops.items())),
            "uncosted": sorted(cost.uncosted),
            "op_name": instr.op_name,
            "source": relative_source(instr.source, self.cwd),
            "in_place": comp.is_entry and instr.name in self.in_place,
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
                      "loop", "trips", "flops", "transcendentals", "bytes_read",
                      "bytes_written", "read_by_dtype", "written_by_dtype", "flops_by_op",
                      "transcendentals_by_op", "ops", "uncosted", "op_name", "source",
                      "in_place"}],
         "count", "launches", "flops", "transcendentals", "bytes_read", "bytes_written",
         "flops_by_op", "transcendentals_by_op", "by_category": {category: kernels},
         "notes"}

    Per-kernel flops and bytes are per launch; the totals multiply each by ``trips`` (the
    launches per call of the program: a loop's trip count, a condition counted as many times
    as its body, as the program count does). ``cwd`` is the user's project root for source
    paths (default: the current working directory).
    """
    module = hlo if isinstance(hlo, Module) else parse_module(hlo)
    walk = _Walk(module, _Coster(module), cwd, in_place=in_place_kernels(module))
    for comp, instr in module.instructions():
        if instr.opcode.endswith("-done") and instr.operands:
            walk.done_of[(comp.name, instr.operands[0])] = instr
    if module.entry is None:
        walk.notes.append("no ENTRY computation: no kernels listed")
    else:
        walk.computation(module.entry, 1, None, frozenset())
    kernels = walk.kernels
    flops_by_op: Counter[str] = Counter()
    trans_by_op: Counter[str] = Counter()
    for k in kernels:
        for key, value in k["flops_by_op"].items():
            flops_by_op[key] += value * k["trips"]
        for key, value in k["transcendentals_by_op"].items():
            trans_by_op[key] += value * k["trips"]
    uncosted = sorted({u for k in kernels for u in k["uncosted"]})
    if uncosted:
        walk.notes.append("not costed (0 flops): " + ", ".join(uncosted))
    return {
        "module": module.name,
        "count": len(kernels),
        "launches": sum(k["trips"] for k in kernels),
        "flops": sum(k["flops"] * k["trips"] for k in kernels),
        "transcendentals": sum(k["transcendentals"] * k["trips"] for k in kernels),
        "bytes_read": sum(k["bytes_read"] * k["trips"] for k in kernels),
        "bytes_written": sum(k["bytes_written"] * k["trips"] for k in kernels),
        "flops_by_op": dict(sorted(flops_by_op.items())),
        "transcendentals_by_op": dict(sorted(trans_by_op.items())),
        "by_category": dict(Counter(k["category"] for k in kernels)),
        "kernels": kernels,
        "notes": walk.notes,
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
