"""The lab notebook's pure half: verdicts, the knee, predictions, likely reasons and exercises.

Recorded measurements are synthesised from the model's own predictions (scaled to hold or to
fail), so every expected verdict below is computed, not typed in.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from dataclasses import asdict, replace
from typing import Any

import pydantic
import pytest

from roofline_report.analysis import experiments as ex
from roofline_report.analysis import seed_model as model
from roofline_report.analysis.exercise_records import Answer
from roofline_report.analysis.records import Exercise, Experiment
from roofline_report.analysis.roofs import (
    BandwidthRoof,
    ComputeRoof,
    Floor,
    RateRoof,
    RoofSet,
)
from roofline_report.analysis.seed_model import SEED_BANDWIDTH as BW
from roofline_report.analysis.seed_model import SEED_PEAK_FLOPS as PEAK
from roofline_report.errors import InputError
from roofline_report.kinds import Kind
from roofline_report.observe.timer import Stats, Timing
from roofline_report.results.schema_kernels import KernelInventory
from roofline_report.results.schema_lab import LabExperiments

# ------------------------------------------------------------------------------- helpers


def timing_json(seconds: float, spread: float = 0.0) -> dict[str, Any]:
    """A timing record whose fastest sample is ``seconds``; ``spread`` widens the others."""
    samples = [seconds * (1 + spread * i / 2) for i in range(5)]
    return Timing(Stats(samples), 1, 1e-9, 1e-3, "synthetic").to_json()


CEILINGS = ex.MeasuredCeilings(
    peak=150e9, bandwidth=40e9, dispatch=6e-6, compute={"float32": 150e9, "bfloat16": 140e9})

N = 1 << 20
FUSION = (2048, 4, 2048)
D = 1024
BATCHES = [1 << i for i in range(10)]
SIZES = [1 << i for i in range(4, 23, 2)]


def ratio_raw(exp_id: str, ratio: float, **extra: Any) -> dict[str, Any]:
    """Raw record of a two-timing experiment whose measured time ratio is ``ratio``."""
    base = 1e-3
    if exp_id == "doubled_traffic":
        rec = {
            "elements": N,
            "itemsize": 4,
            "one_array": timing_json(base),
            "two_arrays": timing_json(base * ratio),
        }
    elif exp_id == "fusion":
        m, k, n = FUSION
        rec = {
            "m": m,
            "k": k,
            "n": n,
            "itemsize": 4,
            "fused": timing_json(base),
            "unfused": timing_json(base * ratio),
            "kernels": {"fused": 1, "unfused": 2},
        }
    elif exp_id == "bf16_memory":
        rec = {
            "elements": N,
            "float32": timing_json(base * ratio),
            "bfloat16": timing_json(base),
            "converts": {"float32": 0, "bfloat16": 0},
        }
    elif exp_id == "bf16_compute":
        rec = {
            "size": 1024,
            "float32": timing_json(base * ratio),
            "bfloat16": timing_json(base),
            "converts": {"float32": 0, "bfloat16": 0},
        }
    elif exp_id == "scan":
        flops = model.contract(256, 256, 256).flops
        rec = {
            "size": 256,
            "steps": 10,
            "body": timing_json(base),
            "scan": timing_json(base * ratio),
            "xla_flops": {"body": float(flops), "scan": float(flops + 2)},
            "our_flops": {"body": flops, "scan": 10 * flops},
            "kernels": {"body": 2, "scan": 42},
        }
    else:
        raise AssertionError(exp_id)
    rec.update(extra)
    return {"available": True, **rec}


def sweep_raw(exp_id: str, flat: float, slope: float, **extra: Any) -> dict[str, Any]:
    xs = BATCHES if exp_id == "batching" else SIZES
    times = [timing_json(max(flat, slope * x)) for x in xs]
    if exp_id == "batching":
        rec = {"d": D, "itemsize": 4, "batches": xs, "times": times}
    else:
        rec = {"itemsize": 4, "sizes": xs, "times": times}
    return {"available": True, **rec, **extra}


def typed_lab(experiments: Any) -> LabExperiments:
    """The typed lab record of plain ``experiments``, each record given the keys the schema
    requires that it left out: no kernel inventory recorded (none by variant, and an
    unreadable one per sweep point), no dtypes named."""
    if not isinstance(experiments, dict):
        return LabExperiments.model_validate(experiments)
    filled = {}
    for exp_id, record in experiments.items():
        if isinstance(record, dict) and record.get("available") is True:
            points = record.get("times")  # a sweep's: one per point
            record = {"programs": ([{"available": False, "reason": "not recorded"}] * len(points)
                                   if isinstance(points, list) else {}),
                      **({"dtypes": {}} if exp_id.startswith("bf16") else {}), **record}
        filled[exp_id] = record
    return LabExperiments.model_validate(filled)


def analyse_raw(raw: dict[str, Any], **options: Any) -> list[dict[str, Any]]:
    """:func:`ex.analyse` of a plain lab record (its experiments and cache size)."""
    return ex.analyse(typed_lab(raw["experiments"]), cache_bytes=raw.get("cache_bytes"),
                      **options)


def analyse_one(
    record: dict[str, Any],
    exp_id: str,
    ceilings: ex.MeasuredCeilings | None = None,
    cache_bytes: int | None = None,
) -> dict[str, Any]:
    raw = {"experiments": {exp_id: record}, "cache_bytes": cache_bytes}
    out = {e.id: e for e in analyse_raw(raw, ceilings=ceilings, peak=PEAK, bandwidth=BW)}
    return out[exp_id]


def predicted_ratio(exp_id: str) -> float:
    """The hypothetical-budget predictions, computed here from the model directly."""
    disp = ex.HYPOTHETICAL_DISPATCH_S
    if exp_id == "doubled_traffic":
        return model.predicted_seconds(2 * N, 8 * N, PEAK, BW, disp) / model.predicted_seconds(
            2 * N, 4 * N, PEAK, BW, disp
        )
    if exp_id == "fusion":
        c = model.contract(*FUSION)
        extra = 2 * 4 * FUSION[0] * FUSION[2]
        return model.predicted_seconds(
            c.flops, c.minimum_bytes + extra, PEAK, BW, disp
        ) / model.predicted_seconds(c.flops, c.minimum_bytes, PEAK, BW, disp)
    if exp_id == "bf16_memory":
        return model.predicted_seconds(N, 8 * N, PEAK, BW, disp) / model.predicted_seconds(
            N, 4 * N, PEAK, BW, disp
        )
    if exp_id == "bf16_compute":
        c32, c16 = model.contract(1024, 1024, 1024, 4), model.contract(1024, 1024, 1024, 2)
        return model.predicted_seconds(
            c32.flops, c32.minimum_bytes, PEAK, BW, disp
        ) / model.predicted_seconds(c16.flops, c16.minimum_bytes, 2 * PEAK, BW, disp)
    c = model.contract(256, 256, 256)
    return model.predicted_seconds(
        10 * c.flops, c.minimum_bytes, PEAK, BW, disp
    ) / model.predicted_seconds(c.flops, c.minimum_bytes, PEAK, BW, disp)


RATIO_IDS = ["doubled_traffic", "fusion", "bf16_memory", "bf16_compute", "scan"]


# ------------------------------------------------------------------------------- verdict


def test_verdict_linear_held_and_failed() -> None:
    held = ex.verdict(2.0, 1.76, tolerance=0.25)
    assert held.status == "held"
    # The one error of a prediction: |predicted - measured| / measured (as Miss.error).
    assert held.error == pytest.approx(0.24 / 1.76)
    assert held.text == "held within 14%"
    failed = ex.verdict(2.0, 1.05, tolerance=0.25, reason_if_failed="XLA did not fuse")
    assert failed.status == "failed"
    assert failed.error == pytest.approx(0.95 / 1.05)
    assert failed.text == (
        "failed: measured 1.05× against a predicted 2× (error 90%); "
        "likely reason: XLA did not fuse"
    )


def test_verdict_boundary_is_inclusive() -> None:
    assert ex.verdict(5.0, 4.0, tolerance=0.25).status == "held"
    assert ex.verdict(5.0, 4.0 - 1e-9, tolerance=0.25).status == "failed"


def test_the_lab_error_is_the_miss_error() -> None:
    """One definition of a prediction's error: a lab verdict on two times and the program
    table's Miss agree, for misses either way."""
    from roofline_report.analysis.miss import Miss
    for predicted, measured in ((2.0, 1.76), (1.0, 3.0), (3.0, 1.0)):
        v = ex.verdict(predicted, measured, tolerance=10.0)
        assert v.error == pytest.approx(Miss(predicted, measured).error)


