"""The results document, version 3: observations only, as closed typed records (no jax).

results.json is what a run observed and the inputs it ran with: the options, the assumed budgets
it was given, the environment, the compiled programs' facts (operations, our HLO count, XLA's cost
and memory analyses), NumPy checks, timing samples, per-kernel samples from profiler traces,
ceiling measurements, the lab's raw measurements and the sharded programs' collectives. Nothing
derived from them is stored: statistics (medians, quartiles, the judgement "unstable"),
rooflines, predictions, reconciliations, verdicts, exercises and every sentence are computed when
the run is rendered (``roofline_report.analysis``), so a saved run re-renders under other budgets
and a fix to the model reaches old runs.

Version 3 differs from version 2 in what is kept of a measurement: timings keep their per-call
samples (``per_call_s``) and no statistics; per-kernel times keep one sample per traced call of
each kernel's busy time (the events' own durations) and of its launch-to-completion time; every
record is closed (an unknown key is refused with its key path). A version-2 file is converted on
reading (:mod:`roofline_report.results.convert`).

The classes are pydantic models: pydantic checks every field of a nested document in one pass and
names the key path of the first problem, which is what a hand-edited or truncated file needs, and
a hand-written validator of this many records would be longer than the records themselves.
Numbers are checked strictly (no "1" for 1, no true for 1); times and byte counts cannot be
negative; a record that was not available is ``{"available": false, "reason": ...}``.

The records live in modules by part: :mod:`~roofline_report.results.schema_base` (record kinds,
number types, a timing), :mod:`~roofline_report.results.schema_run` (the run's inputs),
:mod:`~roofline_report.results.schema_ceilings`, :mod:`~roofline_report.results.schema_workloads`,
:mod:`~roofline_report.results.schema_kernels`, :mod:`~roofline_report.results.schema_traces`,
:mod:`~roofline_report.results.schema_lab` and :mod:`~roofline_report.results.schema_sharding`.
This module is their public face: it holds :class:`Results` (the whole document) and re-exports
every record, so ``from roofline_report.results.schema import X`` names any of them.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import model_validator

from roofline_report.results.schema_base import (
    Count,
    NonNeg,
    Pos,
    Record,
    Timing,
    Unavailable,
    available_tag,
    maybe,
)
from roofline_report.results.schema_ceilings import (
    BandwidthCeiling,
    BufferDispatch,
    CacheLevel,
    Ceilings,
    CeilingsOrigin,
    ComputeCeiling,
    DispatchCeiling,
    DispatchCheck,
    LaunchCeiling,
    LoadReading,
    MatmulSize,
    MemoryCheck,
    MemoryCheckFailed,
    PageFaultCeiling,
    RateCeiling,
    RateSize,
    SpeedCheck,
    SplitLaunchCeiling,
    SweepBandwidth,
    SweepKernel,
    WorkingSetPlan,
    WorkingSetSweep,
)
from roofline_report.results.schema_kernels import (
    Compiled,
    CompiledCollective,
    CompiledCollectiveArray,
    CompiledCollectiveLoop,
    CountedLoop,
    CustomCall,
    FusionCounts,
    HloCount,
    JaxRoofline,
    KernelInventory,
    KernelRecord,
    KernelTime,
    KernelTiming,
    TraceCall,
    WhileLoop,
)
from roofline_report.results.schema_lab import (
    Bf16Pair,
    DoubledTraffic,
    Fusion,
    Inventory,
    Lab,
    LabExperiments,
    LabPlan,
    MaybeTiming,
    Scan,
    Sweep1D,
)
from roofline_report.results.schema_run import (
    MEASURED_AT_PATTERN,
    Assumptions,
    Environment,
    Generator,
    Options,
)
from roofline_report.results.schema_sharding import (
    CollectiveArray,
    ExpectedCollective,
    ExpectedStepCollective,
    ShardedCollective,
    ShardedWorkload,
    Sharding,
)
from roofline_report.results.schema_traces import (
    DeviceTimeline,
    LaneTiming,
    TracedProgram,
    TraceHost,
    TraceModule,
    TraceSource,
    UnclaimedEvents,
)
from roofline_report.results.schema_workloads import (
    Analytic,
    Arg,
    ArgumentLeaf,
    ArgumentNode,
    ArgumentTree,
    AsWritten,
    Check,
    HostDispatch,
    Lowering,
    LoweringFailed,
    MemoryStats,
    Sweep,
    SweepPoint,
    Workload,
    XlaCost,
)

__all__ = [
    "MEASURED_AT_PATTERN",
    "SCHEMA_VERSION",
    "Analytic",
    "Arg",
    "ArgumentLeaf",
    "ArgumentNode",
    "ArgumentTree",
    "AsWritten",
    "Assumptions",
    "BandwidthCeiling",
    "Bf16Pair",
    "BufferDispatch",
    "CacheLevel",
    "Ceilings",
    "CeilingsOrigin",
    "Check",
    "CollectiveArray",
    "Compiled",
    "CompiledCollective",
    "CompiledCollectiveArray",
    "CompiledCollectiveLoop",
    "ComputeCeiling",
    "Count",
    "CountedLoop",
    "CustomCall",
    "DeviceTimeline",
    "DispatchCeiling",
    "DispatchCheck",
    "DoubledTraffic",
    "Environment",
    "ExpectedCollective",
    "ExpectedStepCollective",
    "Fusion",
    "FusionCounts",
    "Generator",
    "HloCount",
    "HostDispatch",
    "Inventory",
    "JaxRoofline",
    "KernelInventory",
    "KernelRecord",
    "KernelTime",
    "KernelTiming",
    "Lab",
    "LabExperiments",
    "LabPlan",
    "LaneTiming",
    "LaunchCeiling",
    "LoadReading",
    "Lowering",
    "LoweringFailed",
    "MatmulSize",
    "MaybeTiming",
    "MemoryCheck",
    "MemoryCheckFailed",
    "MemoryStats",
    "NonNeg",
    "Options",
    "PageFaultCeiling",
    "Pos",
    "RateCeiling",
    "RateSize",
    "Record",
    "Results",
    "Scan",
    "ShardedCollective",
    "ShardedWorkload",
    "Sharding",
    "Skip",
    "SpeedCheck",
    "SplitLaunchCeiling",
    "Sweep",
    "Sweep1D",
    "SweepBandwidth",
    "SweepKernel",
    "SweepPoint",
    "Timing",
    "TraceCall",
    "TraceHost",
    "TraceModule",
    "TraceSource",
    "TracedProgram",
    "Unavailable",
    "UnclaimedEvents",
    "WhileLoop",
    "WorkingSetPlan",
    "WorkingSetSweep",
    "Workload",
    "XlaCost",
    "available_tag",
    "maybe",
]

SCHEMA_VERSION = 3


class Skip(Record):
    what: str
    reason: str


# ----------------------------------------------------------------------------- the document


class Results(Record):
    """The whole results.json."""

    schema_version: Literal[3]
    generator: Generator
    options: Options
    assumptions: Assumptions
    environment: Environment
    ceilings: maybe(Ceilings)  # type: ignore[valid-type]
    workloads: list[Workload]
    sweeps: list[Sweep]
    lab: maybe(Lab)  # type: ignore[valid-type]
    sharding: maybe(Sharding)  # type: ignore[valid-type]
    skipped: list[Skip]
    trace: TraceSource | None = None  # read from a profiler trace (roofline-report profile)
    # The float32 matmul ceiling timed again after the programs (None: not checked, files
    # written before the check, profiles read from a trace).
    speed_check: maybe(SpeedCheck) | None = None  # type: ignore[valid-type]

    @model_validator(mode="after")
    def _unique_names(self) -> Results:
        seen: dict[str, int] = {}
        for i, w in enumerate(self.workloads):
            if w.name in seen:
                shown = json.dumps(w.name, ensure_ascii=False)
                shown = shown if len(shown) <= 60 else shown[:56] + '..."'
                raise ValueError(f"workloads[{i}].name {shown} is also the name of "
                                 f"workloads[{seen[w.name]}]; workload names are unique in a run")
            seen[w.name] = i
        return self
