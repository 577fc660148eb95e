"""The shortcuts a large profile takes give what the plain paths gave: the kernels' shares of
the machine, the normalised module of a kernel event, the JSON of plain-number records, and
the runtime's execute events read as their starts."""

from __future__ import annotations

import bisect
import itertools
import json
import math
import random
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from roofline_report.ingest import thunk_ends, timeline
from roofline_report.ingest.execute_starts import ExecuteLine, execute_line
from roofline_report.results import io, json_text
from roofline_report.traces import call_samples, events, launches
from roofline_report.traces.kernel_events import LaneKernels, normalised
from roofline_report.traces.xspace import Event, EventColumns, Line, read_xspace

TRACES = Path(__file__).parent / "fixtures" / "traces"


def _shares_reference(leaves: list[launches._Kernel], wants: dict[str, int] | None,
                      cores: int | None) -> list[float]:
    """The shares as first written: each kernel's sum kept on the kernel, part by part."""
    edges: list[tuple[float, int, int]] = []
    demand = [float(cores) if cores else 1.0] * len(leaves)
    totals = [0.0] * len(leaves)
    for i, k in enumerate(leaves):
        if cores and wants is not None:
            demand[i] = float(min(cores, max(1, wants.get(k.op, cores))))
        for start, end in k.running:
            if end > start:
                edges.append((start, 1, i))
                edges.append((end, -1, i))
    edges.sort(key=itemgetter(0, 1))
    active: set[int] = set()
    wanted, at = 0.0, 0.0
    supply = float(cores) if cores else 1.0
    for t, step, i in edges:
        if active and t > at:
            part = (t - at) * min(1.0, supply / wanted)
            for j in active:
                totals[j] += part
        at = t
        wanted += step * demand[i]
        if step > 0:
            active.add(i)
        else:
            active.discard(i)
    return [max(0.0, min(s, k.self_ns - k.waited_ns)) for s, k in zip(totals, leaves,
                                                                       strict=True)]


def _random_leaves(rng: random.Random, n: int) -> list[launches._Kernel]:
    leaves = []
    for i in range(n):
        start = rng.uniform(0, 1000) * 1.1
        event = launches._Event(0, start, start + rng.uniform(0, 50), {}, None)
        k = launches._Kernel(event, f"op{i % 4}", None, event.end + rng.uniform(0, 80))
        k.self_ns = k.end - start
        k.busy_ns = event.end - start
        leaves.append(k)
    return leaves


def test_shares_sum_each_part_as_the_plain_loop_did() -> None:
    rng = random.Random(36)
    for trial in range(200):
        leaves = _random_leaves(rng, rng.randint(1, 30))
        launches._waits(leaves)
        wants = {"op0": 1, "op1": 3, "op2": 8} if trial % 3 else None
        cores = [None, 2, 4][trial % 3]
        expected = _shares_reference(leaves, wants, cores)
        launches._shares(leaves, wants, cores)
        # Exactly: the same parts added in the same order, not merely close.
        assert [k.shared_ns for k in leaves] == expected
        assert any(s > 0 for s in expected)


def _waits_reference(leaves: list[launches._Kernel]) -> list[tuple[float, list[Any]]]:
    """The waits as first written: for each launch, every event that starts before its
    completion scanned from a window as wide as the call's longest event."""
    evs = sorted((k.event.start, k.event.end) for k in leaves)
    starts = [s for s, _ in evs]
    longest = max((e - s for s, e in evs), default=0.0)
    out = []
    for k in leaves:
        lo, hi = k.event.end, k.end
        running = [(k.event.start, k.event.end)] if k.event.end > k.event.start else []
        waited = 0.0
        if hi > lo:
            first = bisect.bisect_left(starts, lo - longest)
            last = bisect.bisect_left(starts, hi)
            queued = launches._merged((max(lo, s), min(hi, e)) for s, e in evs[first:last]
                                      if e <= hi and e > lo and s < hi)
            waited = sum(e - s for s, e in queued)
            running += launches._gaps(queued, lo, hi)
        out.append((max(0.0, min(waited, k.self_ns - k.busy_ns)), running))
    return out