def test_verdict_log_scale() -> None:
    held = ex.verdict(10.0, 14.0, tolerance=2.0, log_scale=True, unit="columns")
    assert held.status == "held"
    assert held.error == pytest.approx(1.4)
    assert held.text == "held within a factor of 1.4"
    low = ex.verdict(10.0, 4.0, tolerance=2.0, log_scale=True, unit="columns")
    assert low.status == "failed"
    assert low.error == pytest.approx(2.5)
    assert (
        "measured 4 columns against a predicted 10 columns (off by a factor of 2.5)"
        in (low.text)
    )


@pytest.mark.parametrize(
    ("p", "m", "log"),
    [
        (None, 1.0, False),
        (1.0, None, False),
        (math.nan, 1.0, False),
        (1.0, math.inf, False),
        (1.0, 0.0, False),  # a relative error needs a non-zero measurement
        (1.0, 0.0, True),
        (-1.0, 1.0, True),
    ],
)
def test_verdict_unavailable(p: float | None, m: float | None, log: bool) -> None:
    v = ex.verdict(p, m, tolerance=2.0, log_scale=log)
    assert v.status == "unavailable"
    assert v.error is None
    assert v.text.startswith("unavailable: ")
    json.dumps(asdict(v), allow_nan=False)


@pytest.mark.parametrize(
    ("tol", "log"), [(0.0, False), (-1.0, False), (math.nan, False), (1.0, True), (0.5, True)]
)
def test_verdict_rejects_bad_tolerance(tol: float, log: bool) -> None:
    with pytest.raises(ValueError, match="tolerance"):
        ex.verdict(1.0, 1.0, tolerance=tol, log_scale=log)


# ---------------------------------------------------------------------------------- knee


def test_knee_recovers_flat_then_proportional_exactly() -> None:
    xs = [2.0**i for i in range(12)]
    flat, slope = 1e-4, 1e-6  # knee at 100
    fit = ex.knee_fit(xs, [max(flat, slope * x) for x in xs])
    assert fit is not None
    assert fit["knee"] == pytest.approx(100.0)
    assert fit["flat"] == pytest.approx(flat)
    assert fit["slope"] == pytest.approx(slope)
    assert fit["split"] == 7  # 1..64 flat
    assert fit["at_edge"] is False


def test_knee_of_a_smooth_sum_and_noisy_data() -> None:
    xs = [2.0**i for i in range(16)]
    flat, slope = 5e-6, 5e-10  # knee 1e4
    smooth = ex.knee([float(x) for x in xs], [flat + slope * x for x in xs])
    assert smooth is not None and 1e4 / 2 < smooth < 1e4 * 2
    # deterministic multiplicative noise of up to +-10%
    noise = [1 + 0.1 * math.sin(7.3 * i) for i in range(len(xs))]
    noisy = ex.knee(xs, [max(flat, slope * x) * e for x, e in zip(xs, noise, strict=True)])
    assert noisy is not None and noisy == pytest.approx(1e4, rel=0.25)


def test_knee_is_order_independent_and_flags_edges() -> None:
    xs = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
    times = [max(1.0, 0.125 * x) for x in xs]
    assert ex.knee(xs[::-1], times[::-1]) == pytest.approx(ex.knee(xs, times) or 0)
    flat_only = ex.knee_fit(xs, [1.0] * len(xs))
    assert flat_only is not None and flat_only["at_edge"] is True
    proportional = ex.knee_fit(xs, [3.0 * x for x in xs])
    assert proportional is not None and proportional["at_edge"] is True


@pytest.mark.parametrize(
    ("xs", "ts"),
    [
        ([1.0, 2.0], [1.0, 2.0]),
        ([1.0, 2.0, 4.0], [1.0, 0.0, 2.0]),
        ([1.0, -2.0, 4.0], [1.0] * 3),
        ([1.0, 2.0, 4.0], [1.0, math.nan, 2.0]),
        ([1.0, 2.0, 4.0], [1.0, 2.0]),
    ],
)
def test_knee_undefined(xs: list[float], ts: list[float]) -> None:
    assert ex.knee(xs, ts) is None


# --------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize(("d", "ridge"), [(1024, 5.0), (1024, 3.7), (8192, 82.0)])
def test_batch_ridge_solves_the_contract_intensity(d: int, ridge: float) -> None:
    b_star = ex.batch_ridge(d, ridge)
    assert b_star is not None
    assert b_star == pytest.approx(2 * ridge * d / (d - 4 * ridge))
    assert 2 * d * d * b_star / (4 * (d * d + 2 * d * b_star)) == pytest.approx(ridge)
    low, high = math.floor(b_star), math.ceil(b_star)
    assert model.contract(d, d, high).intensity >= ridge
    if low >= 1:
        assert model.contract(d, d, low).intensity < ridge


def test_batch_ridge_never_reached() -> None:
    assert ex.batch_ridge(16, 4.0) is None  # intensity tends to d/4 = 4, never above
    assert ex.batch_ridge(16, 3.9) is not None


def test_dispatch_size() -> None:
    assert ex.dispatch_size(5e-6, 20e9, 8) == pytest.approx(12500)
    n = ex.dispatch_size(5e-6, 20e9, 8)
    assert model.predicted_seconds(n, 8 * n, PEAK, BW) == pytest.approx(5e-6)


def test_fusion_traffic() -> None:
    t = ex.fusion_traffic(2048, 4, 2048, 4)
    assert t["fused"] == model.contract(2048, 4, 2048).minimum_bytes
    assert t["unfused"] - t["fused"] == 2 * 4 * 2048 * 2048
    assert t["flops"] == 2 * 2048 * 4 * 2048


# ------------------------------------------------------------------------------ budgets


