"""Real TPU v5e traces (tests/fixtures/traces_real/tpu_v5e, jax 0.10.2): every kernel of each
program timed from the device plane's op events, in both paths, held to the raw events and to
XProf.

The expectations are computed here from the raw protobuf (each event's offset and duration in
the device's clock, its ``device_offset_ps`` and ``device_duration_ps``, as XProf reads them;
its metadata's display name, HLO text and ``program_id``; the module events' run ids),
without the reader's columns or the timing under test: a kernel's time per call is the sum of
the self times (duration less the op events nested in it) of the op events of its instruction,
an asynchronous op's done counted with its start; a call is one module event. XProf's own
per-op self times (``hlo_stats``) are kept in xprof_hlo_stats.json beside the traces, written
by xprof_reference.py there (XProf is not needed to run these tests).
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from roofline_report.analysis.kernels import kernel_samples
from roofline_report.hlo.ir import parse_module
from roofline_report.hlo.kernels import kernel_inventory
from roofline_report.ingest import timeline
from roofline_report.ingest.device_timeline import device_timelines
from roofline_report.ingest.hlo import hlo_text
from roofline_report.ingest.pipeline import read_profile
from roofline_report.ingest.records import results_document
from roofline_report.ingest.tpu_timing import tpu_kernel_times
from roofline_report.results import schema
from roofline_report.traces.events import kernel_times
from roofline_report.traces.xspace import XSpace, read_xspace
from roofline_report.traces.xspace_schema import message_class

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "traces_real" / "tpu_v5e"
NAMES = sorted(p.name for p in FIXTURES.iterdir() if (p / "plugins").is_dir())
CAPTURED = json.loads((REPO / "tests" / "fixtures" / "tpu_v5e_hlo" / "captured.json")
                      .read_text(encoding="utf-8"))
XPROF = json.loads((FIXTURES / "xprof_hlo_stats.json").read_text(encoding="utf-8"))
# The one program whose op events leave over 1 % of its module events' time between them: a
# 32 µs training step of 143 ops, between which the core sat idle 8 % of each call (XProf's
# self times of the same trace sum to the same 91.7 %).
SPARSE = {"transformer_step": (0.91, 0.92)}


def _trace(name: str) -> Path:
    (path,) = FIXTURES.glob(f"{name}/plugins/profile/*/*.xplane.pb.gz")
    return path


# --- the raw events -----------------------------------------------------------------------------


@dataclass
class _Call:
    """One module event of a program (ps) and the op events in it."""

    start: int
    end: int
    run: int
    ops: list[tuple[int, int, str, bool]] = field(default_factory=list)  # start, end, kernel, done


@dataclass
class _Raw:
    modules: dict[int, str]  # program id -> module name without the suffix
    calls: dict[int, list[_Call]]  # program id -> its calls in time order
    op_events: int  # op events of the XLA Ops line
    intervals: list[tuple[int, int]]  # every event of the op lines (ps), those that lasted
    instructions: dict[int, set[str]]  # program id -> the instructions its op events ran


def _stats(raws: Any, names: dict[int, str], stat: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for raw in raws:
        s = stat.FromString(raw)
        which = s.WhichOneof("value")
        out[names[s.metadata_id]] = getattr(s, which) if which else None
    return out


def _kernel_of(display: str, text: str) -> tuple[str, bool]:
    """The kernel an op event's instruction belongs to, and whether it is an asynchronous
    op's done: a done's only operand (the last ``%name`` of its text) is its start."""
    _, _, rest = text.partition(" = ")
    opcodes = [tok.split("(", 1)[0] for tok in rest.split() if "(" in tok and tok[0] != "%"]
    if any(op.endswith("-done") for op in opcodes):
        return text.rsplit("%", 1)[1].split(")")[0].split(",")[0], True
    return display, False


@functools.cache
def _raw(name: str) -> _Raw:
    space = message_class("XSpace").FromString(gzip.decompress(_trace(name).read_bytes()))
    stat, event = message_class("XStat"), message_class("XEvent")
    (plane,) = [p for p in space.planes if p.name == "/device:TPU:0"]
    stat_names = {e.key: e.value.name for e in plane.stat_metadata}
    meta = {e.key: e.value for e in plane.event_metadata}
    meta_stats = {k: _stats(m.stats, stat_names, stat) for k, m in meta.items()}
    lines = {line.name: line for line in plane.lines}

    def events(line_name: str) -> list[tuple[int, int, int, dict[str, Any]]]:
        """Each event of a line in the device's clock (its device offset and duration)."""
        line = lines[line_name]
        out = []
        for raw in line.events:
            e = event.FromString(raw)
            own = _stats(e.stats, stat_names, stat)
            start = line.timestamp_ns * 1000 + own["device_offset_ps"]
            out.append((e.metadata_id, start, start + own["device_duration_ps"], own))
        return out

    modules: dict[int, str] = {}
    calls: dict[int, list[_Call]] = defaultdict(list)
    executions = []
    for m, start, end, own in sorted(events("XLA Modules"), key=lambda e: e[1]):
        module, program = meta[m].name.rsplit("(", 1)
        modules[int(program.rstrip(")"))] = module
        call = _Call(start, end, int(own["run_id"]))
        calls[int(program.rstrip(")"))].append(call)
        executions.append((call, int(program.rstrip(")"))))
    ops = events("XLA Ops")
    instructions: dict[int, set[str]] = defaultdict(set)
    for m, start, end, _ in ops:
        program = int(meta_stats[m]["program_id"])
        instructions[program].add(meta[m].display_name)
        (call,) = [c for c, p in executions if c.start <= start <= c.end]
        kernel, done = _kernel_of(meta[m].display_name, meta[m].name)
        call.ops.append((start, end, kernel, done))
    intervals = [(s, e) for line in ("XLA Ops", "Async XLA Ops") for _, s, e, _ in events(line)
                 if e > s]
    return _Raw(modules, dict(calls), len(ops), intervals, dict(instructions))


