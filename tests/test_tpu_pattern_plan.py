"""The pattern roofs planned for a TPU: the patterns its compiler never emits are said so (not
measured, with the reason), its own reduce-window spanning a row is measured, and each point's
check finds the pattern in the TPU's forms (a transpose is a layout-changing copy there)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from roofline_report.observe.ceilings import pattern_plans
from roofline_report.observe.ceilings.pattern_check import pattern_kernel
from roofline_report.results.schema_ceilings import RateCeiling

HLO = Path(__file__).resolve().parent / "fixtures" / "tpu_v5e_hlo"


def _text(name: str) -> str:
    return gzip.decompress((HLO / f"{name}.txt.gz").read_bytes()).decode()


def test_a_tpu_plan_measures_its_own_patterns_and_names_the_absent() -> None:
    tpu = pattern_plans.pattern_plan("tpu", quick=False)
    cpu = pattern_plans.pattern_plan("cpu", quick=False)
    on_tpu = {k.pattern for k in pattern_plans.kernels(tpu)}
    on_cpu = {k.pattern for k in pattern_plans.kernels(cpu)}
    absent = set(pattern_plans.NOT_ON_BACKEND["tpu"])
    assert absent == {"loop-dot", "broadcast-transpose", "fft"}
    assert not on_tpu & absent and absent <= on_cpu
    assert "reduce-window-lane" in on_tpu and "reduce-window-lane" not in on_cpu
    assert "on-chip" in on_tpu and "on-chip" not in on_cpu
    assert "update-slice" in on_tpu and "update-slice" not in on_cpu
    lanes = [k for k in pattern_plans.kernels(tpu) if k.pattern == "reduce-window-lane"]
    assert sorted(k.row for k in lanes) == sorted(pattern_plans.LANE_ROWS)
    entries = pattern_plans.not_measured(tpu)
    assert {e["op"] for e in entries} == absent and pattern_plans.not_measured(cpu) == []
    for e in entries:  # each a valid, unavailable ceilings entry with its reason
        record = RateCeiling.model_validate(e)
        assert not record.available
        assert record.reason == pattern_plans.NOT_ON_BACKEND["tpu"][e["op"]]


@pytest.mark.parametrize(("program", "pattern"), [
    ("transpose_f32_8192", "transpose"),
    ("swap_minor_64x1024x1024", "transpose"),
    ("log_softmax_4x512x8192", "reduce-window-lane"),
    ("top_k_2048x32768_k20", "top-k"),
    ("sort_2048x32768", "sort"),
    ("gather_rows_f32_262144x256", "gather"),
    ("scatter_add_rows_f32_262144x256", "scatter"),
    # a loop whose carry the compiler keeps in the core's vector memory
    ("fori16_tanh_matmul_bf16_4096", "on-chip"),
    # one position of a cache: one row of each tile it crosses
    ("kv_update_bf16_32x8192x1024", "update-slice"),
])
def test_the_check_finds_each_pattern_in_the_tpus_forms(program: str, pattern: str) -> None:
    kernel, described = pattern_kernel(_text(program), pattern)
    assert kernel is not None, described


def test_the_check_finds_no_pattern_where_there_is_none() -> None:
    kernel, described = pattern_kernel(_text("scale_f32_64M"), "transpose")
    assert kernel is None and described
    # a kernel streaming from HBM is no on-chip one
    assert pattern_kernel(_text("scale_f32_64M"), "on-chip")[0] is None
    # an update of whole tiles is no update-slice: it writes its tiles and reads none
    assert pattern_kernel(_text("slice_rows_f32_16384x4096"), "update-slice")[0] is None


def test_an_accelerators_samples_outlast_its_round_trip() -> None:
    """A sample's first call waits a blocking round trip before the device starts: on an
    accelerator every plan's samples last at least ACCELERATOR_MIN_SAMPLE_SECONDS."""
    from roofline_report.observe import timer
    from roofline_report.observe.ceilings import plan, rates, working_set

    floor = timer.ACCELERATOR_MIN_SAMPLE_SECONDS
    for quick in (True, False):
        tpu = plan.plan_for("tpu", quick=quick, cache_bytes=None, free_bytes=16 << 30)
        cpu = plan.plan_for("cpu", quick=quick, cache_bytes=32 << 20, free_bytes=16 << 30)
        assert tpu.min_sample_s >= floor and tpu.sweep_min_sample_s >= floor
        assert cpu.min_sample_s < floor and cpu.sweep_min_sample_s < floor
        assert pattern_plans.pattern_plan("tpu", quick=quick).min_sample_s >= floor
        assert rates.rate_plan("tpu", quick=quick).min_sample_s >= floor
        sweep = working_set.sweep_plan("tpu", quick=quick, cache_bytes=None, free_bytes=None)
        assert sweep.min_sample_s >= floor
    assert timer.min_sample_for(True, 0.002) == floor and timer.min_sample_for(False, 0.002) \
        == 0.002
    # a quick plan on an accelerator keeps its two largest sizes (the smaller ones time the
    # host's dispatch there)
    quick = pattern_plans.pattern_plan("tpu", quick=True)
    full = pattern_plans.pattern_plan("tpu", quick=False)
    assert quick.sizes == (full.sizes[-1] // 16, full.sizes[-1])


def test_the_integer_roofs_check_finds_the_tpus_integer_product() -> None:
    from roofline_report.observe.ceilings import special_compute

    int8 = _text("matmul_int8_4096")
    assert special_compute._holds(int8, lambda i: special_compute.integer_dot(i, "int8"))
    assert not special_compute._holds(int8, lambda i: special_compute.integer_dot(i, "int4"))
    assert not special_compute._holds(_text("matmul_bf16_4096"),
                                      lambda i: special_compute.integer_dot(i, "int8"))


def test_an_accelerator_measures_sorts_and_gathers_by_their_row() -> None:
    """A TPU sorts rows and gathers single elements at rates of their own: sorts are measured
    by row length and a gather of single elements is a roof (row 1) beside the rows' (256),
    even in a quick plan; a CPU keeps its vector sort, and gathers single elements only from
    tables of a fixed size (its scattered elements from a vector as large as the gather stay
    a variant)."""
    for quick in (True, False):
        tpu = [(k.pattern, k.row, k.roof) for k in pattern_plans.kernels(
            pattern_plans.pattern_plan("tpu", quick=quick))]
        assert [(r, roof) for p, r, roof in tpu if p == "sort"] == \
            [(row, True) for row in pattern_plans.SORT_ROWS]
        assert ("gather", 1, True) in tpu and ("gather", 256, True) in tpu
        assert ("scatter", 1, True) in tpu
    cpu = [(k.pattern, k.row, k.roof) for k in pattern_plans.kernels(
        pattern_plans.pattern_plan("cpu", quick=False))]
    assert [(r, roof) for p, r, roof in cpu if p == "sort"] == [(0, True)]
    kernels = pattern_plans.kernels(pattern_plans.pattern_plan("cpu", quick=False))
    assert all(k.table for k in kernels if (k.pattern, k.row, k.roof) == ("gather", 1, True))
    assert ("gather", 0, False) in cpu  # the growing vector's scattered elements


def test_a_sort_kernel_says_its_row() -> None:
    from roofline_report.hlo.kernels import kernel_inventory

    sorts = [k for k in kernel_inventory(_text("sort_2048x32768"))["kernels"]
             if k["pattern"] == "sort"]
    assert [k["pattern_row"] for k in sorts] == [32768]
