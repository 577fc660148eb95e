"""The alpha-beta communication model against hand-computed cases of the scaling-book formulas
("How to Scale Your Model", chapter "Sharded Matrices and How to Multiply Them"): for an array
of V bytes over N devices, all-gather and reduce-scatter move V (N-1)/N per device in N-1 ring
hops, all-reduce = reduce-scatter + all-gather, all-to-all moves V (N-1)/N of a per-device
buffer V; each hop costs the latency alpha."""

from __future__ import annotations

import math
from typing import Any

import pytest

from roofline_report import networks
from roofline_report.analysis.comm_alpha_beta import (
    algorithm_bytes,
    algorithm_steps,
    collective_time,
)
from roofline_report.analysis.comm_network import (
    Level,
    NotPriced,
    collective_cost,
    flat_network,
    mesh_span,
)
from roofline_report.analysis.comm_projection import (
    ProjectedBounds,
    UnprojectedStep,
    project_collective,
    project_step,
    split_problems,
)
from roofline_report.analysis.comm_step import critical_batch, step_bounds, step_comm_time
from roofline_report.analysis.study import preset_network, torus_network
from roofline_report.presets import get_preset
from roofline_report.results.schema_sharding import ShardedCollective

MIB8 = 8 * 2**20  # V = 8 MiB
W = 100e9  # bytes one device sends per second
ALPHA = 1e-6  # seconds per step
FLAT = flat_network(W, ALPHA)


def collectives(*records: dict[str, Any]) -> list[ShardedCollective]:
    """Collective records as results.json holds them, validated as the schema reads them."""
    return [ShardedCollective.model_validate(r) for r in records]


def test_all_gather_ring() -> None:
    t = collective_time("all-gather", MIB8, 8, bandwidth=W, latency=ALPHA)
    assert t.steps == 7
    assert t.bytes == MIB8 * 7 // 8 == 7_340_032
    assert t.t_bandwidth == pytest.approx(73.40032e-6)
    assert t.t_latency == pytest.approx(7e-6)
    assert t.time == pytest.approx(80.40032e-6)