def _call_for_waits(seed: int) -> list[launches._Kernel]:
    rng = random.Random(seed)
    leaves = _random_leaves(rng, rng.randint(1, 60))
    if seed % 2:  # one long event: the first form scanned the whole call for every launch
        leaves[0].event = launches._Event(0, 0.0, 5000.0, {}, None)
        leaves[0].end = max(leaves[0].end, 5000.0)
    if seed % 3 == 0:  # ties: events ending where others start or complete
        for k in leaves[::4]:
            k.event = launches._Event(0, round(k.event.start), round(k.event.end), {}, None)
            k.end = max(k.event.end, round(k.end))
    return leaves


def test_waits_found_by_the_ends_are_those_of_the_window() -> None:
    waited = 0
    for seed in range(40):
        leaves = _call_for_waits(seed)
        want = _waits_reference(leaves)
        launches._waits(leaves)
        assert [(k.waited_ns, k.running) for k in leaves] == want, seed  # to the last bit
        waited += any(w > 0 for w, _ in want)
    assert waited > 20  # most calls have some launch that waited


def _sequential_leaves(rng: random.Random, n: int, overlap: bool) -> list[launches._Kernel]:
    """Launches one after another (each span ends before the next starts; some touching, some
    of no duration, some completing after their event), or, with ``overlap``, one of them
    starting inside the previous one's span."""
    leaves, at = [], rng.uniform(0, 1e6)
    clash = rng.randrange(1, n) if overlap and n > 1 else -1
    for i in range(n):
        start = at + (0.0 if rng.random() < 0.3 else rng.uniform(0, 40))
        if i == clash:
            start = leaves[-1].event.start + rng.uniform(0, leaves[-1].end
                                                          - leaves[-1].event.start)
        own = 0.0 if rng.random() < 0.1 else rng.uniform(0, 50)
        event = launches._Event(0, start, start + own, {}, None)
        k = launches._Kernel(event, f"op{i % 3}", None,
                           event.end + (0.0 if rng.random() < 0.4 else rng.uniform(0, 80)))
        k.self_ns, k.busy_ns = k.end - start, own
        leaves.append(k)
        at = max(at, k.end)
    return leaves


def test_a_call_of_launches_one_after_another_takes_the_plain_paths_figures() -> None:
    rng = random.Random(3606)
    fast = 0
    for trial in range(300):
        overlap = trial % 4 == 0
        leaves = _sequential_leaves(rng, rng.randint(1, 12), overlap)
        wants = {"op0": 1, "op1": 3} if trial % 2 else None
        cores = [None, 2, 4][trial % 3]
        plain = [launches._Kernel(k.event, k.op, k.run, k.end, k.self_ns, k.busy_ns)
                 for k in leaves]
        launches._waits(plain)
        launches._shares(plain, wants, cores)
        if launches._alone(leaves):
            fast += 1
            # Exactly the same figures, to the last bit.
            assert [(k.waited_ns, k.shared_ns) for k in leaves] == \
                [(k.waited_ns, k.shared_ns) for k in plain]
        else:  # only a call whose spans overlap goes the plain way, and is left untouched
            assert overlap and len(leaves) > 1
            assert all(k.shared_ns == 0.0 for k in leaves)
    assert fast > 200


def _copied(runs: list[list[launches._Kernel]]) -> list[list[launches._Kernel]]:
    return [[launches._Kernel(k.event, k.op, k.run, k.end, k.self_ns, k.busy_ns) for k in run]
            for run in runs]


