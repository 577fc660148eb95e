"""Reading a profile: a run's trace files -> what each host's program did (jax only to print HLO).

:func:`read_profile` finds the run (:mod:`.discover`), decodes every host's XSpace
(:mod:`roofline_report.traces.xspace`), sorts the kernel events by device, program and step
(:mod:`.timeline`), chooses the program (``module``, else the one with the most kernel time),
prints the program's HLO from the trace (:mod:`.hlo`, the one step that needs jaxlib) and counts
its kernels with the project's own counter (:func:`roofline_report.hlo.kernels.kernel_inventory`),
and times each kernel per step or call on every device
(:func:`roofline_report.traces.events.kernel_times`). The roofs are chosen too: the ceilings
record of a results.json measured on the machine that ran the trace, else a chip preset (by name
or matched to the device the trace names), else none (the report then predicts nothing).

What it returns (:class:`Reading`) becomes a results document in one place,
:mod:`roofline_report.ingest.records`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline_report.errors import InputError
from roofline_report.heap import release_free_memory
from roofline_report.hlo.compiled import inspect_compiled
from roofline_report.hlo.ir import parse_module
from roofline_report.hlo.kernels import kernel_inventory
from roofline_report.ingest import timeline
from roofline_report.ingest.discover import HostFile, RunFiles, find_run
from roofline_report.ingest.execute_starts import ExecuteLine
from roofline_report.ingest.host_readers import read_hosts, trace_bytes
from roofline_report.ingest.tpu_timing import unseen_note
from roofline_report.ingest.unclaimed import several_kernels, unclaimed
from roofline_report.text import plural
from roofline_report.traces.events import kernel_times
from roofline_report.traces.line_aside import alone, cores
from roofline_report.traces.xspace import TraceFormatError, XSpace, read_xspace
from roofline_report.units import format_si

__all__ = ["HostProgram", "HostReading", "LaneTiming", "Reading", "read_host", "read_profile"]


@dataclass
class HostReading:
    """One host's trace: the file, its decoded XSpace, its devices' kernel events, its step
    markers and the runtime's execute events (one list for all its devices)."""

    file: HostFile
    size: int
    space: XSpace
    lanes: list[timeline.Lane]
    markers: list[timeline.Step]
    executes: list[ExecuteLine]

    def metadata(self, key: str) -> Any:
        plane = self.space.plane("/host:metadata")
        return plane.stats.get(key) if plane is not None else None


@dataclass
class LaneTiming:
    """One device's per-kernel times of the program (kernel_times' record) and how its calls
    were told apart."""

    lane: timeline.Lane
    view: timeline.ProfileView
    timing: dict[str, Any]
    unclaimed: list[Any] = field(default_factory=list)  # ingest.unclaimed.Unclaimed
    several: dict[str, list[str]] = field(default_factory=dict)  # op -> its device kernels


@dataclass
class HostProgram:
    """The chosen program on one host: its HLO (or why not), the kernel inventory and the
    compiled facts read from it, and the per-kernel times of each device."""

    host: HostReading
    program_id: int | None
    hlo_reason: str | None  # why the work is not counted (no HLO in the trace)
    inventory: dict[str, Any] | None
    compiled: dict[str, Any] | None
    lanes: list[LaneTiming]
    notes: list[str] = field(default_factory=list)

    @property
    def chosen(self) -> LaneTiming | None:
        """The device whose times are the workload's: the first with kernel times."""
        return next((t for t in self.lanes if t.timing.get("available")), None)


@dataclass
class Reading:
    run: RunFiles
    hosts: list[HostReading]
    module: str
    module_choice: str  # "most kernel time" or "by name"
    modules: list[timeline.ModuleSummary]
    with_hlo: set[str]  # modules whose HLO some host's trace holds
    programs: list[HostProgram]
    ceilings: dict[str, Any] | None
    ceilings_file: str | None
    preset: str | None
    notes: list[str]


def read_host(f: HostFile) -> HostReading:
    """One host's trace read (here, or in a worker of :mod:`.host_readers`); a trace it
    cannot read is one line of :class:`InputError`."""
    try:
        space = read_xspace(f.path)
    except TraceFormatError as exc:
        if exc.newer:
            raise InputError(f"{exc} (a newer profiler than this reader knows)") from None
        if "not a profiler trace" in str(exc) or "GiB" in str(exc):
            raise InputError(str(exc)) from None
        raise InputError(f"{exc} (a truncated or corrupt trace file)") from None
    release_free_memory()  # the parsed protobuf and the file's bytes, freed: their pages
    return HostReading(f, f.path.stat().st_size, space, timeline.lanes(space),
                       timeline.steps(space), timeline.execute_lines(space))


def _dropped_notes(hosts: Sequence[HostReading]) -> list[str]:
    """One line per kind of thing a host's reader skipped."""
    notes: list[str] = []
    for h in hosts:
        dropped = h.space.dropped
        for what, counts in (("event(s) with a negative duration", dropped.negative_durations),
                             ("stat(s) whose value is of a type this reader does not know "
                              "(a newer profiler)", dropped.unknown_stat_values)):
            if counts:
                named = ", ".join(f"{name or '(unnamed)'} ×{n}" for name, n in
                                  sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5])
                notes.append(f"{h.file.host}: {sum(counts.values())} {what} skipped ({named}"
                             f"{', ...' if len(counts) > 5 else ''})")
    return notes


