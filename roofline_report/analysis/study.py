"""The seed's worked model, experiment and exercise, computed from the pure model (no jax).

Everything here is a function of its arguments and lands in results.json, so the report shows the
numbers the project computed, never numbers typed into a template.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from roofline_report.analysis import comm as comm_model
from roofline_report.analysis import (
    comm_alpha_beta,
    comm_network,
    comm_projection,
    comm_step,
)
from roofline_report.analysis import seed_model as model
from roofline_report.analysis.seed_records import (
    CeilingSeries,
    DoubledTraffic,
    SeedExercise,
    SeedFigure,
    SeedModel,
    SeedStudy,
)
from roofline_report.analysis.sharding_records import (
    CommBudget,
    CommStudy,
    Crossover,
    EmulatedTiming,
    JaxRooflineCompared,
    JaxRooflineUnavailable,
    NotProjected,
    ProjectedStep,
    Projection,
    ProjectionKinds,
    ProjectionLink,
    StepBounds,
    StepCollective,
    StepRow,
    StepStudy,
    WorkloadBatch,
    WorkloadBounds,
)
from roofline_report.analysis.stats import own_time
from roofline_report.hlo.collectives import COLLECTIVE_OPS
from roofline_report.kinds import Kind
from roofline_report.results.schema_sharding import ShardedWorkload, Sharding

#: A petabyte: more than any one device's memory holds, so a square matmul whose matrices take
#: more cannot run, and the size of the ridge says only that every size that runs is below it.
BEYOND_MEMORY_BYTES = 1e15



def sharded_seconds(workload: ShardedWorkload) -> float | None:
    """A sharded workload's time per call, by the report's one rule
    (:func:`~roofline_report.analysis.stats.own_time` of its samples); a file written before
    samples were kept holds one time, read as its only sample; None when it was not timed."""
    samples = workload.measured_per_call_s
    if samples:
        return own_time([float(x) for x in samples])
    legacy = workload.measured_seconds
    return float(legacy) if legacy else None

def hypothetical_model(
    peak: float, bandwidth: float, sizes: Sequence[int] = model.SEED_SIZES, itemsize: int = 4
) -> SeedModel:
    """Step 3 of the seed: square-matmul intensities n/6 and their ceilings under the budgets."""
    contracts = tuple(model.contract(n, n, n, itemsize) for n in sizes)
    intensity = tuple(c.intensity for c in contracts)
    ridge = model.ridge(peak, bandwidth)
    return SeedModel(
        kind=Kind.HYPOTHETICAL,
        itemsize=itemsize,
        sizes=tuple(sizes),
        contracts=contracts,
        intensity=intensity,
        closed_form_intensity=tuple(model.square_intensity(n, itemsize) for n in sizes),
        memory_ceiling=tuple(bandwidth * x for x in intensity),
        roofline=tuple(model.attainable_series(intensity, peak, bandwidth)),
        bound=tuple(model.bound_by(x, peak, bandwidth) for x in intensity),
        ridge=ridge,
        ridge_square_size=ridge * 3 * itemsize / 2,
        # The three n x n matrices of the square matmul at the ridge: beyond any memory
        # (BEYOND_MEMORY_BYTES), no square matmul that runs reaches the ridge.
        ridge_square_bytes=3 * itemsize * (ridge * 3 * itemsize / 2) ** 2,
        figure=roofline_figure_data(intensity, peak, bandwidth),
    )


def roofline_figure_data(
    intensity: Sequence[float], peak: float, bandwidth: float
) -> SeedFigure:
    """The seed's figure data: the intensities plus the ridge, and the three series."""
    xs = tuple(sorted([*intensity, model.ridge(peak, bandwidth)]))
    return SeedFigure(
        x=xs,
        xlabel="minimum-traffic operations per byte (FLOP/byte)",
        ylabel="hypothetical ceiling (GFLOP/s)",
        series=(
            CeilingSeries("bandwidth budget", tuple(bandwidth * x / 1e9 for x in xs)),
            CeilingSeries("compute budget", (peak / 1e9,) * len(xs)),
            CeilingSeries("combined ceiling",
                          tuple(model.attainable(x, peak, bandwidth) / 1e9 for x in xs)),
        ),
    )


