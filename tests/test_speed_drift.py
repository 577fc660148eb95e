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
from tests.ceilings_records import typed_ceilings

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
    assert drift_of(results.typed(saved)) is None  # written before the check
    unavailable = _with(saved, {"available": False, "reason": "no ceilings"})
    assert drift_of(results.typed(unavailable)) is None
    found = drift_of(results.typed(_with(saved, _check(200e9, 150e9))))
    assert found is not None and found.ratio == pytest.approx(0.75)
    # A rate that is not a positive number is refused with the record, not read.
    with pytest.raises(InputError, match="speed_check"):
        _with(saved, {**_check(200e9, 150e9), "ceiling_value": 0})


def test_the_record_is_validated(saved: dict[str, Any]) -> None:
    _with(saved, {"available": False, "reason": "no ceilings to check the machine's speed "
                                                "against"})
    bad = _check(200e9, 150e9)
    bad["value"] = -1.0
    with pytest.raises(InputError, match="speed_check"):
        _with(saved, bad)


@pytest.mark.slow
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
             "timing": {"available": True, "inner_reps": 1, "method": "jax: test",
                        "min_sample_s": 0.001, "per_call_s": [2 * 64**3 / 1e9],
                        "resolution_s": 1e-7}}
    check = speed_check(typed_ceilings({"compute": [entry]}), quick=True)
    assert check["available"] and check["size"] == 64 and check["ceiling_value"] == 1e9
    assert check["value"] == pytest.approx(2 * 64**3 / min(check["timing"]["per_call_s"]))
    assert check["probe"] == "float32 matmul, n=64"
    # Nothing to check against: said, not invented.
    highest = {**entry, "precision": "highest"}
    none = speed_check(typed_ceilings({"compute": [highest]}), quick=True)
    assert none == {"available": False,
                    "reason": "the ceilings have no float32 matmul rate to time again"}


# --- the memory roofs checked again ------------------------------------------------------------

def _sweep_point(size: int, value: float, per_call: float) -> dict[str, Any]:
    return {"available": True, "bytes": size, "bytes_per_call": int(value * per_call),
            "reason": "", "reps": 1, "value": value,
            "timing": {"available": True, "inner_reps": 1, "method": "jax: test",
                       "min_sample_s": 0.001, "per_call_s": [per_call],
                       "resolution_s": 1e-7}}


def _ceilings_with_sweep() -> dict[str, Any]:
    """Caches of 32 KiB and 1 MiB; read-write, read and write-new points from 4 KiB to 8 MiB
    (the write-new calls long enough beside a 1 us dispatch to give a rate)."""
    sizes = [4096 * 2**i for i in range(12)]
    kernels = [{"name": name, "points": [_sweep_point(b, rate / (1 + i % 3), 1e-3)
                                         for i, b in enumerate(sizes)]}
               for name, rate in (("read-write", 60e9), ("read", 40e9), ("write-new", 20e9))]
    return {"available": True, "backend": "cpu",
            "caches": [{"level": 1, "type": "Data", "size": 32768},
                       {"level": 2, "type": "Unified", "size": 1048576}],
            "dispatch": {"available": True, "value": 1e-6},
            "working_set": {"available": True, "kernels": kernels,
                            "plan": {"sizes": sizes, "bytes_per_call": 1 << 20, "samples": 1,
                                     "min_sample_s": 0.001,
                                     "kernels": ["read-write", "read", "write-new"]}}}


def test_each_memory_roof_is_checked_at_one_point_of_its_own_level() -> None:
    from roofline_report.observe.speed_check import memory_points

    chosen = memory_points(typed_ceilings(_ceilings_with_sweep()))
    # In a cache, the largest working set the level holds (at most half its capacity); in
    # main memory (past 4 times the last cache) the smallest; the read kernel has no roof
    # the model prices, so it is not checked.
    assert [(roof, kernel, size) for roof, kernel, size, _ in chosen] == [
        ("L1 read-write", "read-write", 16384), ("L1 write-new", "write-new", 16384),
        ("L2 read-write", "read-write", 524288), ("L2 write-new", "write-new", 524288),
        ("DRAM read-write", "read-write", 4194304), ("DRAM write-new", "write-new", 4194304)]
    # Each compares with the sweep's own rate at that point.
    assert chosen[0][3] == pytest.approx(60e9 / (1 + 2 % 3))
    assert memory_points(typed_ceilings({"working_set": {"available": False,
                                                         "reason": "not run"}})) == []


def _memory(roof: str, before: float, now: float, size: int = 4194304) -> dict[str, Any]:
    return {"available": True, "roof": roof, "kernel": roof.split(" ", 1)[1], "bytes": size,
            "ceiling_value": before, "value": now,
            "timing": {"available": True, "inner_reps": 1, "method": "jax: test",
                       "min_sample_s": 0.005, "per_call_s": [2 * size / now],
                       "resolution_s": 1e-7}}