def _choose_module(summaries: Sequence[timeline.ModuleSummary], wanted: str | None,
                   where: str) -> tuple[str, str]:
    names = [m.name for m in summaries]
    if wanted is None:
        return summaries[0].name, "most kernel time"
    for candidate in (wanted, timeline.module_base(wanted), f"jit_{wanted}"):
        if candidate in names:
            return candidate, "by name"
    raise InputError(f"--module {wanted}: no such program in {where}; programs with kernel "
                     f"events: {', '.join(names)}")


def _program_of(host: HostReading, module: str) -> tuple[int | None, bytes | None, list[str]]:
    """The program id of ``module`` on this host and its HLO proto (None when the trace holds
    none), with notes when several programs share the name."""
    # Each program id's events of the module, counted in the order first met.
    met: Counter[Any] = Counter()
    for lane in host.lanes:
        ours = lane.kernels.as_array("modules") == module
        met.update(lane.kernels.as_array("programs")[ours].tolist())
    counts: Counter[int] = Counter({p: n for p, n in met.items() if isinstance(p, int)})
    protos = host.space.hlo_protos()
    notes: list[str] = []
    program: int | None
    if counts:
        program = counts.most_common(1)[0][0]
        if len(counts) > 1:
            notes.append(f"{len(counts)} programs named {module} ran on {host.file.host} "
                         f"(ids {', '.join(map(str, sorted(counts)))}); the one with the most "
                         f"kernel events, {program}, is read")
    else:
        named = sorted(pid for pid, (name, _) in protos.items()
                       if timeline.module_base(name) == module)
        program = named[-1] if named else None
        if len(named) > 1:
            notes.append(f"the events do not name the program id; of {len(named)} programs "
                         f"named {module} the last compiled, {program}, is read")
    proto = protos[program][1] if program is not None and program in protos else None
    return program, proto, notes


def _counted(host: HostReading, module: str, proto: bytes | None,
             cache: dict[bytes, tuple[dict[str, Any], dict[str, Any]]]
             ) -> tuple[dict[str, Any] | None, dict[str, Any] | None, str | None]:
    """(inventory, compiled facts, None) from the program's HLO, or (None, None, why not)."""
    if proto is None:
        return None, None, (f"the trace of {host.file.host} holds no HLO of {module} (no 'Hlo "
                            "Proto' metadata: was it captured with ProfileOptions."
                            "enable_hlo_proto off?)")
    if proto not in cache:
        from roofline_report.ingest.hlo import hlo_text

        try:
            text = hlo_text(proto, module=module, trace_jaxlib=host.metadata("jaxlib_version"))
        except TraceFormatError as exc:
            suffix = "" if exc.newer else " (a corrupt HLO proto in the trace)"
            raise InputError(f"{host.file.path.name}: {exc}{suffix}") from None
        parsed = parse_module(text)
        # Source paths follow the one rule of every kernel table: relative to the current
        # folder where the file is under it, else ``<path>/name.py``.
        cache[proto] = (kernel_inventory(parsed), inspect_compiled(parsed))
    inventory, compiled = cache[proto]
    return inventory, compiled, None


def _ceilings(path: str | Path, backend: str) -> dict[str, Any]:
    from roofline_report.results import io as results_io

    data = results_io.load(path)
    record = data.get("ceilings") or {}
    name = Path(path).name
    if not record.get("available"):
        raise InputError(f"--ceilings {name}: its ceilings were not measured "
                         f"({record.get('reason', 'no reason recorded')})")
    if str(record.get("backend")) != backend:
        raise InputError(f"--ceilings {name}: measured on the {record.get('backend')} backend, "
                         f"but the trace ran on {backend}; give ceilings measured on the "
                         "machine that ran the trace")
    return dict(record)


