"""The view of "Past one device" (no jax): the sharded workloads, their collectives, the
alpha-beta model of their steps and its projection to real chips, as display strings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roofline_report.analysis.sharding_records import (
    CollectiveCost,
    Crossover,
    EmulatedTiming,
    JaxRooflineCompared,
    JaxRooflineUnavailable,
    NotProjected,
    PricedLevel,
    ProjectedStep,
    Projection,
    ShardingStudy,
    StepCollective,
    StepStudy,
    WorkloadBatch,
)
from roofline_report.analysis.sharding_records import StepRow as StepRecord
from roofline_report.analysis.study import sharded_seconds
from roofline_report.kinds import Kind
from roofline_report.report.format import Num, count, decimal, n, plural, ratio, whole
from roofline_report.results.schema_sharding import CollectiveArray, ShardedCollective
from roofline_report.units import format_intensity, format_si


def _dims(shape: Any) -> str:
    return "[" + ",".join(map(str, shape)) + "]" if isinstance(shape, list) else ""


def _arrays(c: ShardedCollective) -> list[CollectiveArray]:
    """A collective record's arrays; results saved before records held them: the record."""
    if c.arrays:
        return list(c.arrays)
    return [CollectiveArray(dtype=c.dtype, shape=c.shape, bytes=c.result_bytes,
                            program_dtype=c.program_dtype or c.dtype)]


def array_text(c: ShardedCollective) -> str:
    """The arrays of a collective in the program's dtype, per device; a combined collective's
    arrays listed together; where the compiled dtype differs, it follows (this machine's)."""
    arrays = _arrays(c)
    parts = [f"{a.program_dtype or a.dtype or ''}{_dims(a.shape)}" for a in arrays]
    text = parts[0] if len(parts) == 1 else f"{len(parts)} arrays combined: ({', '.join(parts)})"
    compiled = sorted({str(a.dtype) for a in arrays
                       if a.program_dtype and a.dtype != a.program_dtype})
    if compiled:
        text += f" (compiled {'/'.join(compiled)} on this CPU)"
    return text


def _check_text(check: Mapping[str, Any] | None) -> str:
    if not check:
        return "not run"
    if check.get("available") is False:
        return f"not checked: {check.get('reason', 'unavailable')}"
    return "passed" if check.get("passed") else "failed"


def _sent(per: Mapping[str, Any]) -> Num:
    """Bytes sent per device, in the program's dtype; a lower bound is said so, and what this
    machine's compiled program sends when it differs."""
    value = per.get("comm_bytes_hlo")
    sent = n(value, "B", Kind.ANALYTIC)
    text = sent.text
    if per.get("comm_bytes_complete") is False:
        text = f"at least {text} (a loop of unknown trip count counted once)"
    compiled = per.get("comm_bytes_compiled")
    if compiled is not None and value is not None and compiled != value:
        text += f"; {format_si(compiled, 'B')} as compiled on this CPU"
    return Num(text, sent.kind)


@dataclass(frozen=True, slots=True)
class ShardedRow:
    """One sharded workload: what each device computes, moves and sends, and its bounds."""

    name: str
    description: str
    collectives: str
    flops: Num
    hbm: Num
    comm: Num
    comm_hlo: Num
    xla_flops: Num
    check: str
    t_math: Num
    t_mem: Num
    t_comm: Num
    lower: Num
    upper: Num
    binding: str
    comm_intensity: Num
    measured: Num


@dataclass(frozen=True, slots=True)
class ShardingUnavailable:
    """No sharded workloads in this run, and why."""

    reason: str
    available: bool = False


@dataclass(frozen=True, slots=True)
class ShardingView:
    """The sharded workloads and the alpha-beta model of their steps."""

    devices: str
    note: str
    emulated: bool
    rows: list[ShardedRow]
    bf16_variant: bool
    notes: list[str]
    peak: Num
    bandwidth: Num
    interconnect: Num
    critical: Num
    steps: StepsView | None
    available: bool = True


