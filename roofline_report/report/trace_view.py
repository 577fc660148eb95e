"""The report's section on a profile read from a trace (pure: no jax).

:func:`trace_view` turns the analysis of a ``roofline-report profile`` document into display values
(every number formatted by :mod:`roofline_report.report.format`, with its kind) and
:func:`trace_section` lays them out as one section: where the trace came from and which program
was read, the roofs the kernels are held to and why, the hosts and devices side by side (time per
step or call, summed kernel time, time in collectives), each collective's time from the events
beside its bytes from the HLO, and, where the trace holds no HLO, the per-op times with the
statement that the work cannot be counted. The per-kernel tables, figures and predictions are
the report's usual ones (``report/views.py``, ``report/sections.py``), from the same analysis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from roofline_report.analysis.kernel_records import (
    HOST_BOUND_IDLE,
    TraceSummary,
    idle_between_steps,
    step_seconds,
)
from roofline_report.analysis.kernels import kernel_seconds, trace_summary
from roofline_report.analysis.records import Analysis, Program
from roofline_report.analysis.stats import median
from roofline_report.hlo.walk import COLLECTIVE_OPCODES
from roofline_report.kinds import Kind
from roofline_report.report.blocks import (
    Block,
    BulletList,
    Cell,
    Code,
    Inline,
    Note,
    Paragraph,
    Section,
    Strong,
    Table,
    text,
)
from roofline_report.report.format import Num, count, miss_text, n, percent, plural
from roofline_report.results import schema
from roofline_report.units import format_binary, format_si

__all__ = ["OP_ROWS", "trace_section", "trace_view"]

OP_ROWS = 20  # per-op times shown for a program whose work cannot be counted
M, A = Kind.MEASURED, Kind.ANALYTIC


def _trace_of(p: Program) -> schema.TracedProgram:
    """Where a program of the trace section was read from (each of them was read from the
    trace)."""
    trace = p.workload.trace
    if trace is None:
        raise ValueError(f"{p.name} was not read from a trace")
    return trace


def _roofs(an: Analysis, trace: schema.TraceSource) -> tuple[Inline, ...]:
    """Which roofs the kernels are held to, and why those, as inline parts."""
    env = an.results.environment
    device = env.device_kind
    chosen = an.roofs.kernels
    if chosen.kind is Kind.MEASURED:
        ceilings = an.results.ceilings
        measured_on = ceilings.device_kind if isinstance(ceilings, schema.Ceilings) else device
        return (f"Roofs: the ceilings measured on {measured_on} "
                f"(the ceilings record of {trace.ceilings_file or 'the results given'}), "
                f"the first choice; the trace ran on {device}.",)
    if chosen.kind is Kind.SPEC_SHEET and chosen.compute:
        chosen_by = an.roofs.preset.chosen if an.roofs.preset is not None else ""
        if chosen_by == "by name":
            how: tuple[Inline, ...] = ("chosen by name",)
        elif chosen_by.startswith("recognised"):
            how = ("recognised from the trace's device plane: ", *_recognised(env))
        else:
            how = (f"matched to the device the trace names, {device}",)
        return (f"Roofs: the spec sheet of the {chosen.label} (", *how, "): published figures, "
                "not measured. No ceilings measured on the machine that ran the trace were "
                "given (--ceilings FILE takes the ceilings of a results.json measured there).")
    why = env.device_unrecognised or "no chip preset matches it"
    return (f"No roofs: the machine that ran the trace is {_described(env, device)}, and {why}; "
            "no ceilings measured there were given. The kernels' achieved rates are shown "
            "without a share of a roof or a prediction. To hold them to roofs, give "
            "--preset NAME (a chip's spec sheet; --list-presets names them) or --ceilings FILE "
            "(a results.json measured on that machine).",)


def _described(env: schema.Environment, device: str) -> str:
    """The device in the words its plane gives: vendor, architecture, cores, memory, clock."""
    parts = _recognised(env)
    return f"{device} ({''.join(str(p) for p in parts)})" if parts else device


def _recognised(env: schema.Environment) -> tuple[str, ...]:
    """What the device plane says of the device, as the facts the chip was recognised by."""
    from roofline_report.device_recognition import DeviceFacts, architecture

    words: list[str] = []
    if env.device_recognised_by == "name":
        return ("its name",)
    vendor = env.device_vendor
    if vendor:
        words.append(f"vendor {vendor}")
    cap = env.compute_capability
    if cap:
        major, _, minor = cap.partition(".")
        facts = DeviceFacts(vendor=vendor or None,
                            compute_capability=(int(major), int(minor))
                            if major.isdigit() and minor.isdigit() else None)
        arch = architecture(facts)
        words.append(f"compute capability {cap}" + (f" ({arch})" if arch else ""))
    if env.core_count is not None:
        unit = "compute units" if str(vendor).casefold() == "amd" else "cores"
        words.append(f"{env.core_count} {unit}")
    if env.device_memory_bytes is not None:
        words.append(f"{format_binary(env.device_memory_bytes)} of device memory")
    if env.clock_hz:
        words.append(f"a {format_si(env.clock_hz, 'Hz')} clock")
    return (", ".join(words),) if words else ()


def _collective_names(w: schema.Workload) -> set[str]:
    """The kernels of a program that are collectives: by the inventory's category where the
    trace held the HLO, else by their opcode."""
    inventory = w.kernels
    if isinstance(inventory, schema.KernelInventory) and inventory.kernels:
        return {k.name for k in inventory.kernels if k.category == "collective"}
    timing = w.kernel_timing
    timed = timing.kernels if isinstance(timing, schema.KernelTiming) else []
    return {k.name for k in timed
            if k.name.split(".")[0].removesuffix("-start").removesuffix("-done")
            in COLLECTIVE_OPCODES}


def lane_timing(w: schema.Workload, lane: schema.LaneTiming) -> schema.KernelTiming | None:
    """One device's per-kernel samples of a traced program: the lane's own, or, for the device
    the workload's times come from (stored once), the workload's ``kernel_timing``; None where
    it has none."""
    if lane.timing is not None:
        return lane.timing
    own = w.kernel_timing
    return own if isinstance(own, schema.KernelTiming) else None


def _lane_summary(timing: schema.KernelTiming | None) -> TraceSummary | None:
    """The medians of a device's traced calls (:func:`trace_summary`)."""
    return trace_summary(timing) if timing is not None else None


