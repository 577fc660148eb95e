"""Which kernel events of a trace belong to which device, program and step (pure: no jax).

A trace holds the kernels of every program that ran while it was recorded, on every device of
its host. Before :func:`roofline_report.traces.events.kernel_times` times one program's kernels,
this module sorts the events:

* **Lanes.** One lane per device: a GPU's plane ``/device:GPU:N`` (kernel events carry the stats
  ``hlo_op`` and ``hlo_module``); a TPU's plane ``/device:TPU:N``, whose line ``XLA Ops`` holds
  one event per HLO instruction and whose line ``XLA Modules`` one per program execution (the
  op events are given ``hlo_op``, the kernel their instruction belongs to, ``program_id``,
  ``hlo_module`` and ``run_id`` from their metadata and the module execution around them:
  :mod:`roofline_report.traces.tpu_ops`; the lane keeps the executions, whose spans are the
  program's calls); on a CPU the thunk events of ``/host:CPU``, one lane per
  ``device_ordinal`` (emulated devices run on the same threads).
* **Programs.** Module names are compared without the ``(program id)`` suffix the metadata plane
  gives them (``jit_train_step(58)`` is ``jit_train_step``); where events carry ``program_id``
  they are kept to the chosen program's ids.
* **Steps.** Events with the stat ``step_num`` (``jax.profiler.StepTraceAnnotation``, or any
  ``TraceAnnotation`` given ``step_num=``) mark steps; a TPU's ``Steps`` line marks them in
  the device's own time, and stands for the host's markers on its lane. A kernel belongs to the
  step whose marker spans its start, and the step number stands in for the call (``run_id``),
  so times are per step. Without markers (or when most kernels fall outside them: on a GPU the
  device runs behind the host's markers), times are per call: by ``run_id`` where the events
  carry it, else the calls are counted from the launches and the inventory's launches per
  call. A TPU without a ``Steps`` line is timed per call of its program (its module events),
  never by the host's markers: they are in the host's clock, which on a TPU's trace was seen
  hundreds of µs off the device's, a call's ops straddling two markers.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from roofline_report.ingest.execute_starts import ExecuteLine, execute_line
from roofline_report.ingest.thunk_ends import NO_ENDS, ThunkEndLine, ThunkEnds, host_thunk_ends
from roofline_report.quantiles import median
from roofline_report.traces.kernel_events import LaneKernels, module_base
from roofline_report.traces.kernel_names import by_symbol, symbol
from roofline_report.traces.launches import unnested
from roofline_report.traces.tpu_ops import NO_EXECUTIONS, Executions, tpu_ops
from roofline_report.traces.xspace import Event, EventColumns, Line, Plane, XSpace, events_where

__all__ = [
    "KernelLine",
    "Lane",
    "ModuleSummary",
    "Step",
    "execute_lines",
    "lanes",
    "module_base",
    "modules",
    "profile_for",
    "steps",
]

GPU_PREFIX = "/device:GPU:"
_TPU_PLANE = re.compile(r"^/device:TPU:(\d+)$")
HOST_CPU = "/host:CPU"
STEP_STAT = "step_num"
# The stats read of every kernel event (by the programs' summary, the program's view, the
# matching of thunk ends and the kernel timing): read together, a line's stats gathered once.
_READ = ("hlo_op", "hlo_module", "program_id", "run_id", "_p")
# Kernels outside every step marker above this share: the markers do not bound the kernels
# (a device behind its host), and times are taken per call instead.
OUTSIDE_STEPS_LIMIT = 0.5


@dataclass(frozen=True, slots=True)
class Lane:
    """One device's kernel events in time order, as columns (:class:`LaneKernels`: each
    event's line, start and duration, and its stats read by name, ``hlo_module`` without its
    suffix), and whether they lie on a device plane (GPU, TPU) or the host's (CPU)."""

    device: str  # "GPU:0", "TPU:3", "CPU:0"
    on_device: bool
    kernels: LaneKernels
    ends: ThunkEnds = NO_ENDS  # the ``end:`` events of this device's asynchronous thunks
    # A TPU's program executions (its ``XLA Modules`` events), the steps its ``Steps`` line
    # marks in the device's time, and its op events outside every execution (left out).
    executions: Executions = NO_EXECUTIONS
    steps: tuple[Step, ...] = ()
    outside_executions: int = 0

    @property
    def lines(self) -> np.ndarray:
        """Each kernel event's line (events nest only within a line)."""
        return self.kernels.line