def test_memory_checks_are_read_and_judge_the_programs_bound_by_their_roof(
        saved: dict[str, Any]) -> None:
    from roofline_report.analysis.speed_drift import checks_of

    check = {**_check(200e9, 198e9), "memory": [
        _memory("L3 write-new", 30e9, 15e9),
        _memory("DRAM read-write", 26e9, 26.5e9, 33554432),
        {"available": False, "roof": "L1 read-write", "kernel": "read-write", "bytes": 16384,
         "reason": "read-write on 16384 B failed: out of memory"}]}
    checks = checks_of(results.typed(_with(saved, check)))
    assert checks is not None and checks.compute is not None
    assert [d.probe for d in checks.memory] == ["L3 write-new at 4 MiB",
                                                "DRAM read-write at 32 MiB"]
    slow = checks.memory[0]
    assert slow.unit == "B/s" and slow.roof == "L3 write-new" and slow.slower and slow.drifted
    memory_bound = Term("memory", "memory", 1e-3, "L3 write-new", Kind.MEASURED)
    elsewhere = Term("memory", "memory", 1e-3, "L2 read-write", Kind.MEASURED)
    compute_bound = Term("matmul", "compute", 1e-3, "matmul float32", Kind.MEASURED)
    assert checks.for_binding(memory_bound) is slow
    # A roof not checked, and a compute roof, are judged by the matmul's check.
    assert checks.for_binding(elsewhere) is checks.compute
    assert checks.for_binding(compute_bound) is checks.compute
    # The run's note: only the check that drifted, in words built from its rates.
    assert checks.notes() == [
        "timed again after its programs, a memory roof's sweep point ran L3 write-new "
        "at 4 MiB 50% slower (15 GB/s against 30 GB/s): predictions bound by that roof read "
        "short of the programs' times by about as much"]
    # A program bound by that roof, 2.2 times slower than predicted, names it; the matmul's
    # check (1% off) would not.
    prediction = Prediction(1e-3, (memory_bound,), memory_bound, 0.0, 30e6, "test", "L3")
    assert "drift: the machine ran 50% slower when checked after its programs were timed " \
           "than when its ceilings were measured (L3 write-new at 4 MiB: 15 GB/s against " \
           "30 GB/s)" in _reason(checks, prediction, 2.2e-3)


def _reason(checks: Any, prediction: Prediction, measured_s: float) -> str:
    """The reason on a program's row that ran ``measured_s`` against ``prediction``, judged by
    the run's check for its binding."""
    measured = miss(prediction.seconds, measured_s)
    assert measured is not None
    evidence = Evidence(backend=describe("cpu"), dtype="float32",
                        drift=checks.for_binding(prediction.binding))
    return program_reason(prediction, measured, evidence)


def test_memory_checks_either_way_in_one_note(saved: dict[str, Any]) -> None:
    from roofline_report.analysis.speed_drift import checks_of

    check = {**_check(200e9, 150e9), "memory": [_memory("L3 write-new", 30e9, 15e9),
                                                 _memory("L2 read-write", 40e9, 60e9, 262144)]}
    checks = checks_of(results.typed(_with(saved, check)))
    assert checks is not None
    first, second = checks.notes()
    assert first.startswith("the machine ran 25% slower")
    assert second == (
        "timed again after its programs, memory roofs' sweep points ran L3 write-new at "
        "4 MiB 50% slower (15 GB/s against 30 GB/s) and L2 read-write at 256 KiB 50% faster "
        "(60 GB/s against 40 GB/s): predictions bound by those roofs read off the programs' "
        "times by about as much")


@pytest.mark.slow
def test_memory_checks_are_validated_and_shown_with_the_ceilings(
        saved: dict[str, Any]) -> None:
    from roofline_report.report import views

    bad = {**_check(200e9, 198e9), "memory": [_memory("L3 write-new", 30e9, -1.0)]}
    with pytest.raises(InputError, match="speed_check"):
        _with(saved, bad)
    doc = _with(saved, {**_check(200e9, 198e9),
                        "memory": [_memory("L3 write-new", 30e9, 15e9, 134217728)]})
    an = analyse(doc)
    assert an.speed_checks is not None and len(an.speed_checks.memory) == 1
    assert "L3 write-new at 128 MiB 50% slower" in an.run_note
    first = views.render(doc)
    md = first.markdown
    assert "The ceilings timed again after the programs" in md
    assert "1 check is that far off here" in md
    row = next(line for line in md.splitlines() if line.startswith("| L3 write-new at 128 MiB"))
    assert "30 GB/s" in row and "15 GB/s" in row and "0.5" in row
    assert views.render(doc).html == first.html