def doubled_traffic_experiment(
    peak: float, bandwidth: float, sizes: Sequence[int] = model.SEED_SIZES, itemsize: int = 4
) -> DoubledTraffic:
    """The seed's experiment: the work is unchanged; doubling traffic halves the intensity."""
    base = hypothetical_model(peak, bandwidth, sizes, itemsize)
    reduced = tuple(x / 2 for x in base.intensity)
    revised = tuple(model.attainable_series(reduced, peak, bandwidth))
    return DoubledTraffic(
        kind=Kind.HYPOTHETICAL,
        sizes=tuple(sizes),
        intensity=base.intensity,
        reduced_intensity=reduced,
        roofline=base.roofline,
        revised=revised,
        ratio=tuple(r / b for r, b in zip(revised, base.roofline, strict=True)),
        halved=tuple(model.bound_by(x, peak, bandwidth) == "memory" for x in reduced),
        unchanged=tuple(r == peak for r in revised),
    )


def exercise(
    m: int, k: int, n: int, peak: float, bandwidth: float, itemsize: int = 4
) -> SeedExercise:
    """The seed's exercise: work, minimum traffic, intensity and bound of an (m,k)x(k,n) matmul."""
    c = model.contract(m, k, n, itemsize)
    return SeedExercise(
        kind=Kind.ANALYTIC,
        shapes=((m, k), (k, n)),
        itemsize=itemsize,
        flops=c.flops,
        minimum_bytes=c.minimum_bytes,
        intensity=c.intensity,
        bandwidth_times_intensity=bandwidth * c.intensity,
        attainable=model.attainable(c.intensity, peak, bandwidth),
        bound=model.bound_by(c.intensity, peak, bandwidth),
        peak=peak,
        bandwidth=bandwidth,
    )


def seed_study(peak: float, bandwidth: float) -> SeedStudy:
    """The seed's model, experiment and exercise (a 48 × 24 by 24 × 12 matmul) under the
    budgets."""
    return SeedStudy(model=hypothetical_model(peak, bandwidth),
                     experiment=doubled_traffic_experiment(peak, bandwidth),
                     exercise=exercise(48, 24, 12, peak, bandwidth))


DEFAULT_LATENCY = 1e-6
"""Assumed latency of one collective step under the hypothetical budgets (seconds)."""


def comm_study(
    sharding: Sharding, peak: float, bandwidth: float, interconnect: float,
    *, latency: float = DEFAULT_LATENCY, kind: str = Kind.HYPOTHETICAL.value,
    source: str = "assumed budgets",
) -> CommStudy:
    """Per-device T_math, T_mem, T_comm of each sharded workload under the given budgets, and
    how they scale with the number of devices and the batch size (analytic series). Each
    workload's bounds are :func:`comm_step.step_bounds` on the assumed interconnect, the very
    figures :func:`step_study`'s table shows (collectives' latency and, for a training step, the
    collectives' buffers in its memory traffic)."""
    flat = comm_network.flat_network(interconnect, latency, kind=kind)
    rows = []
    for index, w in enumerate(sharding.workloads):
        per = w.per_device
        if not {"flops", "hbm_bytes", "comm_bytes"} <= set(per):
            continue
        bounds = comm_step.step_bounds(
            flops=per["flops"], hbm_bytes=per["hbm_bytes"], collectives=w.collectives,
            peak_flops=peak, hbm_bandwidth=bandwidth, network=flat,
            count_buffers=bool(w.step),
        )
        lower_bound_only = per.get("comm_bytes_complete") is False or bounds.comm_lower_bound
        rows.append(WorkloadBounds(index, w.name, w.sharding, replace(
            bounds, comm_lower_bound=lower_bound_only)))
    # The analytic series of the built-in matmul, at the batch the matmuls were measured at
    # (none when the run has no built-in matmul, as with --only-config).
    matmul = next((w for w in sharding.workloads
                   if w.sharding in comm_model.STRATEGIES and w.shapes), None)
    series = None
    if matmul is not None and matmul.shapes is not None:
        shapes = matmul.shapes
        d_model, d_ff = shapes["w"][:2]
        batch = int(shapes["x"][0])
        series = comm_model.scaling_series(
            d_model=int(d_model), d_ff=int(d_ff), batch=batch,
            device_counts=[1, 2, 4, 8], batches=sorted({8 * 2**i for i in range(0, 9)} | {batch}),
            devices=int(sharding.devices), peak_flops=peak, hbm_bandwidth=bandwidth,
            interconnect_bandwidth=interconnect,
        )
    return CommStudy(kind=kind, source=source,
                     budget=CommBudget(peak, bandwidth, interconnect, latency),
                     bounds=tuple(rows), series=series)


