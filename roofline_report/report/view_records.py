"""The typed records of the report's view model: display strings and
:class:`~roofline_report.report.format.Num` values, built by ``report/views.py`` from the analysis
and read by the section builders (``report/sections.py`` and its neighbours).

Each record is frozen, its fields typed, so that a field renamed on one side is a type error on
the other rather than a failure when a page renders. The summary, a program, its kernels, the
programs on the roofline, the sharded workloads and a trace are the records of
``report/summary_view.py``, ``report/program_view.py``, ``report/kernel_view.py``,
``report/programs_roofline.py``, ``report/sharding_view.py`` and ``report/trace_view.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from roofline_report.report import figures as figs
from roofline_report.report.blocks import Text
from roofline_report.report.format import Num
from roofline_report.report.kernel_view import KernelView
from roofline_report.report.program_view import ProgramView, TimingView
from roofline_report.report.programs_roofline import PlacementRow
from roofline_report.report.sharding_view import ShardingUnavailable, ShardingView
from roofline_report.report.summary_view import SummaryView
from roofline_report.report.trace_view import TraceView
from roofline_report.results import schema

# --- the page's frame ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KindView:
    """One kind of number as the page's legend shows it."""

    value: str
    label: str
    marker: str
    description: str


@dataclass(frozen=True, slots=True)
class Budgets:
    """The assumed budgets of the hypothetical model."""

    peak: Num
    bandwidth: Num
    ridge: Num
    source: str


# --- the seed -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SeedCheck:
    """The seed's result checked against NumPy."""

    available: bool
    reason: str
    passed: bool
    max_abs: Num
    max_rel: Num
    tolerance: str
    note: str


@dataclass(frozen=True, slots=True)
class SeedView:
    """The seed workload as lowered and compiled."""

    args: str
    lowering_available: bool
    lowering_reason: str
    ops: list[tuple[str, int]]
    required: list[tuple[str, bool]]
    stablehlo_text: str
    compiled_text: str
    lower_s: Num
    compile_s: Num
    check: SeedCheck
    xla_available: bool
    xla_reason: str
    xla: list[tuple[str, Num]]
    xla_raw: list[tuple[str, Num]]
    memory_available: bool
    memory: list[tuple[str, Num]]


@dataclass(frozen=True, slots=True)
class ModelRow:
    n: str
    flops: Num
    bytes: Num
    intensity: Num
    memory_ceiling: Num
    ceiling: Num
    bound: str


@dataclass(frozen=True, slots=True)
class ModelView:
    """The hypothetical model of the seed's square matmuls."""

    rows: list[ModelRow]
    ridge: Num
    ridge_size: tuple[str | Num, ...]


@dataclass(frozen=True, slots=True)
class ExperimentRow:
    n: str
    intensity: Num
    reduced: Num
    ceiling: Num
    revised: Num
    ratio: Num


@dataclass(frozen=True, slots=True)
class ExperimentView:
    """The seed's experiment: the assumed data movement doubled."""

    rows: list[ExperimentRow]


@dataclass(frozen=True, slots=True)
class ExerciseView:
    """The seed's exercise and its solution."""

    shapes: str
    itemsize: str
    flops: Num
    bytes: Num
    intensity: Num
    fraction: str
    bw_times_intensity: Num
    peak: Num
    bandwidth: Num
    bound: str
    relation: str
    m: str
    k: str
    n: str


# --- measured on this machine -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Achieved:
    """The seed's achieved rates."""

    flops_per_s: Num
    bytes_per_s: Num


@dataclass(frozen=True, slots=True)
class CeilingRow:
    group: str
    name: str
    value: Num
    available: bool
    reason: str
    unstable: bool


@dataclass(frozen=True, slots=True)
class BySize:
    """A compute roof measured at several product sizes: (flops, rate measured, rate held to)
    at each."""

    name: str
    points: list[tuple[Num, Num, Num]]


@dataclass(frozen=True, slots=True)
class SpeedCheck:
    """A ceiling timed again after the programs."""

    probe: str
    before: Num
    after: Num
    ratio: Num
    drifted: bool


@dataclass(frozen=True, slots=True)
class LevelRow:
    """A memory level found in the working-set sweep."""

    level: str
    kernel: str
    range: str
    value: Num
    rule: str
    unstable: str


@dataclass(frozen=True, slots=True)
class RateRow:
    """A measured operation rate."""

    name: str
    value: Num
    roof: bool
    reason: str
    available: bool
    unstable: bool
    sizes: str
    # Measured again on one worker thread, beside a rate of its operation on more; measured
    # with its operand in main memory (a transposing copy's).
    one_thread: bool = False
    from_memory: bool = False