def _lane_collectives(w: schema.Workload, lane: schema.LaneTiming, names: set[str]
                      ) -> dict[str, float]:
    timing = lane_timing(w, lane)
    if timing is None:
        return {}
    return {k.name: kernel_seconds(k) for k in timing.kernels if k.name in names}


@dataclass(frozen=True, slots=True)
class HostRow:
    """One device of one host, side by side with the others: its medians per step or call."""

    host: str
    device: str
    calls: str
    step: Num
    program: Num
    kernels: Num
    busy: Num
    collectives: Num


def _host_rows(programs: Sequence[Program]) -> list[HostRow]:
    rows = []
    for prog in programs:
        w = prog.workload
        tr = _trace_of(prog)
        steps = tr.steps_s
        names = _collective_names(w)
        for lane in tr.devices:
            # The device the workload's times come from has its summary in the analysis
            # already (the same record's): a long trace's is 0.2 s to make again.
            table = prog.kernels
            s = table.trace if lane.timing is None and table is not None \
                and table.trace is not None else _lane_summary(lane_timing(w, lane))
            if s is None:
                continue
            collectives = _lane_collectives(w, lane, names)
            rows.append(HostRow(
                host=tr.host, device=lane.device,
                calls=plural(s.calls, tr.per, f"{tr.per}s"),
                step=n(step, "s", M) if (step := step_seconds(steps)) is not None
                else Num("—"),
                program=n(s.program_s, "s", M),
                kernels=n(s.kernel_sum_s, "s", M),
                busy=n(s.busy_s, "s", M),
                collectives=n(sum(collectives.values()), "s", M) if collectives
                else Num("—"),
            ))
    return rows


@dataclass(frozen=True, slots=True)
class CollectiveTime:
    """A collective's time on one host, and its bytes over that time."""

    host: str
    time: Num
    rate: Num


