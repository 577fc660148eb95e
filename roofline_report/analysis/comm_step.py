"""The communication of one step: its collective records priced on a network
(:func:`step_comm_time`), set beside the math and the memory traffic (:func:`step_bounds`), and
the batch at which the math catches up with the communication (:func:`critical_batch`). Pure
and deterministic. :class:`StepBounds` (with :class:`LevelTotals` per network level) is what
:func:`step_bounds` returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roofline_report.analysis.comm import non_negative, positive
from roofline_report.analysis.comm_network import (
    CollectiveCost,
    Level,
    NotPriced,
    PricedLevel,
    collective_cost,
)
from roofline_report.hlo.collectives import COLLECTIVE_OPS
from roofline_report.results.schema_sharding import CollectiveArray, ShardedCollective
from roofline_report.roofline import binding


@dataclass(frozen=True, slots=True)
class PricedCollective:
    """A collective record of a step (one instruction, its arrays combined) and its cost."""

    record: ShardedCollective  # the record as priced, combined by :func:`combine_records`
    cost: CollectiveCost


@dataclass(frozen=True, slots=True)
class StepComm:
    """The alpha-beta communication time of one step (:func:`step_comm_time`): ``bytes``,
    ``steps`` and ``memory_bytes`` totals over the step (loop trips included)."""

    t_latency: float
    t_bandwidth: float
    t_comm: float
    bytes: int
    steps: int
    memory_bytes: int
    collectives: tuple[PricedCollective, ...]
    unpriced: int  # records without an op formula, size or group
    unknown_trips: int  # records in a loop of unknown trip count, counted once
    not_priced: tuple[str, ...]  # why the network could not carry some


@dataclass(frozen=True, slots=True)
class LevelTotals:
    """One network level's share of a step's collectives: its latency and bandwidth time,
    the bytes and steps there (loop trips included) and the algorithms chosen."""

    level: str
    topology: str
    t_latency: float
    t_bandwidth: float
    bytes: int
    steps: int
    algorithms: tuple[str, ...]
    devices: int
    slice: str | None
    latency_kind: str
    bandwidth_kind: str


@dataclass(frozen=True, slots=True)
class StepBounds:
    """T_math, T_mem and the alpha-beta T_comm of one step per device: the largest a lower
    bound on the step (perfect overlap), their sum an upper bound (no overlap)."""

    t_math: float
    t_mem: float
    t_comm: float
    t_comm_latency: float
    t_comm_bandwidth: float
    comm_steps: int
    comm_bytes: int
    comm_memory_bytes: int
    memory_bytes: float  # the memory traffic T_mem prices
    levels: tuple[LevelTotals, ...]
    algorithms: tuple[str, ...]
    unknown_trips: int
    comm_lower_bound: bool  # a loop of unknown trip count: T_comm is at least this
    not_priced: tuple[str, ...]
    lower_bound: float
    upper_bound: float
    binding: str
    critical_intensity: float
    comm_intensity: float | None


def priced_bytes(record: ShardedCollective) -> int | None:
    """The bytes a collective record is priced at: its arrays in the program's dtype where it
    was read (``program_result_bytes``), else as compiled (``result_bytes``)."""
    value = record.program_result_bytes
    if value is None:
        value = record.result_bytes
    return None if value is None else int(value)


def combine_records(collectives: Sequence[ShardedCollective]) -> list[ShardedCollective]:
    """One record per collective instruction: records of one instruction (results saved when a
    combined collective was listed once per array) are merged, their bytes added. Records
    without an instruction name stay as they are."""
    out: list[ShardedCollective] = []
    index: dict[str, int] = {}
    for record in collectives:
        name = record.instruction
        if not name or name not in index:
            if name:
                index[name] = len(out)
            out.append(record)
            continue
        first = out[index[name]]
        merged = first.model_copy(update={
            "result_bytes": _added(first.result_bytes, record.result_bytes),
            "program_result_bytes": _added(first.program_result_bytes,
                                           record.program_result_bytes),
            "bytes_per_device": _added(first.bytes_per_device, record.bytes_per_device),
            "program_bytes_per_device": _added(first.program_bytes_per_device,
                                               record.program_bytes_per_device),
        })
        arrays = [*(merged.arrays or [_array_of(merged)]), _array_of(record)]
        out[index[name]] = merged.model_copy(update={"arrays": arrays, "shape": None})
    return out


def _added(total: int | None, more: int | None) -> int | None:
    """Bytes of two records of one instruction added; the first's where either is unknown."""
    return total if total is None or more is None else total + more


def _array_of(record: ShardedCollective) -> CollectiveArray:
    return CollectiveArray(dtype=record.dtype, shape=record.shape, bytes=record.result_bytes)