def test_calls_sampled_as_columns_match_the_calls_sampled_one_at_a_time() -> None:
    rng = random.Random(3607)
    for trial in range(60):
        runs: list[list[launches._Kernel]] = []
        for _ in range(rng.randint(1, 40)):
            leaves = _sequential_leaves(rng, rng.randint(1, 8), rng.random() < 0.25)
            # Control flow: a while loop's launch around some of the call's kernels, or a
            # call of control flow alone, or a call sharing its time with the one before.
            if rng.random() < 0.3:
                outer = launches._Event(0, leaves[0].event.start - 5, leaves[-1].end + 5, {},
                                        None)
                loop = launches._Kernel(outer, "while.1", None, outer.end, 3.0, 2.0)
                leaves = [loop, *leaves] if rng.random() < 0.8 else [loop]
            if runs and rng.random() < 0.1:
                shift = runs[-1][0].event.start + 1 - leaves[0].event.start
                for k in leaves:
                    k.event = launches._Event(0, k.event.start + shift, k.event.end + shift,
                                              {}, None)
                    k.end += shift
            runs.append(leaves)
        runs.sort(key=lambda ks: min(k.event.start for k in ks))
        starts = sorted(k.event.start - rng.uniform(0, 30) for run in runs
                        for k in run[:1] if rng.random() < 0.7)
        wants = {"op0": 1, "op1": 3} if trial % 2 else None
        cores = [None, 2, 4][trial % 3]
        div = 1 if trial % 5 else 3

        def is_kernel(op: str) -> bool:
            return not op.startswith("while")

        each = call_samples.sample_calls_each(_copied(runs), is_kernel, starts, div, wants,
                                              cores)
        columns = call_samples.sample_calls(_copied(runs), is_kernel, starts, div, wants,
                                            cores)
        # The same records, to the last bit.
        assert columns.calls == each.calls
        assert columns.rows() == each.rows()
        assert columns.unmatched == each.unmatched
    assert call_samples.sample_calls([], is_kernel, [], 1).calls == []


def test_shares_of_two_kernels_side_by_side() -> None:
    a = launches._Kernel(launches._Event(0, 0.0, 10.0, {}, None), "a", None, 10.0, self_ns=10.0)
    b = launches._Kernel(launches._Event(1, 5.0, 15.0, {}, None), "b", None, 15.0, self_ns=10.0)
    for k in (a, b):
        k.running = [(k.event.start, k.event.end)]
    launches._shares([a, b])
    assert (a.shared_ns, b.shared_ns) == (7.5, 7.5)  # 5 alone, 5 halved
    launches._shares([a, b], {"a": 1, "b": 1}, 2)  # two cores: neither slows the other
    assert (a.shared_ns, b.shared_ns) == (10.0, 10.0)


def test_normalised_module_with_and_without_suffix() -> None:
    plain = Event("k", 1.0, 2.0, {"hlo_op": "k", "hlo_module": "jit_f"})
    for _ in range(2):  # the second time from what the first remembered
        assert normalised(plain) is plain
        suffixed = normalised(Event("k", 1.0, 2.0,
                                              {"hlo_op": "k", "hlo_module": "jit_f(7)"}))
        assert suffixed.stats == {"hlo_op": "k", "hlo_module": "jit_f", "program_id": 7}
        given = normalised(Event("k", 1.0, 2.0, {"hlo_module": "jit_f(7)",
                                                            "program_id": 3}))
        assert given.stats == {"hlo_module": "jit_f", "program_id": 3}
        kept = Event("k", 1.0, 2.0, {"hlo_module": "jit_f(7)"[:5], "program_id": 3})
        assert normalised(kept) is kept
    numbered = normalised(Event("k", 1.0, 2.0, {"hlo_module": 12}))
    assert numbered.stats == {"hlo_module": "12"}


def test_finite_copies_plain_number_dicts_and_cleans_the_rest() -> None:
    plain: dict[str, Any] = {"b_s": 1.5, "a_s": 2, "c": 0.1 + 0.2}
    out = json_text._finite(plain)
    assert out == plain and out is not plain and list(out) == list(plain)
    for dirty, clean in [
        ({"a": math.nan, "b": 1.0}, {"a": None, "b": 1.0}),
        ({"a": math.inf}, {"a": None}),
        ({"a": True, "b": 1}, {"a": True, "b": 1}),
        ({1: 2.0, "x": 3}, {"1": 2.0, "x": 3}),
        ({"a": [1.0, math.nan]}, {"a": [1.0, None]}),
        ({"a": 10**400}, {"a": 10**400}),
        ({}, {}),
    ]:
        out = json_text._finite(dirty)
        assert out == clean and [type(v) for v in out.values()] == [type(v) for v in
                                                                    clean.values()]
    text = io.dumps({"x": {"calls": [{"program_s": math.nan, "busy_s": 0.25}]}})
    assert json.loads(text) == {"x": {"calls": [{"program_s": None, "busy_s": 0.25}]}}


