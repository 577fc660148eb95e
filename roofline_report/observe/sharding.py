"""Measure sharded workloads: the collectives XLA inserts, their bytes, and the time they take.

A GSPMD program's collectives appear only in the *compiled* HLO (``compiled.as_text()``), not
in its StableHLO. This module lowers and compiles a function with ``NamedSharding`` in/out
shardings, takes every ``all-reduce``, ``all-gather``, ``reduce-scatter``, ``all-to-all`` and
``collective-permute`` (synchronous, or as an async ``-start``/``-done`` pair) from the IR of
that text (:mod:`roofline_report.hlo`),
prices each with :func:`roofline_report.analysis.comm.collective_bytes`, checks the result against
NumPy and times the executable.

Several devices on a CPU need ``--xla_force_host_platform_device_count`` set before jax is
imported, so the measurement runs in its own process: ``python -m roofline_report.observe.sharding
--devices 8 [--quick]`` prints one JSON document, and :func:`run_sharded_analysis` launches it.
jax is imported lazily, so importing this module (and reading HLO text) costs nothing.

Collectives are listed once per appearance in the program text (a combined collective, several
arrays in one instruction, once), each with the trip count of the loops around it (a
collective in a loop body runs once per iteration): per-step totals multiply by it, and a loop
whose trip count is unknown makes them lower bounds, which the result says. Each collective
also carries the dtype the program gives it, read from the StableHLO: XLA:CPU runs bfloat16
collectives in float32, and the bytes a GPU or TPU sends are those of the program's dtype.

The user's own sharded workloads (``[[workload]]`` tables with a ``mesh``, see
:mod:`roofline_report.config`) are analysed in the same child, started with ``--config FILE``:
each becomes one more entry of ``"workloads"`` with ``"sharding": "user"``, its per-device work
and traffic computed as :func:`user_workload` describes. A failure in one of them (an import
error, a function that does not compile with its partitions) becomes an entry with an
``"error"`` for that workload only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from roofline_report import tolerances
from roofline_report.analysis.comm import STRATEGIES, STRATEGY_LABELS, matmul_per_device
from roofline_report.errors import InputError, scrub_paths
from roofline_report.hlo.collectives import (
    COLLECTIVE_OPS,
    CONVERSION_NOTE,
    collective_bytes,
    program_bytes,
    program_dtype,
)
from roofline_report.hlo.compiled import collective_records
from roofline_report.kinds import Kind
from roofline_report.observe.training_steps import STEP_STRATEGIES

if TYPE_CHECKING:
    from roofline_report.config import Config, WorkloadSpec

MESH_AXIS = "d"
USER_SHARDING = "user"  # the "sharding" of a workload declared in a config file
QUICK_SIZES = (64, 512, 256)  # B, D, F
FULL_SIZES = (512, 2048, 1024)
EMULATED_NOTE = (
    "{n} host devices emulated on one CPU: timings say nothing about a real interconnect"
)
REAL_NOTE = "{n} {platform} devices: collectives run over the real interconnect"

_PARTITION_SPECS: dict[str, tuple[tuple[str | None, ...], ...]] = {
    # (x, w, y) partition specs of y = x @ w on a one-axis mesh.
    "data": ((MESH_AXIS, None), (None, None), (MESH_AXIS, None)),
    "contracting": ((None, MESH_AXIS), (MESH_AXIS, None), (None, None)),
    "fsdp": ((MESH_AXIS, None), (MESH_AXIS, None), (MESH_AXIS, None)),
}
_WORKLOAD_NAMES = {
    "data": "matmul, data parallel",
    "contracting": "matmul, contracting axis sharded",
    "fsdp": "matmul, FSDP (weights all-gathered)",
}

# --------------------------------------------------------------------------------------------
# Collectives, from the IR of the compiled HLO (pure)
# --------------------------------------------------------------------------------------------


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

    The program's dtype: ``program_ops`` (the StableHLO's ops, :func:`_program_ops`) give each
    array the dtype the program has it in (:func:`roofline_report.hlo.collectives.
    program_dtype`); XLA:CPU runs bfloat16 collectives in float32, so ``converted`` says the
    compiled array is wider, ``program_result_bytes`` and ``program_bytes_per_device`` are the
    bytes in the program's dtype (what a GPU or TPU sends; the model prices these) and
    ``dtype_note`` says so. Without ``program_ops``, or where the program's dtype cannot be
    told, the compiled dtype stands (``dtype_source`` ``"compiled"``, else ``"program"``).

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
        sent = None if not known or compiled_total is None else collective_bytes(
            record["op"], compiled_total, size)
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


# --------------------------------------------------------------------------------------------
# Measuring with jax (imported lazily)
# --------------------------------------------------------------------------------------------


def _jax() -> Any:
    import jax

    return jax


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return scrub_paths(f"{type(exc).__name__}: {text}"[:300])


#: The check of a workload without a NumPy reference: it runs and is timed, not compared.
NO_REFERENCE: dict[str, Any] = {"available": False, "ran": True,
                                "reason": "no NumPy reference was declared"}


def _unavailable(reason: str) -> dict[str, Any]:
    return {"available": False, "reason": reason}


def _median_seconds(
    call: Callable[[], Any], *, warmup: int = 2, repeats: int = 5, inner: int = 5
) -> float:
    """Median over ``repeats`` of the mean time of ``inner`` calls enqueued, then blocked once.

    Private and simple on purpose: the project's timing module will replace it.
    """
    jax = _jax()
    for _ in range(warmup):
        jax.block_until_ready(call())
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        outputs = [call() for _ in range(inner)]
        jax.block_until_ready(outputs)
        samples.append((time.perf_counter() - start) / inner)
    return float(statistics.median(samples))


def _xla_costs(compiled: Any) -> dict[str, Any]:
    """XLA's per-device cost analysis: flops, bytes accessed, transcendentals, or None each."""
    try:
        costs = compiled.cost_analysis()
    except Exception as exc:  # backend-dependent; an absent estimate is not an error
        return {
            "flops": None,
            "bytes_accessed": None,
            "transcendentals": None,
            "note": f"cost analysis failed: {_one_line(exc)}",
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
    jax = _jax()
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

        {"devices": int, "collectives": [parse_collectives records],
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
         "measured_seconds": float or None, "error": str (only if running failed)}

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
    jax = _jax()
    try:
        placed = tuple(jax.device_put(a, s) for a, s in zip(args, in_shardings, strict=True))
        jitted = jax.jit(fn, in_shardings=tuple(in_shardings), out_shardings=out_shardings)
        lowered = jitted.lower(*placed)
        compiled = lowered.compile()
    except Exception as exc:
        raise InputError(f"the sharded function does not compile: {_one_line(exc)}") from exc

    devices = _device_count(jax.tree_util.tree_leaves(tuple(in_shardings)))
    notes: list[str] = []
    try:
        program: list[dict[str, Any]] | None = _program_ops(lowered)
    except Exception as exc:  # the bindings differ between jax versions: price as compiled
        program = None
        notes.append(f"the program's dtypes were not read ({_one_line(exc)}): collectives "
                     "priced as compiled")
    collectives = parse_collectives(compiled.as_text(), devices, program)
    totals = comm_totals(collectives)
    result: dict[str, Any] = {
        "devices": devices,
        "collectives": collectives,
        "comm_bytes": totals["comm_bytes"],
        "comm_bytes_compiled": totals["comm_bytes_compiled"],
        "comm_bytes_complete": totals["comm_bytes_complete"],
        "unknown_trip_counts": totals["unknown_trip_counts"],
        "notes": [*notes, *totals["notes"]],
        "xla_per_device": _xla_costs(compiled),
        "check": dict(NO_REFERENCE),
        "measured_seconds": None,
    }
    try:
        outputs = jax.block_until_ready(compiled(*placed))
        if reference is not None:
            expected = reference(*(jax.tree_util.tree_map(np.asarray, a) for a in args))
            result["check"] = _compare(outputs, expected, rtol, atol)
        if time_it:
            result["measured_seconds"] = _median_seconds(
                lambda: compiled(*placed), repeats=repeats, inner=inner
            )
    except Exception as exc:  # a measurement failure is reported, not raised
        result["error"] = f"running the sharded function failed: {_one_line(exc)}"
    return result


def _make_mesh(
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


def _mesh_json(mesh: Any) -> dict[str, Any]:
    return {
        "axis_names": [str(a) for a in mesh.axis_names],
        "shape": [int(v) for v in mesh.devices.shape],
        "axis_types": [
            str(getattr(t, "name", t)).lower() for t in getattr(mesh, "axis_types", ())
        ],
    }


def _matmul(x: Any, w: Any) -> Any:
    jax = _jax()
    return jax.numpy.matmul(x, w, precision=jax.lax.Precision.HIGHEST)


def _reference_matmul(x: np.ndarray[Any, Any], w: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    product: np.ndarray[Any, Any] = np.matmul(x.astype(np.float64), w.astype(np.float64))
    return product


def _spec_json(spec: tuple[str | None, ...]) -> list[str | None]:
    return list(spec)


def _comm_fields(measured: Mapping[str, Any]) -> dict[str, Any]:
    """The per-device communication fields every sharded workload carries, from
    :func:`analyze_sharded`: ``comm_bytes_hlo`` (read from the compiled HLO, in the program's
    dtype), ``comm_bytes_compiled`` (as this backend compiled it), ``comm_bytes_complete``."""
    return {"comm_bytes_hlo": measured["comm_bytes"],
            "comm_bytes_compiled": measured["comm_bytes_compiled"],
            "comm_bytes_complete": measured["comm_bytes_complete"]}


def _matmul_workload(
    strategy: str, mesh: Any, x: np.ndarray[Any, Any], w: np.ndarray[Any, Any], quick: bool,
    *, variant: str = "",
) -> dict[str, Any]:
    jax = _jax()
    pspec = jax.sharding.PartitionSpec
    x_spec, w_spec, y_spec = _PARTITION_SPECS[strategy]
    shardings = [jax.sharding.NamedSharding(mesh, pspec(*s)) for s in (x_spec, w_spec, y_spec)]
    tolerance = tolerances.for_dtype(str(x.dtype)) if variant else tolerances.Tolerance(1e-4, 1e-6)
    measured = analyze_sharded(
        _matmul,
        (x, w),
        shardings[:2],
        shardings[2],
        reference=_reference_matmul,
        time_it=not variant,  # a variant shows its collectives; its time is the f32 one's
        repeats=3 if quick else 5,
        inner=5 if quick else 10,
        rtol=tolerance.rtol,
        atol=tolerance.atol,
    )
    (b, d), f = x.shape, w.shape[1]
    n = int(mesh.devices.size)
    analytic = matmul_per_device(
        strategy, batch=b, d_model=d, d_ff=f, devices=n, itemsize=x.dtype.itemsize
    )
    workload: dict[str, Any] = {
        "name": _WORKLOAD_NAMES[strategy] + (f", {variant}" if variant else ""),
        "sharding": f"{strategy}-{variant}" if variant else strategy,
        "strategy": strategy,
        "dtype": str(x.dtype),
        "description": STRATEGY_LABELS[strategy] + (f"; {variant}" if variant else ""),
        "shapes": {"x": [b, d], "w": [d, f], "y": [b, f], "dtype": str(x.dtype)},
        "partition_specs": {
            "x": _spec_json(x_spec),
            "w": _spec_json(w_spec),
            "y": _spec_json(y_spec),
        },
        "mesh": _mesh_json(mesh),
        "collectives": measured["collectives"],
        "per_device": {
            "flops": analytic["flops"],
            "hbm_bytes": analytic["hbm_bytes"],
            "comm_bytes": analytic["comm_bytes"],
            **_comm_fields(measured),
        },
        "notes": measured["notes"],
        "expected_collective": analytic["collective"],
        "xla_per_device": measured["xla_per_device"],
        "check": measured["check"],
        "measured_seconds": measured["measured_seconds"],
    }
    if "error" in measured:
        workload["error"] = measured["error"]
    return workload


# --------------------------------------------------------------------------------------------
# The training steps (roofline_report.observe.training_steps)
# --------------------------------------------------------------------------------------------


def _named_tree(jax: Any, mesh: Any, specs: Any) -> Any:
    pspec = jax.sharding.PartitionSpec
    return jax.tree_util.tree_map(
        lambda spec: jax.sharding.NamedSharding(mesh, spec), specs,
        is_leaf=lambda node: isinstance(node, pspec),
    )  # fmt: skip


def _jax_roofline(jax: Any, body: Any, mesh: Any, in_specs: Any, out_specs: Any,
                  args: Sequence[Any]) -> dict[str, Any]:
    """``jax.experimental.roofline`` on the per-device body: its FLOPs, ICI bytes and latency
    (hops) per mesh axis, and unfused HBM bytes; ``{"available": False, "reason"}`` when the
    module is missing or fails on the program."""
    import logging

    try:
        from jax.experimental import roofline as jax_roofline
    except ImportError as exc:
        return {"available": False, "reason": f"jax.experimental.roofline: {_one_line(exc)}"}
    logger = logging.getLogger("jax")
    level = logger.level
    logger.setLevel(logging.ERROR)  # it warns once per primitive without a rule
    try:
        _, result = jax_roofline.roofline(body, mesh, in_specs, out_specs)(*args)
    except Exception as exc:
        return {"available": False, "reason": f"jax.experimental.roofline: {_one_line(exc)}"}
    finally:
        logger.setLevel(level)
    return {
        "available": True,
        "flops": int(result.flops),
        "unfused_hbm_bytes": int(result.unfused_hbm_bytes),
        "ici_bytes": {str(k): int(v) for k, v in result.ici_bytes.items()},
        "ici_latency": {str(k): int(v) for k, v in result.ici_latency.items()},
    }


def _step_workload(strategy: str, mesh: Any, quick: bool) -> dict[str, Any]:
    """One training step of :mod:`roofline_report.observe.training_steps`, compiled and run on
    ``mesh`` (one axis).

    Keys beyond a matmul entry's: ``"step": True``, ``"sizes"`` (batch, d_model, d_ff,
    layers), ``"batch": {"global", "per_device"}``, ``"comm_scales_with_batch"``,
    ``"expected_collectives"`` (by hand, with counts), ``"jax_roofline"``, ``"dtype"``,
    ``"split_dims"`` (the dimensions split over the mesh,
    :func:`~roofline_report.observe.training_steps.split_dimensions`). Per device, kind
    analytic: ``flops`` the matmul FLOPs of
    :func:`~roofline_report.observe.training_steps.matmul_flops`
    (Adam and tanh left out); ``hbm_bytes`` every argument and result shard read or written
    once, ``hbm_parts`` the same split into the data arguments' shards (``data``, and
    ``data_split`` whether the batch is split) and the parameters' and optimizer state's
    (``state``, ``state_split``): a projection to more devices rescales them; ``comm_bytes`` the
    hand-derived bytes sent (x counts); ``comm_bytes_hlo`` the same from the compiled HLO (x
    trip counts, in the program's dtype).
    """
    from roofline_report.observe import training_steps as ts

    jax = _jax()
    sizes = ts.step_sizes(quick)
    n = int(mesh.devices.size)
    step, body, in_specs, out_specs = ts.build_step(strategy, mesh, sizes, MESH_AXIS)
    args = ts.initial_state(strategy, sizes)
    in_shardings = [_named_tree(jax, mesh, spec) for spec in in_specs]
    out_shardings = _named_tree(jax, mesh, out_specs)
    measured = analyze_sharded(
        step, args, in_shardings, out_shardings, reference=ts.reference_step, rtol=1e-5,
        atol=1e-6, repeats=3, inner=2 if quick else 3,
    )  # fmt: skip  # few calls: the emulated time is explained, not the headline
    leaves = jax.tree_util.tree_leaves(args)
    shardings = jax.tree_util.tree_leaves(tuple(in_shardings))
    hbm = sum(_shard_bytes(sh, a.shape, a.dtype) for a, sh in zip(leaves, shardings, strict=True))
    out_leaves = jax.tree_util.tree_leaves(args[:2])
    out_sh = jax.tree_util.tree_leaves(out_shardings)
    hbm += sum(_shard_bytes(sh, a.shape, a.dtype) for a, sh in zip(out_leaves, out_sh,
                                                                     strict=True))
    expected = ts.expected_collectives(strategy, sizes, n)
    split_batch = in_specs[2] != jax.sharding.PartitionSpec()
    data = sum(_shard_bytes(sh, a.shape, a.dtype) for a, sh in zip(leaves[-2:], shardings[-2:],
                                                                    strict=True))
    workload: dict[str, Any] = {
        "name": ts.STEP_NAMES[strategy],
        "sharding": strategy,
        "description": ts.STEP_LABELS[strategy],
        "step": True,
        "dtype": str(args[2].dtype),
        "sizes": sizes.to_json(),
        "batch": {"global": sizes.batch,
                  "per_device": sizes.batch // n if split_batch else sizes.batch},
        "mesh": _mesh_json(mesh),
        "split_dims": ts.split_dimensions(args, in_specs, MESH_AXIS),
        "collectives": measured["collectives"],
        "per_device": {
            "flops": ts.matmul_flops(strategy, sizes, n),
            "hbm_bytes": hbm,
            "hbm_parts": {"data": data, "data_split": split_batch, "state": hbm - data,
                          "state_split": strategy != "dp-step", "other": 0},
            "comm_bytes": sum(c["bytes_per_device"] * c["count"] for c in expected),
            **_comm_fields(measured),
        },
        "notes": measured["notes"],
        "expected_collective": None,
        "expected_collectives": expected,
        "comm_scales_with_batch": ts.COMM_SCALES_WITH_BATCH[strategy],
        "xla_per_device": measured["xla_per_device"],
        "jax_roofline": _jax_roofline(jax, body, mesh, in_specs, out_specs, args),
        "check": measured["check"],
        "measured_seconds": measured["measured_seconds"],
    }
    if "error" in measured:
        workload["error"] = measured["error"]
    return workload


# --------------------------------------------------------------------------------------------
# The user's sharded workloads, from a config file
# --------------------------------------------------------------------------------------------


def _user_inputs(
    jax: Any, shapes: Sequence[tuple[tuple[int, ...], str]], seed: int
) -> tuple[np.ndarray[Any, Any], ...]:
    """Deterministic random host arrays of the declared shapes, in the dtypes jax will use
    (``float64`` is ``float32`` unless x64 is enabled; ``bfloat16`` via jax's NumPy dtype)."""
    rng = np.random.default_rng(seed)
    out = []
    canonical = getattr(jax.dtypes, "canonicalize_dtype", None)
    for shape, name in shapes:
        dtype = jax.numpy.dtype(name)
        # the dtype jax computes in; device_put canonicalises the same way where the helper is gone
        dtype = canonical(dtype) if canonical else jax.device_put(np.zeros((), dtype)).dtype
        if name == "bool":
            values = rng.integers(0, 2, size=shape).astype(bool)
        elif name.startswith(("int", "uint")):
            values = rng.integers(0, 8, size=shape)
        else:
            values = rng.standard_normal(shape)
        out.append(np.asarray(values).astype(dtype))
    return tuple(out)


def _spec_text(partition: Sequence[str | None]) -> str:
    return "P(" + ",".join("None" if not a else repr(a) for a in partition) + ")"


def _shard_bytes(sharding: Any, shape: Sequence[int], dtype: Any) -> int:
    elements = math.prod(int(d) for d in sharding.shard_shape(tuple(shape)))
    return elements * int(np.dtype(dtype).itemsize)


def _exact_share(total: int, parts: int) -> int | float:
    """``total / parts``, as an int when it divides evenly."""
    return total // parts if total % parts == 0 else total / parts


def user_workload(
    config: Config, spec: WorkloadSpec, devices: Sequence[Any], *, quick: bool
) -> dict[str, Any]:
    """Analyse one sharded ``[[workload]]`` of ``config`` on the first devices of ``devices``.

    Builds the declared mesh (Auto axes), a ``NamedSharding`` per argument from ``partition``
    and one for the result from ``out_partition`` (replicated when absent), deterministic
    random inputs (seeded by the workload's name), and runs :func:`analyze_sharded` (checked
    against the NumPy reference when one is declared, with the workload's tolerances).

    Per-device figures, kind analytic:

    * ``flops``: our own count of the whole, unpartitioned program
      (:func:`roofline_report.hlo.count_stablehlo`) divided by the devices that split
      the work, taken to be the product of the sizes of the mesh axes that shard at least one
      argument or the result (devices along an unused axis repeat the same work). This assumes
      an even split; XLA's own per-device flops are kept beside it as a cross-check.
    * ``hbm_bytes``: each argument's and result's shard (``sharding.shard_shape``) x itemsize,
      summed: every shard read or written once.
    * ``comm_bytes``: the bytes each device sends in the compiled program's collectives.

    Raises InputError (or whatever the user's code raises) when the workload cannot be
    analysed; :func:`_user_workloads` turns that into an error entry.
    """
    from roofline_report.hlo import count_stablehlo
    from roofline_report.observe import lower as lowering

    jax = _jax()
    fn = config.load_function(spec)
    reference = config.load_reference(spec)
    axes = spec.mesh or ()
    needed = spec.mesh_devices
    if needed > len(devices):
        raise InputError(f"the mesh needs {needed} devices but {len(devices)} are available")
    mesh = _make_mesh(jax, list(devices)[:needed], axes)
    named, pspec = jax.sharding.NamedSharding, jax.sharding.PartitionSpec
    partitions = [tuple(a or None for a in p) for p in spec.partition or ()]
    args = _user_inputs(jax, spec.resolve_shapes(), zlib.crc32(spec.name.encode("utf-8")))
    if len(partitions) != len(args):
        raise InputError(f"{len(partitions)} partitions for {len(args)} arguments")
    in_shardings = [named(mesh, pspec(*p)) for p in partitions]
    structs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args]
    try:
        out_leaves = jax.tree_util.tree_leaves(jax.eval_shape(fn, *structs))
    except Exception as exc:
        raise InputError(f"the function does not trace at the declared shapes: {_one_line(exc)}"
                         ) from exc
    out_partition: tuple[str | None, ...] = ()
    if spec.out_partition is not None:
        out_partition = tuple(a or None for a in spec.out_partition)
        if len(out_leaves) != 1:
            raise InputError(
                f"'out_partition' needs a function returning one array; it returns "
                f"{len(out_leaves)}"
            )
        rank = len(out_leaves[0].shape)
        if len(out_partition) != rank:
            raise InputError(
                f"'out_partition' has {len(out_partition)} entries but the result has "
                f"{rank} dimensions"
            )
        sizes = dict(axes)
        for dim, (axis, size) in enumerate(zip(out_partition, out_leaves[0].shape, strict=True)):
            if axis and size % sizes[axis]:
                raise InputError(
                    f"'out_partition': dimension {dim} of the result ({size}) is not divisible "
                    f"by mesh axis {axis!r} ({sizes[axis]})"
                )
    out_sharding = named(mesh, pspec(*out_partition))

    count = count_stablehlo(lowering.stablehlo_module(jax.jit(fn).lower(*structs)))
    if count.get("available") is False:  # past the count's time limit
        raise InputError(f"the program was not counted: {count['reason']}")
    used = {a for p in (*partitions, out_partition) for a in p if a}
    split = math.prod(size for name, size in axes if name in used)
    rtol = spec.rtol if spec.rtol is not None else 1e-4
    atol = spec.atol if spec.atol is not None else 1e-6
    measured = analyze_sharded(
        fn, args, in_shardings, out_sharding, reference=reference, rtol=rtol, atol=atol,
        repeats=3 if quick else 5, inner=5 if quick else 10,
    )  # fmt: skip

    arguments = [
        {
            "shape": list(a.shape),
            "dtype": str(a.dtype),
            "partition": list(p),
            "shard_shape": list(s.shard_shape(a.shape)),
        }
        for a, p, s in zip(args, partitions, in_shardings, strict=True)
    ]
    results = [
        {
            "shape": list(leaf.shape),
            "dtype": str(leaf.dtype),
            "partition": list(out_partition) or [None] * len(leaf.shape),
            "shard_shape": list(out_sharding.shard_shape(tuple(leaf.shape))),
        }
        for leaf in out_leaves
    ]
    hbm = sum(_shard_bytes(s, a.shape, a.dtype) for a, s in zip(args, in_shardings, strict=True))
    hbm += sum(_shard_bytes(out_sharding, leaf.shape, leaf.dtype) for leaf in out_leaves)
    flops = _exact_share(int(count["flops"]), split)
    xla_flops = measured["xla_per_device"]["flops"]
    mesh_text = ", ".join(f"{name}={size}" for name, size in axes)
    parts = ", ".join(
        f"{a['dtype']}[{','.join(map(str, a['shape']))}] {_spec_text(a['partition'])}"
        for a in arguments
    )
    result_text = _spec_text(out_partition) if out_partition else "replicated"
    workload: dict[str, Any] = {
        "name": spec.name,
        "sharding": USER_SHARDING,
        "description": (
            f"{spec.name} ({spec.function}), mesh {mesh_text}: {parts} -> {result_text}; "
            "per-device FLOPs = "
            f"our count / {split} (the devices on mesh axes that shard an argument or the result)"
        ),
        "function": spec.function,
        "mesh": _mesh_json(mesh),
        "arguments": arguments,
        "results": results,
        "collectives": measured["collectives"],
        "per_device": {
            "flops": flops,
            "hbm_bytes": hbm,
            "comm_bytes": measured["comm_bytes"],
            **_comm_fields(measured),
        },
        "notes": measured["notes"],
        "counted": {
            "flops": int(count["flops"]),
            "transcendentals": int(count["transcendentals"]),
            "split_devices": split,
            "notes": [scrub_paths(str(n)) for n in count.get("notes", [])],
        },
        "flops_cross_check": {
            "xla_per_device": xla_flops,
            "ratio": xla_flops / flops if xla_flops is not None and flops else None,
        },
        "expected_collective": None,
        "xla_per_device": measured["xla_per_device"],
        "check": measured["check"],
        "measured_seconds": measured["measured_seconds"],
    }
    if "error" in measured:
        workload["error"] = measured["error"]
    return workload


def _failure(exc: BaseException) -> str:
    if isinstance(exc, InputError):
        return scrub_paths(str(exc))[:300]
    return _one_line(exc)


def _failed_workload(name: str, function: str, reason: str) -> dict[str, Any]:
    return {
        "name": name,
        "sharding": USER_SHARDING,
        "description": f"{name} ({function or 'the config'}): not analysed: {reason}",
        "function": function,
        "collectives": [],
        "error": reason,
    }


def _user_workloads(config_path: str, devices: Sequence[Any], quick: bool
                    ) -> list[dict[str, Any]]:
    """One entry per sharded workload of the config; failures become error entries."""
    from roofline_report.config import load_config

    try:
        config = load_config(config_path)
    except Exception as exc:
        return [_failed_workload(f"config {Path(config_path).name}", "", _failure(exc))]
    entries = []
    for spec in config.sharded:
        try:
            entries.append(user_workload(config, spec, devices, quick=quick))
        except (Exception, SystemExit) as exc:  # the user's code may raise anything
            entries.append(_failed_workload(spec.name, spec.function, _failure(exc)))
    return entries


def _pick_devices(jax: Any, count: int) -> tuple[list[Any], bool]:
    """Real accelerators when the default backend has enough of them, else emulated host CPUs."""
    default = jax.devices()
    if default and default[0].platform != "cpu" and len(default) >= count:
        return list(default[:count]), False
    return list(jax.devices("cpu")[:count]), True


def measure(*, devices: int, quick: bool, config_path: str | None = None,
            builtin: bool = True) -> dict[str, Any]:
    """Run the three sharded matmul workloads and the training steps of
    :mod:`roofline_report.observe.training_steps` on ``devices`` devices (in this process; with
    ``builtin=False`` none of them), then the sharded workloads of the config file at
    ``config_path`` (if given).

    Needs the devices to exist: call it in a process started with the host-device flag (see
    :func:`run_sharded_analysis`). Returns the document described in :func:`run_sharded_analysis`.
    """
    jax = _jax()
    chosen, emulated = _pick_devices(jax, devices)
    if len(chosen) < devices:
        return _unavailable(
            f"{devices} devices requested but only {len(chosen)} available; set "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={devices} before jax is imported"
        )
    platform = str(chosen[0].platform)
    mesh = _make_mesh(jax, chosen)
    b, d, f = QUICK_SIZES if quick else FULL_SIZES
    rng = np.random.default_rng(0)
    x = rng.standard_normal((b, d), dtype=np.float32)
    w = rng.standard_normal((d, f), dtype=np.float32)
    note = (EMULATED_NOTE if emulated else REAL_NOTE).format(n=devices, platform=platform)
    workloads = []
    if builtin:
        workloads += [_matmul_workload(s, mesh, x, w, quick) for s in STRATEGIES]
        # bfloat16 over the contracting axis: XLA:CPU all-reduces it in float32, the program
        # (and a GPU or TPU) in bfloat16; the record says both
        bf16 = jax.numpy.bfloat16
        workloads.append(_matmul_workload("contracting", mesh, x.astype(bf16), w.astype(bf16),
                                          quick, variant="bfloat16"))
        workloads += [_step_workload(s, mesh, quick) for s in STEP_STRATEGIES]
    if config_path is not None:
        workloads += _user_workloads(config_path, chosen, quick)
    return {
        "available": True,
        "devices": devices,
        "platform": platform,
        "default_backend": str(jax.default_backend()),
        "emulated": emulated,
        "note": note,
        "jax_version": str(jax.__version__),
        "quick": quick,
        "builtin": builtin,
        "kinds": {
            "collectives": Kind.ANALYTIC.value,
            "per_device": Kind.ANALYTIC.value,
            "split_dims": Kind.ANALYTIC.value,
            "xla_per_device": Kind.COMPILER_ESTIMATE.value,
            "measured_seconds": Kind.MEASURED.value,
            "flops_cross_check": Kind.COMPILER_ESTIMATE.value,
        },
        "workloads": workloads,
    }


# --------------------------------------------------------------------------------------------
# The subprocess: entry point and launcher
# --------------------------------------------------------------------------------------------

_DEVICE_FLAG = "--xla_force_host_platform_device_count"


def with_device_flag(xla_flags: str, devices: int) -> str:
    """``xla_flags`` with the host-device count set to ``devices`` (replacing any earlier one)."""
    kept = [flag for flag in xla_flags.split() if not flag.startswith(_DEVICE_FLAG)]
    return " ".join([*kept, f"{_DEVICE_FLAG}={devices}"])


def _child_env(devices: int) -> dict[str, str]:
    env = dict(os.environ)
    env["XLA_FLAGS"] = with_device_flag(env.get("XLA_FLAGS", ""), devices)
    env["JAX_NUM_CPU_DEVICES"] = str(devices)  # it overrides the XLA flag when both are set
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # share a GPU with the parent
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    return env


def _last_json(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                return None
            return doc if isinstance(doc, dict) else None
    return None


def run_sharded_analysis(
    *,
    devices: int = 8,
    quick: bool,
    timeout: float,
    config_path: str | os.PathLike[str] | None = None,
    builtin: bool = True,
) -> dict[str, Any]:
    """Run :func:`measure` in a fresh Python process with ``devices`` devices; return its JSON.

    The child gets the host-device flag (``XLA_FLAGS`` and ``JAX_NUM_CPU_DEVICES``), so this
    works whatever jax state the caller has; on a machine whose default backend has at least
    ``devices`` accelerators, those are used instead (``"emulated": False``). With
    ``config_path``, the child also analyses the config's sharded workloads (it gets the file's
    absolute path and runs in the caller's current directory, so imports resolve as they do
    here); they follow the built-ins in ``"workloads"``; ``builtin=False`` (``--no-builtin``)
    leaves the built-ins out. The training steps (``"sharding"`` one of
    :data:`roofline_report.observe.training_steps.STEP_STRATEGIES`) follow the matmuls, with the
    keys
    :func:`_step_workload` lists. Returns::

        {"available": True, "devices", "platform", "default_backend", "emulated", "note",
         "jax_version", "quick", "kinds": {field: Kind value},
         "workloads": [{"name", "sharding": "data"|"contracting"|"fsdp"|"contracting-bfloat16",
                        "strategy", "dtype", "description",
                        "shapes": {"x", "w", "y", "dtype"}, "partition_specs": {"x", "w", "y"},
                        "mesh": {"axis_names", "shape", "axis_types"},
                        "collectives": [parse_collectives records],
                        "per_device": {"flops", "hbm_bytes", "comm_bytes", "comm_bytes_hlo",
                                       "comm_bytes_compiled", "comm_bytes_complete"},
                        "notes": [str],
                        "expected_collective": {"op", "result_bytes", "group_size"} | None,
                        "xla_per_device": {"flops", "bytes_accessed", "transcendentals",
                                           "note"},
                        "check": {"max_abs_err", "tolerance", "passed"},
                        "measured_seconds": float | None}, ...,
                       # then one per sharded workload of the config:
                       {"name", "sharding": "user", "description", "function",
                        "mesh", "collectives", "expected_collective": None,
                        "arguments": [{"shape", "dtype", "partition", "shard_shape"}],
                        "results": [{"shape", "dtype", "partition", "shard_shape"}],
                        "per_device": {"flops", "hbm_bytes", "comm_bytes", "comm_bytes_hlo",
                                       "comm_bytes_compiled", "comm_bytes_complete"},
                        "notes": [str],
                        "counted": {"flops", "transcendentals", "split_devices", "notes"},
                        "flops_cross_check": {"xla_per_device", "ratio"},
                        "xla_per_device", "check", "measured_seconds"[, "error"]}
                       # or, when it could not be analysed:
                       {"name", "sharding": "user", "description", "function",
                        "collectives": [], "error": str}]}

    or ``{"available": False, "reason": str}`` when the child fails, times out or prints no
    JSON: a measurement failure never raises. Raises InputError for a bad ``devices`` or
    ``timeout``.
    """
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise InputError(f"devices must be a positive integer, got {devices!r}")
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise InputError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if config_path is not None and not isinstance(config_path, str | os.PathLike):
        raise InputError(f"config_path must be a path, got {type(config_path).__name__}")
    command = [sys.executable, "-m", "roofline_report.observe.sharding", "--devices", str(devices)]
    if quick:
        command.append("--quick")
    if not builtin:
        command.append("--no-builtin")
    env = _child_env(devices)
    cwd = env["PYTHONPATH"].split(os.pathsep)[0]
    if config_path is not None:
        command += ["--config", str(Path(config_path).resolve())]
        with contextlib.suppress(OSError):  # a removed current directory: keep the package's
            cwd = str(Path.cwd())
    try:
        proc = subprocess.run(
            command,
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return _unavailable(f"the sharded measurement timed out after {timeout:g} s")
    except OSError as exc:
        return _unavailable(f"could not start the sharded measurement: {_one_line(exc)}")
    doc = _last_json(proc.stdout)
    if doc is not None:
        return doc
    last = next((ln for ln in reversed(proc.stderr.splitlines()) if ln.strip()), "")
    return _unavailable(
        f"the sharded measurement exited with code {proc.returncode} and printed no result"
        + (f": {scrub_paths(last.strip())[:300]}" if last else "")
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m roofline_report.observe.sharding --devices N [--quick] [--config FILE]``: print
    one
    JSON document."""
    parser = argparse.ArgumentParser(
        prog="python -m roofline_report.observe.sharding",
        description="Measure sharded matmuls on N devices and print one JSON document.",
    )
    parser.add_argument("--devices", type=int, default=8, help="devices in the mesh (default 8)")
    parser.add_argument("--quick", action="store_true", help="small sizes, few repetitions")
    parser.add_argument("--config", metavar="FILE", default=None,
                        help="also analyse this TOML config's workloads that declare a mesh")
    parser.add_argument("--no-builtin", action="store_true",
                        help="leave out the built-in matmuls and training steps")
    options = parser.parse_args(argv)
    if options.devices < 1:
        parser.error("--devices must be at least 1")
    if "jax" not in sys.modules:  # the flag only counts before jax is imported
        os.environ["XLA_FLAGS"] = with_device_flag(os.environ.get("XLA_FLAGS", ""), options.devices)
        os.environ["JAX_NUM_CPU_DEVICES"] = str(options.devices)
    try:
        result = measure(devices=options.devices, quick=options.quick, config_path=options.config,
                         builtin=not options.no_builtin)
    except Exception as exc:  # reported in the document, never a traceback on stdout
        result = _unavailable(f"the sharded measurement failed: {_one_line(exc)}")
    try:
        text = json.dumps(result, sort_keys=True, allow_nan=False)
    except ValueError as exc:  # a non-finite number slipped in
        text = json.dumps(_unavailable(f"the result is not plain JSON: {_one_line(exc)}"))
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
