"""What a program's kernel inventory totals per call, read for the model
(:mod:`roofline_report.analysis.predict`): the bytes a call holds (its footprint), the bytes
its kernels move (its traffic) and the buffers it passes."""

from __future__ import annotations

from roofline_report.results import schema

__all__ = ["program_buffers", "program_footprint", "program_traffic"]


def program_footprint(inventory: schema.KernelInventory) -> float | None:
    """The bytes a call of the program holds at least (its arguments and the results that
    alias none of them: the inventory's ``call_bytes``): what passes through the caches
    between one call's read of an argument and the next call's; None where not counted."""
    value = inventory.call_bytes
    return float(value) if value is not None and value > 0 else None


def program_traffic(inventory: schema.KernelInventory) -> float:
    """The bytes a program's kernels move per call, as its kernel inventory totals them (each
    charged kernel's bytes times its trips): how much passes through the caches between one
    call's use of an input and the next's."""
    return float(inventory.bytes_read) + float(inventory.bytes_written)


def program_buffers(inventory: schema.KernelInventory) -> int | None:
    """The arguments and results one call of the program passes, as its kernel inventory
    counts them (the entry computation's parameters and results); None where not counted."""
    value = inventory.buffers
    return value if value is not None and value > 0 else None