def test_finite_takes_a_list_of_plain_records_whole_and_cleans_any_other() -> None:
    records: list[Any] = [{"program_s": 0.5, "busy_s": 1}, {"program_s": 0.25, "gaps_s": 0.0}]
    out = json_text._finite(records)
    assert out == records
    assert json_text._plain_records(records)
    for dirty, clean in [
        ([{"a": 1.0}, {"a": math.nan}], [{"a": 1.0}, {"a": None}]),
        ([{"a": 1.0}, {1: 2.0}], [{"a": 1.0}, {"1": 2.0}]),
        ([{"a": 1.0}, {"b": [math.inf]}], [{"a": 1.0}, {"b": [None]}]),
        ([{"a": True}], [{"a": True}]),
        ([{"a": 1.0}, 3.0], [{"a": 1.0}, 3.0]),
        ([{}, {}], [{}, {}]),
    ]:
        assert not json_text._plain_records(dirty)
        out = json_text._finite(dirty)
        assert out == clean
        assert json.dumps(out) == json.dumps(clean)  # True stays True, not 1


# --- execute events kept as their starts --------------------------------------------------------

_TRACES = Path(__file__).parent / "fixtures" / "traces"


def _host_files() -> list[Path]:
    return sorted(_TRACES.glob("*/plugins/profile/*/*.xplane.pb*"))


def _executes_by_event(line: Line) -> list[Event]:
    """The execute events of a line as first picked: one event at a time, built."""
    return [e for e in line.events if "Execute" in e.name and not e.name.startswith("end: ")
            and "hlo_op" not in e.stats]


def test_execute_starts_are_the_starts_of_the_execute_events() -> None:
    seen = 0
    assert _host_files()
    for path in _host_files():
        space = read_xspace(path)
        for plane in space.planes:
            if not plane.name.startswith("/host:"):
                continue
            for line in plane.lines:
                expected = _executes_by_event(line)
                for given in (line, Line(line.id, line.name, list(line.events))):
                    kept = execute_line(given)  # from the columns, then from a list
                    if not expected:
                        assert kept is None
                        continue
                    assert kept is not None
                    assert kept.execute_starts == [float(e.start_ns) for e in expected]
                    assert kept.events == expected
                    seen += len(expected)
    assert seen > 0


def test_kernel_times_read_execute_starts_as_the_events() -> None:
    compared = 0
    for path in _host_files():
        space = read_xspace(path)
        for lane in timeline.lanes(space):
            module = str(lane.kernels[0].stats["hlo_module"])
            view = timeline.profile_for(space, lane, module, [], markers=[], trips=None)
            fast = events.kernel_times(view, module=module, calls=view.calls)
            for plane in view.planes:  # the same view with each execute line's events
                compared += sum(isinstance(line, ExecuteLine) for line in plane.lines)
                plane.lines = [Line(line.id, line.name, line.events)
                               if isinstance(line, ExecuteLine) else line
                               for line in plane.lines]
            assert events.kernel_times(view, module=module, calls=view.calls) == fast
            assert fast["available"]
            assert any(c["dispatch_s"] > 0 for c in fast["calls"])
    assert compared > 0


# --- thunk end events kept as columns -----------------------------------------------------------


