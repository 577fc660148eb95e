"""Version-2 results.json converted to version 3 (no jax).

Version 2 stored each timing's statistics beside its samples and, for the per-kernel times of a
profiler trace, medians over the traced calls instead of one sample per call. Version 3 keeps
the samples only. The conversion:

* every timing record: ``per_call.samples`` becomes ``per_call_s``; the statistics are dropped
  (they are recomputed from the samples, by the same rules);
* a profiler trace's per-kernel record: each kernel's launch-to-completion samples
  (``samples_s``) become ``span_s``; its busy time was not kept by version 2 (``busy_s`` is
  None, and the analysis says the kernel's time is its launch-to-completion time); the per-call
  figures of the program (wall time, busy time, dispatch, loop control, gaps) were kept only as
  medians, so each traced call gets the medians, and a note says so; the trace's overhead ratio
  was kept without its samples and is dropped;
* everything else is carried as it is, and validated as version 3: a version-2 file with keys
  the version-3 records do not know is refused with the key path, like any other file.

:func:`upgrade` is pure and returns a new document; the input is not changed.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = ["CONVERTED_NOTE", "upgrade"]

CONVERTED_NOTE = ("converted from a version-2 results.json: each traced call carries the medians "
                  "that version kept, and kernel times are launch-to-completion (version 2 did "
                  "not keep the events' own durations)")


def upgrade(data: Mapping[str, Any]) -> dict[str, Any]:
    """The version-3 form of a version-2 document (see the module docstring)."""
    out: dict[str, Any] = _timings(copy.deepcopy(dict(data)))
    out["schema_version"] = 3
    for w in out.get("workloads") or []:
        if isinstance(w, dict) and isinstance(w.get("kernel_timing"), dict):
            w["kernel_timing"] = _kernel_timing(w["kernel_timing"])
    return out


def _is_v2_timing(value: Mapping[str, Any]) -> bool:
    per_call = value.get("per_call")
    return "inner_reps" in value and isinstance(per_call, Mapping) and "samples" in per_call


def _timings(value: Any) -> Any:
    """Every version-2 timing record in ``value`` (any depth) in its version-3 form."""
    if isinstance(value, dict):
        if _is_v2_timing(value):
            converted = {k: v for k, v in value.items() if k not in ("per_call", "samples")}
            converted["per_call_s"] = list(value["per_call"]["samples"])
            return converted
        return {k: _timings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_timings(v) for v in value]
    return value


def _kernel_timing(kt: dict[str, Any]) -> dict[str, Any]:
    if kt.get("available") is False or "kernels" not in kt:
        return kt
    calls = int(kt.get("calls") or 1)
    remainder = kt.get("remainder") or {}
    call = {"program_s": kt.get("program_s", 0.0), "busy_s": kt.get("busy_s", 0.0),
            "dispatch_s": remainder.get("dispatch_s", 0.0),
            "loop_control_s": remainder.get("loop_control_s", 0.0),
            "gaps_s": remainder.get("gaps_s", 0.0)}
    kernels = []
    for k in kt.get("kernels") or []:
        samples = list(k.get("samples_s") or [k.get("total_s", 0.0)])
        kernels.append({"name": k.get("name", ""),
                        "launches": [k.get("launches", 0.0)] * len(samples),
                        "span_s": samples})
    return {
        "available": True,
        "source": kt.get("source", "host"),
        "calls": [dict(call) for _ in range(calls)],
        "kernels": kernels,
        "unmatched": list(kt.get("unmatched") or []),
        "notes": [*list(kt.get("notes") or []), CONVERTED_NOTE],
    }
