"""Bytes one device sends for one collective of the compiled HLO (no jax).

The ring (bandwidth-optimal) formulas, as NVIDIA's nccl-tests derive them (NVIDIA/nccl-tests,
doc/PERFORMANCE.md, "bus bandwidth"): for a group of ``g`` devices and a full array of ``S``
bytes, all-gather ``S (g-1)/g``, reduce-scatter ``S (g-1)/g`` of its operand, all-reduce
``2 S (g-1)/g``, all-to-all ``S (g-1)/g``, collective-permute ``S``.

Also the memory traffic a collective adds (:func:`collective_memory_bytes`), and the dtype a
compiled collective has in the program (:func:`program_dtype`): XLA:CPU runs bfloat16
collectives in float32, so the bytes a GPU or TPU sends are read from the StableHLO's ops at
the collective's source location.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

COLLECTIVE_OPS: tuple[str, ...] = (
    "all-gather",
    "reduce-scatter",
    "all-reduce",
    "all-to-all",
    "collective-permute",
)

def _count(name: str, value: object, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    as_int = int(value)
    if as_int < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {as_int}")
    return as_int


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


def collective_bytes(op: str, result_bytes: int, group_size: int) -> int:
    """Bytes one device sends over the interconnect for one collective (ring algorithms).

    ``result_bytes`` is the size of the instruction's result on one device, as the compiled HLO
    declares it; ``group_size`` the number of devices in each replica group. Conventions (module
    docstring; NVIDIA/nccl-tests doc/PERFORMANCE.md):

    * ``all-gather``: ``result * (g-1)/g`` -- the result is the gathered array;
    * ``reduce-scatter``: the operand is ``result * g``, so ``result * (g-1)``;
    * ``all-reduce``: ``2 * result * (g-1)/g``;
    * ``all-to-all``: ``result * (g-1)/g``;
    * ``collective-permute``: ``result`` (``group_size`` is ignored, but must be positive).

    A group of one sends nothing (except a permute). Fractions are rounded up to whole bytes.
    Raises ValueError for an unknown op, a negative size or a non-positive group.
    """
    size = _count("result_bytes", result_bytes, minimum=0)
    g = _count("group_size", group_size, minimum=1)
    if op == "all-gather" or op == "all-to-all":
        return _ceil_div(size * (g - 1), g)
    if op == "reduce-scatter":
        return size * (g - 1)
    if op == "all-reduce":
        return _ceil_div(2 * size * (g - 1), g)
    if op == "collective-permute":
        return size
    raise ValueError(f"unknown collective {op!r}; expected one of {', '.join(COLLECTIVE_OPS)}")


def full_array_bytes(op: str, result_bytes: int, group_size: int) -> int:
    """The array the ring formulas move, from the result one device holds: a reduce-scatter's
    operand is ``g`` times its result; every other collective's array is its result (an
    all-to-all's per-device buffer, a permute's message)."""
    size = _count("result_bytes", result_bytes, minimum=0)
    g = _count("group_size", group_size, minimum=1)
    return size * g if op == "reduce-scatter" else size


def collective_memory_bytes(op: str, result_bytes: int, group_size: int) -> int:
    """Bytes one collective adds to a device's memory traffic: it reads its operand and writes
    its result, and what uses the result reads it once more.

    An all-gather of an array of V bytes over ``g`` devices reads its shard (V/g), writes the
    gathered V and its consumer reads V: ``V/g + 2V``; a reduce-scatter reads the full
    operand V and writes V/g, read once more: ``V + 2V/g``; an all-reduce, all-to-all or
    permute of V: ``3V``. The gathered weights an FSDP step reads and writes are these bytes,
    which the shards of its arguments and results leave out.
    """
    if op not in COLLECTIVE_OPS:
        raise ValueError(f"unknown collective {op!r}; expected one of {', '.join(COLLECTIVE_OPS)}")
    full = full_array_bytes(op, result_bytes, group_size)
    if op == "all-gather":
        return _ceil_div(full, group_size) + 2 * full
    if op == "reduce-scatter":
        return full + 2 * int(result_bytes)
    return 3 * full


# --------------------------------------------------------------------------------------------
# The program's dtype of a compiled collective
# --------------------------------------------------------------------------------------------

#: Why a compiled collective's dtype can be wider than the program's.
CONVERSION_NOTE = (
    "the program's {program} compiled as {compiled} here (XLA:CPU converts {program} "
    "collectives, before and after), so this machine moves {ratio:g}× the bytes a GPU or TPU "
    "sends; priced in {program}"
)


def _float_bits(dtype: str | None) -> int | None:
    """Bits of a floating-point element type (``bf16``, ``f16``, ``f32``, ``f8e4m3fn``...), None
    for integers, booleans and unknown names."""
    if not dtype:
        return None
    name = dtype.lower()
    if name == "bf16":
        return 16
    if not name.startswith("f"):
        return None
    digits = ""
    for ch in name[1:]:
        if not ch.isdigit():
            break
        digits += ch
    return int(digits) if digits else None


def _last_segment(name: str | None) -> str | None:
    if not name:
        return None
    return name.rstrip("/").rsplit("/", 1)[-1] or None


def _source_key(source: object) -> tuple[str, int] | None:
    """(file base name, line) of a record's ``"source"`` (``"name.py:12"``), else None."""
    if not isinstance(source, str) or ":" not in source:
        return None
    name, _, line = source.rpartition(":")
    return (name, int(line)) if name and line.isdigit() else None