def test_budgets_measured_and_fallback() -> None:
    measured = ex.budgets(CEILINGS, peak=PEAK, bandwidth=BW)
    assert (measured.peak, measured.bandwidth, measured.dispatch) == (150e9, 40e9, 6e-6)
    assert measured.kind is Kind.MEASURED
    assert dict(measured.compute) == {"float32": 150e9, "bfloat16": 140e9}
    fallback = ex.budgets(None, peak=PEAK, bandwidth=BW)
    assert (fallback.peak, fallback.bandwidth) == (PEAK, BW)
    assert fallback.kind is Kind.HYPOTHETICAL
    assert fallback.dispatch == ex.HYPOTHETICAL_DISPATCH_S
    assert "hypothetical" in fallback.note
    half = ex.budgets(ex.MeasuredCeilings(peak=1e11, bandwidth=None, dispatch=None, compute={}),
                      peak=PEAK, bandwidth=BW)
    assert half.kind is Kind.HYPOTHETICAL and half.peak == PEAK


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_budgets_reject_bad_hypothetical(bad: float) -> None:
    with pytest.raises(InputError, match="hypothetical peak"):
        ex.budgets(None, peak=bad, bandwidth=BW)


# ------------------------------------------------------------------------------ analyse


@pytest.mark.parametrize("exp_id", RATIO_IDS)
def test_ratio_experiments_hold_near_and_fail_far_from_the_prediction(exp_id: str) -> None:
    predicted = predicted_ratio(exp_id)
    tol = ex.TOLERANCE[exp_id]
    held = analyse_one(ratio_raw(exp_id, predicted * (1 + tol / 2)), exp_id)
    assert held.prediction.value == pytest.approx(predicted)
    assert held.prediction.kind == "predicted"
    assert held.roofs_kind == "hypothetical"
    assert held.measurement.kind == "measured"
    assert held.measurement.value == pytest.approx(predicted * (1 + tol / 2))
    assert held.verdict.status == "held"
    assert held.likely_reason == ""
    failed = analyse_one(ratio_raw(exp_id, predicted * (1 - 2 * tol)), exp_id)
    assert failed.verdict.status == "failed"
    assert failed.likely_reason
    assert failed.likely_reason in failed.verdict.text


def test_doubled_traffic_predicts_two_when_both_are_memory_bound() -> None:
    assert predicted_ratio("doubled_traffic") == pytest.approx(2.0)
    rec = analyse_one(ratio_raw("doubled_traffic", 2.0), "doubled_traffic", ceilings=CEILINGS)
    assert rec.prediction.kind == "predicted"
    assert rec.roofs_kind == "measured"
    assert rec.prediction.value == pytest.approx(2.0)
    assert rec.details["bound"] == {"one_array": "memory", "two_arrays": "memory"}


def test_doubled_traffic_blames_the_cache_when_the_data_fit() -> None:
    rec = analyse_one(ratio_raw("doubled_traffic", 1.1), "doubled_traffic", cache_bytes=1 << 30)
    assert "fit in the last-level cache" in rec.likely_reason


def test_fusion_failure_blames_missing_fusion_from_the_kernel_count() -> None:
    unfused = ratio_raw("fusion", 1.0, kernels={"fused": 2, "unfused": 2})
    rec = analyse_one(unfused, "fusion")
    assert rec.verdict.status == "failed"
    assert rec.likely_reason.startswith("XLA did not fuse the dot and the tanh")
    assert "runs 2 kernels" in rec.likely_reason
    # One kernel in the fused variant: the reason must come from other evidence.
    fused = analyse_one(ratio_raw("fusion", 1.0), "fusion", cache_bytes=1 << 30)
    assert "did not fuse" not in fused.likely_reason
    assert "cache" in fused.likely_reason


def test_fusion_prediction_is_the_traffic_ratio_when_memory_bound() -> None:
    rec = analyse_one(ratio_raw("fusion", 1.0), "fusion")
    assert rec.details["bound"] == "memory"
    assert rec.prediction.value == pytest.approx(rec.details["traffic_ratio"])


def test_bf16_memory_blames_converts() -> None:
    rec = analyse_one(
        ratio_raw("bf16_memory", 0.5, converts={"float32": 0, "bfloat16": 3}), "bf16_memory"
    )
    assert "computes bfloat16 arithmetic in float32" in rec.likely_reason
    assert "3 converts" in rec.likely_reason


def test_bf16_compute_prediction_from_measured_ceilings_and_upcast_reason() -> None:
    c32, c16 = model.contract(1024, 1024, 1024, 4), model.contract(1024, 1024, 1024, 2)
    expected = model.predicted_seconds(
        c32.flops, c32.minimum_bytes, 150e9, 40e9, 6e-6
    ) / model.predicted_seconds(c16.flops, c16.minimum_bytes, 140e9, 40e9, 6e-6)
    held = analyse_one(ratio_raw("bf16_compute", expected), "bf16_compute", ceilings=CEILINGS)
    assert held.prediction.kind == "predicted"
    assert held.roofs_kind == "measured"
    assert held.prediction.value == pytest.approx(expected)
    assert held.verdict.status == "held"
    faster = replace(CEILINGS, compute={"float32": 150e9, "bfloat16": 300e9})
    wins = analyse_one(ratio_raw("bf16_compute", 2.0), "bf16_compute", ceilings=faster)
    assert wins.verdict.status == "held"
    # Measured bf16 ceiling at or under f32's, and a far-off measurement: the upcast reason.
    slow = analyse_one(ratio_raw("bf16_compute", expected / 3), "bf16_compute", ceilings=CEILINGS)
    assert slow.verdict.status == "failed"
    assert "upcasts bfloat16 matmuls" in slow.likely_reason
    # bfloat16 beating a prediction of no gain: an upcast cannot be the reason.
    beat = analyse_one(ratio_raw("bf16_compute", expected * 3), "bf16_compute", ceilings=CEILINGS)
    assert beat.verdict.status == "failed"
    assert "upcast" not in beat.likely_reason
    # No measured ceilings: the hypothetical 2x, and the converts as evidence.
    hypo = analyse_one(
        ratio_raw("bf16_compute", 0.9, converts={"float32": 0, "bfloat16": 3}), "bf16_compute"
    )
    assert hypo.prediction.kind == "predicted"
    assert hypo.roofs_kind == "hypothetical"
    assert "3 converts" in hypo.likely_reason


def _model_batch_slope(peak: float) -> float:
    return 2 * D * D / peak


@pytest.mark.parametrize("ceilings", [None, CEILINGS])
def test_batching_knee_holds_and_fails(ceilings: ex.MeasuredCeilings | None) -> None:
    b = ex.budgets(ceilings, peak=PEAK, bandwidth=BW)
    b_star = ex.batch_ridge(D, model.ridge(b.peak, b.bandwidth))
    assert b_star is not None
    slope = _model_batch_slope(b.peak)
    held = analyse_one(sweep_raw("batching", slope * b_star * 1.3, slope), "batching", ceilings)
    assert held.prediction.value == pytest.approx(b_star)
    assert held.prediction.kind == "predicted"
    assert held.roofs_kind == b.kind.value
    assert held.measurement.value == pytest.approx(b_star * 1.3)
    assert held.verdict.status == "held"
    # The flat part 4x higher than the model's: slow small batches push the knee right.
    slow_flat = analyse_one(sweep_raw("batching", slope * b_star * 4, slope), "batching", ceilings)
    assert slow_flat.verdict.status == "failed"
    assert "small batches read W at only" in slow_flat.likely_reason
    # The flat part 4x lower, W in cache: the knee moves left and the cache is named.
    cached = analyse_one(
        sweep_raw("batching", slope * b_star / 4, slope), "batching", ceilings, cache_bytes=1 << 30
    )
    assert cached.verdict.status == "failed"
    assert "fit in the last-level cache" in cached.likely_reason
    # The proportional part 4x steeper: slow large batches push the knee left.
    steep = analyse_one(sweep_raw("batching", slope * b_star, 4 * slope), "batching", ceilings)
    assert "large batches reach only" in steep.likely_reason


