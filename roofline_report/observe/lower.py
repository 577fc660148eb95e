"""Lowering and compiling a JAX workload, and what the compiler says about it (imports jax).

Contract of every function here: a value the backend does not provide comes back as None (or an
``available: False`` record with the reason), never as an exception, so the report can say
"not available" instead of failing.
"""

from __future__ import annotations

import math
import platform
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jax.extend.mlir import ir

from roofline_report import errors
from roofline_report.errors import InputError
from roofline_report.hlo.compiled import inspect_compiled
from roofline_report.hlo.stablehlo_count import count_stablehlo
from roofline_report.observe import cpu_dispatch, host_arrays

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
    """jit, lower and compile ``fn`` for ``args``; compile time is measured apart from running.
    A function already jitted is lowered through its own jit, so its options (donated
    arguments, say) are those of the program compiled."""
    start = time.perf_counter()
    jitted: Any = fn if callable(getattr(fn, "lower", None)) else jax.jit(fn)
    lowered = jitted.lower(*args)
    lowered_at = time.perf_counter()
    compiled = lowered.compile()
    done = time.perf_counter()
    return Lowered(lowered, compiled, lowered_at - start, done - lowered_at)


def lower_and_compile_jitted(jitted: Any, args: Sequence[Any],
                             kwargs: Mapping[str, Any]) -> Lowered:
    """Lower and compile an already jitted function at pytree ``args`` and ``kwargs``."""
    start = time.perf_counter()
    lowered = jitted.lower(*args, **kwargs)
    lowered_at = time.perf_counter()
    compiled = lowered.compile()
    done = time.perf_counter()
    return Lowered(lowered, compiled, lowered_at - start, done - lowered_at)


def count_workload(fn: Callable[..., Any], *args: Any) -> dict[str, Any]:
    """Lower and compile ``fn(*args)`` once; return ``{"stablehlo": count_stablehlo(...),
    "compiled": inspect_compiled(...)}``, the program's loops paired with the compiled while
    loops (:func:`~roofline_report.hlo.stablehlo_loops.match_loops`), whose
    ``known_trip_count`` serves loops whose trip count the condition region does not give.

    Raises InputError when ``fn`` is not callable or cannot be lowered/compiled with ``args``.
    """
    if not callable(fn):
        raise InputError(f"the workload must be callable, got {type(fn).__name__}")
    label = getattr(fn, "__name__", type(fn).__name__)
    try:
        low = lower_and_compile_jitted(fn, args, {}) if hasattr(fn, "lower") \
            else lower_and_compile(fn, args)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise InputError(
            f"workload {label} cannot be lowered: {type(exc).__name__}: {first}"
        ) from exc
    inspected = inspect_compiled(str(low.compiled.as_text()))
    counted = count_stablehlo(stablehlo_module(low.lowered),
                              compiled_loops=inspected["while_loops"])
    return {"stablehlo": counted, "compiled": inspected}


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


# Elements compared at a time: a chunk's float64 temporaries stay in the cache, where whole-array
# ones (2 GiB each for the 16384 x 16384 softmax an accelerator's catalog checks) faulted their
# pages in at every step; the check of such a result took 21 s on a 2-core CPU.
CHECK_CHUNK = 1 << 20


