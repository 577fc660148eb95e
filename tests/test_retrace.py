"""A trace that caught a burst of load is taken again (roofline_report.observe.run._trace)."""

from __future__ import annotations

from typing import Any

import pytest

from roofline_report.observe import donation
from roofline_report.observe import run as measure
from roofline_report.observe import trace as kernel_timing

INVENTORY = {"module": "jit_f", "kernels": [{"name": "fusion"}]}
# a timing record as results.json keeps it: the samples, no statistic
TIMED = {"available": True, "per_call_s": [0.9e-3, 1e-3, 1.1e-3]}
NO_CALLS = donation.Calls(lambda: None, (), (), ())


def _scripted(monkeypatch: pytest.MonkeyPatch, programs: list[float]) -> list[int]:
    calls: list[int] = []

    def trace(*_a: Any, **_k: Any) -> dict[str, Any]:
        calls.append(1)
        # a kernel-timing record as the trace reader writes it: each traced call's time
        return {"available": True, "calls": [{"program_s": programs[len(calls) - 1]}] * 3,
                "notes": []}

    monkeypatch.setattr(kernel_timing, "trace_kernels", trace)
    return calls


def test_a_trace_near_the_timing_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _scripted(monkeypatch, [1.2e-3])
    t = measure._trace(NO_CALLS, INVENTORY, TIMED, quick=False)
    assert len(calls) == 1 and measure._traced_call_s(t) == 1.2e-3 and t["notes"] == []


def test_a_slow_trace_is_taken_again_and_the_fastest_kept(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _scripted(monkeypatch, [2.5e-3, 1.9e-3, 1.6e-3])
    t = measure._trace(NO_CALLS, INVENTORY, TIMED, quick=False)
    assert len(calls) == 1 + measure.RETRACES and measure._traced_call_s(t) == 1.6e-3
    assert t["notes"] == ["traced 3 times: the first trace's calls ran 2.5× the timed median "
                          "(load elsewhere on the machine); the fastest trace is kept"]
    calls = _scripted(monkeypatch, [2.5e-3, 1.1e-3, 9.9])
    assert measure._traced_call_s(measure._trace(NO_CALLS, INVENTORY, TIMED,
                                                 quick=False)) == 1.1e-3
    assert len(calls) == 2


def test_without_a_timing_a_trace_is_taken_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _scripted(monkeypatch, [9.0])
    measure._trace(NO_CALLS, INVENTORY, {"available": False}, quick=False)
    assert len(calls) == 1
