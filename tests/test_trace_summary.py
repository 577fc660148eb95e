"""A trace's summary over its calls (analysis.kernels.trace_summary) sums each call's kernels
by numpy as one addition after another would, on recorded and random timings alike."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from roofline_report.analysis.kernels import _calls_at, kernel_samples, trace_summary
from roofline_report.quantiles import median
from roofline_report.results import io as results
from roofline_report.results import schema

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _typed(timing: dict[str, Any]) -> schema.KernelTiming:
    """The timing's typed record, built as it is: a random one's columns may be ragged, which
    the schema refuses and the sum still takes as far as both lists go."""
    return schema.KernelTiming.model_construct(
        source=timing.get("source", "host"), notes=list(timing.get("notes", [])),
        unmatched=[], calls_per_sample=timing.get("calls_per_sample", 1),
        calls=[schema.TraceCall.model_construct(**call) for call in timing["calls"]],
        kernels=[schema.KernelTime.model_construct(**kernel) for kernel in timing["kernels"]])


def _sums_one_by_one(timing: schema.KernelTiming) -> tuple[float, float]:
    """(median kernel sum per call, median launches per call) as the rule reads."""
    per_call: dict[int, float] = {}
    launches: dict[int, float] = {}
    for k in timing.kernels:
        at = _calls_at(k)
        for i, s in zip(at, kernel_samples(k), strict=False):
            per_call[i] = per_call.get(i, 0.0) + s
        for i, n in zip(at, k.launches, strict=False):
            launches[i] = launches.get(i, 0.0) + float(n)
    return median(list(per_call.values())) or 0.0, median(list(launches.values())) or 0.0


def _recorded() -> list[dict[str, Any]]:
    out = []
    for name in ("cpu_results.json", "cpu_results_v2.json"):
        for w in results.load(FIXTURES / name).get("workloads", []):
            timing = w.get("kernel_timing") or {}
            if timing.get("available") and timing.get("calls"):
                out.append(timing)
    return out


def _random(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    calls = rng.randrange(1, 40)
    kernels = []
    for _ in range(rng.randrange(0, 6)):
        at = sorted(rng.sample(range(calls), rng.randrange(1, calls + 1)))
        spans = [rng.uniform(1e-7, 1e-3) for _ in at]
        launches = [rng.randrange(1, 4) for _ in at][:rng.randrange(len(at) + 1)]
        k: dict[str, Any] = {"span_s": spans, "calls_at": at, "launches": launches}
        if rng.random() < 0.5:
            k["share_s"] = [s * rng.uniform(0.3, 1.0) for s in spans]
        kernels.append(k)
    return {"available": True, "kernels": kernels,
            "calls": [{"program_s": rng.uniform(1e-4, 1e-2), "busy_s": rng.uniform(1e-4, 1e-2),
                       "dispatch_s": rng.uniform(0, 1e-5), "loop_control_s": 0.0,
                       "gaps_s": rng.uniform(0, 1e-4)} for _ in range(calls)]}


@pytest.mark.parametrize("timing", [*_recorded(), *(_random(s) for s in range(12))])
def test_each_calls_kernels_are_summed_as_one_addition_after_another(
        timing: dict[str, Any]) -> None:
    typed = _typed(timing)
    summary = trace_summary(typed)
    assert summary is not None
    assert (summary.kernel_sum_s, summary.launches) == _sums_one_by_one(typed)
    program = median([float(c["program_s"]) for c in timing["calls"]]) or 0.0
    assert summary.program_s == program
