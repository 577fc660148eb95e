"""The lab's measuring half on tiny sizes: the structure analyse() accepts, not the speeds."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from roofline_report.analysis import experiments
from roofline_report.analysis.roofs import BandwidthRoof, ComputeRoof, Floor, RoofSet
from roofline_report.analysis.seed_model import SEED_BANDWIDTH, SEED_PEAK_FLOPS
from roofline_report.kinds import Kind
from roofline_report.observe import lab
from roofline_report.observe.timer import Timing
from roofline_report.results.schema_lab import LabExperiments

TINY = lab.LabPlan(
    stream_elements=1 << 12,
    fusion_shape=(64, 4, 64),
    bf16_elements=1 << 12,
    bf16_matmul=64,
    batch_d=128,
    batches=(1, 4, 16, 64),
    dispatch_sizes=(16, 256, 4096, 65536),
    scan_size=32,
    scan_steps=10,
    samples=3,
    min_sample_s=0.0005,
)


def analyse(raw: dict[str, Any], **options: Any) -> list[dict[str, Any]]:
    """:func:`experiments.analyse` of the lab's plain record, read as the schema types it."""
    return experiments.analyse(LabExperiments.model_validate(raw["experiments"]),
                               cache_bytes=raw.get("cache_bytes"), **options)


@pytest.fixture(scope="module")
def raw() -> dict[str, Any]:
    return lab.run_lab(quick=True, ceilings=None, plan=TINY)


@pytest.mark.slow
def test_run_lab_records_every_experiment(raw: dict[str, Any]) -> None:
    assert set(raw["experiments"]) == set(experiments.EXPERIMENT_IDS)
    for exp_id, record in raw["experiments"].items():
        assert record["available"] is True, (exp_id, record.get("reason"))
    assert raw["quick"] is True
    assert raw["plan"] == TINY.to_json()
    json.dumps(raw, allow_nan=False)  # plain JSON


@pytest.mark.slow
def test_timings_are_timing_records(raw: dict[str, Any]) -> None:
    e = raw["experiments"]
    records = [
        e["doubled_traffic"]["one_array"],
        e["doubled_traffic"]["two_arrays"],
        e["fusion"]["fused"],
        e["bf16_memory"]["bfloat16"],
        e["bf16_compute"]["float32"],
        e["scan"]["scan"],
        *e["batching"]["times"],
        *e["dispatch"]["times"],
    ]
    for record in records:
        t = Timing.from_json(record)
        assert t.samples == TINY.samples
        assert t.per_call.min > 0
    assert e["batching"]["batches"] == list(TINY.batches)
    assert e["dispatch"]["sizes"] == list(TINY.dispatch_sizes)


@pytest.mark.slow
def test_counts_from_the_compiled_programs(raw: dict[str, Any]) -> None:
    e = raw["experiments"]
    assert e["fusion"]["kernels"]["fused"] >= 1
    assert e["fusion"]["kernels"]["unfused"] >= 2  # the barrier keeps the product apart
    body = 2 * TINY.scan_size**3
    assert e["scan"]["our_flops"]["body"] == body
    assert e["scan"]["our_flops"]["scan"] >= TINY.scan_steps * body
    # XLA costs the loop as one iteration: far under our count.
    assert e["scan"]["xla_flops"]["scan"] < 2 * body
    assert e["bf16_compute"]["converts"]["float32"] == 0


@pytest.mark.slow
def test_analyse_gives_a_verdict_for_each_experiment(raw: dict[str, Any]) -> None:
    out = analyse(raw, ceilings=None, peak=SEED_PEAK_FLOPS, bandwidth=SEED_BANDWIDTH)
    assert [e.id for e in out] == list(experiments.EXPERIMENT_IDS)
    for e in out:
        assert e.measurement.kind == "measured"
        assert e.measurement.value is not None and e.measurement.value > 0
        assert e.verdict.status in {"held", "failed"}
        assert e.verdict.text
        assert (e.likely_reason != "") == (e.verdict.status == "failed")
    json.dumps([e.details for e in out], allow_nan=False)  # the details are plain JSON


VARIANTS = {
    "doubled_traffic": ("one_array", "two_arrays"),
    "fusion": ("fused", "unfused"),
    "bf16_memory": ("float32", "bfloat16"),
    "bf16_compute": ("float32", "bfloat16"),
    "scan": ("body", "scan"),
}


@pytest.mark.slow
def test_every_timed_program_has_its_kernel_inventory(raw: dict[str, Any]) -> None:
    e = raw["experiments"]
    for exp_id, variants in VARIANTS.items():
        programs = e[exp_id]["programs"]
        assert set(programs) == set(variants), exp_id
        for v in variants:
            assert programs[v].get("available", True) is not False, (exp_id, v, programs[v])
            assert programs[v]["kernels"], (exp_id, v)
    for exp_id in ("bf16_memory", "bf16_compute"):
        assert e[exp_id]["dtypes"] == {"float32": "float32", "bfloat16": "bfloat16"}
    # Sweeps: one inventory per point, aligned with the points.
    assert len(e["batching"]["programs"]) == len(e["batching"]["batches"])
    assert len(e["dispatch"]["programs"]) == len(e["dispatch"]["sizes"])
    d = TINY.batch_d
    for b, inv in zip(e["batching"]["batches"], e["batching"]["programs"], strict=True):
        dots = sum(k["flops_by_op"].get("stablehlo.dot_general", 0) * k["trips"]
                   for k in inv["kernels"])
        flops = sum(k["flops"] * k["trips"] for k in inv["kernels"])
        # W @ x is a product (a TPU's convolution is counted as the product it is), or, where
        # the compiler writes a narrow one as a multiply and a row sum (a TPU's mat-vec at
        # b = 1: test_tpu_hlo.test_a_tpu_mat_vec_is_a_multiply_and_a_row_sum), d²·b
        # multiplies and (d - 1)·d·b adds.
        assert dots == 2 * d * d * b or (dots == 0 and flops == 2 * d * d * b - d * b), \
            (b, inv["kernels"])
    for n, inv in zip(e["dispatch"]["sizes"], e["dispatch"]["programs"], strict=True):
        assert inv["bytes_written"] == 4 * n  # y = 2·x writes its n float32 results
    # The scan's loop kernels run once per step.
    assert max(k["trips"] for k in e["scan"]["programs"]["scan"]["kernels"]) == TINY.scan_steps
    assert e["scan"]["programs"]["body"]["launches"] == e["scan"]["programs"]["body"]["count"]


