"""The lab's measuring half on tiny sizes: the structure analyse() accepts, not the speeds."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from roofline_report import experiments, lab
from roofline_report.model import SEED_BANDWIDTH, SEED_PEAK_FLOPS
from roofline_report.timing import Timing

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


@pytest.fixture(scope="module")
def raw() -> dict[str, Any]:
    return lab.run_lab(quick=True, ceilings=None, plan=TINY)


def test_run_lab_records_every_experiment(raw: dict[str, Any]) -> None:
    assert set(raw["experiments"]) == set(experiments.EXPERIMENT_IDS)
    for exp_id, record in raw["experiments"].items():
        assert record["available"] is True, (exp_id, record.get("reason"))
    assert raw["quick"] is True
    assert raw["plan"] == TINY.to_json()
    json.dumps(raw, allow_nan=False)  # plain JSON


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


def test_analyse_gives_a_verdict_for_each_experiment(raw: dict[str, Any]) -> None:
    out = experiments.analyse(raw, ceilings=None, peak=SEED_PEAK_FLOPS, bandwidth=SEED_BANDWIDTH)
    assert [e["id"] for e in out] == list(experiments.EXPERIMENT_IDS)
    for e in out:
        assert e["measurement"]["kind"] == "measured"
        assert e["measurement"]["value"] is not None and e["measurement"]["value"] > 0
        assert e["verdict"]["status"] in {"held", "failed"}
        assert e["verdict"]["text"]
        assert (e["likely_reason"] != "") == (e["verdict"]["status"] == "failed")
    json.dumps(out, allow_nan=False)


def test_a_failing_experiment_is_recorded_and_the_others_run() -> None:
    broken = replace(TINY, fusion_shape=(-1, 4, 64), batches=(1, 4), dispatch_sizes=(16,))
    raw = lab.run_lab(quick=True, ceilings={"cache_bytes": 12345}, plan=broken)
    e = raw["experiments"]
    assert e["fusion"]["available"] is False
    assert e["fusion"]["reason"]
    assert e["doubled_traffic"]["available"] is True
    assert e["scan"]["available"] is True
    assert raw["cache_bytes"] == 12345
    out = {
        x["id"]: x
        for x in experiments.analyse(
            raw, ceilings=None, peak=SEED_PEAK_FLOPS, bandwidth=SEED_BANDWIDTH
        )
    }
    assert out["fusion"]["verdict"]["status"] == "unavailable"
    # Sweeps of fewer than three points give no knee: no verdict, but no crash either.
    assert out["batching"]["verdict"]["status"] == "unavailable"
    assert "at least three points" in out["batching"]["verdict"]["text"]


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