# --------------------------------------------------------------------------------------------
# Sharded steps: the alpha-beta model, the projection, the emulated measurement
# --------------------------------------------------------------------------------------------

DEFAULT_PROJECTION_PRESET = "H100 SXM"

#: Whether the collective arrays of a built-in sharding grow with the batch.
_MATMUL_COMM_SCALES = {"data": False, "contracting": True, "fsdp": False}
_SPLIT_BATCH = {"data": True, "contracting": False, "fsdp": True}


def _mesh_text(workload: ShardedWorkload) -> str:
    mesh = workload.mesh or {}
    names, shape = mesh.get("axis_names") or [], mesh.get("shape") or []
    return ", ".join(f"{a}={s}" for a, s in zip(names, shape, strict=False)) or "unknown"


def _devices_of(workload: ShardedWorkload, default: int) -> int:
    shape = (workload.mesh or {}).get("shape") or []
    return math.prod(int(s) for s in shape) if shape else default


def workload_batch(workload: ShardedWorkload, devices: int) -> WorkloadBatch | None:
    """The global and per-device batch of a sharded workload and whether its communication
    grows with it; None when it has no batch the tool knows (a user's function: its arguments
    are as declared)."""
    if workload.batch is not None:
        batch = workload.batch
        return WorkloadBatch(int(batch["global"]), int(batch["per_device"]),
                             bool(workload.comm_scales_with_batch))
    strategy = workload.strategy or workload.sharding
    x = (workload.shapes or {}).get("x")
    if strategy in _MATMUL_COMM_SCALES and x:
        global_batch = int(x[0])
        return WorkloadBatch(
            global_batch, global_batch // devices if _SPLIT_BATCH[strategy] else global_batch,
            _MATMUL_COMM_SCALES[strategy])
    return None


def _collective_rows(workload: ShardedWorkload, network: Sequence[comm_network.Level]
                     ) -> list[StepCollective]:
    """Each collective instruction of a workload (a combined one once), priced on ``network``
    (None where it has no formula, size or group, or the network cannot carry it)."""
    rows = []
    mesh = workload.mesh or {}
    # mesh axes of size 1: a collective over one of them has a group of one device
    unit_axes = tuple(str(a) for a, size in zip(mesh.get("axis_names") or [],
                                                mesh.get("shape") or [], strict=False)
                      if size == 1)
    device_ids = mesh.get("device_ids")
    for c in comm_step.combine_records(workload.collectives):
        priced = None
        size = comm_step.priced_bytes(c)
        if c.op in COLLECTIVE_OPS and size is not None and c.group_size is not None:
            trips = c.trip_count
            try:
                priced = comm_network.collective_cost(
                    c.op, size, int(c.group_size), network,
                    count=1 if trips is None else int(trips))
            except comm_network.NotPriced:
                priced = None
        rows.append(StepCollective(
            workload=workload.name, collective=c, priced=priced, unit_axes=unit_axes,
            device_ids=None if device_ids is None else tuple(device_ids)))
    return rows


