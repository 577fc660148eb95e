"""A TPU's op events matched to their instructions, programs and calls (pure: no jax).

``jax.profiler.trace`` on a TPU keeps each chip's events on the plane ``/device:TPU:N``
(read off real TPU v5e traces, jax 0.10.2):

* ``XLA Ops``: one event per HLO instruction executed. The event's metadata names the
  instruction twice: its name is the instruction's whole HLO text (``%fusion.197 = (f32[8,64]
  ...) fusion(...), kind=kLoop, calls=...``), its display name the instruction's name
  (``fusion.197``); the metadata's stats say the instruction's ``program_id`` and
  ``hlo_category``, its flops and bytes. The event itself holds only its device offset and
  duration: no ``hlo_op`` or ``hlo_module`` stat. A ``while`` op's event encloses the events of
  its body's ops (its self time is loop control). An asynchronous op shows here as two events
  of nanoseconds, its start and its done (the done lasts as long as the core waits for it).
* ``XLA Modules``: one event per program execution, named ``jit_train_step(1524...)`` (the
  program id after the name), with its ``run_id``.
* ``Async XLA Ops``: one event per asynchronous op (a copy, a slice, a collective) from its
  start to its done, its metadata the start's, its ``hlo_op`` stat the done's name: time the
  copy ran beside the ops, not time of the core's.
* ``Steps``: one event per step, named by its number, in the device's time (from a step's first
  module to the next's: host gaps included).

``jax.profiler.ProfileData`` gives only the events' own stats and names, so through it a TPU
trace shows HLO texts and nothing else; the project's reader
(:mod:`roofline_report.traces.xspace`) keeps the metadata's display names and stats.

:func:`tpu_ops` reads a plane as columns, no event object built. Each op event gets:

* ``instruction``: its display name; else the name at the head of its HLO text; else its name
  (as hand-made traces name them);
* ``hlo_op``, the kernel it belongs to: the instruction itself, or, for a ``-done`` op, the
  start it completes (its HLO text's operand, else the pairing of the ``Async XLA Ops`` line),
  since the kernel inventory counts a start and its done as one kernel, the start;
* ``program_id``: its metadata's, else that of the module execution around it;
* ``hlo_module``: that program's module name without the suffix (``jit_train_step``);
* ``run_id``: the module execution's (one per call).

Op events outside every module execution (a trace that began or ended mid-call) are left out
and counted; a plane without an ``XLA Modules`` line keeps every op event, without a program or
call. :func:`op_line` tells the lines of op events (the device timeline counts those, not the
modules and steps that span everything).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline_report.traces.event_columns import Event, EventColumns
from roofline_report.traces.kernel_events import module_base, program_suffix
from roofline_report.traces.launches import DONE_STAT

__all__ = ["ASYNC_LINE", "MODULES_LINE", "OPS_LINE", "STEPS_LINE", "Executions", "TpuOps",
           "device_clock", "done_operand", "instruction_name", "op_line", "tpu_ops"]

OPS_LINE = "XLA Ops"
ASYNC_LINE = "Async XLA Ops"
MODULES_LINE = "XLA Modules"
STEPS_LINE = "Steps"
# The stats given to each op event kept (besides its own): DONE_STAT to the done of an
# asynchronous op whose start is another op event (its own instruction's name).
GIVEN = ("hlo_op", "hlo_module", "program_id", "run_id", DONE_STAT)
DEVICE_OFFSET, DEVICE_DURATION = "device_offset_ps", "device_duration_ps"

_HEAD = re.compile(r"^\s*%?([^\s=%]+)\s*=\s")  # the instruction's name before " = "
# A done op's opcode (after a space, as an opcode follows its shape) and its first operand.
_DONE = re.compile(r"\s([a-z][a-z0-9-]*-done)\([^%]*%([^\s,)]+)")


def op_line(name: str) -> bool:
    """Whether a TPU plane's line holds op events (``XLA Ops``, ``Async XLA Ops``, and the
    same lines of a chip's other cores: ``SparseCore 0 XLA Ops``)."""
    return name.endswith(OPS_LINE)


def instruction_name(name: str, display: str = "") -> str:
    """An op event's instruction: its metadata's display name, else the name at the head of
    its HLO text (``%fusion.197 = ...``), else the event's name as it is."""
    if display:
        return display
    head = _HEAD.match(name)
    return head.group(1) if head else name


