"""A large trace's lines decoded by a helper process read exactly as in one process: the same
columns, the same skipped events and unknown fields, the same first error; a helper that cannot
help changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from roofline_report.traces import line_aside
from roofline_report.traces.xspace import TraceFormatError, XSpace, read_xspace
from roofline_report.traces.xspace_schema import message_class
from tests.test_ingest_reader import _bytes, _file, _int, plane, space


def _loads(*planes: list[tuple[int, float]]) -> list[list[line_aside.Load]]:
    return [[line_aside.Load(n, n * size) for n, size in plane] for plane in planes]


def test_the_plan_balances_two_processes_and_counts_starting_the_helper() -> None:
    # The 100 MB CPU trace's three lines (events, bytes an event): the helper takes one runtime
    # thread and the last third of the other, this process the Python thread and the rest.
    cpu = _loads([], [(2_431_995, 15.19), (666_315, 44.0), (662_379, 44.0)], [])
    share = line_aside.plan(cpu, 2)
    assert list(share) == [1] and share[1].keys() == {1, 2} and share[1][1] == 0
    assert 0.5 < share[1][2] / 662_379 < 0.8
    costs = [line.cost for line in cpu[1]]
    helper = line_aside.START_COST + costs[1] + costs[2] * (1 - share[1][2] / 662_379)
    here = costs[0] + costs[2] * share[1][2] / 662_379
    assert abs(helper - here) < 0.01 * here  # even, counting what starting the helper costs
    assert line_aside.plan(cpu, 1) == {}  # one core
    assert line_aside.plan(_loads([(400_000, 40.0), (300_000, 40.0)]), 2) == {}  # too few
    # One long line: the helper decodes its last events.
    ((one,),) = [v.values() for v in line_aside.plan(_loads([(5_000_000, 20.0)]), 4).values()]
    assert 0 < one < 5_000_000
    # Eight equal device lines: the helper takes about half, less what starting it costs.
    (eight,) = line_aside.plan(_loads([(1_000_000, 30.0)] * 8), 2).values()
    assert 3 <= len(eight) <= 5 and list(eight) == sorted(eight)
    assert sum(first == 0 for first in eight.values()) >= 3
    # A helper that would get less than starting it costs is not started.
    assert line_aside.plan(_loads([(1_100_000, 10.0)]), 2) == {}


def test_a_line_load_is_its_events_and_bytes_estimated_from_a_sample() -> None:
    short = [b"x" * (i % 7) for i in range(1000)]
    assert line_aside.load(short) == line_aside.Load(1000, float(sum(map(len, short))))
    long = [b"x" * (10 + i % 5) for i in range(100_000)]
    estimate = line_aside.load(long)
    assert estimate.events == 100_000
    assert abs(estimate.bytes - sum(map(len, long))) < 0.02 * sum(map(len, long))


def _same(a: XSpace, b: XSpace) -> None:
    assert a.dropped == b.dropped and a.unknown_fields == b.unknown_fields
    assert [p.name for p in a.planes] == [p.name for p in b.planes]
    for pa, pb in zip(a.planes, b.planes, strict=True):
        assert pa.stats == pb.stats and pa.event_metadata == pb.event_metadata
        for la, lb in zip(pa.lines, pb.lines, strict=True):
            assert (la.id, la.name) == (lb.id, lb.name)
            ea: Any = la.events
            eb: Any = lb.events
            for k in ("meta", "start_ns", "duration_ns"):
                x, y = getattr(ea, k), getattr(eb, k)
                assert x.dtype == y.dtype and np.array_equal(x, y)
            for k in ("bounds", "key", "kind", "bits"):
                x, y = getattr(ea.stats, k), getattr(eb.stats, k)
                assert x.dtype == y.dtype and np.array_equal(x, y)
            assert ea.stats.objects == eb.stats.objects and ea.stats.exact == eb.stats.exact
            assert list(ea) == list(eb)


def _always(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every trace of more than one line shared with a helper, on any machine."""
    monkeypatch.setattr(line_aside, "ASIDE_EVENTS", 0)
    monkeypatch.setattr(line_aside, "START_COST", 0)
    monkeypatch.setattr(line_aside, "cores", lambda: 2)


def _alone(path: Path, monkeypatch: pytest.MonkeyPatch) -> XSpace:
    with monkeypatch.context() as m:
        m.setattr(line_aside, "ASIDE_EVENTS", 10**15)
        return read_xspace(path)


def _many_lines(tmp_path: Path) -> Path:
    """A trace whose lines hold every shape the reader meets: stats of each value type,
    events with a negative duration, stats of an unknown value type, an unknown field."""
    lines = {f"t{i}": [(f"fusion.{j % 3}", 10.0 * j, 5.0 + i, {
        "hlo_op": f"fusion.{j % 3}", "hlo_module": "jit_f", "run_id": j // 3,
        "ratio": 0.5 * j, "offset": -j, "blob": b"\x00\x01"}) for j in range(40 + 10 * i)]
        for i in range(4)}
    lines["t1"].append(("fusion.0", 5.0, -3.0, {"hlo_op": "fusion.0"}))
    names = _bytes(5, _int(1, 90) + _bytes(2, _int(1, 90) + _bytes(2, "new_stat")))
    odd = _int(1, 1) + _int(2, 7000) + _int(3, 100) + _bytes(4, _int(1, 90) + _bytes(8, b"n"))
    # A line of plain events with two decoded exactly (an unknown field), early and late.
    plain = [_bytes(4, _int(1, 1) + _int(2, 1000 * j) + _int(3, 5)) for j in range(31)]
    for j in (5, 20):  # an event field the schema lacks
        plain[j] = _bytes(4, _int(1, 1) + _int(2, 1000 * j) + _int(3, 5) + _int(15, 1))
    extra = (_bytes(3, _int(1, 9) + _bytes(2, "odd") + _bytes(4, odd))
             + _bytes(3, _int(1, 10) + _bytes(2, "mixed") + b"".join(plain)) + names)
    body = plane(1, "/host:CPU", lines, stats={"cores": 2}) + extra + _int(9, 1)
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(space(plane(2, "/host:metadata", {}), body))
    return path


