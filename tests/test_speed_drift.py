"""The machine's speed checked after the programs against its ceilings: the record, the words
(built from the two rates, either way), the run's note and the programs' reasons."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from roofline_report.analysis.analyse import analyse
from roofline_report.analysis.explain import Evidence, program_reason
from roofline_report.analysis.miss import miss
from roofline_report.analysis.predict import Prediction, Term
from roofline_report.analysis.speed_drift import DRIFT, Drift, drift_of
from roofline_report.backends import describe
from roofline_report.errors import InputError
from roofline_report.kinds import Kind
from roofline_report.results import io as results

FIXTURES = Path(__file__).parent / "fixtures"


def _check(ceiling: float, now: float) -> dict[str, Any]:
    return {"available": True, "probe": "float32 matmul, n=512", "size": 512,
            "ceiling_value": ceiling, "value": now,
            "timing": {"available": True, "inner_reps": 4, "method": "jax: test",
                       "min_sample_s": 0.03, "per_call_s": [2 * 512**3 / now],
                       "resolution_s": 1e-7}}


@pytest.fixture(scope="module")
def saved() -> dict[str, Any]:
    return results.load(FIXTURES / "cpu_results.json")


def _with(saved: dict[str, Any], check: dict[str, Any] | None) -> dict[str, Any]:
    doc = copy.deepcopy(saved)
    if check is not None:
        doc["speed_check"] = check
    results.validate(doc)
    return doc


def test_the_words_follow_from_the_rates_either_way() -> None:
    slow = Drift("float32 matmul, n=512", 170e9, 131e9)
    assert slow.slower and slow.drifted and slow.ratio == pytest.approx(131 / 170)
    assert slow.words() == (
        "the machine ran 23% slower when checked after its programs were timed than when its "
        "ceilings were measured (float32 matmul, n=512: 131 GFLOP/s against 170 GFLOP/s)")
    assert slow.note().endswith("predictions from those ceilings read short of the programs' "
                                "times by about as much")
    fast = Drift("float32 matmul, n=512", 150e9, 180e9)
    assert not fast.slower and fast.drifted
    assert "ran 20% faster" in fast.words() and "read long" in fast.note()
    # Within DRIFT of each other either way: nothing to say.
    for now in (170e9 * (1 - DRIFT / 2), 170e9 / (1 - DRIFT / 2)):
        assert not Drift("p", 170e9, now).drifted
    # A drift explains a miss the same way that it accounts for a quarter of, or more.
    assert slow.explains(predicted=1.0, measured=1.3)
    assert not slow.explains(predicted=1.0, measured=0.8)  # the other way
    assert not slow.explains(predicted=1.0, measured=3.0)  # 23% of a 3x miss: too little
    assert fast.explains(predicted=1.0, measured=0.8) and not fast.explains(1.0, 1.3)


def test_a_check_is_read_only_where_it_was_made(saved: dict[str, Any]) -> None:
    assert drift_of(saved) is None  # written before the check
    assert drift_of({"speed_check": {"available": False, "reason": "no ceilings"}}) is None
    assert drift_of({"speed_check": {"available": True, "ceiling_value": 0, "value": 1}}) is None
    found = drift_of(_with(saved, _check(200e9, 150e9)))
    assert found is not None and found.ratio == pytest.approx(0.75)


def test_the_record_is_validated(saved: dict[str, Any]) -> None:
    _with(saved, {"available": False, "reason": "no ceilings to check the machine's speed "
                                                "against"})
    bad = _check(200e9, 150e9)
    bad["value"] = -1.0
    with pytest.raises(InputError, match="speed_check"):
        _with(saved, bad)


def test_a_drifted_run_says_so_in_its_note_and_the_same_render_twice(
        saved: dict[str, Any]) -> None:
    from roofline_report.report import views

    quiet = analyse(_with(saved, _check(200e9, 195e9)))
    assert quiet.speed_drift is not None and not quiet.speed_drift.drifted
    assert "when checked after its programs" not in quiet.run_note
    slow_doc = _with(saved, _check(200e9, 150e9))
    slow = analyse(slow_doc)
    assert slow.run_note.startswith("the machine ran 25% slower when checked after")
    first = views.render(slow_doc)
    assert "The machine ran 25% slower" in first.markdown
    assert views.render(slow_doc).markdown == first.markdown


def test_a_program_that_missed_the_way_the_machine_drifted_names_it() -> None:
    term = Term("matmul", "compute", 1e-3, "matmul float32", Kind.MEASURED)
    prediction = Prediction(1e-3, (term,), term, 1e9, 1e6, "test", "L2")
    slow = Drift("float32 matmul, n=512", 200e9, 100e9)
    evidence = Evidence(backend=describe("cpu"), dtype="float32", drift=slow)
    measured_slow = miss(prediction.seconds, 3e-3)
    assert measured_slow is not None
    why = program_reason(prediction, measured_slow, evidence)
    assert "drift: the machine ran 50% slower" in why
    # A program that ran faster than predicted is not explained by a slower machine, nor one
    # so much slower that the drift is a small part of its miss.
    for seconds in (0.3e-3, 20e-3):
        other = miss(prediction.seconds, seconds)
        assert other is not None
        assert "drift:" not in program_reason(prediction, other, evidence)


def test_the_check_times_the_ceilings_own_matmul_again() -> None:
    pytest.importorskip("jax")
    from roofline_report.observe.speed_check import speed_check

    entry = {"name": "matmul float32", "op": "matmul", "dtype": "float32",
             "precision": "default", "available": True, "size": 64, "value": 1e9,
             "timing": {"min_sample_s": 0.001}}
    check = speed_check({"available": True, "compute": [entry]}, quick=True)
    assert check["available"] and check["size"] == 64 and check["ceiling_value"] == 1e9
    assert check["value"] == pytest.approx(2 * 64**3 / min(check["timing"]["per_call_s"]))
    assert check["probe"] == "float32 matmul, n=64"
    # Nothing to check against: said, not invented.
    assert speed_check({"available": False}, quick=True)["available"] is False
    highest = {**entry, "precision": "highest"}
    none = speed_check({"available": True, "compute": [highest]}, quick=True)
    assert none == {"available": False,
                    "reason": "the ceilings have no float32 matmul rate to time again"}
