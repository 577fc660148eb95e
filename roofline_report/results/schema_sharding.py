"""The sharded programs in the results document (:mod:`roofline_report.results.schema`): each
workload's collectives, per-device figures, check and time, as the sharded child process wrote
them. The records are closed: an unknown key is refused with its key path. Figures whose shape
differs between the built-in and the user's workloads (per-device figures, checks, meshes) are
mappings of their own.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from roofline_report.results.schema_base import (
    AtLeastOne,
    NonNeg,
    Pos,
    Record,
)


class ShardedWorkload(Record):
    """One sharded program: built in (a matmul sharded three ways, whole training steps) or
    the user's, as the sharded child process measured it."""

    name: str
    description: str = ""
    sharding: str = ""
    strategy: str | None = None
    function: str | None = None  # a user's workload: module:function
    dtype: str | None = None
    step: bool | None = None  # a whole training step
    collectives: list[dict[str, Any]] = []
    per_device: dict[str, Any] = {}
    xla_per_device: dict[str, Any] = {}
    check: dict[str, Any] = {}
    # The per-call samples the sharded child timed; older files hold one median instead
    # (measured_seconds), read as a single sample.
    measured_per_call_s: list[Pos] | None = Field(default=None, min_length=1)
    measured_seconds: NonNeg | None = None
    error: str | None = None
    notes: list[str] = []
    mesh: dict[str, Any] | None = None
    shapes: dict[str, Any] | None = None
    sizes: dict[str, Any] | None = None
    batch: dict[str, Any] | None = None
    comm_scales_with_batch: bool | None = None
    split_dims: list[Any] | None = None
    partition_specs: dict[str, Any] | None = None
    expected_collective: dict[str, Any] | None = None
    expected_collectives: list[dict[str, Any]] | None = None
    jax_roofline: dict[str, Any] | None = None
    arguments: list[dict[str, Any]] | None = None  # a user's workload: its arguments' shards
    results: list[dict[str, Any]] | None = None  # and its results'
    counted: dict[str, Any] | None = None  # our count of the whole program
    flops_cross_check: dict[str, Any] | None = None


class Sharding(Record):
    available: Literal[True] = True
    devices: AtLeastOne
    emulated: bool
    platform: str = ""
    quick: bool = False
    builtin: bool | None = None
    default_backend: str | None = None
    jax_version: str | None = None
    kinds: dict[str, str] = {}  # the kind of each figure of the workloads
    note: str = ""
    workloads: list[ShardedWorkload]