def done_operand(text: str) -> str | None:
    """The start a ``-done`` instruction completes, from its HLO text (``%copy-done.5 = f32[..]
    copy-done((...) %copy-start.5)`` gives ``copy-start.5``); None for any other text."""
    _, eq, rest = text.partition("=")
    found = _DONE.search(rest) if eq else None
    return found.group(2) if found else None


@dataclass(frozen=True, slots=True)
class Executions:
    """A plane's module executions (its ``XLA Modules`` events) in time order: each one's
    start and end (ns), module name without the suffix, program id and run id."""

    start: np.ndarray
    end: np.ndarray
    module: list[str]
    program: list[int | None]
    run: list[Any]

    def __len__(self) -> int:
        return len(self.start)

    def of(self, module: str, programs: Sequence[int] = ()) -> tuple[np.ndarray, np.ndarray]:
        """The starts and ends of the executions of ``module`` (of ``programs``, where given;
        an execution without a program id counts as any), in time order."""
        wanted = set(programs)
        keep = np.array([m == module and (not wanted or p is None or p in wanted)
                         for m, p in zip(self.module, self.program, strict=True)], dtype=bool)
        return self.start[keep], self.end[keep]


NO_EXECUTIONS = Executions(np.zeros(0), np.zeros(0), [], [], [])


@dataclass(frozen=True, slots=True)
class TpuOps:
    """The op events of one TPU plane (see the module docstring): the ops line's index in the
    plane and its events, named by their instructions (the reader's columns, not copied), the
    rows kept (inside a module execution) and the stats each is given (:data:`GIVEN`, object
    arrays by row), the plane's module executions, its step marks (number, start, duration)
    and how many op events lay outside every execution."""

    line: int
    events: Sequence[Event]
    rows: np.ndarray
    given: dict[str, np.ndarray]
    executions: Executions
    steps: tuple[list[int], list[float], list[float]]
    outside: int


@dataclass(slots=True)
class _Line:
    """A line's events as columns: each event's key (its metadata id, or its name's number for
    a list of events), start and duration, and per key its name, display name and stats."""

    key: np.ndarray
    start: np.ndarray
    duration: np.ndarray
    names: dict[int, str]
    displays: dict[int, str]
    stats: dict[int, Mapping[str, Any]]


