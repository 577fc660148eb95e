"""Why a prediction missed (roofline_report.analysis.explain), on hand-made evidence."""

from __future__ import annotations

from typing import Any

from roofline_report.analysis.explain import explain

MiB = 1 << 20


def _prediction(seconds: float, **over: Any) -> dict[str, Any]:
    p: dict[str, Any] = {"seconds": seconds, "bytes": 4 * MiB, "level": "L3",
                         "terms": {"alu": seconds / 2, "memory": seconds, "overhead": 5e-6}}
    p.update(over)
    return p


def _record(**over: Any) -> dict[str, Any]:
    r: dict[str, Any] = {"dtype": "float32", "compiled": {"kernels": 1},
                         "timing": {"per_call": {"spread": 0.02, "unstable": False}}}
    r.update(over)
    return r


def test_within_half_and_under_its_roof_says_nothing() -> None:
    assert explain(_prediction(100e-6), 140e-6, _record(), "cpu") == ""
    assert explain(_prediction(100e-6), 140e-6, _record(), "cpu", above_roof=True) != ""


def test_each_reason_follows_from_its_evidence() -> None:
    noisy = _record(timing={"per_call": {"spread": 0.3, "unstable": True}})
    assert explain(_prediction(100e-6), 300e-6, noisy, "cpu").startswith("unstable: ")
    dram = _prediction(100e-6, level="DRAM")
    why = explain(dram, 30e-6, _record(), "cpu", cache_bytes=32 * MiB)
    assert why.startswith("cache level: ")
    unfused = _record(xla={"raw": {"bytes accessed": 12.0 * MiB}})
    assert "unfused intermediates: the compiled program accesses 3×" in explain(
        _prediction(100e-6), 300e-6, unfused, "cpu")
    launches = _prediction(10e-6, terms={"alu": 1e-6, "memory": 2e-6, "overhead": 10e-6})
    assert "launch-bound: 40 kernels" in explain(launches, 40e-6,
                                                 _record(compiled={"kernels": 40}), "cpu")
    assert "conversions: " in explain(_prediction(100e-6), 300e-6,
                                      _record(dtype="bfloat16"), "cpu")
    assert "conversions: " not in explain(_prediction(100e-6), 300e-6,
                                          _record(dtype="bfloat16"), "gpu")
    loop = _record(compiled={"kernels": 3, "while_loops": [{"name": "while"}]})
    assert "loop: " in explain(_prediction(100e-6), 300e-6, loop, "cpu")
    assert explain(_prediction(100e-6), 300e-6, _record(), "cpu") == (
        "unknown: slower than predicted, with no evidence of a cause here")


def test_faster_than_the_dispatch_floor_is_said_so() -> None:
    tiny = _prediction(9e-6, terms={"alu": 1e-7, "memory": 1e-6, "overhead": 8e-6})
    why = explain(tiny, 5.5e-6, _record(), "cpu")
    assert why.startswith("dispatch-bound: the call took 5.5 µs, under the 8 µs of dispatch")
    # Faster than predicted but above the overhead: no such claim.
    assert "dispatch-bound" not in explain(_prediction(100e-6), 30e-6, _record(), "cpu")


def test_the_kernels_behind_most_of_a_miss_are_named() -> None:
    rows = [{"name": "wrapped_reduce-window", "category": "reduction", "seconds": 2.7e-3,
             "predicted": 0.2e-3},
            {"name": "copy_fusion", "category": "data movement", "seconds": 0.8e-3,
             "predicted": 0.01e-3},
            {"name": "ynn_fusion", "category": "matmul", "seconds": 0.3e-3, "predicted": 0.3e-3},
            {"name": "untimed", "category": "elementwise", "seconds": None, "predicted": 1e-6}]
    record = _record(kernel_view={"rows": rows})
    why = explain(_prediction(1e-3), 4e-3, record, "cpu")
    assert why.startswith("slow kernels: wrapped_reduce-window (reduction, 2.7 ms against "
                          "200 µs predicted), copy_fusion (data movement, 800 µs against "
                          "10 µs predicted) account for 100% of the time")
    # Spread over many kernels, none a few of which explains half: not named.
    even = [{"name": f"k{i}", "category": "elementwise", "seconds": 2e-4, "predicted": 1e-4}
            for i in range(10)]
    assert "slow kernels" not in explain(_prediction(1e-3), 4e-3,
                                         _record(kernel_view={"rows": even}), "cpu")
    # Faster than predicted: the kernels are not blamed.
    assert "slow kernels" not in explain(_prediction(4e-3), 1e-3, record, "cpu")


def test_a_point_above_its_roof_says_so_first() -> None:
    why = explain(_prediction(100e-6), 110e-6, _record(), "cpu", above_roof=True)
    assert why.startswith("above its roof: ") and "unknown" not in why  # within 50%
    off = explain(_prediction(100e-6), 300e-6, _record(), "cpu", above_roof=True)
    assert off.startswith("above its roof: ") and "; unknown: slower" in off
