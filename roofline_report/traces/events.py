"""Per-kernel times from the events of a profiler trace (pure: no jax).

:func:`kernel_times` (duck-typed on ``jax.profiler.ProfileData``'s planes, lines and events)
turns the events of a trace, captured here (:mod:`roofline_report.observe.trace`) or on any
machine, into per-kernel times:

* Events are matched to kernels by their ``hlo_op`` and ``hlo_module`` stats. On CPU the plane
  ``/host:CPU`` holds one event per runtime thunk; a thunk that completes asynchronously gets an
  ``end: NAME`` event (linked by the flow stats ``_p``/``_c``, else the next one of that name on
  any line), and the kernel lasts until that event ends. On GPU the ``/device:GPU:N`` planes hold
  the kernel events (they are used whenever they carry ``hlo_op``).
* Nested events (a ``while`` thunk around the kernels of its body) count their self time; the
  self time of control flow (``while``, ``conditional``, ``call``: events whose ``hlo_op`` is not
  a kernel of the inventory) is loop control.
* Calls are told apart by the ``run_id`` stat (else the trace is one call per ``calls``).
  Per kernel and call: launches, and two times: **busy**, the sum of its events' own durations
  (what the kernel itself cost), and **span**, the sum of the times from each launch to its
  completion (for an asynchronous thunk this includes waiting for a busy worker thread, so on a
  machine with few cores small kernels beside a large one look long). Statistics over calls are
  derived when the run is analysed, not here.
* Per call: the program's wall time, from the runtime's last execute event (``...Execute...``
  on a host line) before the call's first kernel to the end of its last kernel; the time during
  which at least one kernel runs; and the rest, named: dispatch (execute start to the first
  kernel), loop control, and the gaps between kernels (the runtime's scheduling and idle
  threads).

A trace with no matching event gives ``{"available": false, "reason": ...}`` (for example when
another profiler was already running).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["kernel_times", "xspace_text"]

_CONTROL_OPS = ("while", "conditional", "call")


@dataclass(frozen=True, slots=True)
class _Event:
    line: int
    name: str
    start: float  # ns
    end: float  # ns
    stats: Mapping[str, Any]

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass(slots=True)
class _Kernel:
    event: _Event
    op: str
    run: Any
    end: float
    self_ns: float = 0.0  # launch to completion, less nested kernels
    busy_ns: float = 0.0  # the event's own duration, less nested kernels


def _events(plane: Any, line_offset: int) -> tuple[list[_Event], int]:
    out: list[_Event] = []
    lines = list(plane.lines)
    for i, line in enumerate(lines):
        for e in line.events:
            start = float(e.start_ns)
            out.append(_Event(line_offset + i, str(e.name), start, start + float(e.duration_ns),
                              dict(e.stats)))
    return out, len(lines)


def _union(intervals: Iterable[tuple[float, float]]) -> float:
    total = 0.0
    current: tuple[float, float] | None = None
    for start, end in sorted(intervals):
        if current is None or start > current[1]:
            if current is not None:
                total += current[1] - current[0]
            current = (start, end)
        else:
            current = (current[0], max(current[1], end))
    if current is not None:
        total += current[1] - current[0]
    return total


def _module_matches(stat: Any, module: str | None) -> bool:
    if module is None:
        return True
    name = str(stat)
    return name == module or name.startswith(module + ".") or name.startswith(module + "(")


def _self_times(kernels: list[_Kernel]) -> None:
    """Self times of nested events on one line: launch to completion, and the event's own
    duration, each less the children's durations."""
    by_line: dict[int, list[_Kernel]] = defaultdict(list)
    for k in kernels:
        by_line[k.event.line].append(k)
    for items in by_line.values():
        items.sort(key=lambda k: (k.event.start, -k.event.end))
        stack: list[_Kernel] = []
        for k in items:
            k.self_ns = k.end - k.event.start
            k.busy_ns = k.event.duration
            while stack and stack[-1].event.end <= k.event.start:
                stack.pop()
            if stack and k.event.end <= stack[-1].event.end:
                stack[-1].self_ns -= k.event.duration
                stack[-1].busy_ns -= k.event.duration
            stack.append(k)
    for k in kernels:
        k.self_ns = max(0.0, k.self_ns)
        k.busy_ns = max(0.0, min(k.busy_ns, k.self_ns))