def sharding(sh: ShardingStudy) -> ShardingView | ShardingUnavailable:
    observed = sh.observed
    if observed is None:
        return ShardingUnavailable(sh.reason)
    model = sh.model
    kind = model.kind if model is not None else Kind.HYPOTHETICAL.value
    budget = model.budget if model is not None else None
    rows = []
    notes: list[str] = []
    for i, w in enumerate(observed.workloads):
        per = w.per_device
        # Bounds rows point back at their workload by index (several user workloads share
        # the sharding "user").
        found = model.of_workload(i) if model is not None else None
        b = found.bounds if found is not None else None
        colls = "; ".join(
            f"{c.op} {array_text(c)} over {plural(c.group_size, 'device', 'devices')}"
            for c in w.collectives) or "none"
        notes += [f"{w.name}: {note}" for note in w.notes]
        rows.append(ShardedRow(
            name=w.name,
            description=w.description,
            collectives=colls,
            flops=count(per.get("flops"), Kind.ANALYTIC),
            hbm=n(per.get("hbm_bytes"), "B", Kind.ANALYTIC),
            comm=n(per.get("comm_bytes"), "B", Kind.ANALYTIC),
            comm_hlo=_sent(per),
            xla_flops=count(w.xla_per_device.get("flops"), Kind.COMPILER_ESTIMATE),
            check=_check_text(w.check),
            t_math=n(b.t_math if b else None, "s", kind),
            t_mem=n(b.t_mem if b else None, "s", kind),
            t_comm=n(b.t_comm if b else None, "s", kind),
            lower=n(b.lower_bound if b else None, "s", kind),
            upper=n(b.upper_bound if b else None, "s", kind),
            binding=b.binding if b else "",
            comm_intensity=Num(format_intensity(b.comm_intensity), Kind.ANALYTIC.value)
            if b and b.comm_intensity else Num("no communication"),
            measured=n(sharded_seconds(w), "s", Kind.MEASURED),
        ))
    crit = model.bounds[0].bounds.critical_intensity if model and model.bounds else None
    return ShardingView(
        devices=str(observed.devices),
        note=observed.note,
        emulated=observed.emulated,
        rows=rows,
        bf16_variant=any(w.dtype == "bfloat16" and not w.step and w.sharding != "user"
                         for w in observed.workloads),
        notes=list(dict.fromkeys(notes)),
        peak=n(budget.peak if budget else None, "FLOP/s", kind),
        bandwidth=n(budget.bandwidth if budget else None, "B/s", kind),
        interconnect=n(budget.interconnect if budget else None, "B/s", kind),
        critical=Num(format_intensity(crit), kind) if crit else Num("unknown"),
        steps=None if sh.steps is None else _sharded_steps(sh.steps),
    )


def _batch_text(batch: WorkloadBatch | None, mesh: str) -> str:
    if batch is None:
        return f"arguments as declared; mesh {mesh}"
    return f"B={batch.global_batch} ({batch.per_device} per device); mesh {mesh}"


def _runs_text(c: ShardedCollective) -> str:
    trips = c.trip_count  # results saved before loops were read: once
    loops = c.loops
    if trips is None:
        return "unknown: a loop without a known trip count, counted once (a lower bound)"
    return f"{trips} ({plural(len(loops), 'loop', 'loops')})" if loops else "1"


ALGORITHM_WORDS: dict[str, str] = {
    "ring": "ring",
    "tree": "double binary tree",
    "direct": "direct",
    "torus ring": "rings on the torus axes",
    "bisection": "bisection-bound",
}


def algorithm_words(level: PricedLevel) -> str:
    """One level's algorithm in words, with where it runs: the torus slice it spans, the links
    across the cut an all-to-all is bound by."""
    name = level.algorithm
    text = ALGORITHM_WORDS.get(name, name)
    if level.slice:
        text += f" ({level.slice}"
        if level.cut_links:
            text += f", {plural(level.cut_links, 'link', 'links')} across the cut"
        text += ")"
    return f"{text} on {level.level}"


