"""The collective model against the worked numbers of "How to Scale Your Model"
(jax-ml/scaling-book, https://jax-ml.github.io/scaling-book/: chapters 'Sharded Matrices',
'How to Parallelize a Transformer for Training' and 'How to Think About GPUs') and the
bus-bandwidth factors of NVIDIA's nccl-tests (doc/PERFORMANCE.md), each found in the tool's
output within 10 %.

The book's figures are quoted as it prints them, with where they are; the nccl-tests factors
are derived here from first principles (each rank's bytes counted over an explicit schedule),
not typed in. Network figures: H100 NVLink 450 GB/s a GPU each way in a node of 8, one
400 Gb/s InfiniBand port a GPU (400 GB/s a node); TPU v5e ICI 4.5e10 B/s a link each way on a
16 x 16 torus, TPU v4 4.5e10 and v5p 9e10 on 3D tori whose axes of a multiple of 4 wrap (the
book's tables; the presets and roofline_report/networks.py cite them).
"""

from __future__ import annotations

import pytest

from roofline_report import networks, presets
from roofline_report.analysis.comm_network import collective_cost, flat_network, mesh_span
from roofline_report.analysis.comm_step import book_critical_batch
from roofline_report.analysis.study import preset_network, torus_network

H100 = preset_network(presets.get_preset("H100 SXM"))
V5E = preset_network(presets.get_preset("TPU v5e"))
V5P = torus_network(networks.torus_for("TPU v5p"))
V4 = torus_network(networks.torus_for("TPU v4"))
BF16 = 2
C_H100 = 9.89e14  # dense bf16, the preset's figure (the book rounds it to 990e12)
C_V5P = 4.59e14  # the book's table of TPUs


def _bandwidth(op: str, result_bytes: int, group: int, network: tuple, **kw: object) -> float:
    return float(collective_cost(op, result_bytes, group, network, **kw).t_bandwidth)


# --------------------------------------------------------------------------------------------
# nccl-tests: bus bandwidth = algorithm bandwidth x a factor per collective
# --------------------------------------------------------------------------------------------


def _ring_sends(op: str, n: int, size: int) -> float:
    """Bytes rank 0 sends, counted over the explicit schedule of NCCL's ring (all-gather,
    reduce-scatter, all-reduce) or of a direct all-to-all, for an operation of ``size`` bytes
    as nccl-tests states it (the gathered or reduced array; all-to-all: one rank's buffer)."""
    chunk = size / n
    if op in ("all-gather", "reduce-scatter"):
        # step s: rank r forwards chunk (r - s) mod n to rank r + 1; after n - 1 steps every
        # rank holds (or has reduced) every chunk
        have = [{r} for r in range(n)]
        sent = 0.0
        for step in range(n - 1):
            moves = [(r, (r - step) % n) for r in range(n)]
            for r, c in moves:
                have[(r + 1) % n].add(c)
            sent += chunk  # rank 0's one chunk this step
        assert all(len(h) == n for h in have)
        return sent
    if op == "all-reduce":  # a reduce-scatter, then an all-gather
        return _ring_sends("reduce-scatter", n, size) + _ring_sends("all-gather", n, size)
    if op == "all-to-all":  # one share of size/n to each other rank
        return sum(chunk for peer in range(n) if peer != 0)
    raise AssertionError(op)


@pytest.mark.parametrize("op", ["all-reduce", "all-gather", "reduce-scatter", "all-to-all"])
@pytest.mark.parametrize("n", [2, 8, 64, 1024])
def test_nccl_bus_bandwidth_factors(op: str, n: int) -> None:
    """algbw = S / t; busbw = algbw x (bytes a rank sends / S), which nccl-tests tabulates as
    2(n-1)/n for all-reduce and (n-1)/n for the others: on a switch of W bytes/s a rank, the
    tool's time gives busbw = W."""
    size = 1 << 30
    factor = _ring_sends(op, n, size) / size
    assert factor == pytest.approx(2 * (n - 1) / n if op == "all-reduce" else (n - 1) / n)
    w = 1e11
    result = size // n if op == "reduce-scatter" else size
    t = _bandwidth(op, result, n, flat_network(w, 1e-6))
    busbw = size / t * factor
    assert busbw == pytest.approx(w, rel=0.10)