def test_a_stat_read_as_a_column_is_what_each_events_dict_holds() -> None:
    read = 0
    real = sorted((_TRACES.parent / "traces_real").glob("*/plugins/profile/*/*.xplane.pb*"))
    assert real  # accelerator traces: stats inherited from their metadata as well
    for path in [*_host_files(), *real]:
        space = read_xspace(path)
        for plane in space.planes:
            for line in plane.lines:
                columns = line.events
                if not isinstance(columns, EventColumns) or not len(columns):
                    continue
                every = np.arange(len(columns))
                built = list(columns)
                for stat in ("_c", "_p", "hlo_op", "run_id", "hlo_module", "no such stat"):
                    names, starts, durations, values = columns.columns(every, stat)
                    assert values == [e.stats.get(stat) for e in built]
                    read += sum(v is not None for v in values)
                assert names == [e.name for e in built]
                assert starts == [e.start_ns for e in built]
                assert durations == [e.duration_ns for e in built]
                some = every[::3]
                assert columns.columns(some, "_c")[3] == [built[i].stats.get("_c")
                                                          for i in some.tolist()]
    assert read > 0


def _ends_by_event(space: Any) -> list[Event]:
    """The host's thunk end events as first picked: one event at a time, built."""
    return [e for plane in space.planes if plane.name == timeline.HOST_CPU
            for line in plane.lines for e in line.events
            if e.name.startswith("end: ") and "hlo_op" not in e.stats]


def test_thunk_ends_are_the_end_events_and_kernel_times_reads_them_alike() -> None:
    compared = 0
    for path in _host_files():
        space = read_xspace(path)
        expected = _ends_by_event(space)
        ends = thunk_ends.host_thunk_ends(space, timeline.HOST_CPU)
        assert ends.ops == [e.name[5:] for e in expected]
        assert ends.flows == [e.stats.get("_c") for e in expected]
        assert ends.starts == [float(e.start_ns) for e in expected]
        assert ends.ends == [float(e.start_ns) + float(e.duration_ns) for e in expected]
        for lane in timeline.lanes(space):
            module = str(lane.kernels[0].stats["hlo_module"])
            view = timeline.profile_for(space, lane, module, [], markers=[], trips=None)
            fast = events.kernel_times(view, module=module, calls=view.calls)
            for plane in view.planes:  # the same view with the end events built
                compared += sum(isinstance(line, thunk_ends.ThunkEndLine)
                                for line in plane.lines)
                plane.lines = [Line(line.id, line.name, line.events)
                               if isinstance(line, thunk_ends.ThunkEndLine) else line
                               for line in plane.lines]
            assert events.kernel_times(view, module=module, calls=view.calls) == fast
    assert compared > 0


def test_a_stat_column_takes_an_events_own_stat_over_its_metadatas_and_exact_dicts() -> None:
    from roofline_report.traces.line_stats import LineStats
    from roofline_report.traces.wire_columns import UINT64

    # Four events: none of its own (its metadata's _c), its own _c twice over its metadata's,
    # another stat only, and one decoded exactly (its own dict).
    stats = LineStats({1: "_c", 2: "other"}, {10: {"_c": 5, "x": 1}},
                      bounds=np.array([0, 0, 2, 3, 3]), key=np.array([1, 1, 2]),
                      kind=np.array([UINT64, UINT64, UINT64]),
                      bits=np.array([7, 8, 3], dtype=np.uint64), objects=[],
                      exact={3: {"_c": 9}})
    meta, rows = [10, 10, 11, 12], np.arange(4)
    dicts = stats.dicts(meta, rows)
    for stat in ("_c", "x", "other", "none"):
        assert stats.column(meta, rows, stat) == [d.get(stat) for d in dicts]
    assert stats.column(meta, rows, "_c") == [5, 8, None, 9]
    assert stats.column(meta[1:3], rows[1:3], "_c") == [8, None]


