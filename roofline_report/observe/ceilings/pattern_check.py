"""Which kernel of a compiled program is the pattern's: the check every measured point passes
(no jax: it reads the optimized HLO's text).

The kernel inventory of the optimized HLO labels each kernel with its ``pattern``
(:mod:`roofline_report.hlo.kernels`); a kernel is the pattern's when it bears the label and
holds the pattern's operation: a transpose (or a copy, a TPU's form of a layout change) or a dot
outside the compiler's libraries (no custom call, no kind named ``__...``), a reduce (a strided
reduction's in a module where some reduce keeps its operand's minor axis), a reduce-window
(spanning a row on a TPU; outside the libraries on a CPU), a top-k's custom call, or the
gather, scatter or sort itself. The on-chip rate has no label: its kernel is a loop (of more
than one trip) that moves bytes on chip and none to or from HBM.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any


def _library(kernel: Mapping[str, Any]) -> bool:
    kind = str(kernel.get("kind") or "")
    return kind.startswith("__") or kernel.get("opcode") == "custom-call"


def _minor_reduced(module: Any) -> bool | None:
    """Whether every reduce of ``module`` (an :class:`~roofline_report.hlo.ir.Module`) reduces
    its operand's minor axis; None when it has no reduce."""
    found = []
    for _comp, instr in module.instructions():
        if instr.opcode != "reduce" or not instr.operand_shapes:
            continue
        operand = instr.operand_shapes[0]
        array = operand.array if operand is not None else None
        dims = {int(d) for d in str(instr.attributes.get("dimensions", "")).strip("{}")
                .split(",") if d.strip()}
        if array is None or not array.dims:
            continue
        found.append(array.minor_to_major()[0] in dims)
    return all(found) if found else None


def pattern_kernel(text: str, pattern: str) -> tuple[str | None, str]:
    """The kernel of the optimized HLO ``text`` that has ``pattern`` (None when none has it) and
    a line naming the program's kernels (each with its kind): the check every measured point
    passes. Pure."""
    from roofline_report.hlo.ir import parse_module
    from roofline_report.hlo.kernels import kernel_inventory

    module = parse_module(text)
    found = kernel_inventory(module)["kernels"]
    described = ", ".join(f"{k['name']} ({k.get('kind') or k.get('opcode')})" for k in found)

    @functools.cache
    def minor_reduced() -> bool | None:  # a scan of the whole module: at most once
        return _minor_reduced(module)

    def has(k: Mapping[str, Any]) -> bool:
        ops = k.get("ops") or {}
        if pattern == "transpose":  # a TPU changes layouts with copies
            return bool(ops.get("transpose") or ops.get("copy")) and not _library(k)
        if pattern == "reduce-window-lane":
            return bool(ops.get("reduce-window"))
        if pattern in ("reduce-window", "sum-window"):  # XLA's own loop, not a library's
            return bool(ops.get("reduce-window")) and not _library(k)
        if pattern == "update-slice":
            return bool(ops.get("dynamic-update-slice"))
        if pattern in ("loop-dot", "mat-vec", "vec-mat", "transposed-dot"):
            return bool(ops.get("dot")) and not _library(k)
        if pattern == "strided-reduction":
            return bool(ops.get("reduce")) and minor_reduced() is False
        if pattern in ("variadic-reduction", "interleaved-reduction"):
            return bool(ops.get("reduce"))
        if pattern in ("fused-transpose", "broadcast-transpose", "block-transpose"):
            return bool(ops.get("transpose") or ops.get("copy")) and not _library(k)
        if pattern == "normalization":  # the library's fusion of a whole layer norm
            return bool(ops.get("reduce")) and _library(k)
        if pattern == "lone-convert":
            return bool(ops.get("convert")) and not _library(k)
        if pattern == "lone-op":
            return bool(ops.get("add")) and not _library(k)
        if pattern == "top-k":
            return k.get("opcode") == "custom-call" or bool(ops.get("custom-call"))
        return bool(ops.get(pattern))  # gather, scatter, sort

    if pattern == "on-chip":  # no pattern of the inventory: a loop's kernel moving no HBM byte
        for k in found:
            chip = int(k.get("on_chip_bytes_read") or 0) + int(k.get("on_chip_bytes_written")
                                                              or 0)
            if int(k.get("trips") or 1) > 1 and chip > 0 \
                    and int(k["bytes_read"]) + int(k["bytes_written"]) == 0:
                return str(k["name"]), described
        return None, described
    for k in found:  # the inventory labels every kernel with its pattern (None for none)
        if k["pattern"] == pattern and has(k):
            return str(k["name"]), described
    return None, described