def forward_flops(workload: ShardedWorkload, devices: int) -> float | None:
    """A workload's forward-pass matmul flops per device: recorded with it, else those of a
    built-in training step (:func:`comm_step.step_forward_flops`); None when unknown."""
    recorded = workload.per_device.get("forward_flops")
    if recorded is not None:
        return float(recorded)
    if not workload.step or not workload.sizes:
        return None
    value = comm_step.step_forward_flops(workload.sharding, workload.sizes, devices)
    return None if value is None else float(value)


def _workload_dtype(workload: ShardedWorkload) -> str:
    """The dtype a workload computes in: declared by the built-ins, else that of its first
    argument; float32 when none is known."""
    dtype = workload.dtype or (workload.shapes or {}).get("dtype")
    if not dtype:
        arguments = workload.arguments or []
        dtype = arguments[0].get("dtype") if arguments else None
    return str(dtype or "float32")


def _preset_peak(preset: Any, dtype: str = "float32") -> tuple[float, str]:
    """The preset's peak in the program's dtype: bf16 for a bfloat16 program; the float32
    peak for float32 (the steps run at HIGHEST precision), else bf16, said so."""
    if dtype in ("bfloat16", "bf16", "float16", "fp16"):
        value = preset.peak(dtype)
        if value is not None:
            return float(value), "bf16" if dtype in ("bfloat16", "bf16") else "fp16"
    value = preset.peak("fp32")
    if value is not None:
        return float(value), "fp32"
    return float(preset.peak("bf16")), "bf16 (no published fp32 figure)"
def torus_network(torus: Any) -> tuple[comm_network.Level, ...]:
    """The ICI of a TPU pod that is a 3D torus (:class:`roofline_report.networks.TpuTorus`) as
    the alpha-beta model's one level: links of its one-way bandwidth (spec sheet) on the
    pod's axes, rings closing on axes of a multiple of ``wraps_every``, an assumed latency."""
    shape = " x ".join(map(str, torus.axes))
    return (comm_network.Level(
        f"ICI ({shape} torus)", torus.link_bandwidth, torus.latency,
        devices=math.prod(torus.axes), topology="torus", torus=tuple(torus.axes),
        slices=tuple(torus.slices), bandwidth_kind=Kind.SPEC_SHEET.value,
        latency_kind=Kind.HYPOTHETICAL.value, wraps_every=torus.wraps_every),)


def preset_network(preset: Any) -> tuple[comm_network.Level, ...]:
    """The network of a chip preset as the alpha-beta model's levels: its scale-up link (a
    switch of ``domain`` devices at the link's egress, or the TPU pod's torus of links: the
    preset's own 2D torus, or the 3D torus :func:`roofline_report.networks.torus_for` gives
    for its name) and, where one is published, the scale-out link beyond it. Bandwidths are
    spec-sheet figures, latencies assumptions (kind hypothetical). Empty when the preset has no
    link with a latency."""
    from roofline_report import networks

    torus = networks.torus_for(preset.name)
    if torus is not None:
        return torus_network(torus)
    inner = preset.interconnect
    if inner is None or inner.latency is None:
        return ()
    spec, hyp = Kind.SPEC_SHEET.value, Kind.HYPOTHETICAL.value
    if preset.torus and inner.link_bandwidth is not None:
        shape = " x ".join(map(str, preset.torus))
        first = comm_network.Level(
            f"{inner.name} ({shape} torus)", inner.link_bandwidth, inner.latency,
            devices=math.prod(preset.torus), topology="torus", torus=tuple(preset.torus),
            slices=tuple(preset.slices), bandwidth_kind=spec, latency_kind=hyp)
    else:
        first = comm_network.Level(inner.name, inner.egress, inner.latency,
                                   devices=preset.domain, bandwidth_kind=spec, latency_kind=hyp)
    outer = preset.scale_out
    if outer is None or outer.latency is None:
        return (first,)
    return (first, comm_network.Level(outer.name, outer.egress, outer.latency,
                                      bandwidth_kind=spec, latency_kind=hyp))


