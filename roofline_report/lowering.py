"""Lowering and compiling a JAX workload, and what the compiler says about it (imports jax).

Contract of every function here: a value the backend does not provide comes back as None (or an
``available: False`` record with the reason), never as an exception, so the report can say
"not available" instead of failing.
"""

from __future__ import annotations

import platform
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jax.extend.mlir import ir

from roofline_report import errors

# Keys of XLA's cost analysis that the report shows; everything else is kept raw in results.json.
XLA_COST_KEYS = ("flops", "transcendentals", "bytes accessed", "optimal_seconds")


@dataclass(frozen=True)
class Lowered:
    """A lowered and compiled workload with the times each step took."""

    lowered: Any  # jax.stages.Lowered
    compiled: Any  # jax.stages.Compiled
    lower_seconds: float
    compile_seconds: float


def lower_and_compile(fn: Callable[..., Any], args: Sequence[Any]) -> Lowered:
    """jit, lower and compile ``fn`` for ``args``; compile time is measured apart from running."""
    start = time.perf_counter()
    lowered = jax.jit(fn).lower(*args)
    lowered_at = time.perf_counter()
    compiled = lowered.compile()
    done = time.perf_counter()
    return Lowered(lowered, compiled, lowered_at - start, done - lowered_at)


def stablehlo_module(lowered: Any) -> Any:
    """The StableHLO MLIR module of a lowered computation."""
    return lowered.compiler_ir(dialect="stablehlo")


def stablehlo_ops(module: Any) -> dict[str, int]:
    """Histogram of operation names in a StableHLO module, found by walking the MLIR module."""
    counts: Counter[str] = Counter()

    def visit(op: Any) -> Any:
        counts[str(op.name)] += 1
        return ir.WalkResult.ADVANCE

    with module.context:
        module.operation.walk(visit)
    return dict(sorted(counts.items()))


def stablehlo_text(module: Any) -> str:
    """The StableHLO text without debug locations (which may carry file paths)."""
    with module.context:
        text = module.operation.get_asm(enable_debug_info=False)
    return str(text)


def check_against_reference(
    actual: Any, expected: np.ndarray[Any, Any], *, rtol: float, atol: float
) -> dict[str, Any]:
    """Compare a result with a NumPy reference: max abs/rel error and allclose at rtol/atol."""
    got = np.asarray(actual, dtype=np.float64)
    want = np.asarray(expected, dtype=np.float64)
    if got.shape != want.shape:
        return {
            "passed": False,
            "shape": list(got.shape),
            "expected_shape": list(want.shape),
            "max_abs_error": None,
            "max_rel_error": None,
            "rtol": rtol,
            "atol": atol,
            "note": f"shape {list(got.shape)} differs from the reference's {list(want.shape)}",
        }
    diff = np.abs(got - want)
    scale = np.abs(want)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(scale > 0, diff / scale, np.where(diff > 0, np.inf, 0.0))
    finite = bool(np.all(np.isfinite(got)))
    max_rel = float(np.max(rel)) if rel.size else 0.0
    return {
        "passed": finite and bool(np.allclose(got, want, rtol=rtol, atol=atol)),
        "shape": list(got.shape),
        "expected_shape": list(want.shape),
        "max_abs_error": float(np.max(diff)) if diff.size else 0.0,
        "max_rel_error": max_rel if np.isfinite(max_rel) else None,
        "rtol": rtol,
        "atol": atol,
        "note": "" if finite else "the result has non-finite values",
    }


def xla_cost(compiled: Any) -> dict[str, Any]:
    """XLA's cost analysis of the compiled executable (a compiler estimate).

    Returns {"available", "reason", "values": {key: float}, "raw": {...}}. Zero-valued keys are
    omitted by XLA, so missing known keys read as 0; negative values (-1 for calls XLA cannot
    cost, such as cuBLAS on GPU) are kept raw and flagged, never used as numbers.
    """
    try:
        cost = compiled.cost_analysis()
    except Exception as exc:  # backends may not implement it
        return {"available": False, "reason": f"cost_analysis failed: {errors.reason(exc)}",
                "values": {}, "raw": {}}
    if isinstance(cost, list | tuple):  # jax < 0.4.38 returned a one-element list
        cost = cost[0] if cost else None
    if not cost:
        return {"available": False, "reason": "the backend returned no cost analysis",
                "values": {}, "raw": {}}
    raw = {str(k): float(v) for k, v in sorted(cost.items()) if _finite_number(v)}
    values = {key: raw.get(key, 0.0) for key in XLA_COST_KEYS if key != "optimal_seconds"}
    if "optimal_seconds" in raw:
        values["optimal_seconds"] = raw["optimal_seconds"]
    return {"available": True, "reason": "", "values": values, "raw": raw}


def _finite_number(value: object) -> bool:
    try:
        return bool(np.isfinite(float(value)))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def memory_stats(compiled: Any) -> dict[str, Any]:
    """XLA's memory analysis (argument, output, alias, temp, peak bytes) or unavailable."""
    try:
        stats = compiled.memory_analysis()
    except Exception as exc:
        return {"available": False, "reason": f"memory_analysis failed: {errors.reason(exc)}",
                "values": {}}
    if stats is None:
        return {"available": False, "reason": "the backend returned no memory analysis",
                "values": {}}
    names = ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
             "temp_size_in_bytes", "generated_code_size_in_bytes", "peak_memory_in_bytes")
    values = {n: int(getattr(stats, n)) for n in names if getattr(stats, n, None) is not None}
    return {"available": True, "reason": "", "values": values}


def environment() -> dict[str, Any]:
    """The software and device this run measured on (no host or user names)."""
    import jaxlib

    device = jax.devices()[0]
    info: dict[str, Any] = {
        "jax": jax.__version__,
        "jaxlib": str(getattr(jaxlib, "__version__", "unknown")),
        "numpy": np.__version__,
        "python": platform.python_version(),
        "backend": jax.default_backend(),
        "device_kind": str(device.device_kind),
        "device_count": jax.device_count(),
        "platform": f"{platform.system()} {platform.machine()}",
        "cpu_model": cpu_model(),
        "cpu_count": _cpu_count(),
    }
    for attr in ("compute_capability",):
        value = getattr(device, attr, None)
        if value is not None:
            info[attr] = str(value)
    try:
        mem = device.memory_stats()
    except Exception:
        mem = None
    if mem and "bytes_limit" in mem:
        info["device_memory_bytes"] = int(mem["bytes_limit"])
    return info


def _cpu_count() -> int:
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, or platform.processor() elsewhere."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"