def read_profile(path: str | Path, *, run: str | None = None, module: str | None = None,
                 ceilings: str | Path | None = None, preset: str | None = None,
                 jobs: int | None = None,
                 progress: Callable[[str], None] | None = None) -> Reading:
    """Read the run under ``path`` (see the module docstring), its hosts in up to ``jobs``
    worker processes (default: the cores; :mod:`.host_readers`; with one job, all in this
    process, without the line helper of :mod:`roofline_report.traces.line_aside` either).
    Bad input raises InputError: no trace, a corrupt, truncated or newer trace file, a trace
    without kernel events, an unknown ``module`` or ``run``, an unusable ceilings file or
    preset name.
    ``progress`` is told each step as it starts."""
    say = progress or (lambda _message: None)
    files = find_run(path, run)
    size = format_si(sum(trace_bytes(f.path) for f in files.hosts), "B")
    say(f"reading {plural(len(files.hosts), 'host', 'hosts')} of run {files.run} ({size})")
    with alone(jobs == 1):  # one job: one process, without the line helper either
        hosts = read_hosts(files.hosts, jobs if jobs is not None else cores(), read_host)
    summaries = timeline.modules(lane for h in hosts for lane in h.lanes)
    where = f"run {files.run}"
    if not summaries:
        raise InputError(f"{where}: the trace holds no kernel event (no event with an hlo_op "
                         "stat): no compiled program ran while it was recorded, or another "
                         "profiler was running")
    chosen, choice = _choose_module(summaries, module, where)
    with_hlo = {timeline.module_base(name) for h in hosts
                for name, _ in h.space.hlo_protos().values()}
    cache: dict[bytes, tuple[dict[str, Any], dict[str, Any]]] = {}
    programs: list[HostProgram] = []
    notes: list[str] = [*files.notes, *_dropped_notes(hosts)]
    for h in hosts:
        if not any(chosen in lane.kernels.modules() for lane in h.lanes):
            notes.append(f"host {h.file.host} ran no kernel of {chosen}")
            continue
        say(f"{chosen} on {h.file.host}: counting its kernels and timing them")
        program, proto, host_notes = _program_of(h, chosen)
        inventory, compiled, why = _counted(h, chosen, proto, cache)
        trips = {k["name"]: int(k["trips"]) for k in inventory["kernels"]} if inventory else None
        lanes: list[LaneTiming] = []
        # What the lanes' sorting and the HLO's parsing freed, given back before the timing
        # builds its own objects: the profile's peak memory is reached there.
        release_free_memory()
        for lane in h.lanes:
            ids = [program] if program is not None else []
            view = timeline.profile_for(h.space, lane, chosen, ids, markers=h.markers,
                                        trips=trips, executes=h.executes)
            if not any(line.events for plane in view.planes[:1] for line in plane.lines):
                continue
            timing = kernel_times(view, module=chosen,
                                  kernels=list(trips) if trips is not None else None,
                                  calls=view.calls, launches=trips)
            names = list(trips) if trips is not None else []
            if lane.device.startswith("TPU"):
                note = unseen_note(timing, trips, lane.device)
                if note:
                    timing["notes"] = [*timing["notes"], note]
            lanes.append(LaneTiming(lane, view, timing,
                                    unclaimed(h.space, lane, chosen, names),
                                    several_kernels(lane, chosen,
                                                    names if trips is not None else None)))
        programs.append(HostProgram(h, program, why, inventory, compiled, lanes, host_notes))
    backend = backend_of(hosts)
    ceilings_record = _ceilings(ceilings, backend) if ceilings is not None else None
    preset_name = None
    if preset is not None:
        from roofline_report import presets

        preset_name = presets.get_preset(preset).name
    unknown = hosts[0].space.unknown_fields if hosts else {}
    if unknown:
        fields = "; ".join(f"{m} {', '.join(map(str, n))}" for m, n in unknown.items())
        notes.append(f"fields this reader does not know were skipped ({fields}): a newer "
                     "profiler wrote them")
    return Reading(files, hosts, chosen, choice, summaries, with_hlo, programs, ceilings_record,
                   Path(ceilings).name if ceilings is not None else None, preset_name, notes)


def backend_of(hosts: Sequence[HostReading]) -> str:
    """gpu, tpu or cpu: the devices whose events the kernels are."""
    for h in hosts:
        for lane in h.lanes:
            if lane.device.startswith("GPU"):
                return "gpu"
            if lane.device.startswith("TPU"):
                return "tpu"
    return "cpu"


def device_kind(hosts: Sequence[HostReading]) -> tuple[str, dict[str, Any]]:
    """The device the trace ran on and what its plane says of it: the name the plane keeps (a
    GPU plane's ``gpu_device_name``, a TPU plane's ``device_type_string``), else the chip
    recognised from the plane's stats (:mod:`roofline_report.device_recognition`; the preset's
    name), else its vendor; ``cpu`` on a CPU. The recognised preset, or why none, is in the
    facts returned beside it."""
    from roofline_report.device_recognition import DeviceFacts, recognise

    for h in hosts:
        for plane in h.space.planes:
            stats = plane.stats
            gpu = plane.name.startswith(timeline.GPU_PREFIX)
            if not gpu and not plane.name.startswith("/device:TPU:"):
                continue
            facts = DeviceFacts.from_stats(stats)
            found = recognise(facts)
            extra: dict[str, Any] = {}
            if facts.compute_capability is not None:
                extra["compute_capability"] = "{}.{}".format(*facts.compute_capability)
            if facts.memory_bytes is not None:
                extra["device_memory_bytes"] = facts.memory_bytes
            if facts.vendor:
                extra["device_vendor"] = facts.vendor
            if facts.cores is not None:
                extra["core_count"] = facts.cores
            if facts.clock_hz:
                extra["clock_hz"] = facts.clock_hz
            if found.preset is not None:
                extra["device_preset"] = found.preset
                extra["device_recognised_by"] = found.by
            else:
                extra["device_unrecognised"] = found.reason
            name = facts.name or found.preset or facts.vendor or ("GPU" if gpu else "TPU")
            return name, extra
    return "cpu", {}