def step_comm_time(collectives: Sequence[ShardedCollective], network: Sequence[Level], *,
                   algorithm: str = "best") -> StepComm:
    """Alpha-beta communication time of one step: every collective record (as
    :func:`roofline_report.observe.sharded_collectives.parse_collectives` writes them: ``op``, bytes
    (:func:`priced_bytes`), ``group_size``, ``trip_count``), one per instruction
    (:func:`combine_records`), priced by :func:`collective_cost` with ``count`` = its trip
    count, run one after another.

    A trip count of None (a while loop whose count the compiler does not know) is counted
    once and tallied in ``unknown_trips``: the totals are then lower bounds. Records without an
    op formula, size or group count in ``unpriced``, those the network cannot carry in
    ``not_priced``.
    """
    priced: list[PricedCollective] = []
    unpriced = unknown = 0
    not_priced: list[str] = []
    for record in combine_records(collectives):
        op, size, group = record.op, priced_bytes(record), record.group_size
        if op not in COLLECTIVE_OPS or size is None or group is None:
            unpriced += 1
            continue
        trips = record.trip_count
        if trips is None:
            unknown += 1
        try:
            cost = collective_cost(op, size, int(group), network, algorithm=algorithm,
                                   count=1 if trips is None else int(trips))
        except NotPriced as exc:
            not_priced.append(str(exc))
            continue
        priced.append(PricedCollective(record, cost))
    costs = [p.cost for p in priced]
    t_latency = sum(c.t_latency for c in costs)
    t_bandwidth = sum(c.t_bandwidth for c in costs)
    return StepComm(
        t_latency=t_latency,
        t_bandwidth=t_bandwidth,
        t_comm=t_latency + t_bandwidth,
        bytes=sum(c.bytes * c.count for c in costs),
        steps=sum(c.steps * c.count for c in costs),
        memory_bytes=sum(c.memory_bytes * c.count for c in costs),
        collectives=tuple(priced),
        unpriced=unpriced,
        unknown_trips=unknown,
        not_priced=tuple(dict.fromkeys(not_priced)),
    )


def _levels_summary(priced: Sequence[PricedCollective]) -> tuple[LevelTotals, ...]:
    """Per network level: its latency and bandwidth time, bytes, steps and the algorithms
    chosen there, over every priced collective."""
    parts: dict[str, list[tuple[PricedLevel, int]]] = {}
    for collective in priced:
        for p in collective.cost.levels:
            parts.setdefault(p.level, []).append((p, collective.cost.count))
    out = []
    for name, runs in parts.items():
        first = runs[0][0]
        out.append(LevelTotals(
            level=name, topology=first.topology,
            t_latency=sum((p.t_latency for p, _ in runs), 0.0),
            t_bandwidth=sum((p.t_bandwidth for p, _ in runs), 0.0),
            bytes=sum(p.bytes * count for p, count in runs),
            steps=sum(p.steps * count for p, count in runs),
            algorithms=tuple(dict.fromkeys(p.algorithm for p, _ in runs)),
            devices=max(p.devices for p, _ in runs), slice=first.slice,
            latency_kind=first.latency_kind, bandwidth_kind=first.bandwidth_kind))
    return tuple(out)


def step_bounds(
    *,
    flops: float,
    hbm_bytes: float,
    collectives: Sequence[ShardedCollective],
    peak_flops: float,
    hbm_bandwidth: float,
    network: Sequence[Level],
    algorithm: str = "best",
    count_buffers: bool = False,
) -> StepBounds:
    """T_math, T_mem and the alpha-beta T_comm of one step per device, and the overlap bounds.

    Besides :func:`~roofline_report.analysis.comm.comm_bounds`'s figures (``t_comm`` now latency +
    bandwidth, ``lower_bound`` the max of the three, ``upper_bound`` their sum): ``comm_bytes``
    (bytes each device sends per step, loop trips included), ``comm_memory_bytes`` (the
    collectives' own buffers, :func:`~roofline_report.hlo.collectives.collective_memory_bytes`),
    ``memory_bytes`` (the memory traffic T_mem prices: ``hbm_bytes``, plus the buffers with
    ``count_buffers``), ``levels`` (per network level) and ``comm_lower_bound`` (True when a
    loop's trip count is unknown: the communication is then at least this).
    ``critical_intensity`` is the peak over the slowest level's bandwidth.
    """
    comm = step_comm_time(collectives, network, algorithm=algorithm)
    work = non_negative("flops", flops)
    traffic = non_negative("hbm_bytes", hbm_bytes)
    peak = positive("peak_flops", peak_flops)
    hbm = positive("hbm_bandwidth", hbm_bandwidth)
    memory = traffic + (comm.memory_bytes if count_buffers else 0)
    t_math, t_mem, t_comm = work / peak, memory / hbm, comm.t_comm
    times = {"compute": t_math, "memory": t_mem, "communication": t_comm}
    lower = max(times.values())
    levels = _levels_summary(comm.collectives)
    slowest = min(level.bandwidth for level in network)
    return StepBounds(
        t_math=t_math,
        t_mem=t_mem,
        t_comm=t_comm,
        t_comm_latency=comm.t_latency,
        t_comm_bandwidth=comm.t_bandwidth,
        comm_steps=comm.steps,
        comm_bytes=comm.bytes,
        comm_memory_bytes=comm.memory_bytes,
        memory_bytes=memory,
        levels=levels,
        algorithms=tuple(sorted({a for level in levels for a in level.algorithms})),
        unknown_trips=comm.unknown_trips,
        comm_lower_bound=comm.unknown_trips > 0,
        not_priced=comm.not_priced,
        lower_bound=lower,
        upper_bound=t_math + t_mem + t_comm,
        binding=binding(times),
        critical_intensity=peak / slowest,
        comm_intensity=None if comm.bytes == 0 else work / comm.bytes,
    )