def _self_times(call: _Call) -> list[tuple[str, int, bool]]:
    """Each op event of a call with its self time (ps): its duration less the events directly
    inside it."""
    ops = sorted(call.ops, key=lambda o: (o[0], -o[1]))
    own = [end - start for start, end, _, _ in ops]
    stack: list[int] = []
    for i, (start, end, _, _) in enumerate(ops):
        while stack and ops[stack[-1]][1] <= start:
            stack.pop()
        if stack and end <= ops[stack[-1]][1]:
            own[stack[-1]] -= end - start
        stack.append(i)
    return [(kernel, t, done) for (_, _, kernel, done), t in zip(ops, own, strict=True)]


def _expected(name: str, program: int) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """Per kernel: its self time (ps) and its launches in each call of ``program``."""
    times: dict[str, list[int]] = {}
    launches: dict[str, list[int]] = {}
    calls = _raw(name).calls[program]
    for i, call in enumerate(calls):
        for kernel, t, done in _self_times(call):
            times.setdefault(kernel, [0] * len(calls))[i] += t
            launches.setdefault(kernel, [0] * len(calls))[i] += 0 if done else 1
    return times, launches


# --- the code under test ------------------------------------------------------------------------


@functools.cache
def _space(name: str) -> XSpace:
    return read_xspace(_trace(name))


@functools.cache
def _lane(name: str) -> timeline.Lane:
    (lane,) = timeline.lanes(_space(name))
    return lane


@functools.cache
def _inventory(name: str, program: int) -> dict[str, Any]:
    module, proto = _space(name).hlo_protos()[program]
    return kernel_inventory(parse_module(hlo_text(proto, module=module)))


def _timed(name: str, program: int) -> dict[str, Any]:
    space = _space(name)
    inventory = _inventory(name, program)
    trips = {k["name"]: int(k["trips"]) for k in inventory["kernels"]}
    module = timeline.module_base(space.hlo_protos()[program][0])
    view = timeline.profile_for(space, _lane(name), module, [program],
                                markers=timeline.steps(space), trips=trips)
    return kernel_times(view, module=module, kernels=list(trips), calls=view.calls,
                        launches=trips)


