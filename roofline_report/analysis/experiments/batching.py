"""Batching crosses the ridge (no jax): W[d,d] @ X[d,b] over a sweep of batches b.

The time should stay flat (W's traffic) until the intensity reaches the ridge, then grow in
proportion to b. The measured knee is
:func:`~roofline_report.analysis.experiments.knees.knee_fit` of the measured times. The
predicted knee is the same fit of the per-kernel model's predicted times over the same batches,
on the measured roofs, when every point's kernel inventory was recorded; else the closed form b*
at the budgets' ridge (:func:`batch_ridge`). A failed verdict names the side that moved the knee
(the flat part: W's reads against the bandwidth the model charged; the proportional part: the
large batches' rate against the compute roof the model used), or a knee outside the sweep, or
timing noise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from roofline_report.analysis import seed_model as model
from roofline_report.analysis import words
from roofline_report.analysis.experiments import raw
from roofline_report.analysis.experiments.common import (
    F32,
    cache_note,
    dtype_of,
    knee_failure,
    record,
    seconds_of,
)
from roofline_report.analysis.experiments.knees import (
    KNEE_NOTE,
    NO_KNEE,
    knee_fit,
    outside_sweep,
    sweep_figure,
)
from roofline_report.analysis.experiments.single_roof import Budgets
from roofline_report.analysis.experiments.times import (
    KernelModel,
    kernel_model,
    single_roof_note,
)
from roofline_report.analysis.records import Experiment
from roofline_report.analysis.roofs import RoofSet
from roofline_report.kinds import Quantity
from roofline_report.results.schema_lab import Sweep1D
from roofline_report.text import decimal
from roofline_report.units import format_si


def batch_ridge(d: int, ridge: float, itemsize: int = F32) -> float | None:
    """Batch b* where W[d,d] @ X[d,b] reaches intensity ``ridge``: solving
    2d²b / (s(d² + 2db)) = R gives b* = s·R·d / (2(d − s·R)). None when d <= s·R: the intensity
    tends to d/s as b grows and never reaches the ridge."""
    if d <= itemsize * ridge:
        return None
    return itemsize * ridge * d / (2 * (d - itemsize * ridge))


@dataclass(frozen=True, slots=True)
class _ModelSide:
    """What the prediction rests on (the per-kernel model on the measured roofs, or the
    budgets' single roof): the prediction, the model's times and knee fit, the bytes W moves
    and the bandwidth charged for them, and the compute rate charged for the largest product."""

    prediction: Quantity
    predicted: float | None
    times: list[float]
    fit: dict[str, Any] | None
    w_moved: float
    bandwidth: float | None
    bandwidth_text: str
    rate: float | None
    rate_text: str
    in_main_memory: bool


def build(recorded: Sweep1D, budgets: Budgets, roofs: RoofSet | None, cache_bytes: int | None
          ) -> Experiment:
    d, s = raw.count("batching", "d", recorded.d), recorded.itemsize
    batches = raw.sizes("batching", "batches", recorded.batches)
    times_t = raw.timings("batching", "times", recorded.times, len(batches))
    times = [seconds_of(t) for t in times_t]
    ridge = model.ridge(budgets.peak, budgets.bandwidth)
    b_star = batch_ridge(d, ridge, s)
    contracts = [model.contract(d, d, x, s) for x in batches]
    labels = [f"b={x}" for x in batches]
    dtype = dtype_of(s)
    km, why = kernel_model(
        roofs, raw.sweep_programs("batching", recorded.programs, labels),
        dict.fromkeys(labels, dtype), {x: x for x in labels}
    )
    side = (_kernel_model_side(km, labels, batches, contracts, dtype) if km is not None
            else _budget_side(budgets, contracts, d, s, ridge, b_star, why))
    fit = knee_fit(batches, times)
    measured = None if fit is None else float(fit["knee"])
    how = KNEE_NOTE if fit is not None else NO_KNEE
    w_bytes = s * d * d
    flat_bw = side.w_moved / times[0]
    top_rate = contracts[-1].flops / times[-1]

    def reason(m: float) -> str:
        if edge := outside_sweep(fit, m, batches):
            return edge
        assert fit is not None and side.predicted is not None
        if side.fit is not None:
            model_flat, model_slope = float(side.fit["flat"]), float(side.fit["slope"])
        else:
            model_flat = contracts[0].minimum_bytes / budgets.bandwidth
            model_slope = 2 * d * d / budgets.peak
        flat_text, slope_text = _side_texts(side, fit, model_flat, flat_bw, top_rate,
                                            cache_note(w_bytes, cache_bytes))
        return knee_failure(m, side.predicted, fit, model_flat, model_slope, flat_text,
                            slope_text,
                            {f"b={x}": t for x, t in zip(batches, times_t, strict=True)})

    details = {
        "d": d,
        "itemsize": s,
        "batches": batches,
        "intensity": [c.intensity for c in contracts],
        "ridge": ridge,
        "closed_form_knee": b_star,
        "seconds": times,
        "median_seconds": [t.per_call.median for t in times_t],
        "model_seconds": side.times,
        "fit": fit,
        "model_fit": side.fit,
        "w_bytes": w_bytes,
        "small_batch_bandwidth": flat_bw,
        "large_batch_rate": top_rate,
        "cache_bytes": cache_bytes,
    }
    return record("batching", side.prediction, measured, how, reason, details, model=km,
                  why=why, budgets=budgets,
                  figure=sweep_figure(batches, times, fit, side.times, side.prediction.kind,
                                      "batch columns b"))


def _kernel_model_side(km: KernelModel, labels: list[str], batches: list[int],
                       contracts: list[Any], dtype: str) -> _ModelSide:
    """The per-kernel model's prediction: the knee of its times over the same batches, with
    the bandwidth it charges W's reads and the compute roof it gives the largest product."""
    prediction, model_times, model_fit = km.knee(labels, batches, "columns")
    roof = km.roofs.compute_for(dtype)
    rate = roof.rate_at(contracts[-1].flops) if roof is not None else None
    rate_text = (
        f"the {format_si(rate, 'FLOP/s')} the model's {roof.name} roof gives the largest "
        f"product" if roof is not None and rate is not None else "the model's compute roof"
    )
    return _ModelSide(prediction, prediction.value, model_times, model_fit, km.bytes(labels[0]),
                      km.bandwidth(labels[0]), km.bandwidth_text(labels[0]), rate, rate_text,
                      km.main_memory(labels[0]))


def _budget_side(budgets: Budgets, contracts: list[Any], d: int, s: int, ridge: float,
                 b_star: float | None, why: str) -> _ModelSide:
    """The single-roof prediction on the budgets: the closed-form b* at their ridge."""
    model_times = [
        budgets.seconds(c.flops, c.minimum_bytes)
        for c in contracts
    ]
    note = (
        f"b* = s·R·d / (2(d − s·R)) at the ridge R = {decimal(ridge, 3)} FLOP/B; {budgets.note}"
        if b_star is not None
        else f"never reached: the intensity tends to d/s = {decimal(d / s, 3)} FLOP/B, "
        "under the "
        f"ridge {decimal(ridge, 3)} FLOP/B; {budgets.note}"
    )
    prediction = Quantity(b_star, "columns", budgets.kind, single_roof_note(note, why))
    return _ModelSide(prediction, b_star, model_times, None, float(contracts[0].minimum_bytes),
                      budgets.bandwidth, f"the {format_si(budgets.bandwidth, 'B/s')} ceiling",
                      budgets.peak, f"the {format_si(budgets.peak, 'FLOP/s')} compute ceiling",
                      True)


def _side_texts(side: _ModelSide, fit: Mapping[str, Any], model_flat: float, flat_bw: float,
                top_rate: float, cached_note: str
                ) -> tuple[Callable[[bool], str], Callable[[bool], str]]:
    """The sentences naming what moved the knee: the flat part (W's reads against the bandwidth
    the model charged) and the proportional part (the large batches' rate against its compute
    roof), each for a knee moved up or down."""
    bandwidth, bandwidth_text = side.bandwidth, side.bandwidth_text
    reads = (
        f"{words.relation(flat_bw, bandwidth)} {bandwidth_text}"
        if bandwidth is not None else f"against {bandwidth_text}"
    )
    slow_reads = "only " if reads.startswith("below") else ""

    def flat_text(up: bool) -> str:
        if up:
            return (
                f"the small batches read W at {slow_reads}{format_si(flat_bw, 'B/s')}, "
                f"{reads}: the flat part ({format_si(fit['flat'], 's')} per call) is higher "
                f"than the model's ({format_si(model_flat, 's')}), which moves the knee to "
                f"larger batches"
            )
        cached = cached_note if side.in_main_memory else ""
        return (
            f"the small batches read W at {format_si(flat_bw, 'B/s')}, {reads}"
            + (f" ({cached})" if cached else "")
            + f": the flat part ({format_si(fit['flat'], 's')} per call) is lower than the "
            f"model's ({format_si(model_flat, 's')}), which lowers the effective ridge and "
            f"the knee"
        )

    def slope_text(up: bool) -> str:
        rate, rate_text = side.rate, side.rate_text
        against = (
            f"{words.relation(top_rate, rate)} {rate_text}" if rate is not None
            else f"against {rate_text}"
        )
        if up:
            return (
                f"the large batches run at {format_si(top_rate, 'FLOP/s')}, {against}: the "
                f"proportional part is shallower than the model's, which moves the knee right"
            )
        only = "only " if against.startswith("below") else ""
        return (
            f"the large batches reach {only}{format_si(top_rate, 'FLOP/s')}, {against}: the "
            f"proportional part is steeper than the model's, which moves the knee to "
            f"smaller batches"
        )

    return flat_text, slope_text
