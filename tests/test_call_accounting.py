"""Every traced call's time accounted for on the kernel table's basis
(roofline_report.analysis.call_accounting), and its words (roofline_report.report
.accounting_words): hand-computed calls, a broken record the accounting catches, and the
committed CPU traces read end to end."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from roofline_report.analysis.analyse import analyse
from roofline_report.analysis.call_accounting import VARIES, account_calls
from roofline_report.ingest.pipeline import read_profile
from roofline_report.ingest.records import results_document
from roofline_report.report.accounting_words import accounting_text
from tests.kernel_records import kernel_time, trace_calls

TRACES = Path(__file__).parent / "fixtures" / "traces"


def _call(program: float, busy: float, dispatch: float = 0.0, loop: float = 0.0
          ) -> dict[str, float]:
    return {"program_s": program, "busy_s": busy, "dispatch_s": dispatch,
            "loop_control_s": loop, "gaps_s": program - busy - dispatch - loop}


def _text(parts: tuple[Any, ...]) -> str:
    return "".join(getattr(p, "text", p) if not isinstance(p, str) else p for p in parts)


# Three kernels over four calls. a and b take 1 ms and 2 ms but for one stall each, which
# lands on a different kernel in different calls; c is steady.
SAMPLES = {"a": [1e-3, 9e-3, 1e-3, 1e-3], "b": [2e-3, 2e-3, 2e-3, 12e-3], "c": [1e-3] * 4}
TIMES = {"a": 1e-3, "b": 2e-3, "c": 1e-3}  # each kernel's first quartile
CALLS = [_call(5e-3, 4e-3, 2e-4), _call(13.5e-3, 12e-3, 2e-4), _call(5e-3, 4e-3, 2e-4),
         _call(16e-3, 15e-3, 2e-4, 1e-4)]


def test_each_call_is_the_table_plus_what_it_took_beyond_plus_the_rest() -> None:
    a = account_calls(trace_calls(CALLS), TIMES, SAMPLES)
    assert a is not None
    assert a.table_s == pytest.approx(4e-3)  # the column: 1 + 2 + 1 ms
    first, second, _, fourth = a.calls
    assert first.beyond_s == pytest.approx(0.0) and first.overlap_s == pytest.approx(0.0)
    assert second.beyond_s == pytest.approx(8e-3)  # a took 9 ms, not 1
    assert fourth.beyond_s == pytest.approx(10e-3)  # b took 12 ms, not 2
    assert fourth.overlap_s == pytest.approx(1e-3)  # busy 15 ms, kernels 14 ms
    for c in a.calls:
        parts = (c.table_s + c.beyond_s + c.overlap_s + c.dispatch_s + c.loop_control_s
                 + c.gaps_s)
        assert parts == pytest.approx(c.program_s) and c.unexplained < 1e-9
    assert a.median_call.program_s == 5e-3  # the lower middle of 5, 5, 13.5, 16 ms
    assert [(v.name, v.low_s, v.high_s) for v in a.varying] == [("b", 2e-3, 12e-3),
                                                               ("a", 1e-3, 9e-3)]
    s = a.stalls
    assert s is not None and (s.calls, s.of_calls) == (2, 4) and s.moving
    assert (s.low_s, s.high_s) == (9e-3, 12e-3)
    assert dict(s.kernels) == {"a": 1, "b": 1}
    words = _text(accounting_text(a))
    assert "In 2 of 4 calls one kernel took 9 ms" in words and "not the same kernel" in words
    assert f"varied more than {VARIES:g}×" in words and "b (2 ms" in words


def test_a_call_whose_parts_do_not_add_up_is_caught() -> None:
    broken = [dict(c) for c in CALLS]
    broken[2]["gaps_s"] += 2e-3  # a reader that double-counts a gap
    a = account_calls(trace_calls(broken), TIMES, SAMPLES)
    assert a is not None
    assert a.worst_residual == pytest.approx(2e-3 / 5e-3)
    assert "to within 40%" in _text(accounting_text(a))


def test_steady_kernels_have_no_stall_and_no_varying_row() -> None:
    steady = {"a": [1e-3] * 3, "b": [2e-3, 2.5e-3, 2e-3]}
    calls = [_call(3.5e-3, 3e-3), _call(4e-3, 3.5e-3), _call(3.5e-3, 3e-3)]
    a = account_calls(trace_calls(calls), {"a": 1e-3, "b": 2e-3}, steady)
    assert a is not None and a.stalls is None and a.varying == ()
    assert account_calls([], {}, {}) is None


@pytest.mark.parametrize("trace", ["transformer", "sharded8", "../traces_real/h200_train_step"])
def test_the_committed_traces_account_for_every_call(trace: str) -> None:
    """The table's column is what the accounting starts from, and every call of the real
    traces (CPU captures here, and a training step on an H200 whose kernels overlap their
    neighbours) is accounted for within 5 %."""
    data = results_document(read_profile(TRACES / trace))
    (w,) = data["workloads"]
    (program,) = [p for p in analyse(data).programs if p.kernels is not None]
    table = program.kernels
    assert table is not None and table.accounting is not None
    a = table.accounting
    assert a.table_s == pytest.approx(sum(r.seconds or 0.0 for r in table.rows))
    assert len(a.calls) == a.count == len(w["kernel_timing"]["calls"])
    assert a.worst_residual <= 0.05


def test_a_kernel_missing_from_a_call_is_placed_at_the_calls_it_ran_in() -> None:
    """Samples of a kernel that skipped a call belong to the calls it ran in (calls_at), not
    to the first ones: else every later call's sum is shifted."""
    from roofline_report.analysis.kernels import per_call_samples

    k = kernel_time(name="a", launches=[1, 1], span_s=[1e-3, 5e-3], calls_at=[0, 2])
    placed = per_call_samples(k, 3)
    assert placed[0] == 1e-3 and math.isnan(placed[1]) and placed[2] == 5e-3
    assert len(per_call_samples(k, 2)) == 2, "a sample past the calls is left out"
    old = kernel_time(name="a", launches=[1, 1], span_s=[1e-3, 5e-3])  # before calls_at
    assert [None if math.isnan(x) else x for x in per_call_samples(old, 3)] == [1e-3, 5e-3, None]
    calls = [_call(2e-3, 2e-3), _call(1e-3, 1e-3), _call(6e-3, 6e-3)]
    b = [1e-3, 1e-3, 1e-3]
    a = account_calls(trace_calls(calls), {"a": 1e-3, "b": 1e-3},
                      {"a": per_call_samples(k, 3), "b": b})
    assert a is not None
    assert [c.kernels_s for c in a.calls] == pytest.approx([2e-3, 1e-3, 6e-3])
    assert a.worst_residual < 1e-9


def test_the_reader_records_the_calls_a_kernel_ran_in() -> None:
    from roofline_report.traces.events import kernel_times

    class _Plane:
        def __init__(self, name: str, lines: list[Any]) -> None:
            self.name, self.lines = name, lines

    class _Line:
        def __init__(self, events: list[Any]) -> None:
            self.name, self.events = "t", events

    class _Ev:
        def __init__(self, name: str, start: float, run: int) -> None:
            self.name, self.start_ns, self.duration_ns = name, start, 10.0
            self.stats = {"hlo_op": name, "hlo_module": "jit_f", "run_id": run}

    events = [_Ev("a", 0, 1), _Ev("b", 20, 1), _Ev("b", 100, 2), _Ev("a", 200, 3),
              _Ev("b", 220, 3)]
    timing = kernel_times(type("P", (), {"planes": [_Plane("/device:GPU:0",
                                                          [_Line(events)])]})(),
                          module="jit_f")
    rows = {k["name"]: k for k in timing["kernels"]}
    assert rows["a"]["calls_at"] == [0, 2] and "calls_at" not in rows["b"]
