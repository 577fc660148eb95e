"""The collectives of a compiled sharded program, read from its optimized HLO (pure: no jax).

:func:`parse_collectives` takes every ``all-reduce``, ``all-gather``, ``reduce-scatter``,
``all-to-all`` and ``collective-permute`` (synchronous, or as an async ``-start``/``-done`` pair)
from the IR of the compiled HLO text and prices each with
:func:`roofline_report.hlo.collectives.collective_bytes`, in the compiled dtype and in the
program's; :func:`comm_totals` sums the bytes one device sends per call, each collective times
the trip count of the loops around it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from roofline_report.hlo.collectives import (
    COLLECTIVE_OPS,
    CONVERSION_NOTE,
    collective_bytes,
    program_bytes,
    program_dtype,
)
from roofline_report.hlo.compiled import collective_records


def parse_collectives(hlo_text: str, num_devices: int,
                      program_ops: Sequence[Mapping[str, Any]] | None = None
                      ) -> list[dict[str, Any]]:
    """Every collective instruction in compiled HLO text, in program order.

    Record: ``{"instruction", "op", "async", "shape", "dtype", "arrays", "result_bytes",
    "group_size", "bytes_per_device", "program_dtype", "program_result_bytes",
    "program_bytes_per_device", "converted", "dtype_source", "dtype_note", "replica_groups",
    "trip_count", "loops"}``, one per
    :func:`roofline_report.hlo.compiled.collective_records` record: an async pair is one
    record, and a combined collective (XLA runs a ``psum`` of several arrays as one all-reduce
    over a tuple) is one record whose ``arrays`` list them (``shape`` None, ``result_bytes``
    their sum): it pays its latency once. ``shape`` and ``dtype`` are the compiled ones.

    The program's dtype: ``program_ops`` (the StableHLO's ops,
    :func:`roofline_report.observe.sharded_analysis._program_ops`) give each array the dtype the
    program has it in (:func:`roofline_report.hlo.collectives.program_dtype`); XLA:CPU runs
    bfloat16 collectives in float32, so ``converted`` says the compiled array is wider,
    ``program_result_bytes`` and ``program_bytes_per_device`` are the bytes in the program's
    dtype (what a GPU or TPU sends; the model prices these) and ``dtype_note`` says so. Without
    ``program_ops``, or where the program's dtype cannot be told, the compiled dtype stands
    (``dtype_source`` ``"compiled"``, else ``"program"``).

    ``group_size`` and the bytes per device are None when the groups cannot be read.
    ``num_devices`` (the program's device count) sizes groups written as ``{}`` or left out.
    ``replica_groups`` is ``[[device, ...]]`` or None, ``trip_count`` how many times it runs
    per call (the product of the known trip counts of the while loops around it, 1 outside
    loops, None when unknown) and ``loops`` those loops' names, outermost first: the bytes are
    per execution.
    """
    if isinstance(num_devices, bool) or not isinstance(num_devices, int) or num_devices < 1:
        raise ValueError(f"num_devices must be a positive integer, got {num_devices!r}")
    records: list[dict[str, Any]] = []
    for record in collective_records(hlo_text, num_devices):
        size = record["group_size"]
        arrays = []
        read = program_ops is not None
        for array in record["arrays"]:
            found = None if program_ops is None else program_dtype(
                record, array, size, program_ops)
            read = read and found is not None
            dtype = found or array["dtype"]
            arrays.append({"dtype": array["dtype"], "shape": array["shape"],
                           "bytes": array["bytes"], "program_dtype": dtype,
                           "program_bytes": program_bytes(array, dtype)})
        compiled_total = record["result_bytes"]
        program_sizes = [a["program_bytes"] for a in arrays]
        program_total = None if any(b is None for b in program_sizes) else sum(
            int(b) for b in program_sizes if b is not None)
        known = size is not None and record["op"] in COLLECTIVE_OPS
        sent = record["bytes_per_device"]  # priced by collective_records, in the compiled dtype
        program_sent = None if not known or program_total is None else collective_bytes(
            record["op"], program_total, size)
        dtypes = {a["dtype"] for a in arrays}
        program_dtypes = {a["program_dtype"] for a in arrays}
        converted = [a for a in arrays if a["program_bytes"] is not None
                     and a["bytes"] is not None and a["program_bytes"] < a["bytes"]]
        note = ""
        if converted:
            first = converted[0]
            note = CONVERSION_NOTE.format(program=first["program_dtype"],
                                          compiled=first["dtype"],
                                          ratio=first["bytes"] / first["program_bytes"])
        records.append(
            {
                "instruction": record["instruction"],
                "op": record["op"],
                "async": record["async"],
                "shape": arrays[0]["shape"] if len(arrays) == 1 else None,
                "dtype": dtypes.pop() if len(dtypes) == 1 else None,
                "arrays": arrays,
                "result_bytes": compiled_total,
                "group_size": size,
                "bytes_per_device": sent,
                "program_dtype": program_dtypes.pop() if len(program_dtypes) == 1 else None,
                "program_result_bytes": program_total,
                "program_bytes_per_device": program_sent,
                "converted": bool(converted),
                "dtype_source": "program" if read else "compiled",
                "dtype_note": note,
                "replica_groups": record["replica_groups"],
                "trip_count": record["trip_count"],
                "loops": [loop["name"] for loop in record["loops"]],
            }
        )
    return records


def comm_totals(collectives: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Bytes one device sends per call over :func:`parse_collectives` records (each x its trip
    count): ``{"comm_bytes"`` (in the program's dtype), ``"comm_bytes_compiled"`` (as this
    backend compiled them), ``"unknown_trip_counts"`` (collectives inside a loop whose trip
    count is unknown, counted once), ``"comm_bytes_complete"`` (False then: the bytes are a
    lower bound), ``"notes"}``."""
    unknown = [c for c in collectives if c.get("trip_count", 1) is None]

    def total(key: str, fallback: str) -> int:
        out = 0
        for c in collectives:
            value = c.get(key)
            if value is None:
                value = c.get(fallback)
            out += int(value or 0) * int(c.get("trip_count") or 1)
        return out

    notes = []
    if unknown:
        notes.append(
            f"{plural_text(len(unknown), 'collective')} inside a while loop of unknown trip "
            "count, counted once: the bytes are a lower bound")
    converted = next((c for c in collectives if c.get("converted")), None)
    if converted is not None:
        notes.append(str(converted["dtype_note"]))
    return {
        "comm_bytes": total("program_bytes_per_device", "bytes_per_device"),
        "comm_bytes_compiled": total("bytes_per_device", "bytes_per_device"),
        "unknown_trip_counts": len(unknown),
        "comm_bytes_complete": not unknown,
        "notes": notes,
    }


def plural_text(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")

