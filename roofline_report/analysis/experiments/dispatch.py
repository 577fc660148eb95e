"""Small workloads are dispatch-bound (no jax): y = 2·x over a sweep of sizes n.

A call costs at least one dispatch: the time should stay flat until the traffic outlasts it. The
measured knee is :func:`~roofline_report.analysis.experiments.knees.knee_fit` of the measured
times. The predicted knee is the same fit of the per-kernel model's predicted times over the
same sizes, on the measured roofs (which must hold a dispatch floor), when every point's kernel
inventory was recorded; else the closed form n* = dispatch × bandwidth ÷ bytes per element
(:func:`dispatch_size`) on the budgets. A failed verdict names the side that moved the knee (the
flat part: the cost of an enqueued call against the model's; the proportional part: the large
calls' stream against the bandwidth the model charged), or a knee outside the sweep, or timing
noise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from roofline_report.analysis import words
from roofline_report.analysis.experiments import raw
from roofline_report.analysis.experiments.common import dtype_of, knee_failure, record, seconds_of
from roofline_report.analysis.experiments.knees import (
    KNEE_NOTE,
    NO_KNEE,
    knee_fit,
    outside_sweep,
    sweep_figure,
)
from roofline_report.analysis.experiments.single_roof import Budgets, weaker
from roofline_report.analysis.experiments.times import KernelModel, kernel_model, single_roof_note
from roofline_report.analysis.records import Experiment
from roofline_report.analysis.roofs import RoofSet
from roofline_report.kinds import Quantity
from roofline_report.results.schema_lab import Sweep1D
from roofline_report.units import format_si


def dispatch_size(dispatch_s: float, bandwidth: float, bytes_per_element: int) -> float:
    """n* where an elementwise kernel's traffic time equals the dispatch floor:
    n* · bytes_per_element / bandwidth = dispatch."""
    return dispatch_s * bandwidth / bytes_per_element


@dataclass(frozen=True, slots=True)
class _ModelSide:
    """What the prediction rests on (the per-kernel model on the measured roofs, or the
    budgets' single roof): the prediction, the model's times and knee fit, the dispatch floor
    it charges, the bandwidth it charges the large calls and whether that is a write-new roof."""

    prediction: Quantity
    predicted: float | None
    times: list[float]
    fit: dict[str, Any] | None
    floor: float
    bandwidth: float | None
    bandwidth_text: str
    fresh: bool


def build(recorded: Sweep1D, budgets: Budgets, roofs: RoofSet | None, cache_bytes: int | None
          ) -> Experiment:
    s = recorded.itemsize
    sizes = raw.sizes("dispatch", "sizes", recorded.sizes)
    times_t = raw.timings("dispatch", "times", recorded.times, len(sizes))
    times = [seconds_of(t) for t in times_t]
    per_element = 2 * s
    labels = [f"n={x}" for x in sizes]
    programs = raw.sweep_programs("dispatch", recorded.programs, labels)
    km: KernelModel | None
    if roofs is not None and roofs.complete and roofs.dispatch_enqueued is None:
        km, why = None, "the measured roofs hold no dispatch floor"
    else:
        km, why = kernel_model(
            roofs, programs, dict.fromkeys(labels, dtype_of(s)), {x: x for x in labels}
        )
    side = (_kernel_model_side(km, labels, sizes) if km is not None
            else _budget_side(budgets, sizes, per_element, why))
    fit = knee_fit(sizes, times)
    measured = None if fit is None else float(fit["knee"])
    how = KNEE_NOTE if fit is not None else NO_KNEE

    def reason(m: float) -> str:
        if edge := outside_sweep(fit, m, sizes):
            return edge
        assert fit is not None and side.predicted is not None
        stream_bw = per_element / fit["slope"]
        if side.fit is not None:
            model_flat, model_slope = float(side.fit["flat"]), float(side.fit["slope"])
        else:
            model_flat, model_slope = budgets.dispatch, per_element / budgets.bandwidth
        flat_text, slope_text = _side_texts(side, fit, model_flat, stream_bw, budgets.dispatch)
        return knee_failure(m, side.predicted, fit, model_flat, model_slope, flat_text,
                            slope_text,
                            {f"n={x}": t for x, t in zip(sizes, times_t, strict=True)})

    details = {
        "itemsize": s,
        "bytes_per_element": per_element,
        "sizes": sizes,
        "closed_form_knee": dispatch_size(budgets.dispatch, budgets.bandwidth, per_element),
        "seconds": times,
        "median_seconds": [t.per_call.median for t in times_t],
        "model_seconds": side.times,
        "fit": fit,
        "model_fit": side.fit,
        "cache_bytes": cache_bytes,
    }
    return record("dispatch", side.prediction, measured, how, reason, details, model=km,
                  why=why, budgets=budgets,
                  figure=sweep_figure(sizes, times, fit, side.times, side.prediction.kind,
                                      "elements n"))


def _kernel_model_side(km: KernelModel, labels: list[str], sizes: list[int]) -> _ModelSide:
    """The per-kernel model's prediction: the knee of its times over the same sizes, with the
    enqueued dispatch floor and the bandwidth it charges the largest call."""
    prediction, model_times, model_fit = km.knee(labels, sizes, "elements")
    return _ModelSide(prediction, prediction.value, model_times, model_fit,
                      km.roofs.dispatch_enqueued or 0.0, km.bandwidth(labels[-1]),
                      km.bandwidth_text(labels[-1]), km.fresh_roof(labels[-1]))


def _budget_side(budgets: Budgets, sizes: list[int], per_element: int, why: str) -> _ModelSide:
    """The single-roof prediction on the budgets: the closed-form n* = dispatch × bandwidth ÷
    bytes per element."""
    predicted = dispatch_size(budgets.dispatch, budgets.bandwidth, per_element)
    prediction = Quantity(
        predicted,
        "elements",
        weaker(budgets.kind, budgets.dispatch_kind),
        single_roof_note(
            f"dispatch × bandwidth ÷ {per_element} B per element; {budgets.dispatch_note}; "
            f"{budgets.note}",
            why,
        ),
    )
    model_times = [
        budgets.seconds(n, per_element * n)
        for n in sizes
    ]
    return _ModelSide(prediction, predicted, model_times, None, budgets.dispatch, budgets.bandwidth,
                      f"the {format_si(budgets.bandwidth, 'B/s')} ceiling", False)


def _side_texts(side: _ModelSide, fit: Mapping[str, Any], model_flat: float, stream_bw: float,
                dispatch: float) -> tuple[Callable[[bool], str], Callable[[bool], str]]:
    """The sentences naming what moved the knee: the flat part (the cost of an enqueued call
    against the model's) and the proportional part (the large calls' stream against the
    bandwidth the model charged), each for a knee moved up or down."""
    streams = (
        f"{words.relation(stream_bw, side.bandwidth)} {side.bandwidth_text}"
        if side.bandwidth is not None else f"against {side.bandwidth_text}"
    )

    def flat_text(up: bool) -> str:
        relation = words.relation(fit["flat"], model_flat)
        if side.fit is None:
            return (
                f"enqueued calls cost {format_si(fit['flat'], 's')} each, {relation} the "
                f"{format_si(dispatch, 's')} dispatch floor (measured blocking after every "
                f"call), which moves the knee"
            )
        return (
            f"enqueued calls cost {format_si(fit['flat'], 's')} each, {relation} the "
            f"model's {format_si(model_flat, 's')} for the small calls (the "
            f"{format_si(side.floor, 's')} enqueued dispatch floor and one kernel), which moves "
            f"the knee"
        )

    def slope_text(up: bool) -> str:
        if up:
            return (
                f"the large calls stream {format_si(stream_bw, 'B/s')}, {streams}"
                + (" (the data stay in cache)" if side.fit is None else "")
                + ", which moves the knee right"
            )
        only = "only " if streams.startswith("below") else ""
        if side.fresh:
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

    return flat_text, slope_text
