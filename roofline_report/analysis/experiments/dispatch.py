"""Small workloads are dispatch-bound (no jax): y = 2·x over a sweep of sizes n.

A call costs at least one dispatch: the time should stay flat until the traffic outlasts it. The
measured knee is :func:`~roofline_report.analysis.experiments.common.knee_fit` of the measured
times. The
predicted knee is the same fit of the per-kernel model's predicted times over the same sizes, on
the measured roofs (which must hold a dispatch floor), when every point's kernel inventory was
recorded; else the closed form n* = dispatch × bandwidth ÷ bytes per element
(:func:`dispatch_size`) on the budgets. A failed verdict names the side that moved the knee (the
flat part: the cost of an enqueued call against the model's; the proportional part: the large
calls' stream against the bandwidth the model charged), or a knee outside the sweep, or timing
noise.
"""

from __future__ import annotations

from typing import Any

from roofline_report.analysis import seed_model as model
from roofline_report.analysis import words
from roofline_report.analysis.experiments.common import (
    KNEE_NOTE,
    NO_KNEE,
    Budgets,
    Entry,
    dtype_of,
    knee_failure,
    knee_fit,
    model_knee_note,
    number,
    record,
    seconds_of,
    sweep_figure,
    weaker,
)
from roofline_report.analysis.experiments.times import KernelModel, kernel_model, single_roof_note
from roofline_report.analysis.roofs import RoofSet
from roofline_report.kinds import Quantity
from roofline_report.units import format_si


def dispatch_size(dispatch_s: float, bandwidth: float, bytes_per_element: int) -> float:
    """n* where an elementwise kernel's traffic time equals the dispatch floor:
    n* · bytes_per_element / bandwidth = dispatch."""
    return dispatch_s * bandwidth / bytes_per_element


def build(e: Entry, b: Budgets, roofs: RoofSet | None, cache_bytes: int | None) -> dict[str, Any]:
    s = e.count("itemsize")
    sizes = e.ints("sizes")
    times_t = e.timings("times", len(sizes))
    times = [seconds_of(t) for t in times_t]
    per_element = 2 * s
    labels = [f"n={x}" for x in sizes]
    programs = e.sweep_programs(labels)
    km: KernelModel | None
    if roofs is not None and roofs.complete and roofs.dispatch_enqueued is None:
        km, why = None, "the measured roofs hold no dispatch floor"
    else:
        km, why = kernel_model(
            roofs, programs, dict.fromkeys(labels, dtype_of(s)), {x: x for x in labels}
        )
    model_fit: dict[str, Any] | None = None
    if km is not None:
        model_times = [km.seconds(x) for x in labels]
        model_fit = knee_fit(sizes, model_times)
        predicted = None if model_fit is None else float(model_fit["knee"])
        prediction = Quantity(
            predicted,
            "elements",
            km.kind,
            f"{model_knee_note(model_fit)}; {km.note([labels[0], labels[-1]])}",
        )
        floor = km.roofs.dispatch_enqueued or 0.0
        bandwidth = km.bandwidth(labels[-1])
        bandwidth_text = km.bandwidth_text(labels[-1])
        fresh = km.fresh_roof(labels[-1])
    else:
        predicted = dispatch_size(b.dispatch, b.bandwidth, per_element)
        prediction = Quantity(
            predicted,
            "elements",
            weaker(b.kind, b.dispatch_kind),
            single_roof_note(
                f"dispatch × bandwidth ÷ {per_element} B per element; {b.dispatch_note}; "
                f"{b.note}",
                why,
            ),
        )
        model_times = [
            model.predicted_seconds(n, per_element * n, b.peak, b.bandwidth, b.dispatch)
            for n in sizes
        ]
        floor = b.dispatch
        bandwidth, bandwidth_text = b.bandwidth, f"the {format_si(b.bandwidth, 'B/s')} ceiling"
        fresh = False
    fit = knee_fit(sizes, times)
    measured = None if fit is None else float(fit["knee"])
    how = KNEE_NOTE if fit is not None else NO_KNEE

    def reason(m: float) -> str:
        if fit is not None and fit["at_edge"]:
            return (
                f"the fitted knee ({number(m)}) lies outside the sweep ({sizes[0]}..{sizes[-1]}): "
                f"widen it"
            )
        assert fit is not None and predicted is not None
        stream_bw = per_element / fit["slope"]
        if model_fit is not None:
            model_flat, model_slope = float(model_fit["flat"]), float(model_fit["slope"])
        else:
            model_flat, model_slope = b.dispatch, per_element / b.bandwidth
        streams = (
            f"{words.relation(stream_bw, bandwidth)} {bandwidth_text}"
            if bandwidth is not None else f"against {bandwidth_text}"
        )

        def flat_text(up: bool) -> str:
            relation = words.relation(fit["flat"], model_flat)
            if model_fit is None:
                return (
                    f"enqueued calls cost {format_si(fit['flat'], 's')} each, {relation} the "
                    f"{format_si(b.dispatch, 's')} dispatch floor (measured blocking after every "
                    f"call), which moves the knee"
                )
            return (
                f"enqueued calls cost {format_si(fit['flat'], 's')} each, {relation} the "
                f"model's {format_si(model_flat, 's')} for the small calls (the "
                f"{format_si(floor, 's')} enqueued dispatch floor and one kernel), which moves "
                f"the knee"
            )

        def slope_text(up: bool) -> str:
            if up:
                return (
                    f"the large calls stream {format_si(stream_bw, 'B/s')}, {streams}"
                    + (" (the data stay in cache)" if model_fit is None else "")
                    + ", which moves the knee right"
                )
            only = "only " if streams.startswith("below") else ""
            if fresh:
                return (
                    f"the large calls stream {only}{format_si(stream_bw, 'B/s')}, {streams} "
                    f"(its write-new roof, measured writing a fresh output as y = 2·x does): "
                    f"the proportional part is steeper than the model's, which moves the knee "
                    f"left"
                )
            return (
                f"the large calls stream {only}{format_si(stream_bw, 'B/s')}, {streams}: "
                f"y = 2·x writes a freshly allocated output on every call, whereas that roof "
                f"is measured in place"
            )

        return knee_failure(m, predicted, fit, model_flat, model_slope, flat_text, slope_text,
                            {f"n={x}": t for x, t in zip(sizes, times_t, strict=True)})

    details = {
        "itemsize": s,
        "bytes_per_element": per_element,
        "sizes": sizes,
        "closed_form_knee": dispatch_size(b.dispatch, b.bandwidth, per_element),
        "seconds": times,
        "median_seconds": [t.per_call.median for t in times_t],
        "model_seconds": model_times,
        "fit": fit,
        "model_fit": model_fit,
        "cache_bytes": cache_bytes,
        "figure": sweep_figure(sizes, times, fit, model_times, prediction.kind, "elements n"),
        "model": km.to_json() if km is not None else None,
        "single_roof_reason": why,
        "budgets": b.to_json(),
    }
    return record("dispatch", prediction, measured, how, reason, details)
