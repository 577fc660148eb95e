"""The NumPy check's distance past tolerance (observe.lower._excess), by hand."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from roofline_report.observe.lower import _excess


def test_equal_integers_pass_at_zero_tolerance_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an All-NaN RuntimeWarning fails the test
        assert _excess(np.arange(6, dtype=np.int32), np.arange(6), 0.0, 0.0) == 0.0
        assert _excess(np.array([1, 2, 4]), np.array([1, 2, 3]), 0.0, 0.0) == math.inf
        assert _excess(np.array([1.0, 1.0]), np.array([np.nan, np.nan]), 1e-5, 1e-5) \
            == math.inf


def test_the_excess_is_the_worst_leaf_over_its_tolerance() -> None:
    assert _excess(np.array([1.0, 1.2]), np.array([1.0, 1.0]), 0.1, 0.0) \
        == pytest.approx(2.0)  # 0.2 past a tolerance of 0.1 x |1.0|
    assert _excess(np.array([1.0, np.inf]), np.array([1.0, np.inf]), 0.1, 0.1) == math.inf
    assert _excess(np.zeros(3), np.zeros(2), 0.1, 0.1) == math.inf  # shapes differ
