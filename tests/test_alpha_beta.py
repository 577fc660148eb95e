"""The alpha-beta communication model against hand-computed cases of the scaling-book formulas
("How to Scale Your Model", chapter "Sharded Matrices and How to Multiply Them"): for an array
of V bytes over N devices, all-gather and reduce-scatter move V (N-1)/N per device in N-1 ring
hops, all-reduce = reduce-scatter + all-gather, all-to-all moves V (N-1)/N of a per-device
buffer V; each hop costs the latency alpha."""

from __future__ import annotations

import math

import pytest

from roofline_report.analysis.comm_alpha_beta import (
    algorithm_bytes,
    algorithm_steps,
    collective_time,
)
from roofline_report.analysis.comm_network import Level, NotPriced, collective_cost, flat_network
from roofline_report.analysis.comm_projection import (
    project_collective,
    project_step,
    split_problems,
)
from roofline_report.analysis.comm_step import critical_batch, step_bounds, step_comm_time

MIB8 = 8 * 2**20  # V = 8 MiB
W = 100e9  # bytes one device sends per second
ALPHA = 1e-6  # seconds per step
FLAT = flat_network(W, ALPHA)


def test_all_gather_ring() -> None:
    t = collective_time("all-gather", MIB8, 8, bandwidth=W, latency=ALPHA)
    assert t["steps"] == 7
    assert t["bytes"] == MIB8 * 7 // 8 == 7_340_032
    assert t["t_bandwidth"] == pytest.approx(73.40032e-6)
    assert t["t_latency"] == pytest.approx(7e-6)
    assert t["time"] == pytest.approx(80.40032e-6)


