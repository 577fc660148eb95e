"""One sharded program measured (:func:`analyze_sharded`): compiled with ``NamedSharding``
in/out shardings, its collectives read from the compiled HLO
(:mod:`roofline_report.observe.sharded_collectives`), XLA's per-device costs, a check against a
NumPy reference and a time; and the mesh helpers the sharded workloads share.

jax is imported lazily (:func:`lazy_jax`), so importing this module costs nothing.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from roofline_report.errors import InputError, scrub_paths
from roofline_report.observe.sharded_collectives import comm_totals, parse_collectives

MESH_AXIS = "d"

def lazy_jax() -> Any:
    import jax

    return jax


def clip(text: str, limit: int = 300) -> str:
    """``text`` in at most ``limit`` characters, cut at a word's end with an ellipsis when it
    is longer."""
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def one_line(exc: BaseException) -> str:
    """An exception as one line: its type and message (the type alone names an exception
    raised without one), paths scrubbed, clipped at a word's end."""
    text = " ".join(str(exc).split())
    line = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return clip(scrub_paths(line))


#: The check of a workload without a NumPy reference: it runs and is timed, not compared.
NO_REFERENCE: dict[str, Any] = {"available": False, "ran": True,
                                "reason": "no NumPy reference was declared"}


def unavailable(reason: str) -> dict[str, Any]:
    return {"available": False, "reason": reason}


def _per_call_samples(
    call: Callable[[], Any], *, warmup: int = 2, repeats: int = 5, inner: int = 5
) -> list[float]:
    """``repeats`` samples, each the mean time of ``inner`` calls enqueued, then blocked once.
    Only the samples are recorded: the analysis derives the time per call from them by the
    report's one rule (:func:`~roofline_report.analysis.stats.own_time`)."""
    jax = lazy_jax()
    for _ in range(warmup):
        jax.block_until_ready(call())
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        outputs = [call() for _ in range(inner)]
        jax.block_until_ready(outputs)
        samples.append((time.perf_counter() - start) / inner)
    return samples


def _xla_costs(compiled: Any) -> dict[str, Any]:
    """XLA's per-device cost analysis: flops, bytes accessed, transcendentals, or None each."""
    try:
        costs = compiled.cost_analysis()
    except Exception as exc:  # backend-dependent; an absent estimate is not an error
        return {
            "flops": None,
            "bytes_accessed": None,
            "transcendentals": None,
            "note": f"cost analysis failed: {one_line(exc)}",
        }
    if isinstance(costs, list | tuple):
        costs = costs[0] if costs else None
    if not isinstance(costs, dict):
        return {
            "flops": None,
            "bytes_accessed": None,
            "transcendentals": None,
            "note": "no cost analysis on this backend",
        }
    out: dict[str, Any] = {"note": ""}
    notes = []
    for key, source in (
        ("flops", "flops"),
        ("bytes_accessed", "bytes accessed"),
        ("transcendentals", "transcendentals"),
    ):
        value = float(costs.get(source, 0.0))
        if value < 0 or not math.isfinite(value):
            notes.append(f"{key} reported as {value:g} (custom calls are not costed)")
            out[key] = None
        else:
            out[key] = value
    out["note"] = "; ".join(notes)
    return out


def _program_ops(lowered: Any) -> list[dict[str, Any]]:
    """The program's ops that hold floating-point tensors, read from the StableHLO of
    ``lowered`` (before any backend rewrites it): ``{"name"`` (the op's name location: its
    op_name), ``"file"`` (base name), ``"line"``, ``"column"`` (its innermost source location),
    ``"types": [[dtype, elements], ...]}`` (results and operands). The pairing key of
    :func:`roofline_report.hlo.collectives.program_dtype`."""
    from jax.extend.mlir import ir

    from roofline_report.hlo.stablehlo_loops import loop_identity

    module = lowered.compiler_ir(dialect="stablehlo")
    ops: list[dict[str, Any]] = []

    def tensor(value: Any) -> list[Any] | None:
        try:
            ranked = ir.RankedTensorType(value.type)
        except (ValueError, TypeError):
            return None
        if not ranked.has_static_shape:
            return None
        dtype = str(ranked.element_type).lower()
        if not (dtype == "bf16" or dtype.startswith("f")):
            return None
        return [dtype, math.prod(int(d) for d in ranked.shape)]

    def visit(op: Any) -> Any:
        operation = getattr(op, "operation", op)
        types = [t for v in (*operation.results, *operation.operands)
                 if (t := tensor(v)) is not None]
        if types:
            where = loop_identity(operation)
            ops.append({"name": where.op_name, "file": where.file, "line": where.line,
                        "column": where.column, "types": types})
        return ir.WalkResult.ADVANCE

    with module.context:
        module.operation.walk(visit)
    return ops