def _algorithm_text(priced: CollectiveCost) -> str:
    """The algorithm at each level, its steps, the one it beat; which level sets the time
    when the levels are pipelined."""
    parts = []
    levels = priced.levels
    for level in levels:
        text = f"{algorithm_words(level)}, {plural(level.steps, 'step', 'steps')}"
        rejected = level.rejected
        if rejected and rejected.time > level.time:
            text += (f" (faster than the "
                     f"{ALGORITHM_WORDS.get(rejected.algorithm, rejected.algorithm)})")
        elif rejected:
            text += (f" (as fast as the "
                     f"{ALGORITHM_WORDS.get(rejected.algorithm, rejected.algorithm)})")
        if len(levels) > 1 and level.binds:
            text += ", the slower level: its bandwidth time is the collective's (pipelined)"
        parts.append(text)
    return "; ".join(parts)


def device_groups(groups: Sequence[Sequence[int]], device_ids: Sequence[int] | None
                  ) -> list[list[int]]:
    """Replica groups as device ids: the HLO numbers a device by its place in the program's
    device assignment (the mesh's devices in order); ``device_ids`` maps place to id. Without
    them (results saved before meshes kept their devices) the places stand."""
    if not device_ids:
        return [list(g) for g in groups]
    return [[int(device_ids[i]) if 0 <= i < len(device_ids) else i for i in g] for g in groups]


@dataclass(frozen=True, slots=True)
class AbCollective:
    """A collective of a compiled program, priced by the alpha-beta model."""

    workload: str
    op: str
    array: str
    groups: str
    sent: Num
    runs: str
    algorithm: str
    t_latency: Num
    t_bandwidth: Num
    note: str


def _ab_collective(row: StepCollective, kind: str) -> AbCollective:
    c, priced = row.collective, row.priced
    if c.replica_groups:
        groups = device_groups(c.replica_groups, row.device_ids)
        label = "device ids" if row.device_ids else "devices"
        groups_text = (f"{len(groups)} x {len(groups[0])}, {label} "
                       + "".join("{" + ",".join(map(str, g)) + "}" for g in groups[:2])
                       + (" ..." if len(groups) > 2 else ""))
    elif c.group_size == 1:
        axes = row.unit_axes
        over = (f" (mesh axis {', '.join(repr(a) for a in axes)} of size 1)" if axes else "")
        groups_text = f"one device{over}: sends nothing"
    else:
        groups_text = "unknown" if c.group_size is None else "all devices"
    sent = c.program_bytes_per_device
    if sent is None:
        sent = c.bytes_per_device
    return AbCollective(
        workload=row.workload,
        op=c.op,
        array=array_text(c),
        groups=groups_text,
        sent=n(sent, "B", Kind.ANALYTIC),
        runs=_runs_text(c),
        algorithm=_algorithm_text(priced) if priced else "not priced",
        t_latency=n(priced.t_latency if priced else None, "s", kind),
        t_bandwidth=n(priced.t_bandwidth if priced else None, "s", kind),
        note=c.dtype_note,
    )


@dataclass(frozen=True, slots=True)
class JaxRooflineRow:
    """Our counts of a workload beside jax.experimental.roofline's."""

    name: str
    available: bool
    ours_bytes: Num
    jax_bytes: Num
    ours_steps: Num
    jax_latency: Num
    ours_flops: Num
    jax_flops: Num
    why: str


