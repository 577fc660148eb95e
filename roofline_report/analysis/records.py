"""What the analysis hands the report (no jax): frozen, typed records, one per thing the report
shows, each number computed once and carrying its kind.

* :class:`Program`: one program (a catalog workload, the user's, or one read from a trace): its
  timing statistics, counted work and traffic, its place on the roofline, its prediction, its
  share of the hardware roof, its kernels (a
  :class:`~roofline_report.analysis.kernel_records.KernelTable` of
  :class:`~roofline_report.analysis.kernel_records.KernelRow`) and what could save it the most
  time (its levers, :mod:`~roofline_report.analysis.kernel_records` too).
* :class:`SweepPoint` and :class:`Sweep`: a workload at growing sizes, each point predicted.
* :class:`Accuracy`: how well the model predicted this run.
* :class:`Roofs`, :class:`Budgets`, :class:`ChosenPreset`: the roofs drawn and what they rest on.
* :class:`Experiment` (with its :class:`Verdict`), :class:`Exercise`: the lab's experiments
  and the seed's exercise.
* :class:`Analysis`: all of it, with the roofs, the seed's teaching studies, the lab's
  experiments and the sharded workloads.

Two numbers are kept apart on every kernel and program, each its own field: the **share of the
hardware roof** (:mod:`~roofline_report.analysis.hardware_roof`: the achieved rate ÷ the roof
at its intensity, headroom) and the **miss** (:mod:`~roofline_report.analysis.miss`: the
model's predicted time against the measured one, its accuracy). The binding is the largest
term of the prediction (its group's total for a kernel).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from roofline_report.analysis.ceilings_origin import CeilingsOrigin
from roofline_report.analysis.exercise_records import Answer
from roofline_report.analysis.hardware_roof import (
    HardwareRoof,
    above,
    assumed_share,
    hardware_share,
)
from roofline_report.analysis.kernel_records import (
    KernelTable,
    Lever,
)
from roofline_report.analysis.levels import Level
from roofline_report.analysis.measuring_load import Load
from roofline_report.analysis.miss import Miss
from roofline_report.analysis.predict import Prediction
from roofline_report.analysis.reconcile_records import Reconciliation
from roofline_report.analysis.roof_check_records import RoofCheck
from roofline_report.analysis.roofs import RoofSet
from roofline_report.analysis.seed_records import SeedStudy
from roofline_report.analysis.sharding_records import ShardingStudy
from roofline_report.analysis.speed_drift import Drift, SpeedChecks
from roofline_report.analysis.stats import Stats, median
from roofline_report.backends import Backend
from roofline_report.errors import InputError
from roofline_report.kinds import Kind, Quantity
from roofline_report.results import schema
from roofline_report.results.schema_run import (
    DEFAULT_INTERCONNECT,
    SEED_BANDWIDTH,
    SEED_PEAK_FLOPS,
)

if TYPE_CHECKING:
    from roofline_report.preset_records import Preset

__all__ = [
    "Accuracy",
    "Analysis",
    "Budgets",
    "ChosenPreset",
    "Exercise",
    "Experiment",
    "FigureSeries",
    "HypotheticalBudgets",
    "Placement",
    "Program",
    "Roofs",
    "Sweep",
    "SweepFigure",
    "SweepPoint",
    "Verdict",
]
@dataclass(frozen=True, slots=True)
class Placement:
    """A program on a roofline: its compiled-program intensity (counted flops over the bytes
    its kernels touch), the rate it achieved and the rate its prediction implies."""

    intensity: float
    achieved: float | None
    predicted_rate: float | None
    roofs: RoofSet


@dataclass(frozen=True, slots=True)
class Program:
    """One program of the run and everything derived from its observations."""

    name: str
    title: str
    dtype: str
    user: bool
    timing: Stats | None
    timing_reason: str
    flops: float | None  # counted (the kernels' sum, else our count), per call
    bytes: float | None  # the bytes its kernels touch, per call (else the minimum traffic)
    bytes_basis: str
    minimum_bytes: float | None  # the analytic minimum, or every argument and result once
    minimum_basis: str
    prediction: Prediction | None
    miss: Miss | None
    why: str
    kernels: KernelTable | None
    workload: schema.Workload  # the workload's record in results.json
    reconciliation: Reconciliation | None = None
    spec_sheet: SpecPlacement | None = None
    missing_ops: tuple[str, ...] = ()  # operations the workload requires that its lowering lacks
    # Options of the user's jit its compiled program was timed without (jax's names, or
    # "jit_options" when jax did not expose them): its time is not that of the program as written.
    timed_without: tuple[str, ...] = ()
    # The roof at its intensity (its kernels' parts summed); None where it cannot be placed.
    hardware: HardwareRoof | None = None
    # What could save it the most time, the largest saving first (:mod:`.levers`).
    levers: tuple[Lever, ...] = ()
    # The machine's load while it was timed (None: not read).
    timing_load: Load | None = None

    @property
    def seconds(self) -> float | None:
        return self.timing.own if self.timing is not None else None

    @property
    def timed_under_load(self) -> float | None:
        """Other processes' share of the machine's cores while it was timed, where it was
        under load (:data:`~roofline_report.analysis.measuring_load.LOADED_SHARE` or more);
        None where it was not, or the load is not known."""
        load = self.timing_load
        return load.others_share if load is not None and load.loaded else None

    @property
    def intensity(self) -> float | None:
        if self.flops is None or not self.bytes:
            return None
        return self.flops / self.bytes

    @property
    def achieved(self) -> float | None:
        """Measured FLOP/s of the counted work."""
        if self.flops is None or not self.seconds:
            return None
        return self.flops / self.seconds

    @property
    def share_of_hardware_roof(self) -> float | None:
        """Achieved rate ÷ the hardware roof at its intensity: headroom (None on assumed
        budgets: :attr:`share_of_assumed_roof`)."""
        return hardware_share(self.hardware, self.seconds)

    @property
    def share_of_assumed_roof(self) -> float | None:
        """The same share on the assumed budgets, where no roof was measured: not headroom."""
        return assumed_share(self.hardware, self.seconds)

    @property
    def above_roof(self) -> str | None:
        """The roofs it ran above, by name (its share over 100%); None at or below them."""
        return above(self.hardware, self.seconds)

    @property
    def roof(self) -> tuple[float, str] | None:
        """The rate the prediction implies: the rate the model holds the program to."""
        return self.prediction.roof_rate if self.prediction is not None else None

    @property
    def binding(self) -> str:
        return self.prediction.binding.label if self.prediction is not None else "unknown"

    def placement(self, roofs: RoofSet) -> Placement | None:
        """Where it sits on ``roofs``' roofline (its prediction's rate when priced on them)."""
        x = self.intensity
        if x is None:
            return None
        rate = self.roof
        predicted = rate[0] if rate is not None and rate[1] == "FLOP/s" else None
        return Placement(x, self.achieved, predicted, roofs)


@dataclass(frozen=True, slots=True)
class SpecPlacement:
    """A program on a chip's spec sheet: the roofline's time max(flops ÷ the dtype's compute
    roof, bytes ÷ HBM), the predicted time (no less than one launch floor), what binds, and
    the kind of the predicted time (the launch floor's where it binds: an assumption)."""

    roof_name: str
    roofline_s: float
    predicted_s: float
    binding: str
    kind: Kind


@dataclass(frozen=True, slots=True)
class SweepPoint:
    dims: Mapping[str, int]
    flops: float
    bytes: float
    measured: float
    prediction: Prediction | None
    observed_bound: str
    why: str

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else 0.0

    @property
    def achieved(self) -> float:
        return self.flops / self.measured

    @property
    def miss(self) -> Miss | None:
        from roofline_report.analysis.miss import miss

        return miss(self.prediction.seconds if self.prediction else None, self.measured)

    @property
    def predicted_bound(self) -> str:
        return self.prediction.binding.group if self.prediction is not None else "unknown"


@dataclass(frozen=True, slots=True)
class Sweep:
    name: str
    title: str
    dtype: str
    parameters: tuple[str, ...]
    points: tuple[SweepPoint, ...]
    predicted_crossing: Mapping[str, int] | None
    observed_crossing: Mapping[str, int] | None

    @property
    def median_error(self) -> float | None:

        errors = [m.error for p in self.points if (m := p.miss) is not None]
        return median(errors)


@dataclass(frozen=True, slots=True)
class Accuracy:
    """How well the model predicted this run: errors of programs and sweep points, and of the
    kernels of at least :data:`SIGNIFICANT_KERNEL_S`."""

    errors: tuple[float, ...]
    kernel_errors: tuple[float, ...]

    @property
    def median(self) -> float | None:
        from roofline_report.analysis.stats import error_summary

        return error_summary(self.errors)[0]

    @property
    def p90(self) -> float | None:
        from roofline_report.analysis.stats import error_summary

        return error_summary(self.errors)[1]

    @property
    def kernel_median(self) -> float | None:
        from roofline_report.analysis.stats import error_summary

        return error_summary(self.kernel_errors)[0]


# The roofs of a profile whose device no preset describes and whose ceilings were not given:
# none. Kernels get achieved rates only, no prediction and no share of a roof.
NO_ROOF = RoofSet("no roof", Kind.SPEC_SHEET, (), ())


@dataclass(frozen=True, slots=True)
class Assumptions:
    """The hypothetical budgets and chip preset one render uses."""

    peak: float = SEED_PEAK_FLOPS
    bandwidth: float = SEED_BANDWIDTH
    interconnect: float = DEFAULT_INTERCONNECT
    source: str = "the seed's assumed budgets"
    preset: str | None = None  # a preset by name; None: the run's, or matched to the device

    def __post_init__(self) -> None:
        for name in ("peak", "bandwidth", "interconnect"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise InputError(f"the assumed {name} must be a positive number, got {value!r}")


@dataclass(frozen=True, slots=True)
class ChosenPreset:
    """The chip preset a render draws, and how it was chosen ("by name", "recognised by
    stats", "matched to this device")."""

    preset: Preset
    chosen: str

    def to_json(self) -> dict[str, Any]:
        """The preset's published figures, with how it was chosen."""
        return {**self.preset.to_json(), "chosen": self.chosen}


@dataclass(frozen=True, slots=True)
class HypotheticalBudgets:
    """The assumed budgets of a render, each a hypothetical quantity noted with their source,
    and the ridge between them (FLOP/byte)."""

    peak: Quantity
    bandwidth: Quantity
    interconnect: Quantity
    ridge: float
    source: str


@dataclass(frozen=True, slots=True)
class Budgets:
    """The budgets a render states: the assumed ones, and the chip preset drawn (None: none)."""

    hypothetical: HypotheticalBudgets
    preset: ChosenPreset | None = None


@dataclass(frozen=True, slots=True)
class Roofs:
    """The roof sets of one render."""

    hypothetical: RoofSet
    measured: RoofSet | None
    spec_sheet: RoofSet | None
    levels: tuple[Level, ...] = ()  # the memory levels found in the working-set sweep
    preset: ChosenPreset | None = None  # the chip preset drawn, with how it was chosen
    trace: bool = False  # the run was read from a profiler trace captured elsewhere

    @property
    def kernels(self) -> RoofSet:
        """The set kernels and programs are predicted on: the measured roofs; for a profile
        read from a trace without them, the spec sheet of its chip where one is drawn, else
        no roof at all (the assumed budgets describe no device a trace ran on); else the
        assumed budgets."""
        if self.measured is not None:
            return self.measured
        if self.trace:
            if self.spec_sheet is not None and self.spec_sheet.complete:
                return self.spec_sheet
            return NO_ROOF
        return self.hypothetical


@dataclass(frozen=True, slots=True)
class FigureSeries:
    """One line of a lab sweep's figure: its label, its kind, a value per size."""

    label: str
    kind: Kind
    y: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class SweepFigure:
    """A lab experiment's sweep as drawn: the sizes, the axes' labels and each series over
    the sizes."""

    x: tuple[float, ...]
    xlabel: str
    ylabel: str
    series: tuple[FigureSeries, ...]


@dataclass(frozen=True, slots=True)
class Verdict:
    """A lab experiment's measurement judged against its prediction
    (:func:`~roofline_report.analysis.experiments.verdicts.verdict`): ``status`` is "held",
    "failed" or "unavailable"; ``error`` the relative error (linear scale) or the factor (log
    scale), None where unavailable; ``text`` states it (the reason, where unavailable or
    failed)."""

    status: str
    error: float | None
    tolerance: float
    log_scale: bool
    predicted: float | None
    measured: float | None
    text: str


@dataclass(frozen=True, slots=True)
class Experiment:
    """One lab experiment: the model's prediction, the measurement, the verdict, and the
    sweep it drew (None for an experiment of two programs).

    The prediction is of kind predicted whatever roofs it stands on; ``roofs_kind`` keeps
    theirs (measured ceilings or assumed budgets; None where nothing was predicted).
    ``likely_reason`` is '' unless the verdict failed. ``details`` holds what the prediction
    rests on, as plain JSON (the per-kernel model, the budgets, the experiment's own numbers).
    """

    id: str
    title: str
    hypothesis: str
    prediction: Quantity
    measurement: Quantity
    verdict: Verdict
    figure: SweepFigure | None = None
    roofs_kind: Kind | None = None
    likely_reason: str = ""
    details: Mapping[str, object] = field(default_factory=dict)

    @property
    def status(self) -> str:
        """The verdict's status: "held", "failed" or "unavailable"."""
        return self.verdict.status


@dataclass(frozen=True, slots=True)
class Exercise:
    """One exercise: the experiment it follows, its question, the steps of its solution and
    the numbers they state (:mod:`~roofline_report.analysis.exercise_records`)."""

    id: str
    after: str
    question: str
    solution: tuple[str, ...]
    answer: Answer


@dataclass(frozen=True, slots=True)
class Analysis:
    """Everything the report shows, derived from one results document under one set of
    assumptions."""

    assumptions: Assumptions
    backend: Backend
    roofs: Roofs
    programs: tuple[Program, ...]
    sweeps: tuple[Sweep, ...]
    accuracy: Accuracy
    seed: SeedStudy  # the seed's hypothetical model, experiment and exercise
    budgets: Budgets
    experiments: tuple[Experiment, ...]
    exercises: tuple[Exercise, ...]
    sharding: ShardingStudy  # the sharded workloads and their communication models
    skipped: tuple[schema.Skip, ...]  # what the run or this analysis could not do, and why
    run_note: str
    # The typed document analysed (as results.json holds it: roofline_report.results.io.plain
    # of it).
    results: schema.Results = field(repr=False)
    # Where the ceilings came from and their age as of the run (None without ceilings).
    ceilings_origin: CeilingsOrigin | None = None
    # The run's roofs checked against its own programs (None without measured roofs).
    roof_check: RoofCheck | None = None
    # The machine's speed checked after the programs against its ceilings (None: not checked,
    # or the predictions do not rest on the measured ceilings).
    speed_drift: Drift | None = None  # the matmul's check
    speed_checks: SpeedChecks | None = None  # every check of the run (matmul and memory)

    @property
    def accuracy_of_sweeps(self) -> float | None:
        """The median error over every predicted sweep point."""

        return median([m.error for sw in self.sweeps for pt in sw.points
                       if (m := pt.miss) is not None])

    def program(self, name: str) -> Program | None:
        return next((p for p in self.programs if p.name == name), None)
