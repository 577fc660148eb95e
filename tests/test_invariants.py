"""What the analysis must mean, checked on every kernel and program of a real run rather than
pinned page by page (no jax).

* Two numbers kept apart: a kernel's or program's share of the hardware roof is its achieved
  rate ÷ its own roof at its intensity (achieved ÷ share = that roof's rate), at most 100%
  unless the record names the roof it ran above; its miss is its own prediction against its
  own measured time.
* The binding is the largest term of that same prediction.
* No predicted number carries the measured kind, and predictions carry the predicted kind
  whatever roofs they were priced on.
* Sentences that compare numbers follow from the numbers, for any budgets.

They run on the recorded fixture; ``ROOFLINE_REPORT_INVARIANTS_ON=PATH/results.json`` runs them
on any other run (say the held-out suite's: ``benchmarks/prediction.py --suite heldout --out``).
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline_report.analysis.analyse import Assumptions, analyse
from roofline_report.analysis.hardware_roof import HardwareRoof
from roofline_report.analysis.predict import Prediction
from roofline_report.analysis.records import Analysis
from roofline_report.kinds import Kind
from roofline_report.report import views as render
from roofline_report.report.format import KIND_MARKERS
from roofline_report.results import io as results

FIXTURE = Path(os.environ.get("ROOFLINE_REPORT_INVARIANTS_ON") or
               Path(__file__).resolve().parent / "fixtures" / "cpu_results.json")


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    return results.load(FIXTURE)


@pytest.fixture(scope="module")
def an(data: dict[str, Any]) -> Analysis:
    return analyse(data)


def _rows(an: Analysis) -> list[Any]:
    return [r for p in an.programs if p.kernels is not None for r in p.kernels.rows]


def _check_share(achieved: float | None, share: float | None, roof: HardwareRoof | None
                 ) -> None:
    assert roof is not None and achieved is not None and share is not None
    rate = roof.rate
    assert rate is not None and rate[1] == "FLOP/s"
    assert achieved / share == pytest.approx(rate[0], rel=1e-9)


def _check_binding(p: Prediction) -> None:
    b = p.binding
    assert b in p.terms
    assert b.seconds == max(t.seconds for t in p.terms if t.group == b.group)


def test_every_kernel_rows_share_is_of_its_own_roof_and_its_miss_of_its_own_prediction(
        an: Analysis) -> None:
    rows = [r for r in _rows(an) if r.seconds and r.flops and r.hardware is not None]
    assert len(rows) > 50
    for r in rows:
        _check_share(r.achieved, r.share_of_hardware_roof, r.hardware)
        assert r.hardware is not None and r.hardware.kind is Kind.MEASURED
        share = r.share_of_hardware_roof
        assert share is not None and (share <= 1.0) == (r.above_roof is None)
        assert r.miss is not None and r.prediction is not None
        assert (r.miss.predicted, r.miss.measured) == (r.prediction.seconds, r.seconds)


def test_every_programs_share_is_of_its_own_roof_and_its_miss_of_its_own_prediction(
        an: Analysis) -> None:
    programs = [p for p in an.programs if p.seconds and p.flops and p.hardware is not None]
    assert len(programs) == len(an.programs)
    for p in programs:
        _check_share(p.achieved, p.share_of_hardware_roof, p.hardware)
        share = p.share_of_hardware_roof
        assert share is not None and (share <= 1.0) == (p.above_roof is None)
        assert p.miss is not None and p.prediction is not None
        assert (p.miss.predicted, p.miss.measured) == (p.prediction.seconds, p.seconds)
        # The program's roof is its charged kernels' parts summed.
        if p.kernels is not None:
            kernels = [r.hardware for r in p.kernels.rows if r.charged]
            for group in ("compute", "memory"):
                assert p.hardware.group_seconds(group) == pytest.approx(
                    sum(h.group_seconds(group) for h in kernels if h is not None), rel=1e-12)


def test_a_kernels_binding_is_the_largest_term_of_its_prediction(an: Analysis) -> None:
    # A kernel's time is trips x (max(compute sum, memory max, pattern) + the launch costs):
    # the binding is the largest of the work's group and each launch cost.
    for r in _rows(an):
        assert r.prediction is not None
        _largest_work_binds(r.prediction)


def test_a_programs_binding_is_its_largest_term_and_its_terms_its_time(an: Analysis) -> None:
    for prog in an.programs:
        p = prog.prediction
        assert p is not None
        assert p.binding.seconds == max(t.seconds for t in p.terms)
        assert sum(t.seconds for t in p.terms) == pytest.approx(p.seconds, rel=1e-12)
        if prog.kernels is not None:
            kernels = [r.prediction for r in prog.kernels.rows]
            dispatch = sum(t.seconds for t in p.terms if t.name == "dispatch")
            assert p.seconds == pytest.approx(
                sum(k.seconds for k in kernels if k is not None) + dispatch, rel=1e-12)


@pytest.mark.slow
def test_predictions_carry_their_own_kind(an: Analysis, data: dict[str, Any]) -> None:
    for p in [*(q.prediction for q in an.programs), *(r.prediction for r in _rows(an))]:
        assert p is not None and p.kind is Kind.PREDICTED
        assert Kind.PREDICTED not in p.roof_kinds  # the roofs are measured or assumed
    md = render.render(data).markdown
    marker = KIND_MARKERS[Kind.MEASURED.value]
    table = md[md.index("| kernel | category |"):]
    header = [c.strip() for c in table.splitlines()[0].strip("|").split("|")]
    predicted = [header.index(c) for c in ("predicted", "miss")]
    roof = [header.index(c) for c in ("hardware roof at its intensity", "of hardware roof")]
    for line in table.splitlines()[2:]:
        if not line.startswith("| `"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        for i in predicted:
            assert not cells[i].endswith(f"`{marker}`"), (header[i], line)
            assert cells[i].endswith("`P`") or cells[i] == "", (header[i], line)
        for i in roof:  # the achieved rate against a measured roof: measured, not predicted
            assert cells[i].endswith(f"`{marker}`") or cells[i] == "—", (header[i], line)


def test_predictions_on_assumed_budgets_are_still_predictions(data: dict[str, Any]) -> None:
    doc = copy.deepcopy(data)
    doc["ceilings"] = {"available": False, "reason": "not asked for"}
    an = analyse(doc)
    assert an.roofs.measured is None
    for prog in an.programs:
        assert prog.prediction is not None and prog.prediction.kind is Kind.PREDICTED
        assert set(prog.prediction.roof_kinds) == {Kind.HYPOTHETICAL}
    # With no measured roofs the accuracy of the model is not claimed.
    assert an.accuracy.errors == ()


@pytest.mark.slow
def test_every_program_is_placed_on_the_measured_roofline(an: Analysis,
                                                         data: dict[str, Any]) -> None:
    rendered = render.render(data)
    svg = rendered.figures["measured_roofline"]
    for p in an.programs:
        assert p.intensity is not None and p.achieved is not None
        # Each point carries its tooltip: a reader pointing at it sees which program it is.
        assert f"<title>{escape(p.title)}; " in svg, p.title
    # The caption counts what it places.
    placed = len(an.programs)
    assert f"{placed} programs are placed at their compiled-program intensity" in \
        rendered.markdown


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(peak=st.floats(min_value=1e3, max_value=1e16),
       bandwidth=st.floats(min_value=1e3, max_value=1e14))
def test_sentences_follow_from_their_numbers_under_any_budgets(peak: float,
                                                              bandwidth: float) -> None:
    doc = results.load(FIXTURE)
    a = Assumptions(peak=peak, bandwidth=bandwidth)
    vm = render.view_model(doc, a)
    x = vm.exercise
    intensity = 27648 / 8064
    ridge = peak / bandwidth
    expected = "below" if intensity < ridge else "equal to" if intensity == ridge else "above"
    assert x.relation == expected
    assert x.bound == ("memory" if intensity < ridge else "compute")
    for row in vm.model.rows:
        n = int(row.n)
        assert row.bound == ("memory" if n / 6 < ridge else "compute")


@pytest.mark.slow
def test_no_number_is_formatted_outside_the_formatter(data: dict[str, Any]) -> None:
    """Exponent notation and raw floats never reach the page, whatever the budgets."""
    for budgets in ((100.0, 1e-30 * 1e30), (1e18, 1e-3), (1e12, 1e12)):
        md = render.render(data, Assumptions(peak=budgets[0], bandwidth=budgets[1])).markdown
        prose = re.sub(r"```.*?```", "", md, flags=re.S)
        assert not re.search(r"\d\.\d+e[+-]\d\d", prose), budgets
        assert not re.search(r"\d{16,}", prose), budgets


def test_every_lab_prediction_is_of_kind_predicted(an: Analysis) -> None:
    """A lab experiment's prediction is a prediction whatever roofs it stands on (measured
    ceilings or assumed budgets); its measurement is measured."""
    assert an.experiments
    for e in an.experiments:
        assert e.prediction.kind is Kind.PREDICTED, e.id
        assert e.measurement.kind is Kind.MEASURED, e.id


# --- each invariant fails on a deliberately broken analysis ------------------------------------


def test_the_share_check_catches_a_row_held_to_another_rows_roof(an: Analysis) -> None:
    rows = [r for r in _rows(an) if r.seconds and r.flops and r.hardware is not None]
    a, b = next((x, y) for x in rows for y in rows
                if x.hardware is not None and y.hardware is not None
                and x.hardware.rate != y.hardware.rate)
    _check_share(a.achieved, a.share_of_hardware_roof, a.hardware)  # sound
    with pytest.raises(AssertionError):
        _check_share(a.achieved, a.share_of_hardware_roof, b.hardware)


def test_the_binding_check_catches_a_binding_that_is_not_the_largest_term(an: Analysis) -> None:
    from dataclasses import replace

    p = next(r.prediction for r in _rows(an) if r.prediction is not None and any(
        t.group != r.prediction.binding.group and t.seconds < r.prediction.binding.seconds
        for t in r.prediction.terms))
    assert p is not None
    smaller = next(t for t in p.terms
                   if t.group != p.binding.group and t.seconds < p.binding.seconds)
    _largest_work_binds(p)  # sound
    with pytest.raises(AssertionError):
        _largest_work_binds(replace(p, binding=smaller))


def _largest_work_binds(p: Prediction) -> None:
    """The kernel binding invariant for one prediction: the binding is the largest of the
    work's groups and each launch cost, and the time is the largest work plus the launches."""
    _check_binding(p)
    work = {"compute": p.group_seconds("compute"),
            "memory": max((t.seconds for t in p.terms if t.group == "memory"), default=0.0),
            "pattern": max((t.seconds for t in p.terms if t.group == "pattern"), default=0.0)}
    assert p.seconds == pytest.approx(max(work.values()) + p.group_seconds("overhead"),
                                      rel=1e-12)
    largest_overhead = max((t.seconds for t in p.terms if t.group == "overhead"), default=0.0)
    if p.binding.group == "overhead":
        assert p.binding.seconds == largest_overhead >= max(work.values())
    else:
        assert work[p.binding.group] == pytest.approx(max(work.values()), rel=1e-12)
        assert max(work.values()) >= largest_overhead


def test_the_kind_check_catches_a_prediction_marked_measured(an: Analysis) -> None:
    from dataclasses import replace

    e = an.experiments[0]
    broken = replace(e, prediction=replace(e.prediction, kind=Kind.MEASURED))
    with pytest.raises(AssertionError):
        test_every_lab_prediction_is_of_kind_predicted(
            replace(an, experiments=(broken, *an.experiments[1:])))