def _programs(name: str) -> list[int]:
    return sorted(_raw(name).calls)


# --- the tests ----------------------------------------------------------------------------------


def test_the_fixtures_hold_the_programs_captured() -> None:
    """Each trace holds the programs captured.json names (and, where one donates its inputs,
    the copy that made them fresh)."""
    assert set(NAMES) == set(CAPTURED["traces"])
    for name in NAMES:
        assert len(_raw(name).calls) >= len(CAPTURED["traces"][name]), name


@pytest.mark.parametrize("name", NAMES)
def test_every_op_event_is_matched_to_a_kernel_of_its_program(name: str) -> None:
    lane = _lane(name)
    raw = _raw(name)
    # Every op event lies in a module execution and is on the lane.
    assert lane.outside_executions == 0
    assert len(lane.kernels) == raw.op_events
    for program in _programs(name):
        inventory = {k["name"] for k in _inventory(name, program)["kernels"]}
        expected, _ = _expected(name, program)
        loops = {k for k in expected if k.startswith("while")}
        assert set(expected) - loops <= inventory, name  # every other op is a kernel
        timing = _timed(name, program)
        assert timing["available"], timing
        assert {k["name"] for k in timing["kernels"]} == set(expected) - loops
        assert set(timing["unmatched"]) == loops


@pytest.mark.parametrize("name", NAMES)
def test_each_kernels_time_per_call_is_its_raw_events_self_time(name: str) -> None:
    for program in _programs(name):
        expected, launches = _expected(name, program)
        timing = _timed(name, program)
        calls = len(_raw(name).calls[program])
        assert len(timing["calls"]) == calls and timing["calls_per_sample"] == 1
        for k in timing["kernels"]:
            want = [t * 1e-12 for t in expected[k["name"]]]
            assert k["busy_s"] == pytest.approx(want, rel=1e-9, abs=1e-15), k["name"]
            # The report's time of a kernel: one op after another on the core, whole.
            timed = schema.KernelTime.model_validate(k)
            assert kernel_samples(timed) == pytest.approx(want, rel=1e-9, abs=1e-15), k["name"]
            assert k["launches"] == launches[k["name"]], k["name"]


@pytest.mark.parametrize("name", NAMES)
def test_a_calls_kernels_sum_to_its_module_event(name: str) -> None:
    low, high = SPARSE.get(name, (0.99, 1.0))
    for program in _programs(name):
        timing = _timed(name, program)
        sums: dict[int, float] = defaultdict(float)
        for k in timing["kernels"]:
            for at, t in zip(k.get("calls_at") or range(len(k["busy_s"])), k["busy_s"],
                             strict=True):
                sums[at] += t
        for i, (call, raw) in enumerate(zip(timing["calls"], _raw(name).calls[program],
                                            strict=True)):
            module = (raw.end - raw.start) * 1e-12
            assert call["program_s"] == pytest.approx(module, rel=1e-9)  # the module event
            parts = (call["busy_s"] + call["dispatch_s"] + call["loop_control_s"]
                     + call["gaps_s"])
            assert parts == pytest.approx(call["program_s"], rel=1e-9)
            own = sums[i] + call["loop_control_s"]
            top = sum(t for _, t, _ in _self_times(raw)) * 1e-12
            assert own == pytest.approx(top, rel=1e-9)
            assert low <= own / module <= high, (name, program, own / module)


@pytest.mark.parametrize("name", NAMES)
def test_the_devices_idle_time_is_what_its_op_events_leave(name: str) -> None:
    (t,) = device_timelines(_space(name))
    raw = _raw(name)
    first = min(s for s, _ in raw.intervals)
    last = max(e for _, e in raw.intervals)
    covered = 0
    reach = first
    for s, e in sorted(raw.intervals):
        if e > reach:
            covered += e - max(s, reach)
            reach = e
    total, idle = (last - first) * 1e-12, (last - first - covered) * 1e-12
    assert t.total_s == pytest.approx(total, rel=1e-9)
    assert t.idle_s == pytest.approx(idle, rel=1e-6, abs=1e-12)
    assert t.computation_s < t.total_s
    if name == "transformer_step":  # five 32 µs steps, host gaps of 1.4 ms between them
        assert t.idle_s / t.total_s > 0.9