@dataclass(frozen=True, slots=True)
class ModuleSummary:
    """A program seen in the events: its name, program ids, kernel events and their summed
    duration (seconds, the whole trace, every lane)."""

    name: str
    program_ids: tuple[int, ...]
    events: int
    seconds: float


class Step(NamedTuple):
    """A step marker's span. A named tuple, not a frozen dataclass: a long run has one per
    step, and a named tuple builds in about two thirds of a frozen dataclass's time."""

    number: int
    start: float  # ns
    end: float  # ns

    @property
    def seconds(self) -> float:
        return (self.end - self.start) * 1e-9


def _tpu_lane(space: XSpace, plane: Plane, first_line: int, device: str) -> Lane | None:
    """A TPU plane's op events as a lane (:func:`~roofline_report.traces.tpu_ops.tpu_ops`:
    each given its kernel, module, program and call), with the plane's module executions and
    step marks; None where it has no op event in a module execution."""
    names = {program: module_base(name) for program, (name, _) in space.hlo_protos().items()}
    ops = tpu_ops(plane.lines, plane.event_metadata, names)
    if ops is None or not len(ops.rows):
        return None
    kernels = LaneKernels.of_lines([(first_line + ops.line, ops.events, ops.rows)])
    kernels.give(ops.given)
    return Lane(device, True, kernels.in_time_order(), executions=ops.executions,
                steps=tuple(_steps_of(*ops.steps)), outside_executions=ops.outside)


def _plane_kernels(plane: Plane, first_line: int
                   ) -> list[tuple[int, EventColumns | Sequence[Event], np.ndarray]]:
    """Each line of the plane (its index in the trace) with the rows of its events that hold
    ``hlo_op``: read from the reader's columns, no event built."""
    out: list[tuple[int, EventColumns | Sequence[Event], np.ndarray]] = []
    for i, line in enumerate(plane.lines):
        events = line.events
        if isinstance(events, EventColumns):
            rows = np.flatnonzero(events.mask(stat="hlo_op"))
        else:
            rows = np.array([j for j, e in enumerate(events) if "hlo_op" in e.stats],
                            dtype=np.int64)
        if len(rows):
            out.append((first_line + i, events, rows))
    return out


def lanes(space: XSpace) -> list[Lane]:
    """The devices of one host's trace with their kernel events (see the module docstring);
    device planes first, the host's thunks when no device plane has kernel events."""
    out: list[Lane] = []
    first = 0
    for plane in space.planes:
        if plane.name.startswith(GPU_PREFIX):
            parts = _plane_kernels(plane, first)
            if parts:
                on_plane = LaneKernels.of_lines(parts)
                on_plane.read(_READ)
                out.append(Lane(plane.name.removeprefix("/device:"), True,
                                on_plane.in_time_order()))
        elif (m := _TPU_PLANE.match(plane.name)) is not None:
            lane = _tpu_lane(space, plane, first, f"TPU:{m.group(1)}")
            if lane is not None:
                out.append(lane)
        first += len(plane.lines)
    if out:
        return sorted(out, key=lambda lane: _device_key(lane.device))
    parts = []
    first = 0
    for plane in space.planes:
        if plane.name == HOST_CPU:
            parts += _plane_kernels(plane, first)
        first += len(plane.lines)
    every = LaneKernels.of_lines(parts)
    every.read((*_READ, "device_ordinal"))
    ordinals = [o if isinstance(o, int) else 0 for o in every.stat("device_ordinal")]
    codes = {d: i for i, d in enumerate(dict.fromkeys(ordinals))}
    code = np.fromiter(map(codes.__getitem__, ordinals), dtype=np.int64, count=len(ordinals))
    by_device = {d: np.flatnonzero(code == i) for d, i in codes.items()}
    # Each device's events in time order, as each lane keeps them.
    kernels = {device: every.taken(at).in_time_order() for device, at in by_device.items()}
    del every
    owned = _owned_ends(space, kernels)
    return [Lane(f"CPU:{d}", False, found, owned.get(d, NO_ENDS))
            for d, found in sorted(kernels.items())]