def _links(preset: Any) -> tuple[ProjectionLink, ...]:
    """The links the projection prices, as the page prints them: the 3D-torus ICI of
    :func:`roofline_report.networks.torus_for` where it prices the preset, else the preset's
    own links."""
    from roofline_report import networks

    torus = networks.torus_for(preset.name)
    if torus is not None:
        return (ProjectionLink("ICI", torus.egress, torus.link_bandwidth, torus.latency,
                               torus.latency_note),)
    return tuple(ProjectionLink(link.name, link.egress, link.link_bandwidth, link.latency,
                                link.latency_note)
                 for link in (preset.interconnect, preset.scale_out) if link is not None)


def _projection_kinds(point: StepBounds) -> ProjectionKinds:
    """The kind of each number of a projected row: spec-sheet figures, except what an assumed
    latency enters (T_comm's latency, T_comm, a bound it sets, the critical batch)."""
    spec, hyp = Kind.SPEC_SHEET.value, Kind.HYPOTHETICAL.value
    assumed = point.t_comm_latency > 0
    comm = hyp if assumed else spec
    return ProjectionKinds(
        t_math=spec, t_mem=spec, t_comm_bandwidth=spec, t_comm_latency=hyp, t_comm=comm,
        lower_bound=comm if point.binding == "communication" else spec,
        upper_bound=comm, critical_batch=comm)


def _not_projected(preset: Any, reason: str) -> str:
    if preset.scale_out is None and "larger than one" in reason:
        unit = "pod" if preset.torus else "domain"
        return (f"beyond one {preset.name} {unit} of {preset.domain:,} chips: no published "
                f"network figure across {unit}s for {preset.name}")
    return reason


def _jax_roofline_row(workload: ShardedWorkload, per: Mapping[str, Any], steps: int
                      ) -> JaxRooflineCompared | JaxRooflineUnavailable | None:
    """Ours beside jax.experimental.roofline for one workload that was compared (or why it
    could not be); None for a workload never given to it."""
    jr = workload.jax_roofline
    if jr is None:
        return None
    if not jr.get("available"):
        return JaxRooflineUnavailable(workload.name, str(jr.get("reason") or "not available"))
    trips = [c.trip_count or 1 for c in comm_step.combine_records(workload.collectives)]
    return JaxRooflineCompared(
        name=workload.name,
        ours_bytes=per.get("comm_bytes_hlo"),
        jax_bytes=sum(jr.get("ici_bytes", {}).values()),
        ours_steps=steps,
        jax_latency=sum(jr.get("ici_latency", {}).values()),
        ours_flops=per["flops"],
        jax_flops=jr.get("flops"),
        in_loops=any(t > 1 for t in trips),
        collectives=sum(trips),
    )


def _crossovers(rows: Sequence[ProjectedStep | NotProjected]) -> list[Crossover]:
    """Per projected step whose communication does not grow with the batch: the per-device
    batch above which it stays compute-bound, inside the first level and past it."""
    out = []
    for name in dict.fromkeys(r.name for r in rows):
        points = [r for r in rows if r.name == name and isinstance(r, ProjectedStep)
                  and not r.comm_scales and r.critical_per_device]
        if not points:
            continue
        inside = [r for r in points if len(r.bounds.levels) == 1]
        across = [r for r in points if len(r.bounds.levels) > 1]
        for r in ([inside[-1]] if inside else []) + ([across[-1]] if across else []):
            assert r.critical_per_device is not None  # kept above
            out.append(Crossover(name=name, devices=r.devices, link=r.link,
                                 per_device=r.critical_per_device,
                                 kind=r.kinds.critical_batch,
                                 per_device_book=r.critical_per_device_book,
                                 book_kind=r.kinds.t_comm_bandwidth,
                                 binding_level=r.binding_level))
    return out


