"""Reading XSpace protobufs (roofline_report.traces.xspace) and sorting their events by device,
program and step (roofline_report.ingest.timeline), on the committed traces and on synthetic
XSpaces written here in the protobuf wire format: GPU and TPU shaped traces, and files that are
truncated, corrupt or from a newer profiler."""

from __future__ import annotations

import gzip
import struct
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from roofline_report.analysis.analyse import analyse
from roofline_report.errors import InputError
from roofline_report.hlo.kernels import kernel_inventory
from roofline_report.ingest import timeline
from roofline_report.ingest.pipeline import read_profile
from roofline_report.ingest.records import results_document
from roofline_report.kinds import Kind
from roofline_report.traces.events import kernel_times
from roofline_report.traces.xspace import (
    TraceFormatError,
    hlo_module_proto,
    read_xspace,
    read_xspace_bytes,
)

TRACES = Path(__file__).parent / "fixtures" / "traces"


def _file(name: str) -> Path:
    return next((TRACES / name).glob("plugins/profile/*/host0.xplane.pb.gz"))


# --- a protobuf wire-format writer for synthetic XSpaces ----------------------------------------


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _int(number: int, value: int) -> bytes:
    return _key(number, 0) + _varint(value)


def _bytes(number: int, value: bytes | str) -> bytes:
    raw = value.encode() if isinstance(value, str) else value
    return _key(number, 2) + _varint(len(raw)) + raw


def _stat(meta: int, value: Any) -> bytes:
    body = _int(1, meta)
    if isinstance(value, str):
        body += _bytes(5, value)
    elif isinstance(value, bytes):
        body += _bytes(6, value)
    elif isinstance(value, float):
        body += _key(2, 1) + struct.pack("<d", value)
    elif value < 0:
        body += _int(4, value)
    else:
        body += _int(3, value)
    return body


Events = Sequence[tuple[str, float, float, Mapping[str, Any]]]  # name, start ns, ns, stats


def plane(plane_id: int, name: str, lines: Mapping[str, Events], *,
          stats: Mapping[str, Any] | None = None,
          metadata: Sequence[tuple[str, Mapping[str, Any]]] = ()) -> bytes:
    """One XPlane: ``lines`` of events (times in ns), plane ``stats``, and event metadata
    carrying stats of their own (the metadata plane's programs)."""
    stat_ids: dict[str, int] = {}
    event_ids: dict[str, int] = {}

    def sid(key: str) -> int:
        return stat_ids.setdefault(key, len(stat_ids) + 1)

    def eid(key: str) -> int:
        return event_ids.setdefault(key, len(event_ids) + 1)

    body = _int(1, plane_id) + _bytes(2, name)
    for i, (line_name, events) in enumerate(lines.items(), 1):
        line = _int(1, i) + _bytes(2, line_name) + _int(3, 0)
        for ev_name, start, duration, ev_stats in events:
            ev = _int(1, eid(ev_name)) + _int(2, round(start * 1000)) + \
                _int(3, round(duration * 1000))
            for k, v in ev_stats.items():
                ev += _bytes(4, _stat(sid(k), v))
            line += _bytes(4, ev)
        body += _bytes(3, line)
    meta_stats: dict[str, bytes] = {}
    for meta_name, values in metadata:
        meta_stats[meta_name] = b"".join(_bytes(5, _stat(sid(k), v)) for k, v in values.items())
        eid(meta_name)
    for k, v in (stats or {}).items():
        body += _bytes(6, _stat(sid(k), v))
    for ev_name, i in event_ids.items():
        value = _int(1, i) + _bytes(2, ev_name) + meta_stats.get(ev_name, b"")
        body += _bytes(4, _int(1, i) + _bytes(2, value))
    for stat_name, i in stat_ids.items():
        body += _bytes(5, _int(1, i) + _bytes(2, _int(1, i) + _bytes(2, stat_name)))
    return body


def space(*planes: bytes, hostnames: Sequence[str] = ("host",)) -> bytes:
    return b"".join(_bytes(1, p) for p in planes) + b"".join(_bytes(4, h) for h in hostnames)