def _owned_ends(space: XSpace, by_device: Mapping[int, LaneKernels]) -> dict[int, ThunkEnds]:
    """Each ``end: NAME`` event of the host's thunks, given to the device whose thunk NAME (with
    the same flow id, where the event has one) started last before it. Emulated devices run the
    same thunks on the same threads, and flow ids repeat between calls, so an end event is
    matched backwards to the launch it completes; a synchronous thunk gets none."""
    if len(by_device) <= 1:
        return _one_device_ends(space, by_device)
    launches: dict[tuple[Any, str], list[tuple[float, int]]] = defaultdict(list)
    for device, found in by_device.items():
        for flow, op, at in zip(found.stat("_p"), found.stat("hlo_op"), found.start_ns.tolist(),
                                strict=True):
            op = str(op)
            launches[(flow, op)].append((at, device))
            launches[(None, op)].append((at, device))
    # Per key, the launches' starts and devices in (start, device) order: the last launch
    # starting no later than an end event is found by bisecting the starts alone.
    starts: dict[tuple[Any, str], list[float]] = {}
    devices: dict[tuple[Any, str], list[int]] = {}
    for key, items in launches.items():
        items.sort()
        starts[key] = [s for s, _ in items]
        devices[key] = [d for _, d in items]
    owned: dict[int, list[int]] = defaultdict(list)
    none: list[float] = []
    ends = host_thunk_ends(space, HOST_CPU)
    for j, (key, at) in enumerate(zip(ends.keys(), ends.starts, strict=True)):
        i = bisect.bisect_right(starts.get(key, none), at) - 1
        if i >= 0:
            owned[devices[key][i]].append(j)
    return {device: ends.picked(indices) for device, indices in owned.items()}


def _one_device_ends(space: XSpace, by_device: Mapping[int, LaneKernels]
                     ) -> dict[int, ThunkEnds]:
    """:func:`_owned_ends` of a host with one device (or none): an end event is the device's
    where some launch of its thunk (with its flow id, where it has one) started no later."""
    if not by_device:
        return {}
    ((device, found),) = by_device.items()
    ends = host_thunk_ends(space, HOST_CPU)
    kept = _launched_before(found.stat("_p"), [str(op) for op in found.stat("hlo_op")],
                            found.start_ns.tolist(), ends)
    if not kept.any():
        return {}
    return {device: ends if kept.all() else ends.picked(np.flatnonzero(kept).tolist())}


_ID_TYPES = frozenset({int, type(None)})