def test_reduce_scatter_ring_prices_the_operand() -> None:
    # the result is V/N = 1 MiB; each device sends V (N-1)/N, as an all-gather of V does
    t = collective_time("reduce-scatter", MIB8 // 8, 8, bandwidth=W, latency=ALPHA)
    assert (t.steps, t.bytes) == (7, 7_340_032)
    assert t.time == pytest.approx(80.40032e-6)


def test_all_reduce_is_reduce_scatter_plus_all_gather() -> None:
    ar = collective_time("all-reduce", MIB8, 8, bandwidth=W, latency=ALPHA)
    rs = collective_time("reduce-scatter", MIB8 // 8, 8, bandwidth=W, latency=ALPHA)
    ag = collective_time("all-gather", MIB8, 8, bandwidth=W, latency=ALPHA)
    assert ar.steps == rs.steps + ag.steps == 14
    assert ar.bytes == rs.bytes + ag.bytes == 14_680_064
    assert ar.time == pytest.approx(rs.time + ag.time) == pytest.approx(160.80064e-6)


def test_all_to_all_is_direct() -> None:
    """NCCL's all-to-all sends each peer its 1/N at once: (N-1)/N of the buffer, one step (not a
    ring of N-1 steps, not Bruck's log2 N steps of half the buffer)."""
    direct = collective_time("all-to-all", MIB8, 8, bandwidth=W, latency=ALPHA)
    assert (direct.algorithm, direct.steps, direct.bytes) == ("direct", 1, 7_340_032)
    assert direct.time == pytest.approx(1e-6 + 73.40032e-6)
    with pytest.raises(ValueError, match="runs no ring algorithm for all-to-all"):
        collective_time("all-to-all", MIB8, 8, bandwidth=W, latency=ALPHA, algorithm="ring")


def test_the_double_binary_tree_has_its_own_terms() -> None:
    """NCCL's double binary tree: 2 ceil(log2 N) steps, the busiest device sends the whole array
    twice (2 V, against the ring's 2 V (N-1)/N); a group that is not a power of two takes the
    depth of the next one. Only an all-reduce runs on it."""
    assert [algorithm_steps("all-reduce", n, "tree") for n in (1, 2, 6, 8, 1000, 1024)] == [
        0, 2, 6, 6, 20, 20
    ]  # fmt: skip
    assert algorithm_steps("all-reduce", 1024, "ring") == 2046
    assert algorithm_bytes("all-reduce", MIB8, 8, "tree") == 2 * MIB8
    assert algorithm_bytes("all-reduce", MIB8, 8, "ring") == 2 * MIB8 * 7 // 8
    assert algorithm_bytes("all-reduce", MIB8, 6, "tree") == 2 * MIB8  # not (N-1)/N of 6
    assert algorithm_steps("collective-permute", 8) == 1
    with pytest.raises(ValueError, match="algorithm"):
        algorithm_steps("all-gather", 8, "butterfly")
    with pytest.raises(ValueError, match="runs no tree algorithm for all-gather"):
        algorithm_steps("all-gather", 8, "tree")


def test_ring_or_tree_is_a_real_choice() -> None:
    """Large arrays go on the ring (fewer bytes), small ones on the tree (fewer steps)."""
    big = collective_cost("all-reduce", 256 * 2**20, 8, FLAT)
    small = collective_cost("all-reduce", 4096, 8, FLAT)
    rejected = big.levels[0].rejected
    assert big.algorithm == "ring" and rejected is not None and rejected.algorithm == "tree"
    assert small.algorithm == "tree" and small.steps == 6


def test_latency_dominates_small_messages() -> None:
    # 4 KiB all-reduce over 1024 devices on a ring: 2046 steps of 1 us outweigh 81.9 ns of bytes
    t = collective_time("all-reduce", 4096, 1024, bandwidth=W, latency=ALPHA)
    assert t.t_latency == pytest.approx(2046e-6)
    assert t.t_bandwidth == pytest.approx(math.ceil(2 * 4096 * 1023 / 1024) / W)


def test_step_counts_loop_trips() -> None:
    records = collectives(
        {"op": "all-gather", "result_bytes": 65536, "group_size": 8, "trip_count": 4},
        {"op": "reduce-scatter", "result_bytes": 8192, "group_size": 8, "trip_count": 4},
        {"op": "all-reduce", "result_bytes": 4, "group_size": 8, "trip_count": None},
        {"op": "ragged-all-to-all", "result_bytes": 4, "group_size": 8},
    )
    comm = step_comm_time(records, FLAT, algorithm="ring")
    assert comm.bytes == 4 * 57344 + 4 * 57344 + 7 == 458_759
    assert comm.steps == 4 * 7 + 4 * 7 + 14 == 70
    assert comm.t_latency == pytest.approx(70e-6)
    assert comm.unpriced == 1
    # the all-reduce in a loop of unknown trip count is counted once and said so
    assert comm.unknown_trips == 1


def test_step_bounds_and_overlap() -> None:
    records = collectives(
        {"op": "all-reduce", "result_bytes": MIB8, "group_size": 8, "trip_count": 1})
    b = step_bounds(flops=1e9, hbm_bytes=1e8, collectives=records, peak_flops=1e12,
                    hbm_bandwidth=1e12, network=FLAT, algorithm="ring")
    assert b.t_math == pytest.approx(1e-3) and b.t_mem == pytest.approx(1e-4)
    assert b.t_comm == pytest.approx(160.80064e-6)
    assert b.t_comm_latency == pytest.approx(14e-6)
    assert b.lower_bound == b.t_math and b.binding == "compute"
    assert b.upper_bound == pytest.approx(1e-3 + 1e-4 + 160.80064e-6)
    assert b.comm_lower_bound is False and b.critical_intensity == pytest.approx(1e12 / W)
    # the faster algorithm: the double binary tree's 2 log2 8 = 6 steps save 8 us, its 2 V bytes
    # (8/7 of the ring's) cost 21 us more at 100 GB/s: the ring stays
    best = step_bounds(flops=1e9, hbm_bytes=1e8, collectives=records, peak_flops=1e12,
                       hbm_bandwidth=1e12, network=FLAT)
    assert best.algorithms == ("ring",) and best.t_comm == pytest.approx(b.t_comm)
    tree = step_bounds(flops=1e9, hbm_bytes=1e8, collectives=records, peak_flops=1e12,
                       hbm_bandwidth=1e12, network=FLAT, algorithm="tree")
    assert tree.t_comm_latency == pytest.approx(6e-6)
    assert tree.t_comm_bandwidth == pytest.approx(b.t_comm_bandwidth * 8 / 7)
    # a step's memory traffic can add the collective's buffers: read V, write V, read V again
    buffered = step_bounds(flops=1e9, hbm_bytes=1e8, collectives=records, peak_flops=1e12,
                           hbm_bandwidth=1e12, network=FLAT, count_buffers=True)
    assert buffered.comm_memory_bytes == 3 * MIB8
    assert buffered.memory_bytes == 1e8 + 3 * MIB8


def test_critical_batch() -> None:
    # weights traffic: fixed; 1 ms of math at B = 64 against 3 ms of communication
    assert critical_batch(batch=64, t_math=1e-3, t_latency=1e-4, t_bandwidth=2.9e-3,
                          comm_scales=False) == pytest.approx(192)
    # activations: bytes grow with B; only the latency is fixed: B* = L / (a - c)
    assert critical_batch(batch=64, t_math=1e-3, t_latency=1e-4, t_bandwidth=5e-4,
                          comm_scales=True) == pytest.approx(1e-4 / (1e-3 / 64 - 5e-4 / 64))
    assert critical_batch(batch=64, t_math=1e-3, t_latency=1e-4, t_bandwidth=2e-3,
                          comm_scales=True) is None
    assert critical_batch(batch=64, t_math=1e-3, t_latency=0, t_bandwidth=0,
                          comm_scales=False) is None


def test_projection_keeps_the_array_and_grows_the_group() -> None:
    [rs] = collectives(
        {"op": "reduce-scatter", "result_bytes": 32768, "group_size": 8, "trip_count": 1})
    big = project_collective(rs, devices=8, to_devices=64)
    assert (big.group_size, big.result_bytes) == (64, 4096)
    # the operand (262144 B) is unchanged: each device sends V (N-1)/N = 262144 x 63/64
    assert algorithm_bytes("reduce-scatter", 4096, 64) == 262144 * 63 // 64 == 258048
    [sub, whole] = collectives({"op": "all-reduce", "result_bytes": 1024, "group_size": 4},
                               {"op": "all-reduce", "result_bytes": 1024, "group_size": 8})
    assert project_collective(sub, devices=8, to_devices=64).group_size == 4
    scaled = project_collective(whole, devices=8, to_devices=64, batch_factor=8)
    assert scaled.result_bytes == 8192


def test_project_step_weak_scaling() -> None:
    ag = collectives({"op": "all-gather", "result_bytes": MIB8, "group_size": 8, "trip_count": 1})
    rows = [project_step(flops=1e9, hbm_bytes=0, collectives=ag, devices=8, to_devices=n,
                         comm_scales=False, peak_flops=1e12, hbm_bandwidth=1e12,
                         network=FLAT, algorithm="ring") for n in (8, 1024)]
    assert isinstance(rows[0], ProjectedBounds) and isinstance(rows[1], ProjectedBounds)
    at8, at1024 = rows[0].bounds, rows[1].bounds
    assert at8.t_comm == pytest.approx(80.40032e-6)
    assert at1024.t_math == at8.t_math
    assert at1024.t_comm_latency == pytest.approx(1023e-6)
    assert at1024.comm_bytes == math.ceil(MIB8 * 1023 / 1024)
    assert at1024.binding == "communication" and rows[1].devices == 1024
    # the gathered 8 MiB is written and read on every device, 1/1024 of it read as the shard
    assert at1024.comm_memory_bytes == math.ceil(MIB8 / 1024) + 2 * MIB8


# --------------------------------------------------------------------------------------------
# A combined collective, two-level networks, the torus
# --------------------------------------------------------------------------------------------

# NVLink 4 through NVSwitch: 450 GB/s per GPU each way in a domain of 8; InfiniBand NDR: one
# 400 Gb/s port per GPU, 50 GB/s each way. Latencies as the presets assume them.
NVLINK = Level("NVLink", 4.5e11, 1e-6, devices=8)
IB = Level("InfiniBand", 5e10, 5e-6)
GPUS = (NVLINK, IB)


def test_a_combined_collective_pays_one_latency() -> None:
    """A psum of four arrays compiles to one all-reduce over a tuple: 14 ring steps, not 4 x 14,
    and the four arrays' bytes together."""
    arrays = [{"op": "all-reduce", "instruction": "all-reduce.3", "result_bytes": 4096,
               "group_size": 8, "trip_count": 1, "dtype": "f32", "shape": [1024]}] * 4
    combined = step_comm_time(collectives(*arrays), FLAT, algorithm="ring")
    assert combined.steps == 14 and combined.t_latency == pytest.approx(14e-6)
    assert combined.bytes == 2 * 4 * 4096 * 7 // 8
    [cost] = combined.collectives
    assert cost.record.arrays is not None and len(cost.record.arrays) == 4
    assert cost.record.result_bytes == 16384
    separate = step_comm_time(
        collectives(*({**a, "instruction": f"ar.{i}"} for i, a in enumerate(arrays))),
        FLAT, algorithm="ring")
    assert separate.steps == 4 * 14 and separate.bytes == combined.bytes


def test_inside_one_domain_one_level() -> None:
    """All-reduce of 8 MiB over 8 GPUs of one node: the tree's 6 steps (6 us) against the
    ring's 14 (14 us) outweigh its extra bytes (2 V against 2 V 7/8: 4.7 us at 450 GB/s)."""
    cost = collective_cost("all-reduce", MIB8, 8, GPUS)
    [level] = cost.levels
    assert (level.level, level.devices, level.algorithm) == ("NVLink", 8, "tree")
    assert level.steps == 6 and level.bytes == 2 * MIB8
    assert level.rejected is not None and level.rejected.algorithm == "ring"
    assert level.rejected.time == pytest.approx(14e-6 + 2 * MIB8 * 7 / 8 / 4.5e11)
    assert cost.t_latency == pytest.approx(6e-6)
    assert cost.t_bandwidth == pytest.approx(2 * MIB8 / 4.5e11)


def test_a_data_parallel_all_reduce_over_1024_gpus_pipelines_its_levels() -> None:
    """128 nodes of 8: reduce-scatter and all-gather inside each node over NVLink (2 V 7/8 at
    450 GB/s), an all-reduce of V/8 across nodes over InfiniBand (50 GB/s a GPU, 400 GB/s a
    node). The levels run at once on chunks of the array (NCCL; the scaling book's GPU
    chapter: T = max(T_node, T_scale-out)), so the bandwidth time is the slower level's, and
    every level's latency is paid once. The flat ring paid 2 x 1023 steps of network
    latency."""
    v = 256 * 2**20  # 256 MiB of gradients
    cost = collective_cost("all-reduce", v, 1024, GPUS)
    inside, across = cost.levels
    assert (inside.level, inside.devices) == ("NVLink", 8)
    assert (across.level, across.devices) == ("InfiniBand", 128)
    # inside, the ring (14 us + 1,044 us) beats the tree (6 us + 1,193 us)
    assert (inside.algorithm, inside.steps) == ("ring", 14)
    assert inside.t_bandwidth == pytest.approx(2 * v * 7 / 8 / 4.5e11)
    # across, the tree (70 us + 1,342 us) beats the ring (1,270 us + 1,331 us)
    assert (across.algorithm, across.steps) == ("tree", 14)
    assert across.bytes == 2 * (v // 8)
    assert across.t_bandwidth == pytest.approx(2 * (v / 8) / 5e10)
    assert cost.pipelined and across.binds and not inside.binds
    assert cost.t_bandwidth == across.t_bandwidth
    assert cost.t_latency == pytest.approx(14e-6 + 14 * 5e-6)
    assert cost.algorithm == "ring (NVLink), with tree (InfiniBand)"
    flat = collective_cost("all-reduce", v, 1024, (IB,), algorithm="ring")
    assert flat.t_latency == pytest.approx(2046 * 5e-6)
    assert cost.time < flat.time


def test_two_levels_are_not_added() -> None:
    """The issue's case: a 1 MiB DP all-reduce over 1,024 H100s costs the InfiniBand level's
    2 V 127/128 / 400 GB/s of node egress, 5.20 us (the NVLink level's 4.08 us hides under
    it), not their 9.28 us sum."""
    v = 2**20
    cost = collective_cost("all-reduce", v, 1024, GPUS, algorithm="ring")
    inside, across = cost.levels
    assert inside.t_bandwidth == pytest.approx(4.08e-6, rel=1e-3)
    assert across.t_bandwidth == pytest.approx(2 * v * 127 / 128 / 4e11) == pytest.approx(
        5.20e-6, rel=1e-3)
    assert cost.t_bandwidth == across.t_bandwidth


def test_all_gather_and_reduce_scatter_across_domains() -> None:
    v = 64 * 2**20
    ag = collective_cost("all-gather", v, 64, GPUS)
    rs = collective_cost("reduce-scatter", v // 64, 64, GPUS)
    for cost in (ag, rs):
        inside, across = cost.levels
        assert inside.bytes == v * 7 // 8  # the whole array, inside each node
        assert across.bytes == (v // 8) * 7 // 8  # 1/8 of it across the 8 nodes
    assert ag.memory_bytes == v // 64 + 2 * v  # the shard read, the gathered V written, read
    assert rs.memory_bytes == v + 2 * (v // 64)


def test_all_to_all_and_permute_across_domains() -> None:
    a2a = collective_cost("all-to-all", 1 << 20, 64, GPUS)
    inside, across = a2a.levels
    # of a 1 MiB buffer, 7/64 goes to the node's other GPUs, 56/64 crosses the network, each
    # share sent directly, in one step
    assert inside.bytes == (1 << 20) * 7 // 64 and across.bytes == (1 << 20) * 56 // 64
    assert (inside.algorithm, across.algorithm) == ("direct", "direct")
    assert a2a.steps == 2 and a2a.t_bandwidth == across.t_bandwidth
    # the case: 262,144 B a GPU over 1,024 H100s, 127/128 of it through a 50 GB/s
    # port: 5.2 us (Bruck's 7 steps of half the buffer cost 18.4 us)
    big = collective_cost("all-to-all", 262144, 1024, GPUS)
    assert big.t_bandwidth == pytest.approx(262144 * 127 / 128 / 5e10)
    permute = collective_cost("collective-permute", 4096, 64, GPUS)
    [level] = permute.levels
    assert (level.level, level.steps, level.bytes) == ("InfiniBand", 1, 4096)


def test_a_network_without_a_level_beyond_the_domain_does_not_price() -> None:
    pod = (Level("ICI", 4.5e10, 1e-6, devices=256, topology="torus", torus=(16, 16)),)
    with pytest.raises(NotPriced, match="no network across domains"):
        collective_cost("all-reduce", MIB8, 1024, pod)
    comm = step_comm_time(
        collectives({"op": "all-reduce", "result_bytes": MIB8, "group_size": 1024}), pod)
    assert comm.not_priced and comm.t_comm == 0
    row = project_step(flops=1e9, hbm_bytes=0, devices=8, to_devices=1024, comm_scales=False,
                       collectives=collectives(
                           {"op": "all-reduce", "result_bytes": MIB8, "group_size": 8}),
                       peak_flops=1e12, hbm_bandwidth=1e12, network=pod)
    assert isinstance(row, UnprojectedStep) and "no network across domains" in row.reason


def test_a_torus_axis_rings_both_ways_when_it_wraps() -> None:
    """TPU v5e: 4.5e10 B/s one way per link. A whole 16 x 16 pod: each axis wraps, so a device
    sends both ways on both axes, 4 x 4.5e10, in 8 + 8 hops ('Sharded Matrices': an AllGather
    over both axes takes V / (2 W_bidi)). A 2 x 4 slice has no wraparound: one link per axis,
    1 + 3 hops."""
    slices = ((8, (2, 4)), (256, (16, 16)))
    ici = (Level("ICI", 4.5e10, 1e-6, devices=256, topology="torus", torus=(16, 16),
                 slices=slices),)
    v = 64 * 2**20
    pod = collective_cost("all-gather", v, 256, ici)
    [level] = pod.levels
    assert (level.slice, level.bandwidth, level.steps) == ("16 x 16", 1.8e11, 16)
    assert level.t_bandwidth == pytest.approx(v * 255 / 256 / 1.8e11)
    small = collective_cost("all-reduce", v, 8, ici)
    [level] = small.levels
    assert (level.slice, level.bandwidth, level.steps) == ("2 x 4", 9e10, 2 * 4)
    # an unpublished count takes the most nearly square slice that fits
    assert ici[0].shape_of(32) == (4, 8) and ici[0].shape_of(512) is None


def test_split_problems() -> None:
    """Tensor parallelism of 512 columns cannot go over 1,024 devices; 768 rows over 512
    devices pad their shards; data dimensions grow with the batch and never stop a projection."""
    dims = [{"argument": "w1", "dim": 1, "size": 512, "data": False},
            {"argument": "x", "dim": 0, "size": 64, "data": True}]
    reason, flags = split_problems(dims, 1024)
    assert reason is not None and "w1 dimension 1 (512)" in reason and "1,024 devices" in reason
    assert split_problems(dims, 512) == (None, [])
    reason, flags = split_problems([{"argument": "w", "dim": 0, "size": 768, "data": False}], 512)
    assert reason is None and flags == ["w dimension 0 (768) does not divide over 512 devices: "
                                        "shards padded to 2"]
    row = project_step(flops=1, hbm_bytes=0, collectives=[], devices=8, to_devices=1024,
                       comm_scales=True, peak_flops=1, hbm_bandwidth=1, network=GPUS,
                       split_dims=dims)
    assert row == UnprojectedStep(devices=1024, reason=str(split_problems(dims, 1024)[0]))


def test_projected_memory_rescales_the_shards() -> None:
    """FSDP from 8 to 64 devices: the weight shards shrink 8 x, the batch shard stays (weak
    scaling); a replicated batch (tensor parallel) grows with the global batch."""
    parts = {"data": 1000, "data_split": True, "state": 8000, "state_split": True, "other": 0}
    row = project_step(flops=1e9, hbm_bytes=9000, collectives=[], devices=8, to_devices=64,
                       comm_scales=False, peak_flops=1e12, hbm_bandwidth=1e9, network=GPUS,
                       hbm_parts=parts)
    assert isinstance(row, ProjectedBounds)
    assert row.hbm_shards == 1000 + 1000 and row.bounds.memory_bytes == 2000
    tp = {**parts, "data_split": False}
    row = project_step(flops=1e9, hbm_bytes=9000, collectives=[], devices=8, to_devices=64,
                       comm_scales=True, peak_flops=1e12, hbm_bandwidth=1e9, network=GPUS,
                       hbm_parts=tp)
    assert isinstance(row, ProjectedBounds) and row.hbm_shards == 8 * 1000 + 1000


def test_levels_refuse_bad_figures() -> None:
    with pytest.raises(ValueError):
        Level("x", 0, 1e-6)
    with pytest.raises(ValueError):
        Level("x", 1e9, -1)
    with pytest.raises(ValueError, match="torus"):
        Level("x", 1e9, 1e-6, devices=256, topology="torus")
    with pytest.raises(ValueError, match="holds 256"):
        Level("x", 1e9, 1e-6, devices=128, topology="torus", torus=(16, 16))
    with pytest.raises(ValueError, match="algorithm"):
        collective_cost("all-reduce", 8, 8, FLAT, algorithm="butterfly")


def test_a_mesh_axis_lands_on_the_torus_axes_it_spans() -> None:
    """A (2, 4) mesh on a 2 x 4 slice: its axis of 4 is a line along the slice's axis of 4, its
    axis of 2 the other; a 1-D mesh of 8 spans both; a mesh that does not fill the slice has
    no place on it."""
    assert mesh_span((2, 4), (1,), (2, 4)) == (1, 4)
    assert mesh_span((2, 4), (0,), (2, 4)) == (2, 1)
    assert mesh_span((2, 4), (0, 1), (2, 4)) == (2, 4)
    assert mesh_span((8,), (0,), (2, 4)) == (2, 4)
    assert mesh_span((4, 4, 4), (2,), (4, 4, 4)) is not None
    assert mesh_span((16,), (0,), (2, 4)) is None


def test_tpu_v4_and_v5p_close_every_axis_of_a_multiple_of_four() -> None:
    """TPU v4 and v5p: 4 x 4 x 4 cubes joined by optical switches, so an axis of 4 (or 8, 12,
    16...) wraps: a ring of 4 sends both ways in 2 hops; an axis of 2 is a line. TPU v5e
    closes only an axis of 16."""
    v4 = torus_network(networks.torus_for("TPU v4"))
    v5p = torus_network(networks.torus_for("tpu-v5p"))
    assert networks.torus_for("v5p") is networks.torus_for("TPU v5p")
    assert networks.torus_for("TPU v5e") is None and networks.torus_for("H100") is None
    ring = collective_cost("all-gather", MIB8, 4, v4, span=(4, 1, 1))
    [level] = ring.levels
    assert (level.steps, level.bandwidth) == (2, 2 * 4.5e10)
    line = collective_cost("all-gather", MIB8, 2, v5p, span=(2, 1, 1))
    assert (line.steps, line.levels[0].bandwidth) == (1, 9e10)
    # a slice smaller than a cube is a mesh (Google's v5p page: 4x4x4 and larger are tori)
    mesh = collective_cost("all-gather", MIB8, 32, v5p).levels[0]
    assert (mesh.slice, mesh.steps, mesh.bandwidth) == ("2 x 4 x 4", 1 + 3 + 3, 3 * 9e10)
    cube = collective_cost("all-gather", MIB8, 64, v5p).levels[0]
    assert (cube.slice, cube.steps, cube.bandwidth) == ("4 x 4 x 4", 6, 6 * 9e10)
    pod = collective_cost("all-reduce", MIB8, 8960, v5p)
    assert pod.levels[0].slice == "16 x 20 x 28"
    assert pod.levels[0].bandwidth == 6 * 9e10
    assert networks.torus_for("TPU v5p").egress == 6 * 9e10  # type: ignore[union-attr]
    v5e = preset_network(get_preset("TPU v5e"))
    assert collective_cost("all-gather", MIB8, 4, v5e, span=(1, 4)).levels[0].bandwidth == 4.5e10
    with pytest.raises(NotPriced, match="fit no slice"):
        collective_cost("all-gather", MIB8, 4, v5e, span=(2, 4))


def test_a_torus_preset_prints_the_figure_it_prices() -> None:
    """TPU v5e: the ICI header's figure per direction is 4 links x 45 GB/s, what the torus
    level sends on a whole pod, not Google's per-chip page figure."""
    preset = get_preset("TPU v5e")
    assert preset.interconnect is not None
    pod = collective_cost("all-gather", MIB8, 256, preset_network(preset))
    assert preset.interconnect.egress == pod.levels[0].bandwidth == 1.8e11


def test_a_v5p_preset_is_priced_and_printed_on_its_3d_torus() -> None:
    """A chip preset named TPU v5p (its compute figures kept with the other presets) gets the
    3D-torus ICI of roofline_report/networks.py, and the projection's header prints the figures
    that torus is priced at: 6 links x 90 GB/s one way."""
    from dataclasses import replace

    from roofline_report.analysis.study import _links

    v5p = replace(get_preset("TPU v5e"), name="TPU v5p", torus=(), slices=())
    [level] = preset_network(v5p)
    assert (level.topology, level.torus, level.wraps_every) == ("torus", (16, 20, 28), 4)
    [link] = _links(v5p)
    assert link.egress == 6 * 9e10 == level.bandwidth * 6
    assert link.link_bandwidth == level.bandwidth