def device_clock(events: Sequence[Event], timestamp_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """The starts and durations (ns) of a TPU line's events in the device's own clock: its
    ``device_offset_ps`` and ``device_duration_ps`` stats (the offset from the line's
    ``timestamp_ns``), where an event holds both; else the event's own (its time as the
    profiler placed it on the host's clock, up to a few hundred ps off: XProf reads the
    device's)."""
    if isinstance(events, EventColumns):
        start = np.asarray(events.start_ns, dtype=np.float64)
        duration = np.asarray(events.duration_ns, dtype=np.float64)
        n = len(events)
        offset, has_offset = events.stats.integers(n, DEVICE_OFFSET)
        took, has_took = events.stats.integers(n, DEVICE_DURATION)
    else:
        start = np.fromiter((float(e.start_ns) for e in events), np.float64, len(events))
        duration = np.fromiter((float(e.duration_ns) for e in events), np.float64,
                               len(events))
        values = [(e.stats.get(DEVICE_OFFSET), e.stats.get(DEVICE_DURATION)) for e in events]
        has_offset = np.array([isinstance(a, int) for a, _ in values], dtype=bool)
        has_took = np.array([isinstance(b, int) for _, b in values], dtype=bool)
        offset = np.array([a if isinstance(a, int) else 0 for a, _ in values], dtype=np.int64)
        took = np.array([b if isinstance(b, int) else 0 for _, b in values], dtype=np.int64)
    both = has_offset & has_took & (took >= 0)
    if not both.any():
        return start, duration
    # As the reader places an event (base + offset_ps / 1000.0), in the device's clock.
    return (np.where(both, timestamp_ns + offset / 1000.0, start),
            np.where(both, took / 1000.0, duration))


def _columns(events: Sequence[Event], metadata: Mapping[int, Any], timestamp_ns: int) -> _Line:
    start, duration = device_clock(events, timestamp_ns)
    if isinstance(events, EventColumns):
        keys = np.unique(events.meta).tolist() if len(events) else []
        displays: dict[int, str] = {}
        stats: dict[int, Mapping[str, Any]] = {}
        for m in keys:
            meta = metadata.get(m)
            displays[m] = str(getattr(meta, "display_name", "") or "")
            stats[m] = getattr(meta, "stats", None) or {}
        return _Line(events.meta, start, duration,
                     {m: events._names.get(m, "") for m in keys}, displays, stats)
    codes: dict[str, int] = {}
    key = np.fromiter((codes.setdefault(str(e.name), len(codes)) for e in events),
                      dtype=np.int64, count=len(events))
    firsts: dict[int, Mapping[str, Any]] = {}
    for e, k in zip(events, key.tolist(), strict=True):
        firsts.setdefault(k, e.stats)
    return _Line(key, start, duration, {k: n for n, k in codes.items()},
                 dict.fromkeys(codes.values(), ""), firsts)


def _stat_column(events: Sequence[Event], rows: np.ndarray, stat: str) -> list[Any]:
    """The value of ``stat`` of the events ``rows`` (None where one has none)."""
    if isinstance(events, EventColumns):
        return events.stats.column(events.meta[rows], rows, stat)
    return [events[i].stats.get(stat) for i in rows.tolist()]


def _executions(line_of: Any, metadata: Mapping[int, Any]) -> Executions:
    events = line_of.events
    line = _columns(events, metadata, getattr(line_of, "timestamp_ns", 0))
    order = np.argsort(line.start, kind="stable")
    key = line.key[order].tolist()
    runs = _stat_column(events, order, "run_id")
    programs = _stat_column(events, order, "program_id")
    names = [line.names.get(k, "") for k in key]
    return Executions(
        line.start[order], line.start[order] + line.duration[order],
        [module_base(n) for n in names],
        [p if isinstance(p, int) else program_suffix(n) for p, n in zip(programs, names,
                                                                          strict=True)],
        [r if r is not None else f"execution {i}" for i, r in enumerate(runs)])


def _steps(line_of: Any, metadata: Mapping[int, Any]
           ) -> tuple[list[int], list[float], list[float]]:
    """The step number, start and duration of each event of a ``Steps`` line named by a
    number."""
    line = _columns(line_of.events, metadata, getattr(line_of, "timestamp_ns", 0))
    number = {k: int(n) for k, n in line.names.items() if n.strip().isdigit()}
    rows = [i for i, k in enumerate(line.key.tolist()) if k in number]
    return ([number[int(line.key[i])] for i in rows], line.start[rows].tolist(),
            line.duration[rows].tolist())


def _async_pairs(line_of: Any, metadata: Mapping[int, Any]) -> dict[str, str]:
    """done -> start of the ``Async XLA Ops`` line: each event's ``hlo_op`` (the done) and its
    metadata's instruction (the start)."""
    events = line_of.events
    line = _columns(events, metadata, getattr(line_of, "timestamp_ns", 0))
    # One start's events all name its one done: each metadata's first event is read.
    keys, firsts = np.unique(line.key, return_index=True)
    dones = _stat_column(events, firsts, "hlo_op")
    out: dict[str, str] = {}
    for k, done in zip(keys.tolist(), dones, strict=True):
        if isinstance(done, str):
            out.setdefault(done, instruction_name(line.names.get(k, ""), line.displays.get(k, "")))
    return out


def _by_key(line: _Line, pairs: Mapping[str, str]
            ) -> tuple[list[int], list[str], list[Any], list[str | None]]:
    """Per distinct key of the ops line: the key, the kernel it belongs to, its program id
    (None where its metadata has none) and, for the done of an asynchronous op, its own
    instruction (else None)."""
    keys = sorted(line.names)
    ops: list[str] = []
    programs: list[Any] = []
    dones: list[str | None] = []
    for k in keys:
        text = line.names.get(k, "")
        own = instruction_name(text, line.displays.get(k, ""))
        start = done_operand(text) or pairs.get(own)
        ops.append(start if start else own)
        dones.append(own if start else None)
        program = line.stats.get(k, {}).get("program_id")
        programs.append(program if isinstance(program, int) else None)
    return keys, ops, programs, dones


def _objects(values: Sequence[Any]) -> np.ndarray:
    """``values`` as an object array (each value as it is, never spread)."""
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


def named_by_instruction(events: Sequence[Event], metadata: Mapping[int, Any],
                         start_ns: np.ndarray, duration_ns: np.ndarray) -> Sequence[Event]:
    """The events of an ops line named by their instructions rather than their HLO texts and
    placed at ``start_ns`` for ``duration_ns`` (the device's clock): the reader's columns over
    the same arrays; a list of events as it is."""
    if not isinstance(events, EventColumns):
        return [Event(e.name, a, d, e.stats) for e, a, d in
                zip(events, start_ns.tolist(), duration_ns.tolist(), strict=True)]
    names = {m: instruction_name(n, str(getattr(metadata.get(m), "display_name", "") or ""))
             for m, n in events._names.items()}
    return EventColumns(names, events.meta, start_ns, duration_ns, events.stats)


def tpu_ops(lines: Sequence[Any], metadata: Mapping[int, Any],
            modules: Mapping[int, str] | None = None) -> TpuOps | None:
    """The op events of a TPU plane's ``lines`` (whose event metadata is ``metadata``, by id)
    matched to instructions, programs and calls (see the module docstring); None where the
    plane has no ``XLA Ops`` line. ``modules``: the module name of each program id (the
    trace's HLO protos), for a plane whose module executions do not name them."""
    found = {str(line.name): (i, line) for i, line in enumerate(lines)}
    if OPS_LINE not in found:
        return None
    at, ops_line = found[OPS_LINE]
    events = ops_line.events
    line = _columns(events, metadata, getattr(ops_line, "timestamp_ns", 0))
    executions = (_executions(found[MODULES_LINE][1], metadata) if MODULES_LINE in found
                  else NO_EXECUTIONS)
    steps = _steps(found[STEPS_LINE][1], metadata) if STEPS_LINE in found else ([], [], [])
    pairs = _async_pairs(found[ASYNC_LINE][1], metadata) if ASYNC_LINE in found else {}
    keys, ops, programs, dones = _by_key(line, pairs)
    n = len(line.key)
    # Per distinct metadata (a few hundred), then each event's by its metadata's index: the
    # kernel, the done's own name, the program its metadata names and that program's module.
    code = (np.searchsorted(np.asarray(keys, dtype=np.int64), line.key) if n
            else np.zeros(0, dtype=np.int64))
    module_of = {**(modules or {}),
                 **{p: m for m, p in zip(executions.module, executions.program, strict=True)
                    if p is not None}}
    named = [module_of.get(p) if p is not None else None for p in programs]
    op_of, done_of, program_of, named_of = (_objects(values) for values in (
        ops, dones, programs, named))
    unnamed_of = np.array([p is None for p in programs], dtype=bool)  # no program id
    nameless_of = np.array([m is None for m in named], dtype=bool)  # no module known
    rows = np.arange(n)
    which = np.zeros(0, dtype=np.int64)
    outside = 0
    if len(executions):
        # The execution whose start is the last at or before each op's start, if the op
        # starts before it ends (executions of one core run one after another).
        which = np.searchsorted(executions.start, line.start, side="right") - 1
        inside = (which >= 0) & (line.start <= executions.end[np.maximum(which, 0)])
        outside = int(n - inside.sum())
        rows = np.flatnonzero(inside)
        which = which[rows]
    at_key = code[rows]
    program = program_of[at_key]
    module = named_of[at_key]
    run = np.full(len(rows), None, dtype=object)
    if len(executions):
        # An op's own program where its metadata names one, else its execution's; its module
        # the one that program's executions (or HLO) are named, else its execution's.
        program = np.where(unnamed_of[at_key], _objects(executions.program)[which], program)
        module = np.where(nameless_of[at_key], _objects(executions.module)[which], module)
        run = _objects(executions.run)[which]
    given = {"hlo_op": op_of[at_key], "hlo_module": module, "program_id": program,
             "run_id": run, DONE_STAT: done_of[at_key]}
    return TpuOps(at, named_by_instruction(events, metadata, line.start, line.duration), rows,
                  given, executions, steps, outside)
