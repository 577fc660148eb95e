"""Calls bound by their dispatch, all well past their floors in one run: the cause named from
the run's own figures, on hand-made predictions and on a real run's reasons."""

from __future__ import annotations

from roofline_report.analysis.explain import Evidence, program_reason
from roofline_report.analysis.miss import miss
from roofline_report.analysis.slow_floors import FEWEST, named, slow_floors
from roofline_report.analysis.stats import Stats
from roofline_report.analysis.terms import Prediction, Term
from roofline_report.backends import CPU
from roofline_report.kinds import Kind

M = Kind.MEASURED


def _floor_bound(seconds: float = 4e-6) -> Prediction:
    """A call of a few microseconds: its dispatch is its prediction."""
    terms = (Term("memory", "memory", 0.2e-6, "L1 read-write", M, "L1"),
             Term("dispatch", "overhead", seconds, "dispatch enqueued", M))
    return Prediction(seconds, terms, terms[1], 2048.0, 8192.0, "the kernels' touched bytes",
                      "L1")


def _memory_bound(seconds: float = 100e-6) -> Prediction:
    terms = (Term("memory", "memory", seconds, "L3 read-write", M, "L3"),
             Term("dispatch", "overhead", 4e-6, "dispatch enqueued", M))
    return Prediction(seconds, terms, terms[0], 1e6, 8e6, "the kernels' touched bytes", "L3")


def _why(p: Prediction, measured: float) -> str:
    m = miss(p.seconds, measured)
    assert m is not None
    return program_reason(p, m, Evidence(backend=CPU, dtype="float32",
                                         timing=Stats([measured] * 5)))


def test_several_dispatch_bound_calls_past_their_floors_name_the_dispatch() -> None:
    # Five calls predicted at 4 us that took 10.4 to 12.4 us, no other evidence: each row
    # said the cause was unknown.
    p = _floor_bound()
    calls = [(p, t, _why(p, t)) for t in (10.4e-6, 11e-6, 11.5e-6, 12e-6, 12.4e-6)]
    assert all(why.startswith("unknown: slower than predicted") for _, _, why in calls)
    found = slow_floors(calls)
    assert found is not None and found.calls == 5
    assert (found.least, found.most) == (2.6, 3.1)
    assert named(calls[0][2], p, 10.4e-6, found) == (
        "dispatch moved: 5 of this run's calls bound by their dispatch took 2.6 to 3.1× the "
        "floors measured with its ceilings, with no other cause found: the host dispatched "
        "them slower while they were timed than when its floors were measured")


def test_too_few_calls_or_other_causes_leave_the_reasons_as_they_are() -> None:
    p = _floor_bound()
    few = [(p, 12e-6, _why(p, 12e-6))] * (FEWEST - 1)
    assert slow_floors(few) is None
    # A call under 2x its floors, one bound by memory, and one whose reason names a cause are
    # not counted, and their reasons stay.
    slow = [(p, 12e-6, _why(p, 12e-6))] * FEWEST
    memory = _memory_bound()
    others = [(p, 7e-6, _why(p, 7e-6)), (memory, 300e-6, _why(memory, 300e-6)),
              (p, 12e-6, "unstable: the timing's spread is 40%")]
    found = slow_floors(slow + others)
    assert found is not None and found.calls == FEWEST
    for prediction, measured, why in others:
        assert named(why, prediction, measured, found) == why
    assert named(slow[0][2], p, 12e-6, None) == slow[0][2]
