"""The sharded workloads as the analysis hands them to the report (no jax): typed records,
built by :func:`roofline_report.analysis.study.comm_study` and
:func:`~roofline_report.analysis.study.step_study` from the run's sharding record
(:class:`roofline_report.results.schema_sharding.Sharding`).

* :class:`StepBounds` (from :mod:`~roofline_report.analysis.comm_step`): T_math, T_mem and the
  alpha-beta T_comm of one step per device, and the bounds they set
  (:func:`~roofline_report.analysis.comm_step.step_bounds`), with :class:`LevelTotals` per
  network level.
* :class:`CommStudy`: each workload's bounds under the render's budgets
  (:class:`WorkloadBounds`) and the built-in matmul's analytic :class:`ScalingSeries` (from
  :mod:`~roofline_report.analysis.comm`).
* :class:`StepStudy`: each step under the alpha-beta model (:class:`StepRow`), its collectives
  priced (:class:`StepCollective`, :class:`CollectiveCost` from
  :mod:`~roofline_report.analysis.comm_network`), ours beside
  jax.experimental.roofline, the emulated timings and the :class:`Projection` to a chip preset.
* :class:`ShardingStudy`: the run's sharding record and the two studies, or why there is none.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline_report.analysis.comm import ScalingSeries, SeriesColumns
from roofline_report.analysis.comm_network import (
    CollectiveCost,
    Level,
    PricedLevel,
    RejectedAlgorithm,
)
from roofline_report.analysis.comm_step import LevelTotals, StepBounds
from roofline_report.results.schema_sharding import ShardedCollective, Sharding

__all__ = [
    "CollectiveCost",
    "CommBudget",
    "CommStudy",
    "Crossover",
    "EmulatedTiming",
    "JaxRooflineCompared",
    "JaxRooflineUnavailable",
    "LevelTotals",
    "NotProjected",
    "PricedLevel",
    "ProjectedStep",
    "Projection",
    "ProjectionKinds",
    "ProjectionLink",
    "RejectedAlgorithm",
    "ScalingSeries",
    "SeriesColumns",
    "ShardingStudy",
    "StepBounds",
    "StepCollective",
    "StepRow",
    "StepStudy",
    "WorkloadBatch",
    "WorkloadBounds",
]


@dataclass(frozen=True, slots=True)
class CommBudget:
    """The budgets a study prices the sharded workloads at: peak FLOP/s, memory and
    interconnect bandwidth (bytes/s), the latency of one collective step (seconds)."""

    peak: float
    bandwidth: float
    interconnect: float
    latency: float


# --- the communication roofline under the render's budgets ------------------------------------


@dataclass(frozen=True, slots=True)
class WorkloadBounds:
    """One sharded workload's bounds: ``index`` its place among the run's workloads (several
    user workloads share the sharding "user")."""

    index: int
    name: str
    sharding: str
    bounds: StepBounds


@dataclass(frozen=True, slots=True)
class CommStudy:
    """Per-device T_math, T_mem and T_comm of each sharded workload under the render's
    budgets, and the built-in matmul's scaling (None without one)."""

    kind: str
    source: str
    budget: CommBudget
    bounds: tuple[WorkloadBounds, ...]
    series: ScalingSeries | None

    def of_workload(self, index: int) -> WorkloadBounds | None:
        """The bounds of the run's ``index``-th workload; None when it has none."""
        return next((b for b in self.bounds if b.index == index), None)


# --- the alpha-beta model of the steps --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorkloadBatch:
    """A sharded workload's batch: global, per device, and whether its collectives' arrays
    grow with it."""

    global_batch: int
    per_device: int
    comm_scales: bool


@dataclass(frozen=True, slots=True)
class StepRow:
    """One sharded workload under the alpha-beta model on the render's interconnect."""

    index: int
    name: str
    sharding: str
    step: bool  # a whole training step
    mesh: str
    devices: int
    batch: WorkloadBatch | None
    dtype: str
    critical_batch: float | None
    forward_flops: float | None
    critical_batch_book: float | None  # as the scaling book states it
    bounds: StepBounds


