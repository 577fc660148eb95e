"""Kernel events whose hlo_op names a command buffer, matched by the kernel's own name
(traces/kernel_names.py): by symbol, kernels that share compiled code in schedule order, loops
launching a kernel again, and what stays unmatched."""

from __future__ import annotations

from typing import Any

import pytest

from roofline_report.traces import events, kernel_columns
from roofline_report.traces.kernel_names import by_symbol, resolve_ops, symbol
from roofline_report.traces.xspace import Event
from tests.test_kernel_columns import _Plane, _View

CB = "command_buffer_1"


def test_symbols_are_written_as_xla_writes_kernel_names() -> None:
    assert symbol("input_reduce_fusion.8") == "input_reduce_fusion_8"
    assert symbol("custom-call.3") == "custom_call_3"
    assert symbol("loop_add_fusion_16.kd") == "loop_add_fusion_16"  # ROCm's code-object suffix
    assert symbol("a$b") == "a$b"
    # two kernels with one symbol: neither is matched by it
    assert by_symbol(["a.1", "a-1", "b.2"]) == {"b_2": "b.2"}


def _calls(names_per_call: list[list[str]]) -> tuple[list[str], list[str], list[int]]:
    ops, names, calls = [], [], []
    for c, seq in enumerate(names_per_call):
        for n in seq:
            ops.append(CB)
            names.append(n)
            calls.append(c)
    return ops, names, calls


def test_kernels_sharing_compiled_code_are_placed_in_schedule_order() -> None:
    # f.3 and f.5 run f.2's compiled kernel (identical bodies): their events are named f_2.
    kernels = ["a.1", "f.2", "g.4", "f.3", "h", "f.5"]
    per_call = ["a_1", "f_2", "g_4", "f_2", "h", "f_2"]
    ops, names, calls = _calls([per_call, per_call, per_call])
    got = resolve_ops(ops, names, calls, kernels)
    assert got.ops == kernels * 3
    assert (got.by_name, got.shared, got.wrappers) == (18, 6, (CB,))
    note = got.note()
    assert note is not None and CB in note and "18 kernel events" in note
    assert "6 of them to kernels that share another's compiled code" in note


def test_a_kernel_launched_again_in_a_loop_stays_itself() -> None:
    kernels = ["a.1", "body.2", "b.3"]
    ops, names, calls = _calls([["a_1", "body_2", "body_2", "body_2", "b_3"]] * 2)
    got = resolve_ops(ops, names, calls, kernels)
    assert got.ops == ["a.1", "body.2", "body.2", "body.2", "b.3"] * 2
    assert got.shared == 0


def test_a_loop_body_takes_its_trips_before_a_kernel_sharing_its_code() -> None:
    # body.4 runs body.2's compiled kernel; body.2 runs three times per call (a loop's trips):
    # the three body_2 events in a row are body.2's, the one after b_3 is body.4's.
    kernels = ["a.1", "body.2", "b.3", "body.4"]
    seq = ["a_1", "body_2", "body_2", "body_2", "b_3", "body_2"]
    ops, names, calls = _calls([seq])
    got = resolve_ops(ops, names, calls, kernels, {"body.2": 3})
    assert got.ops == ["a.1", "body.2", "body.2", "body.2", "b.3", "body.4"]
    # without the trips the second launch is taken for the kernel that shares the code
    assert resolve_ops(ops, names, calls, kernels).ops[2] == "body.4"


def test_calls_not_numbered_are_passes_over_the_schedule() -> None:
    # the events of three calls given as one: each call begins a new pass
    kernels = ["a.1", "f.2", "g.4", "f.3"]
    seq = ["a_1", "f_2", "g_4", "f_2"]
    ops, names, _ = _calls([seq] * 3)
    assert resolve_ops(ops, names, [0] * 12, kernels).ops == kernels * 3


def test_a_kernel_seen_by_its_own_name_takes_no_other_kernels_launch() -> None:
    # f.3 runs under its own name: a second f_2 event is f.2 launched again, not f.3.
    kernels = ["f.2", "f.3"]
    ops, names, calls = _calls([["f_2", "f_2", "f_3"]])
    assert resolve_ops(ops, names, calls, kernels).ops == ["f.2", "f.2", "f.3"]


def test_events_it_cannot_place_keep_their_op() -> None:
    kernels = ["a.1", "b.2"]
    ops = ["a.1", CB, CB, "while.3"]
    names = ["a_1", "sm90_xmma_gemm_bf16", "b_2", "while_3"]
    got = resolve_ops(ops, names, [0, 0, 0, 0], kernels)
    # an op that names a kernel is kept; a library's kernel and control flow are not placed
    assert got.ops == ["a.1", CB, "b.2", "while.3"]
    assert got.by_name == 1 and got.shared == 0
    assert resolve_ops(["a.1"], ["a_1"], [0], kernels).note() is None


class _Line:
    def __init__(self, evs: list[Event], runs: list[Any] | None = None) -> None:
        self.events = evs
        self.runs = runs
        self.name = "Stream #14(Compute)"


def _graph_view(*, overlap: float) -> _View:
    """Three calls of a program whose kernels ran in a CUDA graph: every event's hlo_op is
    the command buffer's, named by its kernel, f.3 running f.2's code; consecutive events
    overlap by ``overlap`` ns (as on an H200, where the next kernel starts before the last
    one's event ends)."""
    seq = [("a_1", 800.0), ("f_2", 1200.0), ("g_4", 4000.0), ("f_2", 1300.0)]
    evs = []
    at = 10_000.0
    for call in range(3):
        for name, dur in seq:
            evs.append(Event(name, at, dur + call, {"hlo_op": CB, "hlo_module": "jit_step",
                                                    "run_id": call}))
            at += dur + call - overlap
        at += 50_000.0
    return _View([_Plane("/device:GPU:0", [_Line(evs)])])


@pytest.mark.parametrize("overlap", [0.0, 64.0])
def test_kernel_times_place_command_buffer_events(overlap: float,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    kernels = ["a.1", "f.2", "g.4", "f.3"]
    view = _graph_view(overlap=overlap)
    columns = kernel_columns.timed_launches(view, "jit_step", events._Ends,
                                            events._module_matches, kernels)
    # events that overlap without nesting are read as columns too
    assert columns is not None
    got = events.kernel_times(view, module="jit_step", kernels=kernels)
    assert got["available"] and got["source"] == "device" and got["unmatched"] == []
    rows = {k["name"]: k for k in got["kernels"]}
    assert set(rows) == set(kernels)
    assert rows["f.2"]["launches"] == [1.0, 1.0, 1.0]
    assert rows["f.3"]["busy_s"] == pytest.approx([1300e-9, 1301e-9, 1302e-9])
    assert any("command_buffer_1" in n for n in got["notes"])
    # the general path gives the same
    with monkeypatch.context() as m:
        m.setattr(events, "timed_launches", lambda *a, **k: None)
        assert events.kernel_times(view, module="jit_step", kernels=kernels) == got
    # without the program's kernels nothing is placed: the command buffer is one op
    bare = events.kernel_times(view, module="jit_step")
    assert [k["name"] for k in bare["kernels"]] == [CB]
