"""The built-in sharded workloads: y = x @ w under each sharding strategy of
:data:`roofline_report.analysis.comm.STRATEGIES` (and a bfloat16 variant), and the training
steps of :mod:`roofline_report.observe.training_steps`, each measured by
:func:`~roofline_report.observe.sharded_analysis.analyze_sharded` on a one-axis mesh.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from roofline_report import tolerances
from roofline_report.analysis.comm import STRATEGIES, STRATEGY_LABELS, matmul_per_device
from roofline_report.analysis.comm_step import step_forward_flops
from roofline_report.observe.sharded_analysis import (
    MESH_AXIS,
    analyze_sharded,
    comm_fields,
    lazy_jax,
    mesh_json,
    one_line,
    shard_bytes,
)
from roofline_report.observe.training_steps import STEP_STRATEGIES

QUICK_SIZES = (64, 512, 256)  # B, D, F
FULL_SIZES = (512, 2048, 1024)

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


def _matmul(x: Any, w: Any) -> Any:
    jax = lazy_jax()
    return jax.numpy.matmul(x, w, precision=jax.lax.Precision.HIGHEST)


def _reference_matmul(x: np.ndarray[Any, Any], w: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    product: np.ndarray[Any, Any] = np.matmul(x.astype(np.float64), w.astype(np.float64))
    return product


def _spec_json(spec: tuple[str | None, ...]) -> list[str | None]:
    return list(spec)


def _matmul_workload(
    strategy: str, mesh: Any, x: np.ndarray[Any, Any], w: np.ndarray[Any, Any], quick: bool,
    *, variant: str = "",
) -> dict[str, Any]:
    jax = lazy_jax()
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
        "mesh": mesh_json(mesh, measured.get("device_ids")),
        "collectives": measured["collectives"],
        "per_device": {
            "flops": analytic.flops,
            "hbm_bytes": analytic.hbm_bytes,
            "comm_bytes": analytic.comm_bytes,
            **comm_fields(measured),
        },
        "notes": measured["notes"],
        "expected_collective": analytic.collective,
        "xla_per_device": measured["xla_per_device"],
        "check": measured["check"],
        "measured_per_call_s": measured["measured_per_call_s"],
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
        return {"available": False, "reason": f"jax.experimental.roofline: {one_line(exc)}"}
    logger = logging.getLogger("jax")
    level = logger.level
    logger.setLevel(logging.ERROR)  # it warns once per primitive without a rule
    try:
        _, result = jax_roofline.roofline(body, mesh, in_specs, out_specs)(*args)
    except Exception as exc:
        return {"available": False, "reason": f"jax.experimental.roofline: {one_line(exc)}"}
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

    jax = lazy_jax()
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
    hbm = sum(shard_bytes(sh, a.shape, a.dtype) for a, sh in zip(leaves, shardings, strict=True))
    out_leaves = jax.tree_util.tree_leaves(args[:2])
    out_sh = jax.tree_util.tree_leaves(out_shardings)
    hbm += sum(shard_bytes(sh, a.shape, a.dtype) for a, sh in zip(out_leaves, out_sh,
                                                                     strict=True))
    expected = ts.expected_collectives(strategy, sizes, n)
    split_batch = in_specs[2] != jax.sharding.PartitionSpec()
    data = sum(shard_bytes(sh, a.shape, a.dtype) for a, sh in zip(leaves[-2:], shardings[-2:],
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
        "mesh": mesh_json(mesh, measured.get("device_ids")),
        "split_dims": ts.split_dimensions(args, in_specs, MESH_AXIS),
        "collectives": measured["collectives"],
        "per_device": {
            "flops": ts.matmul_flops(strategy, sizes, n),
            "forward_flops": step_forward_flops(strategy, sizes.to_json(), n),
            "hbm_bytes": hbm,
            "hbm_parts": {"data": data, "data_split": split_batch, "state": hbm - data,
                          "state_split": strategy != "dp-step", "other": 0},
            "comm_bytes": sum(c["bytes_per_device"] * c["count"] for c in expected),
            **comm_fields(measured),
        },
        "notes": measured["notes"],
        "expected_collective": None,
        "expected_collectives": expected,
        "comm_scales_with_batch": ts.COMM_SCALES_WITH_BATCH[strategy],
        "xla_per_device": measured["xla_per_device"],
        "jax_roofline": _jax_roofline(jax, body, mesh, in_specs, out_specs, args),
        "check": measured["check"],
        "measured_per_call_s": measured["measured_per_call_s"],
    }
    if "error" in measured:
        workload["error"] = measured["error"]
    return workload


def builtin_workloads(mesh: Any, quick: bool) -> list[dict[str, Any]]:
    """The three sharded matmuls, the bfloat16 matmul over the contracting axis and the
    training steps, on ``mesh`` (one axis)."""
    jax = lazy_jax()
    b, d, f = QUICK_SIZES if quick else FULL_SIZES
    rng = np.random.default_rng(0)
    x = rng.standard_normal((b, d), dtype=np.float32)
    w = rng.standard_normal((d, f), dtype=np.float32)
    workloads = [_matmul_workload(s, mesh, x, w, quick) for s in STRATEGIES]
    # bfloat16 over the contracting axis: XLA:CPU all-reduces it in float32, the program
    # (and a GPU or TPU) in bfloat16; the record says both
    bf16 = jax.numpy.bfloat16
    workloads.append(_matmul_workload("contracting", mesh, x.astype(bf16), w.astype(bf16),
                                      quick, variant="bfloat16"))
    workloads += [_step_workload(s, mesh, quick) for s in STEP_STRATEGIES]
    return workloads