@dataclass(frozen=True, slots=True)
class StepCollective:
    """One collective instruction of a workload (a combined one once), as the sharded child
    read it, priced on the render's interconnect (None where it has no formula, size or
    group, or the network cannot carry it)."""

    workload: str
    collective: ShardedCollective  # the record as the run wrote it (combined)
    priced: CollectiveCost | None
    unit_axes: tuple[str, ...]  # mesh axes of size 1
    device_ids: tuple[int, ...] | None  # the mesh's devices in order, where the run kept them


@dataclass(frozen=True, slots=True)
class JaxRooflineCompared:
    """Our counts of a workload beside jax.experimental.roofline's."""

    name: str
    ours_bytes: int | None
    jax_bytes: float
    ours_steps: int
    jax_latency: float
    ours_flops: float
    jax_flops: float | None
    in_loops: bool  # a collective runs in a loop
    collectives: int  # runs of collectives per step


@dataclass(frozen=True, slots=True)
class JaxRooflineUnavailable:
    """A workload given to jax.experimental.roofline that it could not estimate, and why."""

    name: str
    reason: str


@dataclass(frozen=True, slots=True)
class EmulatedTiming:
    """A workload timed on emulated devices, beside its prediction run one device after
    another on the measured roofs."""

    name: str
    devices: int
    measured: float
    serialised: float
    ratio: float | None
    t_math_measured_peak: float


@dataclass(frozen=True, slots=True)
class ProjectionKinds:
    """The kind of each number of a projected step: spec-sheet figures, except what an
    assumed latency enters."""

    t_math: str
    t_mem: str
    t_comm_bandwidth: str
    t_comm_latency: str
    t_comm: str
    lower_bound: str
    upper_bound: str
    critical_batch: str


@dataclass(frozen=True, slots=True)
class ProjectedStep:
    """A training step carried to ``devices`` devices of the preset (weak scaling)."""

    name: str
    devices: int
    comm_scales: bool
    bounds: StepBounds
    batch_factor: float
    hbm_shards: float
    flags: tuple[str, ...]
    link: str
    binding_level: str | None
    global_batch: int
    peak: float
    peak_dtype: str
    critical_batch: float | None
    critical_per_device: float | None
    critical_per_device_book: float | None
    kinds: ProjectionKinds


@dataclass(frozen=True, slots=True)
class NotProjected:
    """A training step not carried to ``devices`` devices, and why."""

    name: str
    devices: int
    comm_scales: bool
    reason: str


@dataclass(frozen=True, slots=True)
class Crossover:
    """The per-device batch above which a projected step stays compute-bound, on its largest
    projection inside the first level or across the network."""

    name: str
    devices: int
    link: str
    per_device: float
    kind: str
    per_device_book: float | None
    book_kind: str
    binding_level: str | None


@dataclass(frozen=True, slots=True)
class ProjectionLink:
    """A link the projection prices, as the page prints it."""

    name: str
    egress: float  # bytes/s one chip sends
    link_bandwidth: float | None  # one torus link's, one way; None on a switch
    latency: float | None
    latency_note: str


@dataclass(frozen=True, slots=True)
class Projection:
    """The training steps carried to more devices of a chip preset: spec-sheet figures, an
    assumed latency."""

    kind: str
    latency_kind: str
    preset: str
    peak: float
    peak_dtype: str
    hbm_bandwidth: float
    domain: int | None
    torus: tuple[int, ...]
    links: tuple[ProjectionLink, ...]
    network: tuple[Level, ...]
    devices: tuple[int, ...]
    rows: tuple[ProjectedStep | NotProjected, ...]
    crossovers: tuple[Crossover, ...]


@dataclass(frozen=True, slots=True)
class StepStudy:
    """The alpha-beta view of every sharded workload under the render's budgets, and the
    training steps projected on a chip preset."""

    kind: str
    source: str
    budget: CommBudget
    algorithms: tuple[str, ...]  # what each algorithm does, in words
    rows: tuple[StepRow, ...]
    collectives: tuple[StepCollective, ...]
    jax_roofline: tuple[JaxRooflineCompared | JaxRooflineUnavailable, ...]
    emulated: tuple[EmulatedTiming, ...]
    projection: Projection


@dataclass(frozen=True, slots=True)
class ShardingStudy:
    """The run's sharded workloads with the communication and step models, or why the run has
    none (``observed`` None)."""

    observed: Sharding | None
    reason: str = ""
    model: CommStudy | None = None
    steps: StepStudy | None = None

    @property
    def available(self) -> bool:
        return self.observed is not None