def test_nccl_bus_bandwidth_across_h100_nodes() -> None:
    """A 1 GiB all-reduce over 1,024 H100s: the tool's bus bandwidth is the book's collective
    bandwidth, 400 GB/s of node egress ('How to Think About GPUs', its table of the DGX
    SuperPod: Node 450, Leaf 400, Spine 400 GB/s), not the NVLink's 450 nor the sum of
    levels."""
    size, n = 1 << 30, 1024
    t = _bandwidth("all-reduce", size, n, H100, algorithm="ring")
    assert size / t * 2 * (n - 1) / n == pytest.approx(400e9, rel=0.10)
    inside = _bandwidth("all-reduce", size, 8, H100, algorithm="ring")
    assert size / inside * 2 * 7 / 8 == pytest.approx(450e9, rel=0.10)


# --------------------------------------------------------------------------------------------
# Collective times the book works out
# --------------------------------------------------------------------------------------------


def test_h100_node_all_gather_pop_quiz() -> None:
    """'How to Think About GPUs', Pop Quiz 1: AllGather(bf16[B_X, F]) over an 8 x H100 node at
    450 GB/s, B = 1024, F = 16,384: "more precisely, 65us"."""
    t = _bandwidth("all-gather", BF16 * 1024 * 16384, 8, H100)
    assert t == pytest.approx(65e-6, rel=0.10)


def test_two_node_all_gather_is_bound_by_the_node() -> None:
    """'How to Think About GPUs', Question 5: an AllGather of B bytes over exactly 2 nodes costs
    B 7/(8 x 450e9) = B / 514e9 inside the node against B / 800e9 across: "we're actually
    bounded by the node level reduction"."""
    b = 1 << 30
    cost = collective_cost("all-gather", b, 16, H100)
    inside, across = cost.levels
    assert inside.binds and not across.binds
    assert cost.t_bandwidth == pytest.approx(b / 514e9, rel=0.01)
    assert across.t_bandwidth == pytest.approx(b / 800e9, rel=0.01)