def test_the_check_times_each_memory_roofs_point_again() -> None:
    pytest.importorskip("jax")
    from roofline_report.observe.speed_check import memory_check

    ceilings = _ceilings_with_sweep()
    ceilings["working_set"]["kernels"] = [
        k for k in ceilings["working_set"]["kernels"] if k["name"] == "read-write"]
    ceilings["caches"] = [{"level": 1, "type": "Data", "size": 32768}]
    ceilings["working_set"]["kernels"][0]["points"] = \
        ceilings["working_set"]["kernels"][0]["points"][:4]  # 4 KiB to 32 KiB
    records = memory_check(typed_ceilings(ceilings), quick=True)
    assert [(r["roof"], r["bytes"]) for r in records] == [("L1 read-write", 16384)]
    (record,) = records
    assert record["available"] and record["ceiling_value"] == pytest.approx(60e9 / 3)
    timing = record["timing"]
    # Timed as the sweep times a point: bytes moved per call over the fastest call.
    reps = max(1, (1 << 20) // (2 * 16384))
    assert record["value"] == pytest.approx(2 * 16384 * reps / min(timing["per_call_s"]))


# --- the dispatch floor checked again ----------------------------------------------------------

def _dispatch(before: float, now: float) -> dict[str, Any]:
    return {"available": True, "ceiling_seconds": before, "seconds": now,
            "timing": {"available": True, "inner_reps": 1024, "method": "jax: test",
                       "min_sample_s": 0.005, "per_call_s": [now], "resolution_s": 1e-7}}


def test_a_dispatch_check_judges_the_programs_bound_by_their_dispatch(
        saved: dict[str, Any]) -> None:
    """A run whose smallest programs ran at 11 to 16 µs a call where its ceilings' dispatch
    read 3.7 µs: the floor timed again after the programs names the drift on their rows, in
    times, where the matmul's check (1 % off) would not."""
    from roofline_report.analysis.speed_drift import CALLS, checks_of

    checks = checks_of(results.typed(_with(saved, {**_check(200e9, 198e9),
                                                   "dispatch": _dispatch(3.7e-6, 11.1e-6)})))
    assert checks is not None and checks.dispatch is not None
    floor = checks.dispatch
    assert floor.unit == CALLS and floor.slower and floor.drifted
    assert floor.share == pytest.approx(1.0 - 3.7 / 11.1)
    dispatch = Term("dispatch", "overhead", 3.7e-6, "dispatch enqueued", Kind.MEASURED)
    launch = Term("launch", "overhead", 0.4e-6, "launch", Kind.MEASURED)
    assert checks.for_binding(dispatch) is floor
    assert checks.for_binding(launch) is checks.compute
    assert checks.notes() == [
        "timed again after its programs, the dispatch of one call took 11.1 µs against "
        "3.7 µs: predictions bound by it read short of the programs' times by about as much"]
    prediction = Prediction(4.1e-6, (dispatch, launch), dispatch, 0.0, 8e3, "test", "L1")
    assert "drift: the machine ran 67% slower when checked after its programs were timed " \
           "than when its ceilings were measured (the dispatch of one call: 11.1 µs against " \
           "3.7 µs)" in _reason(checks, prediction, 11.3e-6)
    # Checked and steady: nothing said.
    steady = checks_of(results.typed(_with(saved, {**_check(200e9, 198e9),
                                                   "dispatch": _dispatch(3.7e-6, 3.8e-6)})))
    assert steady is not None and steady.dispatch is not None and steady.notes() == []
    # Not checked (files written before): judged by the matmul's, as before.
    before = checks_of(results.typed(_with(saved, _check(200e9, 198e9))))
    assert before is not None and before.dispatch is None
    assert before.for_binding(dispatch) is before.compute


def test_the_check_times_the_ceilings_enqueued_dispatch_again() -> None:
    pytest.importorskip("jax")
    from roofline_report.observe.speed_check import dispatch_check

    floor = {"available": True, "value": 9e-6, "enqueued": 4e-6,
             "timing_enqueued": {"available": True, "inner_reps": 256, "method": "jax: test",
                                 "min_sample_s": 0.001, "per_call_s": [4e-6],
                                 "resolution_s": 1e-7}}
    check = dispatch_check(typed_ceilings({"dispatch": floor}))
    assert check is not None and check["ceiling_seconds"] == 4e-6
    assert check["seconds"] == min(check["timing"]["per_call_s"]) > 0
    # No enqueued dispatch measured: nothing to check against, nothing invented.
    assert dispatch_check(typed_ceilings({"dispatch": {"available": True, "value": 9e-6}})) \
        is None


def test_the_dispatch_check_is_shown_with_the_ceilings_as_times(saved: dict[str, Any]) -> None:
    from roofline_report.report import views

    doc = _with(saved, {**_check(200e9, 198e9), "dispatch": _dispatch(3.7e-6, 11.1e-6)})
    rendered = views.render(doc).markdown
    assert "| the dispatch of one call | 3.7 µs" in rendered
    assert "11.1 µs" in rendered and "the enqueued dispatch of one call" in rendered
    assert "the dispatch of one call took 11.1 µs against 3.7 µs" in rendered
    assert views.render(doc).markdown == rendered  # the same document, the same page
