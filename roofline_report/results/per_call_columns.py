"""How a profile's per-call samples are written in results.json (no jax, standard library only).

A profile of a long run keeps a sample per traced call for each kernel and a record per call
(a 100 MB trace: 170,940 calls, two and a half million numbers), and writing their text is most
of a large report's writing: about 0.8 µs a number on a 2-core CPU, 2 s in all. Two forms make
that text shorter and quicker to write, and read back value for value:

- A kernel's ``span_s`` or ``share_s`` column that equals its ``busy_s`` column, sample for
  sample, is written as the string ``"busy_s"``. On a trace whose kernels neither wait for
  the runtime's threads nor share the machine with other kernels (most CPU traces, where the
  runtime runs one kernel at a time) the three columns are the same numbers.
- A record's ``calls`` (one object of five times a call) are written as columns: one list per
  field, ``{"busy_s": [...], "dispatch_s": [...], ...}``, each as long as the calls, which
  spares writing (and reading) each call's five keys.

Of the 100 MB profile's text, these take off 0.6 of 2.0 s and 6 of 33 MB. :func:`compact`
gives the written form; :func:`expand` gives the document back, as :mod:`.io` does before
validating. Neither changes the document it is given: each copies what it rewrites. A document
in neither form passes through unchanged, and a compact form that is not well formed (a
reference to a missing column, columns of different lengths) is left as it is, for validation
to refuse with its own one-line error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SAME_AS", "compact", "expand", "malformed_calls"]

SAME_AS = "busy_s"  # the column a kernel's repeated columns are written as a reference to
_REPEATABLE = ("span_s", "share_s")


def compact(document: Mapping[str, Any]) -> Mapping[str, Any]:
    """``document`` with each kernel timing's repeated columns and its calls written in the
    compact forms (see the module docstring)."""
    return _each_timing(document, _compact_timing)


def expand(document: Mapping[str, Any]) -> Mapping[str, Any]:
    """``document`` with the compact forms written back as the plain lists and records."""
    return _each_timing(document, _expand_timing)


def _each_timing(document: Mapping[str, Any], rewrite: Any) -> Mapping[str, Any]:
    workloads = document.get("workloads") if isinstance(document, Mapping) else None
    if not isinstance(workloads, list):
        return document
    changed = False
    out = []
    for workload in workloads:
        timing = workload.get("kernel_timing") if isinstance(workload, Mapping) else None
        new = rewrite(timing) if isinstance(timing, Mapping) else None
        if new is None:
            out.append(workload)
            continue
        changed = True
        out.append({**workload, "kernel_timing": new})
    return {**document, "workloads": out} if changed else document


def _compact_timing(timing: Mapping[str, Any]) -> dict[str, Any] | None:
    kernels = timing.get("kernels")
    new_kernels = ([_compact_kernel(k) for k in kernels] if isinstance(kernels, list)
                   else kernels)
    calls = timing.get("calls")
    columns = _columns(calls) if isinstance(calls, list) else None
    if columns is None and all(a is b for a, b in zip(new_kernels or (), kernels or (),
                                                      strict=False)):
        return None
    return {**timing, "kernels": new_kernels,
            "calls": columns if columns is not None else calls}


def _compact_kernel(kernel: Any) -> Any:
    if not isinstance(kernel, Mapping):
        return kernel
    busy = kernel.get(SAME_AS)
    if not isinstance(busy, list):
        return kernel
    same = [name for name in _REPEATABLE
            if isinstance(kernel.get(name), list) and kernel[name] == busy]
    if not same:
        return kernel
    return {**kernel, **dict.fromkeys(same, SAME_AS)}


def _columns(calls: list[Any]) -> dict[str, list[Any]] | None:
    """The calls as columns, where every call is an object of the same keys (else None)."""
    if not calls or not all(type(c) is dict for c in calls):
        return None
    keys = list(calls[0])
    if not keys or any(len(c) != len(keys) for c in calls):
        return None
    try:
        return {key: [c[key] for c in calls] for key in keys}
    except KeyError:  # a call with other keys, as many
        return None


def _expand_timing(timing: Mapping[str, Any]) -> dict[str, Any] | None:
    kernels = timing.get("kernels")
    new_kernels = ([_expand_kernel(k) for k in kernels] if isinstance(kernels, list)
                   else kernels)
    calls = timing.get("calls")
    records = _records(calls) if isinstance(calls, Mapping) else None
    if records is None and all(a is b for a, b in zip(new_kernels or (), kernels or (),
                                                      strict=False)):
        return None
    return {**timing, "kernels": new_kernels,
            "calls": records if records is not None else calls}


def _expand_kernel(kernel: Any) -> Any:
    if not isinstance(kernel, Mapping):
        return kernel
    busy = kernel.get(SAME_AS)
    if not isinstance(busy, list):
        return kernel
    same = [name for name in _REPEATABLE if kernel.get(name) == SAME_AS]
    if not same:
        return kernel
    return {**kernel, **{name: list(busy) for name in same}}


def _records(columns: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The calls as records, where ``columns`` are lists of one length (else None)."""
    if not columns or not all(isinstance(v, list) for v in columns.values()):
        return None
    lengths = {len(v) for v in columns.values()}
    if len(lengths) != 1:
        return None
    keys = list(columns)
    return [dict(zip(keys, row, strict=True)) for row in zip(*columns.values(), strict=True)]


def malformed_calls(document: Mapping[str, Any]) -> str | None:
    """Where a document still holds calls written as columns that :func:`expand` could not
    read back, the key path and the problem in words ("workloads[0].kernel_timing.calls:
    written as columns, whose lengths differ (4, 5)"); None where there are none."""
    workloads = document.get("workloads") if isinstance(document, Mapping) else None
    for i, workload in enumerate(workloads if isinstance(workloads, list) else ()):
        timing = workload.get("kernel_timing") if isinstance(workload, Mapping) else None
        calls = timing.get("calls") if isinstance(timing, Mapping) else None
        if not isinstance(calls, Mapping):
            continue
        where = f"workloads[{i}].kernel_timing.calls: written as columns"
        if not calls:
            return f"{where}, of which there are none"
        if not all(isinstance(v, list) for v in calls.values()):
            return f"{where}, which must be lists"
        lengths = sorted({len(v) for v in calls.values()})
        return f"{where}, whose lengths differ ({', '.join(map(str, lengths))})"
    return None
