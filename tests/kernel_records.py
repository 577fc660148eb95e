"""Kernel records for tests that write only the fields they are about: the model reads the typed
record of the kernel inventory (:class:`roofline_report.results.schema.KernelRecord`), so a
hand-made kernel is completed with a kernel of no work and no bytes and validated as a
results.json's would be (numbers written as floats, ``1e6``, read as the counts they are)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from roofline_report.results import schema

#: The fields a kernel record requires, for a kernel that does nothing.
EMPTY_KERNEL: dict[str, object] = {
    "name": "fusion", "opcode": "fusion", "category": "elementwise", "kind": None,
    "fusion_kind": None, "computation": "main", "loop": None, "trips": 1, "flops": 0,
    "transcendentals": 0, "bytes_read": 0, "bytes_written": 0, "read_by_dtype": {},
    "written_by_dtype": {}, "flops_by_op": {}, "transcendentals_by_op": {}, "ops": {},
    "uncosted": [], "op_name": None, "source": None,
}


def kernel_record(fields: Mapping[str, object] | None = None, /,
                  **more: object) -> schema.KernelRecord:
    """The kernel record of ``fields`` and ``more``, the rest of :data:`EMPTY_KERNEL`."""
    return schema.KernelRecord.model_validate({**EMPTY_KERNEL, **(fields or {}), **more},
                                              strict=False)


def kernel_records(kernels: Iterable[Mapping[str, object]]) -> list[schema.KernelRecord]:
    """:func:`kernel_record` of each of ``kernels``."""
    return [kernel_record(kernel) for kernel in kernels]
