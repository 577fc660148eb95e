"""The results document of a profile read from a trace: the one place its records are built.

Everything ``roofline-report profile`` puts in results.json is assembled here from a
:class:`~roofline_report.ingest.pipeline.Reading`, so when the schema moves this module alone
follows it. The document holds observations only, as a measured run's does: one workload per
host (the chosen program, its kernel inventory counted from the trace's HLO, the compiled facts,
one device's per-kernel times, every device's program and collective times side by side), the
environment the trace names, the ceilings record given (measured on the machine that ran the
trace), the chip preset asked for, and the trace's provenance (:class:`TraceSource`). Nothing
derived is stored: the per-kernel roofline, predictions and sentences come from the same
analysis and rendering as a measured run's.
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Mapping
from typing import Any

from roofline_report.errors import InputError
from roofline_report.hlo.shapes import FLOAT_TYPES
from roofline_report.ingest.device_timeline import device_timelines
from roofline_report.ingest.pipeline import (
    HostProgram,
    LaneTiming,
    Reading,
    backend_of,
    device_kind,
)
from roofline_report.results.schema import SCHEMA_VERSION
from roofline_report.results.schema_run import (
    DEFAULT_INTERCONNECT,
    SEED_BANDWIDTH,
    SEED_PEAK_FLOPS,
)
from roofline_report.version import __version__

__all__ = ["NOT_RECORDED", "results_document", "workload_name"]

NOT_RECORDED = "not recorded in the trace"
NOT_PART = "not part of a profile read from a trace"


def workload_name(module: str, host: str, hosts: int) -> tuple[str, str]:
    """(name, title) of the workload of ``module`` on ``host``; the host is named only when
    the trace has several."""
    if hosts > 1:
        return f"trace:{module}@{host}", f"{module} on {host}"
    return f"trace:{module}", module


def _measured_at(reading: Reading) -> str | None:
    """When the profile started (the trace's ``Task Environment`` plane), UTC ISO 8601."""
    for h in reading.hosts:
        plane = h.space.plane("Task Environment")
        start = plane.stats.get("profile_start_time") if plane is not None else None
        if isinstance(start, int) and start > 0:
            when = datetime.datetime.fromtimestamp(start / 1e9, datetime.UTC)
            return when.strftime("%Y-%m-%dT%H:%M:%SZ")
    return None


def _environment(reading: Reading) -> dict[str, Any]:
    kind, extra = device_kind(reading.hosts)
    first = reading.hosts[0]

    def version(key: str) -> str:
        value = first.metadata(key)
        return str(value) if value else NOT_RECORDED

    return {
        "backend": backend_of(reading.hosts),
        "device_kind": kind,
        "device_count": sum(len(h.lanes) for h in reading.hosts),
        "python": NOT_RECORDED,
        "jax": version("jax_version"),
        "jaxlib": version("jaxlib_version"),
        "numpy": NOT_RECORDED,
        "platform": NOT_RECORDED,
        "hosts": len(reading.hosts),
        **extra,
    }


def _dtype(inventory: Mapping[str, Any] | None) -> str:
    """The floating type that most of the program's matmul bytes are in (else all its kernels'
    bytes): the dtype its compute roof is chosen for."""
    if not inventory:
        return "float32"
    for kernels in ([k for k in inventory["kernels"] if k["category"] == "matmul"],
                    inventory["kernels"]):
        moved: Counter[str] = Counter()
        for k in kernels:
            for t, b in (k.get("read_by_dtype") or {}).items():
                if t in FLOAT_TYPES:
                    moved[FLOAT_TYPES[t]] += int(b) * int(k["trips"])
        if moved:
            return max(sorted(moved), key=lambda t: moved[t])
    return "float32"


def _lane(t: LaneTiming, chosen: LaneTiming | None) -> dict[str, Any] | None:
    """One device's samples of the program (its kernel_timing record), when it has some; the
    chosen device's without them, since they are the workload's ``kernel_timing``."""
    if not t.timing.get("available"):
        return None
    if t is chosen:
        return {"device": t.lane.device}
    return {"device": t.lane.device, "timing": t.timing}


def _workload(p: HostProgram, reading: Reading, skipped: list[dict[str, str]]
              ) -> dict[str, Any]:
    host = p.host.file.host
    name, title = workload_name(reading.module, host, len(reading.programs))
    chosen = p.chosen
    if chosen is not None:
        kernel_timing: dict[str, Any] = chosen.timing
    elif p.lanes:
        kernel_timing = {"available": False, "reason": str(p.lanes[0].timing.get("reason"))}
    else:
        kernel_timing = {"available": False,
                         "reason": f"no kernel event of {reading.module} on {host}"}
    if not kernel_timing.get("available"):
        skipped.append({"what": f"per-kernel times of {title}",
                        "reason": str(kernel_timing["reason"])})
    if p.inventory is not None:
        kernels: dict[str, Any] = p.inventory
        uncounted = [k for k in kernels["kernels"] if k.get("uncosted")]
        if uncounted:
            reasons = sorted({u for k in uncounted for u in k["uncosted"]})
            skipped.append({"what": f"work of {len(uncounted)} kernel(s) of {title} "
                                    f"({', '.join(k['name'] for k in uncounted)})",
                            "reason": "; ".join(reasons)})
    else:
        kernels = {"available": False, "reason": str(p.hlo_reason)}
        skipped.append({"what": f"work of the kernels of {title}", "reason": str(p.hlo_reason)})
    view = chosen.view if chosen is not None else None
    lanes = [lane for lane in (_lane(t, chosen) for t in p.lanes) if lane is not None]
    notes = [*p.notes, *(view.notes if view is not None else [])]
    if view is not None and view.outside_steps:
        notes.append(f"{view.outside_steps} kernel event(s) outside every step marker were "
                     "left out")
    return {
        "name": name,
        "title": title,
        "description": f"Read from the profiler trace of host {host}, run {reading.run.run}.",
        "dtype": _dtype(p.inventory),
        "dims": {},
        "user": True,
        "analytic": {"available": False,
                     "reason": "a program read from a profiler trace has no hand-written model"},
        "args": [],
        "lowering": {"available": False,
                     "reason": "not lowered here: the program was compiled where it ran, and "
                               "its optimized HLO is read from the trace"},
        "compiled": p.compiled,
        "kernels": kernels,
        "kernel_timing": kernel_timing,
        "trace": {
            "host": host,
            "file": p.host.file.path.name,
            "device": chosen.lane.device if chosen is not None else "none",
            "program_id": p.program_id,
            "per": view.per if view is not None else "call",
            "steps_s": [s.seconds for s in view.markers] if view is not None
            and view.per == "step" else [],
            "devices": lanes,
            "hlo": p.inventory is not None,
            "notes": notes,
            "unclaimed": [u.to_json() for u in chosen.unclaimed] if chosen is not None else [],
            "device_kernels": dict(chosen.several) if chosen is not None else {},
        },
    }


def _source(reading: Reading) -> dict[str, Any]:
    return {
        "run": reading.run.run,
        "runs": list(reading.run.runs),
        "hosts": [{
            "name": h.file.host,
            "file": h.file.path.name,
            "bytes": h.size,
            "devices": [lane.device for lane in h.lanes],
            "jax": str(h.metadata("jax_version")) if h.metadata("jax_version") else None,
            "jaxlib": str(h.metadata("jaxlib_version")) if h.metadata("jaxlib_version")
            else None,
            "errors": list(h.space.errors),
            "warnings": list(h.space.warnings),
        } for h in reading.hosts],
        "module": reading.module,
        "module_choice": reading.module_choice,
        "modules": [{"name": m.name, "program_ids": list(m.program_ids), "events": m.events,
                     "seconds": m.seconds, "hlo": m.name in reading.with_hlo}
                    for m in reading.modules],
        "ceilings_file": reading.ceilings_file,
        "unknown_fields": {k: list(v) for k, v in
                           (reading.hosts[0].space.unknown_fields if reading.hosts else {}
                            ).items()},
        "notes": list(reading.notes),
        "timeline": [{"host": h.file.host, **t.to_json()} for h in reading.hosts
                     for t in device_timelines(h.space)],
    }


def results_document(reading: Reading, *, origin: str = "command line",
                     checked: bool = True) -> dict[str, Any]:
    """The results document of ``reading``, validated against the schema (with ``checked``
    False, left to the caller: :func:`check_document`, as the report's writer does while the
    document's text is written beside it)."""
    flag = "ceilings=" if origin == "python" else "--ceilings FILE"
    skipped: list[dict[str, str]] = []
    workloads = [_workload(p, reading, skipped) for p in reading.programs]
    ceilings = reading.ceilings if reading.ceilings is not None else {
        "available": False,
        "reason": f"no ceilings were given ({flag}: a results.json measured on the machine "
                  "that ran the trace)",
    }
    data: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "generator": {"name": "roofline-report", "version": __version__,
                      "measured_at": _measured_at(reading)},
        "options": {"quick": False, "ceilings": False, "sweeps": False, "sharding": False,
                    "experiments": False, "builtin": False, "preset": reading.preset,
                    "config": None, "origin": origin, "teaching": False},
        "assumptions": {"peak": SEED_PEAK_FLOPS, "bandwidth": SEED_BANDWIDTH,
                        "interconnect": DEFAULT_INTERCONNECT,
                        "source": "the seed's assumed budgets"},
        "environment": _environment(reading),
        "ceilings": ceilings,
        "workloads": workloads,
        "sweeps": [],
        "lab": {"available": False, "reason": NOT_PART},
        "sharding": {"available": False, "reason": NOT_PART},
        "skipped": skipped,
        "trace": _source(reading),
    }
    if checked:
        check_document(data)
    return data


def check_document(data: Mapping[str, Any]) -> None:
    """Validate a document :func:`results_document` built: what is built must be what the
    loader accepts, so a failure is this tool's bug (RuntimeError), not bad input."""
    from roofline_report.results import io as results_io

    try:
        results_io.validate_built(data, source="the profile read from the trace")
    except InputError as exc:
        raise RuntimeError(str(exc)) from None
