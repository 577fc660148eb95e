"""The lab notebook (no jax): experiments that state a prediction, test it, and say why it failed.

Each experiment states a hypothesis, the model's prediction (a
:class:`~roofline_report.analysis.seed_model.
Quantity` with its kind), the measurement on this machine (``kind: measured``), and a verdict
computed by :func:`verdict`. When a prediction fails, the likely reason is chosen by code from the
recorded evidence (kernel counts, converts in the HLO, cache size, achieved rates against the
roofs the model used, timing spread), never typed in for a given machine.

Predictions: when :func:`analyse` gets this machine's measured roof set and the lab recorded the
kernel inventory of every program an experiment times, each program's time is the per-kernel
model's (:func:`roofline_report.analysis.predict.predict_from_kernels`, ``kind: measured``); a
ratio is the ratio of those times, a knee the knee of those times over the sweep. Otherwise the
single-roof model predicts on the budgets: this machine's measured ceilings (``kind: measured``)
or the hypothetical ones (``kind: hypothetical``), with closed forms for the knees. The
prediction's note names the model and, for the single-roof one, why the per-kernel model did
not predict.

:func:`exercises` poses one exercise after each group of experiments; every number in it comes
from :mod:`roofline_report.analysis.seed_model`. Everything returned is deterministic: typed
records, an experiment's details plain JSON.

One module per experiment (:mod:`.doubled_traffic`, :mod:`.fusion`, :mod:`.bf16` for both
bfloat16 experiments, :mod:`.batching`, :mod:`.dispatch`, :mod:`.scan`), what they share in
:mod:`.common` (the verdict in :mod:`.verdicts`, the knee fit in :mod:`.knees`, the single-roof
budgets in :mod:`.single_roof`, the reading of raw records in :mod:`.raw`), the choice of model
in :mod:`.times`, the exercises in :mod:`.exercises`.
"""

from __future__ import annotations

from roofline_report.analysis.experiments import (
    batching,
    bf16,
    dispatch,
    doubled_traffic,
    fusion,
    scan,
)
from roofline_report.analysis.experiments.batching import batch_ridge
from roofline_report.analysis.experiments.common import (
    BF16,
    EXPERIMENT_IDS,
    F32,
    LOG_SCALE,
    LOW_EFFICIENCY,
    NEAR_DISPATCH,
    STATISTIC,
    TITLES,
    TOLERANCE,
    unavailable,
)
from roofline_report.analysis.experiments.dispatch import dispatch_size
from roofline_report.analysis.experiments.exercises import (
    EX_BATCH_D,
    EX_FUSION_SHAPE,
    EX_SCAN_SIZE,
    EX_SCAN_STEPS,
    EX_SEED_SHAPE,
    EX_STREAM_ELEMENTS,
    exercises,
)
from roofline_report.analysis.experiments.fusion import fusion_traffic
from roofline_report.analysis.experiments.knees import knee, knee_fit
from roofline_report.analysis.experiments.single_roof import (
    HYPOTHETICAL_BF16_SPEEDUP,
    HYPOTHETICAL_DISPATCH_S,
    Budgets,
    MeasuredCeilings,
    budgets,
)
from roofline_report.analysis.experiments.verdicts import Verdict, verdict
from roofline_report.analysis.records import Experiment
from roofline_report.analysis.roofs import RoofSet
from roofline_report.errors import InputError
from roofline_report.results.schema_base import Unavailable
from roofline_report.results.schema_lab import (
    Bf16Pair,
    DoubledTraffic,
    Fusion,
    LabExperiments,
    Scan,
    Sweep1D,
)

__all__ = [
    "BF16",
    "EXPERIMENT_IDS",
    "EX_BATCH_D",
    "EX_FUSION_SHAPE",
    "EX_SCAN_SIZE",
    "EX_SCAN_STEPS",
    "EX_SEED_SHAPE",
    "EX_STREAM_ELEMENTS",
    "F32",
    "HYPOTHETICAL_BF16_SPEEDUP",
    "HYPOTHETICAL_DISPATCH_S",
    "LOG_SCALE",
    "LOW_EFFICIENCY",
    "NEAR_DISPATCH",
    "STATISTIC",
    "TITLES",
    "TOLERANCE",
    "Budgets",
    "MeasuredCeilings",
    "Verdict",
    "analyse",
    "batch_ridge",
    "budgets",
    "dispatch_size",
    "exercises",
    "fusion_traffic",
    "knee",
    "knee_fit",
    "verdict",
]

def analyse(
    lab: LabExperiments,
    *,
    cache_bytes: int | None,
    ceilings: MeasuredCeilings | None,
    peak: float,
    bandwidth: float,
    roofs: RoofSet | None = None,
) -> list[Experiment]:
    """Turn the lab's measurements (see :func:`roofline_report.observe.lab.run_lab`), read as
    the results document's typed record, into the notebook.

    ``cache_bytes`` is the last-level cache the lab recorded (None: unknown). ``roofs`` is this
    machine's measured roof set (None: none measured); with it, and the kernel inventories the
    lab recorded, the per-kernel model predicts. ``ceilings`` (this machine's measured
    ceilings, or None) and the hypothetical ``peak`` and ``bandwidth`` give the budgets of the
    single-roof model, which predicts otherwise.

    Returns one :class:`~roofline_report.analysis.records.Experiment` per experiment in
    :data:`EXPERIMENT_IDS` order: its prediction, its measurement (kind measured), the
    :func:`verdict`, the details the prediction rests on, the sweep's figure and the likely
    reason ('' unless the verdict failed). An experiment that is missing from ``lab`` or
    recorded unavailable gets ``verdict.status == "unavailable"``. Raises InputError
    when a present experiment's record lacks what the schema leaves open (a sweep's points, a
    size only some experiments record, lists aligned with the points).
    """
    resolved = budgets(ceilings, peak=peak, bandwidth=bandwidth)
    recorded: dict[str, object] = {
        "doubled_traffic": lab.doubled_traffic,
        "fusion": lab.fusion,
        "bf16_memory": lab.bf16_memory,
        "bf16_compute": lab.bf16_compute,
        "batching": lab.batching,
        "dispatch": lab.dispatch,
        "scan": lab.scan,
    }
    return [_experiment(exp_id, recorded[exp_id], resolved, roofs, cache_bytes)
            for exp_id in EXPERIMENT_IDS]


def _experiment(exp_id: str, record: object, resolved: Budgets, roofs: RoofSet | None,
                cache_bytes: int | None) -> Experiment:
    """One experiment from its typed record (``LabExperiments``' fields are typed loosely:
    each is narrowed here to the record the schema gives it)."""
    if record is None:
        return unavailable(exp_id, "not in the recorded measurements")
    if isinstance(record, Unavailable):
        return unavailable(exp_id, record.reason or "not measured")
    if isinstance(record, DoubledTraffic):
        return doubled_traffic.build(record, resolved, roofs, cache_bytes)
    if isinstance(record, Fusion):
        return fusion.build(record, resolved, roofs, cache_bytes)
    if isinstance(record, Bf16Pair):
        build_pair = bf16.memory if exp_id == "bf16_memory" else bf16.compute
        return build_pair(record, resolved, roofs, cache_bytes)
    if isinstance(record, Sweep1D):
        build_sweep = batching.build if exp_id == "batching" else dispatch.build
        return build_sweep(record, resolved, roofs, cache_bytes)
    if isinstance(record, Scan):
        return scan.build(record, resolved, roofs, cache_bytes)
    raise InputError(f"lab measurements: experiment {exp_id!r} must be an object")
