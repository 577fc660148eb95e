"""Batching crosses the ridge (no jax): W[d,d] @ X[d,b] over a sweep of batches b.

The time should stay flat (W's traffic) until the intensity reaches the ridge, then grow in
proportion to b. The measured knee is :func:`~roofline_report.analysis.experiments.common.knee_fit`
of the
measured times. The predicted knee is the same fit of the per-kernel model's predicted times over
the same batches, on the measured roofs, when every point's kernel inventory was recorded; else
the closed form b* at the budgets' ridge (:func:`batch_ridge`). A failed verdict names the side
that moved the knee (the flat part: W's reads against the bandwidth the model charged; the
proportional part: the large batches' rate against the compute roof the model used), or a knee
outside the sweep, or timing noise.
"""

from __future__ import annotations

from typing import Any

from roofline_report.analysis import seed_model as model
from roofline_report.analysis import words
from roofline_report.analysis.experiments.common import (
    F32,
    KNEE_NOTE,
    NO_KNEE,
    Budgets,
    Entry,
    cache_note,
    dtype_of,
    knee_failure,
    knee_fit,
    model_knee_note,
    number,
    record,
    seconds_of,
    sweep_figure,
)
from roofline_report.analysis.experiments.times import kernel_model, single_roof_note
from roofline_report.analysis.roofs import RoofSet
from roofline_report.kinds import Quantity
from roofline_report.report.format import decimal
from roofline_report.units import format_si


def batch_ridge(d: int, ridge: float, itemsize: int = F32) -> float | None:
    """Batch b* where W[d,d] @ X[d,b] reaches intensity ``ridge``: solving
    2d²b / (s(d² + 2db)) = R gives b* = s·R·d / (2(d − s·R)). None when d <= s·R: the intensity
    tends to d/s as b grows and never reaches the ridge."""
    if d <= itemsize * ridge:
        return None
    return itemsize * ridge * d / (2 * (d - itemsize * ridge))


def build(e: Entry, b: Budgets, roofs: RoofSet | None, cache_bytes: int | None) -> dict[str, Any]:
    d, s = e.count("d"), e.count("itemsize")
    batches = e.ints("batches")
    times_t = e.timings("times", len(batches))
    times = [seconds_of(t) for t in times_t]
    ridge = model.ridge(b.peak, b.bandwidth)
    b_star = batch_ridge(d, ridge, s)
    contracts = [model.contract(d, d, x, s) for x in batches]
    labels = [f"b={x}" for x in batches]
    dtype = dtype_of(s)
    km, why = kernel_model(
        roofs, e.sweep_programs(labels), dict.fromkeys(labels, dtype), {x: x for x in labels}
    )
    model_fit: dict[str, Any] | None = None
    if km is not None:
        model_times = [km.seconds(x) for x in labels]
        model_fit = knee_fit(batches, model_times)
        predicted = None if model_fit is None else float(model_fit["knee"])
        prediction = Quantity(
            predicted,
            "columns",
            km.kind,
            f"{model_knee_note(model_fit)}; {km.note([labels[0], labels[-1]])}",
        )
        w_moved = km.bytes(labels[0])
        bandwidth = km.bandwidth(labels[0])
        bandwidth_text = km.bandwidth_text(labels[0])
        roof = km.roofs.compute_for(dtype)
        rate = roof.rate_at(contracts[-1].flops) if roof is not None else None
        rate_text = (
            f"the {format_si(rate, 'FLOP/s')} the model's {roof.name} roof gives the largest "
            f"product" if roof is not None and rate is not None else "the model's compute roof"
        )
        in_main_memory = km.main_memory(labels[0])
    else:
        model_times = [
            model.predicted_seconds(c.flops, c.minimum_bytes, b.peak, b.bandwidth, b.dispatch)
            for c in contracts
        ]
        predicted = b_star
        note = (
            f"b* = s·R·d / (2(d − s·R)) at the ridge R = {decimal(ridge, 3)} FLOP/B; {b.note}"
            if b_star is not None
            else f"never reached: the intensity tends to d/s = {decimal(d / s, 3)} FLOP/B, "
            "under the "
            f"ridge {decimal(ridge, 3)} FLOP/B; {b.note}"
        )
        prediction = Quantity(b_star, "columns", b.kind, single_roof_note(note, why))
        w_moved = float(contracts[0].minimum_bytes)
        bandwidth, bandwidth_text = b.bandwidth, f"the {format_si(b.bandwidth, 'B/s')} ceiling"
        rate, rate_text = b.peak, f"the {format_si(b.peak, 'FLOP/s')} compute ceiling"
        in_main_memory = True
    fit = knee_fit(batches, times)
    measured = None if fit is None else float(fit["knee"])
    how = KNEE_NOTE if fit is not None else NO_KNEE
    w_bytes = s * d * d
    flat_bw = w_moved / times[0]
    top_rate = contracts[-1].flops / times[-1]

    def reason(m: float) -> str:
        if fit is not None and fit["at_edge"]:
            return (
                f"the fitted knee ({number(m)}) lies outside the sweep "
                f"({batches[0]}..{batches[-1]}): widen it"
            )
        assert fit is not None and predicted is not None
        if model_fit is not None:
            model_flat, model_slope = float(model_fit["flat"]), float(model_fit["slope"])
        else:
            model_flat = contracts[0].minimum_bytes / b.bandwidth
            model_slope = 2 * d * d / b.peak
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
            cached = cache_note(w_bytes, cache_bytes) if in_main_memory else ""
            return (
                f"the small batches read W at {format_si(flat_bw, 'B/s')}, {reads}"
                + (f" ({cached})" if cached else "")
                + f": the flat part ({format_si(fit['flat'], 's')} per call) is lower than the "
                f"model's ({format_si(model_flat, 's')}), which lowers the effective ridge and "
                f"the knee"
            )

        def slope_text(up: bool) -> str:
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

        return knee_failure(m, predicted, fit, model_flat, model_slope, flat_text, slope_text,
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
        "model_seconds": model_times,
        "fit": fit,
        "model_fit": model_fit,
        "w_bytes": w_bytes,
        "small_batch_bandwidth": flat_bw,
        "large_batch_rate": top_rate,
        "cache_bytes": cache_bytes,
        "figure": sweep_figure(
            batches, times, fit, model_times, prediction.kind, "batch columns b"
        ),
        "model": km.to_json() if km is not None else None,
        "single_roof_reason": why,
        "budgets": b.to_json(),
    }
    return record("batching", prediction, measured, how, reason, details)