def _candidates(record: Mapping[str, Any], program_ops: Sequence[Mapping[str, Any]]
                ) -> list[Mapping[str, Any]]:
    """The program's ops a compiled collective came from: those at its source line (the
    innermost frame's file and line, ``"source"``) sharing the last segment of its op_name,
    else those at its line, else those sharing the name; none when the record has neither."""
    key = _source_key(record.get("source"))
    name = _last_segment(record.get("op_name"))
    at = [op for op in program_ops
          if key is not None and (op.get("file"), op.get("line")) == key]
    named = [op for op in at if _last_segment(op.get("name")) == name]
    if named:
        return named
    if at:
        return at
    if name is None:
        return []
    return [op for op in program_ops if _last_segment(op.get("name")) == name]


def program_dtype(record: Mapping[str, Any], array: Mapping[str, Any], group_size: int | None,
                  program_ops: Sequence[Mapping[str, Any]]) -> str | None:
    """The element type one array of a compiled collective has in the program (the StableHLO,
    before the backend rewrites it), or None when it cannot be told.

    ``record`` is a :func:`roofline_report.hlo.compiled.collective_records` record (its
    ``"op_name"`` and ``"source"``), ``array`` one of its arrays (``"dtype"``, ``"shape"``).
    ``program_ops`` are the program's ops as ``{"name", "file", "line", "column", "types":
    [[dtype, elements], ...]}`` (their results and operands). The candidates are the ops of
    the collective's source line and name (:func:`_candidates`); of their tensors, those
    with as many elements as the array (or ``group_size`` times as many: a sharded
    collective's array is a shard of the program's global one) must all be of one
    floating-point type. A non-float array is its own program dtype.
    """
    compiled = array.get("dtype")
    if _float_bits(compiled) is None:
        return str(compiled) if compiled else None
    shape = array.get("shape")
    if not isinstance(shape, list | tuple):
        return None
    elements = math.prod(int(d) for d in shape)
    sizes = {elements} | ({elements * group_size} if group_size else set())
    found = {
        str(dtype).lower()
        for op in _candidates(record, program_ops)
        for dtype, count in op.get("types", ())
        if count in sizes and _float_bits(str(dtype)) is not None
    }
    return found.pop() if len(found) == 1 else None


def program_bytes(array: Mapping[str, Any], dtype: str | None) -> int | None:
    """The array's bytes in ``dtype`` (its compiled bytes scaled by the ratio of the widths)."""
    compiled_bits, program_bits = _float_bits(array.get("dtype")), _float_bits(dtype)
    size = array.get("bytes")
    if size is None:
        return None
    if compiled_bits is None or program_bits is None or compiled_bits == program_bits:
        return int(size)
    return _ceil_div(int(size) * program_bits, compiled_bits)