@dataclass(frozen=True, slots=True)
class CollectiveRow:
    """A collective of the program: its bytes from the HLO, its time on each host."""

    name: str
    op: str
    group: str
    bytes: Num
    times: list[CollectiveTime]


def _collective_rows(programs: Sequence[Program]) -> list[CollectiveRow]:
    """Each collective of the program: its bytes per device from the HLO and, per host, its
    time from the events of the device read there, and bytes ÷ time."""
    first = next((compiled for p in programs
                  if (compiled := p.workload.compiled) is not None and compiled.collectives),
                 None)
    if first is None:
        return []
    rows = []
    for c in first.collectives:
        name = c.instruction
        trips = c.trip_count or 1
        per_device = c.bytes_per_device
        moved = per_device * trips if per_device is not None else None
        times = []
        for p in programs:
            tr = _trace_of(p)
            lane = next((d for d in tr.devices if d.device == tr.device), None)
            seconds = (_lane_collectives(p.workload, lane, {name}).get(name)
                       if lane is not None else None)
            times.append(CollectiveTime(
                host=tr.host, time=n(seconds, "s", M) if seconds is not None else Num("—"),
                rate=n(moved / seconds, "B/s", M) if seconds and moved is not None
                else Num("—")))
        rows.append(CollectiveRow(name=name, op=c.op,
                                  group=str(c.group_size or "?"),
                                  bytes=n(moved, "B", A) if moved is not None
                                  else Num("unknown"),
                                  times=times))
    return rows


@dataclass(frozen=True, slots=True)
class OpRow:
    name: str
    launches: Num
    time: Num
    share: Num


@dataclass(frozen=True, slots=True)
class OpsView:
    """The per-op times of a program whose work cannot be counted."""

    title: str
    reason: str
    rows: list[OpRow]
    more: str


def _ops(p: Program) -> OpsView | None:
    """The per-op times of a program whose work cannot be counted (no HLO in the trace)."""
    w = p.workload
    missing = w.kernels
    timing = w.kernel_timing
    if not isinstance(missing, schema.Unavailable) or not isinstance(timing, schema.KernelTiming):
        return None
    ops = sorted(((o.name, kernel_seconds(o), median([float(x) for x in o.launches]) or 0.0)
                  for o in timing.kernels), key=lambda o: (-o[1], o[0]))
    total = sum(o[1] for o in ops)
    rows = [OpRow(name=name, launches=count(launches, M), time=n(seconds, "s", M),
                  share=percent(seconds / total if total > 0 else None, M))
            for name, seconds, launches in ops[:OP_ROWS]]
    return OpsView(title=p.title, reason=missing.reason, rows=rows,
                   more=plural(len(ops) - OP_ROWS, "more op", "more ops")
                   if len(ops) > OP_ROWS else "")


def _prediction(p: Program) -> tuple[Inline, ...] | None:
    """The model of the compiled program beside the program's traced time per step or call."""
    if p.prediction is None or p.miss is None:
        return None
    per = _trace_of(p).per
    return (f"{p.title}: the model of the compiled program (its kernels one after another, "
            "under the roofs above) predicts ", n(p.prediction.seconds, "s", Kind.PREDICTED),
            f" per {per}; the trace shows ", n(p.seconds, "s", M), " (",
            miss_text(p.miss), ").", *_counted(p))


def _counted(p: Program) -> tuple[Inline, ...]:
    """The share of the kernel time whose work is counted, and the kernels whose is not."""
    table = p.kernels
    if table is None or table.counted_share is None:
        return ()
    share = (" The kernels whose work is counted take ", percent(table.counted_share, M),
             " of the summed kernel time")
    if not table.uncounted:
        return (*share, ".")
    names = ", ".join(r.name for r in table.uncounted)
    return (*share, "; work not counted for ", plural(len(table.uncounted), "kernel", "kernels"),
            f" ({names}), so the prediction leaves their work out.")


