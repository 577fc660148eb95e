"""The launches read as columns (traces/kernel_columns.py) give what the general path gives,
to the last bit, and step aside for every trace that path must read one event at a time."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from roofline_report.ingest import timeline
from roofline_report.ingest.execute_starts import ExecuteLine
from roofline_report.ingest.thunk_ends import ThunkEndLine, ThunkEnds
from roofline_report.traces import events, kernel_columns
from roofline_report.traces.xspace import Event, Line, read_xspace

TRACES = Path(__file__).parent / "fixtures" / "traces"


def _general(view: Any, monkeypatch: pytest.MonkeyPatch, **kwargs: Any) -> dict[str, Any]:
    """kernel_times of ``view`` by the general path alone."""
    with monkeypatch.context() as m:
        m.setattr(events, "timed_launches", lambda *a, **k: None)
        return events.kernel_times(view, **kwargs)


def _taken(view: Any, module: str | None) -> bool:
    return kernel_columns.timed_launches(view, module, events._Ends,
                                         events._module_matches) is not None


@pytest.mark.parametrize("trace", ["transformer", "softmax", "sharded8", "two_hosts"])
def test_the_lanes_of_the_captured_traces_read_as_columns_alike(
        trace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    compared = 0
    for path in sorted((TRACES / trace).glob("plugins/profile/*/*.xplane.pb*")):
        space = read_xspace(path)
        markers = timeline.steps(space)
        for lane in timeline.lanes(space):
            module = str(lane.kernels[0].stats["hlo_module"])
            for marks in (markers, []):
                view = timeline.profile_for(space, lane, module, [], markers=marks, trips=None)
                assert _taken(view, module)
                kwargs = {"module": module, "calls": view.calls}
                assert events.kernel_times(view, **kwargs) == _general(view, monkeypatch,
                                                                       **kwargs)
                compared += 1
    assert compared >= 2


class _Plane:
    def __init__(self, name: str, lines: list[Any]) -> None:
        self.name = name
        self.lines = lines


class _View:
    def __init__(self, planes: list[_Plane]) -> None:
        self.planes = planes


def _random_view(seed: int, *, nested: bool = False, steps: bool = False,
                 device: bool = False) -> _View:
    """Calls of a few kernels on three thunk lines, some asynchronous (an end event with the
    launch's flow id, or none, or a flow id reused), some overlapping the next kernel, with
    execute events; runs by run_id stat or by step label."""
    rng = random.Random(seed)
    lines: dict[int, list[Event]] = {0: [], 1: [], 2: []}
    runs: dict[int, list[Any]] = {0: [], 1: [], 2: []}
    flows: list[Any] = []
    ops: list[str] = []
    starts: list[float] = []
    ends: list[float] = []
    executes: list[float] = []
    at = 1000.0
    for call in range(40):
        executes.append(at - rng.choice([0.0, 3.0, 7.5]))
        for j in range(rng.randint(1, 5)):
            op = rng.choice(["fusion.1", "dot.2", "copy.3", "while.4"])
            line = rng.randrange(3)
            took = rng.choice([0.0, 1.0, 2.5, 6.0])
            at = max(at, max((e.start_ns + e.duration_ns for e in lines[line]), default=0.0))
            stats: dict[str, Any] = {"hlo_op": op, "hlo_module": "jit_step", "run_id": call}
            flow = rng.choice([None, 100 + call * 10 + j, 7])
            if flow is not None:
                stats["_p"] = flow
            lines[line].append(Event(op, at, took, stats))
            runs[line].append(f"step {call}")
            if rng.random() < 0.6:  # asynchronous: an end event some time later
                end_at = at + took + rng.choice([0.0, 2.0, 9.0])
                flows.append(rng.choice([flow, flow, None]))
                ops.append(op)
                starts.append(end_at)
                ends.append(end_at + rng.choice([0.0, 0.5]))
            # Most start after the last one ends; some while it runs (on another line).
            at += rng.choice([took, took, took / 2]) + rng.choice([0.0, 0.0, 1.5])
            if nested and rng.random() < 0.2 and took > 1.0:  # a kernel inside the last one
                inner = Event("inner.9", at - took + 0.25, took / 4,
                              {"hlo_op": "inner.9", "hlo_module": "jit_step", "run_id": call})
                lines[line].append(inner)
                runs[line].append(f"step {call}")
        at += rng.choice([5.0, 20.0])
    kernel_lines = [timeline.KernelLine(i, f"kernels {i}", lines[i],
                                        runs[i] if steps else None) for i in lines]
    support: list[Any] = [ExecuteLine(10, "execute", [], sorted(executes)),
                          ThunkEndLine(11, "ends", ThunkEnds(flows, ops, starts, ends))]
    if device:
        return _View([_Plane("/device:GPU:0", kernel_lines), _Plane("/host:CPU", support)])
    return _View([_Plane("/host:CPU", [*kernel_lines, *support])])


@pytest.mark.parametrize("seed", range(12))
def test_random_calls_read_as_columns_alike(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    view = _random_view(seed, steps=seed % 2 == 1, device=seed % 4 == 2)
    assert _taken(view, "jit_step")
    for kwargs in ({"module": "jit_step"},
                   {"module": None, "kernels": ["fusion.1", "dot.2", "copy.3"]},
                   {"module": "jit_step", "wants": {"dot.2": 1}, "cores": 2}):
        got = events.kernel_times(view, **kwargs)
        assert repr(got) == repr(_general(view, monkeypatch, **kwargs))
    # Some calls overlap (sampled one launch at a time): a kernel shares the machine.
    record = events.kernel_times(view, module="jit_step")
    assert any(share < span for k in record["kernels"]
               for share, span in zip(k["share_s"], k["span_s"], strict=True))


def test_a_single_call_without_run_ids_reads_as_columns_alike(
        monkeypatch: pytest.MonkeyPatch) -> None:
    view = _random_view(3)
    for line in view.planes[0].lines:
        if isinstance(line, timeline.KernelLine):
            for e in line.events:
                e.stats = {k: v for k, v in e.stats.items() if k != "run_id"}
    assert _taken(view, "jit_step")
    kwargs: dict[str, Any] = {"module": "jit_step", "calls": 40}
    got = events.kernel_times(view, **kwargs)
    assert got["calls_per_sample"] == 40
    assert repr(got) == repr(_general(view, monkeypatch, **kwargs))


def test_the_general_path_reads_what_columns_cannot(monkeypatch: pytest.MonkeyPatch) -> None:
    nested = _random_view(5, nested=True)
    assert not _taken(nested, "jit_step")  # a kernel inside another on its line
    assert events.kernel_times(nested, module="jit_step") == _general(
        nested, monkeypatch, module="jit_step")

    def changed(change: Any) -> _View:
        view = _random_view(1)
        change(view.planes[0].lines[0].events)
        return view

    def end_named(found: list[Event]) -> None:
        found[0] = Event("end: x", found[0].start_ns, 1.0, dict(found[0].stats))

    def other_module(found: list[Event]) -> None:
        found[0].stats = {**found[0].stats, "hlo_module": "jit_other"}

    def no_op(found: list[Event]) -> None:
        found[0].stats = {"hlo_module": "jit_step", "run_id": 0}

    for change in (end_named, other_module, no_op):
        view = changed(change)
        assert not _taken(view, "jit_step")
        assert events.kernel_times(view, module="jit_step") == _general(
            view, monkeypatch, module="jit_step")
    raw = _random_view(2)  # a line of the trace's own events, not a lane's kernel line
    first = raw.planes[0].lines[0]
    raw.planes[0].lines[0] = Line(first.id, first.name, first.events)
    assert not _taken(raw, "jit_step")
    assert not _taken(_View([]), "jit_step")


@pytest.mark.parametrize("seed", range(8))
def test_ends_taken_all_at_once_are_those_taken_one_after_another(seed: int) -> None:
    """Flow ids reused, missing, or without a key of their own; ends without a flow id; ops
    without ends; several launches before one end; ties."""
    rng = random.Random(seed)
    ops = ["a", "b", "c", "d"]

    def ends() -> events._Ends:
        made = events._Ends()
        for _ in range(rng.randrange(60, 120)) if seed % 3 else range(0):
            at = float(rng.randrange(0, 200))
            made.add(rng.choice([None, 1, 2, 3, 5, 8]), rng.choice(ops[:3]), at,
                     at + rng.choice([0.0, 1.0, 4.0]))
        made.sort()
        return made

    state = rng.getstate()
    one, every = ends(), (rng.setstate(state), ends())[1]
    starts = sorted(float(rng.randrange(0, 210)) for _ in range(150))
    flows = [rng.choice([None, 1, 2, 3, 4, 5]) for _ in starts]
    launch_ops = [rng.choice(ops) for _ in starts]
    want = [one.take({} if f is None else {"_p": f}, op, at)
            for f, op, at in zip(flows, launch_ops, starts, strict=True)]
    got = every.take_all(flows, launch_ops, np.asarray(starts))
    assert [None if np.isnan(v) else float(v) for v in got] == want
    assert every._used == one._used
    assert (sum(v is not None for v in want) > 20) is bool(seed % 3)