def check_against_reference(
    actual: Any, expected: np.ndarray[Any, Any], *, rtol: float, atol: float
) -> dict[str, Any]:
    """Compare a result with a NumPy reference: max abs/rel error and allclose at rtol/atol.

    Passed means every element is finite on both sides and within ``atol + rtol |want|``
    (``np.allclose``'s test, which a non-finite result fails). Compared in chunks of
    :data:`CHECK_CHUNK` elements, in float64."""
    got = np.asarray(actual)
    want = np.asarray(expected)
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
    flat_got, flat_want = got.reshape(-1), want.reshape(-1)

    def chunk(i: int) -> tuple[float, float, bool, bool]:
        start = i * CHECK_CHUNK
        g = flat_got[start:start + CHECK_CHUNK].astype(np.float64)
        w = flat_want[start:start + CHECK_CHUNK].astype(np.float64)
        diff = np.abs(g - w)
        scale = np.abs(w)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(scale > 0, diff / scale, np.where(diff > 0, np.inf, 0.0))
        return (float(np.max(diff)), float(np.max(rel)), bool(np.all(np.isfinite(g))),
                bool(np.all(np.isfinite(w))) and bool(np.all(diff <= atol + rtol * scale)))

    # A large result's chunks on every core (host_arrays), each chunk's record the same.
    chunks = host_arrays.each(chunk, -(-flat_got.size // CHECK_CHUNK), elements=flat_got.size)
    max_abs, max_rel = 0.0, 0.0
    finite = within = True
    for chunk_abs, chunk_rel, chunk_finite, chunk_within in chunks:
        # max() of chunk maxima: a NaN anywhere stays a NaN, as np.max of the whole would
        max_abs = max(max_abs, chunk_abs, key=_nan_first)
        max_rel = max(max_rel, chunk_rel, key=_nan_first)
        finite = finite and chunk_finite
        within = within and chunk_within
    return {
        "passed": finite and within,
        "shape": list(got.shape),
        "expected_shape": list(want.shape),
        "max_abs_error": max_abs,
        "max_rel_error": max_rel if math.isfinite(max_rel) else None,
        "rtol": rtol,
        "atol": atol,
        "note": "" if finite else "the result has non-finite values",
    }


def _nan_first(value: float) -> float:
    """A key under which ``max`` keeps a NaN."""
    return math.inf if math.isnan(value) else value


def check_tree_against_reference(actual: Any, expected: Any, *, rtol: float,
                                 atol: float) -> dict[str, Any]:
    """Compare a result pytree with a NumPy reference's, leaf by leaf (in flattening order).

    A single array gives :func:`check_against_reference`'s record; a pytree the record of its
    worst leaf (a failing leaf first, then the one furthest past its tolerance) with ``leaf``,
    that leaf's path, and ``leaves``, how many were compared.
    """
    got = jax.tree_util.tree_flatten_with_path(actual)[0]
    want = [leaf for leaf in jax.tree_util.tree_leaves(expected)
            if hasattr(leaf, "shape") or not callable(leaf)]  # functions are not results
    if len(got) == 1 and len(want) == 1 and not got[0][0]:
        return check_against_reference(got[0][1], want[0], rtol=rtol, atol=atol)
    if len(got) != len(want):
        return {"passed": False, "shape": [], "expected_shape": [], "max_abs_error": None,
                "max_rel_error": None, "rtol": rtol, "atol": atol, "leaves": len(got),
                "note": f"the result has {len(got)} arrays, the reference {len(want)}"}
    worst: tuple[tuple[bool, float], str, dict[str, Any]] | None = None
    for (path, leaf), ref in zip(got, want, strict=True):
        record = check_against_reference(leaf, ref, rtol=rtol, atol=atol)
        key = (not record["passed"], _excess(leaf, ref, rtol, atol))
        if worst is None or key > worst[0]:
            worst = (key, jax.tree_util.keystr(path), record)
    if worst is None:
        return {"passed": True, "shape": [], "expected_shape": [], "max_abs_error": 0.0,
                "max_rel_error": 0.0, "rtol": rtol, "atol": atol, "leaves": 0,
                "note": "the result holds no arrays"}
    _, where, worst_record = worst
    return {**worst_record, "leaf": where, "leaves": len(got)}


def _excess(actual: Any, expected: Any, rtol: float, atol: float) -> float:
    """How far a leaf is past its tolerance: max |got - want| / (atol + rtol |want|)."""
    try:
        got = np.asarray(actual, dtype=np.float64)
        want = np.asarray(expected, dtype=np.float64)
        if got.shape != want.shape or not got.size:
            return math.inf if got.shape != want.shape else 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.abs(got - want) / (atol + rtol * np.abs(want))
        # Equal values are within any tolerance (0/0 at a zero tolerance, as integer results
        # are checked, is not a failure); a non-finite result fails; a NaN left (a NaN
        # reference) is ignored unless nothing else is left.
        ratio = np.where(got == want, 0.0, ratio)
        ratio = np.where(np.isfinite(got), ratio, np.inf)
        kept = ratio[~np.isnan(ratio)]
    except (TypeError, ValueError):
        return math.inf
    return float(kept.max()) if kept.size else math.inf


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
    if info["backend"] == "cpu":
        info["cpu_async_dispatch"] = cpu_dispatch.async_dispatch()
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