def test_a_shared_read_gives_the_same_trace(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    path = _many_lines(tmp_path)
    alone = _alone(path, monkeypatch)
    assert alone.dropped.negative_durations and alone.dropped.unknown_stat_values
    assert alone.unknown_fields
    _always(monkeypatch)
    loads = [[line_aside.load(line.events) for line in p.lines]
             for p in message_class("XSpace").FromString(path.read_bytes()).planes]
    assert line_aside.plan(loads, 2)
    started: list[Any] = []
    result = line_aside.LineAside.result

    def watched(self: line_aside.LineAside) -> line_aside.Helped | None:
        helped = result(self)
        started.append(helped)
        return helped

    monkeypatch.setattr(line_aside.LineAside, "result", watched)
    _same(read_xspace(path), alone)
    assert len(started) == 1 and started[0] is not None  # the helper decoded its lines
    # A committed trace, gzipped: the helper decompresses it too.
    softmax = _file("softmax")
    shared = read_xspace(softmax)
    assert started[-1] is not None
    _same(shared, _alone(softmax, monkeypatch))


@pytest.mark.parametrize("share", [{1: {1: 20, 3: 0}}, {1: {0: 0, 2: 59}}, {1: {3: 1}},
                                   {1: {0: 39, 1: 0, 2: 30, 3: 69, 5: 12}}, {1: {5: 12}}])
def test_lines_split_between_the_two_processes_join_to_the_same_trace(
        share: dict[int, dict[int, int]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The helper decodes a line from some event on (its exactly decoded events, objects and
    skipped events among them), this process the events before it."""
    path = _many_lines(tmp_path)
    alone = _alone(path, monkeypatch)
    _always(monkeypatch)
    monkeypatch.setattr(line_aside, "plan", lambda loads, available: share)
    helped: list[Any] = []
    result = line_aside.LineAside.result
    monkeypatch.setattr(line_aside.LineAside, "result",
                        lambda self: helped.append(result(self)) or helped[-1])
    _same(read_xspace(path), alone)
    assert helped and helped[-1] is not None
    with monkeypatch.context() as m:  # no helper: its share decoded here, as it would have
        m.setattr("sys.executable", str(tmp_path / "no-such-python"))
        _same(read_xspace(path), alone)


def test_a_helper_that_cannot_help_changes_nothing(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = _many_lines(tmp_path)
    alone = _alone(path, monkeypatch)
    _always(monkeypatch)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    with monkeypatch.context() as m:  # no interpreter to start
        m.setattr("sys.executable", str(tmp_path / "no-such-python"))
        _same(read_xspace(path), alone)
    with monkeypatch.context() as m:  # the file changed after this process read it
        real = line_aside.Source.of

        def changed(cls: type[line_aside.Source], p: Path, n: int) -> line_aside.Source | None:
            s = real(p, n)
            return None if s is None else cls(s.path, s.size, s.mtime_ns - 1, s.message_bytes)

        m.setattr(line_aside.Source, "of", classmethod(changed))
        _same(read_xspace(path), alone)
    assert not list(scratch.iterdir())  # the helpers' folders are removed


_NEWER = _bytes(4, _int(1, 1) + _int(7, 5))  # placed in time by a field the reader lacks
_CORRUPT = _bytes(4, b"\x08\xff")  # a metadata id whose varint never ends


@pytest.mark.parametrize("bad", [{"b": _NEWER, "c": _CORRUPT}, {"a": _CORRUPT, "d": _NEWER},
                                 {"b": _CORRUPT, "d": _NEWER}, {"d": _CORRUPT}, {"a": _NEWER}])
@pytest.mark.parametrize("early", [False, True])
@pytest.mark.parametrize("share", [{0: {1: 0, 3: 0}}, {0: {1: 10, 3: 0}}, {0: {0: 20, 2: 5}}])
def test_a_corrupt_line_raises_the_same_first_error(
        bad: dict[str, bytes], early: bool, share: dict[int, dict[int, int]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Four lines of 31 events, a bad one first or last in some: the helper decodes the lines,
    # or the events from some event on, that ``share`` names, this process the rest.
    body = plane(1, "/host:CPU", {})
    for i, name in enumerate("abcd", 1):
        events = [_bytes(4, _int(1, 1) + _int(2, 1000 * j) + _int(3, 5))
                  for j in range(31 - (name in bad))]
        if name in bad:
            events.insert(0 if early else len(events), bad[name])
        body += _bytes(3, _int(1, i) + _bytes(2, name) + _int(3, 0) + b"".join(events))
    path = tmp_path / "bad.xplane.pb"
    path.write_bytes(space(body))
    with pytest.raises(TraceFormatError) as alone:
        _alone(path, monkeypatch)
    _always(monkeypatch)
    monkeypatch.setattr(line_aside, "plan", lambda loads, available: share)
    with pytest.raises(TraceFormatError) as shared:
        read_xspace(path)
    assert str(shared.value) == str(alone.value)
    first = bad[min(bad)]
    assert ("newer profiler" in str(alone.value)) == (first is _NEWER)
