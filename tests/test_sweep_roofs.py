"""The size sweeps' roofline draws the compute roofs its workloads run under, not every roof a
machine has (an int8 product's, a depthwise convolution's, a sequence's convolution's)."""

from __future__ import annotations

from roofline_report.analysis.predict import Prediction, Term
from roofline_report.analysis.records import Sweep, SweepPoint
from roofline_report.analysis.roofs import BandwidthRoof, ComputeRoof, RoofSet
from roofline_report.kinds import Kind
from roofline_report.report import figures as figs
from roofline_report.report.roof_words import sweep_uses

M = Kind.MEASURED
ROOFS = RoofSet("this machine", M, (
    ComputeRoof("matmul float32", 2e11, "float32", M, ""),
    ComputeRoof("matmul int8 (int32 sums)", 3e11, "int8", M, ""),
    ComputeRoof("convolution float32", 9e10, "float32", M, "", op="convolution"),
    ComputeRoof("convolution float32 (1-D, window 3)", 2e11, "float32", M, "",
                op="convolution-1d", positions=16384),
    ComputeRoof("grouped convolution float32 (3x3 depthwise)", 7e8, "float32", M, "",
                op="grouped-convolution", window=9),
), (BandwidthRoof("DRAM read-write", 9e10, "DRAM", M, ""),))


def _point(n: int, roof: str, group: str = "compute") -> SweepPoint:
    term = Term("convolution" if "convolution" in roof else "matmul", group,  # type: ignore[arg-type]
                1e-3, roof, M)
    prediction = Prediction(1e-3, (term,), term, 1e8, 1e6, "the bytes", "DRAM")
    return SweepPoint({"n": n}, 1e8, 1e6, 1.2e-3, prediction, "compute", "")


def _sweep(name: str, *points: SweepPoint) -> Sweep:
    return Sweep(name, name, "float32", ("n",), points, None, None)


def test_the_sweeps_draw_the_roofs_their_predictions_price_work_at() -> None:
    sweeps = [_sweep("a @ b", _point(256, "matmul float32"), _point(512, "matmul float32")),
              _sweep("conv2d", _point(8, "convolution float32"),
                     _point(16, "DRAM read-write", "memory"))]
    assert sweep_uses(sweeps, ROOFS) == [("float32", "convolution"), ("float32", "matmul")]
    out = figs.sweep_trajectories(sweeps, ROOFS)
    drawn = {row[0] for row in out.table.rows}
    assert {"this machine: matmul float32", "this machine: convolution float32"} <= drawn
    assert not [x for x in drawn if "int8" in x or "1-D" in x or "depthwise" in x]
    # A sweep of a sequence's convolution gets its roof drawn.
    line = _sweep("conv1d", _point(8, "convolution float32 (1-D, window 3)"))
    assert ("float32", "convolution-1d") in sweep_uses([*sweeps, line], ROOFS)
