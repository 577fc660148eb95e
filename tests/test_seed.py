"""Every assertion of the seed document (shared/seed/seed_notebook.py), as tests of our own code."""

from __future__ import annotations

import numpy as np
import pytest

from roofline_report.analysis import seed_model as model
from roofline_report.analysis import study
from roofline_report.analysis.seed_model import SEED_BANDWIDTH as BANDWIDTH
from roofline_report.analysis.seed_model import SEED_PEAK_FLOPS as PEAK


def test_budgets_are_the_seeds() -> None:
    assert PEAK == 100e9
    assert BANDWIDTH == 20e9


def test_contract_of_the_seed_workload() -> None:
    c = model.contract(32, 16, 8)
    assert c.flops == 8192
    assert c.minimum_bytes == 3584
    assert c.intensity == pytest.approx(8192 / 3584)


@pytest.mark.parametrize("bad", [(0, 1, 1), (1, -1, 1), (1, 1, 0), (1, 1, 1, 0), (1, 1, 1, -4)])
def test_contract_rejects_non_positive(bad: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="positive dimensions and itemsize required"):
        model.contract(*bad)


@pytest.mark.parametrize("bad", [(1.5, 1, 1), (1, "2", 1), (1, 1, True), (1, 1, 1, 4.0)])
def test_contract_rejects_non_integers(bad: tuple[object, ...]) -> None:
    with pytest.raises(ValueError, match="integer"):
        model.contract(*bad)  # type: ignore[arg-type]


def test_contract_accepts_numpy_integers() -> None:
    assert model.contract(np.int64(8), np.int32(8), np.int16(8)).flops == 1024


def test_square_intensity_is_n_over_6() -> None:
    sizes = np.array([8, 16, 32, 64, 128])
    m = study.hypothetical_model(PEAK, BANDWIDTH)
    np.testing.assert_allclose(m.intensity, sizes / 6)
    np.testing.assert_allclose(m.closed_form_intensity, sizes / 6)


def test_roofline_under_the_hypothetical_budgets() -> None:
    m = study.hypothetical_model(PEAK, BANDWIDTH)
    roofline = np.array(m.roofline)
    np.testing.assert_allclose(roofline[:2] / 1e9, [80 / 3, 160 / 3])
    assert np.all(roofline[2:] == PEAK)
    assert m.bound == ("memory", "memory", "compute", "compute", "compute")
    assert m.ridge == 5.0
    assert m.ridge_square_size == 30.0


def test_figure_data_matches_the_seed() -> None:
    m = study.hypothetical_model(PEAK, BANDWIDTH)
    fig = m.figure
    intensity = np.array(m.intensity)
    expected_x = np.sort(np.append(intensity, PEAK / BANDWIDTH))
    np.testing.assert_allclose(fig.x, expected_x)
    assert [s.label for s in fig.series] == [
        "bandwidth budget", "compute budget", "combined ceiling"]
    np.testing.assert_allclose(fig.series[0].y, BANDWIDTH * expected_x / 1e9)
    np.testing.assert_allclose(fig.series[1].y, [PEAK / 1e9] * len(expected_x))
    np.testing.assert_allclose(fig.series[2].y,
                               np.minimum(PEAK, BANDWIDTH * expected_x) / 1e9)
    assert fig.xlabel.startswith("minimum-traffic operations per byte")
    assert fig.ylabel == "hypothetical ceiling (GFLOP/s)"


def test_doubled_traffic_experiment() -> None:
    e = study.doubled_traffic_experiment(PEAK, BANDWIDTH)
    revised = np.array(e.revised)
    roofline = np.array(e.roofline)
    np.testing.assert_allclose(e.reduced_intensity, np.array(e.intensity) / 2)
    np.testing.assert_allclose(revised[:2], roofline[:2] / 2)
    assert revised[-1] == PEAK
    # n=32 halves to intensity 8/3 < 5: memory-bound after doubling, at 160/3 GFLOP/s.
    assert revised[2] == pytest.approx(BANDWIDTH * 32 / 12)
    assert e.halved == (True, True, True, False, False)


def test_exercise_reference_solution() -> None:
    x = study.exercise(48, 24, 12, PEAK, BANDWIDTH)
    assert x.flops == 27648
    assert x.minimum_bytes == 8064
    np.testing.assert_allclose(x.intensity, 24 / 7)
    assert BANDWIDTH * x.intensity < PEAK
    assert x.bound == "memory"
    assert x.attainable == pytest.approx(20e9 * 24 / 7)
    assert round(x.attainable / 1e9, 1) == 68.6


def test_budget_validation() -> None:
    with pytest.raises(ValueError):
        model.ridge(0, 1)
    with pytest.raises(ValueError):
        model.attainable(1.0, 1.0, float("nan"))
    with pytest.raises(ValueError):
        model.attainable(0.0, 1.0, 1.0)
