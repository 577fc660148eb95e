"""The protobuf wire format, read without generated modules (no jax, no protobuf package).

Profiler traces (XSpace, :mod:`roofline_report.traces.xspace`) and the stack-frame table of a
serialized HLO module (:mod:`roofline_report.hlo.stack_frames`) are protobuf messages that jax
does not ship generated readers for; both are read field by field with :func:`fields`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["I32", "I64", "LEN", "VARINT", "WireFormatError", "fields", "signed", "varint"]

VARINT, I64, LEN, I32 = 0, 1, 2, 5


class WireFormatError(ValueError):
    """The bytes are not a message this reader can read: truncated, corrupt, or of a newer
    schema. ``newer`` is True when the bytes are well formed but use what the reader does not
    know (a newer profiler)."""

    def __init__(self, message: str, *, newer: bool = False) -> None:
        super().__init__(message)
        self.newer = newer


def varint(buf: bytes, i: int, end: int, what: str, where: str) -> tuple[int, int]:
    """The varint at ``buf[i]`` and the index after it."""
    value = 0
    shift = 0
    while True:
        if i >= end:
            raise WireFormatError(f"truncated {where}: {what} runs past the end")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise WireFormatError(f"corrupt {where}: {what} longer than 10 bytes")


def fields(buf: bytes, start: int, end: int, where: str) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) of each field in ``buf[start:end]``: an int for varints
    and fixed-size fields, a (start, end) pair for length-delimited ones. One-byte keys and
    varints, nearly all of them in a trace, are read inline."""
    out: list[tuple[int, int, Any]] = []
    append = out.append
    i = start
    while i < end:
        key = buf[i]  # the key, a varint: field number << 3 | wire type
        if key < 0x80:
            i += 1
        else:
            key, i = varint(buf, i, end, "a field key", where)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireFormatError(f"corrupt {where}: field number 0")
        if wire in (VARINT, LEN):
            if i >= end:
                raise WireFormatError(f"truncated {where}: field {number} runs past the end")
            value = buf[i]
            if value < 0x80:
                i += 1
            else:
                value, i = varint(buf, i, end, f"field {number}", where)
            if wire == VARINT:
                append((number, wire, value))
                continue
            if i + value > end:
                raise WireFormatError(
                    f"truncated {where}: field {number} holds {value} bytes, {end - i} are left")
            append((number, wire, (i, i + value)))
            i += value
        elif wire in (I64, I32):
            size = 8 if wire == I64 else 4
            if i + size > end:
                raise WireFormatError(f"truncated {where}: field {number} runs past the end")
            append((number, wire, int.from_bytes(buf[i:i + size], "little")))
            i += size
        else:
            raise WireFormatError(f"corrupt {where}: field {number} has wire type {wire}, "
                                   "which protobuf does not define for new messages")
    return out


def signed(value: int) -> int:
    """An int64 field's value from its varint (two's complement in 64 bits)."""
    return value - (1 << 64) if value >= 1 << 63 else value