def test_end_events_added_as_columns_match_those_added_one_by_one() -> None:
    from roofline_report.traces.events import _Ends

    flows = [7, None, 7, 9, None, 7, 12]
    ops = ["a", "a", "b", "a", "b", "a", "c"]
    starts = [5.0, 1.0, 2.0, 3, 4.0, 0.5, 6.0]  # an int start taken as a float
    ends = [6.0, 2.0, 3.0, 4.0, 5.0, 1.5, 7]
    one, many = _Ends(), _Ends()
    for event in zip(flows, ops, starts, ends, strict=True):
        one.add(*event)
    many.extend(flows, ops, starts, ends)
    one.sort()
    many.sort()
    for stats, op, at in [({"_p": 7}, "a", 0.0), ({"_p": 7}, "a", 0.0), ({"_p": 7}, "a", 0.0),
                          ({}, "b", 0.0), ({"_p": 12}, "c", 6.0), ({"_p": 9}, "a", 3.5),
                          ({"_p": 3}, "d", 0.0)]:
        assert one.take(stats, op, at) == many.take(stats, op, at)
    with pytest.raises(ValueError):
        _Ends().extend([1], ["a", "b"], [0.0], [1.0])


@pytest.mark.parametrize("fresh", [True, False])
def test_end_events_each_with_its_own_flow_id_are_keyed_as_one_by_one(fresh: bool) -> None:
    from roofline_report.traces.events import _Ends

    rng = random.Random(3)
    n = 200
    flows: list[Any] = rng.sample(range(10**12, 10**12 + 10**6), n)  # each its own
    if not fresh:
        flows[7] = flows[3]  # one pair twice: taken one event after another
    ops = [rng.choice(["a", "b", "c"]) for _ in range(n)]
    if not fresh:
        ops[7] = ops[3]
    starts = [float(rng.randrange(100)) for _ in range(n)]
    ends = [s + rng.randrange(1, 5) for s in starts]
    one, many = _Ends(), _Ends()
    for event in zip(flows, ops, starts, ends, strict=True):
        one.add(*event)
    many.extend(flows, ops, starts, ends)
    assert many._flows == one._flows and list(many._flows) == list(one._flows)
    assert many._key == one._key and many._keys == one._keys
    assert many._start == one._start and many._ends == one._ends
    many.extend([None, flows[0]], ["a", ops[0]], [1.0, 2.0], [3.0, 4.0])  # keyed before
    one.extend([None, flows[0]], ["a", ops[0]], [1.0, 2.0], [3.0, 4.0])
    assert many._flows == one._flows and many._key == one._key


def _launched_before_one_by_one(flows: list[Any], ops: list[str], starts: list[float],
                                ends: thunk_ends.ThunkEnds) -> list[bool]:
    """The rule as it reads: an end is kept where a launch of its thunk with its flow id (any
    launch of the thunk, for an end without one) started no later."""
    out = []
    for flow, op, at in zip(ends.flows, ends.ops, ends.starts, strict=True):
        out.append(any(o == op and (flow is None or f == flow) and s <= at
                       for f, o, s in zip(flows, ops, starts, strict=True)))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_ends_matched_to_launches_as_columns_match_the_rule(seed: int) -> None:
    rng = random.Random(seed)
    ids: list[Any] = [None, 0, 1, 7, -3, 2**62, 2**63 - 1, -(2**63)]
    if seed >= 4:  # flow ids the integer columns cannot hold: looked up one by one
        ids += ["a", 2**64, 1.5, True]
    n = 60
    flows = [rng.choice(ids) for _ in range(n)]
    ops = [rng.choice(["fusion", "dot", "copy"]) for _ in range(n)]
    starts = sorted(rng.uniform(0, 100) for _ in range(n))
    m = 80
    ends = thunk_ends.ThunkEnds([rng.choice(ids) for _ in range(m)],
                                [rng.choice(["fusion", "dot", "copy", "never"]) for _ in range(m)],
                                [rng.uniform(-10, 110) for _ in range(m)], [0.0] * m)
    got = timeline._launched_before(flows, ops, starts, ends).tolist()
    assert got == _launched_before_one_by_one(flows, ops, starts, ends)
    assert any(got) and not all(got)


