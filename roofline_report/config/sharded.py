"""A sharded workload's keys: ``mesh``, ``partition`` and ``out_partition``, checked against the
workload's arguments at its declared dims (the result's partition is checked in the sharding
child, where the result's shape is known)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from roofline_report.config.spec import MAX_MESH_DEVICES, ArgSpec, Partition
from roofline_report.config.values import DIM_NAME_RE, positive_int, present, show, type_name
from roofline_report.errors import InputError

Mesh = tuple[tuple[str, int], ...]


def read_sharding(
    table: Mapping[str, Any],
    args: Sequence[ArgSpec],
    dims: Mapping[str, int],
    sweep: Mapping[str, tuple[int, ...]] | None,
    here: str,
) -> tuple[Mesh | None, tuple[Partition, ...] | None, Partition | None]:
    """The workload's ``(mesh, partition, out_partition)``, all None when it has no mesh.
    ``here`` starts each message."""
    mesh = _mesh(table.get("mesh"), here)
    partition: tuple[Partition, ...] | None = None
    out_partition: Partition | None = None
    if mesh is None:
        for key in ("partition", "out_partition"):
            if key in table:
                raise InputError(f"{here} '{key}' needs a 'mesh' (such as mesh = {{ d = 8 }})")
    else:
        if sweep is not None:
            raise InputError(
                f"{here} sweeps of sharded workloads are not supported; remove 'sweep' or 'mesh'"
            )
        if "partition" not in table:
            raise InputError(
                f"{here} 'mesh' needs 'partition': one list per argument, with an axis name "
                'or "" for each dimension'
            )
        partition = _partition(table["partition"], mesh, args, dims, here)
        if "out_partition" in table:
            out_partition = _axes(table["out_partition"], dict(mesh), f"{here} out_partition:")
    return mesh, partition, out_partition


def _mesh(value: Any, here: str) -> Mesh | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InputError(f"{here} 'mesh' must be a table of axis name = size, such as {{ d = 8 }}")
    value = present(value)
    if not value:
        raise InputError(f"{here} 'mesh' is empty; give at least one axis, such as {{ d = 8 }}")
    axes: list[tuple[str, int]] = []
    for name, size in value.items():
        if not isinstance(name, str) or not DIM_NAME_RE.fullmatch(name):
            raise InputError(
                f"{here} mesh: {show(name)} is not a valid axis name (letters, digits, _)"
            )
        axes.append((name, positive_int(size, f"{here} mesh.{name}")))
    devices = math.prod(size for _, size in axes)
    if devices > MAX_MESH_DEVICES:
        raise InputError(
            f"{here} the mesh has {devices} devices; the sharded analysis runs on "
            f"{MAX_MESH_DEVICES}"
        )
    return tuple(axes)


def _partition(
    value: Any,
    mesh: Sequence[tuple[str, int]],
    args: Sequence[ArgSpec],
    dims: Mapping[str, int],
    here: str,
) -> tuple[Partition, ...]:
    if not isinstance(value, list):
        raise InputError(
            f"{here} 'partition' must be a list with one list per argument, got {type_name(value)}"
        )
    if len(value) != len(args):
        raise InputError(
            f"{here} 'partition' has {len(value)} entries but the workload has {len(args)} args"
        )
    sizes = dict(mesh)
    out: list[Partition] = []
    for position, (entry, arg) in enumerate(zip(value, args, strict=True)):
        at = f"{here} partition[{position}]:"
        shape = arg.resolve(dims)
        axes = _axes(entry, sizes, at)
        if len(axes) != len(shape):
            raise InputError(
                f"{at} has {len(axes)} entries but args[{position}] has {len(shape)} dimensions"
            )
        for dim, (axis, size) in enumerate(zip(axes, shape, strict=True)):
            if axis and size % sizes[axis]:
                raise InputError(
                    f"{at} dimension {dim} of args[{position}] ({size} at the declared dims) "
                    f"is not divisible by mesh axis {show(axis)} ({sizes[axis]})"
                )
        out.append(axes)
    return tuple(out)


def _axes(value: Any, sizes: Mapping[str, int], at: str) -> Partition:
    """One partition list: a mesh axis name or "" per dimension, no axis twice."""
    if not isinstance(value, list):
        raise InputError(
            f'{at} expected a list with one mesh axis name or "" per dimension, '
            f"got {type_name(value)}"
        )
    seen: set[str] = set()
    for axis in value:
        if not isinstance(axis, str):
            raise InputError(
                f'{at} entries must be mesh axis names or "" (not sharded), got {type_name(axis)}'
            )
        if axis and axis not in sizes:
            raise InputError(
                f"{at} unknown axis {show(axis)} (mesh axes: {', '.join(sizes)})"
            )
        if axis and axis in seen:
            raise InputError(f"{at} axis {show(axis)} shards more than one dimension")
        seen.add(axis)
    return tuple(value)