def _xprof_per_call(name: str, program: int) -> dict[str, float]:
    """XProf's self time per call (s) of each kernel: each op's total self time over its
    occurrences, times its occurrences per call, a done's added to its start's."""
    calls = len(_raw(name).calls[program])
    done_of = {}
    for call in _raw(name).calls[program]:
        for _, _, kernel, done in call.ops:
            if done:
                done_of[kernel] = kernel
    texts = _texts(name)
    out: dict[str, float] = defaultdict(float)
    for pid, op, occurrences, total in XPROF["traces"][name]:
        if int(pid) != program:
            continue
        kernel, _ = _kernel_of(op, texts.get(op, ""))
        out[kernel] += total / occurrences * (occurrences / calls) * 1e-6
    return dict(out)


@functools.cache
def _texts(name: str) -> dict[str, str]:
    plane = _space(name).plane("/device:TPU:0")
    assert plane is not None
    return {m.display_name: m.name for m in plane.event_metadata.values() if m.display_name}


@pytest.mark.parametrize("name", NAMES)
def test_kernel_times_agree_with_xprof(name: str) -> None:
    for program in _programs(name):
        xprof = _xprof_per_call(name, program)
        timing = _timed(name, program)
        assert {k["name"] for k in timing["kernels"]} <= set(xprof)
        for k in timing["kernels"]:
            ours = sum(k["busy_s"]) / len(timing["calls"])
            assert ours == pytest.approx(xprof[k["name"]], rel=0.01, abs=1e-12), k["name"]
        # Each kernel ran as often as XProf counts its op (a done apart: not a launch).
        launched = {k["name"]: sum(k["launches"]) for k in timing["kernels"]}
        for pid, op, occurrences, _ in XPROF["traces"][name]:
            if int(pid) == program and op in launched:
                assert launched[op] == occurrences, op


@pytest.mark.parametrize("name", ["transformer_step", "gru_scan", "patterns_6"])
def test_the_measured_path_times_a_tpu_trace_as_profile_does(name: str,
                                                             tmp_path: Path) -> None:
    """observe.trace reads a TPU trace with the project's reader (not ProfileData, which
    gives only the ops' HLO texts) and times it as ``profile`` does."""
    from roofline_report.observe.trace import read_trace

    raw = tmp_path / "host.xplane.pb"
    raw.write_bytes(gzip.decompress(_trace(name).read_bytes()))
    space = read_trace(raw)
    assert isinstance(space, XSpace)
    doc = results_document(read_profile(_trace(name)))
    (w,) = doc["workloads"]
    names = [k["name"] for k in w["kernels"]["kernels"]]
    trips = {k["name"]: int(k["trips"]) for k in w["kernels"]["kernels"]}
    measured = tpu_kernel_times(space, module=doc["trace"]["module"], kernels=names,
                                calls=len(w["kernel_timing"]["calls"]), launches=trips)
    assert measured["available"]
    assert measured["calls"] == w["kernel_timing"]["calls"]
    ours = {k["name"]: k for k in measured["kernels"]}
    theirs = {k["name"]: k for k in w["kernel_timing"]["kernels"]}
    assert ours.keys() == theirs.keys()
    for k, v in ours.items():
        assert (v["busy_s"], v["launches"]) == (theirs[k]["busy_s"], theirs[k]["launches"])


def test_a_trace_without_op_events_says_so_in_the_measured_path() -> None:
    from roofline_report.traces.xspace import Plane

    empty = XSpace([Plane(1, "/device:TPU:0", [], {})], [], [], [], {})
    record = tpu_kernel_times(empty, module="jit_f")
    assert record == {"available": False,
                      "reason": "the trace holds no op event of a TPU (another profiler may "
                                "have been running)"}
    other = tpu_kernel_times(_space("patterns_0"), module="jit_nothing")
    assert not other["available"]
    assert "hold no op of jit_nothing" in other["reason"]
    assert "another profiler" not in other["reason"]


