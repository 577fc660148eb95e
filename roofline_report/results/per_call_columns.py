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

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["SAME_AS", "compact", "expand", "malformed_calls"]

SAME_AS = "busy_s"  # the column a kernel's repeated columns are written as a reference to
_REPEATABLE = ("span_s", "share_s")


def compact(document: Mapping[str, Any]) -> Mapping[str, Any]:
    """``document`` with each kernel timing's repeated columns and its calls written in the
    compact forms (see the module docstring)."""
    return _each_timing(document, lambda t: _timing(t, _compact_kernel, list, _columns))


def expand(document: Mapping[str, Any]) -> Mapping[str, Any]:
    """``document`` with the compact forms written back as the plain lists and records."""
    return _each_timing(document, lambda t: _timing(t, _expand_kernel, Mapping, _records))


def _each_timing(document: Mapping[str, Any],
                 rewrite: Callable[[Mapping[str, Any]], dict[str, Any] | None]
                 ) -> Mapping[str, Any]:
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


def _timing(timing: Mapping[str, Any], kernel: Callable[[Any], Any], calls_form: type,
            calls: Callable[[Any], Any]) -> dict[str, Any] | None:
    """``timing`` with each kernel rewritten by ``kernel`` and its calls by ``calls`` (where
    they are a ``calls_form``); None where nothing changes."""
    kernels = timing.get("kernels")
    new_kernels = [kernel(k) for k in kernels] if isinstance(kernels, list) else kernels
    old_calls = timing.get("calls")
    new_calls = calls(old_calls) if isinstance(old_calls, calls_form) else None
    if new_calls is None and all(a is b for a, b in zip(new_kernels or (), kernels or (),
                                                        strict=False)):
        return None
    return {**timing, "kernels": new_kernels,
            "calls": new_calls if new_calls is not None else old_calls}


def _compact_kernel(kernel: Any) -> Any:
    return _repeated(kernel, lambda column, busy: isinstance(column, list) and column == busy,
                     lambda _busy: SAME_AS)


def _expand_kernel(kernel: Any) -> Any:
    return _repeated(kernel, lambda column, _busy: column == SAME_AS, list)


def _repeated(kernel: Any, same: Callable[[Any, list[Any]], bool],
              written: Callable[[list[Any]], Any]) -> Any:
    """A kernel whose repeatable columns that are ``same`` as its busy column are replaced by
    ``written(busy)`` (the kernel itself where none is)."""
    if not isinstance(kernel, Mapping):
        return kernel
    busy = kernel.get(SAME_AS)
    if not isinstance(busy, list):
        return kernel
    names = [name for name in _REPEATABLE if same(kernel.get(name), busy)]
    if not names:
        return kernel
    return {**kernel, **{name: written(busy) for name in names}}


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