# --- the committed traces ------------------------------------------------------------------


def test_gzip_is_read_transparently() -> None:
    packed = _file("softmax").read_bytes()
    a = read_xspace_bytes(packed)
    b = read_xspace_bytes(gzip.decompress(packed))
    assert [p.name for p in a.planes] == [p.name for p in b.planes]
    assert [len(line.events) for p in a.planes for line in p.lines] == \
        [len(line.events) for p in b.planes for line in p.lines]


def test_events_match_jax_profile_data() -> None:
    """Every event as jax.profiler.ProfileData reads it: name, times and stats."""
    from jax.profiler import ProfileData

    raw = gzip.decompress(_file("softmax").read_bytes())
    ours = read_xspace_bytes(raw)
    theirs = ProfileData.from_serialized_xspace(raw)
    mine = {p.name: p for p in ours.planes}
    compared = 0
    for p in theirs.planes:
        lines = list(p.lines)
        assert len(lines) == len(mine[p.name].lines)
        for line, my_line in zip(lines, mine[p.name].lines, strict=True):
            assert line.name == my_line.name
            for e, m in zip(line.events, my_line.events, strict=True):
                assert (e.name, e.start_ns, e.duration_ns) == (m.name, m.start_ns, m.duration_ns)
                for key, value in dict(e.stats).items():
                    assert m.stats[key] == value
                compared += 1
    assert compared > 50


def test_the_hlo_of_each_program_is_in_the_metadata_plane() -> None:
    xs = read_xspace(_file("softmax"))
    protos = xs.hlo_protos()
    names = {timeline.module_base(name) for name, _ in protos.values()}
    assert "jit__softmax" in names
    for _, proto in protos.values():
        assert hlo_module_proto(proto)  # HloProto field 1, the HloModuleProto
    assert read_xspace(_file("no_hlo")).hlo_protos() == {}


def test_step_markers_and_lanes() -> None:
    xs = read_xspace(_file("transformer"))
    assert [s.number for s in timeline.steps(xs)] == [0, 1, 2]
    lanes = timeline.lanes(xs)
    assert [lane.device for lane in lanes] == ["CPU:0"]
    sharded = timeline.lanes(read_xspace(_file("sharded8")))
    assert [lane.device for lane in sharded] == [f"CPU:{i}" for i in range(8)]
    counts = {len(lane.kernels) for lane in sharded}
    assert len(counts) == 1  # every emulated device runs the same kernels


# --- bad files ------------------------------------------------------------------------------


