"""The pattern roofs planned for a TPU: the patterns its compiler never emits are said so (not
measured, with the reason), its own reduce-window spanning a row is measured, and each point's
check finds the pattern in the TPU's forms (a transpose is a layout-changing copy there)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from roofline_report.observe.ceilings import patterns
from roofline_report.results.schema_ceilings import RateCeiling

HLO = Path(__file__).resolve().parent / "fixtures" / "tpu_v5e_hlo"


def _text(name: str) -> str:
    return gzip.decompress((HLO / f"{name}.txt.gz").read_bytes()).decode()


def test_a_tpu_plan_measures_its_own_patterns_and_names_the_absent() -> None:
    tpu = patterns.pattern_plan("tpu", quick=False)
    cpu = patterns.pattern_plan("cpu", quick=False)
    on_tpu = {k.pattern for k in patterns.kernels(tpu)}
    on_cpu = {k.pattern for k in patterns.kernels(cpu)}
    absent = set(patterns.NOT_ON_BACKEND["tpu"])
    assert absent == {"loop-dot", "broadcast-transpose", "fft"}
    assert not on_tpu & absent and absent <= on_cpu
    assert "reduce-window-lane" in on_tpu and "reduce-window-lane" not in on_cpu
    assert "on-chip" in on_tpu and "on-chip" not in on_cpu
    lanes = [k for k in patterns.kernels(tpu) if k.pattern == "reduce-window-lane"]
    assert sorted(k.row for k in lanes) == sorted(patterns.LANE_ROWS)
    entries = patterns.not_measured(tpu)
    assert {e["op"] for e in entries} == absent and patterns.not_measured(cpu) == []
    for e in entries:  # each a valid, unavailable ceilings entry with its reason
        record = RateCeiling.model_validate(e)
        assert not record.available and record.reason == patterns.NOT_ON_BACKEND["tpu"][e["op"]]


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
])
def test_the_check_finds_each_pattern_in_the_tpus_forms(program: str, pattern: str) -> None:
    kernel, described = patterns.pattern_kernel(_text(program), pattern)
    assert kernel is not None, described


def test_the_check_finds_no_pattern_where_there_is_none() -> None:
    kernel, described = patterns.pattern_kernel(_text("scale_f32_64M"), "transpose")
    assert kernel is None and described
    # a kernel streaming from HBM is no on-chip one
    assert patterns.pattern_kernel(_text("scale_f32_64M"), "on-chip")[0] is None