def test_batching_never_reaching_the_ridge_is_unavailable() -> None:
    tiny = ex.MeasuredCeilings(peak=1e15, bandwidth=1e9, dispatch=None, compute={})
    rec = analyse_one(sweep_raw("batching", 1e-3, 1e-6), "batching", tiny)
    assert rec.prediction.value is None
    assert "never reached" in rec.prediction.note
    assert rec.verdict.status == "unavailable"
    assert "never reached" in rec.verdict.text


def test_dispatch_knee_holds_and_fails() -> None:
    n_star = ex.dispatch_size(ex.HYPOTHETICAL_DISPATCH_S, BW, 8)
    slope = 8 / BW
    held = analyse_one(sweep_raw("dispatch", ex.HYPOTHETICAL_DISPATCH_S * 1.5, slope), "dispatch")
    assert held.prediction.value == pytest.approx(n_star)
    assert held.verdict.status == "held"
    slow = analyse_one(sweep_raw("dispatch", ex.HYPOTHETICAL_DISPATCH_S, slope * 5), "dispatch")
    assert slow.verdict.status == "failed"
    assert "freshly allocated output" in slow.likely_reason
    costly = analyse_one(sweep_raw("dispatch", ex.HYPOTHETICAL_DISPATCH_S * 5, slope), "dispatch")
    assert "above the" in costly.likely_reason and "dispatch floor" in costly.likely_reason


def test_dispatch_prediction_kind_follows_its_inputs() -> None:
    only_dispatch = ex.MeasuredCeilings(peak=None, bandwidth=None, dispatch=6e-6, compute={})
    rec = analyse_one(sweep_raw("dispatch", 6e-6, 8 / BW), "dispatch", only_dispatch)
    assert rec.prediction.kind == "predicted"
    assert rec.roofs_kind == "hypothetical"  # the bandwidth is still assumed
    assert rec.prediction.value == pytest.approx(ex.dispatch_size(6e-6, BW, 8))
    rec = analyse_one(sweep_raw("dispatch", 6e-6, 8 / 40e9), "dispatch", CEILINGS)
    assert rec.prediction.kind == "predicted"
    assert rec.roofs_kind == "measured"


def test_scan_reasons() -> None:
    rec = analyse_one(ratio_raw("scan", 10.0), "scan")
    assert rec.details["xla_ratio"] == pytest.approx(1.0, rel=1e-6)
    assert rec.details["scan_flops"] == 10 * rec.details["body_flops"]
    near_xla = analyse_one(ratio_raw("scan", 1.5), "scan")
    assert "nearer XLA's implied" in near_xla.likely_reason
    slow = analyse_one(ratio_raw("scan", 20.0), "scan")
    assert "kernels" in slow.likely_reason and "per step" in slow.likely_reason


def test_noise_is_named_when_nothing_else_explains_a_failure() -> None:
    rec = ratio_raw("doubled_traffic", 3.0)
    rec["two_arrays"] = timing_json(3e-3, spread=0.5)
    out = analyse_one(rec, "doubled_traffic")
    assert out.likely_reason.startswith("timing noise")


def test_analyse_covers_every_experiment_and_marks_missing_ones() -> None:
    raw = {
        "experiments": {
            "fusion": {"available": False, "reason": "out of memory"},
            "scan": ratio_raw("scan", 10.0),
        }
    }
    out = analyse_raw(raw, ceilings=None, peak=PEAK, bandwidth=BW)
    assert [e.id for e in out] == list(ex.EXPERIMENT_IDS)
    by_id = {e.id: e for e in out}
    assert by_id["fusion"].verdict == replace(
        by_id["fusion"].verdict, status="unavailable", text="unavailable: out of memory")
    assert by_id["batching"].verdict.status == "unavailable"
    assert by_id["scan"].verdict.status == "held"
    for e in out:
        assert isinstance(e, Experiment)
        assert isinstance(e.verdict, ex.Verdict)
        assert e.title and e.hypothesis
        assert e.prediction.unit == e.measurement.unit


def full_raw() -> dict[str, Any]:
    slope = _model_batch_slope(PEAK)
    exps = {i: ratio_raw(i, predicted_ratio(i)) for i in RATIO_IDS}
    exps["batching"] = sweep_raw("batching", slope * 10, slope)
    exps["dispatch"] = sweep_raw("dispatch", 5e-6, 8 / BW)
    return {"backend": "cpu", "cache_bytes": 1 << 25, "experiments": exps}


@pytest.mark.parametrize("ceilings", [None, CEILINGS])
def test_analyse_is_deterministic_with_plain_json_details(
        ceilings: ex.MeasuredCeilings | None) -> None:
    first = analyse_raw(full_raw(), ceilings=ceilings, peak=PEAK, bandwidth=BW)
    again = analyse_raw(json.loads(json.dumps(full_raw())), ceilings=ceilings, peak=PEAK,
                        bandwidth=BW)
    assert first == again
    for e in first:  # every number finite, as plain JSON holds it
        assert all(value is None or math.isfinite(value)
                   for value in (e.prediction.value, e.measurement.value, e.verdict.error))
    assert json.dumps([e.details for e in first], sort_keys=True, allow_nan=False) == \
        json.dumps([e.details for e in again], sort_keys=True, allow_nan=False)


def _without(record: dict[str, Any], key: str) -> dict[str, Any]:
    return {name: value for name, value in record.items() if name != key}


@pytest.mark.parametrize(
    ("experiments", "message"),
    [
        ({"batching": {**sweep_raw("batching", 1, 1), "times": []}},
         "experiment 'batching' field 'times' must be a list of 10 timing records"),
        ({"batching": _without(sweep_raw("batching", 1, 1), "d")},
         "experiment 'batching' field 'd' must be a positive integer, got None"),
        ({"batching": _without(sweep_raw("batching", 1, 1), "batches")},
         "experiment 'batching' field 'batches' must be a list of positive integers"),
        ({"dispatch": _without(sweep_raw("dispatch", 1, 1), "sizes")},
         "experiment 'dispatch' field 'sizes' must be a list of positive integers"),
        ({"bf16_memory": _without(ratio_raw("bf16_memory", 1.0), "elements")},
         "experiment 'bf16_memory' field 'elements' must be a positive integer, got None"),
        ({"bf16_compute": _without(ratio_raw("bf16_compute", 1.0), "size")},
         "experiment 'bf16_compute' field 'size' must be a positive integer, got None"),
    ],
)
def test_analyse_rejects_what_the_schema_leaves_open(experiments: dict[str, Any],
                                                      message: str) -> None:
    with pytest.raises(InputError, match=re.escape(f"lab measurements: {message}")):
        analyse_raw({"experiments": experiments}, ceilings=None, peak=PEAK, bandwidth=BW)


@pytest.mark.parametrize(
    "experiments",
    [
        [],
        {"scan": 3},
        {"scan": {"available": True, "size": 0, "steps": 10}},
        {"scan": {**ratio_raw("scan", 1.0), "body": {"per_call": {}}}},
        {"fusion": ratio_raw("fusion", 1.0, kernels={"fused": -1})},
    ],
)
def test_the_schema_refuses_malformed_experiments(experiments: Any) -> None:
    with pytest.raises(pydantic.ValidationError):
        typed_lab(experiments)


# ---------------------------------------------------------------------------- exercises


