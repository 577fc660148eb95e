"""The user's own sharded workloads: the ``[[workload]]`` tables with a ``mesh`` of a config
file (:mod:`roofline_report.config`), each analysed by :func:`user_workload` in the sharded
child process; a failure in one becomes an entry with an ``"error"`` for that workload only.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from roofline_report.errors import InputError, scrub_paths
from roofline_report.observe.sharded_analysis import (
    analyze_sharded,
    clip,
    comm_fields,
    lazy_jax,
    make_mesh,
    mesh_json,
    one_line,
    shard_bytes,
)

if TYPE_CHECKING:
    from roofline_report.config import Config, WorkloadSpec

USER_SHARDING = "user"  # the "sharding" of a workload declared in a config file


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
    analysed; :func:`user_workloads` turns that into an error entry.
    """
    jax = lazy_jax()
    fn = config.load_function(spec)
    reference = config.load_reference(spec)
    axes = spec.mesh or ()
    needed = spec.mesh_devices
    if needed > len(devices):
        raise InputError(f"the mesh needs {needed} devices but {len(devices)} are available")
    mesh = make_mesh(jax, list(devices)[:needed], axes)
    named, pspec = jax.sharding.NamedSharding, jax.sharding.PartitionSpec
    partitions = [tuple(a or None for a in p) for p in spec.partition or ()]
    args = _user_inputs(jax, spec.resolve_shapes(), zlib.crc32(spec.name.encode("utf-8")))
    if len(partitions) != len(args):
        raise InputError(f"{len(partitions)} partitions for {len(args)} arguments")
    in_shardings = [named(mesh, pspec(*p)) for p in partitions]
    structs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args]
    out_leaves = _traced_outputs(jax, fn, structs)
    out_partition = _checked_out_partition(spec, out_leaves)
    out_sharding = named(mesh, pspec(*out_partition))

    count = _count_program(jax, fn, structs)
    used = {a for p in (*partitions, out_partition) for a in p if a}
    split = math.prod(size for name, size in axes if name in used)
    rtol = spec.rtol if spec.rtol is not None else 1e-4
    atol = spec.atol if spec.atol is not None else 1e-6
    measured = analyze_sharded(
        fn, args, in_shardings, out_sharding, reference=reference, rtol=rtol, atol=atol,
        repeats=3 if quick else 5, inner=5 if quick else 10,
    )  # fmt: skip

    arguments = _argument_records(args, partitions, in_shardings)
    hbm = sum(shard_bytes(s, a.shape, a.dtype) for a, s in zip(args, in_shardings, strict=True))
    hbm += sum(shard_bytes(out_sharding, leaf.shape, leaf.dtype) for leaf in out_leaves)
    flops = _exact_share(int(count["flops"]), split)
    xla_flops = measured["xla_per_device"]["flops"]
    workload: dict[str, Any] = {
        "name": spec.name,
        "sharding": USER_SHARDING,
        "description": _description(spec, arguments, out_partition, split),
        "function": spec.function,
        "mesh": mesh_json(mesh, measured.get("device_ids")),
        "arguments": arguments,
        "results": _result_records(out_leaves, out_partition, out_sharding),
        "collectives": measured["collectives"],
        "per_device": {
            "flops": flops,
            "hbm_bytes": hbm,
            "comm_bytes": measured["comm_bytes"],
            **comm_fields(measured),
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
        "measured_per_call_s": measured["measured_per_call_s"],
    }
    if "error" in measured:
        workload["error"] = measured["error"]
    return workload


def _traced_outputs(jax: Any, fn: Any, structs: Sequence[Any]) -> list[Any]:
    """The leaves of ``fn``'s result at the declared argument shapes (traced, not run)."""
    try:
        leaves: list[Any] = jax.tree_util.tree_leaves(jax.eval_shape(fn, *structs))
    except Exception as exc:
        raise InputError(f"the function does not trace at the declared shapes: {one_line(exc)}"
                         ) from exc
    return leaves


def _checked_out_partition(spec: WorkloadSpec, out_leaves: Sequence[Any]
                           ) -> tuple[str | None, ...]:
    """The result's partition from ``out_partition`` (``()``, replicated, when absent), checked
    against the result: one array, one entry per dimension, each dimension divisible by the size
    of the mesh axis that splits it."""
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
        sizes = dict(spec.mesh or ())
        for dim, (axis, size) in enumerate(zip(out_partition, out_leaves[0].shape, strict=True)):
            if axis and size % sizes[axis]:
                raise InputError(
                    f"'out_partition': dimension {dim} of the result ({size}) is not divisible "
                    f"by mesh axis {axis!r} ({sizes[axis]})"
                )
    return out_partition


def _count_program(jax: Any, fn: Any, structs: Sequence[Any]) -> dict[str, Any]:
    """Our own count (:func:`roofline_report.hlo.count_stablehlo`) of the whole, unpartitioned
    program at the declared shapes; InputError when it passed the count's time limit."""
    from roofline_report.hlo import count_stablehlo
    from roofline_report.observe import lower as lowering

    count = count_stablehlo(lowering.stablehlo_module(jax.jit(fn).lower(*structs)))
    if count.get("available") is False:  # past the count's time limit
        raise InputError(f"the program was not counted: {count['reason']}")
    return count


def _argument_records(args: Sequence[Any], partitions: Sequence[tuple[str | None, ...]],
                      in_shardings: Sequence[Any]) -> list[dict[str, Any]]:
    """Each argument's shape, dtype, partition and the shape of one device's shard."""
    return [
        {
            "shape": list(a.shape),
            "dtype": str(a.dtype),
            "partition": list(p),
            "shard_shape": list(s.shard_shape(a.shape)),
        }
        for a, p, s in zip(args, partitions, in_shardings, strict=True)
    ]


def _result_records(out_leaves: Sequence[Any], out_partition: tuple[str | None, ...],
                    out_sharding: Any) -> list[dict[str, Any]]:
    """Each result's shape, dtype, partition (all None: replicated) and one device's shard."""
    return [
        {
            "shape": list(leaf.shape),
            "dtype": str(leaf.dtype),
            "partition": list(out_partition) or [None] * len(leaf.shape),
            "shard_shape": list(out_sharding.shard_shape(tuple(leaf.shape))),
        }
        for leaf in out_leaves
    ]


def _description(spec: WorkloadSpec, arguments: Sequence[Mapping[str, Any]],
                 out_partition: tuple[str | None, ...], split: int) -> str:
    """The workload's one-line description: the mesh, each argument's partition, the result's,
    and how the per-device FLOPs were split."""
    mesh_text = ", ".join(f"{name}={size}" for name, size in spec.mesh or ())
    parts = ", ".join(
        f"{a['dtype']}[{','.join(map(str, a['shape']))}] {_spec_text(a['partition'])}"
        for a in arguments
    )
    result_text = _spec_text(out_partition) if out_partition else "replicated"
    return (
        f"{spec.name} ({spec.function}), mesh {mesh_text}: {parts} -> {result_text}; "
        "per-device FLOPs = "
        f"our count / {split} (the devices on mesh axes that shard an argument or the result)"
    )


def unknown_axes(exc: BaseException, mesh_axes: Sequence[str]) -> list[str]:
    """The axis names a collective of the traced function asked for that the mesh lacks, read
    from the frames of jax's collectives (``lax/parallel.py``) in the exception's traceback
    (or its cause's): jax raises a bare AssertionError there."""
    names: list[str] = []
    for err in (exc, exc.__cause__):
        tb = None if err is None else err.__traceback__
        while tb is not None:
            frame = tb.tb_frame
            if Path(frame.f_code.co_filename).parts[-2:] == ("lax", "parallel.py"):
                value = frame.f_locals.get("axis_name")
                for name in value if isinstance(value, (tuple, list)) else (value,):
                    if isinstance(name, str) and name not in mesh_axes and name not in names:
                        names.append(name)
            tb = tb.tb_next
    return names


def _failure(exc: BaseException, spec: WorkloadSpec | None = None) -> str:
    if spec is not None:
        axes = [str(name) for name, _ in spec.mesh or ()]
        missing = unknown_axes(exc, axes)
        if missing:
            return (f"a collective of {spec.function} runs over mesh axis "
                    f"{', '.join(repr(a) for a in missing)}, which the mesh lacks (mesh axes: "
                    f"{', '.join(axes) or 'none'})")
    if isinstance(exc, InputError):
        return clip(scrub_paths(" ".join(str(exc).split())))
    return one_line(exc)


def _failed_workload(name: str, function: str, reason: str) -> dict[str, Any]:
    return {
        "name": name,
        "sharding": USER_SHARDING,
        "description": f"{name} ({function or 'the config'}): not analysed: {reason}",
        "function": function,
        "collectives": [],
        "error": reason,
    }


def user_workloads(config_path: str, devices: Sequence[Any], quick: bool
                    ) -> list[dict[str, Any]]:
    """One entry per sharded workload of the config; failures become error entries."""
    from roofline_report.config import load_config

    # jax trims its own frames from tracebacks; the frames of its collectives name the axis a
    # user's collective asked for (unknown_axes)
    lazy_jax().config.update("jax_traceback_filtering", "off")
    try:
        config = load_config(config_path)
    except Exception as exc:
        return [_failed_workload(f"config {Path(config_path).name}", "", _failure(exc))]
    entries = []
    for spec in config.sharded:
        try:
            entries.append(user_workload(config, spec, devices, quick=quick))
        except (Exception, SystemExit) as exc:  # the user's code may raise anything
            entries.append(_failed_workload(spec.name, spec.function, _failure(exc, spec)))
    return entries

