"""The roofline's arithmetic (roofline_report.roofline), by hand, and its users agreeing with it."""

from __future__ import annotations

import math

import pytest

from roofline_report import roofline
from roofline_report.analysis import seed_model, words
from roofline_report.presets import get_preset


def test_ridge_attainable_and_bound_by_hand() -> None:
    # The seed's budgets: 100 GFLOP/s over 20 GB/s is a ridge of 5 FLOP/byte.
    assert roofline.ridge(100e9, 20e9) == 5.0
    assert roofline.attainable(2.5, 100e9, 20e9) == 50e9
    assert roofline.attainable(5.0, 100e9, 20e9) == 100e9  # at the ridge, the peak
    assert roofline.attainable(80.0, 100e9, 20e9) == 100e9
    assert roofline.bound_at(4.999, 5.0) == "memory"
    assert roofline.bound_at(5.0, 5.0) == "compute"  # at the ridge, compute binds
    assert roofline.single_roof_seconds(1e9, 1e9, 100e9, 20e9) == pytest.approx(0.05)
    assert roofline.single_roof_seconds(1e3, 1e3, 100e9, 20e9, 5e-6) == 5e-6


def test_binding_is_the_largest_term_first_named_among_equals() -> None:
    assert roofline.binding({"compute": 1.0, "memory": 2.0, "communication": 0.5}) == "memory"
    assert roofline.binding({"compute": 2.0, "memory": 2.0}) == "compute"
    assert roofline.binding({"memory": 2.0, "compute": 2.0}) == "memory"
    with pytest.raises(ValueError):
        roofline.binding({})


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_budgets_must_be_positive_and_finite(bad: float) -> None:
    with pytest.raises(ValueError):
        roofline.ridge(bad, 1.0)
    with pytest.raises(ValueError):
        roofline.attainable(1.0, 1.0, bad)


def test_the_seed_model_words_and_presets_use_the_one_definition() -> None:
    for peak, bw in ((100e9, 20e9), (9.89e14, 3.35e12), (3.0, 7.0)):
        r = roofline.ridge(peak, bw)
        assert seed_model.ridge(peak, bw) == r
        for x in (r / 2, r, r * 2):
            assert seed_model.attainable(x, peak, bw) == roofline.attainable(x, peak, bw)
            assert seed_model.bound_by(x, peak, bw) == roofline.bound_at(x, r) \
                == words.bound(x, r)
    h100 = get_preset("H100")
    peak = h100.peak("bf16")
    assert peak is not None
    assert h100.ridge("bf16") == roofline.ridge(peak, h100.hbm_bandwidth)
