"""What a program's kernel inventory totals per call, read for the model
(:mod:`roofline_report.analysis.predict`): the bytes a call holds (its footprint), the bytes
its kernels move (its traffic) and the buffers it passes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["program_buffers", "program_footprint", "program_traffic"]


def program_footprint(inventory: Mapping[str, Any]) -> float | None:
    """The bytes a call of the program holds at least (its arguments and the results that
    alias none of them: the inventory's ``call_bytes``): what passes through the caches
    between one call's read of an argument and the next call's; None where not counted."""
    value = inventory.get("call_bytes")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        and value > 0 else None


def program_traffic(inventory: Mapping[str, Any]) -> float | None:
    """The bytes a program's kernels move per call, as its kernel inventory totals them (each
    charged kernel's bytes times its trips): how much passes through the caches between one
    call's use of an input and the next's; None where the inventory gives no totals."""
    read, written = inventory.get("bytes_read"), inventory.get("bytes_written")
    if read is None or written is None:
        return None
    return float(read) + float(written)


def program_buffers(inventory: Mapping[str, Any]) -> int | None:
    """The arguments and results one call of the program passes, as its kernel inventory
    counts them (the entry computation's parameters and results); None where not counted."""
    value = inventory.get("buffers")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None