def exercises_by_id(ceilings: ex.MeasuredCeilings | None = None) -> dict[str, Exercise]:
    return {x.id: x for x in ex.exercises(peak=PEAK, bandwidth=BW, ceilings=ceilings)}


def test_every_exercise_follows_an_experiment() -> None:
    out = ex.exercises(peak=PEAK, bandwidth=BW, ceilings=None)
    assert {x.after for x in out} <= set(ex.EXPERIMENT_IDS)
    for x in out:
        assert x.id and x.question and isinstance(x.answer, Answer)
        assert x.solution and all(isinstance(s, str) for s in x.solution)


def test_exercise_seed_shapes_in_bfloat16() -> None:
    answer = exercises_by_id()["ex_bf16"].answer
    assert answer.float32.flops == answer.bfloat16.flops == 27648
    assert answer.float32.minimum_bytes == 8064
    assert answer.bfloat16.minimum_bytes == 4032
    assert answer.float32.intensity == pytest.approx(24 / 7)
    assert answer.bfloat16.intensity == pytest.approx(48 / 7)
    assert answer.float32.bound == "memory"
    assert answer.bfloat16.bound == "compute"  # 48/7 > the ridge 5
    assert answer.bfloat16.attainable == PEAK


def test_exercise_batch_at_the_ridge() -> None:
    ridge = PEAK / BW
    answer = exercises_by_id()["ex_batching"].answer
    assert answer.b_star == pytest.approx(2 * ridge * 1024 / (1024 - 4 * ridge))
    assert answer.first_batch_at_ridge == math.ceil(answer.b_star)
    assert answer.intensity_at_first == model.contract(1024, 1024, 11).intensity >= ridge
    assert answer.intensity_below_first == model.contract(1024, 1024, 10).intensity < ridge
    assert answer.measured_b_star is None
    measured = exercises_by_id(CEILINGS)["ex_batching"].answer
    assert measured.measured_b_star == pytest.approx(ex.batch_ridge(1024, 150 / 40))


def test_exercise_dispatch_bound_size() -> None:
    answer = exercises_by_id()["ex_dispatch"].answer
    assert answer.n_star == pytest.approx(12500)
    assert answer.traffic_seconds_at_n_star == pytest.approx(5e-6)
    assert exercises_by_id(CEILINGS)["ex_dispatch"].answer.measured_n_star == (
        pytest.approx(6e-6 * 40e9 / 8)
    )


def test_exercise_scan_flops() -> None:
    answer = exercises_by_id()["ex_scan"].answer
    assert answer.body_flops == 2 * 256**3
    assert answer.our_flops == 10 * answer.xla_flops == 10 * 2 * 256**3
    assert answer.ratio == 10


def test_exercise_doubled_and_fusion() -> None:
    by_id = exercises_by_id()
    doubled = by_id["ex_doubled_traffic"].answer
    assert doubled.one_array.intensity == 0.5
    assert doubled.two_arrays.intensity == 0.25
    assert doubled.two_arrays.attainable == BW * 0.25
    assert doubled.time_ratio == pytest.approx(2.0)
    fusion = by_id["ex_fusion"].answer
    c = model.contract(2048, 4, 2048)
    assert fusion.fused_bytes == c.minimum_bytes
    assert fusion.unfused_bytes == c.minimum_bytes + 2 * 4 * 2048 * 2048
    assert fusion.time_ratio == pytest.approx(fusion.unfused_bytes / c.minimum_bytes)


def test_exercise_answers_are_in_their_solutions() -> None:
    by_id = exercises_by_id()
    assert any("12500" in s for s in by_id["ex_dispatch"].solution)
    assert any("27648" in s for s in by_id["ex_bf16"].solution)
    assert any("b = 11" in s for s in by_id["ex_batching"].solution)


def test_exercises_deterministic_finite_and_inputs() -> None:
    a = ex.exercises(peak=PEAK, bandwidth=BW, ceilings=CEILINGS)
    assert a == ex.exercises(peak=PEAK, bandwidth=BW, ceilings=CEILINGS)
    json.dumps([asdict(x) for x in a], allow_nan=False)  # every number finite
    with pytest.raises(InputError):
        ex.exercises(peak=-1.0, bandwidth=BW, ceilings=None)


# ------------------------------------------------------------------- the per-kernel model
#
# A hand-built measured roof set and hand-built kernel inventories (the shape of a workload's
# "kernels" record): every expected time below is written out from the roofs' numbers.

MEAS = Kind.MEASURED
MiB = 1 << 20
ROOFS = RoofSet(
    "this machine",
    MEAS,
    compute=(
        ComputeRoof("matmul float32", 100e9, "float32", MEAS, ""),
        ComputeRoof("matmul bfloat16", 200e9, "bfloat16", MEAS, ""),
    ),
    bandwidth=(
        BandwidthRoof("L2 read-write", 100e9, "L2", MEAS, "", None, MiB),
        BandwidthRoof("DRAM read-write", 20e9, "DRAM", MEAS, "", MiB, None),
    ),
    floors=(
        Floor("dispatch", 10e-6, MEAS, ""),
        Floor("dispatch enqueued", 5e-6, MEAS, ""),
        Floor("launch", 1e-6, MEAS, ""),
    ),
    rates=(
        RateRoof("multiply-add float32", "multiply-add", "float32", 100e9, MEAS, ""),
        RateRoof("tanh float32", "tanh", "float32", 1e9, MEAS, ""),
    ),
)
BW_L2, BW_DRAM, DOT, FMA, TANH = 100e9, 20e9, 100e9, 100e9, 1e9
LAUNCH, ENQUEUED = 1e-6, 5e-6


def kernel(
    name: str,
    *,
    flops_by_op: dict[str, int] | None = None,
    trans: dict[str, int] | None = None,
    read: int = 0,
    written: int = 0,
    trips: int = 1,
    category: str = "elementwise",
    dtype: str = "f32",
) -> dict[str, Any]:
    """One kernel of an inventory, as kernel_inventory writes it (its bytes of HLO type
    ``dtype``)."""
    by_op = flops_by_op or {}
    by_trans = trans or {}
    return {
        "name": name, "opcode": "fusion", "category": category, "kind": "kLoop",
        "fusion_kind": "kLoop", "computation": "main.1", "loop": None if trips == 1 else "while",
        "trips": trips, "flops": sum(by_op.values()), "transcendentals": sum(by_trans.values()),
        "bytes_read": read, "bytes_written": written, "read_by_dtype": {dtype: read},
        "written_by_dtype": {dtype: written}, "flops_by_op": by_op,
        "transcendentals_by_op": by_trans, "ops": {"fusion": 1}, "uncosted": [],
        "op_name": f"jit(f)/{name}", "source": None,
    }


def inventory(*kernels: dict[str, Any]) -> dict[str, Any]:
    return {
        "module": "jit_f", "kernels": list(kernels), "count": len(kernels),
        "launches": sum(k["trips"] for k in kernels),
        "flops": sum(k["flops"] * k["trips"] for k in kernels),
        "transcendentals": sum(k["transcendentals"] * k["trips"] for k in kernels),
        "bytes_read": sum(k["bytes_read"] * k["trips"] for k in kernels),
        "bytes_written": sum(k["bytes_written"] * k["trips"] for k in kernels),
        "flops_by_op": {}, "transcendentals_by_op": {}, "by_category": {}, "notes": [],
    }


