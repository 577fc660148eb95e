"""Traces read elsewhere in the results document (:mod:`roofline_report.results.schema`): where
a workload read from a profiler trace comes from (``roofline-report profile``), and the run,
hosts and programs of that trace.
"""

from __future__ import annotations

from typing import Literal

from roofline_report.results.schema_base import (
    Count,
    NonNeg,
    Record,
)
from roofline_report.results.schema_kernels import KernelTiming


class LaneTiming(Record):
    """One device of a traced host: its per-kernel samples of the program, as a measured run's
    ``kernel_timing`` records them (statistics are derived when rendering). The device the
    workload's own per-kernel times come from (the program's ``device``) leaves ``timing``
    out: its samples are the workload's ``kernel_timing``, stored once (at 170,000 traced
    calls they are half of the file)."""

    device: str  # "GPU:0", "TPU:0", "CPU:0" (an emulated or real device of the host)
    timing: KernelTiming | None = None


class UnclaimedEvents(Record):
    """Device events of one name that no HLO op claims, while a traced program ran."""

    name: str
    events: Count
    seconds: NonNeg
    like: str | None = None


class TracedProgram(Record):
    """Where a workload read from a profiler trace comes from (``roofline-report profile``):
    the host's trace file, the device whose events give the per-kernel times, whether times
    are per step (step markers) or per call, each step marker's duration, every device of the
    host side by side, and whether the trace held the program's HLO (else its work is not
    counted)."""

    host: str
    file: str
    device: str
    program_id: int | None
    per: Literal["step", "call"]
    steps_s: list[NonNeg] = []
    devices: list[LaneTiming]
    hlo: bool
    notes: list[str] = []
    # Events of that device no HLO op claims, while the program ran (by name; ``like``: the
    # program's kernel whose name it looks like, where one does).
    unclaimed: list[UnclaimedEvents] = []
    # The HLO ops that ran as several device kernels on that device, with their kernels.
    device_kernels: dict[str, list[str]] = {}


class TraceModule(Record):
    """A program whose kernels ran in the trace: kernel events and their summed time over the
    whole trace (every host and device), and whether the trace holds its HLO."""

    name: str
    program_ids: list[Count]
    events: Count
    seconds: NonNeg
    hlo: bool


class TraceHost(Record):
    """One host's trace file: its size, the devices with kernel events, the profiler's
    versions and the errors and warnings it recorded."""

    name: str
    file: str
    bytes: Count
    devices: list[str]
    jax: str | None = None
    jaxlib: str | None = None
    errors: list[str] = []
    warnings: list[str] = []


class DeviceTimeline(Record):
    """Where one device's time went over the whole trace (seconds): computation,
    communication and memory copies (each with the part nothing else overlapped), and idle."""

    host: str
    device: str
    total_s: NonNeg
    computation_s: NonNeg
    communication_s: NonNeg
    exposed_communication_s: NonNeg
    memcpy_s: NonNeg
    exposed_memcpy_s: NonNeg
    idle_s: NonNeg


class TraceSource(Record):
    """A results document read from a profiler trace captured anywhere (``roofline-report
    profile LOGDIR``): the run read, its hosts, the program chosen and how, every program seen,
    the ceilings file given (its name), and what the reader noted (fields of a newer profiler
    it skipped, hosts without the program)."""

    run: str
    runs: list[str]
    hosts: list[TraceHost]
    module: str
    module_choice: Literal["most kernel time", "by name"]
    modules: list[TraceModule]
    ceilings_file: str | None = None
    unknown_fields: dict[str, list[Count]] = {}
    notes: list[str] = []
    timeline: list[DeviceTimeline] = []  # each device of each host, over the whole trace