def _flow_ids(flows: list[Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """(which have one, the flow ids as int64) of a list of flow ids that are all integers of
    64 bits or None; None for any other list."""
    types = set(map(type, flows))
    if not types <= _ID_TYPES:
        return None
    try:
        if type(None) not in types:  # every one has a flow id
            return np.ones(len(flows), dtype=bool), np.array(flows, dtype=np.int64)
        values = np.array(flows, dtype=object)
        flowed = np.fromiter((f is not None for f in flows), dtype=bool, count=len(flows))
        return flowed, values[flowed].astype(np.int64)
    except OverflowError:
        return None


def _launched_before(flows: list[Any], ops: list[str], starts: list[float],
                     ends: ThunkEnds) -> np.ndarray:
    """Per end event: whether some launch of its thunk with its flow id (any launch of the
    thunk, for an end without one) started no later than it."""
    launch_ids, end_ids = _flow_ids(flows), _flow_ids(ends.flows)
    if launch_ids is None or end_ids is None:
        # Flow ids of other types: each key looked up as it is.
        first: dict[tuple[Any, str], float] = {}
        for flow, op, at in zip(flows, ops, starts, strict=True):
            for key in ((flow, op), (None, op)):
                if at < first.get(key, math.inf):
                    first[key] = at
        return np.array([first.get(key, math.inf) <= at
                         for key, at in zip(ends.keys(), ends.starts, strict=True)], dtype=bool)
    names = {op: i for i, op in enumerate(dict.fromkeys([*ops, *ends.ops]))}
    launch_op = np.fromiter(map(names.__getitem__, ops), dtype=np.int64, count=len(ops))
    end_op = np.fromiter(map(names.__getitem__, ends.ops), dtype=np.int64, count=len(ends))
    launched = np.asarray(starts, dtype=np.float64)
    # Any launch of the thunk: for an end without a flow id.
    by_op = np.full(len(names), np.inf)
    np.minimum.at(by_op, launch_op, launched)
    limit = by_op[end_op]
    (launch_flowed, launch_flow), (end_flowed, end_flow) = launch_ids, end_ids
    if end_flowed.any():
        # Each (flow id, thunk) key numbered: rows sorted by flow id, then thunk.
        ids = np.concatenate([launch_flow, end_flow])
        thunks = np.concatenate([launch_op[launch_flowed], end_op[end_flowed]])
        order = np.lexsort((thunks, ids))
        new = np.ones(len(order), dtype=bool)
        new[1:] = (np.diff(ids[order]) != 0) | (np.diff(thunks[order]) != 0)
        code = np.empty(len(order), dtype=np.int64)
        code[order] = np.cumsum(new) - 1
        by_code = np.full(int(code.max()) + 1, np.inf)
        launch_code = code[:len(launch_flow)]
        np.minimum.at(by_code, launch_code, launched[launch_flowed])
        limit[end_flowed] = by_code[code[len(launch_code):]]
    return limit <= np.asarray(ends.starts, dtype=np.float64)


def _device_key(device: str) -> tuple[str, int]:
    kind, _, index = device.partition(":")
    return kind, int(index) if index.isdigit() else 0


def _own_durations(lane: Lane) -> np.ndarray:
    """Each kernel event's duration, on a TPU less the events nested in it (a ``while`` op's
    event encloses its body's ops: its own time is loop control, its body's counted once)."""
    k = lane.kernels
    took = k.duration_ns
    if not lane.device.startswith("TPU") or unnested(k.start_ns, k.start_ns + took):
        return took
    own = took.copy()
    ends = k.start_ns + took
    open_events: list[int] = []  # the events enclosing the one at hand, innermost last
    for i, (start, end, d) in enumerate(zip(k.start_ns.tolist(), ends.tolist(), took.tolist(),
                                            strict=True)):
        while open_events and ends[open_events[-1]] <= start:
            open_events.pop()
        if open_events and end <= ends[open_events[-1]]:
            own[open_events[-1]] -= d
        open_events.append(i)
    kept: np.ndarray = np.maximum(own, 0.0)
    return kept


def modules(all_lanes: Iterable[Lane]) -> list[ModuleSummary]:
    """Every program seen in the lanes' events, the most kernel time first (a TPU's nested op
    events counted once: :func:`_own_durations`)."""
    every = list(all_lanes)
    named = [m if type(m) is str else str(m) for lane in every for m in lane.kernels.modules()]
    codes = {name: i for i, name in enumerate(dict.fromkeys(named))}
    code = np.fromiter(map(codes.__getitem__, named), dtype=np.int64, count=len(named))
    took = np.concatenate([_own_durations(lane) for lane in every] or [np.zeros(0)])
    # Each module's durations summed in event order, one addition after another (as a loop
    # over the events adds them: np.bincount adds its weights in order).
    sums = np.bincount(code, weights=took * 1e-9, minlength=len(codes)).tolist()
    counts = np.bincount(code, minlength=len(codes)).tolist()
    names = list(codes)
    programs: dict[str, set[int]] = defaultdict(set)
    every_program = (p for lane in every for p in lane.kernels.programs())
    for i, program in set(zip(code.tolist(), every_program, strict=True)):
        if isinstance(program, int):
            programs[names[i]].add(program)
    seconds = dict(zip(names, sums, strict=True))
    events = dict(zip(names, counts, strict=True))
    out = [ModuleSummary(name, tuple(sorted(programs[name])), events[name], seconds[name])
           for name in events]
    return sorted(out, key=lambda m: (-m.seconds, m.name))


def _step_marks(events: Sequence[Event]) -> tuple[list[Any], list[float], list[float]]:
    """The step number, start and duration of each event of a line with a step number, in
    line order, as columns: from the reader's columns without building the events (a long
    run's Python thread holds one marker per step among millions of events), or from each
    event of a list."""
    if isinstance(events, EventColumns):
        _, starts, durations, numbers = events.columns(
            np.flatnonzero(events.mask(stat=STEP_STAT)), STEP_STAT)
        return numbers, starts, durations
    marked = events_where(events, stat=STEP_STAT)
    return ([e.stats[STEP_STAT] for e in marked], [e.start_ns for e in marked],
            [e.duration_ns for e in marked])


def steps(space: XSpace) -> list[Step]:
    """The step markers of a host's trace (events with ``step_num`` on a host plane), one per
    step number (the outermost span where a number recurs), in time order (markers that start
    together in the order their numbers first came)."""
    numbers: list[Any] = []
    starts: list[float] = []
    took: list[float] = []
    for plane in space.planes:
        if not plane.name.startswith("/host:"):
            continue
        for line in plane.lines:
            line_numbers, line_starts, line_took = _step_marks(line.events)
            numbers += line_numbers
            starts += line_starts
            took += line_took
    return _steps_of(numbers, starts, took)


def _steps_of(numbers: Sequence[Any], starts: Sequence[float], took: Sequence[float]
              ) -> list[Step]:
    """:func:`steps` of marks given as columns (step number, start, duration), as arrays."""
    valid = [isinstance(n, int) and not isinstance(n, bool) and d > 0
             for n, d in zip(numbers, took, strict=True)]
    try:
        number = np.array([n for n, v in zip(numbers, valid, strict=True) if v], dtype=np.int64)
    except OverflowError:  # a step number past 64 bits: one marker at a time
        return _steps_one_by_one(numbers, starts, took)
    keep = np.array(valid, dtype=bool)
    start = np.array(starts, dtype=np.float64)[keep]
    end = start + np.array(took, dtype=np.float64)[keep]
    if not len(number):
        return []
    # Per number: the earliest start and the latest end of its markers, and where it first came.
    distinct, first, which = np.unique(number, return_index=True, return_inverse=True)
    low = np.full(len(distinct), np.inf)
    high = np.full(len(distinct), -np.inf)
    np.minimum.at(low, which, start)
    np.maximum.at(high, which, end)
    order = np.lexsort((first, low))  # by start, then by first coming
    # Built as tuples are (Step's own __new__ is a Python function: twice the time).
    make = tuple.__new__
    return [make(Step, fields) for fields in zip(distinct[order].tolist(), low[order].tolist(),
                                                 high[order].tolist(), strict=True)]


def _steps_one_by_one(numbers: Sequence[Any], starts: Sequence[float], took: Sequence[float]
                      ) -> list[Step]:
    """:func:`steps` of marks given as columns, one marker at a time."""
    spans: dict[int, tuple[float, float]] = {}
    for number, at, duration in zip(numbers, starts, took, strict=True):
        if not isinstance(number, int) or isinstance(number, bool) or duration <= 0:
            continue
        start, end = at, at + duration
        if number in spans:
            start, end = min(start, spans[number][0]), max(end, spans[number][1])
        spans[number] = (start, end)
    return sorted((Step(n, s, e) for n, (s, e) in spans.items()), key=lambda s: s.start)


@dataclass(frozen=True, slots=True)
class KernelLine:
    """A line of a lane's kernel events as :func:`kernel_times` reads them: ``runs``, where
    given, holds each event's run (its step, or None where nothing numbers the calls), which
    stands for the event's ``run_id`` stat; so the events are the lane's own, not copies."""

    id: int
    name: str
    events: Sequence[Event]
    runs: Sequence[Any] | None = None


@dataclass(frozen=True, slots=True)
class ExecutionLine:
    """A TPU program's executions (its module events) as :func:`kernel_times` reads them:
    their starts and ends in time order (``program_spans``), which bound its calls: a call's
    time is its execution's, from the module event's start to its end."""

    id: int
    name: str
    program_spans: tuple[list[float], list[float]]

    @property
    def events(self) -> list[Event]:
        return []


@dataclass
class _PlaneView:
    name: str
    lines: Sequence[Line | KernelLine | ExecuteLine | ThunkEndLine | ExecutionLine]


@dataclass
class ProfileView:
    """A ProfileData-like view of the events :func:`kernel_times` needs for one lane and
    program, with how calls were told apart."""

    planes: list[_PlaneView]
    per: str  # "step" or "call"
    calls: int  # calls to divide by when the events carry no run id (else 1)
    outside_steps: int = 0  # kernel events outside every step marker (left out)
    notes: list[str] = field(default_factory=list)
    markers: Sequence[Step] = ()  # the step markers the times are per, where per step


def execute_lines(space: XSpace) -> list[ExecuteLine]:
    """The runtime's execute events of a host's trace (a call's start), by host line, as their
    starts: the same for every lane of the host, so read once per host."""
    out: list[ExecuteLine] = []
    for plane in space.planes:
        if not plane.name.startswith("/host:"):
            continue
        for line in plane.lines:
            kept = execute_line(line)
            if kept is not None:
                out.append(kept)
    return out


def _support_events(executes: Sequence[ExecuteLine], lane: Lane
                    ) -> list[Line | ExecuteLine | ThunkEndLine]:
    """The host events kernel_times reads besides kernels: the runtime's execute events and the
    ``end:`` events of the lane's asynchronous thunks."""
    out: list[Line | ExecuteLine | ThunkEndLine] = list(executes)
    if lane.ends:
        out.append(ThunkEndLine(-1, "thunk completions", lane.ends))
    return out


def _inferred_calls(ops: Sequence[Any], names: Sequence[str],
                    trips: Mapping[str, int] | None) -> int:
    """How many calls the events hold when nothing numbers them: per kernel (``ops``: each
    event's ``hlo_op``; where that names no kernel of the inventory, as in a command buffer,
    the kernel its own name in ``names`` names), its launches over its launches per call (the
    inventory's trips, else 1); the median of those."""
    if trips is not None:
        of_symbol = by_symbol(trips)
        ops = [op if op in trips else of_symbol.get(symbol(name), op)
               for op, name in zip(map(str, ops), names, strict=True)]
    counts = Counter(str(op) for op in ops)
    ratios = [n / max(1, (trips or {}).get(op, 1)) for op, n in counts.items()
              if trips is None or op in trips]
    if not ratios:
        return 1
    return max(1, math.floor((median(ratios) or 0.0) + 0.5))


def profile_for(space: XSpace, lane: Lane, module: str, program_ids: Sequence[int],
                *, markers: Sequence[Step], trips: Mapping[str, int] | None,
                executes: Sequence[ExecuteLine] | None = None) -> ProfileView:
    """The events of ``module`` on ``lane`` as kernel_times reads them, per step where the
    markers bound the kernels, else per call (see the module docstring). A TPU lane's own
    steps (its ``Steps`` line) stand for the host's ``markers``, and its program's executions
    bound the calls. ``executes``: the host's :func:`execute_lines`, when already read for
    another lane."""
    notes: list[str] = []
    if len(lane.executions) and not lane.steps and markers:
        # A TPU without a Steps line: the host's markers are in the host's clock, which on a
        # TPU's trace can be hundreds of µs off the device's (a call's ops straddling two
        # markers); its calls are its program's executions.
        notes.append("the TPU's op events are timed per call of the program (its module "
                     "events): the host's step markers do not bound them in the device's time "
                     "and the device marks no steps of its own")
    markers = lane.steps if len(lane.executions) else markers
    wanted = set(program_ids)
    default = min(wanted) if wanted else None  # an event without a program id: kept
    every = lane.kernels
    # The indices of the lane's kernels kept (read from its columns, no event built): its
    # module's, of a program wanted (an event without a program id counts as the default).
    ours = every.as_array("modules") == module
    if wanted:
        programs = every.as_array("programs")
        absent = np.fromiter((q is None for q in every.programs()), dtype=bool,
                             count=len(every))
        if absent.any():
            programs = programs.copy()
            programs[absent] = default
        ours &= np.logical_or.reduce([programs == w for w in wanted])
    kept = np.flatnonzero(ours).tolist()
    per = "call"
    outside = 0
    # Each kernel's run, where the view gives it (KernelLine.runs): its step, or None where
    # the calls are counted; none (an empty list) where each kernel's run is its run_id stat.
    runs: list[Any] = []
    if markers and kept:
        starts = np.array([s.start for s in markers], dtype=np.float64)
        ends = np.array([s.end for s in markers], dtype=np.float64)
        labels = [f"step {s.number}" for s in markers]  # one string per step, shared
        at = every.start_ns[kept]
        # The step whose marker starts last at or before each kernel's start (a bisection).
        step = np.searchsorted(starts, at, side="right") - 1
        inside = (step >= 0) & (at < ends[np.maximum(step, 0)])
        stepped = np.asarray(kept, dtype=np.int64)[inside].tolist()
        runs = [labels[i] for i in step[inside].tolist()]
        outside = len(kept) - len(stepped)
        if stepped and outside <= OUTSIDE_STEPS_LIMIT * len(kept):
            kept, per = stepped, "step"
        else:
            notes.append(f"{outside} of {len(kept)} kernel events lie outside the step "
                         "markers, so times are per call of the program, not per step")
            outside = 0
            runs = []
    calls = 1
    if per == "call" and kept and not bool(every.has("run_id")[kept].all()):
        ops = every.stat("hlo_op")
        names = every.names()
        calls = _inferred_calls([ops[j] for j in kept], [names[j] for j in kept], trips)
        runs = [None] * len(kept)
        notes.append(f"the events do not number the calls: {calls} call(s) counted from the "
                     "launches of each kernel")
    # The kept kernels by line, in line order (each line's in the order kept), with their runs.
    at = np.asarray(kept, dtype=np.int64)
    line_of = every.line[at]
    by_line = np.argsort(line_of, kind="stable")
    cuts = np.flatnonzero(np.diff(line_of[by_line])) + 1
    kernel_lines = []
    for rows in np.split(by_line, cuts) if len(at) else []:
        line = int(line_of[rows[0]])
        kernel_lines.append(KernelLine(line, f"kernels {line}", every.taken(at[rows]),
                                       [runs[i] for i in rows.tolist()] if runs else None))
    support = _support_events(execute_lines(space) if executes is None else executes, lane)
    device_lines: list[KernelLine | ExecutionLine] = list(kernel_lines)
    if len(lane.executions):
        starts, ends = lane.executions.of(module, sorted(wanted))
        device_lines.append(ExecutionLine(-2, f"executions of {module}",
                                          (starts.tolist(), ends.tolist())))
        if lane.outside_executions:
            notes.append(f"{lane.outside_executions} op event(s) of {lane.device} lie outside "
                         "every program execution (the trace began or ended during a call) "
                         "and were left out")
    planes = ([_PlaneView(f"/device:{lane.device}", device_lines),
               _PlaneView("/host:", support)]
              if lane.on_device else [_PlaneView(HOST_CPU, [*kernel_lines, *support])])
    return ProfileView(planes, per, calls, outside, notes, markers if per == "step" else ())
