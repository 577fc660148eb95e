"""A lane's kernel events kept as columns (LaneKernels) give what one object per event gave:
the same events in the same order, and every column equal to the built events' stats."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from roofline_report.ingest import timeline
from roofline_report.traces.kernel_events import LaneKernels, normalised
from roofline_report.traces.xspace import Event, XSpace, events_where, read_xspace

FIXTURES = Path(__file__).resolve().parent / "fixtures"
TRACES = sorted([*(FIXTURES / "traces").glob("*/plugins/profile/*/*.xplane.pb*"),
                 *(FIXTURES / "traces_real").glob("*/plugins/profile/*/*.xplane.pb*")])


def _lanes_as_objects(space: XSpace) -> dict[str, list[tuple[int, Event]]]:
    """Each device's kernel events as the rule reads (GPU and CPU traces): every event with
    ``hlo_op``, normalised, by device (a CPU event's ``device_ordinal``, 0 where it has none
    or not an integer), sorted by start stably, with its line's index."""
    gpu: dict[str, list[tuple[int, Event]]] = {}
    cpu: dict[Any, list[tuple[int, Event]]] = defaultdict(list)
    first = 0
    for plane in space.planes:
        for i, line in enumerate(plane.lines):
            for e in events_where(line.events, stat="hlo_op"):
                if plane.name.startswith(timeline.GPU_PREFIX):
                    gpu.setdefault(plane.name.removeprefix("/device:"), []).append(
                        (first + i, normalised(e)))
                elif plane.name == timeline.HOST_CPU:
                    ordinal = e.stats.get("device_ordinal", 0)
                    cpu[ordinal if isinstance(ordinal, int) else 0].append(
                        (first + i, normalised(e)))
        first += len(plane.lines)
    found = gpu or {f"CPU:{d}": v for d, v in cpu.items()}
    return {d: sorted(v, key=lambda item: item[1].start_ns) for d, v in found.items()}


def _assert_columns_are_the_events(k: LaneKernels) -> None:
    built = list(k)
    assert k.names() == [e.name for e in built]
    assert k.start_ns.tolist() == [float(e.start_ns) for e in built]
    assert k.duration_ns.tolist() == [float(e.duration_ns) for e in built]
    assert k.modules() == [e.stats.get("hlo_module") for e in built]
    assert k.programs() == [e.stats.get("program_id") for e in built]
    for stat in ("hlo_op", "run_id", "_p", "device_ordinal", "no such stat"):
        assert k.stat(stat) == [e.stats.get(stat) for e in built]
    for stat in ("run_id", "program_id", "_p", "no such stat"):
        assert k.has(stat).tolist() == [stat in e.stats for e in built]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.parts[-5])
def test_the_lanes_of_real_traces_are_the_events_one_by_one(path: Path) -> None:
    space = read_xspace(path)
    lanes = timeline.lanes(space)
    want = _lanes_as_objects(space)
    assert [lane.device for lane in lanes] == sorted(want, key=timeline._device_key)
    for lane in lanes:
        assert list(lane.kernels) == [e for _, e in want[lane.device]]
        assert lane.lines.tolist() == [at for at, _ in want[lane.device]]
        _assert_columns_are_the_events(lane.kernels)
        # A part of a lane, in another order, reads alike (columns read before and after).
        some = np.arange(len(lane.kernels))[::-3]
        _assert_columns_are_the_events(lane.kernels.taken(some))


def test_the_programs_summary_is_the_sum_event_by_event() -> None:
    checked = 0
    for path in TRACES:
        lanes = timeline.lanes(read_xspace(path))
        seconds: dict[str, float] = defaultdict(float)
        events: Counter[str] = Counter()
        programs: dict[str, set[int]] = defaultdict(set)
        for lane in lanes:
            for e in lane.kernels:
                name = str(e.stats["hlo_module"])
                seconds[name] += e.duration_ns * 1e-9  # one addition after another
                events[name] += 1
                if isinstance(e.stats.get("program_id"), int):
                    programs[name].add(e.stats["program_id"])
        for m in timeline.modules(lanes):
            assert (m.seconds, m.events, m.program_ids) == (
                seconds[m.name], events[m.name], tuple(sorted(programs[m.name])))
            checked += 1
    assert checked >= len(TRACES)


def test_events_given_as_objects_are_normalised_alike() -> None:
    found = [(0, Event("a", 5.0, 1.0, {"hlo_op": "a", "hlo_module": "jit_f(7)"})),
             (1, Event("b", 1.0, 2.0, {"hlo_op": "b", "hlo_module": "jit_f(7)",
                                       "program_id": 3, "run_id": 4})),
             (0, Event("c", 1.0, 1.0, {"hlo_op": "c", "hlo_module": 12})),
             (2, Event("d", 0.5, 1.0, {"hlo_op": "d", "hlo_module": 1.0})),
             (2, Event("e", 0.5, 1.0, {"hlo_op": "e", "hlo_module": 1})),
             (1, Event("f", 9.0, 1.0, {"hlo_op": "f"}))]
    k = LaneKernels.of_events(found).in_time_order()
    assert [e.name for e in k] == ["d", "e", "b", "c", "a", "f"]
    assert k.modules() == ["1.0", "1", "jit_f", "12", "jit_f", None]
    assert k.programs() == [None, None, 3, None, 7, None]
    assert k.line.tolist() == [2, 2, 1, 0, 0, 1]
    _assert_columns_are_the_events(k)
    assert k == list(k) and k[-1].name == "f" and [e.name for e in k[1:3]] == ["e", "b"]
    with pytest.raises(IndexError):
        k[6]


def test_ops_run_as_several_device_kernels_are_named_in_the_order_first_run() -> None:
    from roofline_report.ingest.unclaimed import several_kernels

    def k(name: str, op: object, at: float, module: str = "jit_f") -> tuple[int, Event]:
        return 0, Event(name, at, 1.0, {"hlo_op": op, "hlo_module": module})

    found = [k("gemm.kd", "conv", 3.0), k("im2col", "conv", 2.0), k("gemm", "conv", 5.0),
             k("other", "conv", 1.0, "jit_g"), k("a", 7, 4.0), k("b", "7", 6.0),
             k("only", "dot", 0.5)]
    lane = timeline.Lane("GPU:0", True, LaneKernels.of_events(found).in_time_order())
    assert several_kernels(lane, "jit_f") == {"7": ["a", "b"], "conv": ["im2col", "gemm"]}
    assert several_kernels(lane, "jit_g") == {}