def test_reduce_scatter_ring_prices_the_operand() -> None:
    # the result is V/N = 1 MiB; each device sends V (N-1)/N, as an all-gather of V does
    t = collective_time("reduce-scatter", MIB8 // 8, 8, bandwidth=W, latency=ALPHA)
    assert (t["steps"], t["bytes"]) == (7, 7_340_032)
    assert t["time"] == pytest.approx(80.40032e-6)


def test_all_reduce_is_reduce_scatter_plus_all_gather() -> None:
    ar = collective_time("all-reduce", MIB8, 8, bandwidth=W, latency=ALPHA)
    rs = collective_time("reduce-scatter", MIB8 // 8, 8, bandwidth=W, latency=ALPHA)
    ag = collective_time("all-gather", MIB8, 8, bandwidth=W, latency=ALPHA)
    assert ar["steps"] == rs["steps"] + ag["steps"] == 14
    assert ar["bytes"] == rs["bytes"] + ag["bytes"] == 14_680_064
    assert ar["time"] == pytest.approx(rs["time"] + ag["time"]) == pytest.approx(160.80064e-6)


def test_all_to_all_ring_and_bruck() -> None:
    ring = collective_time("all-to-all", MIB8, 8, bandwidth=W, latency=ALPHA)
    assert (ring["steps"], ring["bytes"]) == (7, 7_340_032)
    tree = collective_time("all-to-all", MIB8, 8, bandwidth=W, latency=ALPHA, algorithm="tree")
    assert tree["steps"] == 3 and tree["bytes"] == MIB8 * 3 // 2 == 12_582_912
    assert tree["time"] == pytest.approx(3e-6 + 125.82912e-6)


def test_tree_steps_are_logarithmic() -> None:
    assert [algorithm_steps("all-gather", n, "tree") for n in (1, 2, 8, 64, 1000)] == [
        0, 1, 3, 6, 10
    ]  # fmt: skip
    assert algorithm_steps("all-reduce", 1024, "tree") == 20
    assert algorithm_steps("all-reduce", 1024, "ring") == 2046
    assert algorithm_bytes("all-reduce", MIB8, 8, "tree") == algorithm_bytes(
        "all-reduce", MIB8, 8, "ring"
    )
    assert algorithm_steps("collective-permute", 8) == 1
    with pytest.raises(ValueError, match="algorithm"):
        algorithm_steps("all-gather", 8, "butterfly")


def test_latency_dominates_small_messages() -> None:
    # 4 KiB all-reduce over 1024 devices on a ring: 2046 steps of 1 us outweigh 81.9 ns of bytes
    t = collective_time("all-reduce", 4096, 1024, bandwidth=W, latency=ALPHA)
    assert t["t_latency"] == pytest.approx(2046e-6)
    assert t["t_bandwidth"] == pytest.approx(math.ceil(2 * 4096 * 1023 / 1024) / W)


def test_step_counts_loop_trips() -> None:
    records = [
        {"op": "all-gather", "result_bytes": 65536, "group_size": 8, "trip_count": 4},
        {"op": "reduce-scatter", "result_bytes": 8192, "group_size": 8, "trip_count": 4},
        {"op": "all-reduce", "result_bytes": 4, "group_size": 8, "trip_count": None},
        {"op": "ragged-all-to-all", "result_bytes": 4, "group_size": 8},
    ]
    comm = step_comm_time(records, FLAT, algorithm="ring")
    assert comm["bytes"] == 4 * 57344 + 4 * 57344 + 7 == 458_759
    assert comm["steps"] == 4 * 7 + 4 * 7 + 14 == 70
    assert comm["t_latency"] == pytest.approx(70e-6)
    assert comm["unpriced"] == 1
    # the all-reduce in a loop of unknown trip count is counted once and said so
    assert comm["unknown_trips"] == 1


def test_step_bounds_and_overlap() -> None:
    records = [{"op": "all-reduce", "result_bytes": MIB8, "group_size": 8, "trip_count": 1}]
    b = step_bounds(flops=1e9, hbm_bytes=1e8, collectives=records, peak_flops=1e12,
                    hbm_bandwidth=1e12, network=FLAT, algorithm="ring")
    assert b["t_math"] == pytest.approx(1e-3) and b["t_mem"] == pytest.approx(1e-4)
    assert b["t_comm"] == pytest.approx(160.80064e-6)
    assert b["t_comm_latency"] == pytest.approx(14e-6)
    assert b["lower_bound"] == b["t_math"] and b["binding"] == "compute"
    assert b["upper_bound"] == pytest.approx(1e-3 + 1e-4 + 160.80064e-6)
    assert b["comm_lower_bound"] is False and b["critical_intensity"] == pytest.approx(1e12 / W)
    # the faster algorithm: recursive halving and doubling, 2 log2 8 = 6 steps, the same bytes
    best = step_bounds(flops=1e9, hbm_bytes=1e8, collectives=records, peak_flops=1e12,
                       hbm_bandwidth=1e12, network=FLAT)
    assert best["t_comm_latency"] == pytest.approx(6e-6) and best["algorithms"] == ["tree"]
    assert best["t_comm_bandwidth"] == pytest.approx(b["t_comm_bandwidth"])
    # a step's memory traffic can add the collective's buffers: read V, write V, read V again
    buffered = step_bounds(flops=1e9, hbm_bytes=1e8, collectives=records, peak_flops=1e12,
                           hbm_bandwidth=1e12, network=FLAT, count_buffers=True)
    assert buffered["comm_memory_bytes"] == 3 * MIB8
    assert buffered["memory_bytes"] == 1e8 + 3 * MIB8


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
    rs = {"op": "reduce-scatter", "result_bytes": 32768, "group_size": 8, "trip_count": 1}
    big = project_collective(rs, devices=8, to_devices=64)
    assert (big["group_size"], big["result_bytes"]) == (64, 4096)
    # the operand (262144 B) is unchanged: each device sends V (N-1)/N = 262144 x 63/64
    assert algorithm_bytes("reduce-scatter", 4096, 64) == 262144 * 63 // 64 == 258048
    sub = {"op": "all-reduce", "result_bytes": 1024, "group_size": 4}
    assert project_collective(sub, devices=8, to_devices=64)["group_size"] == 4
    scaled = project_collective({"op": "all-reduce", "result_bytes": 1024, "group_size": 8},
                                devices=8, to_devices=64, batch_factor=8)
    assert scaled["result_bytes"] == 8192


def test_project_step_weak_scaling() -> None:
    ag = {"op": "all-gather", "result_bytes": MIB8, "group_size": 8, "trip_count": 1}
    rows = [project_step(flops=1e9, hbm_bytes=0, collectives=[ag], devices=8, to_devices=n,
                         comm_scales=False, peak_flops=1e12, hbm_bandwidth=1e12,
                         network=FLAT, algorithm="ring") for n in (8, 1024)]
    assert rows[0]["t_comm"] == pytest.approx(80.40032e-6)
    assert rows[1]["t_math"] == rows[0]["t_math"]
    assert rows[1]["t_comm_latency"] == pytest.approx(1023e-6)
    assert rows[1]["comm_bytes"] == math.ceil(MIB8 * 1023 / 1024)
    assert rows[1]["binding"] == "communication" and rows[1]["devices"] == 1024
    # the gathered 8 MiB is written and read on every device, 1/1024 of it read as the shard
    assert rows[1]["comm_memory_bytes"] == math.ceil(MIB8 / 1024) + 2 * MIB8


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
    combined = step_comm_time(arrays, FLAT, algorithm="ring")
    assert combined["steps"] == 14 and combined["t_latency"] == pytest.approx(14e-6)
    assert combined["bytes"] == 2 * 4 * 4096 * 7 // 8
    [cost] = combined["collectives"]
    assert len(cost["record"]["arrays"]) == 4 and cost["record"]["result_bytes"] == 16384
    separate = step_comm_time([{**a, "instruction": f"ar.{i}"} for i, a in enumerate(arrays)],
                              FLAT, algorithm="ring")
    assert separate["steps"] == 4 * 14 and separate["bytes"] == combined["bytes"]


def test_inside_one_domain_one_level() -> None:
    # all-reduce of 8 MiB over 8 GPUs of one node: the tree's 6 steps beat the ring's 14
    cost = collective_cost("all-reduce", MIB8, 8, GPUS)
    [level] = cost["levels"]
    assert (level["level"], level["devices"], level["algorithm"]) == ("NVLink", 8, "tree")
    assert level["steps"] == 6 and level["bytes"] == 2 * MIB8 * 7 // 8
    assert level["rejected"]["algorithm"] == "ring"
    assert level["rejected"]["time"] > level["time"]
    assert cost["t_latency"] == pytest.approx(6e-6)
    assert cost["t_bandwidth"] == pytest.approx(2 * MIB8 * 7 / 8 / 4.5e11)


def test_a_data_parallel_all_reduce_over_1024_gpus_crosses_two_levels() -> None:
    """128 nodes of 8: reduce-scatter and all-gather inside each node over NVLink (V (7/8)
    each way, 2 x 7 ring steps or 2 x 3 tree steps at 1 us), an all-reduce of V/8 across
    nodes over InfiniBand (2 (V/8) 127/128 at 50 GB/s, 2 x 7 tree steps at 5 us). The flat
    ring paid 2 x 1023 steps of network latency."""
    v = 256 * 2**20  # 256 MiB of gradients
    cost = collective_cost("all-reduce", v, 1024, GPUS)
    inside, across = cost["levels"]
    assert (inside["level"], inside["devices"]) == ("NVLink", 8)
    assert (across["level"], across["devices"]) == ("InfiniBand", 128)
    assert inside["bytes"] == 2 * v * 7 // 8
    assert across["bytes"] == math.ceil(2 * (v // 8) * 127 / 128)
    assert inside["t_bandwidth"] == pytest.approx(2 * v * 7 / 8 / 4.5e11)
    assert across["t_bandwidth"] == pytest.approx(2 * (v / 8) * 127 / 128 / 5e10)
    assert (inside["algorithm"], inside["steps"]) == ("tree", 6)
    assert (across["algorithm"], across["steps"]) == ("tree", 14)
    assert cost["t_latency"] == pytest.approx(6e-6 + 14 * 5e-6)
    assert cost["algorithm"] == "tree (NVLink), then tree (InfiniBand)"
    flat = collective_cost("all-reduce", v, 1024, (IB,), algorithm="ring")
    assert flat["t_latency"] == pytest.approx(2046 * 5e-6)
    assert cost["time"] < flat["time"]


def test_all_gather_and_reduce_scatter_across_domains() -> None:
    v = 64 * 2**20
    ag = collective_cost("all-gather", v, 64, GPUS)
    rs = collective_cost("reduce-scatter", v // 64, 64, GPUS)
    for cost in (ag, rs):
        inside, across = cost["levels"]
        assert inside["bytes"] == v * 7 // 8  # the whole array, inside each node
        assert across["bytes"] == (v // 8) * 7 // 8  # 1/8 of it across the 8 nodes
    assert ag["memory_bytes"] == v // 64 + 2 * v  # the shard read, the gathered V written, read
    assert rs["memory_bytes"] == v + 2 * (v // 64)


def test_all_to_all_and_permute_across_domains() -> None:
    a2a = collective_cost("all-to-all", 1 << 20, 64, GPUS, algorithm="ring")
    inside, across = a2a["levels"]
    # of a 1 MiB buffer, 7/64 stays in the node's other GPUs, 56/64 crosses the network
    assert inside["bytes"] == (1 << 20) * 7 // 64 and across["bytes"] == (1 << 20) * 56 // 64
    permute = collective_cost("collective-permute", 4096, 64, GPUS)
    [level] = permute["levels"]
    assert (level["level"], level["steps"], level["bytes"]) == ("InfiniBand", 1, 4096)


def test_a_network_without_a_level_beyond_the_domain_does_not_price() -> None:
    pod = (Level("ICI", 4.5e10, 1e-6, devices=256, topology="torus", torus=(16, 16)),)
    with pytest.raises(NotPriced, match="no network across domains"):
        collective_cost("all-reduce", MIB8, 1024, pod)
    comm = step_comm_time([{"op": "all-reduce", "result_bytes": MIB8, "group_size": 1024}], pod)
    assert comm["not_priced"] and comm["t_comm"] == 0
    row = project_step(flops=1e9, hbm_bytes=0, devices=8, to_devices=1024, comm_scales=False,
                       collectives=[{"op": "all-reduce", "result_bytes": MIB8, "group_size": 8}],
                       peak_flops=1e12, hbm_bandwidth=1e12, network=pod)
    assert row["available"] is False and "no network across domains" in row["reason"]


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
    [level] = pod["levels"]
    assert (level["slice"], level["bandwidth"], level["steps"]) == ("16 x 16", 1.8e11, 16)
    assert level["t_bandwidth"] == pytest.approx(v * 255 / 256 / 1.8e11)
    small = collective_cost("all-reduce", v, 8, ici)
    [level] = small["levels"]
    assert (level["slice"], level["bandwidth"], level["steps"]) == ("2 x 4", 9e10, 2 * 4)
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
    assert row == {"available": False, "devices": 1024, "reason": split_problems(dims, 1024)[0]}


def test_projected_memory_rescales_the_shards() -> None:
    """FSDP from 8 to 64 devices: the weight shards shrink 8 x, the batch shard stays (weak
    scaling); a replicated batch (tensor parallel) grows with the global batch."""
    parts = {"data": 1000, "data_split": True, "state": 8000, "state_split": True, "other": 0}
    row = project_step(flops=1e9, hbm_bytes=9000, collectives=[], devices=8, to_devices=64,
                       comm_scales=False, peak_flops=1e12, hbm_bandwidth=1e9, network=GPUS,
                       hbm_parts=parts)
    assert row["hbm_shards"] == 1000 + 1000 and row["memory_bytes"] == 2000
    tp = {**parts, "data_split": False}
    row = project_step(flops=1e9, hbm_bytes=9000, collectives=[], devices=8, to_devices=64,
                       comm_scales=True, peak_flops=1e12, hbm_bandwidth=1e9, network=GPUS,
                       hbm_parts=tp)
    assert row["hbm_shards"] == 8 * 1000 + 1000


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