def _host_bound(p: Program) -> tuple[Inline, ...] | None:
    """The statement that a program is host-bound: its device idle most of each call."""
    t = p.kernels.trace if p.kernels is not None else None
    if t is None or not t.host_bound:
        return None
    tr = _trace_of(p)
    per = tr.per
    return (Strong("Host-bound"), f": on {tr.device} a {per} of "
            f"{p.title} took ", n(t.program_s, "s", M), " and some kernel of it ran during ",
            n(t.busy_s, "s", M), "; the device was idle ", percent(t.idle, M),
            f" of the {per} (no kernel of the program ran). That time went to the host's work "
            "between the kernels (launches, Python, data) or to device events no HLO op "
            "claims, not to the kernels: their roofs below do not bound the program's time.")


def _waits_between_steps(p: Program) -> tuple[Inline, ...] | None:
    """The statement that a traced program's steps wait on their host between its calls: the
    device ran the call for less than :data:`HOST_BOUND_IDLE` of each step."""
    t = p.kernels.trace if p.kernels is not None else None
    tr = _trace_of(p)
    if t is None or t.source != "device" or tr.per != "step":
        return None
    idle = idle_between_steps(tr.steps_s, t.program_s)
    if idle is None or idle <= HOST_BOUND_IDLE:
        return None
    return (Strong("Host-bound between steps"), f": on {tr.device} a step of {p.title} "
            "took ", n(step_seconds(tr.steps_s), "s", M), " by its step markers, and its "
            "program's call ran on the device for ", n(t.program_s, "s", M), " of it; the "
            "device waited ", percent(idle, M), " of each step for its host (the Python "
            "between calls, the next call's dispatch, its data), time no kernel's roof "
            "bounds. More work per call (several steps looped inside one, with lax.scan or "
            "lax.fori_loop) is the lever before any kernel's.")


@dataclass(frozen=True, slots=True)
class TimelineRow:
    """Where one device's time went over the whole trace: each part's time and share."""

    host: str
    device: str
    total: Num
    computation: tuple[Num, Num]
    exposed_communication: tuple[Num, Num]
    exposed_memcpy: tuple[Num, Num]
    idle: tuple[Num, Num]


def _timeline_row(timeline: schema.DeviceTimeline) -> TimelineRow:
    total = float(timeline.total_s)

    def part(seconds: float) -> tuple[Num, Num]:
        value = float(seconds)
        return n(value, "s", M), percent(value / total if total > 0 else None, M)

    return TimelineRow(host=timeline.host, device=timeline.device, total=n(total, "s", M),
                       computation=part(timeline.computation_s),
                       exposed_communication=part(timeline.exposed_communication_s),
                       exposed_memcpy=part(timeline.exposed_memcpy_s),
                       idle=part(timeline.idle_s))


@dataclass(frozen=True, slots=True)
class UnclaimedRow:
    name: str
    events: Num
    time: Num
    like: str


@dataclass(frozen=True, slots=True)
class UnclaimedView:
    """The device events no HLO op claims while a program ran, on the device read."""

    title: str
    device: str
    host: str
    rows: list[UnclaimedRow]


def _unclaimed(p: Program) -> UnclaimedView | None:
    """The device events no HLO op claims while the program ran, on the device read."""
    tr = _trace_of(p)
    items = tr.unclaimed
    if not items:
        return None
    rows = [UnclaimedRow(name=u.name, events=count(u.events, M),
                         time=n(u.seconds, "s", M),
                         like=f"looks like {u.like} by its name (its event carries no HLO "
                         "op)" if u.like else "") for u in items]
    return UnclaimedView(title=p.title, device=tr.device, host=tr.host, rows=rows)


@dataclass(frozen=True, slots=True)
class TraceHost:
    """A host of the trace: its file and the devices that ran kernels."""

    name: str
    file: str
    bytes: Num
    devices: str
    jax: str


@dataclass(frozen=True, slots=True)
class TraceModule:
    """A program that ran while the trace was recorded."""

    name: str
    events: Num
    seconds: Num
    hlo: bool
    chosen: bool


@dataclass(frozen=True, slots=True)
class SeveralKernels:
    """The HLO ops of a program that ran as several device kernels each."""

    title: str
    device: str
    ops: list[tuple[str, list[str]]]


