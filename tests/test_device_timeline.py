"""Where each device's time went (roofline_report.ingest.device_timeline), held to the
definition it was first written as: unions of intervals merged one by one, and the exposed
part of one kind as its length less the union of its pairwise overlaps with another's."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest

from roofline_report.hlo.walk import COLLECTIVE_OPCODES
from roofline_report.ingest.device_timeline import DeviceTimeline, device_timelines
from roofline_report.traces.xspace import Event, Line, Plane, XSpace, read_xspace

Interval = tuple[float, float]
H200 = Path(__file__).resolve().parent / "fixtures" / "traces_real" / "h200_train_step"


def _union(intervals: list[Interval]) -> list[Interval]:
    out: list[list[float]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _length(intervals: list[Interval]) -> float:
    return sum(b - a for a, b in intervals)


def _minus(these: list[Interval], those: list[Interval]) -> float:
    return _length(these) - _length(_union(
        [(max(a, c), min(b, d)) for a, b in these for c, d in those if max(a, c) < min(b, d)]))


def _kind(line: str, e: Event) -> str:
    base = str(e.stats.get("hlo_op") or "").split(".")[0].removesuffix("-start")
    base = base.removesuffix("-done")
    name = e.name.casefold()
    if base in COLLECTIVE_OPCODES or name.startswith(("nccl", "rccl", "ncclkernel")):
        return "communication"
    if "memcpy" in line.casefold() or name.startswith(("memcpy", "copyhostto", "copydeviceto")):
        return "memcpy"
    return "computation"


def _by_definition(space: XSpace) -> list[DeviceTimeline]:
    out = []
    for plane in space.planes:
        if not plane.name.startswith(("/device:GPU:", "/device:TPU:")):
            continue
        kinds: dict[str, list[Interval]] = {"computation": [], "communication": [],
                                            "memcpy": []}
        for line in plane.lines:
            for e in line.events:
                if e.duration_ns > 0:
                    kinds[_kind(line.name, e)].append((e.start_ns, e.start_ns + e.duration_ns))
        every = [iv for ivs in kinds.values() for iv in ivs]
        if not every:
            continue
        total = max(b for _, b in every) - min(a for a, _ in every)
        comp, comm = _union(kinds["computation"]), _union(kinds["communication"])
        copies = _union(kinds["memcpy"])
        ns = 1e-9
        out.append(DeviceTimeline(
            plane.name.removeprefix("/device:"), total * ns, _length(comp) * ns,
            _length(comm) * ns, _minus(comm, comp) * ns, _length(copies) * ns,
            _minus(copies, _union([*comp, *comm])) * ns,
            (total - _length(_union(every))) * ns))
    return out


def _random_space(rng: random.Random) -> XSpace:
    names = [("fusion_3", {"hlo_op": "fusion.3"}), ("ncclKernel_AllReduce", {}),
             ("all_reduce", {"hlo_op": "all-reduce-start.2"}), ("gemm_7", {"hlo_op": "dot.7"}),
             ("Memcpy DtoD", {}), ("CopyDeviceToHost", {}), ("rcclReduce", {"hlo_op": "x.1"}),
             ("__amd_rocclr_copyBuffer", {})]
    planes = []
    for p, plane_name in enumerate(["/host:CPU", "/device:GPU:0", "/device:GPU:1"]):
        lines = []
        for i, line_name in enumerate(["Stream #7(Compute)", "Stream #9(NCCL)",
                                       "MemcpyD2H"][:rng.randint(1, 3)]):
            events = []
            at = float(rng.randrange(0, 50))
            for _ in range(rng.randint(0, 120)):
                name, stats = rng.choice(names)
                duration = float(rng.choice([0, 0, 1, 2, 5, 13, 40]))  # ties and touching
                events.append(Event(name, at, duration, dict(stats)))
                at += float(rng.choice([0, 1, 3, 7])) + (duration if rng.random() < 0.6 else 0)
            lines.append(Line(i, line_name, events))
        planes.append(Plane(p, plane_name, lines, {}))
    return XSpace(planes, [], [], [], {})


@pytest.mark.parametrize("seed", range(40))
def test_timelines_are_those_of_the_definition(seed: int) -> None:
    space = _random_space(random.Random(seed))
    got = device_timelines(space)
    want = _by_definition(space)
    assert [t.device for t in got] == [t.device for t in want]
    # The same pieces, merged and summed in the same order: equal to the last bit.
    assert got == want


def test_some_random_trace_has_every_kind_overlapping() -> None:
    exposed = [t for seed in range(40)
               for t in device_timelines(_random_space(random.Random(seed)))]
    assert any(0 < t.exposed_communication_s < t.communication_s for t in exposed)
    assert any(0 < t.exposed_memcpy_s < t.memcpy_s for t in exposed)


def test_the_reader_s_columns_give_what_its_events_give() -> None:
    (path,) = sorted(H200.glob("plugins/profile/*/*.xplane.pb*"))
    space = read_xspace(path)
    listed = replace(space, planes=[
        replace(p, lines=[replace(line, events=list(line.events)) for line in p.lines])
        for p in space.planes])
    got = device_timelines(space)
    assert got == device_timelines(listed) == _by_definition(listed)
    (gpu,) = got
    assert gpu.device == "GPU:0" and gpu.computation_s > 0 and gpu.communication_s == 0.0
