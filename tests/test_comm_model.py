"""The communication model, checked against hand-computed bytes and times (no jax)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline_report.analysis.comm import (
    STRATEGIES,
    ScalingSeries,
    comm_bounds,
    matmul_per_device,
    scaling_series,
)
from roofline_report.hlo.collectives import (
    COLLECTIVE_OPS,
    collective_bytes,
    collective_memory_bytes,
    full_array_bytes,
    program_bytes,
    program_dtype,
)

# A hypothetical budget, chosen for round numbers: not any device's specification.
PEAK = 100e9  # FLOP/s
HBM = 20e9  # B/s
LINK = 5e9  # B/s
BUDGET = {"peak_flops": PEAK, "hbm_bandwidth": HBM, "interconnect_bandwidth": LINK}


class TestCollectiveBytes:
    def test_all_gather_sends_all_but_its_own_shard(self) -> None:
        # f32[512,256] gathered over 8 devices: each sends its 1/8 to 7 peers (ring: 7 steps).
        assert collective_bytes("all-gather", 524288, 8) == 458752

    def test_reduce_scatter_operand_is_g_times_the_result(self) -> None:
        # result f32[8,256] = 8192 B; operand 65536 B; ring sends 65536 * 7/8 = 8192 * 7.
        assert collective_bytes("reduce-scatter", 8192, 8) == 57344

    def test_all_reduce_is_twice_a_reduce_scatter(self) -> None:
        # f32[64,256] = 65536 B on 8 devices: 2 * 65536 * 7/8.
        assert collective_bytes("all-reduce", 65536, 8) == 114688
        assert collective_bytes("all-reduce", 65536, 8) == 2 * collective_bytes(
            "reduce-scatter", 65536 // 8, 8
        )

    def test_all_to_all_keeps_one_gth_at_home(self) -> None:
        assert collective_bytes("all-to-all", 512, 8) == 448

    def test_collective_permute_sends_its_whole_buffer(self) -> None:
        assert collective_bytes("collective-permute", 4096, 8) == 4096
        assert collective_bytes("collective-permute", 4096, 1) == 4096

    @pytest.mark.parametrize("op", ["all-gather", "reduce-scatter", "all-reduce", "all-to-all"])
    def test_a_group_of_one_sends_nothing(self, op: str) -> None:
        assert collective_bytes(op, 1 << 20, 1) == 0

    def test_fractions_round_up(self) -> None:
        # 2 * 10 * 2/3 = 13.33 -> 14; 10 * 2/3 = 6.67 -> 7
        assert collective_bytes("all-reduce", 10, 3) == 14
        assert collective_bytes("all-gather", 10, 3) == 7

    @pytest.mark.parametrize(
        ("op", "size", "group"),
        [
            ("broadcast", 8, 2),
            ("all-reduce-start", 8, 2),
            ("all-reduce", -1, 2),
            ("all-reduce", 8, 0),
            ("all-reduce", 8.0, 2),
            ("all-reduce", True, 2),
        ],
    )
    def test_rejects_bad_arguments(self, op: str, size: object, group: object) -> None:
        with pytest.raises(ValueError):
            collective_bytes(op, size, group)  # type: ignore[arg-type]

    @given(
        op=st.sampled_from(COLLECTIVE_OPS),
        size=st.integers(min_value=0, max_value=1 << 40),
        group=st.integers(min_value=1, max_value=4096),
    )
    def test_never_more_than_twice_the_result_except_reduce_scatter(
        self, op: str, size: int, group: int
    ) -> None:
        sent = collective_bytes(op, size, group)
        assert sent >= 0
        limit = size * (group - 1) if op == "reduce-scatter" else 2 * size
        assert sent <= limit


class TestCommBounds:
    def test_contracting_matmul_is_communication_bound(self) -> None:
        # x[64,512] @ w[512,256], contracting axis over 8 devices (per device):
        # flops 2*64*64*256 = 2097152; hbm 4*(64*64 + 64*256 + 64*256) = 147456;
        # all-reduce of f32[64,256]: 2*65536*7/8 = 114688 bytes.
        b = comm_bounds(flops=2097152, hbm_bytes=147456, comm_bytes=114688, **BUDGET)
        assert b.t_math == pytest.approx(20.97152e-6)
        assert b.t_mem == pytest.approx(7.3728e-6)
        assert b.t_comm == pytest.approx(22.9376e-6)
        assert b.lower_bound == pytest.approx(22.9376e-6)
        assert b.upper_bound == pytest.approx(51.28192e-6)
        assert b.binding == "communication"
        assert b.critical_intensity == pytest.approx(20.0)
        assert b.comm_intensity == pytest.approx(128 / 7)  # below 20: communication-bound

    def test_data_parallel_matmul_is_memory_bound_and_sends_nothing(self) -> None:
        # flops 2*8*512*256 = 2097152; hbm 4*(8*512 + 512*256 + 8*256) = 548864.
        b = comm_bounds(flops=2097152, hbm_bytes=548864, comm_bytes=0, **BUDGET)
        assert b.t_comm == 0.0
        assert b.comm_intensity is None
        assert b.t_mem == pytest.approx(27.4432e-6)
        assert b.binding == "memory"
        assert b.lower_bound == b.t_mem
        assert b.upper_bound == pytest.approx(20.97152e-6 + 27.4432e-6)

    def test_compute_bound_when_the_math_dominates(self) -> None:
        b = comm_bounds(flops=1e12, hbm_bytes=1e9, comm_bytes=1e9, **BUDGET)
        assert b.t_math == pytest.approx(10.0)
        assert b.binding == "compute"
        assert b.comm_intensity == pytest.approx(1000.0)

    def test_ties_prefer_compute_then_memory(self) -> None:
        b = comm_bounds(flops=100e9, hbm_bytes=20e9, comm_bytes=5e9, **BUDGET)
        assert b.t_math == b.t_mem == b.t_comm == pytest.approx(1.0)
        assert b.binding == "compute"

    @pytest.mark.parametrize("bad", [0, -1.0, math.inf, math.nan, "1e9", None])
    @pytest.mark.parametrize("field", ["peak_flops", "hbm_bandwidth", "interconnect_bandwidth"])
    def test_rejects_non_positive_budgets(self, field: str, bad: object) -> None:
        budget: dict[str, object] = {**BUDGET, field: bad}
        with pytest.raises(ValueError):
            comm_bounds(flops=1.0, hbm_bytes=1.0, comm_bytes=1.0, **budget)  # type: ignore[arg-type]

    @pytest.mark.parametrize("field", ["flops", "hbm_bytes", "comm_bytes"])
    def test_rejects_negative_amounts(self, field: str) -> None:
        amounts: dict[str, object] = {"flops": 1.0, "hbm_bytes": 1.0, "comm_bytes": 1.0}
        amounts[field] = -1.0
        with pytest.raises(ValueError):
            comm_bounds(**amounts, **BUDGET)  # type: ignore[arg-type]

    @given(
        flops=st.floats(min_value=0, max_value=1e18),
        hbm_bytes=st.floats(min_value=0, max_value=1e15),
        comm_bytes=st.floats(min_value=0, max_value=1e15),
        peak=st.floats(min_value=1e3, max_value=1e16),
        hbm=st.floats(min_value=1e3, max_value=1e14),
        link=st.floats(min_value=1e3, max_value=1e13),
    )
    def test_bound_properties(
        self,
        flops: float,
        hbm_bytes: float,
        comm_bytes: float,
        peak: float,
        hbm: float,
        link: float,
    ) -> None:
        b = comm_bounds(
            flops=flops,
            hbm_bytes=hbm_bytes,
            comm_bytes=comm_bytes,
            peak_flops=peak,
            hbm_bandwidth=hbm,
            interconnect_bandwidth=link,
        )
        times = {"compute": b.t_math, "memory": b.t_mem, "communication": b.t_comm}
        assert b.lower_bound == max(times.values())
        assert times[b.binding] == b.lower_bound
        assert b.lower_bound <= b.upper_bound * (1 + 1e-12)
        assert b.upper_bound <= 3 * b.lower_bound * (1 + 1e-12)
        assert b.critical_intensity == pytest.approx(peak / link)
        if comm_bytes == 0:
            assert b.comm_intensity is None and b.t_comm == 0
        else:
            assert b.comm_intensity == pytest.approx(flops / comm_bytes)


class TestMatmulPerDevice:
    @pytest.mark.parametrize(
        ("strategy", "hbm", "comm", "op", "result"),
        [
            ("data", 4 * (8 * 512 + 512 * 256 + 8 * 256), 0, None, None),
            ("contracting", 4 * (64 * 64 + 64 * 256 + 64 * 256), 114688, "all-reduce", 65536),
            ("fsdp", 4 * (8 * 512 + 512 * 256 + 8 * 256), 458752, "all-gather", 524288),
        ],
    )
    def test_hand_computed(
        self, strategy: str, hbm: int, comm: int, op: str | None, result: int | None
    ) -> None:
        work = matmul_per_device(strategy, batch=64, d_model=512, d_ff=256, devices=8)
        assert work.flops == 2 * 64 * 512 * 256 // 8
        assert work.hbm_bytes == hbm
        assert work.comm_bytes == comm
        if op is None:
            assert work.collective is None
        else:
            assert work.collective == {"op": op, "result_bytes": result, "group_size": 8}

    def test_one_device_sends_nothing(self) -> None:
        for strategy in STRATEGIES:
            work = matmul_per_device(strategy, batch=4, d_model=8, d_ff=2, devices=1)
            assert work.comm_bytes == 0
            assert work.flops == 2 * 4 * 8 * 2

    def test_rejects_indivisible_and_unknown(self) -> None:
        with pytest.raises(ValueError, match="divisible"):
            matmul_per_device("data", batch=6, d_model=8, d_ff=8, devices=4)
        with pytest.raises(ValueError, match="divisible"):
            matmul_per_device("contracting", batch=8, d_model=6, d_ff=8, devices=4)
        with pytest.raises(ValueError, match="strategy"):
            matmul_per_device("tensor", batch=8, d_model=8, d_ff=8, devices=4)
        with pytest.raises(ValueError):
            matmul_per_device("data", batch=0, d_model=8, d_ff=8, devices=1)


class TestScalingSeries:
    def series(self) -> ScalingSeries:
        return scaling_series(
            d_model=1024,
            d_ff=1024,
            batch=512,
            device_counts=[1, 2, 4, 8],
            batches=[64, 128, 256, 512, 1024],
            devices=8,
            peak_flops=PEAK,
            hbm_bandwidth=HBM,
            interconnect_bandwidth=LINK,
        )

    def test_structure(self) -> None:
        s = self.series()
        assert s.critical_intensity == pytest.approx(20.0)
        assert s.device_counts == (1, 2, 4, 8)
        for strategy in STRATEGIES:
            columns = s.by_devices[strategy]
            for column in (columns.t_math, columns.t_mem, columns.t_comm, columns.lower_bound,
                           columns.upper_bound, columns.binding):
                assert len(column) == 4

    def test_data_parallel_never_communicates(self) -> None:
        s = self.series()
        assert s.by_devices["data"].t_comm == (0.0,) * 4
        assert s.by_batch["data"].t_comm == (0.0,) * 5

    def test_math_shrinks_as_one_over_n(self) -> None:
        t_math = self.series().by_devices["contracting"].t_math
        # 2 * 512 * 1024 * 1024 / N / 1e11
        assert t_math == pytest.approx([2 * 512 * 1024 * 1024 / n / PEAK for n in (1, 2, 4, 8)])

    def test_contracting_all_reduce_grows_with_n(self) -> None:
        t_comm = self.series().by_devices["contracting"].t_comm
        # 2 * 4 * 512 * 1024 * (N-1)/N bytes at 5 GB/s
        expected = [2 * 4 * 512 * 1024 * (n - 1) / n / LINK for n in (1, 2, 4, 8)]
        assert t_comm == pytest.approx(expected)

    def test_fsdp_turns_compute_bound_past_the_critical_batch(self) -> None:
        # compute-bound when B > s * peak * (N-1) / (2 W) = 4 * 1e11 * 7 / 1e10 = 280
        fsdp = self.series().by_batch["fsdp"]
        assert fsdp.binding == (
            "communication",
            "communication",
            "communication",
            "compute",
            "compute",
        )
        # the all-gather of w[1024,1024] does not depend on the batch: 4 MiB * 7/8 at 5 GB/s
        assert fsdp.t_comm == pytest.approx([4 * 1024 * 1024 * 7 / 8 / LINK] * 5)

    def test_rejects_empty_sweeps_and_bad_budgets(self) -> None:
        with pytest.raises(ValueError):
            scaling_series(
                d_model=8,
                d_ff=8,
                batch=8,
                device_counts=[],
                batches=[8],
                devices=1,
                peak_flops=PEAK,
                hbm_bandwidth=HBM,
                interconnect_bandwidth=LINK,
            )
        with pytest.raises(ValueError):
            scaling_series(
                d_model=8,
                d_ff=8,
                batch=8,
                device_counts=[1],
                batches=[8],
                devices=1,
                peak_flops=0.0,
                hbm_bandwidth=1.0,
                interconnect_bandwidth=1.0,
            )


class TestCollectiveBuffers:
    """The memory traffic a collective adds on each device (its operand, its result, and the
    read of that result), and the array the ring formulas move."""

    def test_all_gather_writes_and_reads_the_gathered_array(self) -> None:
        # V = 8 MiB gathered over 8 devices: the 1 MiB shard read, V written, V read
        assert collective_memory_bytes("all-gather", 8 << 20, 8) == (1 << 20) + 2 * (8 << 20)

    def test_reduce_scatter_reads_the_full_operand(self) -> None:
        # result 1 MiB over 8 devices: the operand is 8 MiB, read once; the result written, read
        assert full_array_bytes("reduce-scatter", 1 << 20, 8) == 8 << 20
        assert collective_memory_bytes("reduce-scatter", 1 << 20, 8) == (8 << 20) + 2 * (1 << 20)

    @pytest.mark.parametrize("op", ["all-reduce", "all-to-all", "collective-permute"])
    def test_others_move_their_array_three_times(self, op: str) -> None:
        assert collective_memory_bytes(op, 4096, 8) == 3 * 4096
        assert full_array_bytes(op, 4096, 8) == 4096

    def test_unknown_op(self) -> None:
        with pytest.raises(ValueError, match="unknown collective"):
            collective_memory_bytes("broadcast", 8, 2)


class TestProgramDtype:
    """Which of the program's ops a compiled collective came from, and the dtype it has there."""

    RECORD: ClassVar[dict[str, Any]] = {"op_name": "jit(f)/shard_map/psum",
                                         "source": "model.py:12"}
    ARRAY: ClassVar[dict[str, Any]] = {"dtype": "f32", "shape": [64, 16], "bytes": 4096}

    def op(self, name: str, types: list[list[Any]], line: int = 12) -> dict[str, Any]:
        return {"name": name, "file": "model.py", "line": line, "column": 8, "types": types}

    def test_the_op_at_the_same_place_and_name(self) -> None:
        ops = [self.op("psum", [["bf16", 1024], ["bf16", 1024]]),
               self.op("add", [["f32", 1024]])]  # same line, another name: not the psum
        assert program_dtype(self.RECORD, self.ARRAY, 8, ops) == "bf16"
        assert program_bytes(self.ARRAY, "bf16") == 2048

    def test_a_sharded_collective_matches_the_global_array(self) -> None:
        # GSPMD: the program holds the global array, g times the per-device elements
        ops = [self.op("dot_general", [["bf16", 8 * 1024], ["bf16", 999]])]
        record = {**self.RECORD, "op_name": "jit(f)/dot_general"}
        assert program_dtype(record, self.ARRAY, 8, ops) == "bf16"
        assert program_dtype(record, self.ARRAY, 4, ops) is None  # no tensor of that size

    def test_ambiguous_or_missing_gives_none(self) -> None:
        # a bf16 x bf16 -> f32 product of square shapes: both dtypes have the size
        mixed = [self.op("psum", [["bf16", 1024], ["f32", 1024]])]
        assert program_dtype(self.RECORD, self.ARRAY, 8, mixed) is None
        elsewhere = [self.op("psum", [["bf16", 1024]], line=40)]
        # no op at its location: found by name alone
        assert program_dtype(self.RECORD, self.ARRAY, 8, elsewhere) == "bf16"
        assert program_dtype({"op_name": None, "source": None}, self.ARRAY, 8, []) is None

    def test_integers_are_their_own_dtype(self) -> None:
        array = {"dtype": "s32", "shape": [4], "bytes": 16}
        assert program_dtype(self.RECORD, array, 8, []) == "s32"
        assert program_bytes(array, "s32") == 16