def critical_batch(
    *, batch: float, t_math: float, t_latency: float, t_bandwidth: float, comm_scales: bool
) -> float | None:
    """The batch at which T_math catches up with T_comm, the math growing in proportion to the
    batch (``t_math = a B``).

    Communication that does not grow with the batch (gradients and weights: data parallel,
    FSDP) costs ``L = t_latency + t_bandwidth`` at any batch, so ``B* = B L / t_math``. When it
    grows with the batch (activations: tensor parallel), only latency is fixed: ``t_comm = L +
    c B`` with ``L = t_latency``, ``c = t_bandwidth / B``, and ``B* = L / (a - c)``, or None when
    ``c >= a`` (no batch makes the step compute-bound). Also None with no math or nothing
    communicated.
    """
    b = positive("batch", batch)
    math_t = non_negative("t_math", t_math)
    lat = non_negative("t_latency", t_latency)
    bw = non_negative("t_bandwidth", t_bandwidth)
    if math_t == 0 or lat + bw == 0:
        return None
    a = math_t / b
    if not comm_scales:
        return (lat + bw) / a
    c = bw / b
    if c >= a:
        return None
    return lat / (a - c)


def book_critical_batch(*, batch: float, forward_flops: float | None, peak_flops: float,
                        t_bandwidth: float, comm_scales: bool) -> float | None:
    """The compute-bound batch as "How to Scale Your Model" states it for data parallelism and
    FSDP ('How to Parallelize a Transformer for Training'; 'How to Think About GPUs'):
    bandwidth only (no latency), and T_math the backward pass's flops only, taken as twice the
    forward pass's (its weight and input gradients). With ``forward_flops`` at ``batch``,
    ``B* = B t_bandwidth / (2 forward_flops / peak)``; for a matmul layer whose gradients
    cross a link of W bytes/s each way this is the book's ``C / W`` times ``(N-1)/N``.

    None when the forward flops are not known, nothing is communicated, or the communication
    grows with the batch (tensor parallelism: the book bounds the model axis instead,
    ``Y < F W / C``, not the batch)."""
    b = positive("batch", batch)
    peak = positive("peak_flops", peak_flops)
    bw = non_negative("t_bandwidth", t_bandwidth)
    if forward_flops is None or comm_scales or bw == 0:
        return None
    backward = 2 * non_negative("forward_flops", forward_flops) / peak
    return None if backward == 0 else b * bw / backward


def step_forward_flops(strategy: str, sizes: Mapping[str, Any], devices: int) -> int | None:
    """Matmul flops of the forward pass per device of a built-in training step
    (``observe/training_steps``: the MLP ``tanh(x @ w1) @ w2`` or ``L`` scanned layers
    ``tanh(h @ w[l])``), ``sizes`` its ``{"batch", "d_model", "d_ff", "layers"}``: two matmuls
    of ``2 b D F`` (``b`` the rows a device works on; tensor parallel: all ``B`` rows, ``F/N``
    columns), or ``L`` of ``2 b D D``. None for any other workload."""
    try:
        b, d, f = int(sizes["batch"]), int(sizes["d_model"]), int(sizes["d_ff"])
        layers = int(sizes.get("layers", 1))
    except (KeyError, TypeError, ValueError):
        return None
    n = max(1, int(devices))
    if strategy in ("dp-step", "fsdp-step"):
        return 4 * (b // n) * d * f
    if strategy == "tp-step":
        return 4 * b * d * (f // n)
    if strategy == "fsdp-scan-step":
        return 2 * layers * (b // n) * d * d
    return None
