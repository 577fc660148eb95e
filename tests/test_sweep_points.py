"""A sweep point at its workload's own dims is the workload's measurement, not a second one
(observe.run._sweep)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("jax")

from roofline_report.observe import run
from roofline_report.observe.workloads import catalog


def test_a_sweep_point_at_the_workloads_dims_takes_its_record(
        monkeypatch: pytest.MonkeyPatch) -> None:
    softmax = next(w for w in catalog("cpu") if w.name == "softmax")
    own = softmax.dims["m"]
    assert own in softmax.sweep["m"]  # the CPU catalog sweeps its softmax through its own m
    measured: list[dict[str, int]] = []

    def measure(w: Any, **_kw: Any) -> dict[str, Any]:
        measured.append(dict(w.dims))
        return {"timing": {"fresh": True}, "check": None}

    monkeypatch.setattr(run, "measure_workload", measure)
    said: list[str] = []
    record = {"timing": {"fresh": False}, "check": {"passed": True}, "kernels": None}
    sweep = run._sweep(softmax, quick=False, say=said.append, skips=run.Skips(),
                       measured=record)
    by_m = {p["dims"]["m"]: p for p in sweep["points"]}
    assert by_m[own]["timing"] == {"fresh": False} and by_m[own]["check"] == {"passed": True}
    assert [d["m"] for d in measured] == [m for m in softmax.sweep["m"] if m != own]
    assert any("the workload's own measurement" in line for line in said)
    # A workload that was not timed (its record holds no timing) is measured at that point.
    measured.clear()
    run._sweep(softmax, quick=False, say=said.append, skips=run.Skips(),
               measured={"timing": None})
    assert [d["m"] for d in measured] == list(softmax.sweep["m"])