def test_a_profile_of_a_tpu_trace_is_measured_per_step(tmp_path: Path) -> None:
    doc = results_document(read_profile(_trace("transformer_step")))
    (w,) = doc["workloads"]
    timing = w["kernel_timing"]
    assert timing["available"] and timing["source"] == "device"
    assert w["trace"]["per"] == "step" and len(timing["calls"]) == 5
    # The steps are the device's own (its Steps line), each holding one call of the program.
    assert len(w["trace"]["steps_s"]) == 5
    assert all(30e-6 < c["program_s"] < 35e-6 for c in timing["calls"])
    # its scalar instructions (a step counter) run on the scalar unit, no kernels: every
    # kernel of the inventory ran an op event
    assert not any("ran no op event" in n for n in timing["notes"])
    timed = {k["name"] for k in timing["kernels"]}
    assert {k["name"] for k in w["kernels"]["kernels"]} <= timed
    (t,) = doc["trace"]["timeline"]
    assert t["idle_s"] / t["total_s"] > 0.9


def test_a_traced_tpu_step_is_predicted_as_its_devices_span() -> None:
    """The trace times each step's program by its device's span (about 32 us here, its host
    taking 1.4 ms between steps): the prediction on the chip's measured ceilings is its
    kernels' sum, with no host dispatch in it (the floor for its 101 buffers is several times
    the span, and priced in it the step read over six times faster than predicted)."""
    from roofline_report.analysis.analyse import analyse
    from roofline_report.analysis.roof_check_records import Cause

    doc = results_document(read_profile(_trace("transformer_step")))
    measured = REPO / "tests" / "fixtures" / "tpu_v5e_results" / "heldout_part_a.json.gz"
    doc["ceilings"] = json.loads(gzip.decompress(measured.read_bytes()))["ceilings"]
    an = analyse(doc)
    (program,) = an.programs
    # jax names the chip "TPU v5 lite", its trace's plane "TPU v5 Lite": one device
    assert an.roof_check is not None and Cause.OTHER_DEVICE not in an.roof_check.causes
    prediction = program.prediction
    assert prediction is not None and program.kernels is not None
    assert all(t.name != "dispatch" for t in prediction.terms)
    kernels = [r.prediction.seconds for r in program.kernels.rows
               if r.charged and r.prediction is not None]
    assert prediction.seconds == pytest.approx(sum(kernels))
    assert program.seconds is not None and 30e-6 < program.seconds < 35e-6


def test_a_traced_step_that_waits_on_its_host_says_so() -> None:
    """Five steps of about 1.4 ms by their markers around calls of about 32 us on the device:
    the summary says the steps wait on their host, from those figures."""
    from roofline_report.analysis.analyse import analyse
    from roofline_report.analysis.kernel_records import idle_between_steps
    from roofline_report.report.blocks import Strong
    from roofline_report.report.trace_view import trace_view

    an = analyse(results_document(read_profile(_trace("transformer_step"))))
    view = trace_view(an)
    assert view is not None
    (said,) = [x for x in view.host_bound if x[0] == Strong("Host-bound between steps")]
    (program,) = an.programs
    steps = program.workload.trace.steps_s if program.workload.trace else []
    assert program.kernels is not None and program.kernels.trace is not None
    idle = idle_between_steps(steps, program.kernels.trace.program_s)
    assert idle is not None and idle > 0.9
    assert "of each step for its host" in "".join(x for x in said if isinstance(x, str))
    # the rule itself: a call as long as its step leaves no wait; no markers, no figure
    assert idle_between_steps([1.68e-3] * 5, 32.4e-6) == pytest.approx(1 - 32.4e-6 / 1.68e-3)
    assert idle_between_steps([30e-6], 32.4e-6) == 0.0
    assert idle_between_steps([], 32.4e-6) is None


# --- reading a trace starts no accelerator runtime -------------------------------------------