@dataclass(frozen=True, slots=True)
class MeasuredView:
    """The measured machine: the seed timed, the ceilings, levels and rates, every timed
    program placed. The ceilings' fields are empty where the run measured none."""

    timing: TimingView | None
    timing_reason: str
    achieved: Achieved | None
    seed_binding: str
    ceilings_reason: str
    placement: list[PlacementRow]
    model_text: str
    placement_roofs: str
    accuracy: tuple[str | Num, ...] = ()
    ceilings: list[CeilingRow] | None = None
    by_size: list[BySize] = field(default_factory=list)
    ceilings_origin: str = ""
    ceilings_notes: tuple[str, ...] = ()
    ceilings_conditions: Text = ()
    speed_checks: list[SpeedCheck] = field(default_factory=list)
    levels: list[LevelRow] = field(default_factory=list)
    levels_reason: str = ""
    rates: list[RateRow] = field(default_factory=list)
    caches: list[str] = field(default_factory=list)
    level_rule: str = ""


# --- the catalog and the accounting -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CatalogRow:
    """One workload of the catalog."""

    title: str
    dtype: str
    args: str
    flops: Num
    bytes: Num
    intensity: Num
    check: str
    check_max_abs: Num
    check_max_rel: Num
    check_tolerance: str
    check_note: str
    time: Num
    unstable: bool
    achieved: Num
    user: bool
    anchor: str


@dataclass(frozen=True, slots=True)
class AccountingRow:
    """One quantity of a program counted three ways (five, with the kernel sum and jax's)."""

    quantity: str
    analytic: Num
    ours: Num
    xla: Num
    kernels: Num
    jax: Num
    agree: bool
    flags: list[tuple[str, Text]]


@dataclass(frozen=True, slots=True)
class AccountingView:
    """A program's three-way accounting; no rows and a reason where it has none."""

    title: str
    rows: list[AccountingRow]
    reason: str
    efficiency: Num | None
    program: str = ""
    extra: bool = False


# --- the lab, the sweeps, the spec sheet ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LabExercise:
    id: str
    question: str
    solution: list[str]


@dataclass(frozen=True, slots=True)
class LabRow:
    """One experiment of the lab notebook."""

    id: str
    title: str
    hypothesis: str
    prediction: Num
    prediction_note: str
    measurement: Num
    measurement_note: str
    status: str
    verdict: str
    figure: str
    exercises: list[LabExercise]


@dataclass(frozen=True, slots=True)
class LabView:
    rows: list[LabRow]
    exercises: list[LabExercise]
    held: str
    count: str
    reason: str


@dataclass(frozen=True, slots=True)
class SweepRow:
    title: str
    points: str
    predicted: str
    observed: str
    error: Num


@dataclass(frozen=True, slots=True)
class SweepPoint:
    title: str
    size: str
    predicted: Num
    measured: Num
    miss: Num
    bound: str
    why: str


@dataclass(frozen=True, slots=True)
class SweepsView:
    """The size sweeps; not available, with the reason, where the run has none."""

    available: bool
    reason: str = ""
    rows: list[SweepRow] = field(default_factory=list)
    point_rows: list[SweepPoint] = field(default_factory=list)
    points: str = ""
    median_error: Num | None = None


@dataclass(frozen=True, slots=True)
class PresetPeak:
    dtype: str
    value: Num
    ridge: Num
    note: str


@dataclass(frozen=True, slots=True)
class PresetPlaced:
    """A program placed on the spec sheet."""

    title: str
    intensity: Num
    roof_name: str
    bound: str
    roofline: Num
    time: Num


@dataclass(frozen=True, slots=True)
class PresetView:
    """A chip's spec sheet and the programs placed on it."""

    name: str
    chosen: str
    peaks: list[PresetPeak]
    hbm: Num
    interconnect: Num
    interconnect_name: str
    sources: list[tuple[str, str]]
    notes: str
    roof_label: str
    float32_roof: str
    placed: list[PresetPlaced]
    launch: Num | None
    launch_note: str
    launch_sources: list[tuple[str, str]]
    launch_binds: str
    kernels_on_sheet: bool


# --- the whole page ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ViewModel:
    """Everything the report shows, as display strings and figure outputs."""

    generator: schema.Generator
    env: list[tuple[str, str]]
    machine: str
    kinds: list[KindView]
    budgets: Budgets
    seed: SeedView | None
    model: ModelView
    experiment: ExperimentView
    exercise: ExerciseView
    measured: MeasuredView
    roof_warning: Text
    run_note: str
    catalog: list[CatalogRow]
    reconciliation: list[AccountingView]
    sharding: ShardingView | ShardingUnavailable
    lab: LabView
    sweeps: SweepsView
    preset: PresetView | None
    figures: dict[str, figs.FigureOut]
    skipped: list[dict[str, str]]
    teaching: bool
    programs: list[ProgramView]
    trace: TraceView | None
    kernels: list[KernelView]
    summary: SummaryView

