"""A compiled step carried to more devices (weak scaling): its collectives
(:func:`project_collective`), the dimensions of the model's state that do not split that many
ways (:func:`split_problems`) and the step's bounds there (:func:`project_step`). Pure and
deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roofline_report.analysis.comm import non_negative
from roofline_report.analysis.comm_network import Level
from roofline_report.analysis.comm_step import (
    StepBounds,
    combine_records,
    priced_bytes,
    step_bounds,
)
from roofline_report.hlo.collectives import COLLECTIVE_OPS, _ceil_div, _count
from roofline_report.results.schema_sharding import ShardedCollective

PROJECTION_DEVICES: tuple[int, ...] = (8, 64, 256, 1024)
"""Device counts of the projection beyond the compiled program (:func:`project_step`)."""


@dataclass(frozen=True, slots=True)
class ProjectedBounds:
    """A step's bounds on ``devices`` devices (:func:`project_step`): the global batch
    ``batch_factor`` times the compiled one, ``hbm_shards`` the memory traffic of its argument
    and result shards, ``flags`` the dimensions that split unevenly."""

    devices: int
    bounds: StepBounds
    batch_factor: float
    hbm_shards: float
    flags: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class UnprojectedStep:
    """Why a step has no bounds on ``devices`` devices (:func:`project_step`)."""

    devices: int
    reason: str


def project_collective(
    record: ShardedCollective, *, devices: int, to_devices: int, batch_factor: float = 1.0
) -> ShardedCollective:
    """One collective of an ``devices``-device program, as it would be on ``to_devices``.

    A group that spans every device grows to ``to_devices``; a smaller group (a sub-mesh axis)
    keeps its size. The full array keeps its size, so an all-gather's and an all-reduce's result
    stay, and a reduce-scatter's result (1/g of the array) shrinks to 1/g'. ``batch_factor``
    multiplies the bytes of a collective whose array grows with the batch (pass 1 for the
    others). Bytes are :func:`priced_bytes` (the program's dtype where it was read). Returns
    a record of its ``op``, ``instruction``, ``result_bytes``, ``group_size`` and
    ``trip_count``.
    """
    n = _count("devices", devices, minimum=1)
    m = _count("to_devices", to_devices, minimum=1)
    if record.group_size is None:
        raise ValueError("a collective record needs group_size")
    group = int(record.group_size)
    size = priced_bytes(record)
    if size is None:
        raise ValueError("a collective record needs result_bytes")
    new_group = m if group == n else group
    if record.op == "reduce-scatter":
        size = _ceil_div(size * group, new_group)
    size = math.ceil(size * batch_factor)
    return ShardedCollective(op=record.op, instruction=record.instruction, result_bytes=size,
                             group_size=new_group, trip_count=record.trip_count)


def split_problems(split_dims: Sequence[Mapping[str, Any]], to_devices: int
                   ) -> tuple[str | None, list[str]]:
    """(why the step cannot be projected to ``to_devices`` or None, flags) from the dimensions
    the program splits over its mesh axis (``{"argument", "dim", "size", "data"}``).

    Data dimensions grow with the global batch (weak scaling) and always divide; a dimension of
    the model's state (weights, optimizer moments) keeps its size: fewer elements than devices
    cannot be split (not projected), a size the devices do not divide is padded (flagged).
    """
    flags: list[str] = []
    for d in split_dims:
        if d.get("data"):
            continue
        size = int(d["size"])
        where = f"{d['argument']} dimension {d['dim']} ({size:,})"
        if size < to_devices:
            return (f"{where} cannot be split over {to_devices:,} devices: fewer elements than "
                    "devices"), flags
        if size % to_devices:
            flags.append(f"{where} does not divide over {to_devices:,} devices: shards padded to "
                         f"{_ceil_div(size, to_devices):,}")
    return None, flags


def project_step(
    *,
    flops: float,
    hbm_bytes: float,
    collectives: Sequence[ShardedCollective],
    devices: int,
    to_devices: int,
    comm_scales: bool,
    peak_flops: float,
    hbm_bandwidth: float,
    network: Sequence[Level],
    hbm_parts: Mapping[str, Any] | None = None,
    split_dims: Sequence[Mapping[str, Any]] = (),
    algorithm: str = "best",
) -> ProjectedBounds | UnprojectedStep:
    """:func:`step_bounds` of the step projected from ``devices`` to ``to_devices`` devices.

    Weak scaling: each device keeps its share of the batch, so its flops stay those of the
    compiled program and the global batch grows by ``to_devices / devices``. Collectives follow
    :func:`project_collective`; with ``comm_scales`` (their arrays grow with the batch, as
    tensor-parallel activations do) their bytes grow with the global batch. Memory traffic:
    ``hbm_parts`` (``{"data", "data_split", "state", "state_split", "other"}``, bytes of the
    arguments' and results' shards per device) rescales the shards (data split over the mesh
    stays, replicated data grows with the batch; state split over the mesh shrinks as
    ``devices / to_devices``); without it ``hbm_bytes`` stays. The collectives' own buffers
    (the gathered weights) are added (``count_buffers``). Dimensions that do not split
    (:func:`split_problems`) flag the row or stop it.

    Returns the projected bounds, or why there are none.
    """
    n = _count("devices", devices, minimum=1)
    m = _count("to_devices", to_devices, minimum=1)
    factor = m / n
    reason, flags = split_problems(split_dims, m)
    if reason is not None:
        return UnprojectedStep(m, reason)
    projected = [
        project_collective(c, devices=n, to_devices=m, batch_factor=factor if comm_scales else 1.0)
        for c in combine_records(collectives)
        if c.op in COLLECTIVE_OPS and priced_bytes(c) is not None and c.group_size is not None
    ]
    shards = non_negative("hbm_bytes", hbm_bytes)
    if hbm_parts:
        data = float(hbm_parts.get("data", 0)) * (1 if hbm_parts.get("data_split") else factor)
        state = float(hbm_parts.get("state", 0)) * (n / m if hbm_parts.get("state_split") else 1)
        shards = data + state + float(hbm_parts.get("other", 0))
    bounds = step_bounds(
        flops=flops, hbm_bytes=shards, collectives=projected, peak_flops=peak_flops,
        hbm_bandwidth=hbm_bandwidth, network=network, algorithm=algorithm, count_buffers=True,
    )  # fmt: skip
    if bounds.not_priced:
        return UnprojectedStep(m, bounds.not_priced[0])
    return ProjectedBounds(m, bounds, factor, shards, tuple(flags))