def test_step_markers_read_as_columns_are_those_of_the_events() -> None:
    trace = next((TRACES / "transformer").glob("plugins/profile/*/*.xplane.pb*"))
    space = read_xspace(trace)
    lines = [line for plane in space.planes if plane.name.startswith("/host:")
             for line in plane.lines]
    assert any(isinstance(line.events, EventColumns) for line in lines)
    for line in lines:
        as_events = timeline._step_marks(list(line.events))
        assert timeline._step_marks(line.events) == as_events
    assert timeline.steps(space)


def _self_times_by_stack(items: list[Any]) -> list[tuple[float, float]]:
    """Self and busy times by the nesting stack, for every line (the plain rule)."""
    out = {}
    order = sorted(range(len(items)), key=lambda i: (items[i].event.start, -items[i].event.end))
    stack: list[int] = []
    self_ns = {i: items[i].end - items[i].event.start for i in order}
    busy = {i: items[i].event.duration for i in order}
    for i in order:
        e = items[i].event
        while stack and items[stack[-1]].event.end <= e.start:
            stack.pop()
        if stack and e.end <= items[stack[-1]].event.end:
            self_ns[stack[-1]] -= e.duration
            busy[stack[-1]] -= e.duration
        stack.append(i)
    for i in order:
        s = max(0.0, self_ns[i])
        out[i] = (s, max(0.0, min(busy[i], s)))
    return [out[i] for i in range(len(items))]


@pytest.mark.parametrize("mode", ["apart", "chained", "nested"])
def test_self_times_of_kernels_one_after_another_and_nested(mode: str) -> None:
    from roofline_report.traces.launches import _Event, _Kernel

    rng = random.Random({"apart": 7, "chained": 9, "nested": 8}[mode])
    items = []
    at = 0.0
    for _ in range(200):
        length = rng.choice([0.0, 1.0, 2.5])
        if mode == "nested" and rng.random() < 0.3 and items:  # inside the previous event
            parent = items[-1].event
            start = parent.start + (parent.end - parent.start) * rng.random() / 2
            e = _Event(0, start, min(parent.end, start + length), {}, None)
        elif mode == "chained" and rng.random() < 0.5 and items and length:
            # starting before the previous event ends and ending after it, as a GPU stream's
            # kernels do: overlapping, neither inside the other
            previous = items[-1].event
            if previous.end > previous.start:
                start = previous.start + (previous.end - previous.start) * (0.5 + rng.random() / 2)
                start = max(start, previous.start + 0.25)
                e = _Event(0, start, max(previous.end + 0.5, start + length), {}, None)
                at = e.end
            else:
                at += 3.0
                e = _Event(0, at, at + length, {}, None)
                at += length
        else:
            at += rng.choice([0.0, 0.5, 3.0])
            e = _Event(0, at, at + length, {}, None)
            at += length
        # Completions after the event, with it, or (clamped) before its end or its start.
        items.append(_Kernel(e, "k", None, e.end + rng.choice([0.0, 4.0, -0.5, -3.0])))
    want = _self_times_by_stack(items)
    assert events._unnested(items) is (mode != "nested")
    if mode == "chained":  # some do overlap
        assert any(b.event.start < a.event.end for a, b in itertools.pairwise(items))
    events._self_times(items)
    assert repr([(k.self_ns, k.busy_ns) for k in items]) == repr(want)  # -0.0 apart
    assert any(k.self_ns == 0.0 for k in items) and any(k.busy_ns < k.event.duration
                                                        for k in items)


def test_lanes_put_kernels_in_time_order_stably_and_keep_an_ordered_list_whole() -> None:
    rng = random.Random(7)
    found = [(rng.randrange(3), Event(f"k{i}", float(rng.randrange(20)), 1.0, {}))
             for i in range(300)]  # many starts shared: ties keep the list's order
    ordered = LaneKernels.of_events(found).in_time_order()
    want = sorted(found, key=lambda item: item[1].start_ns)
    assert list(ordered) == [e for _, e in want]
    assert ordered.line.tolist() == [line for line, _ in want]
    assert [e.name for e in ordered] == ordered.names()
    assert ordered.in_time_order() is ordered
    assert len(LaneKernels.of_events([]).in_time_order()) == 0