def step_study(
    sharding: Sharding,
    peak: float,
    bandwidth: float,
    interconnect: float,
    *,
    latency: float = DEFAULT_LATENCY,
    preset: str | None = None,
    measured_peak: float | None = None,
    measured_bandwidth: float | None = None,
    kind: str = Kind.HYPOTHETICAL.value,
    source: str = "assumed budgets",
) -> StepStudy:
    """The alpha-beta view of every sharded workload, under this render's budgets, and the
    training steps projected on a chip preset.

    Per workload (:class:`~roofline_report.analysis.sharding_records.StepRow`): its mesh,
    devices, batch, dtype, :func:`comm_step.step_bounds` and critical batch; per collective
    instruction its priced alpha-beta cost; per workload given to jax.experimental.roofline
    ours beside it, or why it is not available; the emulated timings; and the
    :class:`~roofline_report.analysis.sharding_records.Projection`. The HLO's collectives (x
    their loop trip counts, in the program's dtype) are priced one after another (no overlap
    between collectives), each with the algorithm the libraries run (an all-reduce the faster
    of the ring and the double binary tree); a training step's memory traffic adds its
    collectives' buffers (the gathered weights). Each row's ``critical_batch_book`` is the
    compute-bound batch as the scaling book states it (:func:`comm_step.book_critical_batch`).
    """
    from roofline_report import presets

    flat = comm_network.flat_network(interconnect, latency, kind=kind)
    rows: list[StepRow] = []
    collectives: list[StepCollective] = []
    compare: list[JaxRooflineCompared | JaxRooflineUnavailable] = []
    emulated: list[EmulatedTiming] = []
    for index, w in enumerate(sharding.workloads):
        per = w.per_device
        if not {"flops", "hbm_bytes"} <= set(per):
            continue
        devices = _devices_of(w, int(sharding.devices))
        batch = workload_batch(w, devices)
        bounds = comm_step.step_bounds(
            flops=per["flops"], hbm_bytes=per["hbm_bytes"], collectives=w.collectives,
            peak_flops=peak, hbm_bandwidth=bandwidth, network=flat,
            count_buffers=bool(w.step),
        )
        critical = None if batch is None else comm_step.critical_batch(
            batch=batch.global_batch, t_math=bounds.t_math,
            t_latency=bounds.t_comm_latency, t_bandwidth=bounds.t_comm_bandwidth,
            comm_scales=batch.comm_scales)
        forward = forward_flops(w, devices)
        book = None if batch is None else comm_step.book_critical_batch(
            batch=batch.global_batch, forward_flops=forward, peak_flops=peak,
            t_bandwidth=bounds.t_comm_bandwidth, comm_scales=batch.comm_scales)
        rows.append(StepRow(
            index=index, name=w.name, sharding=w.sharding, step=bool(w.step),
            mesh=_mesh_text(w), devices=devices, batch=batch, dtype=_workload_dtype(w),
            critical_batch=critical, forward_flops=forward, critical_batch_book=book,
            bounds=bounds))
        collectives += _collective_rows(w, flat)
        jr = _jax_roofline_row(w, per, bounds.comm_steps)
        if jr is not None:
            compare.append(jr)
        seconds = sharded_seconds(w)
        if seconds and measured_peak and measured_bandwidth:
            serial = devices * model.predicted_seconds(per["flops"], per["hbm_bytes"],
                                                       measured_peak, measured_bandwidth)
            emulated.append(EmulatedTiming(
                name=w.name, devices=devices, measured=float(seconds), serialised=serial,
                ratio=float(seconds) / serial if serial else None,
                t_math_measured_peak=per["flops"] / measured_peak))
    chosen = presets.get_preset(preset or DEFAULT_PROJECTION_PRESET)
    network = preset_network(chosen)
    chip_peak, peak_dtype = _preset_peak(chosen)
    projection_rows: list[ProjectedStep | NotProjected] = []
    for r in rows:
        if r.step:
            projection_rows += _project_rows(sharding.workloads[r.index], r, chosen, network)
    return StepStudy(
        kind=kind,
        source=source,
        budget=CommBudget(peak, bandwidth, interconnect, latency),
        algorithms=tuple(comm_alpha_beta.ALGORITHM_NOTES.values()),
        rows=tuple(rows),
        collectives=tuple(collectives),
        jax_roofline=tuple(compare),
        emulated=tuple(emulated),
        projection=Projection(
            kind=Kind.SPEC_SHEET.value,
            latency_kind=Kind.HYPOTHETICAL.value,
            preset=chosen.name,
            peak=chip_peak,
            peak_dtype=peak_dtype,
            hbm_bandwidth=chosen.hbm_bandwidth,
            domain=chosen.domain,
            torus=tuple(int(a) for a in network[0].torus) if network else (),
            links=_links(chosen),
            network=network,
            devices=comm_projection.PROJECTION_DEVICES,
            rows=tuple(projection_rows),
            crossovers=tuple(_crossovers(projection_rows)),
        ),
    )