def _end_events(events: list[_Event]) -> dict[tuple[Any, str], list[_Event]]:
    """``end: NAME`` events by (flow id or None, NAME), in time order. Flow ids are reused
    between runs and thunks, so a match needs the name as well and starts no earlier."""
    out: dict[tuple[Any, str], list[_Event]] = defaultdict(list)
    for e in events:
        if e.name.startswith("end: "):
            out[(e.stats.get("_c"), e.name[5:])].append(e)
    for items in out.values():
        items.sort(key=lambda e: e.start)
    return out


def _completion(e: _Event, op: str, ends: dict[tuple[Any, str], list[_Event]],
                used: set[int]) -> _Event | None:
    for key in ((e.stats.get("_p"), op), (None, op)):
        for candidate in ends.get(key, []):
            if candidate.start >= e.start and id(candidate) not in used:
                return candidate
    return None


def kernel_times(
    profile: Any,
    *,
    module: str | None,
    kernels: Iterable[str] | None = None,
    calls: int = 1,
) -> dict[str, Any]:
    """Per-kernel times from a ProfileData (see the module docstring).

    ``module``: the ``hlo_module`` to keep (``jit_<name>``; None keeps every module);
    ``kernels``: the inventory's kernel names (other matched ops are control flow);
    ``calls``: calls traced, when the events carry no ``run_id``.

    Returns the ``kernel_timing`` record of results.json (samples, no statistics)::

        {"available": true, "source": "host" | "device",
         "calls": [{"program_s", "busy_s", "dispatch_s", "loop_control_s", "gaps_s"}],
         "kernels": [{"name", "launches": [...], "busy_s": [...], "span_s": [...]}],
         "unmatched": [op names], "notes"}

    one entry per traced call (seconds per call); a kernel's lists hold one sample per call in
    which it ran: ``busy_s`` the sum of its events' own durations, ``span_s`` of the times from
    each launch to its completion.
    """
    planes = list(getattr(profile, "planes", []))
    device = [p for p in planes if str(p.name).startswith("/device:")]
    host = [p for p in planes if str(p.name).startswith("/host:")]
    all_events: list[_Event] = []
    offset = 0
    device_events: list[_Event] = []
    for plane in device:
        events, count = _events(plane, offset)
        device_events += events
        offset += count
    host_events: list[_Event] = []
    for plane in host:
        events, count = _events(plane, offset)
        host_events += events
        offset += count
    all_events = device_events + host_events

    def matched(events: list[_Event]) -> list[_Event]:
        return [e for e in events if "hlo_op" in e.stats
                and _module_matches(e.stats.get("hlo_module"), module)]

    source = "device"
    found = matched(device_events)
    if not found:
        source, found = "host", matched(host_events)
    if not found:
        modules = sorted({str(e.stats["hlo_module"]) for e in all_events
                          if "hlo_module" in e.stats})
        why = "the trace holds no kernel event"
        if modules:
            why += f" of {module} (modules seen: {', '.join(modules[:5])})"
        else:
            why += " (another profiler may have been running)"
        return {"available": False, "reason": why}

    names = set(kernels) if kernels is not None else None
    ends = _end_events(all_events if source == "host" else [])
    used: set[int] = set()
    items: list[_Kernel] = []
    for e in sorted(found, key=lambda e: e.start):
        end = e.end
        done = _completion(e, str(e.stats["hlo_op"]), ends, used)
        if done is not None:
            used.add(id(done))
            end = max(end, done.end)
        items.append(_Kernel(e, str(e.stats["hlo_op"]), e.stats.get("run_id"), end))
    _self_times(items)

    def is_kernel(op: str) -> bool:
        if names is not None:
            return op in names
        return not op.startswith(_CONTROL_OPS)

    runs: dict[Any, list[_Kernel]] = defaultdict(list)
    if all(k.run is not None for k in items):
        for k in items:
            runs[k.run].append(k)
    else:
        runs[None] = items
    ordered_runs = sorted(runs.values(), key=lambda ks: min(k.event.start for k in ks))
    per_call_div = calls if len(ordered_runs) == 1 and calls > 1 else 1
    executes = sorted(
        (e for e in host_events if "Execute" in e.name and "hlo_op" not in e.stats),
        key=lambda e: e.start,
    )

    span: dict[str, list[float]] = defaultdict(list)
    own: dict[str, list[float]] = defaultdict(list)
    launches: dict[str, list[float]] = defaultdict(list)
    per_call: list[dict[str, float]] = []
    unmatched: set[str] = set()
    previous_end = float("-inf")
    ns = 1e-9 / per_call_div
    for run in ordered_runs:
        leaves = [k for k in run if is_kernel(k.op)]
        unmatched |= {k.op for k in run if not is_kernel(k.op)}
        if not leaves:
            continue
        first = min(k.event.start for k in run)  # control flow around kernels included
        last = max(k.end for k in run)
        # The call starts at the runtime's last execute event before its first kernel (and
        # after the previous call's kernels): the kernels may run on another thread.
        start = first
        before = [e for e in executes if previous_end <= e.start <= first]
        if before:
            start = before[-1].start
        previous_end = last
        wall = max(last - start, 1e-9)
        union = _union((k.event.start, k.end) for k in leaves)
        loop_control = min(sum(k.self_ns for k in run if not is_kernel(k.op)),
                           max(0.0, wall - union))
        spans: dict[str, float] = defaultdict(float)
        busy: dict[str, float] = defaultdict(float)
        counts: dict[str, int] = defaultdict(int)
        for k in leaves:
            spans[k.op] += k.self_ns
            busy[k.op] += k.busy_ns
            counts[k.op] += 1
        for op in spans:
            span[op].append(round(spans[op] * ns, 12))
            own[op].append(round(busy[op] * ns, 12))
            launches[op].append(counts[op] / per_call_div)
        per_call.append({
            "program_s": wall * ns,
            "busy_s": union * ns,
            "dispatch_s": (first - start) * ns,
            "loop_control_s": loop_control * ns,
            "gaps_s": max(0.0, wall - union - (first - start) - loop_control) * ns,
        })
    if not per_call:
        return {"available": False,
                "reason": "the trace's events match no kernel of the compiled program"}
    order = sorted(span, key=lambda op: (-statistics.median(own[op]), op))
    rows = [{"name": op, "launches": launches[op], "busy_s": own[op], "span_s": span[op]}
            for op in order]
    notes = []
    if len(per_call) < len(ordered_runs):
        notes.append(f"{len(ordered_runs) - len(per_call)} traced call(s) held no kernel event")
    if per_call_div > 1:
        notes.append(f"the trace's events carry no run id: its {calls} calls are one sample, "
                     "divided by the number of calls")
    return {
        "available": True,
        "source": source,
        "calls": per_call,
        "calls_per_sample": per_call_div,
        "kernels": rows,
        "unmatched": sorted(unmatched),
        "notes": notes,
    }