def _device_count(shardings: Sequence[Any]) -> int:
    devices: set[Any] = set()
    for sharding in shardings:
        devices.update(getattr(sharding, "device_set", ()))
    return max(len(devices), 1)


def _compare(outputs: Any, expected: Any, rtol: float = 1e-4, atol: float = 1e-6
             ) -> dict[str, Any]:
    jax = lazy_jax()
    got = [np.asarray(leaf, dtype=np.float64) for leaf in jax.tree_util.tree_leaves(outputs)]
    want = [np.asarray(leaf, dtype=np.float64) for leaf in jax.tree_util.tree_leaves(expected)]
    if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want, strict=False)):
        return {
            "max_abs_err": None,
            "tolerance": None,
            "passed": False,
            "error": "output structure or shapes differ from the reference",
        }
    err = max(
        (float(np.max(np.abs(g - w), initial=0.0)) for g, w in zip(got, want, strict=True)),
        default=0.0,
    )
    scale = max((float(np.max(np.abs(w), initial=0.0)) for w in want), default=0.0)
    tolerance = rtol * scale + atol
    passed = math.isfinite(err) and err <= tolerance
    return {
        "max_abs_err": err if math.isfinite(err) else None,
        "tolerance": tolerance,
        "passed": passed,
    }


def analyze_sharded(
    fn: Callable[..., Any],
    args: Sequence[Any],
    in_shardings: Sequence[Any],
    out_shardings: Any,
    *,
    reference: Callable[..., Any] | None = None,
    time_it: bool = True,
    repeats: int = 5,
    inner: int = 5,
    rtol: float = 1e-4,
    atol: float = 1e-6,
) -> dict[str, Any]:
    """Compile ``fn`` with the given shardings and report its collectives, costs, check and time.

    ``args`` are host arrays (NumPy or jax) or pytrees of them (dicts, lists, tuples: a
    model's parameters, an optimizer state), placed with ``in_shardings`` (one per argument: a
    sharding, or a pytree of shardings of the argument's structure); ``out_shardings`` is
    passed to ``jax.jit`` as is. ``reference`` (optional) computes the
    expected outputs from the same arguments as NumPy arrays; the check passes when the largest
    absolute error is at most ``rtol`` x (largest reference magnitude) + ``atol``. Returns::

        {"devices": int, "device_ids": [int] or None (the program's device assignment),
         "collectives": [parse_collectives records],
         "comm_bytes": int (bytes each device sends per call, in the program's dtype: each
                       record's bytes x its trip count, summed over readable records),
         "comm_bytes_compiled": int (the same as this backend compiled the collectives:
                       XLA:CPU's float32 for a bfloat16 program),
         "comm_bytes_complete": bool (False when a collective sits in a while loop of
                       unknown trip count, counted once: comm_bytes is then a lower bound),
         "unknown_trip_counts": int, "notes": [str] (why the bytes are what they are),
         "xla_per_device": {"flops", "bytes_accessed", "transcendentals", "note"},
         "check": {"max_abs_err", "tolerance", "passed"[, "error"]}, or
                  {"available": False, "ran": True, "reason"} without a reference,
         "measured_per_call_s": [float] or None, "error": str (only if running failed)}

    Raises InputError when the arguments do not match or the function does not compile with
    these shardings; a failure to run or time is reported in the result instead.
    """
    if not callable(fn):
        raise InputError(f"analyze_sharded: fn must be callable, got {type(fn).__name__}")
    if isinstance(args, str | bytes) or not isinstance(args, Sequence):
        raise InputError("analyze_sharded: args must be a sequence of arrays")
    if isinstance(in_shardings, str | bytes) or not isinstance(in_shardings, Sequence):
        raise InputError("analyze_sharded: in_shardings must be a sequence, one per argument")
    if len(args) != len(in_shardings):
        raise InputError(
            f"analyze_sharded: {len(args)} arguments but {len(in_shardings)} in_shardings"
        )
    jax = lazy_jax()
    try:
        placed = tuple(jax.device_put(a, s) for a, s in zip(args, in_shardings, strict=True))
        jitted = jax.jit(fn, in_shardings=tuple(in_shardings), out_shardings=out_shardings)
        lowered = jitted.lower(*placed)
        compiled = lowered.compile()
    except Exception as exc:
        raise InputError(f"the sharded function does not compile: {one_line(exc)}") from exc

    devices = _device_count(jax.tree_util.tree_leaves(tuple(in_shardings)))
    notes: list[str] = []
    try:
        program: list[dict[str, Any]] | None = _program_ops(lowered)
    except Exception as exc:  # the bindings differ between jax versions: price as compiled
        program = None
        notes.append(f"the program's dtypes were not read ({one_line(exc)}): collectives "
                     "priced as compiled")
    collectives = parse_collectives(compiled.as_text(), devices, program)
    totals = comm_totals(collectives)
    result: dict[str, Any] = {
        "devices": devices,
        "device_ids": _device_order(jax, compiled),
        "collectives": collectives,
        "comm_bytes": totals["comm_bytes"],
        "comm_bytes_compiled": totals["comm_bytes_compiled"],
        "comm_bytes_complete": totals["comm_bytes_complete"],
        "unknown_trip_counts": totals["unknown_trip_counts"],
        "notes": [*notes, *totals["notes"]],
        "xla_per_device": _xla_costs(compiled),
        "check": dict(NO_REFERENCE),
        "measured_per_call_s": None,
    }
    try:
        outputs = jax.block_until_ready(compiled(*placed))
        if reference is not None:
            expected = reference(*(jax.tree_util.tree_map(np.asarray, a) for a in args))
            result["check"] = _compare(outputs, expected, rtol, atol)
        if time_it:
            result["measured_per_call_s"] = _per_call_samples(
                lambda: compiled(*placed), repeats=repeats, inner=inner
            )
    except Exception as exc:  # a measurement failure is reported, not raised
        result["error"] = f"running the sharded function failed: {one_line(exc)}"
    return result