_NO_BACKEND = """
import json, sys
import jax._src.xla_bridge as xla_bridge

def refuse(*args, **kwargs):
    raise RuntimeError("a jax backend was initialised")

for name in ("backends", "_init_backend", "get_backend", "local_devices", "devices",
             "default_backend", "process_index"):
    if hasattr(xla_bridge, name):
        setattr(xla_bridge, name, refuse)
import jax
jax.devices = jax.local_devices = jax.default_backend = refuse
sys.argv = ["roofline-report", "profile", sys.argv[1], "--out", sys.argv[2], "--jobs", "1"]
from roofline_report.cli import main
code = main()
print(json.dumps({"code": code, "backends": len(xla_bridge._backends)}))
"""


def test_reading_a_trace_initialises_no_jax_backend(tmp_path: Path) -> None:
    """``profile`` reads a TPU trace without starting any runtime: with jax's backends made to
    refuse to start, it still writes the report, and none was started."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", _NO_BACKEND, str(_trace("vit_patch_embed")),
                           str(tmp_path / "out")], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {"code": 0, "backends": 0}
    assert (tmp_path / "out" / "report.md").is_file()


# --- the pieces ---------------------------------------------------------------------------------


def test_an_instruction_is_named_by_its_display_name_else_its_texts_head() -> None:
    from roofline_report.traces.tpu_ops import done_operand, instruction_name

    text = ("%copy-done.5 = f32[128,4,32]{0,2,1:T(8,128)S(1)} copy-done((f32[128,4,32]"
            "{0,2,1:T(8,128)S(1)}, f32[128,4,32]{0,2,1:T(8,128)}, u32[]{:S(2)}) %copy-start.5)")
    assert instruction_name(text, "copy-done.5") == "copy-done.5"
    assert instruction_name(text) == "copy-done.5"
    assert instruction_name("fusion.3") == "fusion.3"  # a hand-made trace's name
    assert done_operand(text) == "copy-start.5"
    sliced = ("%slice-done.3 = f32[2048,128,8]{1,0,2:T(8,128)S(1)} async-done(((f32[2048,128,32]"
              "{1,0,2:T(8,128)}), f32[2048,128,8]{1,0,2:T(8,128)S(1)}, s32[]{:S(2)}) "
              "%slice-start.3)")
    assert done_operand(sliced) == "slice-start.3"
    # An op that takes a done's result is no done itself.
    assert done_operand("%fusion.93 = f32[8]{0} fusion(f32[8]{0} %copy-done.1), kind=kLoop, "
                        "calls=%fused_computation.91") is None
    assert done_operand("copy-done.5") is None


def test_op_events_outside_every_execution_are_left_out_and_said() -> None:
    """A trace that began mid-call: the ops before the first module event are counted out, and
    the view says so."""
    from roofline_report.traces.xspace import Line, Plane

    space = _space("vit_patch_embed")
    plane = space.plane("/device:TPU:0")
    assert plane is not None
    lines = [Line(line.id, line.name, line.events, line.timestamp_ns) for line in plane.lines]
    modules = next(i for i, line in enumerate(lines) if line.name == "XLA Modules")
    first = lines[modules].events[0]
    later = [e for e in lines[modules].events if e.start_ns > first.start_ns]
    lines[modules] = Line(lines[modules].id, "XLA Modules", later, lines[modules].timestamp_ns)
    cut = XSpace([*[p for p in space.planes if p is not plane],
                  Plane(plane.id, plane.name, lines, plane.stats, plane.event_metadata)],
                 [], [], [], {})
    (lane,) = timeline.lanes(cut)
    per_call = len(_lane("vit_patch_embed").kernels) // 3
    assert lane.outside_executions == per_call
    assert len(lane.kernels) == 2 * per_call
    module = timeline.module_base(space.hlo_protos()[_programs("vit_patch_embed")[0]][0])
    view = timeline.profile_for(cut, lane, module, [], markers=[], trips=None)
    assert any(f"{per_call} op event(s) of TPU:0 lie outside every program execution" in n
               for n in view.notes)