def _stat_text(key: int, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        text = str(value).replace("\\", "\\\\").replace('"', '\\"')
        return f'stats {{ metadata_id: {key} str_value: "{text}" }}'
    if isinstance(value, float):
        return f"stats {{ metadata_id: {key} double_value: {value!r} }}"
    if value < 0 or value >= 2**63:
        return f"stats {{ metadata_id: {key} int64_value: {value} }}"
    return f"stats {{ metadata_id: {key} uint64_value: {value} }}"


def xspace_text(planes: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]]) -> str:
    """A text-proto XSpace (``ProfileData.from_text_proto``) from plain data:
    ``{plane name: {line name: [{"name", "start_ns", "duration_ns", "stats": {...}}]}}``.
    For recorded and hand-made trace fixtures."""
    out: list[str] = []
    for p_id, (plane, lines) in enumerate(planes.items(), 1):
        events: dict[str, int] = {}
        stats: dict[str, int] = {}
        body: list[str] = []
        for l_id, (line, items) in enumerate(lines.items(), 1):
            rows = []
            for item in items:
                meta = events.setdefault(str(item["name"]), len(events) + 1)
                stat_text = " ".join(
                    _stat_text(stats.setdefault(k, len(stats) + 1), v)
                    for k, v in (item.get("stats") or {}).items()
                )
                offset = round(float(item["start_ns"]) * 1000)
                duration = round(float(item["duration_ns"]) * 1000)
                rows.append(f"    events {{ metadata_id: {meta} offset_ps: {offset} "
                            f"duration_ps: {duration} {stat_text} }}")
            body.append(f'  lines {{ id: {l_id} name: "{line}" timestamp_ns: 0\n'
                        + "\n".join(rows) + "\n  }")
        body += [f'  event_metadata {{ key: {i} value {{ id: {i} name: "{n}" }} }}'
                 for n, i in events.items()]
        body += [f'  stat_metadata {{ key: {i} value {{ id: {i} name: "{n}" }} }}'
                 for n, i in stats.items()]
        out.append(f'planes {{\n  id: {p_id}\n  name: "{plane}"\n' + "\n".join(body) + "\n}")
    return "\n".join(out) + "\n"