def reduction(n: int, arrays: int) -> dict[str, Any]:
    """sum(2·x) (one array) or sum(w·x) (two) on n float32 elements: one reduction kernel."""
    return inventory(kernel("ynn_fusion", flops_by_op={"stablehlo.multiply": n,
                                                       "stablehlo.reduce": n - 1},
                            read=4 * n * arrays, written=4, category="reduction"))


def matmul(m: int, k: int, n: int, itemsize: int = 4, trips: int = 1) -> dict[str, Any]:
    return kernel("ynn_fusion", flops_by_op={"stablehlo.dot_general": 2 * m * k * n},
                  read=itemsize * (m * k + k * n), written=itemsize * m * n, trips=trips,
                  category="matmul", dtype={4: "f32", 2: "bf16"}[itemsize])


def tanh_kernel(elements: int, trips: int = 1) -> dict[str, Any]:
    return kernel("wrapped_tanh", trans={"stablehlo.tanh": elements}, read=4 * elements,
                  written=4 * elements, trips=trips)


def doubled_programs() -> dict[str, Any]:
    return {"one_array": reduction(N, 1), "two_arrays": reduction(N, 2)}


def doubled_by_hand() -> float:
    # Both read over 1 MiB (DRAM); memory binds: 4N B at 20 GB/s against 2N flops at 100 GFLOP/s.
    t_one = (4 * N + 4) / BW_DRAM + LAUNCH + ENQUEUED
    t_two = (8 * N + 4) / BW_DRAM + LAUNCH + ENQUEUED
    return t_two / t_one


def analyse_with(record: dict[str, Any], exp_id: str, roofs: RoofSet | None = ROOFS,
                 ceilings: ex.MeasuredCeilings | None = None,
                 cache_bytes: int | None = None) -> dict[str, Any]:
    raw = {"experiments": {exp_id: record}, "cache_bytes": cache_bytes}
    out = analyse_raw(raw, ceilings=ceilings, peak=PEAK, bandwidth=BW, roofs=roofs)
    return {e.id: e for e in out}[exp_id]


def test_doubled_traffic_per_kernel_ratio_by_hand() -> None:
    expected = doubled_by_hand()
    assert expected == pytest.approx(1.9722, abs=1e-4)  # the floors pull it under 2
    rec = analyse_with(ratio_raw("doubled_traffic", expected, programs=doubled_programs()),
                       "doubled_traffic")
    assert rec.prediction.value == pytest.approx(expected, rel=1e-12)
    assert rec.prediction.kind == "predicted"
    assert rec.roofs_kind == "measured"
    note = rec.prediction.note
    assert "the per-kernel model on this machine's measured roofs" in note
    assert "one array: 1 kernel, bound by memory (DRAM)" in note
    assert rec.verdict.status == "held"
    assert rec.details["bound"] == {"one_array": "memory", "two_arrays": "memory"}
    assert rec.details["predicted_seconds"]["one_array"] == pytest.approx(
        (4 * N + 4) / BW_DRAM + LAUNCH + ENQUEUED, rel=1e-12)
    assert rec.details["model"]["two_arrays"]["bandwidth"] == pytest.approx(BW_DRAM)
    assert rec.details["single_roof_reason"] == ""


def test_doubled_traffic_reason_compares_with_the_level_the_model_charged() -> None:
    # Measured 1.0 (one array at 1 ms, 4.19 GB/s): under half the DRAM roof the model charged.
    rec = analyse_with(ratio_raw("doubled_traffic", 1.0, programs=doubled_programs()),
                       "doubled_traffic")
    assert rec.verdict.status == "failed"
    assert rec.likely_reason == (
        "the one-array kernel reaches only 4.19 GB/s of the 20 GB/s the model charges for DRAM: "
        "something other than memory bounds it, so more bytes cost less than proportionally "
        "more time"
    )
    # Arrays the model already placed in L2 (under 1 MiB): a large cache explains nothing more.
    small = 1 << 16
    programs = {"one_array": reduction(small, 1), "two_arrays": reduction(small, 2)}
    raw = ratio_raw("doubled_traffic", 1.0, programs=programs, elements=small)
    raw["one_array"] = timing_json(4 * small / BW_L2)  # at the L2 roof: not "well below" it
    raw["two_arrays"] = timing_json(0.8 * 4 * small / BW_L2)  # faster: the ratio fails
    cached = analyse_with(raw, "doubled_traffic", cache_bytes=1 << 30)
    assert cached.details["model"]["one_array"]["level"] == "L2"
    assert cached.verdict.status == "failed"
    assert "last-level cache" not in cached.likely_reason
    # The same arrays priced by the single-roof model: the cache is the reason.
    single = analyse_with(raw, "doubled_traffic", roofs=None, cache_bytes=1 << 30)
    assert "fit in the last-level cache" in single.likely_reason


def test_fusion_per_kernel_ratio_by_hand() -> None:
    m, k, n = FUSION
    ab, product = 4 * (m * k + k * n), 4 * m * n
    fused = inventory(kernel("fusion", flops_by_op={"stablehlo.dot_general": 2 * m * k * n},
                             trans={"stablehlo.tanh": m * n}, read=ab, written=product))
    unfused = inventory(matmul(m, k, n), tanh_kernel(m * n))
    # fused: alu 2mkn / 100 GFLOP/s + mn / 1 G tanh/s = 335.5 us + 4194 us, memory 842 us.
    t_f = 2 * m * k * n / DOT + m * n / TANH + LAUNCH + ENQUEUED
    # unfused: the matmul is memory-bound (842 us), the tanh's 4194 us of tanh bind its kernel.
    t_u = (ab + product) / BW_DRAM + m * n / TANH + 2 * LAUNCH + ENQUEUED
    expected = t_u / t_f
    rec = analyse_with(
        ratio_raw("fusion", expected, programs={"fused": fused, "unfused": unfused}), "fusion")
    assert rec.prediction.value == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(1.1119, abs=1e-4)  # far under the traffic ratio
    assert rec.details["bound"] == "compute"
    assert rec.details["model_bytes"] == {"fused": ab + product,
                                             "unfused": ab + 3 * product}
    assert "move 2.99× the bytes" in rec.prediction.note
    assert rec.verdict.status == "held"
    far = analyse_with(
        ratio_raw("fusion", 3.0, programs={"fused": fused, "unfused": unfused}), "fusion")
    assert far.likely_reason == "the fused kernel is compute-bound under the per-kernel model"


def bf16_matmul_programs(size: int) -> dict[str, Any]:
    return {"float32": inventory(matmul(size, size, size, 4)),
            "bfloat16": inventory(matmul(size, size, size, 2))}


def test_bf16_compute_per_kernel_ratio_and_upcast_reason() -> None:
    size = 1024
    flops = 2 * size**3
    # Both compute-bound: 21.5 ms at 100 GFLOP/s against 10.7 ms at 200 GFLOP/s.
    expected = (flops / 100e9 + LAUNCH + ENQUEUED) / (flops / 200e9 + LAUNCH + ENQUEUED)
    programs = bf16_matmul_programs(size)
    rec = analyse_with(ratio_raw("bf16_compute", expected, programs=programs,
                                 dtypes={"float32": "float32", "bfloat16": "bfloat16"}),
                       "bf16_compute")
    assert rec.prediction.value == pytest.approx(expected, rel=1e-12)
    assert rec.prediction.kind == "predicted"
    assert rec.roofs_kind == "measured"
    assert rec.details["ceilings"] == {"float32": 100e9, "bfloat16": 200e9}
    # A bfloat16 roof under float32's: the model predicts a loss, and a slower bfloat16 than
    # even that is blamed on the rates the model used.
    slow_roofs = replace(ROOFS, compute=(ROOFS.compute[0],
                                         ComputeRoof("matmul bfloat16", 80e9, "bfloat16",
                                                     MEAS, "")))
    slower = (flops / 100e9 + LAUNCH + ENQUEUED) / (flops / 80e9 + LAUNCH + ENQUEUED)
    slow = analyse_with(ratio_raw("bf16_compute", slower / 3, programs=programs),
                        "bf16_compute", roofs=slow_roofs)
    assert slow.prediction.value == pytest.approx(slower, rel=1e-12)
    assert slow.verdict.status == "failed"
    assert (
        "its measured bfloat16 matmul rate at this size (80 GFLOP/s) is no higher than "
        "float32's (100 GFLOP/s)" in slow.likely_reason
    )