@dataclass(frozen=True, slots=True)
class TraceView:
    """The trace section's display values."""

    run: str
    runs: int
    hosts: list[TraceHost]
    module: str
    choice: str
    modules: list[TraceModule]
    module_seconds: Num
    per: str
    roofs: tuple[Inline, ...]
    host_rows: list[HostRow]
    collectives: list[CollectiveRow]
    ops: list[OpsView]
    predictions: list[tuple[Inline, ...]]
    unclaimed: list[UnclaimedView]
    timeline: list[TimelineRow]
    host_bound: list[tuple[Inline, ...]]
    several: list[SeveralKernels]
    notes: list[str]


def trace_view(an: Analysis) -> TraceView | None:
    """The trace section's display values; None for a measured run."""
    trace = an.results.trace
    if trace is None:
        return None
    programs = [p for p in an.programs if p.workload.trace is not None]
    chosen = next((m for m in trace.modules if m.name == trace.module), None)
    hosts = trace.hosts
    notes: list[str] = [*trace.notes]
    for p in programs:
        tr = _trace_of(p)
        notes += [f"{tr.host}: {x}" for x in tr.notes]
    for h in hosts:
        notes += [f"{h.name}: the profiler recorded an error: {e}" for e in h.errors]
        notes += [f"{h.name}: the profiler recorded a warning: {e}" for e in h.warnings]
    per = {_trace_of(p).per for p in programs}
    return TraceView(
        run=trace.run,
        runs=len(trace.runs),
        hosts=[TraceHost(name=h.name, file=h.file, bytes=Num(format_si(h.bytes, "B")),
                         devices=", ".join(h.devices) or "none",
                         jax=f"jax {h.jax}, jaxlib {h.jaxlib}" if h.jax
                         else "not recorded") for h in hosts],
        module=trace.module,
        choice=trace.module_choice,
        modules=[TraceModule(name=m.name, events=Num(f"{m.events:,}"),
                             seconds=n(m.seconds, "s", M), hlo=m.hlo,
                             chosen=m.name == trace.module) for m in trace.modules],
        module_seconds=n(chosen.seconds, "s", M) if chosen is not None else Num("unknown"),
        per="step" if per == {"step"} else "call" if per == {"call"} else "step or call",
        roofs=_roofs(an, trace),
        host_rows=_host_rows(programs),
        collectives=_collective_rows(programs),
        ops=[o for o in (_ops(p) for p in programs) if o is not None],
        predictions=[x for x in (_prediction(p) for p in programs) if x is not None],
        unclaimed=[u for u in (_unclaimed(p) for p in programs) if u is not None],
        timeline=[_timeline_row(t) for t in trace.timeline],
        host_bound=[x for p in programs for x in (_host_bound(p), _waits_between_steps(p))
                    if x is not None],
        several=[SeveralKernels(
            title=p.title, device=_trace_of(p).device,
            ops=sorted(_trace_of(p).device_kernels.items()))
            for p in programs if _trace_of(p).device_kernels],
        notes=notes,
    )


def _cell(*parts: Inline | None) -> Cell:
    return Cell(text(*parts))


def _num(x: Num) -> Cell:
    return Cell((x,), numeric=True)