def _jax_roofline_row(r: JaxRooflineCompared | JaxRooflineUnavailable) -> JaxRooflineRow:
    """Our counts (analytic) beside ``jax.experimental.roofline``'s: JAX's own estimate, of
    kind compiler estimate here as in the accounting tables."""
    if isinstance(r, JaxRooflineUnavailable):
        unknown = Num("not available")
        return JaxRooflineRow(name=r.name, available=False, ours_bytes=unknown,
                              jax_bytes=unknown, ours_steps=unknown, jax_latency=unknown,
                              ours_flops=unknown, jax_flops=unknown,
                              why=f"not available: {r.reason}")
    ours, theirs = r.ours_bytes, r.jax_bytes
    if ours == theirs:
        why = "the same ring formulas: bytes agree"
    elif r.in_loops and theirs and ours:
        why = (f"jax costs a loop body once; the HLO runs its collectives {r.collectives} "
               f"times per step ({decimal(ours / theirs, 3)} x its bytes)")
    else:
        why = "differ: see the collectives table"
    return JaxRooflineRow(
        name=r.name,
        available=True,
        ours_bytes=n(ours, "B", Kind.ANALYTIC),
        jax_bytes=n(theirs, "B", Kind.COMPILER_ESTIMATE),
        ours_steps=count(r.ours_steps, Kind.ANALYTIC),
        jax_latency=count(r.jax_latency, Kind.COMPILER_ESTIMATE),
        ours_flops=count(r.ours_flops, Kind.ANALYTIC),
        jax_flops=count(r.jax_flops, Kind.COMPILER_ESTIMATE),
        why=why,
    )


@dataclass(frozen=True, slots=True)
class EmulatedRow:
    """A workload timed on emulated devices, beside its serialised prediction."""

    name: str
    measured: Num
    per_device: Num
    serialised: Num
    ratio: Num
    devices: str


def _emulated_rows(timings: Sequence[EmulatedTiming]) -> list[EmulatedRow]:
    rows = []
    for r in timings:
        rows.append(EmulatedRow(
            name=r.name,
            measured=n(r.measured, "s", Kind.MEASURED),
            # Times from the measured peak are predictions (kind predicted); the ratio of a
            # measurement to a prediction is the miss, predicted as the page's others are.
            per_device=n(r.t_math_measured_peak, "s", Kind.PREDICTED),
            serialised=n(r.serialised, "s", Kind.PREDICTED),
            ratio=ratio(r.ratio, Kind.PREDICTED, 3),
            devices=str(r.devices),
        ))
    return rows


def _critical_text(r: StepRecord, kind: str) -> Num:
    crit = r.critical_batch
    if r.batch is None:
        return Num("no batch known")
    if r.bounds.t_comm == 0:
        return Num("no communication")
    if crit is None:
        return Num("none: communication grows as fast as the math")
    return Num(f"B ≈ {whole(crit, 3)}", kind)


def _book_text(r: StepRecord, kind: str) -> Num:
    """The compute-bound batch as the scaling book states it: bandwidth only, the backward
    pass's flops (twice the forward); why there is none."""
    book = r.critical_batch_book
    if book is not None:
        return Num(f"B ≈ {whole(book, 3)}", kind)
    if r.batch is None or r.bounds.t_comm == 0:
        return Num("")
    if r.batch.comm_scales:
        return Num("none: activations grow with the batch (the book bounds the model axis)")
    return Num("forward flops not known")


def _network_text(r: ProjectedStep) -> str:
    """Each level a projected step's collectives cross: devices (the torus slice), the
    algorithms chosen there."""
    parts = []
    for level in r.bounds.levels:
        where = f"{level.level}, {level.devices:,} devices"
        if level.slice:
            where += f" ({level.slice})"
        words = " and ".join(ALGORITHM_WORDS.get(a, a) for a in level.algorithms)
        parts.append(f"{where}: {words}")
    return "; ".join(parts) or r.link


@dataclass(frozen=True, slots=True)
class ProjectionRow:
    """A training step projected to more devices of a real chip."""

    name: str
    devices: str
    link: str
    network: str
    batch: str
    t_math: Num
    t_mem: Num
    t_latency: Num
    t_bandwidth: Num
    lower: Num
    binding: str
    critical: Num
    flags: str