@pytest.mark.parametrize("seed", range(6))
def test_step_markers_merged_as_arrays_are_those_merged_one_by_one(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randrange(0, 60)
    numbers: list[Any] = [rng.choice([rng.randrange(8), rng.randrange(8), True, "3", 2.0, None])
                          for _ in range(n)]
    starts = [float(rng.randrange(20)) for _ in range(n)]  # ties between numbers
    took = [rng.choice([0.0, -1.0, float(rng.randrange(1, 9))]) for _ in range(n)]
    want = timeline._steps_one_by_one(numbers, starts, took)
    got = timeline._steps_of(numbers, starts, took)
    assert [tuple(s) for s in got] == [tuple(s) for s in want]
    assert all(type(s) is timeline.Step and type(s.number) is int for s in got)


def test_a_step_number_past_64_bits_is_merged_one_by_one() -> None:
    got = timeline._steps_of([2**70, 2**70, 1], [5.0, 3.0, 4.0], [1.0, 1.0, 1.0])
    assert [tuple(s) for s in got] == [(2**70, 3.0, 6.0), (1, 4.0, 5.0)]


@pytest.mark.parametrize(("wants", "cores"), [(None, None), ({"op0": 1, "op1": 3}, 2),
                                              (None, 4)])
def test_overlapping_launches_without_a_wait_are_swept_as_columns(
        wants: dict[str, int] | None, cores: int | None) -> None:
    # A GPU stream's calls: each kernel starts a little before the previous one's event ends
    # and completes with its own event, some events of no length, two streams side by side.
    rng = random.Random(3608)
    runs: list[list[launches._Kernel]] = []
    at = 1.0e6
    for _ in range(300):
        run = []
        for i in range(rng.randint(2, 25)):
            own = 0.0 if rng.random() < 0.05 else rng.uniform(500, 40_000)
            start = at - (rng.uniform(0, 800) if run and rng.random() < 0.7 else 0.0)
            event = launches._Event(i % 2, start, start + own, {}, None)
            run.append(launches._Kernel(event, f"op{i % 4}", None, event.end, own, own))
            at = max(at, event.end) + (0.0 if rng.random() < 0.5 else rng.uniform(0, 300))
        run.sort(key=lambda k: k.event.start)
        runs.append(run)
        at += rng.uniform(1e4, 1e5)
    flat = [k for run in runs for k in run]
    n = len(flat)
    columns = call_samples.LaunchColumns(
        np.array([len(run) for run in runs], dtype=np.int64), [k.op for k in flat],
        np.array([k.event.start for k in flat]), np.array([k.event.end for k in flat]),
        np.array([k.end for k in flat]), np.array([k.self_ns for k in flat]),
        np.array([k.busy_ns for k in flat]), lambda lo, hi: pytest.fail("read one by one"))
    assert n > 3000

    def is_kernel(op: str) -> bool:
        return True

    swept = call_samples.sample_columns(columns, is_kernel, [], 1, wants, cores)
    each = call_samples.sample_calls_each(_copied(runs), is_kernel, [], 1, wants, cores)
    assert len(swept.calls) == len(each.calls) == 300
    for got, want in zip(swept.calls, each.calls, strict=True):
        assert got.keys() == want.keys()
        for key in got:  # sums in another order: the same to well under a picosecond
            assert got[key] == pytest.approx(want[key], rel=1e-12, abs=1e-15)
    for got_row, want_row in zip(swept.rows(), each.rows(), strict=True):
        assert got_row["name"] == want_row["name"]
        assert got_row["span_s"] == want_row["span_s"] and got_row["busy_s"] == want_row["busy_s"]
        assert got_row["share_s"] == pytest.approx(want_row["share_s"], abs=1.01e-12)
        assert got_row["wait_s"] == want_row["wait_s"]
    # the kernels did share the machine: some share is below its busy time
    assert any(s < b for row in swept.rows() for s, b in zip(row["share_s"], row["busy_s"],
                                                             strict=True))