M = Kind.MEASURED
ROOFS = RoofSet(
    "this machine", M,
    compute=(ComputeRoof("matmul float32", 50e9, "float32", M, ""),),
    bandwidth=(BandwidthRoof("DRAM read-write", 10e9, "DRAM", M, ""),),
    floors=(Floor("dispatch enqueued", 5e-6, M, ""), Floor("launch", 1e-6, M, "")),
)


@pytest.mark.slow
def test_the_per_kernel_model_predicts_every_recorded_experiment(raw: dict[str, Any]) -> None:
    out = analyse(raw, ceilings=None, peak=SEED_PEAK_FLOPS,
                              bandwidth=SEED_BANDWIDTH, roofs=ROOFS)
    for e in out:
        assert e.prediction.kind == "predicted", e.id
        assert e.roofs_kind == "measured", e.id
        assert "the per-kernel model on this machine's measured roofs" in e.prediction.note
        assert e.details["single_roof_reason"] == ""
        assert e.verdict.status in {"held", "failed"}, (e.id, e.verdict.text)
        assert (e.likely_reason != "") == (e.verdict.status == "failed")
    by_id = {e.id: e for e in out}
    # The ratios are ratios of the model's times.
    doubled = by_id["doubled_traffic"].details
    assert by_id["doubled_traffic"].prediction.value == pytest.approx(
        doubled["model"]["two_arrays"]["seconds"] / doubled["model"]["one_array"]["seconds"])
    json.dumps([e.details for e in out], allow_nan=False)  # the details are plain JSON


def test_an_unreadable_inventory_is_recorded_and_the_experiment_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fail(_text: str) -> dict[str, Any]:
        raise ValueError("no HLO today")

    monkeypatch.setattr(lab, "kernel_inventory", fail)
    record = lab._Lab(TINY, quick=True).doubled_traffic()
    assert record["programs"] == {
        "one_array": {"available": False, "reason": "ValueError: no HLO today"},
        "two_arrays": {"available": False, "reason": "ValueError: no HLO today"},
    }
    assert Timing.from_json(record["two_arrays"]).per_call.min > 0
    out = analyse({"experiments": {"doubled_traffic": {"available": True, **record}}},
                              ceilings=None, peak=SEED_PEAK_FLOPS, bandwidth=SEED_BANDWIDTH,
                              roofs=ROOFS)
    assert out[0].prediction.kind == "predicted"
    assert out[0].roofs_kind == "hypothetical"
    assert out[0].prediction.note.endswith(
        "single-roof model: the one array program: its kernel inventory failed: "
        "ValueError: no HLO today")


@pytest.mark.slow
def test_a_failing_experiment_is_recorded_and_the_others_run() -> None:
    broken = replace(TINY, fusion_shape=(-1, 4, 64), batches=(1, 4), dispatch_sizes=(16,))
    raw = lab.run_lab(quick=True, ceilings={"cache_bytes": 12345}, plan=broken)
    e = raw["experiments"]
    assert e["fusion"]["available"] is False
    assert e["fusion"]["reason"]
    assert e["doubled_traffic"]["available"] is True
    assert e["scan"]["available"] is True
    assert raw["cache_bytes"] == 12345
    assert len(e["batching"]["programs"]) == len(e["batching"]["batches"]) == 2
    out = {
        x.id: x
        for x in analyse(
            raw, ceilings=None, peak=SEED_PEAK_FLOPS, bandwidth=SEED_BANDWIDTH
        )
    }
    assert out["fusion"].verdict.status == "unavailable"
    # Sweeps of fewer than three points give no knee: no verdict, but no crash either.
    assert out["batching"].verdict.status == "unavailable"
    assert "at least three points" in out["batching"].verdict.text


def test_plans_scale_with_the_backend() -> None:
    cpu, gpu = lab.plan_for("cpu", quick=False), lab.plan_for("gpu", quick=False)
    assert gpu.stream_elements > cpu.stream_elements
    assert gpu.batches[-1] > cpu.batches[-1]
    assert gpu.batch_d > cpu.batch_d
    quick = lab.plan_for("cpu", quick=True)
    assert quick.stream_elements <= cpu.stream_elements
    assert len(quick.dispatch_sizes) <= len(cpu.dispatch_sizes)
    for plan in (cpu, gpu, quick):
        assert plan.dispatch_sizes[0] == 16
        assert list(plan.batches) == sorted(plan.batches)
