"""The sharded programs in the results document (:mod:`roofline_report.results.schema`): each
workload's collectives, per-device figures, check and time, as the sharded child process wrote
them (open records: the facts grow with the HLO reader).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from roofline_report.results.schema_base import (
    NonNeg,
    OpenRecord,
)


class ShardedWorkload(OpenRecord):
    name: str
    description: str = ""
    sharding: str = ""
    collectives: list[dict[str, Any]] = []
    per_device: dict[str, Any] = {}
    xla_per_device: dict[str, Any] = {}
    check: dict[str, Any] = {}
    measured_seconds: NonNeg | None = None
    error: str | None = None


class Sharding(OpenRecord):
    available: Literal[True] = True
    devices: Annotated[int, Field(ge=1)]
    emulated: bool
    platform: str = ""
    quick: bool = False
    workloads: list[ShardedWorkload]