@dataclass(frozen=True, slots=True)
class UnprojectedRow:
    """A training step not projected to a number of devices, and why."""

    name: str
    devices: str
    reason: str


def _projection_row(r: ProjectedStep | NotProjected) -> ProjectionRow | UnprojectedRow:
    if isinstance(r, NotProjected):
        return UnprojectedRow(name=r.name, devices=f"{r.devices:,}",
                              reason=f"not projected: {r.reason}")
    kinds = r.kinds
    per_device = r.critical_per_device
    if r.comm_scales:
        crit = r.critical_batch
        critical = (Num(f"global B ≈ {whole(crit, 3)}", kinds.critical_batch) if crit
                    else Num("none: communication grows with the batch"))
    elif per_device:
        critical = Num(f"{whole(per_device, 3)} per device", kinds.critical_batch)
    else:
        critical = Num("no communication")
    bounds = r.bounds
    return ProjectionRow(
        name=r.name, devices=f"{r.devices:,}",
        link=r.link, network=_network_text(r), batch=f"B={r.global_batch:,}",
        t_math=n(bounds.t_math, "s", kinds.t_math),
        t_mem=n(bounds.t_mem, "s", kinds.t_mem),
        t_latency=n(bounds.t_comm_latency, "s", kinds.t_comm_latency),
        t_bandwidth=n(bounds.t_comm_bandwidth, "s", kinds.t_comm_bandwidth),
        lower=n(bounds.lower_bound, "s", kinds.lower_bound), binding=bounds.binding,
        critical=critical,
        flags="; ".join(r.flags),
    )


def _crossover_sentences(pr: Projection) -> list[tuple[str | Num, ...]]:
    """One sentence per step with a crossover: the per-device batch above which it stays
    compute-bound, inside the fast domain and across the network, given both ways: with the
    assumed latency on the whole step's flops, and bandwidth only on the backward pass's flops
    (the scaling book's convention), each with the level whose bandwidth sets it."""
    by_name: dict[str, list[Crossover]] = {}
    for c in pr.crossovers:
        by_name.setdefault(c.name, []).append(c)
    out: list[tuple[str | Num, ...]] = []
    for name, points in by_name.items():
        parts: list[str | Num] = [f"{name}: compute-bound above "]
        for i, c in enumerate(points):
            if i:
                parts.append("; and above ")
            parts += [Num(whole(c.per_device, 3), c.kind),
                      f" samples per device on {c.devices:,} devices ({c.link}; whole "
                      "step's flops, latency included)"]
            if c.per_device_book is not None:
                parts += [", ", Num(whole(c.per_device_book, 3), c.book_kind),
                          " bandwidth only with the book's convention (backward flops, twice "
                          f"the forward; set by the {c.binding_level or c.link} "
                          "bandwidth)"]
        out.append((*parts, "."))
    return out


def _links_text(pr: Projection) -> list[str]:
    out = []
    for link in pr.links:
        text = f"{link.name} {format_si(link.egress, 'B/s')} per direction"
        if link.link_bandwidth is not None:
            text += f" per chip, {format_si(link.link_bandwidth, 'B/s')} per torus link one way"
        text += f", {format_si(link.latency, 's')} per step ({link.latency_note})"
        out.append(text)
    return out


@dataclass(frozen=True, slots=True)
class StepRow:
    """A sharded step's time bounds under the alpha-beta model."""

    name: str
    batch: str
    t_math: Num
    t_mem: Num
    memory: Num
    t_latency: Num
    t_bandwidth: Num
    t_comm: Num
    lower: Num
    upper: Num
    binding: str
    critical: Num
    critical_book: Num
    flag: str