def trace_section(t: TraceView | None) -> Section | None:
    """The section on the trace (the view model's :class:`TraceView`), or None for a measured
    run."""
    if not t:
        return None
    how = ("the one with the most kernel time" if t.choice == "most kernel time"
           else "chosen by name")
    body: list[Block] = [
        Paragraph(text(
            f"Read from the profiler trace of run {t.run} (", plural(t.runs, "run", "runs"),
            " in the folder; ", plural(len(t.hosts), "host", "hosts"), "). The program is ",
            Code(t.module), f" ({how}: ", t.module_seconds, " of kernel time in the "
            "trace). Its kernels are counted from the optimized HLO the trace holds, with the "
            "same counter as a measured run, and timed from the trace's events per "
            f"{t.per} (each kernel's time the first quartile over the {t.per}s), each "
            "kernel matched to its events by the HLO instruction it runs.")),
        Paragraph(text(*t.roofs)),
        Table(("host", "trace file", "size", "devices with kernels", "profiler"),
              tuple((_cell(h.name), _cell(Code(h.file)), _num(h.bytes),
                     _cell(h.devices), _cell(h.jax)) for h in t.hosts),
              caption="Hosts of the trace"),
    ]
    if len(t.modules) > 1:
        body.append(Table(("program", "kernel events", "kernel time", "HLO in the trace"),
                          tuple((_cell(Code(m.name), " (read)" if m.chosen else None),
                                 _num(m.events), _num(m.seconds),
                                 _cell("yes" if m.hlo else "no")) for m in t.modules),
                          caption="Programs that ran while the trace was recorded"))
    if t.timeline:
        body.append(Paragraph(text(
            "Where each device's time went over the whole trace, from its first event to its "
            "last (every program, as TraceLens's GPU timeline and XProf's overview count it): "
            "computation while some kernel ran, communication and memory copies where nothing "
            "else overlapped them, idle while nothing ran (the device waiting on its host).")))
        body.append(Table(
            ("host", "device", "trace span", "computation", "exposed communication",
             "exposed memory copies", "idle"),
            tuple((_cell(r.host), _cell(r.device), _num(r.total),
                   *(Cell((time, " (", share, ")"), numeric=True)
                     for time, share in (r.computation, r.exposed_communication,
                                         r.exposed_memcpy, r.idle)))
                  for r in t.timeline),
            caption="The devices' time over the whole trace"))
    if t.host_rows:
        body.append(Table(
            ("host", "device", "timed", "step (marker)", "program", "kernels summed",
             "at least one kernel", "collectives"),
            tuple((_cell(r.host), _cell(r.device), _cell(r.calls), _num(r.step),
                   _num(r.program), _num(r.kernels), _num(r.busy),
                   _num(r.collectives)) for r in t.host_rows),
            caption=f"Hosts and devices side by side (medians per {t.per})"))
    if t.collectives:
        hosts = [x.host for x in t.collectives[0].times]
        header = ("collective", "op", "group", "bytes per device (HLO)",
                  *(h2 for h in hosts for h2 in (f"time on {h}", f"bytes ÷ time on {h}")))
        body.append(Table(header, tuple(
            (_cell(Code(r.name)), _cell(r.op), _cell(r.group), _num(r.bytes),
             *(c for x in r.times for c in (_num(x.time), _num(x.rate))))
            for r in t.collectives),
            caption=f"Collectives: bytes from the HLO, times from the events (per {t.per})"))
    for p in t.predictions:
        body.append(Paragraph(p))
    for s in t.several:
        body.append(Table(("HLO op", "device kernels", "its kernels"), tuple(
            (_cell(Code(op)), _num(count(len(kernels), M)), _cell(", ".join(kernels)))
            for op, kernels in s.ops),
            caption=f"HLO ops of {s.title} that ran as several device kernels on "
                    f"{s.device} (each op's time in the kernel table is their sum)"))
    for u in t.unclaimed:
        body.append(Paragraph(text(
            f"Device events no HLO op claims ran on {u.device} of {u.host} between the "
            f"first and last kernel of {u.title}: memory copies, runtime and library "
            "kernels, or kernels whose events carry no HLO op. They are not in the per-kernel "
            "table (no op, so no work or bytes to hold them to); their times summed over the "
            "calls traced:")))
        body.append(Table(("event", "events", "summed time", "note"), tuple(
            (_cell(Code(r.name)), _num(r.events), _num(r.time), _cell(r.like))
            for r in u.rows), caption=f"Events no HLO op claims, on {u.device}"))
    for o in t.ops:
        body.append(Note(text(Strong("The work cannot be counted"), f" for {o.title}: ",
                              o.reason, ". The per-op times the trace holds:")))
        body.append(Table(("op", "launches", "time", "share"), tuple(
            (_cell(Code(r.name)), _num(r.launches), _num(r.time), _num(r.share))
            for r in o.rows), caption=f"Per-op times of {o.title} (per {t.per})"))
        if o.more:
            body.append(Paragraph(text(o.more, " not shown.")))
    if t.notes:
        body.append(BulletList(tuple(text(x) for x in t.notes)))
    return Section("The profile", tuple(body), id="trace")
