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

Each kernel gets flops and transcendentals from our own count of the HLO it runs
(:func:`roofline_report.hlo.kernel_cost.instruction_cost`), the bytes one launch touches
(:func:`roofline_report.hlo.kernel_bytes.kernel_traffic`: the rules are there), its pattern
(:func:`roofline_report.hlo.kernel_patterns.kernel_pattern`: the kinds of kernel with roofs of
their own), how many times one call of the program runs it, its op_name and its source file and
line, the path made relative to the user's project (never absolute). A kernel whose own
instruction has no location takes its fused computation's: the root's, else the location most
of its instructions share (:func:`kernel_location`). Its ``user_source`` is the innermost frame
of the op's Python stack outside installed libraries (:func:`user_location`): JAX's metadata
names one frame, the innermost it counts as user code, and an installed library such as flax or
optax counts as user code to JAX, so ``source`` often points into the library that built the op
while ``user_source`` names the user's line that called it.

Every rule is held for the backend the program was compiled for: a TPU's module (told, or
recognised by its tiled layouts: :mod:`roofline_report.hlo.tpu`) is read by the TPU's rules
(its products written as convolutions counted as the matrix products they are, its whole-row
reduce-windows as the reductions they compute, its bytes as HBM traffic with those in the
core's own memory apart, its asynchronous copies marked), and the rules measured on XLA:CPU
(a loop fusion's repeated evaluations, a transpose's cache-set aliasing) are not applied to
it. A kernel's category follows what it computes: on a TPU an asynchronous slice and the
compiler's custom calls that only move data (``X64Split*``, ``ConcatBitcast``) are data
movement, a gather's fusion with its index bookkeeping too.

:func:`~roofline_report.hlo.kernel_reconciliation.reconcile_kernels` (re-exported here) sets
the sum over the kernels beside our program count (the StableHLO count): equal, or apart only
by named rewrites the compiler made, each with its amount.

Pure: no jax. Plain JSON out, for results.json.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from roofline_report.errors import scrub_paths
from roofline_report.hlo.cost import Cost
from roofline_report.hlo.ir import (
    Computation,
    Instruction,
    Module,
    SourceLocation,
    StackFrames,
    parse_module,
)
from roofline_report.hlo.kernel_bytes import FusionBytes, Traffic, kernel_traffic
from roofline_report.hlo.kernel_cost import (
    ELEMENTWISE,
    MOVEMENT,
    TRANSCENDENTAL,
    Coster,
    instruction_cost,
)
from roofline_report.hlo.kernel_patterns import kernel_pattern
from roofline_report.hlo.kernel_reconciliation import (
    MINOR_REWRITE_SHARE,
    STRENGTH_REDUCTION_RTOL,
    group_rewrites,
    reconcile_kernels,
)
from roofline_report.hlo.pattern import backend_kind
from roofline_report.hlo.product_facts import (
    generic_convolution,
    grouped_conv_flops,
    grouped_conv_tap_flops,
    grouped_conv_taps,
    image_convolution,
    line_convolutions,
    matmul_dtype,
    matmul_precision,
    matmul_products,
    patch_conv_flops,
    reduced_elements,
)
from roofline_report.hlo.tpu import MOVEMENT_TARGETS, TPU, hlo_backend
from roofline_report.hlo.uncounted_work import uncounted_work
from roofline_report.hlo.walk import COLLECTIVE_OPCODES, Site, Walk, walk

__all__ = [
    "CATEGORIES",
    "MINOR_REWRITE_SHARE",
    "STRENGTH_REDUCTION_RTOL",
    "group_rewrites",
    "in_place_kernels",
    "is_library_path",
    "kernel_inventory",
    "kernel_location",
    "program_walk",
    "reconcile_kernels",
    "relative_source",
    "user_location",
]

CATEGORIES = ("matmul", "elementwise", "reduction", "data movement", "collective", "other")

_GEMM_TARGETS = ("gemm", "matmul", "cublas", "conv", "onednn", "mkl", "ynn", "xnn", "dnn")


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


# Installed packages, jax's own sources (a checkout of jax is not the user's code either) and
# Python's standard library.
_LIBRARY_PATH = re.compile(
    r"(^|/)(site-packages|dist-packages)/|(^|/)jax/_src/|(^|/)jaxlib/|/lib/python3\.\d+/")


def is_library_path(path: str) -> bool:
    """True for a file of an installed library (under ``site-packages`` or ``dist-packages``),
    of jax itself, or of Python's standard library: not the user's own code."""
    return _LIBRARY_PATH.search(path.replace("\\", "/")) is not None


def _called_instructions(instr: Instruction, module: Module) -> list[Instruction]:
    """The instructions of the computations ``instr`` calls, in text order, those of nested
    calls (a fusion inside a fusion) following their caller; each computation once."""
    out: list[Instruction] = []
    seen: set[str] = set()

    def visit(caller: Instruction) -> None:
        for name in caller.called():
            comp = module.computations.get(name)
            if comp is None or name in seen:
                continue
            seen.add(name)
            for inner in comp.instructions:
                out.append(inner)
                visit(inner)

    visit(instr)
    return out


def kernel_location(instr: Instruction, module: Module) -> Instruction | None:
    """The instruction whose metadata locates the kernel ``instr``: itself when it has a
    source; else, inside the computations it calls, the first one's root when that has a
    source, else the first instruction with the source most of them share. None when no
    instruction of the kernel has a source."""
    if instr.source is not None:
        return instr
    called = [module.computations[n] for n in instr.called() if n in module.computations]
    root = called[0].root if called else None
    if root is not None and root.source is not None:
        return root
    located = [i for i in _called_instructions(instr, module) if i.source is not None]
    if not located:
        return None
    counts = Counter(i.source for i in located)
    most = max(counts.values())
    return next(i for i in located if counts[i.source] == most)


def user_location(instr: Instruction, frames: StackFrames) -> SourceLocation | None:
    """The innermost location of ``instr``'s Python stack outside libraries
    (:func:`is_library_path`); its own source when that is the user's and the stack is not
    in ``frames``; None when every frame is a library's."""
    chain = frames.chain(instr.stack_frame_id) if instr.stack_frame_id else ()
    if not chain and instr.source is not None:
        chain = (instr.source,)
    return next((loc for loc in chain if not is_library_path(loc.file)), None)



def _category(instr: Instruction, cost: Cost, program: _Program) -> str:
    op = instr.opcode
    base = op[: -len("-start")] if op.endswith("-start") else op
    if base in COLLECTIVE_OPCODES or (op == "async-start" and any(
        o in COLLECTIVE_OPCODES for o in cost.ops
    )):
        return "collective"
    if cost.ops.get("dot") or cost.ops.get("convolution"):
        return "matmul"
    if op == "custom-call":
        if program.tpu and instr.custom_call_target in MOVEMENT_TARGETS:
            return "data movement"  # moves bytes, computes nothing (roofline_report.hlo.tpu)
        target = (instr.custom_call_target or "").lower()
        if cost.flops_by_op.get("stablehlo.dot_general") or any(t in target for t in _GEMM_TARGETS):
            return "matmul"
        return "other"
    if any(o in cost.ops for o in ("reduce", "reduce-window", "all-reduce")):
        return "reduction"
    if instr.fusion_kind == "kInput":
        return "reduction"
    if base != op and base in MOVEMENT:
        return "data movement"  # an asynchronous slice or copy
    inside = {o for o in cost.ops if o != "fusion"}
    if program.tpu and "custom-call" in inside and all(
            i.custom_call_target in MOVEMENT_TARGETS
            for i in _called_instructions(instr, program.module) if i.opcode == "custom-call"):
        inside.discard("custom-call")  # a gather's or scatter's index bookkeeping
    if inside and inside <= MOVEMENT:
        return "data movement"
    if op in ("sort", "fft", "rng", "rng-bit-generator", "infeed", "outfeed", "send", "recv"):
        return "other"
    if cost.flops or cost.transcendentals or inside & (ELEMENTWISE | TRANSCENDENTAL):
        return "elementwise"
    return "other"


class _Program:
    """One module's kernels, each costed once: the walk (with the conditional rule's weights),
    the costs, the traffic and the patterns, by the rules of the backend it was compiled for."""

    def __init__(self, module: Module, backend: str | None = None) -> None:
        self.module = module
        self.backend = hlo_backend(module, backend)
        self.tpu = self.backend == TPU
        self.coster = Coster(module, self.backend)
        self.fused: dict[str, FusionBytes] = {}
        self._costs: dict[int, Cost] = {}
        self._traffic: dict[int, Traffic] = {}
        self.walk = walk(module, self.weigh, self.backend)

    def cost(self, site: Site) -> Cost:
        key = id(site.instruction)
        if key not in self._costs:
            self._costs[key] = instruction_cost(site.instruction, self.coster)
        return self._costs[key]

    def traffic(self, site: Site) -> Traffic:
        key = id(site.instruction)
        if key not in self._traffic:
            self._traffic[key] = kernel_traffic(site.instruction, self.module, site.done,
                                                self.fused, self.backend)
        return self._traffic[key]

    def weigh(self, site: Site) -> tuple[float, float, float]:
        """A kernel's weight for the conditional rule: (flops + transcendentals, bytes it
        touches, one launch)."""
        cost = self.cost(site)
        return (float(cost.flops + cost.transcendentals), float(self.traffic(site).touched), 1.0)


def program_walk(module: Module, backend: str | None = None) -> Walk:
    """The walk of ``module`` (:func:`roofline_report.hlo.walk.walk`) with the kernel
    inventory's weights: the one walk both the compiled facts and the inventory read.
    ``backend``: as :func:`kernel_inventory`'s."""
    return _Program(module, backend).walk


def argument_bytes_read(instr: Instruction, comp: Computation, module: Module,
                        traffic: Traffic) -> int:
    """The bytes a kernel of the entry computation reads from the program's arguments: its
    operands that are entry parameters, through bitcasts, tuple elements and kernels that
    update a parameter's buffer in place (a dynamic-update-slice writing one row of a donated
    cache leaves the rest as the argument left it); 0 for a kernel of any other computation
    (a loop body's operands are its loop's state, not arguments). Between one call's read of
    an argument and the next call's, all the program's traffic passes through the caches."""
    if not comp.is_entry:
        return 0
    total = 0
    for index, name in enumerate(instr.operands):
        if index < len(traffic.read_by_operand) and _argument_buffer(name, comp, module):
            total += traffic.read_by_operand[index]
    return total


def _argument_buffer(name: str, comp: Computation, module: Module) -> bool:
    """Whether the value ``name`` of the entry computation lives in an argument's buffer."""
    source = comp.instruction(name)
    seen: set[str] = set()
    while source is not None and source.name not in seen:
        seen.add(source.name)
        if source.opcode == "parameter":
            return True
        if source.opcode in ("bitcast", "get-tuple-element") and source.operands:
            source = comp.instruction(source.operands[0])
            continue
        target: int | None = None
        if source.opcode in ("dynamic-update-slice", "scatter"):
            target = 0
        elif source.opcode == "fusion" and source.called("calls"):
            fused = module.computations.get(source.called("calls")[0])
            if fused is not None:
                target = FusionBytes(module, fused).updated_operand()
        if target is None or target >= len(source.operands):
            return False
        source = comp.instruction(source.operands[target])
    return False


def _bytes_rule(traffic: Traffic) -> str | None:
    padded = traffic.padding_read or traffic.padding_written or traffic.padding_on_chip
    if traffic.read == traffic.boundary_read and traffic.written == traffic.boundary_written \
            and not padded:
        return None
    return "; ".join(traffic.rules) or None


def _overlapped(sites: Sequence[Site]) -> dict[int, list[str]]:
    """For each asynchronous pair (by its index in ``sites``), the kernels issued between its
    start and its done, which its transfer runs beside: the kernels of its computation
    scheduled between the two (a scheduled module lists its instructions in the order they
    are issued) and those of the loops scheduled there. Nothing where the start and the done
    are not both found."""
    out: dict[int, list[str]] = {}
    orders: dict[str, dict[int, int]] = {}  # each computation's schedule, read once
    for index, site in enumerate(sites):
        if site.done is None:
            continue
        comp = site.computation
        order = orders.setdefault(comp.name, {id(i): n for n, i in enumerate(comp.instructions)})
        start, done = order.get(id(site.instruction)), order.get(id(site.done))
        if start is None or done is None or done <= start:
            continue
        between = {id(i) for i in site.computation.instructions[start + 1:done]}
        out[index] = [
            other.instruction.name for other in sites if other is not site and (
                (other.computation is site.computation and id(other.instruction) in between)
                or any(id(loop.instruction) in between for loop in other.context.loops))]
    return out


def _kernel(program: _Program, site: Site, cwd: str | None,
            in_place: frozenset[str], frames: StackFrames) -> dict[str, Any]:
    instr, comp = site.instruction, site.computation
    located = kernel_location(instr, program.module)
    cost = program.cost(site)
    traffic = program.traffic(site)
    module, backend = program.module, program.backend
    pattern = kernel_pattern(instr, module, backend)
    kind = backend_kind(instr) or instr.fusion_kind or instr.custom_call_target
    branch = site.context.branch
    beyond = uncounted_work(instr, module, backend)
    line_flops, line_filter = line_convolutions(instr, module, backend)
    image = image_convolution(instr, module, backend)
    generic_flops, generic_window = generic_convolution(instr, backend)
    return {
        "name": instr.name,
        "opcode": instr.opcode,
        "category": _category(instr, cost, program),
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
        "argument_bytes_read": argument_bytes_read(instr, comp, module, traffic),
        "read_by_dtype": dict(sorted((k, v) for k, v in traffic.read.items() if v)),
        "written_by_dtype": dict(sorted((k, v) for k, v in traffic.written.items() if v)),
        "boundary_bytes_read": sum(traffic.boundary_read.values()),
        "boundary_bytes_written": sum(traffic.boundary_written.values()),
        "on_chip_bytes_read": sum(traffic.on_chip_read.values()),
        "on_chip_bytes_written": sum(traffic.on_chip_written.values()),
        "padding_bytes_read": traffic.padding_read,
        "padding_bytes_written": traffic.padding_written,
        "padding_on_chip_bytes": traffic.padding_on_chip,
        "bytes_rule": _bytes_rule(traffic),
        "flops_by_op": dict(sorted(cost.flops_by_op.items())),
        "transcendentals_by_op": dict(sorted(cost.transcendentals_by_op.items())),
        "ops": dict(sorted(cost.ops.items())),
        "uncosted": sorted(cost.uncosted),
        **({"counted_by_name": sorted(cost.by_name)} if cost.by_name else {}),
        "op_name": instr.op_name,
        "source": None if located is None else relative_source(located.source, cwd),
        "user_source": None if located is None
        else relative_source(user_location(located, frames), cwd),
        "in_place": traffic.in_place or (comp.is_entry and instr.name in in_place),
        "asynchronous": site.done is not None,
        "overlapped_by": [] if site.done is not None else None,
        "pattern": pattern.name,
        "pattern_size": pattern.size,
        "pattern_detail": pattern.detail,
        "pattern_row": pattern.row,
        "pattern_table_bytes": pattern.table,
        "matmul_products": matmul_products(instr, module, backend),
        "patch_conv_flops": patch_conv_flops(instr, module, backend),
        "grouped_conv_flops": grouped_conv_flops(instr, module),
        "grouped_conv_tap_flops": grouped_conv_tap_flops(instr, module),
        "line_conv_flops": line_flops,
        "line_conv_filter": line_filter,
        "image_conv_patch": image.patch,
        "image_conv_padded": image.padded,
        "image_conv_weight_gradient": image.weight_gradient,
        "generic_conv_flops": generic_flops,
        "generic_conv_window": generic_window,
        "reduced_elements": reduced_elements(instr, module, backend),
        "grouped_conv_taps": grouped_conv_taps(instr, module),
        "matmul_dtype": matmul_dtype(instr, module, backend),
        "matmul_precision": matmul_precision(instr, module, backend),
        "partitions": partitions(instr),
        "recomputed_flops": beyond.recomputed_flops,
        "recomputed_transcendentals_by_op":
            dict(sorted(beyond.recomputed_transcendentals_by_op.items())),
        "complex_flops": beyond.complex_flops,
        "complex_transcendentals_by_op":
            dict(sorted(beyond.complex_transcendentals_by_op.items())),
    }


def partitions(instr: Instruction) -> int:
    """How many parts XLA:CPU splits a loop kernel into, to run on as many worker threads at
    once (its ``outer_dimension_partitions``; 1 for a kernel it does not split)."""
    parts = (instr.backend_config or {}).get("outer_dimension_partitions")
    if not isinstance(parts, list):
        return 1
    product = 1
    for p in parts:
        try:
            product *= max(1, int(p))
        except (TypeError, ValueError):
            continue
    return product


# Kernels the runtime runs on its whole thread pool: a library fusion (YNNPACK, oneDNN), and
# the dots and convolutions it hands to Eigen's thread-pool device.
_POOL_OPCODES = ("dot", "convolution")


def threads_wanted(kernel: Mapping[str, Any], cores: int) -> int:
    """:func:`threads_for` a kernel of the inventory as results.json holds it (a plain
    record: the measuring side's, before it is written)."""
    kind = kernel.get("kind")
    return threads_for(int(kernel.get("partitions") or 1), str(kind) if kind else None,
                       str(kernel.get("opcode") or ""), cores)


def threads_for(partitions: int, kind: str | None, opcode: str, cores: int) -> int:
    """How many of ``cores`` worker threads a kernel keeps busy when it runs alone, from its
    ``partitions``, fusion ``kind`` and ``opcode``: its partitions where XLA split it, every
    core for a library kernel or a dot or convolution run on the thread pool, one otherwise (a
    loop kernel, a sort, a custom call)."""
    if partitions > 1:
        return min(partitions, cores)
    if (kind or "").startswith("__") or opcode in _POOL_OPCODES:
        return cores
    return 1


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


def entry_buffers(module: Module) -> int | None:
    """The buffers one call of the program passes: its entry computation's parameters and
    the arrays of its result (a tuple's, flattened), each of which the runtime handles on the
    host at every call; None without an entry computation."""
    entry = module.entry_computation
    root = entry.root if entry is not None else None
    if entry is None or root is None:
        return None
    parameters = sum(1 for instr in entry.instructions if instr.opcode == "parameter")
    return parameters + sum(1 for _ in root.shape.arrays())


def entry_call_bytes(module: Module) -> int | None:
    """The bytes one call of the program holds at least: its entry computation's parameters
    and the arrays of its result that do not alias a parameter (a donated argument's buffer
    counts once); None without an entry computation. With its temporaries, all that passes
    through the caches between one call's read of an argument and the next call's."""
    entry = module.entry_computation
    root = entry.root if entry is not None else None
    if entry is None or root is None:
        return None
    parameters = sum(instr.shape.nbytes or 0 for instr in entry.instructions
                     if instr.opcode == "parameter")
    aliased = set(module.aliased_outputs)
    outputs = list(root.shape.elements) if root.shape.is_tuple else [root.shape]
    results = sum(shape.nbytes or 0 for index, shape in enumerate(outputs)
                  if ((index,) if root.shape.is_tuple else ()) not in aliased)
    return parameters + results


def kernel_inventory(hlo: str | Module, cwd: str | None = None,
                     frames: StackFrames | None = None,
                     backend: str | None = None) -> dict[str, Any]:
    """The kernels of the optimized HLO (see the module docstring) as plain JSON::

        {"module", "backend", "buffers", "call_bytes",
         "kernels": [{"name", "opcode", "category", "kind",
                      "fusion_kind", "computation",
                      "loop", "trips", "trips_known", "branch", "charged", "flops",
                      "transcendentals", "bytes_read", "bytes_written",
                      "argument_bytes_read", "read_by_dtype",
                      "written_by_dtype", "boundary_bytes_read", "boundary_bytes_written",
                      "on_chip_bytes_read", "on_chip_bytes_written",
                      "bytes_rule", "flops_by_op", "transcendentals_by_op", "ops", "uncosted",
                      "op_name", "source", "user_source", "in_place", "asynchronous",
                      "pattern", "pattern_size",
                      "pattern_detail", "pattern_row", "pattern_table_bytes",
                      "matmul_products",
                      "patch_conv_flops",
                      "grouped_conv_flops", "grouped_conv_taps", "grouped_conv_tap_flops",
                      "reduced_elements",
                      "line_conv_flops", "line_conv_filter", "image_conv_patch",
                      "image_conv_padded", "image_conv_weight_gradient",
                      "generic_conv_flops", "generic_conv_window",
                      "matmul_dtype", "matmul_precision",
                      "partitions", "recomputed_flops",
                      "recomputed_transcendentals_by_op", "complex_flops",
                      "complex_transcendentals_by_op"}],
         "count", "launches", "flops", "transcendentals", "bytes_read", "bytes_written",
         "boundary_bytes_read", "boundary_bytes_written", "flops_by_op",
         "transcendentals_by_op", "by_category": {category: kernels}, "notes"}

    ``backend`` names the backend the program was compiled for (jax's platform name: ``cpu``,
    ``gpu``, ``cuda``, ``rocm``, ``tpu``); None: a module whose layouts carry tiles is a
    TPU's (:func:`roofline_report.hlo.tpu.hlo_backend`), any other is read by the XLA:CPU and
    GPU rules. In a TPU's module (:mod:`roofline_report.hlo.tpu`) ``bytes_read`` and
    ``bytes_written`` are the bytes a launch moves from and to HBM (and the host), and
    ``on_chip_bytes_read``/``on_chip_bytes_written`` those it moves from and to the core's
    own memories (vector memory, scalars, sync flags: no memory traffic; 0 on other
    backends); ``asynchronous`` marks an asynchronous pair (``copy-start``/``copy-done``,
    ``slice-start``/``slice-done``, a collective's ``-start``/``-done``) listed once, which
    overlaps the kernels issued between its start and its done (``overlapped_by``: their
    names, those of loops scheduled between included; None for any other kernel);
    ``matmul_precision`` is the
    operand precision of its largest matrix product above the default (``high``,
    ``highest``), else None.

    Per-kernel flops and bytes are per launch; ``trips`` is the launches per call of the
    program (a loop's trip count, a condition counted as many times as its body, as the
    program count does). ``count`` is the kernels listed (every branch of a conditional);
    the totals (``launches``, flops, bytes) count the ``charged`` kernels times their trips,
    so ``launches`` is :func:`~roofline_report.hlo.compiled.inspect_compiled`'s ``kernels``.
    ``cwd`` is the user's project root for source paths (default: the current working
    directory). ``frames`` is the module's stack-frame table as the serialized module holds it
    (:func:`roofline_report.observe.stack_frames.stack_frame_table`); without it, the table
    printed in the text (:meth:`~roofline_report.hlo.ir.Module.frame_table`).
    """
    module = hlo if isinstance(hlo, Module) else parse_module(hlo)
    program = _Program(module, backend)
    in_place = in_place_kernels(module)
    table = frames if frames is not None else module.frame_table()
    kernels = [_kernel(program, site, cwd, in_place, table) for site in program.walk.sites]
    for index, names in _overlapped(program.walk.sites).items():
        kernels[index]["overlapped_by"] = names
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
        "backend": program.backend,
        "buffers": entry_buffers(module),
        "call_bytes": entry_call_bytes(module),
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
