"""The inputs a run records (:mod:`roofline_report.results.schema`): the generator and when it
measured, the options asked for, the assumed budgets and the environment measured on.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from roofline_report.results.schema_base import (
    Count,
    Pos,
    Record,
)

MEASURED_AT_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"


class Generator(Record):
    name: str
    version: str
    # When the measurement was made (UTC, ISO 8601, e.g. 2025-01-31T12:00:00Z); rendering shows
    # it and never reads the clock. None in runs saved before it was recorded.
    measured_at: Annotated[str, Field(pattern=MEASURED_AT_PATTERN)] | None = None


class Options(Record):
    """What the run was asked to measure."""

    quick: bool
    ceilings: bool
    sweeps: bool
    sharding: bool
    experiments: bool
    builtin: bool
    preset: str | None  # a chip preset asked for by name (else matched to the device)
    config: str | None  # the config file's name, when one was given
    origin: Literal["command line", "python"] = "command line"  # who asked for the run
    teaching: bool = True  # the seed's teaching sections were asked for (a report about them)


# The seed's hypothetical budgets, the assumptions a run records unless it is given others:
# for teaching, not a device's specification. A profile's page never holds a trace to them.
SEED_PEAK_FLOPS = 100e9
SEED_BANDWIDTH = 20e9
# Not in the seed: an assumed interconnect budget for the communication roofline, a quarter of
# the seed's memory bandwidth, so that sharded examples can be communication-bound.
DEFAULT_INTERCONNECT = 5e9


class Assumptions(Record):
    """The hypothetical budgets the run was given (render can override them)."""

    peak: Pos
    bandwidth: Pos
    interconnect: Pos
    source: str


class Environment(Record):
    """The software and device a run measured on (no host or user names)."""

    backend: str
    device_kind: str
    device_count: Count
    python: str
    jax: str
    jaxlib: str
    numpy: str
    platform: str
    cpu_model: str | None = None
    cpu_count: Count | None = None
    compute_capability: str | None = None
    device_memory_bytes: Count | None = None
    hosts: Count | None = None  # hosts of a profile read from a multi-host trace
    # A profile read from a trace: what its device plane says of the device, and the chip
    # preset recognised from it (None: none; ``device_unrecognised`` says why).
    device_vendor: str | None = None
    core_count: Count | None = None
    clock_hz: Pos | None = None
    device_preset: str | None = None
    device_recognised_by: str | None = None  # "name" or "stats"
    device_unrecognised: str | None = None
    # A CPU run: whether jax's CPU client ran each call on a worker thread (asynchronous
    # dispatch) or on the calling thread (roofline_report.observe.cpu_dispatch); None: not
    # recorded (another backend, or a run saved before it was).
    cpu_async_dispatch: bool | None = None