def test_bf16_memory_prices_each_variant_in_its_dtype() -> None:
    n = N
    f32 = inventory(kernel("scale", flops_by_op={"stablehlo.multiply": n}, read=4 * n + 4,
                           written=4 * n))
    bf16 = inventory(kernel("scale", flops_by_op={"stablehlo.multiply": n,
                                                  "stablehlo.convert": 2 * n},
                            read=2 * n + 2, written=2 * n))
    convert = RateRoof("convert float32", "convert", "float32", 1e9, MEAS, "")
    roofs = replace(ROOFS, rates=(*ROOFS.rates, convert))
    # float32: 8N B in DRAM, 420 us; bfloat16: 4N B (210 us) but 2N conversions at 1 G/s and
    # its multiplies at float32's rate: 2.1 ms + 10.5 us, so conversions bind.
    t32 = (8 * n + 4) / BW_DRAM + LAUNCH + ENQUEUED
    t16 = 2 * n / 1e9 + n / FMA + LAUNCH + ENQUEUED
    expected = t32 / t16
    rec = analyse_with(
        ratio_raw("bf16_memory", expected, programs={"float32": f32, "bfloat16": bf16},
                  converts={"float32": 0, "bfloat16": 3}),
        "bf16_memory", roofs=roofs)
    assert rec.prediction.value == pytest.approx(expected, rel=1e-12)
    assert rec.details["model"]["bfloat16"]["binding"] == "compute"
    assert "bfloat16: 1 kernel, bound by compute" in rec.prediction.note
    assert rec.verdict.status == "held"
    # bfloat16 faster than predicted: its converts cannot be the reason.
    fast = analyse_with(
        ratio_raw("bf16_memory", 4 * expected, programs={"float32": f32, "bfloat16": bf16},
                  converts={"float32": 0, "bfloat16": 3}),
        "bf16_memory", roofs=roofs)
    assert fast.verdict.status == "failed"
    assert "converts" not in fast.likely_reason


def batching_programs() -> list[dict[str, Any]]:
    return [inventory(matmul(D, D, b)) for b in BATCHES]


def batching_by_hand() -> list[float]:
    """max(2d²b / 100 GFLOP/s, 4(d² + 2db) B / 20 GB/s) + the launch + the enqueued
    dispatch, per batch."""
    return [max(2 * D * D * b / DOT, 4 * (D * D + 2 * D * b) / BW_DRAM) + LAUNCH + ENQUEUED
            for b in BATCHES]


def test_batching_knee_is_the_fit_of_the_models_times() -> None:
    hand = batching_by_hand()
    model_fit = ex.knee_fit(BATCHES, hand)
    assert model_fit is not None
    slope = model_fit["slope"]
    raw = sweep_raw("batching", model_fit["flat"] * 1.3, slope, programs=batching_programs())
    rec = analyse_with(raw, "batching")
    assert rec.prediction.value == pytest.approx(model_fit["knee"], rel=1e-12)
    assert rec.prediction.kind == "predicted"
    assert rec.roofs_kind == "measured"
    assert rec.prediction.note.startswith(
        "knee of the per-kernel model's predicted times over the same sweep points, by the fit "
        "that gives the measured knee (knee_fit)")
    assert rec.details["model_seconds"] == pytest.approx(hand, rel=1e-12)
    assert rec.figure is not None
    series = {s.label: s for s in rec.figure.series}
    assert series["model"].y == pytest.approx(hand, rel=1e-12)
    assert series["model"].kind == "measured"
    assert rec.measurement.value == pytest.approx(model_fit["knee"] * 1.3)
    assert rec.verdict.status == "held"
    # Not the closed form at the budgets' ridge (which these roofs share: 5 FLOP/B), though
    # near it: the fit sees the dispatch floor and the discrete batches.
    closed = ex.batch_ridge(D, model.ridge(PEAK, BW))
    assert closed is not None and rec.details["closed_form_knee"] == pytest.approx(closed)
    assert rec.prediction.value != pytest.approx(closed, rel=1e-3)
    # A flat part 4x the model's: the knee moves right, and the reason says so from the fits.
    slow = analyse_with(sweep_raw("batching", model_fit["flat"] * 4, slope,
                                  programs=batching_programs()), "batching")
    assert slow.verdict.status == "failed"
    assert "is higher than the model's" in slow.likely_reason
    assert "the model charges for DRAM" in slow.likely_reason


def dispatch_programs() -> list[dict[str, Any]]:
    return [inventory(kernel("multiply", flops_by_op={"stablehlo.multiply": n}, read=4 * n,
                             written=4 * n)) for n in SIZES]


def dispatch_by_hand() -> list[float]:
    """max(n / 100 GFLOP/s, 8n B at L2's 100 GB/s under 1 MiB else DRAM's 20 GB/s) + the
    launch + the enqueued dispatch, per size."""
    return [max(n / FMA, 8 * n / (BW_L2 if 8 * n < MiB else BW_DRAM)) + LAUNCH + ENQUEUED
            for n in SIZES]


def test_dispatch_knee_is_the_fit_of_the_models_times() -> None:
    hand = dispatch_by_hand()
    model_fit = ex.knee_fit(SIZES, hand)
    assert model_fit is not None
    raw = sweep_raw("dispatch", model_fit["flat"], model_fit["slope"] * 1.5,
                    programs=dispatch_programs())
    rec = analyse_with(raw, "dispatch")
    assert rec.prediction.value == pytest.approx(model_fit["knee"], rel=1e-12)
    assert rec.details["model_seconds"] == pytest.approx(hand, rel=1e-12)
    assert rec.verdict.status == "held"
    assert "n=16: 1 kernel, bound by overhead" in rec.prediction.note
    assert "bound by memory (DRAM)" in rec.prediction.note
    # Costly calls: the flat part against the model's (the enqueued floor and one kernel).
    costly = analyse_with(sweep_raw("dispatch", model_fit["flat"] * 5, model_fit["slope"],
                                    programs=dispatch_programs()), "dispatch")
    assert costly.verdict.status == "failed"
    assert "enqueued calls cost" in costly.likely_reason
    assert "above the model's" in costly.likely_reason
    # Roofs without a dispatch floor: the closed form, and the note says why.
    bare = replace(ROOFS, floors=(Floor("launch", 1e-6, MEAS, ""),))
    closed = analyse_with(raw, "dispatch", roofs=bare)
    assert closed.prediction.value == pytest.approx(
        ex.dispatch_size(ex.HYPOTHETICAL_DISPATCH_S, BW, 8))
    assert "single-roof model: the measured roofs hold no dispatch floor" in (
        closed.prediction.note)


