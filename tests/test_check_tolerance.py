"""The NumPy check (observe.lower.check_against_reference) and its distance past tolerance
(observe.lower._excess), by hand."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from roofline_report.observe import lower
from roofline_report.observe.lower import _excess, check_against_reference


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


@pytest.mark.parametrize(("chunk", "threads"), [(3, False), (3, True), (1 << 20, False)])
def test_the_check_in_chunks_reads_as_one_over_the_whole_array(
        chunk: int, threads: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 3 over 10 elements: each statistic crosses a chunk's edge and a failure in
    the last chunk still fails the whole, as np.allclose over the whole array says; the
    same where a large result's chunks run on threads (host_arrays.PARALLEL_ELEMENTS)."""
    monkeypatch.setattr(lower, "CHECK_CHUNK", chunk)
    if threads:
        monkeypatch.setattr(lower.host_arrays, "PARALLEL_ELEMENTS", 4)
    want = np.linspace(-1.0, 1.0, 10).reshape(2, 5)
    near = (want + 1e-6).astype(np.float32)
    ok = check_against_reference(near, want, rtol=1e-4, atol=1e-4)
    assert ok["passed"] and ok["max_abs_error"] == pytest.approx(
        float(np.max(np.abs(near.astype(np.float64) - want))))
    off = near.copy()
    off[1, 4] += 0.5  # the last element: the last chunk
    bad = check_against_reference(off, want, rtol=1e-4, atol=1e-4)
    assert not bad["passed"] and bad["max_abs_error"] == pytest.approx(0.5, rel=1e-4)
    assert bad["max_rel_error"] == pytest.approx(0.5, rel=1e-4)  # |want| is 1 there
    nan = near.copy()
    nan[0, 1] = np.nan
    with_nan = check_against_reference(nan, want, rtol=1e-4, atol=1e-4)
    assert not with_nan["passed"] and math.isnan(with_nan["max_abs_error"])
    assert with_nan["max_rel_error"] is None and with_nan["note"]
    infinite = want.copy()
    infinite[0, 0] = np.inf  # a non-finite reference is never matched by a finite result
    assert not check_against_reference(near, infinite, rtol=1e-4, atol=1e-4)["passed"]
    assert np.allclose(near, want, rtol=1e-4, atol=1e-4) == ok["passed"]
    assert np.allclose(off, want, rtol=1e-4, atol=1e-4) == bad["passed"]


def test_a_zero_reference_counts_a_relative_error_only_where_the_result_is_not_zero() -> None:
    record = check_against_reference(np.array([0.0, 1e-9]), np.array([0.0, 0.0]),
                                     rtol=1e-4, atol=1e-6)
    assert record["passed"] and record["max_rel_error"] is None  # 1e-9 / 0 is infinite
    exact = check_against_reference(np.zeros(4), np.zeros(4), rtol=0.0, atol=0.0)
    assert exact["passed"] and exact["max_rel_error"] == 0.0
