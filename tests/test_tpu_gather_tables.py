"""A TPU's gathers priced by the size of the table they gather from, and its reductions whose
operands stay on chip priced by their on-chip bytes: the count records a gather's table
(checked on a real TPU v5e module), the TPU plan measures gathers from fixed tables, a kernel
takes the roof of its row and the nearest table, and a kernel with no HBM byte is not held to
a reduction roof measured on arrays in HBM."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from roofline_report.analysis import on_chip, patterns, predict
from roofline_report.analysis.roofs import BandwidthRoof, ComputeRoof, RateRoof, RoofSet
from roofline_report.hlo.ir import parse_module
from roofline_report.hlo.kernels import kernel_inventory
from roofline_report.kinds import Kind
from roofline_report.observe.ceilings import pattern_plans
from roofline_report.results.schema_ceilings import RateCeiling
from tests.kernel_records import kernel_record

HLO = Path(__file__).resolve().parent / "fixtures" / "tpu_v5e_hlo"


def _rate(name: str, op: str, rate: float, *, row: int = 0, table: int = 0) -> RateRoof:
    return RateRoof(name, op, "float32", rate, Kind.MEASURED, "hand-made",
                    by_size=((1e4, rate), (1e8, rate)), row=row, table=table)


GROWING = _rate("gather float32 (rows of 256)", "gather", 16e9, row=256)
SMALL = _rate("gather float32 (rows of 256 of a table of 1 MiB)", "gather", 80e9, row=256,
              table=1 << 20)
MIDDLE = _rate("gather float32 (rows of 256 of a table of 16 MiB)", "gather", 60e9, row=256,
               table=1 << 24)
ELEMENTS = _rate("gather float32 (scattered elements of a table of 16 KiB)", "gather", 2e9,
                 row=1, table=1 << 14)
GATHERS = RoofSet("hand-made", Kind.MEASURED, (), (), (), (GROWING, SMALL, MIDDLE, ELEMENTS))


def _gather(size: int, row: int, table: int) -> dict[str, object]:
    return {"pattern": "gather", "pattern_size": size, "pattern_row": row,
            "pattern_table_bytes": table, "read_by_dtype": {"f32": 4 * size}}


def test_the_tpu_count_records_the_table_a_gather_reads() -> None:
    text = gzip.decompress((HLO / "gather_rows_f32_262144x256.txt.gz").read_bytes()).decode()
    gathers = [k for k in kernel_inventory(parse_module(text))["kernels"]
               if k["pattern"] == "gather"]
    assert gathers, "the TPU module's gather fusion is not labelled a gather"
    # f32[262144, 256]: 256 MiB gathered from
    assert {k["pattern_table_bytes"] for k in gathers} == {262144 * 256 * 4}


def test_a_tpu_plans_gathers_of_rows_and_elements_from_fixed_tables_a_cpu_of_elements() -> None:
    for quick in (True, False):
        tpu = [k for k in pattern_plans.kernels(pattern_plans.pattern_plan("tpu", quick=quick))
               if k.pattern == "gather" and k.table]
        assert sorted(k.table for k in tpu if k.row == pattern_plans.GATHER_ROW) \
            == sorted(pattern_plans.GATHER_TABLES)
        assert sorted(k.table for k in tpu if k.row == 1) \
            == sorted(pattern_plans.GATHER_ELEMENT_TABLES)
        assert len({k.name for k in tpu}) == len(tpu)  # each its own roof
        cpu = pattern_plans.kernels(pattern_plans.pattern_plan("cpu", quick=quick))
        # a CPU gathers single elements from fixed tables (its rows' roof keeps a table as
        # large as its output), one size in quick mode, and scatters them into its own
        gathers = [k for k in cpu if k.table and k.pattern == "gather"]
        assert sorted(k.table for k in gathers) == sorted(pattern_plans.GATHER_ELEMENT_TABLES)
        assert {k.row for k in gathers} == {1} and all(k.roof for k in gathers)
        assert {len(k.sizes) for k in gathers} == {1 if quick else 2}
        assert sorted(k.table for k in cpu if k.table and k.pattern == "scatter") \
            == sorted(pattern_plans.SCATTER_TABLES)


def test_a_table_roof_entry_is_a_valid_ceilings_record() -> None:
    from roofline_report.observe.ceilings.patterns import _entry

    kernel = next(k for k in pattern_plans.kernels(pattern_plans.pattern_plan("tpu", quick=True))
                  if k.table == 1 << 14)
    record = RateCeiling.model_validate(_entry(kernel, {}, ["not run"]))
    assert (record.table, record.row, record.available) == (1 << 14, 1, False)
    assert record.name == "gather float32 (scattered elements of a table of 16 KiB)"


@pytest.mark.parametrize(("table", "roof"), [
    (384, ELEMENTS.name),  # a position bias of 32 buckets by 3 heads, row 3: nearest row 1
])
def test_a_gather_of_short_rows_takes_the_element_roof_of_its_table(table: int,
                                                                    roof: str) -> None:
    found = patterns.pattern_time(kernel_record(_gather(196608, 3, table)), "float32", GATHERS)
    assert found is not None and found.roof == roof
    assert found.seconds == pytest.approx(196608 / 2e9)


@pytest.mark.parametrize(("table", "roof", "rate"), [
    (2 << 20, SMALL.name, 80e9),  # a rotary table of 2 MiB: nearer 1 MiB than 16 (in log)
    (16 << 20, MIDDLE.name, 60e9),  # an embedding of 16 MiB
    # 1 GiB: farther from 16 MiB than the growing table at this size (4 x 2^26 = 256 MiB)
    (1 << 30, GROWING.name, 16e9),
])
def test_a_gather_of_rows_takes_the_roof_of_the_nearest_table(table: int, roof: str,
                                                               rate: float) -> None:
    size = 1 << 26
    found = patterns.pattern_time(kernel_record(_gather(size, 256, table)), "float32", GATHERS)
    assert found is not None and (found.roof, found.seconds) == (roof,
                                                                 pytest.approx(size / rate))


def test_without_its_table_a_gather_keeps_the_roof_of_a_growing_table() -> None:
    # a record written before tables were: the roof measured before them
    found = patterns.pattern_roof(kernel_record(_gather(1 << 20, 256, 0)), "float32", GATHERS)
    assert found is GROWING
    # and a set measured before them: the only roof of its row
    older = RoofSet("hand-made", Kind.MEASURED, (), (), (), (GROWING,))
    assert patterns.pattern_roof(kernel_record(_gather(1 << 20, 256, 1 << 20)), "float32",
                                 older) is GROWING


ON_CHIP_RATE = 3.7e12
TPU_ROOFS = RoofSet(
    "hand-made", Kind.MEASURED,
    (ComputeRoof("matmul float32", 1.9e14, "float32", Kind.MEASURED, "hand-made"),),
    (BandwidthRoof("HBM", 7e11, "HBM", Kind.MEASURED, "hand-made"),), (),
    (_rate("strided-reduction float32 (sum over axis 0 of [R, 1024])", "strided-reduction",
           1.8e11),
     _rate("on-chip float32 (a loop's carry scaled and shifted, 32 trips)", "on-chip",
           ON_CHIP_RATE),
     _rate("row reduction float32", "reduce", 1.87e11),
     GROWING),
    units_overlap=True)


def _reduction(**bytes_moved: int) -> dict[str, object]:
    return {"name": "fusion.4", "category": "reduction", "pattern": "strided-reduction",
            "pattern_size": 25_165_824, "flops": 50_233_344, "reduced_elements": 25_165_824,
            "read_by_dtype": {}, **bytes_moved}


def test_a_reduction_kept_on_chip_is_priced_by_its_on_chip_bytes_not_the_hbm_roofs() -> None:
    chip = 101_056_512 + 393_216
    kept = predict.predict_kernel(kernel_record(_reduction(on_chip_bytes_read=101_056_512,
                                                           on_chip_bytes_written=393_216)),
                                  "float32", TPU_ROOFS)
    assert kept is not None
    assert not [t for t in kept.terms if t.group == "pattern"]
    assert not [t for t in kept.terms if t.name == "reduction"]  # nor the row reduction's
    assert on_chip.ON_CHIP_REDUCTION in kept.notes
    assert kept.seconds == pytest.approx(chip / ON_CHIP_RATE, rel=0.05)
    assert any("stay on chip" in n and "strided-reduction" in n for n in kept.notes)
    # the same reduction reading its operand from HBM keeps the roof measured there
    streamed = predict.predict_kernel(kernel_record(_reduction(bytes_read=100_663_296,
                                                               bytes_written=393_216)),
                                      "float32", TPU_ROOFS)
    assert streamed is not None
    pattern = [t for t in streamed.terms if t.group == "pattern"]
    assert pattern and pattern[0].seconds == pytest.approx(25_165_824 / 1.8e11)
    assert [t.seconds for t in streamed.terms if t.name == "reduction"] == \
        [pytest.approx(25_165_824 / 1.87e11)]
    assert not any("stay on chip" in n for n in streamed.notes)


def test_a_gather_kept_on_chip_keeps_its_gather_roof() -> None:
    record = kernel_record({**_gather(1 << 20, 256, 1 << 20), "category": "data movement",
                            "on_chip_bytes_read": 1 << 22, "on_chip_bytes_written": 1 << 22})
    found = predict.predict_kernel(record, "float32", TPU_ROOFS)
    assert found is not None
    assert [t.roof for t in found.terms if t.group == "pattern"] == [GROWING.name]
    assert on_chip.reads_on_chip(record)
    assert not on_chip.reads_on_chip(record.model_copy(update={"bytes_read": 4}))
    # a reduction's small result written to HBM: its operands still stay on chip
    assert on_chip.reads_on_chip(record.model_copy(update={"bytes_written": 1024}))


def test_a_sequence_convolution_roof_counts_its_taps_along_one_dimension() -> None:
    import pydantic

    from roofline_report.analysis.roofs import _window_of
    from roofline_report.observe.ceilings.special_compute import CAUSAL_TAPS
    from roofline_report.results.schema_ceilings import ComputeCeiling

    def taps(**window: object) -> int:
        return _window_of(ComputeCeiling.model_validate(
            {"name": "grouped convolution float32", "op": "grouped-convolution",
             "dtype": "float32", "available": True, **window}))

    # the 1-D causal roof: 4 taps, not 4 x 4; an image's 3x3 and one over groups of 16
    assert taps(window=4, rank=1) == 4
    assert taps(window=3) == 9
    assert taps(window=3, group=16) == 144
    with pytest.raises(pydantic.ValidationError):  # not a count: refused by the record
        taps(window=3, rank=True)

    entry = ComputeCeiling.model_validate(
        {"name": f"grouped convolution float32 (1-D causal, {CAUSAL_TAPS} taps, depthwise)",
         "op": "grouped-convolution", "precision": "default", "dtype": "float32",
         "value": 3.2e11, "unit": "FLOP/s", "kind": "measured", "available": True,
         "reason": "", "window": CAUSAL_TAPS, "rank": 1})
    assert (entry.window, entry.rank) == (CAUSAL_TAPS, 1)


def test_a_growing_table_is_read_at_the_sizes_it_was_measured_at() -> None:
    # Measured at 2^26 elements only: its table was 256 MiB there, whatever the kernel's size.
    growing = _rate("gather float32 (scattered elements)", "gather", 7e7, row=1)
    growing = RateRoof(growing.name, "gather", "float32", 7e7, Kind.MEASURED, "hand-made",
                       by_size=((float(1 << 26), 7e7),), row=1)
    fixed = _rate("gather float32 (scattered elements of a table of 1 MiB)", "gather", 1.4e8,
                  row=1, table=1 << 20)
    roofs = RoofSet("hand-made", Kind.MEASURED, (), (), (), (growing, fixed))
    # a routing gather of 131,072 elements from a 512 KiB table: nearer 1 MiB than 256 MiB
    found = patterns.pattern_roof(kernel_record(_gather(131072, 1, 1 << 19)), "float32", roofs)
    assert found is fixed
    # a gather from a 256 MiB table takes the growing one
    found = patterns.pattern_roof(kernel_record(_gather(131072, 1, 1 << 28)), "float32", roofs)
    assert found is growing
