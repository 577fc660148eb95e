"""What the compiled program runs, read from the :mod:`roofline_report.hlo.ir` of its optimized
HLO: fusions, custom calls, collectives, while loops and the kernels launched.

* :func:`inspect_compiled`: one JSON summary of the program (the shape the report reads).
* :func:`collective_records`: every collective once (an async ``-start``/``-done`` pair once),
  with its bytes, replica groups and the bytes each device sends
  (:func:`roofline_report.analysis.comm.collective_bytes`).
* :func:`while_loops`: the program's while loops in post-order from ENTRY, with the identity
  (op_name, source location) that pairs them with the StableHLO's loops.
* :func:`strip_metadata`: the text fit to publish (a text pass: it must scrub paths wherever
  they appear, including attributes the IR does not model).

The kernel count, the loops and the loops around each collective come from the one walk of the
call graph (:mod:`roofline_report.hlo.walk`), the walk the kernel inventory
(:func:`roofline_report.hlo.kernels.kernel_inventory`) lists: the two always agree.

Source files in the JSON written here are scrubbed (``<path>/name.py``): it is published.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from roofline_report.errors import InputError, scrub_paths
from roofline_report.hlo.collectives import collective_bytes
from roofline_report.hlo.ir import (
    Computation,
    Instruction,
    Module,
    SourceLocation,
    matching,
    parse_module,
)
from roofline_report.hlo.kernels import program_walk
from roofline_report.hlo.shapes import Shape
from roofline_report.hlo.walk import COLLECTIVE_OPCODES, Loop, Walk, walk

__all__ = [
    "COLLECTIVE_OPCODES",
    "collective_records",
    "inspect_compiled",
    "loop_context",
    "source_text",
    "strip_metadata",
    "while_loops",
]

def source_text(source: SourceLocation | None) -> str | None:
    """``name.py:12`` for a source location (the file's base name only), or None."""
    if source is None or not source.file:
        return None
    name = re.split(r"[/\\]", source.file)[-1]
    return f"{name}:{source.line}" if source.line else name


def _module(hlo: str | Module) -> Module:
    if isinstance(hlo, Module):
        return hlo
    if not isinstance(hlo, str):
        raise InputError(f"inspect_compiled needs HLO text, got {type(hlo).__name__}")
    return parse_module(hlo)


# --------------------------------------------------------------------------------------------
# Collectives
# --------------------------------------------------------------------------------------------


def _async_wrapped(module: Module) -> set[str]:
    """Computations run by an ``async-start``: their collectives are listed through the start."""
    return {
        name
        for _, instr in module.instructions()
        if instr.opcode == "async-start"
        for name in instr.called("calls")
    }


def _done_of(module: Module) -> dict[tuple[str, str], Instruction]:
    """(computation, start name) -> its ``-done``."""
    out: dict[tuple[str, str], Instruction] = {}
    for comp, instr in module.instructions():
        if instr.opcode.endswith("-done") and instr.operands:
            out[(comp.name, instr.operands[0])] = instr
    return out


def _collective_of(instr: Instruction, module: Module) -> tuple[str, bool, Instruction] | None:
    """(base op, async, the instruction holding the groups) of a collective, else None."""
    opcode = instr.opcode
    if opcode in COLLECTIVE_OPCODES:
        return opcode, False, instr
    if opcode.endswith("-start") and opcode[: -len("-start")] in COLLECTIVE_OPCODES:
        return opcode[: -len("-start")], True, instr
    if opcode == "async-start":
        for callee in instr.called("calls"):
            comp = module.computations.get(callee)
            for inner in comp.instructions if comp is not None else ():
                if inner.opcode in COLLECTIVE_OPCODES:
                    return inner.opcode, True, inner
    return None


def collective_records(
    hlo: str | Module, num_devices: int | None = None
) -> list[dict[str, Any]]:
    """Every collective of the program once, in text order; plain JSON records::

        {"instruction", "computation", "op", "async", "shape" (result HLO text),
         "dtype" (None when the arrays differ), "arrays": [{"dtype", "shape", "bytes"}],
         "result_bytes", "operand_bytes", "group_size", "replica_groups" ([[device, ...]]
         or None), "source_target_pairs" ([[src, dst]] or None), "channel_id",
         "bytes_per_device", "op_name", "source" ("name.py:12" or None)}

    An async pair is one record: the ``-start`` (or ``async-start`` wrapping the op) gives the
    op and groups, its ``-done`` the result. A ``-start`` without its ``-done`` takes the result
    element of its tuple (element 1: operands, result, then contexts). ``num_devices`` sizes
    groups written ``{}`` or left out (default: the header's partitions x replicas);
    ``group_size`` and ``bytes_per_device`` are None when the groups cannot be read or the op
    has no cost formula. A collective in a loop body is listed once, with ``"loops"`` (the
    while loops around it, outermost first: ``{"name", "known_trip_count"}``) and
    ``"trip_count"`` (how many times it runs per call: the product of their trip counts, 1
    outside loops, None when a loop's trip count is unknown); see :func:`loop_context`.
    """
    module = _module(hlo)
    return _collective_records(module, walk(module), num_devices)


def _collective_records(module: Module, walked: Walk, num_devices: int | None
                        ) -> list[dict[str, Any]]:
    """:func:`collective_records` of a module already walked (the loops around each
    collective come from ``walked``)."""
    devices = module.device_count if num_devices is None else num_devices
    # Replica groups are checked against the devices only where their number is known: a
    # module printed from a profile may state no counts (then device_count reads 1).
    known = module.stated_device_count if num_devices is None else num_devices
    wrapped = _async_wrapped(module)
    done_of = _done_of(module)
    loops = _loop_context(walked)
    records: list[dict[str, Any]] = []
    for comp, instr in module.instructions():
        found = _collective_of(instr, module)
        if found is None or comp.name in wrapped:
            continue
        op, is_async, source = found
        shape = instr.shape
        if is_async:
            done = done_of.get((comp.name, instr.name))
            if done is not None:
                shape = done.shape
            elif op != "all-reduce" and shape.is_tuple and len(shape.elements) >= 2:
                shape = shape.elements[1]
        record = _record(op, is_async, comp, instr, source, shape, devices, known)
        record.update(_loop_fields(loops.get(comp.name)))
        records.append(record)
    return records


def _loop_fields(context: tuple[tuple[str, int | None], ...] | None) -> dict[str, Any]:
    """The loop fields of a collective record: ``"loops"`` (each enclosing while loop,
    outermost first, as ``{"name", "known_trip_count"}``) and ``"trip_count"``, the product of
    their trip counts (1 outside any loop; None when one has no known trip count)."""
    loops = context or ()
    trips = [trip for _, trip in loops]
    product: int | None = None if any(t is None for t in trips) else math.prod(
        t for t in trips if t is not None
    )
    return {
        "loops": [{"name": name, "known_trip_count": trip} for name, trip in loops],
        "trip_count": product,
    }


def loop_context(module: Module) -> dict[str, tuple[tuple[str, int | None], ...]]:
    """For each computation reached from ENTRY, the while loops around it, outermost first, as
    (while instruction name, known trip count or None).

    Read from the one walk of the call graph (:func:`roofline_report.hlo.walk.walk`): a while's
    condition and body are inside that loop; calls, conditionals, fusions, reducers and async
    wrappers keep their caller's loops. A computation reached along several paths keeps the
    first path found (XLA's computations have one caller each once compiled). ENTRY itself
    maps to ``()``.
    """
    return _loop_context(walk(module))


def _loop_context(walked: Walk) -> dict[str, tuple[tuple[str, int | None], ...]]:
    return {
        name: tuple((loop.name, loop.known_trip_count) for loop in visit.context.loops)
        for name, visit in walked.visits.items()
    }


def _record(
    op: str,
    is_async: bool,
    comp: Computation,
    instr: Instruction,
    source: Instruction,
    shape: Shape,
    devices: int,
    known_devices: int | None,
) -> dict[str, Any]:
    arrays = [
        {"dtype": a.dtype, "shape": list(a.dims), "bytes": a.nbytes}
        for a in shape.arrays()
        if a.dtype != "token"
    ]
    dtypes = {a["dtype"] for a in arrays}
    result_bytes = shape.nbytes
    if source.source_target_pairs is not None:
        size: int | None = len({d for pair in source.source_target_pairs for d in pair}) or 1
    elif source.replica_groups is not None:
        problem = source.replica_groups.partition_problem(known_devices)
        if problem is not None:
            raise InputError(f"{instr.name}: replica_groups={source.replica_groups.text} are "
                             f"not a partition of the devices: {problem}")
        size = source.replica_groups.group_size(devices)
    else:
        size = devices
    try:
        sent = None if size is None or result_bytes is None else collective_bytes(
            op, result_bytes, size
        )
    except ValueError:  # an op without a cost formula (ragged-all-to-all, broadcast)
        sent = None
    groups = source.replica_groups
    return {
        "instruction": instr.name,
        "computation": comp.name,
        "op": op,
        "async": is_async,
        "shape": shape.text,
        "dtype": dtypes.pop() if len(dtypes) == 1 else None,
        "arrays": arrays,
        "result_bytes": result_bytes,
        "operand_bytes": source.operand_bytes,
        "group_size": size,
        "replica_groups": None
        if groups is None or groups.groups is None
        else [list(g) for g in groups.groups],
        "source_target_pairs": None
        if source.source_target_pairs is None
        else [list(p) for p in source.source_target_pairs],
        "channel_id": source.channel_id if source.channel_id is not None else instr.channel_id,
        "bytes_per_device": sent,
        "op_name": instr.op_name or source.op_name,
        "source": source_text(instr.source or source.source),
    }


# --------------------------------------------------------------------------------------------
# Loops and kernels
# --------------------------------------------------------------------------------------------


def _loop_record(loop: Loop) -> dict[str, Any]:
    instr = loop.instruction
    cond, body = instr.called("condition"), instr.called("body")
    where = instr.source
    return {
        "name": instr.name,
        "known_trip_count": loop.known_trip_count,
        "condition": cond[0] if cond else None,
        "body": body[0] if body else None,
        "op_name": instr.op_name,
        "source_file": None if where is None else scrub_paths(where.file),
        "source_line": None if where is None or not where.line else where.line,
        "source_column": None if where is None or not where.column else where.column,
    }


def while_loops(hlo: str | Module) -> list[dict[str, Any]]:
    """The while loops reached from ENTRY, in post-order (inner loops first): ``{"name",
    "known_trip_count", "condition", "body", "op_name", "source_file" (scrubbed),
    "source_line", "source_column"}``. ``known_trip_count`` is the HLO's, or in a TPU's module
    (whose compiler writes none) the count read from the loop's computations
    (:func:`roofline_report.hlo.tpu.inferred_trip_count`)."""
    return [_loop_record(loop) for loop in walk(_module(hlo)).loops]


# --------------------------------------------------------------------------------------------
# The summary
# --------------------------------------------------------------------------------------------


def inspect_compiled(hlo_text: str | Module) -> dict[str, Any]:
    """Describe the optimized HLO (``compiled.as_text()``) of CPU, GPU or TPU backends.

    Returns plain JSON::

        {"entry": str | None,
         "fusions": {"count", "by_kind": {"kLoop": n, ...}, "by_backend_kind": {...}},
         "custom_calls": [{"name", "target", "shape", "bytes", "op_name", "source"}],
         "collectives": [collective_records(...) records],
         "while_loops": [while_loops(...) records],
         "kernels": int, "kernels_static": int, "converts": int,
         "opcodes": {opcode: count}, "notes": [str]}

    ``kernels`` counts ENTRY instructions that launch work (fusions, custom calls and other ops,
    not parameter/constant/tuple/get-tuple-element/bitcast; an async ``-start``/``-done`` pair
    once); a while loop adds (condition + body kernels) x known trip count (once when unknown, a
    note says so); a conditional adds its most expensive branch (the one
    :func:`roofline_report.hlo.kernels.program_walk` charges). ``kernels_static`` counts each
    loop once. ``kernels`` is the kernel inventory's ``launches``. ``while_loops`` is in
    post-order from ENTRY (inner loops first), the order of the StableHLO count's ``loops``.
    Raises InputError when the text holds no HLO computation.
    """
    module = _module(hlo_text)
    if not module.computations:
        raise InputError("the HLO text holds no computation")
    notes: list[str] = []
    opcodes: Counter[str] = Counter()
    by_kind: Counter[str] = Counter()
    by_backend: Counter[str] = Counter()
    custom_calls: list[dict[str, Any]] = []
    for _, instr in module.instructions():
        opcodes[instr.opcode] += 1
        if instr.opcode == "fusion":
            by_kind[instr.fusion_kind or "unknown"] += 1
            config = instr.backend_config or {}
            for key in ("fusion_backend_config", "fusion_config"):
                section = config.get(key)
                if isinstance(section, Mapping) and "kind" in section:
                    by_backend[str(section["kind"])] += 1
        elif instr.opcode == "custom-call":
            custom_calls.append(
                {
                    "name": instr.name,
                    "target": instr.custom_call_target or "",
                    "shape": instr.shape.text,
                    "bytes": instr.shape.nbytes,
                    "op_name": instr.op_name,
                    "source": source_text(instr.source),
                }
            )
    walked = program_walk(module)
    loops = [_loop_record(loop) for loop in walked.loops]
    if module.entry is None:
        notes.append("no ENTRY computation: kernels not counted")
    else:
        notes.extend(walked.notes)
        if any(loop.known for loop in walked.loops):
            notes.append("kernels: each while loop counts (condition + body) x its trip count")
    return {
        "entry": module.entry,
        "fusions": {
            "count": sum(by_kind.values()),
            "by_kind": dict(sorted(by_kind.items())),
            "by_backend_kind": dict(sorted(by_backend.items())),
        },
        "custom_calls": custom_calls,
        "collectives": _collective_records(module, walked, None),
        "while_loops": loops,
        "kernels": walked.launches,
        "kernels_static": walked.launches_static,
        "converts": opcodes.get("convert", 0),
        "opcodes": dict(sorted(opcodes.items())),
        "notes": notes,
    }


# --------------------------------------------------------------------------------------------
# Publishing the HLO text
# --------------------------------------------------------------------------------------------

_BLOCK_HEADERS = frozenset({"FileNames", "FunctionNames", "FileLocations", "StackFrames"})
_SOURCE_ATTR = re.compile(
    r',?\s*\bsource_(?:file|line|end_line|column|end_column)=(?:"(?:[^"\\]|\\.)*"|-?\d+)'
)
_UNIX_PATH = re.compile(r"(?<![\w.*)\]>])/(?:[^\s/\"',;{}()\[\]<>]+/)+[^\s/\"',;{}()\[\]<>]*")
_WINDOWS_PATH = re.compile(r"\b[A-Za-z]:\\[^\s\"',;{}()\[\]<>]*")
_SOURCE_FILE = re.compile(r"\b[\w\-.]+\.(?:py|pyc|ipynb)\b")


def _drop_metadata(line: str) -> str:
    out: list[str] = []
    i = 0
    while True:
        j = line.find("metadata={", i)
        if j < 0:
            out.append(line[i:])
            break
        prefix = line[i:j]
        if prefix.rstrip().endswith(","):
            prefix = prefix.rstrip()[:-1]
        out.append(prefix)
        i = matching(line, j + len("metadata="))
    return "".join(out)


def strip_metadata(hlo_text: str) -> str:
    """HLO text fit to publish: no FileNames/FunctionNames/FileLocations/StackFrames blocks, no
    ``metadata={...}`` attributes, no ``source_file=``/``source_line=``, no absolute paths or
    source file names (replaced by ``<path>`` / ``<file>``)."""
    lines: list[str] = []
    skipping = False
    for line in hlo_text.splitlines():
        stripped = line.strip()
        if stripped in _BLOCK_HEADERS:
            skipping = True
            continue
        if skipping:
            if stripped == "":
                skipping = False
            continue
        line = _drop_metadata(line)
        line = _SOURCE_ATTR.sub("", line)
        line = _WINDOWS_PATH.sub("<path>", line)
        line = _UNIX_PATH.sub("<path>", line)
        line = _SOURCE_FILE.sub("<file>", line)
        lines.append(line.rstrip())
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text).strip("\n")
    return text + "\n"