def test_truncated_and_corrupt_files_are_named() -> None:
    raw = gzip.decompress(_file("softmax").read_bytes())
    with pytest.raises(TraceFormatError, match="truncated"):
        read_xspace_bytes(raw[: len(raw) // 2], "half.xplane.pb")
    with pytest.raises(TraceFormatError, match="gzip"):
        read_xspace_bytes(_file("softmax").read_bytes()[:200])
    with pytest.raises(TraceFormatError, match="empty"):
        read_xspace_bytes(b"")
    with pytest.raises(TraceFormatError):
        read_xspace_bytes(b"\x07\xff\x00garbage")  # wire type 7
    with pytest.raises(TraceFormatError, match="no profiler plane"):
        read_xspace_bytes(_bytes(4, "only a host name"))
    # A protobuf of another kind (here a program's HloProto) is not a profiler trace.
    hlo_proto = next(iter(read_xspace(_file("softmax")).hlo_protos().values()))[1]
    with pytest.raises(TraceFormatError, match="not a profiler trace"):
        read_xspace_bytes(hlo_proto, "hlo.xplane.pb")


def test_a_trace_over_the_protobuf_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.xplane.pb"
    with big.open("wb") as f:  # a sparse file: nothing is written but its size
        f.truncate(2**31 + 10)
    with pytest.raises(TraceFormatError, match=r"big\.xplane\.pb: 2\.0 GiB, over the 2 GiB"):
        read_xspace(big)


def test_unknown_fields_are_found_in_every_message_of_the_tree() -> None:
    """Lines, metadata entries and their values are walked (not only the planes): each field
    the schema does not have is named by its message, and a known field with another wire
    type deep in a metadata entry is refused as a newer profiler's."""
    line = _int(1, 1) + _bytes(2, "t") + _int(15, 2)
    entry = _int(1, 1) + _bytes(2, _int(1, 1) + _bytes(2, "fusion") + _int(14, 3)) + _int(13, 4)
    stat_entry = _bytes(5, _int(1, 1) + _bytes(2, _int(1, 1) + _bytes(2, "s") + _int(12, 5)))
    deep = space(_int(1, 1) + _bytes(2, "/host:CPU") + _bytes(3, line) + _bytes(4, entry)
                 + stat_entry + _int(9, 1))
    assert read_xspace_bytes(deep).unknown_fields == {
        "XEventMetadata": [14], "XEventMetadataEntry": [13], "XLine": [15], "XPlane": [9],
        "XStatMetadata": [12]}
    clash = space(_int(1, 1) + _bytes(2, "/host:CPU")
                  + _bytes(4, _int(1, 1) + _bytes(2, _bytes(1, b"an id as bytes"))))
    with pytest.raises(TraceFormatError, match="XEventMetadata field 1 has wire type") as info:
        read_xspace_bytes(clash)
    assert info.value.newer


def test_events_with_a_negative_duration_are_skipped_and_counted() -> None:
    negative = plane(1, "/host:CPU", {"t": [("fusion", 0, -5, {"hlo_op": "fusion"}),
                                            ("fusion.1", 10, 5, {"hlo_op": "fusion.1"})]})
    xs = read_xspace_bytes(space(negative))
    assert [e.name for e in xs.planes[0].lines[0].events] == ["fusion.1"]
    assert xs.dropped.negative_durations == {"fusion": 1}
    assert read_xspace(_file("softmax")).dropped.negative_durations == {}


def test_a_newer_schema() -> None:
    base = plane(1, "/host:CPU", {"t": [("fusion", 0, 10, {"hlo_op": "fusion",
                                                           "hlo_module": "jit_f"})]})
    # A field the schema does not have is skipped and reported.
    extra = space(base + _int(9, 1))
    assert read_xspace_bytes(extra).unknown_fields == {"XPlane": [9]}
    # A stat whose value is in a field this reader does not know (a newer profiler): that
    # stat is skipped and counted by name, the event and its other stats are kept.
    names = _bytes(5, _int(1, 1) + _bytes(2, _int(1, 1) + _bytes(2, "new_stat"))) + \
        _bytes(5, _int(1, 2) + _bytes(2, _int(1, 2) + _bytes(2, "hlo_op")))
    stat = _int(1, 1) + _bytes(8, b"new")
    event = _int(1, 1) + _int(2, 0) + _int(3, 7000) + _bytes(4, stat) + \
        _bytes(4, _int(1, 2) + _bytes(5, "fusion"))
    newer = space(_int(1, 1) + _bytes(2, "/host:CPU") + _bytes(3, _bytes(4, event)) + names)
    xs = read_xspace_bytes(newer)
    (e,) = xs.planes[0].lines[0].events
    assert e.stats == {"hlo_op": "fusion"} and e.duration_ns == 7.0
    assert xs.dropped.unknown_stat_values == {"new_stat": 1}
    # A field a stat with a value does not have is named like any other.
    stat = _int(1, 2) + _bytes(5, "fusion") + _int(12, 3)
    event = _int(1, 1) + _int(2, 0) + _bytes(4, stat)
    extra = space(_int(1, 1) + _bytes(2, "/host:CPU") + _bytes(3, _bytes(4, event)) + names)
    assert read_xspace_bytes(extra).unknown_fields == {"XStat": [12]}
    # An event placed in time by a field this reader does not know.
    event = _int(1, 1) + _int(7, 5)
    newer = space(_int(1, 1) + _bytes(2, "/host:CPU") + _bytes(3, _bytes(4, event)))
    with pytest.raises(TraceFormatError, match="newer profiler"):
        read_xspace_bytes(newer)
    # A known field with another wire type.
    clash = space(_bytes(2, "/host:CPU") + _bytes(1, b"an id as bytes"))
    with pytest.raises(TraceFormatError, match="wire type") as info:
        read_xspace_bytes(clash)
    assert info.value.newer


def test_hlo_of_a_newer_jaxlib_says_so(tmp_path: Path) -> None:
    xs = read_xspace(_file("softmax"))
    cpu = xs.plane("/host:CPU")
    assert cpu is not None
    events = [(e.name, e.start_ns, e.duration_ns, {k: v for k, v in e.stats.items()
                                                  if k in ("hlo_op", "hlo_module", "run_id",
                                                           "program_id")})
              for line in cpu.lines for e in line.events if "hlo_op" in e.stats]
    program = int(events[0][3]["program_id"])
    unreadable = _bytes(1, _bytes(1, "not an HLO module"))
    meta = plane(1, "/host:metadata", {}, stats={"jaxlib_version": "99.1.0"},
                 metadata=[(f"jit__softmax({program})",
                            {"Hlo Proto": unreadable, "program_id": program})])
    run = tmp_path / "logs" / "plugins" / "profile" / "2030_01_01_00_00_00"
    run.mkdir(parents=True)
    (run / "h.xplane.pb").write_bytes(space(meta, plane(2, "/host:CPU", {"t": events})))
    with pytest.raises(InputError, match=r"newer than this jaxlib .*jaxlib>=99\.1\.0"):
        read_profile(tmp_path / "logs")


# --- GPU and TPU shaped traces ------------------------------------------------------------------


@pytest.fixture(scope="module")
def softmax_program() -> tuple[str, int, bytes, dict[str, Any]]:
    """The softmax program of the CPU fixture: module name, program id, Hlo Proto, inventory."""
    from roofline_report.ingest.hlo import hlo_text

    xs = read_xspace(_file("softmax"))
    program, (name, proto) = next((pid, v) for pid, v in xs.hlo_protos().items()
                                  if timeline.module_base(v[0]) == "jit__softmax")
    inventory = kernel_inventory(hlo_text(proto, module=name))
    return timeline.module_base(name), program, proto, inventory


def _gpu_trace(softmax_program: tuple[str, int, bytes, dict[str, Any]], calls: int) -> bytes:
    module, program, proto, inventory = softmax_program
    kernels: list[tuple[str, float, float, dict[str, Any]]] = []
    t = 1000.0
    for _ in range(calls):
        for k in inventory["kernels"]:
            # hlo_op and hlo_module as XLA annotates CUDA kernels; no run id.
            kernels.append((f"sm90_kernel_{k['name']}", t, 50.0,
                            {"hlo_op": k["name"], "hlo_module": module}))
            t += 60.0
        t += 500.0
    meta = plane(1, "/host:metadata", {}, stats={"jaxlib_version": "0.10.2"},
                 metadata=[(f"{module}({program})", {"Hlo Proto": proto,
                                                     "program_id": program})])
    gpu = plane(2, "/device:GPU:0", {"Stream #13(compute)": kernels},
                stats={"gpu_device_name": "NVIDIA H200", "compute_cap_major": 9,
                       "compute_cap_minor": 0})
    return space(meta, gpu)


def test_a_gpu_trace_counts_calls_and_draws_the_spec_sheet(
        softmax_program: tuple[str, int, bytes, dict[str, Any]], tmp_path: Path) -> None:
    (tmp_path / "one.xplane.pb").write_bytes(_gpu_trace(softmax_program, calls=4))
    reading = read_profile(tmp_path / "one.xplane.pb")
    (p,) = reading.programs
    chosen = p.chosen
    assert chosen is not None and chosen.lane.device == "GPU:0"
    assert chosen.view.calls == 4 and chosen.view.per == "call"
    timing = chosen.timing
    assert timing["source"] == "device"
    assert len(timing["calls"]) * timing["calls_per_sample"] == 4
    names = {k["name"] for k in softmax_program[3]["kernels"]}
    assert {k["name"] for k in timing["kernels"]} == names
    assert all(k["busy_s"] == [pytest.approx(50e-9)] for k in timing["kernels"])
    data = results_document(reading)
    assert data["environment"]["device_kind"] == "NVIDIA H200"
    assert data["environment"]["compute_capability"] == "9.0"
    an = analyse(data)
    chosen_roofs = an.roofs.kernels
    assert chosen_roofs.label == "H200" and chosen_roofs.kind is Kind.SPEC_SHEET
    # A device's kernel events are the kernels' own durations: no word of worker threads.
    from roofline_report.report.kernel_view import kernel_views

    (view,) = kernel_views(an)
    basis = "".join(str(part) for part in view.coverage)
    assert "duration on the device" in basis and "worker" not in basis


def test_a_tpu_trace_takes_ops_from_the_module_around_them(
        softmax_program: tuple[str, int, bytes, dict[str, Any]], tmp_path: Path) -> None:
    module, program, proto, inventory = softmax_program
    modules: list[tuple[str, float, float, dict[str, Any]]] = []
    ops: list[tuple[str, float, float, dict[str, Any]]] = []
    t = 0.0
    for run in range(3):
        modules.append((f"{module}({program})", t, 1000.0, {"run_id": 100 + run}))
        for i, k in enumerate(inventory["kernels"]):
            ops.append((k["name"], t + 10 + 100 * i, 20.0 * (run + 1), {}))
        t += 2000.0
    meta = plane(1, "/host:metadata", {}, metadata=[(f"{module}({program})",
                                                     {"Hlo Proto": proto})])
    tpu = plane(2, "/device:TPU:0", {"XLA Modules": modules, "XLA Ops": ops},
                stats={"device_type_string": "TPU v5 lite"})
    (tmp_path / "tpu.xplane.pb").write_bytes(space(meta, tpu))
    reading = read_profile(tmp_path / "tpu.xplane.pb")
    chosen = reading.programs[0].chosen
    assert chosen is not None and chosen.lane.device == "TPU:0"
    timing = chosen.timing
    assert len(timing["calls"]) == 3
    assert all(sorted(k["busy_s"]) == [pytest.approx(20e-9), pytest.approx(40e-9),
                                       pytest.approx(60e-9)] for k in timing["kernels"])
    data = results_document(reading)
    assert data["environment"]["device_kind"] == "TPU v5 lite"
    assert analyse(data).roofs.kernels.label == "TPU v5e"


def test_kernels_outside_step_markers_fall_back_to_calls(
        softmax_program: tuple[str, int, bytes, dict[str, Any]]) -> None:
    """A device runs behind its host: markers that bound few kernels are not used."""
    xs = read_xspace_bytes(_gpu_trace(softmax_program, calls=2))
    (lane,) = timeline.lanes(xs)
    early = [timeline.Step(0, 0.0, 1100.0)]  # spans the first kernel only
    view = timeline.profile_for(xs, lane, softmax_program[0], [], markers=early, trips=None)
    assert view.per == "call" and any("outside the step markers" in n for n in view.notes)
    timing = kernel_times(view, module=softmax_program[0], kernels=None, calls=view.calls)
    assert len(timing["calls"]) * timing["calls_per_sample"] == 2


# --- hosts, runs and what the reader skipped ------------------------------------------------


def test_what_the_reader_skipped_is_one_note_each(
        softmax_program: tuple[str, int, bytes, dict[str, Any]], tmp_path: Path) -> None:
    module = softmax_program[0]
    bad = plane(3, "/host:CPU", {"python": [("stalled", 0, -40, {}), ("stalled", 50, -1, {}),
                                            ("fine", 60, 5, {})]})
    (tmp_path / "h.xplane.pb").write_bytes(_gpu_trace(softmax_program, calls=2) + space(bad))
    reading = read_profile(tmp_path / "h.xplane.pb", module=module)
    skipped = [n for n in reading.notes if "negative duration" in n]
    assert skipped == ["h: 2 event(s) with a negative duration skipped (stalled ×2)"]
    assert results_document(reading)["trace"]["notes"] == reading.notes


def _copy_host(source: str, host: str, run_dir: Path) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    src = next((TRACES / source).glob(f"plugins/profile/*/{host}.xplane.pb.gz"))
    (run_dir / src.name).write_bytes(src.read_bytes())


def test_hosts_of_one_capture_in_adjacent_runs_are_read_together(tmp_path: Path) -> None:
    runs = tmp_path / "logs" / "plugins" / "profile"
    _copy_host("two_hosts", "host0", runs / "2030_01_01_00_00_00")
    _copy_host("two_hosts", "host1", runs / "2030_01_01_00_00_03")
    _copy_host("two_hosts", "host1", runs / "2030_01_01_00_05_00")  # another capture
    reading = read_profile(tmp_path / "logs", run="2030_01_01_00_00_03")
    assert [h.file.host for h in reading.hosts] == ["host1", "host0"]
    assert any("run 2030_01_01_00_00_00" in n and "(host0)" in n and "3 s" in n
               for n in reading.notes)
    alone = read_profile(tmp_path / "logs")  # the newest, minutes from the others
    assert [h.file.host for h in alone.hosts] == ["host1"]
    assert not any("read with it" in n for n in alone.notes)


def test_varint_stats_read_in_python_as_upb_reads_them() -> None:
    """The reader's own decoding of the common stat (a small id and a varint value) gives
    what the protobuf package gives, and leaves every other stat to it."""
    from roofline_report.traces.xspace import _varint_stat
    from roofline_report.traces.xspace_schema import message_class

    stat = message_class("XStat")
    read = 0
    for value in (0, 1, 127, 128, 300, 2**35, 2**63 - 1, 2**63, 2**64 - 1, -1, -300, -2**63):
        for field in ("uint64_value", "int64_value", "ref_value"):
            fits = value >= 0 if field != "int64_value" else value < 2**63
            if not fits:
                continue
            raw = stat(metadata_id=5, **{field: value}).SerializeToString()
            fast = _varint_stat(raw)
            assert fast is not None and (fast[0], fast[2]) == (5, value), (field, value)
            read += 1
    assert read == 28
    for other in (stat(metadata_id=5, str_value="x").SerializeToString(),
                  stat(metadata_id=5, double_value=1.5).SerializeToString(),
                  stat(metadata_id=200, int64_value=3).SerializeToString(),
                  _int(1, 5) + _int(4, 128) + _int(12, 1),  # a field the schema lacks after
                  _int(1, 5) + b"\x20\x80\x80"):  # a varint cut short
        assert _varint_stat(other) is None


def test_a_lines_columns_give_the_events_a_list_would() -> None:
    """EventColumns: iterating, indexing, slicing and picking by name or stat give the same
    events as a list of them."""
    from roofline_report.traces.xspace import EventColumns, events_where

    xs = read_xspace(_file("transformer"))
    cpu = xs.plane("/host:CPU")
    assert cpu is not None
    checked = 0
    for line in cpu.lines:
        columns = line.events
        assert isinstance(columns, EventColumns)
        events = list(columns)
        assert columns == events and len(columns) == len(events)
        assert columns[0] == events[0] and columns[-1] == events[-1]
        assert columns[1:5] == events[1:5]

        def end(name: str) -> bool:
            return name.startswith("end: ")

        for name, stat in ((end, None), (None, "hlo_op"), (end, "_c"), (None, None)):
            picked = events_where(columns, name=name, stat=stat)
            assert picked == events_where(events, name=name, stat=stat)
            checked += len(picked)
    assert checked > 100
    with pytest.raises(IndexError):
        cpu.lines[0].events[len(cpu.lines[0].events)]