def test_scan_per_kernel_ratio_by_hand() -> None:
    size, steps = 256, 10
    body = inventory(matmul(size, size, size), tanh_kernel(size * size))
    copy = kernel("copy", read=4 * size * size, written=4 * size * size,
                  category="data movement")
    counter = kernel("wrapped_compare", flops_by_op={"stablehlo.compare": 1}, read=8,
                     written=1, trips=steps)
    scanned = inventory(copy, counter, matmul(size, size, size, trips=steps),
                        tanh_kernel(size * size, trips=steps))
    dot = 2 * size**3 / DOT  # 335.5 us, over the 7.9 us its 768 KiB take in L2
    tanh = size * size / TANH  # 65.5 us, over its 5.2 us in L2
    t_body = dot + tanh + 2 * LAUNCH + ENQUEUED
    # The copy moves 512 KiB in L2 (5.2 us); the counter's kernel costs a launch each trip
    # (its one compare, 9 bytes, next to nothing after it), the loop's kernels one each.
    compare = max(1 / FMA, 9 / BW_L2)
    t_scan = (2 * 4 * size * size / BW_L2 + LAUNCH
              + steps * (3 * LAUNCH + compare + dot + tanh) + ENQUEUED)
    expected = t_scan / t_body
    rec = analyse_with(ratio_raw("scan", expected, programs={"body": body, "scan": scanned}),
                       "scan")
    assert rec.prediction.value == pytest.approx(expected, rel=1e-12)
    assert "scan: 4 kernels (31 launches), bound by compute" in rec.prediction.note
    assert rec.details["model"]["scan"]["launches"] == 31
    assert rec.verdict.status == "held"
    slow = analyse_with(ratio_raw("scan", 2 * expected, programs={"body": body,
                                                                  "scan": scanned}), "scan")
    assert "per step" in slow.likely_reason
    assert "the model charges its 31 launches at 1 µs each" in slow.likely_reason


def test_without_roofs_or_inventories_the_single_roof_model_predicts() -> None:
    predicted = predicted_ratio("doubled_traffic")
    # Inventories recorded, no measured roofs: the hypothetical budgets, as before.
    no_roofs = analyse_with(ratio_raw("doubled_traffic", 2.0, programs=doubled_programs()),
                            "doubled_traffic", roofs=None)
    assert no_roofs.prediction.value == pytest.approx(predicted, rel=1e-12)
    assert no_roofs.prediction.kind == "predicted"
    assert no_roofs.roofs_kind == "hypothetical"
    assert no_roofs.prediction.note.endswith("; single-roof model: no measured roofs")
    assert no_roofs.details["model"] is None
    # An old-format record (no "programs") with measured roofs and ceilings: the measured
    # budgets' prediction, unchanged, and the note says no inventory was recorded.
    old = analyse_with(ratio_raw("doubled_traffic", 2.0), "doubled_traffic", ceilings=CEILINGS)
    expected = model.predicted_seconds(2 * N, 8 * N, 150e9, 40e9, 6e-6) / (
        model.predicted_seconds(2 * N, 4 * N, 150e9, 40e9, 6e-6))
    assert old.prediction.value == pytest.approx(expected, rel=1e-12)
    assert old.prediction.kind == "predicted"
    assert old.roofs_kind == "measured"
    assert old.prediction.note.endswith(
        "single-roof model: no kernel inventory recorded (results saved before the lab "
        "recorded them)")
    # One variant's inventory failed: both fall back (a ratio of two models measures neither).
    broken = {"one_array": reduction(N, 1),
              "two_arrays": {"available": False, "reason": "unparsable HLO"}}
    one_missing = analyse_with(ratio_raw("doubled_traffic", 2.0, programs=broken),
                               "doubled_traffic")
    assert one_missing.prediction.value == pytest.approx(predicted, rel=1e-12)
    assert one_missing.prediction.note.endswith(
        "single-roof model: the two arrays program: its kernel inventory failed: unparsable HLO")
    # An incomplete roof set is no roof set.
    no_bandwidth = replace(ROOFS, bandwidth=())
    partial = analyse_with(ratio_raw("doubled_traffic", 2.0, programs=doubled_programs()),
                           "doubled_traffic", roofs=no_bandwidth)
    assert partial.prediction.value == pytest.approx(predicted, rel=1e-12)
    assert "lack a compute or a bandwidth roof" in partial.prediction.note
    # A sweep recorded before the lab kept inventories: the closed-form knee.
    sweep = analyse_with(sweep_raw("batching", 1e-3, 1e-6), "batching")
    b_star = ex.batch_ridge(D, model.ridge(PEAK, BW))
    assert sweep.prediction.value == pytest.approx(b_star)
    assert sweep.prediction.kind == "predicted"
    assert sweep.roofs_kind == "hypothetical"


def test_an_inventory_without_kernels_is_not_priced() -> None:
    programs = {"one_array": inventory(), "two_arrays": reduction(N, 2)}
    rec = analyse_with(ratio_raw("doubled_traffic", 2.0, programs=programs), "doubled_traffic")
    assert rec.prediction.kind == "predicted"
    assert rec.roofs_kind == "hypothetical"
    assert rec.prediction.note.endswith(
        "the per-kernel model gives no time for the one array program: its inventory lists no "
        "kernels")


@pytest.mark.parametrize(
    "programs",
    [
        [],
        {"one_array": 3, "two_arrays": {"kernels": []}},
        {"one_array": {"kernels": {}}},
        {"one_array": inventory(kernel("k", read=-1))},
        {"one_array": inventory({**kernel("k"), "trips": 0})},
        {"one_array": inventory({**kernel("k"), "flops_by_op": {"x": "2"}})},
    ],
)
def test_the_schema_refuses_malformed_inventories(programs: Any) -> None:
    with pytest.raises(pydantic.ValidationError):
        typed_lab({"doubled_traffic": ratio_raw("doubled_traffic", 2.0, programs=programs)})


def test_a_sweep_needs_an_inventory_per_point() -> None:
    with pytest.raises(pydantic.ValidationError):  # a list, aligned with the points
        typed_lab({"batching": sweep_raw("batching", 1e-3, 1e-6, programs={"b=1": inventory()})})
    raw = sweep_raw("batching", 1e-3, 1e-6, programs=[inventory()])
    with pytest.raises(InputError, match=re.escape(
            "experiment 'batching' field 'programs' must be a list of 10 kernel inventories")):
        analyse_with(raw, "batching")


def test_the_package_reexports_what_callers_use() -> None:
    from roofline_report.analysis.experiments import bf16, common, times

    # The package's ``exercises`` is the function; its module stays importable by name.
    module = importlib.import_module("roofline_report.analysis.experiments.exercises")
    assert ex.exercises is module.exercises
    assert ex.verdict is common.verdict and ex.knee_fit is common.knee_fit
    assert ex.Budgets is common.Budgets
    assert callable(bf16.memory) and callable(bf16.compute)
    typed_programs = {variant: KernelInventory.model_validate(inventory)
                      for variant, inventory in doubled_programs().items()}
    km, why = times.kernel_model(ROOFS, typed_programs, dict.fromkeys(
        ("one_array", "two_arrays"), "float32"))
    assert km is not None and why == ""
    assert km.seconds("one_array") == pytest.approx((4 * N + 4) / BW_DRAM + LAUNCH + ENQUEUED)
    assert km.main_memory("one_array") and not km.fresh_roof("one_array")