def _step_row(r: StepRecord, kind: str) -> StepRow:
    bounds = r.bounds
    lower_bound = bounds.comm_lower_bound
    t_comm_latency = n(bounds.t_comm_latency, "s", kind)
    t_comm_bandwidth = n(bounds.t_comm_bandwidth, "s", kind)
    if lower_bound:
        t_comm_latency = Num(f"≥ {t_comm_latency.text}", kind)
        t_comm_bandwidth = Num(f"≥ {t_comm_bandwidth.text}", kind)
    return StepRow(
        name=r.name,
        batch=_batch_text(r.batch, r.mesh),
        t_math=n(bounds.t_math, "s", kind),
        t_mem=n(bounds.t_mem, "s", kind),
        memory=n(bounds.memory_bytes, "B", Kind.ANALYTIC),
        t_latency=t_comm_latency,
        t_bandwidth=t_comm_bandwidth,
        t_comm=n(bounds.t_comm, "s", kind),
        lower=n(bounds.lower_bound, "s", kind),
        upper=n(bounds.upper_bound, "s", kind),
        binding=bounds.binding,
        critical=_critical_text(r, kind),
        critical_book=_book_text(r, kind),
        flag=(f"{plural(bounds.unknown_trips, 'collective', 'collectives')} in a loop of "
              "unknown trip count, counted once: T_comm is a lower bound")
        if lower_bound else "",
    )


def _jax_unavailable(rows: Sequence[JaxRooflineCompared | JaxRooflineUnavailable]) -> str:
    reasons = sorted({r.reason for r in rows if isinstance(r, JaxRooflineUnavailable)})
    return "; ".join(reasons)


@dataclass(frozen=True, slots=True)
class StepsView:
    """Display strings of the alpha-beta model of the sharded steps, and its projection."""

    latency: Num
    interconnect: Num
    algorithms: list[str]
    rows: list[StepRow]
    flags: list[str]
    collectives: list[AbCollective]
    jax_roofline: list[JaxRooflineRow]
    jax_unavailable: str
    emulated: list[EmulatedRow]
    emulated_range: str
    projection: list[ProjectionRow | UnprojectedRow]
    preset: str
    peak: Num
    peak_dtype: str
    hbm: Num
    links: list[str]
    domain: str
    torus: str
    crossovers: list[tuple[str | Num, ...]]


def _sharded_steps(model: StepStudy) -> StepsView:
    """Display strings of the alpha-beta model
    (:func:`roofline_report.analysis.study.step_study`)."""
    kind = model.kind
    budget = model.budget
    pr = model.projection
    projection = [_projection_row(r) for r in pr.rows]
    emulated = _emulated_rows(model.emulated)
    ratios = [r.ratio for r in model.emulated if r.ratio]
    return StepsView(
        latency=n(budget.latency, "s", kind),
        interconnect=n(budget.interconnect, "B/s", kind),
        algorithms=list(model.algorithms),
        rows=[_step_row(r, kind) for r in model.rows],
        flags=[f"{r.name}: {plural(r.bounds.unknown_trips, 'collective', 'collectives')} in "
               "a while loop of unknown trip count, counted once: its T_comm is a lower bound"
               for r in model.rows if r.bounds.comm_lower_bound],
        collectives=[_ab_collective(r, kind) for r in model.collectives],
        jax_roofline=[_jax_roofline_row(r) for r in model.jax_roofline],
        jax_unavailable=_jax_unavailable(model.jax_roofline),
        emulated=emulated,
        emulated_range=(f"{decimal(min(ratios), 2)}–{decimal(max(ratios), 2)}"
                        if len(ratios) > 1 else decimal(ratios[0], 2) if ratios else ""),
        projection=projection,
        preset=pr.preset,
        peak=n(pr.peak, "FLOP/s", pr.kind),
        peak_dtype=pr.peak_dtype,
        hbm=n(pr.hbm_bandwidth, "B/s", pr.kind),
        links=_links_text(pr),
        domain=str(pr.domain or ""),
        torus=" x ".join(map(str, pr.torus)),
        crossovers=_crossover_sentences(pr),
    )