def _project_rows(workload: ShardedWorkload, row: StepRow, chosen: Any,
                  network: Sequence[comm_network.Level]) -> list[ProjectedStep | NotProjected]:
    """One training step carried to each of :data:`PROJECTION_DEVICES` on the preset."""
    per = workload.per_device
    batch = row.batch or WorkloadBatch(global_batch=0, per_device=0, comm_scales=False)
    chip_peak, peak_dtype = _preset_peak(chosen, row.dtype)
    out: list[ProjectedStep | NotProjected] = []
    for n in comm_projection.PROJECTION_DEVICES:
        if not network:
            out.append(NotProjected(
                row.name, n, batch.comm_scales,
                f"{chosen.name} has no interconnect with a latency figure"))
            continue
        point = comm_projection.project_step(
            flops=per["flops"], hbm_bytes=per["hbm_bytes"], collectives=workload.collectives,
            devices=row.devices, to_devices=n, comm_scales=batch.comm_scales,
            peak_flops=chip_peak, hbm_bandwidth=chosen.hbm_bandwidth, network=network,
            hbm_parts=per.get("hbm_parts"), split_dims=workload.split_dims or (),
        )  # fmt: skip
        if isinstance(point, comm_projection.UnprojectedStep):
            out.append(NotProjected(row.name, n, batch.comm_scales,
                                    _not_projected(chosen, point.reason)))
            continue
        bounds = point.bounds
        global_batch = int(batch.global_batch * n / row.devices)
        critical = None if not global_batch else comm_step.critical_batch(
            batch=global_batch, t_math=bounds.t_math, t_latency=bounds.t_comm_latency,
            t_bandwidth=bounds.t_comm_bandwidth, comm_scales=batch.comm_scales)
        book = None if not global_batch else comm_step.book_critical_batch(
            batch=global_batch, forward_flops=row.forward_flops, peak_flops=chip_peak,
            t_bandwidth=bounds.t_comm_bandwidth, comm_scales=batch.comm_scales)
        link = " + ".join(level.level for level in bounds.levels) or network[0].name
        binding_level = max(bounds.levels, key=lambda level: level.t_bandwidth).level \
            if bounds.levels else None
        out.append(ProjectedStep(
            name=row.name, devices=point.devices, comm_scales=batch.comm_scales,
            bounds=bounds, batch_factor=point.batch_factor,
            hbm_shards=point.hbm_shards, flags=point.flags, link=link,
            binding_level=binding_level, global_batch=global_batch, peak=chip_peak,
            peak_dtype=peak_dtype, critical_batch=critical,
            critical_per_device=None if critical is None else critical / n,
            critical_per_device_book=None if book is None else book / n,
            kinds=_projection_kinds(bounds)))
    return out
