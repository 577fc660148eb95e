"""Sentences that compare numbers agree with the numbers they state, for any budgets.

Every "below", "under the ridge", "memory-bound" in the report is chosen from values; these
properties draw budgets over many orders of magnitude (including ones where the seed's exercises
become compute-bound) and check each such sentence against the exact numbers behind it.
"""

from __future__ import annotations

import math
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from roofline_report.analysis import experiments, study, words
from roofline_report.analysis import seed_model as model
from roofline_report.report import views as render

rates = st.floats(min_value=6.0, max_value=16.0).map(lambda e: 10.0 ** e)  # 1 MFLOP/s .. 10 P
budgets = st.tuples(rates, rates)


def _side(text: str) -> str:
    found = re.search(r"\b(under|at|over) the ridge\b", text)
    assert found, text
    return found.group(1)


def _expected_side(x: float, ridge: float) -> str:
    return {"below": "under", "equal to": "at", "above": "over"}[words.relation(x, ridge)]


@settings(max_examples=200, deadline=None)
@given(budgets)
def test_seed_exercise_compares_from_its_numbers(b: tuple[float, float]) -> None:
    peak, bandwidth = b
    x = study.exercise(48, 24, 12, peak, bandwidth)
    vm = render._exercise(x)
    rate = bandwidth * x.intensity  # the two numbers the sentence states
    if not math.isclose(rate, peak, rel_tol=1e-12):  # (equal ones may round either way)
        assert vm.relation == ("below" if rate < peak else "above")
    assert vm.bound == ("memory" if vm.relation == "below" else "compute")


@settings(max_examples=200, deadline=None)
@given(budgets)
def test_lab_exercises_compare_from_their_numbers(b: tuple[float, float]) -> None:
    peak, bandwidth = b
    ridge = model.ridge(peak, bandwidth)
    ex = {e.id: e for e in experiments.exercises(peak=peak, bandwidth=bandwidth,
                                                     ceilings=None)}
    # Doubled traffic: both intensities against the ridge, and the bound they imply.
    d = ex["ex_doubled_traffic"]
    xs = [d.answer.one_array.intensity, d.answer.two_arrays.intensity]
    line = next(s for s in d.solution if "the ridge" in s)
    _check_sides(line, xs, ridge)
    # Fusion: fused and unfused intensities.
    f = ex["ex_fusion"]
    a = f.answer
    xs = [a.intensity_fused, a.flops / a.unfused_bytes]
    line = next(s for s in f.solution if "the ridge" in s)
    _check_sides(line, xs, ridge)
    if "so time follows traffic" in line:
        assert all(x < ridge for x in xs)
    # bfloat16 against float32: each dtype's bound from its own intensity.
    h = ex["ex_bf16"]
    line = next(s for s in h.solution if s.startswith("against the ridge"))
    for dtype in ("bfloat16", "float32"):
        bound = re.search(rf"{dtype} is (memory|compute)-bound", line)
        assert bound, line
        assert bound.group(1) == words.bound(getattr(h.answer, dtype).intensity, ridge)
    # Batching: "no batch reaches it" only when the limit d/4 is under the ridge.
    bt = ex["ex_batching"]
    never = [s for s in bt.solution if "no batch reaches it" in s]
    assert bool(never) == (bt.answer.b_star is None)
    if never:
        assert bt.answer.d / 4 <= ridge


def _check_sides(line: str, xs: list[float], ridge: float) -> None:
    expected = {_expected_side(x, ridge) for x in xs}
    if len(expected) == 1:
        assert _side(line) == expected.pop(), line
    else:  # mixed: each intensity is named with its own side
        for x in xs:
            assert f"{x:.3g} FLOP/B {_expected_side(x, ridge)} the ridge" in line, line
    bounds = {words.bound(x, ridge) for x in xs}
    if len(bounds) == 1:
        assert f"{bounds.pop()}-bound" in line
        other = "compute" if "memory-bound" in line else "memory"
        assert f"{other}-bound" not in line, line