def test_h100_all_to_all_within_and_across_nodes() -> None:
    """'How to Think About GPUs': within a node T = B (N-1) / (W N^2); spanning M nodes
    T = B (M-1) / (M^2 W_node egress), "effectively 50GB/s rather than 400GB/s"."""
    b = 1 << 30  # the whole array; each GPU holds B / N
    t = _bandwidth("all-to-all", b // 8, 8, H100)
    assert t == pytest.approx(b * 7 / (450e9 * 64), rel=0.01)
    n, m = 64, 8
    t = _bandwidth("all-to-all", b // n, n, H100)
    assert t == pytest.approx(b * (m - 1) / (m * m * 400e9), rel=0.01)


def test_v5e_all_gather_without_wraparound() -> None:
    """'Sharded Matrices', Pop Quiz 2: AllGather_Y([E_Y, F]) on TPU v5e with mesh {'X': 8,
    'Y': 4}, E = 2048, F = 8192 in bf16: no wraparound on an axis of 4, so "3 * 8.4e6 /
    4.5e10 = 560us"."""
    span = mesh_span((8, 4), (1,), V5E[0].shape_of(32) or ())
    assert span == (4, 1)
    t = _bandwidth("all-gather", BF16 * 2048 * 8192, 4, V5E, span=span)
    assert t == pytest.approx(560e-6, rel=0.10)


def test_v4_all_gather_over_two_axes() -> None:
    """'Sharded Matrices', Question 2: AllGather_XY([B_X, D_Y]) on a TPU v4 4x4x4 with mesh
    {'X': 4, 'Y': 4, 'Z': 4}, B = 1024, D = 4096 in bf16: both axes wrap, "2BD / (2 W_ICI)
    ... or 46 us"."""
    span = mesh_span((4, 4, 4), (0, 1), (4, 4, 4))
    assert span is not None and sorted(span) == [1, 4, 4]
    t = _bandwidth("all-gather", BF16 * 1024 * 4096, 16, V4, span=span)
    assert t == pytest.approx(46e-6, rel=0.10)


def test_v5e_pod_all_gather_and_all_to_all() -> None:
    """On a whole 16 x 16 v5e pod: an AllGather takes bytes / (bidirectional ICI bandwidth x
    num_axes) ('Sharded Matrices', its summary table); an AllToAll is bound by the bisection:
    256 x 262,144 B / 4 cross 32 links (16 rows, each cut twice with the wraparound) each way,
    1,048,576 B a link both ways at 90 GB/s (jax.experimental.roofline's figure): 11.65 us.
    On a ring of 16 (one wrapping axis) that bound is the book's "AllGather / 4 for a
    bidirectional ring"."""
    v = 64 * 2**20
    t = _bandwidth("all-gather", v, 256, V5E)
    assert t == pytest.approx(v / (9e10 * 2), rel=0.10)
    s = 262144
    crossing, links = 256 * 128 * s / 256 / 2, 16 * 2
    assert crossing * 2 / links == 1048576
    a2a = collective_cost("all-to-all", s, 256, V5E)
    [level] = a2a.levels
    assert (level.algorithm, level.cut_links) == ("bisection", 32)
    assert a2a.t_bandwidth == pytest.approx(crossing / (links * 4.5e10)) == pytest.approx(
        11.65e-6, rel=1e-3)
    ring = (16, 1)
    v_ring = 16 * s
    gather = _bandwidth("all-gather", v_ring, 16, V5E, span=ring)
    assert _bandwidth("all-to-all", s, 16, V5E, span=ring) == pytest.approx(gather / 4, rel=0.10)


def test_v5e_slice_all_to_all_and_a_line_of_four() -> None:
    """A 2 x 4 slice has no wraparound: its bisection is the 2 links across the axis of 4, so
    262,144 B a chip take 8 x 4 x 4 / 8 x 262,144 / 2 / (2 x 4.5e10) = 5.83 us; a psum of
    64 KiB over the mesh axis of 4 runs along a line of 4 (3 hops each way of its
    reduce-scatter and all-gather, one link one way): 2 x 65,536 x 3/4 / 4.5e10 = 2.18 us in 6
    hops, not the 2 x 2 slice a group of 4 would own."""
    a2a = collective_cost("all-to-all", 262144, 8, V5E)
    assert a2a.levels[0].slice == "2 x 4"
    assert a2a.t_bandwidth == pytest.approx(4 * 4 / 8 * 262144 / (2 * 4.5e10))
    assert a2a.t_bandwidth == pytest.approx(5.83e-6, rel=1e-3)
    span = mesh_span((2, 4), (1,), V5E[0].shape_of(8) or ())
    line = collective_cost("all-reduce", 65536, 4, V5E, span=span)
    assert (line.levels[0].slice, line.steps) == ("1 x 4", 6)
    assert line.t_bandwidth == pytest.approx(2 * 65536 * 3 / 4 / 4.5e10)
    owned = collective_cost("all-reduce", 65536, 4, V5E)
    assert (owned.levels[0].slice, owned.steps) == ("2 x 2", 4)


# --------------------------------------------------------------------------------------------
# Crossovers: data parallelism, FSDP, tensor parallelism
# --------------------------------------------------------------------------------------------

D = F = 8192


def _dp_batch(network: tuple, group: int, peak: float, strategy: str = "dp",
              span: tuple[int, ...] | None = None) -> float:
    """The book's per-device compute-bound batch of a two-matrix MLP layer (bf16 W_in[D, F],
    W_out[F, D]): data parallel all-reduces both gradients, FSDP all-gathers both weights and
    reduce-scatters both gradients (the same bytes); the math the backward pass's 8 D F flops
    a sample (the book's 2 x 2 x 2 B D F), here through the tool's own
    :func:`book_critical_batch` at one sample a device."""
    weight = BF16 * D * F
    if strategy == "dp":
        calls = [("all-reduce", weight)] * 2
    else:
        calls = [("all-gather", weight)] * 2 + [("reduce-scatter", weight // group)] * 2
    t_bw = sum(_bandwidth(op, size, group, network, span=span) for op, size in calls)
    forward = 4 * D * F  # two matmuls of 2 D F a sample
    b = book_critical_batch(batch=1, forward_flops=forward, peak_flops=peak, t_bandwidth=t_bw,
                            comm_scales=False)
    assert b is not None
    return b


@pytest.mark.parametrize("strategy", ["dp", "fsdp"])
def test_tpu_v5p_data_parallel_and_fsdp(strategy: str) -> None:
    """'How to Parallelize a Transformer for Training': on TPU v5p "our batch size per chip
    must be at least 2,550" over one ICI axis, and "BS=850 per TPU" with all three axes of a
    pod (8,960 chips, 16 x 20 x 28, every axis a multiple of 4: wrapped)."""
    one_axis = _dp_batch(V5P, 16, C_V5P, strategy, span=(16, 1, 1))
    assert one_axis == pytest.approx(2550, rel=0.10)
    pod = _dp_batch(V5P, 8960, C_V5P, strategy)
    assert pod == pytest.approx(850, rel=0.10)


@pytest.mark.parametrize("strategy", ["dp", "fsdp"])
def test_h100_data_parallel_and_fsdp(strategy: str) -> None:
    """'How to Think About GPUs': "Within an SU or at the spine level, BS > 990e12 / 400e9 =
    2475" per GPU; within a node the book's 990e12 / 450e9 = 2200 with its (X - 1)/X
    ("What happens when X is small?"): 2200 x 7/8."""
    across = _dp_batch(H100, 1024, C_H100, strategy)
    assert across == pytest.approx(2475, rel=0.10)
    inside = _dp_batch(H100, 8, C_H100, strategy)
    assert inside == pytest.approx(2200 * 7 / 8, rel=0.10)


def _tp_ratio(network: tuple, y: int, peak: float, span: tuple[int, ...] | None = None,
              f: int = F) -> float:
    """T_comm / T_math of Megatron tensor parallelism over Y devices, forward pass (the book's
    accounting: the activations In[B, D] all-gathered and Out[B, D] reduce-scattered, bf16,
    against 2 x 2 B D F / Y flops), through the tool's pricing; B = 1024."""
    b = 1024
    t_comm = (_bandwidth("all-gather", BF16 * b * D, y, network, span=span)
              + _bandwidth("reduce-scatter", BF16 * b * D // y, y, network, span=span))
    return t_comm / (4 * b * D * f / (y * peak))


def test_tpu_v5p_tensor_parallel() -> None:
    """'How to Parallelize a Transformer for Training': "for TPUv5p, C / W_ICI = 2550 in bf16,
    so we can only do tensor parallelism up to Y < F / 2550" on one axis, "Y < n_axes * F /
    2550" over several: at F = Y x 2550 / n_axes the communication just matches the math."""
    y = 16
    assert _tp_ratio(V5P, y, C_V5P, span=(16, 1, 1), f=y * 2550) == pytest.approx(1, rel=0.10)
    y = 64  # a 4 x 4 x 4 cube, three wrapped axes
    assert _tp_ratio(V5P, y, C_V5P, f=y * 2550 // 3) == pytest.approx(1, rel=0.10)


def test_h100_tensor_parallel_in_a_node() -> None:
    """'How to Think About GPUs': tensor parallelism is compute-bound for Y < F W / C, "Within
    a node ... about F / 2200"; the node's collectives move (Y - 1)/Y of the array (the book's
    "T_comms = B (8 - 1) / (8 W)"), so at F = 2200 (Y - 1) the two times meet."""
    y = 8
    assert _tp_ratio(H100, y, C_H100, f=2200 * (y - 1)) == pytest.approx(1, rel=0.10)
