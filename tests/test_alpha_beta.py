"""The alpha-beta communication model against hand-computed cases of the scaling-book formulas
("How to Scale Your Model", chapter "Sharded Matrices and How to Multiply Them"): for an array
of V bytes over N devices, all-gather and reduce-scatter move V (N-1)/N per device in N-1 ring
hops, all-reduce = reduce-scatter + all-gather, all-to-all moves V (N-1)/N of a per-device
buffer V; each hop costs the latency alpha."""

from __future__ import annotations

import math

import pytest

from roofline_report.analysis.comm import (
    algorithm_bytes,
    algorithm_steps,
    collective_time,
    critical_batch,
    project_collective,
    project_step,
    step_bounds,
    step_comm_time,
)

MIB8 = 8 * 2**20  # V = 8 MiB
W = 100e9  # bytes one device sends per second
ALPHA = 1e-6  # seconds per step


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
    comm = step_comm_time(records, bandwidth=W, latency=ALPHA)
    assert comm["bytes"] == 4 * 57344 + 4 * 57344 + 7 == 458_759
    assert comm["steps"] == 4 * 7 + 4 * 7 + 14 == 70
    assert comm["t_latency"] == pytest.approx(70e-6)
    assert comm["unpriced"] == 1


def test_step_bounds_and_overlap() -> None:
    records = [{"op": "all-reduce", "result_bytes": MIB8, "group_size": 8, "trip_count": 1}]
    b = step_bounds(flops=1e9, hbm_bytes=1e8, collectives=records, peak_flops=1e12,
                    hbm_bandwidth=1e12, interconnect_bandwidth=W, latency=ALPHA)
    assert b["t_math"] == pytest.approx(1e-3) and b["t_mem"] == pytest.approx(1e-4)
    assert b["t_comm"] == pytest.approx(160.80064e-6)
    assert b["t_comm_latency"] == pytest.approx(14e-6)
    assert b["lower_bound"] == b["t_math"] and b["binding"] == "compute"
    assert b["upper_bound"] == pytest.approx(1e-3 + 1e-4 + 160.80064e-6)


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
                         interconnect_bandwidth=W, latency=ALPHA) for n in (8, 1024)]
    assert rows[0]["t_comm"] == pytest.approx(80.40032e-6)
    assert rows[1]["t_math"] == rows[0]["t_math"]
    assert rows[1]["t_comm_latency"] == pytest.approx(1023e-6)
    assert rows[1]["comm_bytes"] == math.ceil(MIB8 * 1023 / 1024)
    assert rows[1]["binding"] == "communication" and rows[1]["devices"] == 1024