def _device_order(jax: Any, compiled: Any) -> list[int] | None:
    """The compiled program's devices in order (its device assignment, read from its first
    input's sharding): the HLO's replica groups number devices by their place in it. None
    when it cannot be read."""
    try:
        leaves = jax.tree_util.tree_leaves(compiled.input_shardings)
        assignment = getattr(leaves[0], "_device_assignment", None) if leaves else None
        return None if not assignment else [int(d.id) for d in assignment]
    except Exception:  # a private attribute of jax's shardings: absent, nothing is lost
        return None


def make_mesh(
    jax: Any, devices: Sequence[Any], axes: Sequence[tuple[str, int]] | None = None
) -> Any:
    """A mesh of ``devices`` with Auto (GSPMD) axis types (jax 0.10 defaults make_mesh to
    Explicit). ``axes``: (name, size) pairs whose sizes multiply to ``len(devices)``; default
    one axis :data:`MESH_AXIS` over all of them."""
    axes = tuple(axes) if axes is not None else ((MESH_AXIS, len(devices)),)
    names = tuple(name for name, _ in axes)
    shape = tuple(size for _, size in axes)
    axis_type = getattr(jax.sharding, "AxisType", None)
    kwargs: dict[str, Any] = {"devices": list(devices)}
    if axis_type is not None:
        kwargs["axis_types"] = (axis_type.Auto,) * len(axes)
    try:
        return jax.make_mesh(shape, names, **kwargs)
    except TypeError:
        kwargs.pop("devices")
        grid = np.array(list(devices), dtype=object).reshape(shape)
        return jax.sharding.Mesh(grid, names, **kwargs)


def mesh_json(mesh: Any, device_ids: Sequence[int] | None = None) -> dict[str, Any]:
    """The mesh's axes and its devices in the order the compiled program numbers them
    (``device_ids`` when read from it, else the mesh's own order)."""
    return {
        "axis_names": [str(a) for a in mesh.axis_names],
        "shape": [int(v) for v in mesh.devices.shape],
        # the devices in the mesh's order: a collective's replica groups number devices by
        # their place in it
        "device_ids": [int(d) for d in device_ids] if device_ids else [
            int(d.id) for d in mesh.devices.flat],
        "axis_types": [
            str(getattr(t, "name", t)).lower() for t in getattr(mesh, "axis_types", ())
        ],
    }


def comm_fields(measured: Mapping[str, Any]) -> dict[str, Any]:
    """The per-device communication fields every sharded workload carries, from
    :func:`analyze_sharded`: ``comm_bytes_hlo`` (read from the compiled HLO, in the program's
    dtype), ``comm_bytes_compiled`` (as this backend compiled it), ``comm_bytes_complete``."""
    return {"comm_bytes_hlo": measured["comm_bytes"],
            "comm_bytes_compiled": measured["comm_bytes_compiled"],
            "comm_bytes_complete": measured["comm_bytes_complete"]}



def shard_bytes(sharding: Any, shape: Sequence[int], dtype: Any) -> int:
    elements = math.prod(int(d) for d in sharding.shard_shape(tuple(shape)))
    return elements * int(np.dtype(dtype).itemsize)

