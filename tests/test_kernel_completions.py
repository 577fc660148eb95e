"""kernel_times' matching of asynchronous launches to their ``end:`` events (kept as columns
sorted by key and start) and the runs a line gives its events (timeline.KernelLine), checked
against a plain reading of the same rules on shuffled, reused and tied flow ids."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

from roofline_report.ingest.timeline import KernelLine
from roofline_report.traces.events import kernel_times


def _event(name: str, start: float, duration: float, **stats: Any) -> SimpleNamespace:
    return SimpleNamespace(name=name, start_ns=start, duration_ns=duration, stats=stats)


def _profile(*lines: Any) -> SimpleNamespace:
    return SimpleNamespace(planes=[SimpleNamespace(name="/host:CPU", lines=list(lines))])


def _line(events: list[SimpleNamespace]) -> SimpleNamespace:
    return SimpleNamespace(name="t", events=events)


def _completions(launches: list[SimpleNamespace], ends: list[SimpleNamespace]
                 ) -> list[float | None]:
    """Per launch (in time order): the end of the end event it takes, read one by one: the
    first untaken of its thunk with its flow id, else with none, that starts no earlier, the
    end events of a key in time order (as they came where they start together)."""
    by_key: dict[tuple[Any, str], list[SimpleNamespace]] = {}
    for e in ends:
        by_key.setdefault((e.stats.get("_c"), e.name[5:]), []).append(e)
    for items in by_key.values():
        items.sort(key=lambda e: e.start_ns)
    taken: set[int] = set()
    out: list[float | None] = []
    for k in launches:
        found = None
        for key in ((k.stats.get("_p"), k.stats["hlo_op"]), (None, k.stats["hlo_op"])):
            for e in by_key.get(key, []):
                if e.start_ns >= k.start_ns and id(e) not in taken:
                    found = e
                    break
            if found is not None:
                break
        if found is not None:
            taken.add(id(found))
        out.append(None if found is None else found.start_ns + found.duration_ns)
    return out


def test_launches_take_the_end_events_a_plain_reading_gives() -> None:
    rng = random.Random(11)
    for _ in range(20):
        ops = ["fusion", "dot"]
        launches = []
        for i in range(60):
            stats: dict[str, Any] = {"hlo_op": rng.choice(ops), "hlo_module": "jit_f",
                                     "run_id": i}
            if rng.random() < 0.8:
                stats["_p"] = rng.randrange(4)  # flow ids reused between launches
            launches.append(_event(stats["hlo_op"], 1000.0 * i, 10.0, **stats))
        ends = []
        for _ in range(70):
            flow = rng.choice([None, 0, 1, 2, 3, 9])
            start = 1000.0 * rng.randrange(60) + rng.choice([-5.0, 0.0, 20.0, 20.0, 700.0])
            stats = {} if flow is None else {"_c": flow}
            ends.append(_event(f"end: {rng.choice(ops)}", start, rng.choice([1.0, 3000.0]),
                               **stats))
        rng.shuffle(ends)
        record = kernel_times(_profile(_line(launches), _line(ends)), module="jit_f",
                              kernels=ops)
        expected: dict[str, list[float]] = {op: [] for op in ops}
        for k, done in zip(launches, _completions(launches, ends), strict=True):
            end = k.start_ns + k.duration_ns if done is None else max(
                k.start_ns + k.duration_ns, done)
            expected[k.stats["hlo_op"]].append(round((end - k.start_ns) * 1e-9, 12))
        got = {row["name"]: row["span_s"] for row in record["kernels"]}
        assert got == {op: spans for op, spans in expected.items() if spans}


def test_a_line_s_runs_stand_for_its_events_run_ids() -> None:
    kernels = [_event("fusion", 100.0 * i, 10.0, hlo_op="fusion", hlo_module="jit_f",
                      run_id=7) for i in range(6)]
    steps = ["step 0", "step 0", "step 1", "step 1", "step 1", "step 2"]
    record = kernel_times(_profile(KernelLine(0, "kernels", kernels, steps)),
                          module="jit_f", kernels=["fusion"])
    (row,) = record["kernels"]
    assert row["launches"] == [2, 3, 1] and len(record["calls"]) == 3
    # None for every event: nothing numbers the calls, whatever the stats say.
    record = kernel_times(_profile(KernelLine(0, "kernels", kernels, [None] * 6)),
                          module="jit_f", kernels=["fusion"], calls=3)
    assert record["calls_per_sample"] == 3 and record["kernels"][0]["launches"] == [2.0]
    # Without runs, the stats' run ids: one call.
    record = kernel_times(_profile(_line(kernels)), module="jit_f", kernels=["fusion"])
    assert record["kernels"][0]["launches"] == [6] and len(record["calls"]) == 1
