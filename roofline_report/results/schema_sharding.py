"""The sharded programs in the results document (:mod:`roofline_report.results.schema`): each
workload's collectives (:class:`ShardedCollective`), per-device figures, check and time, as the
sharded child process wrote them. The records are closed: an unknown key is refused with its
key path. Figures whose shape differs between the built-in and the user's workloads (per-device
figures, checks, meshes) are mappings of their own.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from roofline_report.results.schema_base import (
    AtLeastOne,
    Count,
    NonNeg,
    Pos,
    PosInt,
    Record,
)


class CollectiveArray(Record):
    """One array a collective moves, per device: as compiled (``dtype``, ``shape``, ``bytes``)
    and in the program's dtype (``program_dtype``, ``program_bytes``), which a backend that
    widens the collective (XLA:CPU runs bfloat16 ones in float32) leaves narrower. The analysis
    builds records of the compiled figures alone when it combines the records of one
    instruction (:func:`roofline_report.analysis.comm_step.combine_records`)."""

    dtype: str | None = None
    shape: list[Count] | None = None
    bytes: Count | None = None
    program_dtype: str | None = None
    program_bytes: Count | None = None


class ShardedCollective(Record):
    """One collective instruction of a compiled sharded program, as
    :func:`roofline_report.observe.sharded_collectives.parse_collectives` writes it (a combined
    collective once, its ``arrays`` listed). Every key but ``op`` may be missing from results
    saved before it was written: a record without ``trip_count`` ran once, one without
    ``arrays`` is its one array; the bytes and the group are None where they could not be
    read."""

    # "async" is a keyword: the field is named async_ and read and written as "async"
    model_config = ConfigDict(serialize_by_alias=True)

    op: str
    instruction: str | None = None
    async_: bool | None = Field(default=None, alias="async")
    shape: list[Count] | None = None  # the compiled one; None for a combined collective
    dtype: str | None = None  # the compiled one; None when its arrays differ
    arrays: list[CollectiveArray] | None = None
    result_bytes: Count | None = None  # compiled, per device: a combined one's arrays summed
    group_size: PosInt | None = None
    bytes_per_device: Count | None = None  # sent per execution, compiled dtype
    program_dtype: str | None = None
    program_result_bytes: Count | None = None
    program_bytes_per_device: Count | None = None  # sent per execution, program dtype
    converted: bool = False  # the compiled arrays are wider than the program's
    dtype_source: Literal["program", "compiled"] | None = None
    dtype_note: str = ""
    replica_groups: list[list[Count]] | None = None
    trip_count: Count | None = 1  # runs per call: the loops' trip counts; None when unknown
    loops: list[str] = []  # the while loops around it, outermost first


class ExpectedCollective(Record):
    """The collective a built-in sharded matmul runs, derived by hand
    (:func:`roofline_report.analysis.comm.matmul_per_device`): its result per device and group."""

    op: str
    result_bytes: Count
    group_size: PosInt


class ExpectedStepCollective(ExpectedCollective):
    """A collective of a built-in training step, derived by hand
    (:func:`roofline_report.observe.training_steps.expected_collectives`): how many times it runs
    per step and the bytes one device sends per run."""

    count: AtLeastOne
    bytes_per_device: Count


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
    collectives: list[ShardedCollective] = []
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
    expected_collective: ExpectedCollective | None = None
    expected_collectives: list[ExpectedStepCollective] | None = None
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
