"""Decoding an HLO instruction's ``replica_groups`` in any of XLA's spellings (explicit groups,
iota groups, meshes) into the devices of each group (:func:`parse_replica_groups`).

Read by :mod:`roofline_report.hlo.ir`'s parser. Nothing here imports jax.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ReplicaGroups", "parse_replica_groups"]


@dataclass(frozen=True, slots=True)
class ReplicaGroups:
    """Decoded ``replica_groups``: ``groups`` lists each group's devices (``()`` for ``{}``:
    one group of every device); None when only the size could be read. ``size`` is the
    devices per group, None when every device (``{}``) or unreadable (``text`` is kept)."""

    groups: tuple[tuple[int, ...], ...] | None
    size: int | None
    text: str

    def partition_problem(self, num_devices: int | None) -> str | None:
        """Why the groups are not a partition of the devices (a device in two groups, groups
        of different sizes, a device the program lacks), None when they are or only the size
        is known. Groups that leave devices out are let be: a cross-replica collective of a
        partitioned program numbers replicas, not every device."""
        if not self.groups:
            return None
        seen: set[int] = set()
        for group in self.groups:
            for device in group:
                if device in seen:
                    return f"device {device} is in two groups"
                seen.add(device)
        if len({len(g) for g in self.groups}) > 1:
            return "its groups have different sizes"
        if num_devices is not None:
            outside = sorted(d for d in seen if not 0 <= d < num_devices)
            if outside:
                return f"device {outside[0]} is not one of the program's {num_devices}"
        return None

    def group_size(self, num_devices: int) -> int | None:
        """Devices per group, ``num_devices`` for ``{}``; None when unreadable."""
        if self.groups == ():
            return num_devices
        return self.size


def _iota(dims: Sequence[int], perm: Sequence[int] | None) -> list[int]:
    devices = np.arange(math.prod(dims)).reshape(tuple(dims))
    if perm is not None:
        devices = devices.transpose(tuple(perm))
    return [int(d) for d in devices.reshape(-1)]


_IOTA = re.compile(r"^\[(?P<shape>[\d,\s]+)\]<=\[(?P<dims>[\d,\s]+)\](?:T\((?P<perm>[\d,\s]+)\))?")
_MESH = re.compile(r"^(?P<kind>maximal_mesh|mesh)\[(?P<axes>[^\]]*)\]")
_MESH_AXIS = re.compile(r"^'?(?P<name>[^'=]+?)'?=(?P<size>\d+)$")
_GROUP_AXIS = re.compile(r"^'?(?P<name>[^':]+?)'?(?::\((?P<pre>\d+)\)(?P<size>\d+))?$")


def _ints(text: str) -> list[int]:
    return [int(v) for v in re.findall(r"\d+", text)]


def parse_replica_groups(text: str) -> ReplicaGroups:
    """Decode a ``replica_groups`` value in any of XLA's spellings.

    ``{{0,1,2,3},{4,5,6,7}}`` (explicit; ``{}`` means all devices), ``[2,4]<=[8]`` and
    ``[4,2]<=[2,4]T(1,0)`` (iota: groups x size over a reshaped, transposed iota),
    ``mesh['x'=2,'y'=4] {'y'}`` (the devices along the named axes; ``device_ids=(...)`` gives the
    mesh's device order; a sub-axis ``'y':(1)2`` its own part of an axis) and
    ``maximal_mesh[device_id=3] {}`` (one device). Never raises: an unreadable value gives
    ``ReplicaGroups(None, None, text)``.
    """
    text = text.strip()
    unreadable = ReplicaGroups(None, None, text)
    if text.startswith("{"):
        body = text[1:-1].strip() if text.endswith("}") else ""
        if not body:
            return ReplicaGroups((), None, text)
        found = re.findall(r"\{([^{}]*)\}", body)
        if not found:
            return unreadable
        groups = tuple(tuple(_ints(g)) for g in found)
        return ReplicaGroups(groups, len(groups[0]), text)
    iota = _IOTA.match(text)
    if iota:
        shape = _ints(iota["shape"])
        dims = _ints(iota["dims"])
        perm = _ints(iota["perm"]) if iota["perm"] else None
        if len(shape) != 2 or math.prod(shape) != math.prod(dims):
            return ReplicaGroups(None, shape[-1] if shape else None, text)
        flat = _iota(dims, perm)
        groups = tuple(tuple(flat[g * shape[1] : (g + 1) * shape[1]]) for g in range(shape[0]))
        return ReplicaGroups(groups, shape[1], text)
    mesh = _MESH.match(text)
    if mesh:
        return _mesh_groups(mesh, text)
    return unreadable


def _mesh_groups(mesh: re.Match[str], text: str) -> ReplicaGroups:
    unreadable = ReplicaGroups(None, None, text)
    rest = text[mesh.end() :]
    device_text = None
    device_ids = re.match(r",?\s*device_ids=\(", rest)
    position = 0
    if device_ids:
        depth, position = 1, device_ids.end()
        while depth and position < len(rest):
            depth += {"(": 1, ")": -1}.get(rest[position], 0)
            position += 1
        if depth:
            return unreadable
        device_text = rest[device_ids.end() : position - 1]
    selected_match = re.match(r"\s*\{(?P<group>[^}]*)\}", rest[position:])
    if selected_match is None:
        return unreadable
    if mesh["kind"] == "maximal_mesh":
        ids = _ints(mesh["axes"])
        return ReplicaGroups(((ids[0],),) if ids else None, 1, text)
    axes: list[tuple[str, int]] = []
    for entry in filter(None, (e.strip() for e in mesh["axes"].split(","))):
        axis = _MESH_AXIS.match(entry)
        if axis is None:
            return unreadable
        axes.append((axis["name"], int(axis["size"])))
    sizes = dict(axes)
    selected: list[tuple[str, int | None, int | None]] = []  # name, pre, size of a sub-axis
    for entry in filter(None, (e.strip() for e in selected_match["group"].split(","))):
        axis = _GROUP_AXIS.match(entry)
        if axis is None or axis["name"] not in sizes:
            return unreadable
        pre = int(axis["pre"]) if axis["pre"] is not None else None
        size = int(axis["size"]) if axis["size"] is not None else None
        selected.append((axis["name"], pre, size))
    group_size = math.prod(s if s is not None else sizes[n] for n, _, s in selected)
    total = math.prod(sizes.values())
    devices = list(range(total))
    if device_text is not None:
        iota = _IOTA.match(f"[{total}]<=" + device_text.strip()) if device_text.strip(
        ).startswith("[") else None
        if iota:
            devices = _iota(_ints(iota["dims"]), _ints(iota["perm"]) if iota["perm"] else None)
        else:
            devices = _ints(device_text)
        if len(devices) != total:
            return ReplicaGroups(None, group_size, text)
    # Split each mesh axis around the sub-axes chosen from it (one sub-axis per axis is read).
    dims: list[int] = []
    names: list[str | None] = []
    for name, size in axes:
        subs = [(p, s) for n, p, s in selected if n == name and s is not None]
        if len(subs) > 1 or (subs and size % ((subs[0][0] or 1) * subs[0][1])):
            return ReplicaGroups(None, group_size, text)
        if subs:
            pre, sub = subs[0][0] or 1, subs[0][1]
            dims += [pre, sub, size // (pre * sub)]
            names += [None, name, None]
        else:
            dims.append(size)
            names.append(name)
    grid = np.array(devices).reshape(tuple(dims))
    group_axes = [names.index(n) for n, _, _ in selected]
    other_axes = [i for i in range(len(dims)) if i not in group_axes]
    ordered = grid.transpose((*other_axes, *group_axes)).reshape(-1, group_size)
    groups = tuple(tuple(int(d) for d in row) for row in ordered)
    return ReplicaGroups(groups, group_size, text)
