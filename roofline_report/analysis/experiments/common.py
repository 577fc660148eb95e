"""What the lab's experiments share (no jax): their ids, titles, tolerances and hypotheses, the
assembly of an experiment's record, and the evidence a likely reason is built from.

* :func:`record` assembles an experiment's typed record
  (:class:`~roofline_report.analysis.records.Experiment`); the likely reason of a failed verdict
  is computed by the experiment from its evidence (:func:`noise`, :func:`cache_note`,
  :func:`knee_failure`, ...), never typed in for a machine.
* The verdict itself is :mod:`.verdicts`, the knee fit :mod:`.knees`, the single-roof budgets
  :mod:`.single_roof`, the reading of an experiment's raw record :mod:`.raw`; their names stay
  importable from here.

Per-call times are each timing record's own time, its first quartile
(:func:`~roofline_report.analysis.stats.own_time`): the one rule for every program's and kernel's
time in the report, ``compare``, the gate and the API. Noise from other processes only ever slows
a call; the quartile keeps that without letting one lucky sample set the time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from roofline_report.analysis.experiments.knees import (
    KNEE_NOTE,
    MODEL_KNEE_NOTE,
    NO_KNEE,
    NO_MODEL_KNEE,
    knee,
    knee_fit,
    knee_reason,
    model_knee_note,
    sweep_figure,
)
from roofline_report.analysis.experiments.raw import NOT_RECORDED
from roofline_report.analysis.experiments.single_roof import (
    HYPOTHETICAL_BF16_SPEEDUP,
    HYPOTHETICAL_DISPATCH_S,
    Budgets,
    budgets,
    weaker,
)
from roofline_report.analysis.experiments.times import KernelModel
from roofline_report.analysis.experiments.verdicts import Verdict, finite, number, verdict
from roofline_report.analysis.records import Experiment, SweepFigure
from roofline_report.analysis.stats import Timing
from roofline_report.kinds import Kind, Quantity
from roofline_report.text import percent_text
from roofline_report.units import format_si

__all__ = [
    "BF16",
    "EXPERIMENT_IDS",
    "F32",
    "HYPOTHESES",
    "HYPOTHETICAL_BF16_SPEEDUP",
    "HYPOTHETICAL_DISPATCH_S",
    "KNEE_NOTE",
    "LOG_SCALE",
    "LOW_EFFICIENCY",
    "MODEL_KNEE_NOTE",
    "NEAR_DISPATCH",
    "NOT_RECORDED",
    "NO_KNEE",
    "NO_MODEL_KNEE",
    "STATISTIC",
    "TITLES",
    "TOLERANCE",
    "UNITS",
    "Budgets",
    "Verdict",
    "budgets",
    "cache_note",
    "dtype_of",
    "finite",
    "first_reason",
    "knee",
    "knee_failure",
    "knee_fit",
    "knee_reason",
    "model_knee_note",
    "noise",
    "number",
    "ratio_note",
    "record",
    "seconds_of",
    "sweep_figure",
    "time_json",
    "unavailable",
    "verdict",
    "weaker",
]

# Experiment ids, in the order of the notebook.
EXPERIMENT_IDS = (
    "doubled_traffic",
    "fusion",
    "bf16_memory",
    "bf16_compute",
    "batching",
    "dispatch",
    "scan",
)

TITLES = {
    "doubled_traffic": "Doubled data movement, measured",
    "fusion": "Fusion saves traffic",
    "bf16_memory": "bfloat16 against float32: a memory-bound kernel",
    "bf16_compute": "bfloat16 against float32: a compute-bound matmul",
    "batching": "Batching crosses the ridge",
    "dispatch": "Small workloads are dispatch-bound",
    "scan": "Loops fool the compiler's estimate",
}

# Tolerances of the verdicts: relative errors, or factors for the log-scale ones.
TOLERANCE = {
    "doubled_traffic": 0.25,
    "fusion": 0.25,
    "bf16_memory": 0.25,
    "bf16_compute": 0.25,
    "batching": 2.0,
    "dispatch": 2.0,
    "scan": 0.30,
}
LOG_SCALE = frozenset({"batching", "dispatch"})

# Evidence thresholds used to pick a likely reason.
LOW_EFFICIENCY = 0.5  # an achieved rate under half its ceiling is "well below" it
NEAR_DISPATCH = 3.0  # a call within this many dispatch floors is mostly overhead

F32, BF16 = 4, 2  # itemsizes

STATISTIC = "first quartile"


def dtype_of(itemsize: int) -> str:
    """The floating dtype of an itemsize the lab uses (float32 unless 2 or 8 bytes)."""
    return {2: "bfloat16", 8: "float64"}.get(itemsize, "float32")


def seconds_of(t: Timing) -> float:
    """A variant's time per call: its samples' first quartile, as every time in the report."""
    return t.per_call.own


def time_json(t: Timing) -> dict[str, Any]:
    s = t.per_call
    return {"seconds": s.own, "min": s.min, "median": s.median, "spread": s.spread,
            "unstable": s.unstable}


def noise(named: Mapping[str, Timing]) -> str:
    """A noise explanation when some timing was flagged unstable, else ''."""
    for name, t in named.items():
        if t.per_call.unstable:
            return (
                f"timing noise: the {name} samples spread {percent_text(t.per_call.spread)} "
                f"(flagged unstable); rerun on an idle machine"
            )
    return ""


_UNEXPLAINED = "no recorded evidence explains the gap; rerun on an idle machine to rule out noise"


def first_reason(*reasons: str) -> str:
    return next((r for r in reasons if r), _UNEXPLAINED)


def cache_note(data_bytes: int, cache_bytes: int | None) -> str:
    if cache_bytes and data_bytes <= cache_bytes:
        return (
            f"the data ({format_si(data_bytes, 'B')}) fit in the last-level cache "
            f"({format_si(cache_bytes, 'B')}), so repeated calls are served by the cache"
        )
    return ""


# -------------------------------------------------------------------------------- experiments

UNITS = {
    "doubled_traffic": "×",
    "fusion": "×",
    "bf16_memory": "×",
    "bf16_compute": "×",
    "batching": "columns",
    "dispatch": "elements",
    "scan": "×",
}


def unavailable(exp_id: str, reason: str) -> Experiment:
    unit = UNITS[exp_id]
    judged = verdict(None, None, tolerance=TOLERANCE[exp_id], log_scale=exp_id in LOG_SCALE)
    return Experiment(
        id=exp_id,
        title=TITLES[exp_id],
        hypothesis=HYPOTHESES[exp_id],
        prediction=Quantity(None, unit, Kind.PREDICTED, f"not computed: {reason}"),
        measurement=Quantity(None, unit, Kind.MEASURED, reason),
        verdict=replace(judged, text=f"unavailable: {reason}"),
    )


HYPOTHESES = {
    "doubled_traffic": (
        "Reading twice the bytes for the same work doubles a memory-bound kernel's time: "
        "sum(w·x) reads two float32 arrays of n elements, sum(2·x) one, and both do 2n flops."
    ),
    "fusion": (
        "Fusing the tanh into the matmul saves the product's round trip through memory: forcing "
        "the m×n product to memory (an optimization barrier) multiplies the minimum traffic, "
        "hence a memory-bound shape's time, by the traffic ratio."
    ),
    "bf16_memory": (
        "Halving the bytes per element halves a memory-bound kernel's time: x ← −x in place "
        "on n elements, bfloat16 against float32."
    ),
    "bf16_compute": (
        "A compute-bound matmul speeds up by the ratio of the bfloat16 and float32 compute "
        "ceilings."
    ),
    "batching": (
        "W[d,d] @ X[d,b] has intensity 2d²b / (s(d² + 2db)): its time stays flat (W's traffic) "
        "until the intensity reaches the ridge at b*, then grows in proportion to b."
    ),
    "dispatch": (
        "A call costs at least one dispatch: y = 2·x stays flat until its traffic outlasts a "
        "dispatch, at n* = dispatch × bandwidth ÷ bytes per element read and written."
    ),
    "scan": (
        "A loop of k steps costs k body calls, as our count says, not one, as XLA's cost "
        "analysis says: a scan of tanh(c@x) takes k times one body call."
    ),
}


def record(
    exp_id: str,
    prediction: Quantity,
    measured: float | None,
    measured_note: str,
    reason: Callable[[float], str],
    details: dict[str, Any],
    *,
    model: KernelModel | None,
    why: str,
    budgets: Budgets,
    figure: SweepFigure | None = None,
) -> Experiment:
    """Assemble an experiment; ``reason(measured)`` is consulted only when the verdict fails.
    ``details`` gains what the prediction rests on: the per-kernel ``model`` (None where it did
    not predict, and ``why`` not) and the single-roof ``budgets``. ``figure`` is the sweep it
    drew (None for an experiment of two programs)."""
    unit = UNITS[exp_id]
    tolerance, log_scale = TOLERANCE[exp_id], exp_id in LOG_SCALE
    judged = verdict(prediction.value, measured, unit=unit, tolerance=tolerance,
                     log_scale=log_scale)
    likely = ""
    if judged.status == "unavailable":
        why = prediction.note if prediction.value is None else measured_note
        judged = replace(judged, text=f"unavailable: {why}")
    if judged.status == "failed" and measured is not None:
        likely = reason(measured)
        judged = verdict(prediction.value, measured, unit=unit, tolerance=tolerance,
                         log_scale=log_scale, reason_if_failed=likely)
    details.update({"model": model.to_json() if model is not None else None,
                    "single_roof_reason": why, "budgets": budgets.to_json(),
                    "statistic": STATISTIC})
    return Experiment(
        id=exp_id,
        title=TITLES[exp_id],
        hypothesis=HYPOTHESES[exp_id],
        # A prediction is of kind predicted whatever roofs it stands on; their kind (measured
        # ceilings or assumed budgets) is kept beside it.
        prediction=Quantity(_float_or_none(prediction.value), prediction.unit, Kind.PREDICTED,
                            prediction.note),
        measurement=Quantity(_float_or_none(measured), unit, Kind.MEASURED, measured_note),
        verdict=judged,
        figure=figure,
        roofs_kind=prediction.kind,
        likely_reason=likely,
        details=details,
    )


def _float_or_none(value: float | None) -> float | None:
    return None if value is None else float(value)


def ratio_note(top: str, bottom: str) -> str:
    return f"per-call time of {top} ÷ per-call time of {bottom} (first quartiles of the samples)"


def knee_failure(
    measured: float,
    predicted: float,
    fit: Mapping[str, Any],
    model_flat: float,
    model_slope: float,
    flat_text: Callable[[bool], str],
    slope_text: Callable[[bool], str],
    timings: Mapping[str, Timing],
) -> str:
    """Why a knee missed: the side of the fit (flat part or slope, against the model's) that
    moved it the way it moved, else noise in the sweep's ``timings``, else unexplained."""
    return first_reason(
        knee_reason(measured, predicted, fit["flat"] / model_flat, fit["slope"] / model_slope,
                    flat_text, slope_text),
        noise(timings),
    )
