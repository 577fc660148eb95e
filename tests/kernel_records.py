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


def kernel_time(fields: Mapping[str, object] | None = None, /,
                **more: object) -> schema.KernelTime:
    """A kernel's record in a profiler trace from the fields a test gives: named ``fusion``,
    one launch, and spans of 0 s where the test gives none (one per sample of launches)."""
    given = {**(fields or {}), **more}
    launches = given.get("launches", [1])
    samples = len(launches) if isinstance(launches, list) else 1
    return schema.KernelTime.model_validate(
        {"name": "fusion", "launches": launches, "span_s": [0.0] * samples, **given},
        strict=False)


def traced(by_name: Mapping[str, Mapping[str, object]]) -> dict[str, schema.KernelTime]:
    """:func:`kernel_time` of each kernel of a trace, by name."""
    return {name: kernel_time(record, name=name) for name, record in by_name.items()}


def trace_calls(calls: Iterable[Mapping[str, object]]) -> list[schema.TraceCall]:
    """The typed records of a trace's calls."""
    return [schema.TraceCall.model_validate(call) for call in calls]
