"""The prediction model on hand-computed cases: every term, the roofs it picks, its fallbacks."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest

from roofline_report.analysis import predict
from roofline_report.analysis.roofs import (
    BandwidthRoof,
    ComputeRoof,
    Floor,
    RateRoof,
    RoofSet,
)
from roofline_report.kinds import Kind
from roofline_report.results import schema
from tests.ceilings_records import typed_ceilings
from tests.kernel_records import kernel_record, kernel_records, traced

M = Kind.MEASURED
KiB, MiB = 1 << 10, 1 << 20
ROOFS = RoofSet(
    "this machine", M,
    compute=(ComputeRoof("matmul float32", 100e9, "float32", M, ""),
             ComputeRoof("matmul bfloat16", 50e9, "bfloat16", M, "")),
    bandwidth=(BandwidthRoof("L2 read-write", 100e9, "L2", M, "", None, 512 * KiB),
               BandwidthRoof("scale stream", 20e9, "DRAM", M, "", 512 * KiB, None)),
    floors=(Floor("dispatch", 10e-6, M, ""), Floor("launch", 1e-6, M, "")),
    rates=(RateRoof("multiply-add float32", "multiply-add", "float32", 10e9, M, ""),
           RateRoof("tanh float32", "tanh", "float32", 1e9, M, "")),
)


def term(p: predict.Prediction, name: str) -> float:
    """The summed seconds of a prediction's terms called ``name``."""
    return sum(t.seconds for t in p.terms if t.name == name)


def alu(p: predict.Prediction) -> float:
    return p.group_seconds("compute")


def memory(p: predict.Prediction) -> float:
    return max((t.seconds for t in p.terms if t.group == "memory"), default=0.0)


# The fields of the records a program's totals are read from that these tests leave out.
_COUNT = {"entry": None, "ops": {}, "ops_static": {}, "transcendentals": 0,
          "argument_bytes": 0, "result_bytes": 0, "bytes_by_dtype": {}, "loops": [],
          "unknown_trip_counts": 0, "custom_calls": [], "notes": []}
_COMPILED = {"entry": None, "fusions": {"count": 0, "by_kind": {}, "by_backend_kind": {}},
             "custom_calls": [], "collectives": [], "kernels_static": 0, "converts": 0,
             "opcodes": {}, "notes": []}
_LOOP = {"known_trip_count": None, "condition": None, "body": None, "op_name": None,
         "source_file": None, "source_line": None, "source_column": None}


def _record(**over: dict[str, Any]) -> schema.SweepPoint:
    """A program known by its totals (a sweep point's records), ``over`` replacing any."""
    parts: dict[str, dict[str, Any]] = {
        "hlo_count": {"flops": 2_000_000 + 500_000, "flops_by_op": {
            "stablehlo.dot_general": 2_000_000, "stablehlo.add": 500_000},
            "transcendentals_by_op": {"stablehlo.tanh": 100_000}, "minimum_bytes": 200 * KiB},
        "compiled": {"kernels": 3, "while_loops": []},
        "xla": {"available": True, "raw": {"bytes accessed": 300.0 * KiB}, "values": {}},
        "analytic": {"flops": 2_000_000, "minimum_bytes": 200 * KiB},
    }
    parts.update(over)
    count, compiled = parts["hlo_count"], parts["compiled"]
    if count.get("available", True):
        count = {**_COUNT, **count}
    compiled = {**_COMPILED, **compiled,
                "while_loops": [{**_LOOP, **x} for x in compiled["while_loops"]]}
    return schema.SweepPoint.model_validate(
        {**parts, "dims": {}, "hlo_count": count, "compiled": compiled})


def test_every_term_by_hand() -> None:
    f = predict.facts(_record(), "float32")
    assert f is not None
    assert (f.dot_flops, f.other_flops, f.kernels) == (2e6, 5e5, 3)
    assert f.bytes == 300 * KiB and f.bytes_source == "XLA's bytes accessed"
    p = predict.predict_facts(f, ROOFS)
    assert p is not None
    # compute: 2e6 / 100e9 + 5e5 / 10e9 + 1e5 / 1e9 = 20 us + 50 us + 100 us = 170 us
    assert alu(p) == pytest.approx(170e-6)
    assert (term(p, "matmul"), term(p, "elementwise"), term(p, "transcendental")) == (
        pytest.approx(20e-6), pytest.approx(50e-6), pytest.approx(100e-6))
    # memory: 300 KiB in L2 (under 512 KiB) at 100 GB/s
    assert memory(p) == pytest.approx(300 * KiB / 100e9)
    assert p.level == "L2"
    # overhead: a launch for each of the 3 kernels at 1 us, and the 10 us dispatch
    assert p.group_seconds("overhead") == pytest.approx(13e-6)
    assert p.seconds == pytest.approx(170e-6 + 13e-6)
    # The binding: the largest term of the group that sets the time (compute: tanh).
    assert p.binding.group == "compute" and p.binding.name == "transcendental"
    assert p.binding.label == "compute: tanh" and p.notes == ()
    assert p.kind is Kind.PREDICTED and set(p.roof_kinds) == {M}


def test_square_roots_are_priced_at_their_own_rates() -> None:
    import dataclasses

    record = _record(hlo_count={"flops": 0, "flops_by_op": {}, "minimum_bytes": KiB,
                                "transcendentals_by_op": {"stablehlo.sqrt": 1_000_000,
                                                          "stablehlo.rsqrt": 1_000_000}})
    f = predict.facts(record, "float32")
    assert f is not None
    rates = (RateRoof("exp float32", "exp", "float32", 4e9, M, ""),
             RateRoof("sqrt float32", "sqrt", "float32", 5e9, M, ""),
             RateRoof("rsqrt float32", "rsqrt", "float32", 1e9, M, ""))
    p = predict.predict_facts(f, dataclasses.replace(ROOFS, rates=rates))
    assert p is not None
    by_op = {t.detail: t.seconds for t in p.terms if t.name == "transcendental"}
    assert by_op == {"sqrt": pytest.approx(1e6 / 5e9), "rsqrt": pytest.approx(1e6 / 1e9)}
    # Ceilings measured before the square-root rates: exp's rate, and the prediction says so.
    p = predict.predict_facts(f, dataclasses.replace(ROOFS, rates=rates[:1]))
    assert p is not None
    assert term(p, "transcendental") == pytest.approx(2e6 / 4e9)
    assert "no square-root rate measured: rsqrt priced at exp float32's rate" in p.notes


def test_sines_and_cosines_are_priced_at_the_sine_rate() -> None:
    import dataclasses

    record = _record(hlo_count={"flops": 0, "flops_by_op": {}, "minimum_bytes": KiB,
                                "transcendentals_by_op": {"stablehlo.sine": 1_000_000,
                                                          "stablehlo.cosine": 500_000,
                                                          "stablehlo.exponential": 1_000_000}})
    f = predict.facts(record, "float32")
    assert f is not None
    rates = (RateRoof("exp float32", "exp", "float32", 4e9, M, ""),
             RateRoof("sine float32", "sine", "float32", 0.8e9, M, ""))
    p = predict.predict_facts(f, dataclasses.replace(ROOFS, rates=rates))
    assert p is not None
    by_op = {t.detail: (t.seconds, t.roof) for t in p.terms if t.name == "transcendental"}
    assert by_op == {"sine": (pytest.approx(1e6 / 0.8e9), "sine float32"),
                     "cosine": (pytest.approx(5e5 / 0.8e9), "sine float32"),
                     "exponential": (pytest.approx(1e6 / 4e9), "exp float32")}
    # Ceilings measured before the sine rate: exp's rate, and the prediction says so.
    p = predict.predict_facts(f, dataclasses.replace(ROOFS, rates=rates[:1]))
    assert p is not None
    assert term(p, "transcendental") == pytest.approx(2.5e6 / 4e9)
    assert "no sine rate measured: sine priced at exp float32's rate" in p.notes
    assert "no sine rate measured: cosine priced at exp float32's rate" in p.notes


def test_functions_xla_expands_are_priced_at_their_own_rates() -> None:
    import dataclasses

    from roofline_report.analysis import headroom

    counts = {"stablehlo.log_plus_one": 1_000_000, "stablehlo.exponential_minus_one": 400_000,
              "stablehlo.power": 200_000, "stablehlo.tan": 100_000,
              "stablehlo.atan2": 50_000, "stablehlo.exponential": 1_000_000}
    record = _record(hlo_count={"flops": 0, "flops_by_op": {}, "minimum_bytes": KiB,
                                "transcendentals_by_op": counts})
    f = predict.facts(record, "float32")
    assert f is not None
    proxies = (RateRoof("exp float32", "exp", "float32", 4e9, M, ""),
               RateRoof("log float32", "log", "float32", 3e9, M, ""),
               RateRoof("tanh float32", "tanh", "float32", 5e9, M, ""))
    own = tuple(RateRoof(f"{op} float32", op, "float32", value, M, "")
                for op, value in (("log1p", 1.5e9), ("expm1", 1.6e9), ("power", 0.3e9),
                                  ("tan", 0.4e9), ("atan2", 0.2e9)))
    p = predict.predict_facts(f, dataclasses.replace(ROOFS, rates=proxies + own))
    assert p is not None
    by_op = {t.detail: (t.seconds, t.roof) for t in p.terms if t.name == "transcendental"}
    assert by_op == {"log_plus_one": (pytest.approx(1e6 / 1.5e9), "log1p float32"),
                     "exponential_minus_one": (pytest.approx(4e5 / 1.6e9), "expm1 float32"),
                     "power": (pytest.approx(2e5 / 0.3e9), "power float32"),
                     "tan": (pytest.approx(1e5 / 0.4e9), "tan float32"),
                     "atan2": (pytest.approx(5e4 / 0.2e9), "atan2 float32"),
                     "exponential": (pytest.approx(1e6 / 4e9), "exp float32")}
    assert not any("rate measured" in n for n in p.notes)
    # The hardware roof prices them at the same rates.
    roofs = dataclasses.replace(ROOFS, rates=proxies + own)
    roof = headroom.facts_roof(f, roofs)
    assert roof is not None
    parts = {part.name: part.seconds for part in roof.parts}
    assert parts["log1p float32"] == pytest.approx(1e6 / 1.5e9)
    assert parts["atan2 float32"] == pytest.approx(5e4 / 0.2e9)
    # Ceilings measured before these rates: the nearest function's stands in, each named in a
    # note, and the kernel is predicted faster than with its own rates.
    older = predict.predict_facts(f, dataclasses.replace(ROOFS, rates=proxies))
    assert older is not None
    by_op = {t.detail: t.roof for t in older.terms if t.name == "transcendental"}
    assert by_op == {"log_plus_one": "log float32", "exponential_minus_one": "exp float32",
                     "power": "log float32", "tan": "tanh float32", "atan2": "tanh float32",
                     "exponential": "exp float32"}
    assert "no log1p rate measured: log_plus_one priced at log float32's rate" in older.notes
    assert "no atan2 rate measured: atan2 priced at tanh float32's rate" in older.notes
    assert term(older, "transcendental") < term(p, "transcendental")


def test_loops_and_missing_rates_fall_back() -> None:
    # A loop: XLA's bytes (a body costed once) are not used; the minimum traffic is.
    f = predict.facts(_record(compiled={"kernels": 1, "while_loops": [{"name": "while"}]}),
                      "bfloat16")
    assert f is not None and f.bytes_source == "the minimum traffic" and f.bytes == 200 * KiB
    p = predict.predict_facts(f, ROOFS)
    assert p is not None
    # bfloat16 dots on the bfloat16 roof; float32 rates stand in for bfloat16's.
    assert alu(p) == pytest.approx(2e6 / 50e9 + 5e5 / 10e9 + 1e5 / 1e9)
    bare = RoofSet("bare", M, ROOFS.compute, ROOFS.bandwidth)
    q = predict.predict_facts(f, bare)
    assert q is not None
    # Neither the elementwise flops nor tanh charged, each said so: no stand-in rate (a
    # matmul roof would price a vector unit's flops far too fast).
    assert alu(q) == pytest.approx(2e6 / 50e9)
    assert any("tanh" in n for n in q.notes)
    assert "no multiply-add rate: its 500,000 elementwise flops not charged" in q.notes
    assert q.unpriced == ("elementwise flops (no multiply-add rate)", "tanh (no tanh rate)")
    assert p.unpriced == ()
    # A program of such kernels says it once, not once a kernel with each one's count.
    kernel = predict.predict_kernel(kernel_record({"flops": 1e5, "bytes_read": 4096,
                                                   "bytes_written": 4096,
                                                   "flops_by_op": {"multiply": 1e5}}),
                                    "float32", bare)
    assert kernel is not None and kernel.unpriced == ("elementwise flops (no multiply-add rate)",)
    program = predict.predict_program([kernel, replace(kernel, notes=(
        "no multiply-add rate: its 7 elementwise flops not charged",))], bare)
    assert program is not None and program.unpriced == kernel.unpriced
    assert program.notes == ("left out for want of a rate: elementwise flops (no multiply-add "
                             "rate)",)
    assert q.group_seconds("overhead") == 0.0


def test_big_traffic_goes_to_main_memory_and_no_count_no_prediction() -> None:
    f = predict.facts(_record(xla={"available": True, "raw": {"bytes accessed": 64.0 * MiB},
                                   "values": {}}), "float32")
    assert f is not None
    p = predict.predict_facts(f, ROOFS)
    assert p is not None and p.level == "DRAM" and p.binding.group == "memory"
    assert predict.facts(_record(hlo_count={"available": False, "reason": "x"}), "float32") \
        is None


def test_sweeps_without_a_hand_model_are_placed_by_their_kernels() -> None:
    import copy
    from pathlib import Path

    from roofline_report.analysis.analyse import analyse
    from roofline_report.results import io as results

    data = results.load(Path(__file__).parent / "fixtures" / "cpu_results.json")
    doc = copy.deepcopy(data)
    sweep = doc["sweeps"][0]
    for point in sweep["points"]:
        point["analytic"] = {"available": False, "reason": "no analytic model"}
    placed = next(sw for sw in analyse(doc).sweeps if sw.name == sweep["name"])
    assert len(placed.points) == len(sweep["points"])
    for point, raw in zip(placed.points, sweep["points"], strict=True):
        assert point.flops == raw["kernels"]["flops"]
        assert point.bytes == raw["kernels"]["bytes_read"] + raw["kernels"]["bytes_written"]


@pytest.mark.slow
def test_a_users_program_shows_its_prediction() -> None:
    import copy
    from pathlib import Path

    from roofline_report.analysis.analyse import analyse
    from roofline_report.report import views as render
    from roofline_report.report.format import miss_text
    from roofline_report.results import io as results

    data = results.load(Path(__file__).parent / "fixtures" / "cpu_results.json")
    doc = copy.deepcopy(data)
    w = next(x for x in doc["workloads"] if x["name"] == "matmul")
    w["user"] = True
    vm = render.view_model(doc)
    shown = next(x for x in vm.programs if x.title == w["title"])
    pr = shown.prediction
    program = analyse(doc).program("matmul")
    assert program is not None and program.prediction is not None
    assert pr is not None and pr.binding == program.prediction.binding.label
    assert pr.miss == miss_text(program.miss) and pr.predicted.kind == "predicted"


def test_convolution_flops_go_to_the_convolution_roof() -> None:
    conv_roof = ComputeRoof("convolution float32", 25e9, "float32", M, "", op="convolution")
    roofs = RoofSet("this machine", M, (*ROOFS.compute, conv_roof), ROOFS.bandwidth,
                    ROOFS.floors, ROOFS.rates)
    kernel = {"flops": 3_000_000, "flops_by_op": {"stablehlo.convolution": 2_000_000,
                                                   "stablehlo.dot_general": 1_000_000},
              "bytes_read": 0, "bytes_written": 0, "trips": 1}
    p = predict.predict_kernel(kernel_record(kernel), "float32", roofs)
    assert p is not None
    # 1e6 matmul flops at 100 GFLOP/s and 2e6 convolution flops at 25 GFLOP/s: 10 + 80 us.
    assert alu(p) == pytest.approx(1e6 / 100e9 + 2e6 / 25e9)
    assert p.binding.name == "convolution"
    assert "convolution float32" in p.roofs
    # The convolution roof is never the compute roof a roofline draws for the dtype.
    assert roofs.compute_for("float32") is not None
    assert roofs.compute_for("float32").name == "matmul float32"  # type: ignore[union-attr]
    # Without a convolution roof, convolutions run at the matmul rate.
    q = predict.predict_kernel(kernel_record(kernel), "float32", ROOFS)
    assert q is not None and alu(q) == pytest.approx(3e6 / 100e9)
    # A convolution whose windows tile its input (a patch embedding) is still a convolution
    # in the HLO, run by the convolution library: its flops stay at the convolution roof (a
    # ViT's 8x8 patches of 3 colours ran at half the matmul rate of their flops).
    patches = predict.predict_kernel(kernel_record({**kernel, "patch_conv_flops": 2_000_000}),
                                     "float32", roofs)
    assert patches is not None and alu(patches) == pytest.approx(alu(p))
    assert patches.binding.name == "convolution"


def test_a_batch_of_small_products_is_read_at_one_products_flops() -> None:
    from roofline_report.analysis.roofs import measured

    # 64 products of side 16 in one call (0.52 MFLOP), 20 µs a call of which 10 µs is the
    # enqueued dispatch; one 128-sided product alone, 50 µs a call.
    call, alone = 2 * 64 * 16**3, 2 * 128**3
    ceilings = {"available": True, "backend": "cpu", "bandwidth": [],
                "dispatch": {"available": True, "value": 12e-6, "enqueued": 10e-6},
                "compute": [{"name": "matmul float32", "available": True, "value": 200e9,
                             "dtype": "float32", "op": "matmul", "by_size": [
                                 {"n": 16, "flops": call, "value": call / 20e-6, "batch": 64},
                                 {"n": 128, "flops": alone, "value": alone / 50e-6}]}]}
    found = measured(typed_ceilings(ceilings))
    assert found is not None
    (roof,) = found.compute
    assert roof.by_flops == (pytest.approx((2 * 16**3, call / 10e-6)),
                             pytest.approx((alone, alone / 40e-6)))
    # A kernel of 64 such products (its operands and result: 3 x 16² float32 each) runs at the
    # batch's rate, 10 µs, not at the 128-sided product's (2.6 GFLOP/s faster per flop).
    roofs = RoofSet("this machine", M, found.compute, ROOFS.bandwidth, ROOFS.floors,
                    ROOFS.rates)
    kernel = {"flops": call, "flops_by_op": {"stablehlo.dot_general": call},
              "bytes_read": 64 * 2 * 16**2 * 4, "bytes_written": 64 * 16**2 * 4, "trips": 1,
              "matmul_products": 64, "category": "matmul"}
    p = predict.predict_kernel(kernel_record(kernel), "float32", roofs)
    assert p is not None and term(p, "matmul") == pytest.approx(10e-6)


def test_a_dtype_without_a_roof_takes_a_float_roof_never_an_integer_one() -> None:
    from roofline_report import presets
    from roofline_report.analysis import roofs as roofs_mod

    tpu = roofs_mod.spec_sheet(presets.get_preset("TPU v5e"))
    roof = tpu.compute_for("float32")
    assert roof is not None and roof.dtype == "bfloat16"


def test_a_reduction_kernel_runs_at_the_row_reduction_rate_of_its_size() -> None:
    reduce = RateRoof("row reduction float32", "reduce", "float32", 40e9, M, "",
                      by_size=((1e4, 1e9), (1e6, 10e9), (1e8, 40e9)))
    roofs = RoofSet("this machine", M, ROOFS.compute, ROOFS.bandwidth, ROOFS.floors,
                    (*ROOFS.rates, reduce))
    # 1e5 float32 elements read: between 1e4 (1 G/s) and 1e6 (10 G/s), halfway in log size.
    assert reduce.rate_at(1e5) == pytest.approx(5.5e9)
    assert reduce.rate_at(1e3) == 1e9 and reduce.rate_at(1e9) == 40e9
    kernel = {"flops": 100_000, "flops_by_op": {"stablehlo.add": 100_000},
              "bytes_read": 400_000, "bytes_written": 4_000, "read_by_dtype": {"f32": 400_000},
              "category": "reduction", "trips": 1}
    p = predict.predict_kernel(kernel_record(kernel), "float32", roofs)
    assert p is not None
    # The level's bandwidth would give 404 kB / 100 GB/s = 4.04 us; the reduction rate
    # 1e5 / 5.5e9 = 18.2 us binds.
    assert memory(p) == pytest.approx(1e5 / 5.5e9)
    assert "row reduction float32" in p.roofs and p.binding.name == "reduction"
    # Not a reduction: the level's bandwidth alone.
    q = predict.predict_kernel(kernel_record({**kernel, "category": "elementwise"}),
                               "float32", roofs)
    assert q is not None and memory(q) == pytest.approx(404_000 / 100e9)


def test_a_fusion_reducing_its_input_twice_pays_for_both_reductions() -> None:
    reduce = RateRoof("row reduction float32", "reduce", "float32", 1e9, M, "")
    roofs = RoofSet("this machine", M, ROOFS.compute, ROOFS.bandwidth, ROOFS.floors,
                    (*ROOFS.rates, reduce))
    once = {"flops": 100_000, "flops_by_op": {"stablehlo.reduce": 100_000},
            "bytes_read": 400_000, "bytes_written": 400_000, "read_by_dtype": {"f32": 400_000},
            "category": "reduction", "trips": 1, "reduced_elements": 100_000}
    twice = {**once, "reduced_elements": 200_000}  # a layer norm's mean and variance
    p, q = (predict.predict_kernel(kernel_record(k), "float32", roofs) for k in (once, twice))
    assert p is not None and q is not None
    assert memory(p) == pytest.approx(1e5 / 1e9) and memory(q) == pytest.approx(2e5 / 1e9)
    # Never fewer than the elements it reads; a document without the field reads them once.
    fewer = {**once, "reduced_elements": 10}
    older = {k: v for k, v in once.items() if k != "reduced_elements"}
    for k in (fewer, older):
        r = predict.predict_kernel(kernel_record(k), "float32", roofs)
        assert r is not None and memory(r) == pytest.approx(1e5 / 1e9)


def test_a_reductions_own_adds_are_the_reduction_terms_work() -> None:
    """A library reduction adds as it streams: its reduce op's adds are not priced again as
    elementwise arithmetic (a bfloat16 row maximum's at the slow bfloat16 multiply-add rate
    read 123 µs for a kernel of 40), while the rest of its arithmetic is."""
    reduce = RateRoof("row reduction float32", "reduce", "float32", 1e9, M, "")
    slow = RateRoof("multiply-add bfloat16", "multiply-add", "bfloat16", 1e8, M, "")
    roofs = RoofSet("this machine", M, ROOFS.compute, ROOFS.bandwidth, ROOFS.floors,
                    (*ROOFS.rates, slow, reduce))
    kernel = {"flops": 100_000, "flops_by_op": {"stablehlo.reduce": 100_000},
              "bytes_read": 200_000, "bytes_written": 200, "read_by_dtype": {"bf16": 200_000},
              "category": "reduction", "trips": 1, "reduced_elements": 100_000}
    p = predict.predict_kernel(kernel_record(kernel), "bfloat16", roofs)
    assert p is not None and p.binding.name == "reduction"
    assert term(p, "elementwise") == 0.0 and memory(p) == pytest.approx(1e5 / 1e9)
    # A multiply beside the reduce stays arithmetic.
    scaled = {**kernel, "flops": 200_000,
              "flops_by_op": {"stablehlo.reduce": 100_000, "stablehlo.multiply": 100_000}}
    q = predict.predict_kernel(kernel_record(scaled), "bfloat16", roofs)
    assert q is not None and term(q, "elementwise") == pytest.approx(1e5 / 1e8)
    # No reduction roof: the adds are the kernel's arithmetic, as before.
    bare = RoofSet("this machine", M, ROOFS.compute, ROOFS.bandwidth, ROOFS.floors,
                   (*ROOFS.rates, slow))
    r = predict.predict_kernel(kernel_record(kernel), "bfloat16", bare)
    assert r is not None and term(r, "elementwise") == pytest.approx(1e5 / 1e8)


def test_a_bfloat16_reduction_widens_its_elements_at_its_own_roof() -> None:
    """A bfloat16 row sum converts each element as it loads it: where the bfloat16 row
    reduction was measured, its conversions are that roof's work (a [1024, 1024] sum took 23 to
    39 µs where its conversions alone, at the conversion rate, take 35 to 40); where only
    float32's was, they are charged at the conversion rate as before."""
    convert = RateRoof("convert float32<->bfloat16", "convert", "float32", 2e9, M, "")
    f32 = RateRoof("row reduction float32", "reduce", "float32", 1e9, M, "")
    bf16 = RateRoof("row reduction bfloat16", "reduce", "bfloat16", 4e9, M, "")
    kernel = {"flops": 2_000_000, "flops_by_op": {"stablehlo.convert": 1_000_000,
                                                   "stablehlo.reduce": 1_000_000},
              "bytes_read": 2_000_000, "bytes_written": 4_000, "read_by_dtype": {"bf16": 2_000_000},
              "written_by_dtype": {"f32": 4_000}, "category": "reduction", "trips": 1,
              "reduced_elements": 1_000_000}

    def predicted(*rates: RateRoof) -> predict.Prediction:
        roofs = RoofSet("this machine", M, ROOFS.compute, ROOFS.bandwidth, ROOFS.floors,
                        (*ROOFS.rates, convert, *rates))
        p = predict.predict_kernel(kernel_record(kernel), "bfloat16", roofs)
        assert p is not None
        return p

    own = predicted(f32, bf16)
    assert term(own, "conversion") == 0.0 and own.binding.roof == "row reduction bfloat16"
    assert own.seconds == pytest.approx(1e6 / 4e9 + 1e-6)  # and one launch
    assert any("widens each element as it loads it" in n for n in own.notes)
    fallback = predicted(f32)
    assert term(fallback, "conversion") == pytest.approx(1e6 / 2e9)
    assert fallback.binding.roof == "row reduction float32"
    assert not any("widens" in n for n in fallback.notes)
    # More conversions than elements reduced (it narrows its output too): the rest charged.
    kernel["flops_by_op"] = {"stablehlo.convert": 1_500_000, "stablehlo.reduce": 1_000_000}
    kernel["flops"] = 2_500_000
    assert term(predicted(f32, bf16), "conversion") == pytest.approx(5e5 / 2e9)


def test_the_hardware_roof_leaves_a_reductions_own_work_to_it_as_the_prediction_does() -> None:
    """The bfloat16 row sum's conversions and adds are its reduction's work in the prediction;
    charged at the conversion and multiply-add peaks in its hardware roof as well, it read
    "149% of roof" while "as predicted". Both now take that work from one place."""
    from roofline_report.analysis import headroom

    convert = RateRoof("convert float32<->bfloat16", "convert", "float32", 2e9, M, "")
    reduce = RateRoof("row reduction bfloat16", "reduce", "bfloat16", 4e9, M, "")
    roofs = RoofSet("this machine", M, ROOFS.compute, ROOFS.bandwidth, ROOFS.floors,
                    (*ROOFS.rates, convert, reduce))
    kernel = kernel_record({
        "flops": 2_000_000, "flops_by_op": {"stablehlo.convert": 1_000_000,
                                            "stablehlo.reduce": 1_000_000},
        "bytes_read": 2_000_000, "bytes_written": 4_000, "read_by_dtype": {"bf16": 2_000_000},
        "written_by_dtype": {"f32": 4_000}, "category": "reduction", "trips": 1,
        "reduced_elements": 1_000_000})
    f = predict.kernel_facts(kernel, "bfloat16")
    assert predict.reduction_work(f, roofs) == (reduce, 1_000_000, 1_000_000)
    roof = headroom.kernel_roof(kernel, "bfloat16", roofs)
    assert roof is not None and roof.group_seconds("compute") == 0.0
    assert roof.seconds == pytest.approx(2_004_000 / 20e9)  # its bytes at main memory's roof
    # Without the bfloat16 roof the conversions are charged in both, the adds in neither.
    bare = RoofSet("this machine", M, ROOFS.compute, ROOFS.bandwidth, ROOFS.floors,
                   (*ROOFS.rates, convert,
                    RateRoof("row reduction float32", "reduce", "float32", 1e9, M, "")))
    plain = headroom.kernel_roof(kernel, "bfloat16", bare)
    p = predict.predict_kernel(kernel, "bfloat16", bare)
    assert plain is not None and p is not None
    assert plain.group_seconds("compute") == pytest.approx(1e6 / 2e9) == term(p, "conversion")


def test_a_rate_measured_by_size_loses_the_dispatch_floor() -> None:
    from roofline_report.analysis import roofs as roofs_mod

    ceilings = {"available": True, "backend": "cpu", "compute": [], "bandwidth": [],
                "dispatch": {"available": True, "value": 8e-6, "enqueued": 5e-6},
                "rates": [{"name": "row reduction float32", "op": "reduce", "dtype": "float32",
                           "available": True, "value": 1e9, "elements": 10**6, "reps": 1,
                           "ops_per_call": 10**6, "by_size": [
                               {"elements": 1000, "bytes": 4000, "seconds": 6e-6, "value": 1},
                               {"elements": 10**6, "bytes": 4 * 10**6, "seconds": 105e-6,
                                "value": 1}]}]}
    rate = roofs_mod.measured(typed_ceilings(ceilings), []).rate_for("reduce", "float32")  # type: ignore[union-attr]
    # 6 us is under 1.5 dispatches (7.5 us): left out; 1e6 elements in 105 - 5 = 100 us.
    assert rate is not None and rate.by_size == ((1e6, 1e10),) and rate.value == 1e10


def test_a_kernel_computes_in_the_dtype_of_its_operands_not_the_programs() -> None:
    reduction = {"flops": 1_000_000, "flops_by_op": {"stablehlo.add": 1_000_000},
                 "bytes_read": 4_000_000, "bytes_written": 4_000,
                 "read_by_dtype": {"f32": 4_000_000}, "written_by_dtype": {"f32": 4_000},
                 "category": "elementwise", "trips": 1}
    # A bfloat16 program's kernel reading float32 (converted before it) runs float32 adds.
    assert predict.kernel_dtype(kernel_record(reduction), "bfloat16") == "float32"
    assert predict.kernel_facts(kernel_record(reduction), "bfloat16").dtype == "float32"
    mixed = {**reduction, "read_by_dtype": {"bf16": 3_000_000, "f32": 1_000}}
    assert predict.kernel_dtype(kernel_record(mixed), "float32") == "bfloat16"
    assert predict.kernel_dtype(kernel_record({"read_by_dtype": {"s32": 8}}),
                                "bfloat16") == "bfloat16"


def test_a_kernel_writing_in_place_is_not_charged_the_fresh_output_roof() -> None:
    fresh = BandwidthRoof("DRAM write-new", 5e9, "DRAM", M, "", 512 * KiB, None)
    roofs = RoofSet("this machine", M, ROOFS.compute, (*ROOFS.bandwidth, fresh), ROOFS.floors,
                    ROOFS.rates)
    kernel = {"flops": 1_000, "flops_by_op": {"stablehlo.multiply": 1_000},
              "bytes_read": 1 * MiB, "bytes_written": 1 * MiB, "read_by_dtype": {"f32": MiB},
              "category": "elementwise", "trips": 1}
    new = predict.predict_kernel(kernel_record(kernel), "float32", roofs)
    donated = predict.predict_kernel(kernel_record({**kernel, "in_place": True}), "float32", roofs)
    assert new is not None and donated is not None
    # A fresh 1 MiB output: the write-new roof (it holds for 2 x 1 MiB); in place: the stream.
    assert memory(new) == pytest.approx(2 * MiB / 5e9)
    assert memory(donated) == pytest.approx(2 * MiB / 20e9)


def test_a_program_meets_the_sweeps_roof_not_the_huge_page_streams() -> None:
    stream = BandwidthRoof("scale stream", 40e9, "DRAM", M, "", 512 * KiB, None)
    roofs = RoofSet("this machine", M, ROOFS.compute, (*ROOFS.bandwidth, stream))
    # The roofline's ceiling is the level's fastest; a program is predicted on the sweep's.
    assert roofs.bandwidth_for(8 * MiB).name == "scale stream"  # type: ignore[union-attr]
    assert roofs.bandwidth_for(8 * MiB, program=True).name == "scale stream"  # type: ignore[union-attr]
    swept = BandwidthRoof("DRAM read-write", 25e9, "DRAM", M, "", 512 * KiB, None)
    both = RoofSet("this machine", M, ROOFS.compute, (*ROOFS.bandwidth, stream, swept))
    assert both.bandwidth_for(8 * MiB).name == "scale stream"  # type: ignore[union-attr]
    assert both.bandwidth_for(8 * MiB, program=True).name == "DRAM read-write"  # type: ignore[union-attr]


@pytest.mark.slow
def test_every_sweep_point_off_by_more_than_half_says_why() -> None:
    from pathlib import Path

    from roofline_report.analysis.analyse import analyse
    from roofline_report.report import views as render
    from roofline_report.results import io as results

    data = results.load(Path(__file__).parent / "fixtures" / "cpu_results.json")
    points = [pt for sw in analyse(data).sweeps for pt in sw.points]
    assert points
    for pt in points:
        assert pt.miss is not None
        if pt.miss.error > 0.5:
            assert pt.why, pt
    md = render.render(data).markdown
    assert "Every point: predicted against measured, and why they differ" in md


def test_a_program_is_the_sum_of_its_kernels_and_its_binding_its_largest_term() -> None:
    launch_bound = {"flops": 10, "flops_by_op": {"stablehlo.add": 10}, "bytes_read": 40,
                    "bytes_written": 40, "trips": 3, "category": "elementwise"}
    matmul = {"flops": 2_000_000, "flops_by_op": {"stablehlo.dot_general": 2_000_000},
              "bytes_read": 1000, "bytes_written": 1000, "trips": 1, "category": "matmul"}
    a = predict.predict_kernel(kernel_record(launch_bound), "float32", ROOFS)
    b = predict.predict_kernel(kernel_record(matmul), "float32", ROOFS)
    assert a is not None and b is not None
    # A tiny kernel: 3 launches of its roofline time after the 1 us launch floor, which
    # binds (its 80 bytes stream in far less).
    work = max(a.group_seconds("compute"), max(t.seconds for t in a.terms if t.group == "memory"))
    assert a.binding.name == "launch" and 0 < work < 1e-7
    assert a.seconds == pytest.approx(3e-6 + work)
    program = predict.predict_program([a, b], ROOFS)
    assert program is not None
    # Σ kernels + the 10 us dispatch; each kernel's time charged to its binding term.
    assert program.seconds == pytest.approx(a.seconds + b.seconds + 10e-6)
    assert sum(t.seconds for t in program.terms) == pytest.approx(program.seconds)
    assert program.binding == max(program.terms, key=lambda t: t.seconds)
    assert program.binding.name == "matmul"
    rate = program.roof_rate
    assert rate is not None and rate[1] == "FLOP/s"
    assert rate[0] == pytest.approx((30 + 2_000_000) / program.seconds)


def test_a_batched_dot_runs_at_the_rate_of_one_of_its_products() -> None:
    sized = ComputeRoof("matmul float32", 100e9, "float32", M, "",
                        by_flops=((1e4, 1e9), (1e6, 10e9), (1e8, 100e9)))
    roofs = RoofSet("this machine", M, (sized,), ROOFS.bandwidth, ROOFS.floors, ROOFS.rates)
    kernel = {"flops": 100_000_000, "flops_by_op": {"stablehlo.dot_general": 100_000_000},
              "bytes_read": 0, "bytes_written": 0, "trips": 1}
    whole = predict.predict_kernel(kernel_record(kernel), "float32", roofs)
    # 100 products of 1e6 flops each run at the 1e6-flop product's 10 GFLOP/s, not at the
    # 100 GFLOP/s of one 1e8-flop product.
    batched = predict.predict_kernel(kernel_record({**kernel, "matmul_products": 100}),
                                     "float32", roofs)
    assert whole is not None and batched is not None
    assert alu(whole) == pytest.approx(1e8 / 100e9)
    assert alu(batched) == pytest.approx(1e8 / 10e9)


def test_a_product_runs_at_the_rate_of_its_own_flops_whatever_its_shape() -> None:
    def kernel(m: int, k: int, n: int, dtype: str = "float32", extra: int = 0) -> predict.Facts:
        size = {"float32": 4, "bfloat16": 2}[dtype]
        return predict.kernel_facts(kernel_record({
            "flops": 2 * m * k * n, "flops_by_op": {"stablehlo.dot_general": 2 * m * k * n},
            "bytes_read": size * (m * k + k * n) + extra, "bytes_written": size * m * n,
            "category": "matmul"}), dtype)

    assert predict.product_size(kernel(512, 512, 512)) == pytest.approx(2 * 512 ** 3)
    # A tall, skinny product (a graph network's edges through a layer) is read at its flops,
    # as is one whose epilogue reads more bytes, and a bfloat16 one.
    tall = kernel(8192, 256, 64)
    assert predict.product_size(tall) == pytest.approx(2 * 8192 * 256 * 64)
    assert predict.product_size(kernel(8192, 256, 64, extra=1 << 20)) == \
        predict.product_size(tall)
    assert predict.product_size(kernel(512, 128, 512, "bfloat16")) == 2 * 512 * 128 * 512
    program = predict.facts(_record(), "float32")
    assert program is not None and predict.product_size(program) == 2_000_000  # totals: flops
    # On the by-size curve it runs at the rate of its flops (2^28: the 512-cubed rate), not at
    # the lower rate of a square product as small as its reuse (a 153-cubed one).
    roof = ComputeRoof("matmul float32", 200e9, "float32", M, "",
                       by_flops=((2 * 153.0 ** 3, 100e9), (2 * 512.0 ** 3, 200e9)))
    roofs = RoofSet("this machine", M, compute=(roof,), bandwidth=ROOFS.bandwidth,
                    floors=ROOFS.floors, rates=ROOFS.rates)
    p = predict.predict_facts(tall, roofs)
    assert p is not None
    assert term(p, "matmul") == pytest.approx(2 * 8192 * 256 * 64 / 200e9)
    # Batched: each product's flops (a batch of 8 [64, 64] @ [64, 64] products).
    batched = predict.kernel_facts(kernel_record({
        "flops": 8 * 2 * 64**3, "flops_by_op": {"stablehlo.dot_general": 8 * 2 * 64**3},
        "bytes_read": 8 * 2 * 4 * 64**2, "bytes_written": 8 * 4 * 64**2, "category": "matmul",
        "matmul_products": 8}), "float32")
    assert predict.product_size(batched) == 2 * 64**3


def test_a_kernel_split_across_workers_pays_the_blocked_split_launch_once_per_call() -> None:
    split_floor = Floor("split launch", 20e-6, M, "")
    roofs = RoofSet("this machine", M, ROOFS.compute, ROOFS.bandwidth,
                    (*ROOFS.floors, split_floor), ROOFS.rates)
    kernel = {"flops": 1_000_000, "flops_by_op": {"stablehlo.add": 1_000_000},
              "bytes_read": 4 * MiB, "bytes_written": 4 * MiB, "trips": 2,
              "category": "elementwise"}
    alone = predict.predict_kernel(kernel_record(kernel), "float32", roofs)
    split = predict.predict_kernel(kernel_record({**kernel, "partitions": 2}), "float32", roofs)
    elsewhere = predict.predict_kernel(kernel_record({**kernel, "partitions": 2}), "float32", ROOFS)
    assert alone is not None and split is not None and elsewhere is not None
    # 8 MiB at the 20 GB/s stream, then the 1 us launch: per launch, twice.
    streamed = 8 * MiB / 20e9
    assert alone.seconds == pytest.approx(2 * (streamed + 1e-6))
    assert term(alone, "split launch") == 0.0
    # Split in two, in a loop of two trips: 20 us more on the first trip only (the second finds
    # the workers awake), and the memory term still binds (419 us > 11 us).
    assert split.seconds == pytest.approx(2 * (streamed + 1e-6) + 20e-6)
    assert term(split, "split launch") == pytest.approx(20e-6)
    assert split.binding.name == "memory"
    # Roofs without the floor (a GPU, a spec sheet) charge nothing for the split.
    assert elsewhere.seconds == pytest.approx(alone.seconds)
    # A small split kernel is bound by the split, and says so.
    tiny = {**kernel, "bytes_read": 64 * KiB, "bytes_written": 64 * KiB, "flops": 1000,
            "flops_by_op": {"stablehlo.add": 1000}, "partitions": 2}
    small = predict.predict_kernel(kernel_record(tiny), "float32", roofs)
    assert small is not None
    assert small.binding.name == "split launch"
    assert small.binding.label == "split launch"
    # Outside a loop the one launch pays it whole; in a loop of 64 trips the small kernel's
    # launches bind instead, the split spread over them.
    once = predict.predict_kernel(kernel_record(tiny, trips=1), "float32", roofs)
    looped = predict.predict_kernel(kernel_record(tiny, trips=64), "float32", roofs)
    assert once is not None and looped is not None
    assert term(once, "split launch") == pytest.approx(20e-6)
    assert term(looped, "split launch") == pytest.approx(20e-6)
    assert looped.binding.name != "split launch"


def test_the_enqueued_split_launch_is_paid_on_every_launch() -> None:
    """Measured with the calls enqueued (the workers awake), the split launch is what each
    launch of a split kernel pays: a loop's trips each hand their parts over (a GRU's split
    accumulator add ran 11 us a trip above its work, with this floor 5.4 us); only the
    blocked floor (workers gone idle) is paid once per call."""
    from roofline_report.analysis.roofs import SPLIT_LAUNCH_ENQUEUED

    awake = Floor(SPLIT_LAUNCH_ENQUEUED, 5e-6, M, "")
    idle = Floor("split launch", 30e-6, M, "")
    roofs = RoofSet("this machine", M, ROOFS.compute, ROOFS.bandwidth,
                    (*ROOFS.floors, idle, awake), ROOFS.rates)
    kernel = {"flops": 1000, "flops_by_op": {"stablehlo.add": 1000}, "bytes_read": 64 * KiB,
              "bytes_written": 64 * KiB, "category": "elementwise", "partitions": 2}
    looped = predict.predict_kernel(kernel_record(kernel, trips=64), "float32", roofs)
    once = predict.predict_kernel(kernel_record(kernel, trips=1), "float32", roofs)
    assert looped is not None and once is not None
    assert term(looped, "split launch") == pytest.approx(64 * 5e-6)
    assert term(once, "split launch") == pytest.approx(5e-6)
    unsplit = predict.predict_kernel(kernel_record({**kernel, "partitions": 1}, trips=64),
                                     "float32", roofs)
    assert unsplit is not None
    assert looped.seconds == pytest.approx(unsplit.seconds + 64 * 5e-6)


def test_the_split_launch_floor_is_read_only_where_it_was_measured() -> None:
    from roofline_report.analysis.roofs import measured

    base = {"available": True, "backend": "cpu", "compute": [], "bandwidth": [],
            "dispatch": {"available": False, "reason": "not measured"}}
    found = measured(typed_ceilings({**base, "split_launch": {"available": True, "value": 2e-5}}))
    failed = measured(typed_ceilings({**base, "split_launch": {"available": False, "value": None,
                                                "reason": "the compiler split no kernel"}}))
    assert found is not None and failed is not None
    floor = found.floor("split launch")
    assert floor is not None and floor.seconds == 2e-5 and floor.kind is M
    assert failed.floor("split launch") is None
    assert measured(typed_ceilings(base)).floor("split launch") is None


def test_programs_timed_enqueued_pay_the_split_launch_measured_enqueued() -> None:
    from roofline_report.analysis.roofs import measured

    base = {"available": True, "backend": "cpu", "bandwidth": [],
            "dispatch": {"available": False, "reason": "not measured"},
            "compute": [{"name": "matmul float32", "available": True, "value": 100e9,
                         "dtype": "float32", "op": "matmul"}],
            "working_set": None}
    kernel = {"flops": 1000, "flops_by_op": {"stablehlo.add": 1000}, "bytes_read": 64 * KiB,
              "bytes_written": 64 * KiB, "category": "elementwise", "partitions": 2}

    def split_term(split: dict[str, object]) -> float:
        roofs = measured(typed_ceilings({**base, "split_launch": split}))
        assert roofs is not None
        roofs = RoofSet("this machine", M, roofs.compute, ROOFS.bandwidth,
                        (*roofs.floors, *ROOFS.floors), ROOFS.rates)
        p = predict.predict_kernel(kernel_record(kernel), "float32", roofs)
        assert p is not None
        return term(p, "split launch")

    # Blocked 40 µs (idle workers woken), 5 µs with the calls enqueued: programs are timed
    # enqueued, so they pay 5 µs; a file from before the enqueued one pays the blocked one;
    # an enqueued split below the noise (0) charges nothing.
    assert split_term({"available": True, "value": 40e-6, "enqueued": 5e-6}) == \
        pytest.approx(5e-6)
    assert split_term({"available": True, "value": 40e-6}) == pytest.approx(40e-6)
    assert split_term({"available": True, "value": 40e-6, "enqueued": 0.0}) == 0.0
    assert split_term({"available": False, "value": None, "enqueued": 5e-6}) == 0.0


def test_a_products_rate_by_size_loses_the_dispatch_floor() -> None:
    from roofline_report.analysis.roofs import measured

    # 128-sided products: 4.19 MFLOP in 50 µs a call, 10 µs of it the enqueued dispatch; the
    # 2048-sided one is so long the dispatch hardly moves it.
    small, large = 2 * 128**3, 2 * 2048**3
    ceilings = {"available": True, "backend": "cpu", "bandwidth": [],
                "dispatch": {"available": True, "value": 12e-6, "enqueued": 10e-6},
                "compute": [{"name": "matmul float32", "available": True, "value": 200e9,
                             "dtype": "float32", "op": "matmul", "by_size": [
                                 {"n": 128, "flops": small, "value": small / 50e-6},
                                 {"n": 2048, "flops": large, "value": large / 0.1}]}]}
    roofs = measured(typed_ceilings(ceilings))
    assert roofs is not None
    (roof,) = roofs.compute
    assert roof.by_flops == (pytest.approx((small, small / 40e-6)),
                             pytest.approx((large, large / (0.1 - 10e-6))))
    # A point that was mostly dispatch says nothing of the product and is left out.
    ceilings["compute"][0]["by_size"][0]["value"] = small / 15e-6  # type: ignore[index]
    only = measured(typed_ceilings(ceilings))
    assert only is not None and [f for f, _ in only.compute[0].by_flops] == [large]


def test_fresh_pages_go_to_the_first_fresh_writes_of_a_large_program() -> None:
    from roofline_report.analysis.fresh_pages import FRESH_ABOVE_BYTES, fresh_pages, temp_bytes
    from roofline_report.results.schema import MemoryStats

    kernels = [{"bytes_written": 24 * MiB}, {"bytes_written": 8 * MiB, "in_place": True},
               {"bytes_written": 16 * MiB}, {"bytes_written": 4 * MiB, "charged": False},
               {"bytes_written": 16 * MiB}]
    # Temporaries under glibc's largest mmap threshold are reused: no fresh page.
    assert fresh_pages(kernel_records(kernels), FRESH_ABOVE_BYTES - 1) == [0.0] * 5
    assert fresh_pages(kernel_records(kernels), None) == [0.0] * 5
    # 36 MiB of temporaries: the first 24 MiB written, then 12 of the next 16 MiB; writes in
    # place and branches not charged take none.
    assert fresh_pages(kernel_records(kernels),
                       36 * MiB) == [24 * MiB / 4096, 0.0, 12 * MiB / 4096, 0.0, 0.0]
    # Faults its timing counted stand for the rule, temporaries or none: 5,000 pages fall in
    # the first fresh write, 8,000 spill into the third kernel's.
    assert fresh_pages(kernel_records(kernels), None, counted=5000.0) == [5000.0, 0, 0, 0, 0]
    assert fresh_pages(kernel_records(kernels), 36 * MiB,
                       counted=8000.0) == [6144.0, 0.0, 1856.0, 0.0, 0.0]
    memory = MemoryStats(available=True, values={"temp_size_in_bytes": 36 * MiB})
    assert temp_bytes(memory) == 36 * MiB
    assert temp_bytes(MemoryStats(available=False, reason="x", values={})) is None
    assert temp_bytes(None) is None


def test_only_a_timing_that_counted_enough_faults_sets_the_pages() -> None:
    from roofline_report.analysis.fresh_pages import COUNTED_PAGES, counted_pages
    from roofline_report.results.schema import Timing

    def timing(faults: float | None) -> Timing:
        return Timing(inner_reps=1, method="m", min_sample_s=0.0, per_call_s=[1e-3],
                      resolution_s=1e-9, page_faults_per_call=faults)

    # The runtime's own few allocations fault a page or two a call: not the kernels'.
    assert counted_pages(timing(0.6)) is None
    assert counted_pages(timing(COUNTED_PAGES - 0.5)) is None
    assert counted_pages(timing(None)) is None and counted_pages(None) is None
    assert counted_pages(timing(1148.2)) == pytest.approx(1148.2)


def test_page_faults_are_charged_once_a_call_and_merge_in_the_program() -> None:
    from roofline_report.analysis.roofs import PAGE_FAULT

    roofs = RoofSet("this machine", M, ROOFS.compute, ROOFS.bandwidth,
                    (*ROOFS.floors, Floor(PAGE_FAULT, 1e-6, M, "")), ROOFS.rates)
    kernel = {"flops": 0, "bytes_read": 4096, "bytes_written": 4096, "trips": 4}
    plain = predict.predict_kernel(kernel_record(kernel), "float32", roofs)
    faulted = predict.predict_kernel(kernel_record(kernel), "float32", roofs, fresh_pages=500)
    assert plain is not None and faulted is not None
    # 500 pages at 1 µs, once a call however many trips the loop runs.
    assert term(faulted, "page faults") == pytest.approx(500e-6)
    assert faulted.seconds == pytest.approx(plain.seconds + 500e-6)
    assert faulted.binding.label == "page faults" and faulted.binding.roof == PAGE_FAULT
    # No floor measured (a GPU, another allocator): nothing charged.
    assert predict.predict_kernel(kernel_record(kernel), "float32", ROOFS, fresh_pages=500) == \
        predict.predict_kernel(kernel_record(kernel), "float32", ROOFS)
    other = predict.predict_kernel(kernel_record(kernel), "float32", roofs, fresh_pages=300)
    assert other is not None
    program = predict.predict_program([faulted, other], roofs)
    assert program is not None
    # Both kernels bound by their page faults: one program term, each kernel's whole time.
    (faults,) = [t for t in program.terms if t.name == "page faults"]
    assert faults.seconds == pytest.approx(faulted.seconds + other.seconds)
    # Terms of one roof merge whatever their details: a pattern term's detail is its own.
    pattern = predict.Term("pattern", "pattern", 1e-3, "transpose float32", M, "transpose")
    merged = predict.predict_program([
        predict.Prediction(1e-3, (pattern,), pattern, 0, 0, "", "L2", ()),
        predict.Prediction(2e-3, (replace(pattern, detail="other"),),
                           replace(pattern, detail="other", seconds=2e-3), 0, 0, "", "L2", ())],
        roofs)
    assert merged is not None
    (both,) = [t for t in merged.terms if t.group == "pattern"]
    assert both.seconds == pytest.approx(3e-3) and both.detail == ""


def _looped(name: str, trips: int = 1, known: bool = False, loop: str = "while.3",
            charged: bool = True) -> dict[str, object]:
    """A body kernel of a loop: 1 MFLOP of elementwise work and 8 KiB touched per launch."""
    return {"name": name, "trips": trips, "trips_known": known, "loop": loop,
            "charged": charged, "flops": 1_000_000, "transcendentals": 0,
            "bytes_read": 4096, "bytes_written": 4096, "category": "elementwise"}


def test_a_loop_that_stops_on_data_runs_the_trips_its_trace_observed() -> None:
    from roofline_report.analysis.loop_trips import loop_trips, observed_kernel

    kernels = [_looped("body.1"), _looped("body.2"), _looped("cond.1"),
               {**_looped("branch.1"), "branch": "conditional.2 branch 1 of 2"},
               {**_looped("entry.1", known=True), "loop": None}]
    seen = {"body.1": {"launches": [24, 24, 25]}, "body.2": {"launches": [24, 23, 24]},
            "cond.1": {"launches": [25, 25, 26]}, "branch.1": {"launches": [7, 9, 8]},
            "entry.1": {"launches": [1, 1, 1]}}
    observed, loops = loop_trips(kernel_records(kernels), traced(seen))
    # The loop runs the most common of its kernels' medians (24, 24, 25, 8): every kernel of
    # it runs that, the condition too; a branch taken on some trips runs its own.
    assert observed == {"body.1": 24, "body.2": 24, "cond.1": 24, "branch.1": 8}
    assert [(x.loop, x.static, x.observed, x.kernels, x.lower_bound) for x in loops] == [
        ("while.3", 1, 24, 4, False)]
    # A kernel of the loop the trace does not show runs the loop's count.
    observed, _ = loop_trips(kernel_records(kernels), traced({"body.1": {"launches": [24]}}))
    assert observed == {"body.1": 24, "body.2": 24, "cond.1": 24, "branch.1": 24}
    one = predict.predict_kernel(kernel_record(kernels[0]), "float32", ROOFS)
    counted, static = observed_kernel(kernel_record(kernels[0]), 24)
    assert (counted.trips, static) == (24, 1)
    many = predict.predict_kernel(counted, "float32", ROOFS, trips_observed=True)
    assert one is not None and many is not None
    assert one.lower_bound and not many.lower_bound
    # Every trip's work, bytes and time: 24 × (max(1 MFLOP ÷ 10 GFLOP/s, 8 KiB ÷ 100 GB/s)
    # + 1 µs launch) = 24 × 101 µs.
    assert many.flops == 24 * 1e6 and many.bytes == 24 * 8192
    assert many.seconds == pytest.approx(24 * (100e-6 + 1e-6))
    assert one.seconds == pytest.approx(101e-6)
    assert predict.predict_program([one], ROOFS).lower_bound  # type: ignore[union-attr]
    assert not predict.predict_program([many], ROOFS).lower_bound  # type: ignore[union-attr]


def test_a_loop_without_a_trace_is_a_lower_bound_and_an_inner_known_loop_multiplies() -> None:
    from roofline_report.analysis.loop_trips import loop_trips

    # An unknown loop around a known 5-trip loop: its kernels run 5 times per observed trip.
    kernels = [_looped("inner.1", trips=5, loop="while.7"), _looped("outer.1")]
    observed, loops = loop_trips(kernel_records(kernels), {})
    assert observed == {} and all(x.lower_bound for x in loops)
    assert [(x.loop, x.static) for x in loops] == [("while.3", 1), ("while.7", 5)]
    observed, loops = loop_trips(kernel_records(kernels),
                                 traced({"inner.1": {"launches": [60, 60]},
                                        "outer.1": {"launches": [12, 12]}}))
    assert observed == {"inner.1": 60, "outer.1": 12}
    # A branch the program does not charge makes no lower bound.
    _, loops = loop_trips(kernel_records([_looped("branch.1", charged=False)]), {})
    assert not loops[0].lower_bound


def test_integer_products_run_at_their_integer_roof() -> None:
    int8 = ComputeRoof("matmul int8 (int32 sums)", 400e9, "int8", M, "")
    roofs = RoofSet("this machine", M, (*ROOFS.compute, int8), ROOFS.bandwidth, ROOFS.floors,
                    ROOFS.rates)
    kernel = {"flops": 2_000_000, "flops_by_op": {"stablehlo.dot_general": 2_000_000},
              "bytes_read": 0, "bytes_written": 0, "trips": 1, "matmul_dtype": "int8"}
    p = predict.predict_kernel(kernel_record(kernel), "float32", roofs)
    assert p is not None
    # 2e6 products at 400 G/s: 5 us, at the int8 roof, named where it binds.
    assert term(p, "matmul") == pytest.approx(2e6 / 400e9)
    assert p.binding.roof == "matmul int8 (int32 sums)"
    assert p.binding.label == "compute: int8 matmul"
    # The float roof stays the float kernels' and the one a float roofline draws.
    assert roofs.compute_for("float32").name == "matmul float32"  # type: ignore[union-attr]
    floats = predict.predict_kernel(kernel_record({**kernel, "matmul_dtype": None}),
                                    "float32", roofs)
    assert floats is not None and term(floats, "matmul") == pytest.approx(2e6 / 100e9)
    # Without an int8 roof: the float32 roof, and a note says so.
    q = predict.predict_kernel(kernel_record(kernel), "float32", ROOFS)
    assert q is not None and term(q, "matmul") == pytest.approx(2e6 / 100e9)
    assert q.binding.roof == "matmul float32"
    assert any("no int8 matmul roof measured" in n for n in q.notes)


def test_grouped_convolutions_run_at_their_own_roof() -> None:
    conv = ComputeRoof("convolution float32", 25e9, "float32", M, "", op="convolution")
    grouped = ComputeRoof("grouped convolution float32", 2e9, "float32", M, "",
                          op="grouped-convolution",
                          by_flops=((2.5e6, 2e9), (1.7e7, 1e9)))
    roofs = RoofSet("this machine", M, (*ROOFS.compute, conv, grouped), ROOFS.bandwidth,
                    ROOFS.floors, ROOFS.rates)
    # A 7x7 depthwise convolution beside a dense one in one kernel.
    kernel = {"flops": 5_000_000, "flops_by_op": {"stablehlo.convolution": 5_000_000},
              "bytes_read": 0, "bytes_written": 0, "trips": 1, "grouped_conv_flops": 2_500_000}
    p = predict.predict_kernel(kernel_record(kernel), "float32", roofs)
    assert p is not None
    # 2.5e6 dense at 25 GFLOP/s (100 us) + 2.5e6 grouped at the 2.5 MFLOP size's 2 GFLOP/s
    # (1.25 ms).
    assert alu(p) == pytest.approx(2.5e6 / 25e9 + 2.5e6 / 2e9)
    assert p.binding.roof == "grouped convolution float32"
    assert p.binding.label == "compute: grouped convolution"
    # Past its largest size a grouped convolution keeps that size's rate (it falls with
    # size), not the roof's best: 1.7e8 flops at 1 GFLOP/s.
    big = predict.predict_kernel(kernel_record({**kernel, "flops": 1.7e8,
                                                "flops_by_op": {"stablehlo.convolution": 1.7e8},
                                                "grouped_conv_flops": 1.7e8}), "float32", roofs)
    assert big is not None and alu(big) == pytest.approx(1.7e8 / 1e9)
    # Without a grouped roof: the dense convolution's, and a note says so.
    bare = RoofSet("this machine", M, (*ROOFS.compute, conv), ROOFS.bandwidth, ROOFS.floors,
                   ROOFS.rates)
    q = predict.predict_kernel(kernel_record(kernel), "float32", bare)
    assert q is not None and alu(q) == pytest.approx(5e6 / 25e9)
    assert any("no grouped-convolution roof measured" in n for n in q.notes)


def test_a_sequences_convolution_runs_at_its_filters_rate() -> None:
    conv = ComputeRoof("convolution float32", 25e9, "float32", M, "", op="convolution")
    # Measured at 16, 64 and 256 features over a window of 3, 1,000 positions a call: filters
    # of 768, 12,288 and 196,608 elements at 80, 180 and 200 GFLOP/s.
    points = tuple((2 * 1000 * 3 * f * f, rate)
                   for f, rate in ((16, 80e9), (64, 180e9), (256, 200e9)))
    line = ComputeRoof("convolution float32 (1-D, window 3)", 200e9, "float32", M, "",
                       op="convolution-1d", by_flops=points, positions=1000)
    roofs = RoofSet("this machine", M, (*ROOFS.compute, conv, line), ROOFS.bandwidth,
                    ROOFS.floors, ROOFS.rates)

    def kernel(filter_elements: int, line_flops: float = 3e8) -> dict[str, Any]:
        return {"flops": 3e8, "flops_by_op": {"stablehlo.convolution": 3e8},
                "bytes_read": 0, "bytes_written": 0, "trips": 1,
                "line_conv_flops": line_flops, "line_conv_filter": filter_elements}

    # A filter of 128 x 128 features over a window of 3 (an audio encoder's) on the line
    # between the 64- and 256-feature points, in log flops, whatever its length.
    p = predict.predict_kernel(kernel_record(kernel(3 * 128 * 128)), "float32", roofs)
    assert p is not None
    t = math.log(128**2 / 64**2) / math.log(256**2 / 64**2)
    assert alu(p) == pytest.approx(3e8 / (180e9 + t * 20e9))
    assert p.binding.roof == line.name and p.binding.label == "compute: 1-D convolution"
    # A filter smaller than any measured (one input feature, a window of 10, 128 outputs:
    # 1,280 elements) between the two smallest; smaller still, the smallest's rate.
    t = math.log(1280 / 768) / math.log(16)
    small = predict.predict_kernel(kernel_record(kernel(1280)), "float32", roofs)
    assert small is not None and alu(small) == pytest.approx(3e8 / (80e9 + t * 100e9))
    tiny = predict.predict_kernel(kernel_record(kernel(10)), "float32", roofs)
    assert tiny is not None and alu(tiny) == pytest.approx(3e8 / 80e9)
    # Part of the kernel's convolutions a sequence's: that part at its roof, the rest at the
    # convolution roof's rate at its flops.
    half = predict.predict_kernel(kernel_record(kernel(3 * 256 * 256, 1e8)), "float32", roofs)
    assert half is not None and alu(half) == pytest.approx(1e8 / 200e9 + 2e8 / 25e9)
    # Without the 1-D roof (ceilings measured before it was, an accelerator's): the
    # convolution roof, and a note says so.
    bare = RoofSet("this machine", M, (*ROOFS.compute, conv), ROOFS.bandwidth, ROOFS.floors,
                   ROOFS.rates)
    q = predict.predict_kernel(kernel_record(kernel(3 * 128 * 128)), "float32", bare)
    assert q is not None and alu(q) == pytest.approx(3e8 / 25e9)
    assert any("no 1-D convolution roof measured" in n for n in q.notes)


def test_an_image_convolution_reads_its_roof_at_its_patch_matrix() -> None:
    # The roof's 3x3 kernels of 32 features in and out, measured at patch matrices of 1, 4
    # and 16 M elements (flops 2 x patch x 32): 200, 190 and 100 GFLOP/s.
    points = tuple((2.0 * patch * 32, rate) for patch, rate in ((1 << 20, 200e9),
                                                                (4 << 20, 190e9),
                                                                (16 << 20, 100e9)))
    conv = ComputeRoof("convolution float32", 200e9, "float32", M, "", op="convolution",
                       by_flops=points, channels=32)
    roofs = RoofSet("this machine", M, (*ROOFS.compute, conv), ROOFS.bandwidth, ROOFS.floors,
                    ROOFS.rates)

    def kernel(flops: float, patch: int) -> dict[str, Any]:
        return {"flops": flops, "flops_by_op": {"stablehlo.convolution": flops},
                "bytes_read": 0, "bytes_written": 0, "trips": 1, "image_conv_patch": patch}

    # 128 features out over a patch matrix of 1 M elements: 2.7e8 flops, past the roof's
    # 16 M-element size in flops, but its patch matrix is the smallest's: 200 GFLOP/s.
    flops = 2.0 * (1 << 20) * 128
    p = predict.predict_kernel(kernel_record(kernel(flops, 1 << 20)), "float32", roofs)
    assert p is not None and alu(p) == pytest.approx(flops / 200e9)
    assert p.binding.roof == conv.name
    # Between two sizes: interpolated in log patch (4 M and 16 M elements: halfway at 8 M).
    mid = predict.predict_kernel(kernel_record(kernel(flops, 8 << 20)), "float32", roofs)
    assert mid is not None and alu(mid) == pytest.approx(flops / 145e9)
    # A record without its patch (written before it was kept) reads the roof at its flops,
    # as does a roof that did not say its features.
    old = predict.predict_kernel(kernel_record(kernel(2.0 * (4 << 20) * 32, 0)), "float32",
                                 roofs)
    assert old is not None and alu(old) == pytest.approx(2.0 * (4 << 20) * 32 / 190e9)
    blind = RoofSet("this machine", M, (*ROOFS.compute, replace(conv, channels=0)),
                    ROOFS.bandwidth, ROOFS.floors, ROOFS.rates)
    q = predict.predict_kernel(kernel_record(kernel(flops, 1 << 20)), "float32", blind)
    assert q is not None and alu(q) == pytest.approx(flops / 190e9)


def test_a_padded_convolution_reads_the_padded_roof_where_one_was_measured() -> None:
    # The unpadded roof at 150 GFLOP/s, the padded one at 220, both flat, 32 features.
    conv = ComputeRoof("convolution float32", 150e9, "float32", M, "", op="convolution",
                       channels=32)
    padded = ComputeRoof("convolution float32 (padded)", 220e9, "float32", M, "",
                         op="convolution-padded", channels=32)
    both = RoofSet("this machine", M, (*ROOFS.compute, conv, padded), ROOFS.bandwidth,
                   ROOFS.floors, ROOFS.rates)
    flops = 1e9

    def kernel(pads: bool) -> dict[str, Any]:
        return {"flops": flops, "flops_by_op": {"stablehlo.convolution": flops},
                "bytes_read": 0, "bytes_written": 0, "trips": 1,
                "image_conv_patch": 1 << 20, "image_conv_padded": pads}

    same = predict.predict_kernel(kernel_record(kernel(True)), "float32", both)
    assert same is not None and alu(same) == pytest.approx(flops / 220e9)
    assert same.binding.roof == padded.name
    valid = predict.predict_kernel(kernel_record(kernel(False)), "float32", both)
    assert valid is not None and alu(valid) == pytest.approx(flops / 150e9)
    assert valid.binding.roof == conv.name
    # Ceilings without the padded roof (measured before it was): the unpadded roof, said so.
    older = RoofSet("this machine", M, (*ROOFS.compute, conv), ROOFS.bandwidth, ROOFS.floors,
                    ROOFS.rates)
    fallen = predict.predict_kernel(kernel_record(kernel(True)), "float32", older)
    assert fallen is not None and alu(fallen) == pytest.approx(flops / 150e9)
    assert any("no padded convolution roof measured" in n for n in fallen.notes)
    assert not any("padded" in n for n in valid.notes)


def test_a_weight_gradient_reads_its_own_roof_else_its_forward_ones() -> None:
    # Unpadded 150 GFLOP/s, padded 220, weight gradients 170, all flat, 32 features.
    conv = ComputeRoof("convolution float32", 150e9, "float32", M, "", op="convolution",
                       channels=32)
    padded = ComputeRoof("convolution float32 (padded)", 220e9, "float32", M, "",
                         op="convolution-padded", channels=32)
    gradient = ComputeRoof("convolution float32 (weight gradient)", 170e9, "float32", M, "",
                           op="convolution-weight-gradient", channels=32)
    flops = 1e9

    def seconds(roofs: tuple[ComputeRoof, ...], pads: bool) -> tuple[float, tuple[str, ...]]:
        kernel = {"flops": flops, "flops_by_op": {"stablehlo.convolution": flops},
                  "bytes_read": 0, "bytes_written": 0, "trips": 1,
                  "image_conv_patch": 1 << 20, "image_conv_padded": pads,
                  "image_conv_weight_gradient": True}
        roof_set = RoofSet("this machine", M, (*ROOFS.compute, *roofs), ROOFS.bandwidth,
                           ROOFS.floors, ROOFS.rates)
        p = predict.predict_kernel(kernel_record(kernel), "float32", roof_set)
        assert p is not None
        return alu(p), p.notes

    assert seconds((conv, padded, gradient), True) == (pytest.approx(flops / 170e9), ())
    assert seconds((conv, padded, gradient), False)[0] == pytest.approx(flops / 170e9)
    # Ceilings without the weight gradients' roof: the padded roof for a padded one, the
    # unpadded roof otherwise, each said.
    at, notes = seconds((conv, padded), True)
    assert at == pytest.approx(flops / 220e9)
    assert notes == ("no weight-gradient convolution roof measured: weight gradients at the "
                     "padded convolutions' roof",)
    at, notes = seconds((conv,), False)
    assert at == pytest.approx(flops / 150e9)
    assert notes == ("no weight-gradient convolution roof measured: weight gradients at the "
                     "convolution float32 roof",)


def test_a_generic_convolution_reads_its_roof_at_its_window() -> None:
    # The generic roof: 7 GFLOP/s over a 4x4 window, 4 over 16x16 (the roof's sizes 8 and 32).
    conv = ComputeRoof("convolution float32", 200e9, "float32", M, "", op="convolution",
                       channels=32)
    generic = ComputeRoof("convolution float32 (generic)", 7e9, "float32", M, "",
                          op="convolution-generic", by_flops=((1e6, 7e9), (3e7, 4e9)),
                          by_window=((16.0, 7e9), (256.0, 4e9)))
    flops = 3e7

    def predicted(roofs: tuple[ComputeRoof, ...], window: int) -> tuple[float, tuple[str, ...]]:
        kernel = {"flops": flops, "flops_by_op": {"stablehlo.convolution": flops},
                  "bytes_read": 0, "bytes_written": 0, "trips": 1,
                  "generic_conv_flops": flops, "generic_conv_window": window}
        roof_set = RoofSet("this machine", M, (*ROOFS.compute, *roofs), ROOFS.bandwidth,
                           ROOFS.floors, ROOFS.rates)
        p = predict.predict_kernel(kernel_record(kernel), "float32", roof_set)
        assert p is not None
        return alu(p), p.notes

    # Over a 4x4 window at the small size's rate, whatever its flops; halfway in log window
    # (64 elements) halfway between the rates; without a window, at its flops.
    assert predicted((conv, generic), 16) == (pytest.approx(flops / 7e9), ())
    assert predicted((conv, generic), 64)[0] == pytest.approx(flops / 5.5e9)
    assert predicted((conv, generic), 0)[0] == pytest.approx(flops / 4e9)
    # Ceilings without it (another backend's, or older): the convolution roof, said so.
    at, notes = predicted((conv,), 16)
    assert at == pytest.approx(flops / 200e9)
    assert notes == ("no generic convolution roof measured: a convolution no library takes "
                     "at the convolution float32 roof",)


def test_a_padded_grouped_convolution_takes_the_time_of_every_tap() -> None:
    # One 7x7 depthwise roof at 2 GFLOP/s, flat. A padded kernel whose counted flops are 0.7
    # of its taps' is priced at its taps' flops; its work stays the counted flops.
    roof = ComputeRoof("grouped convolution float32 (7x7 depthwise)", 2e9, "float32", M, "",
                       op="grouped-convolution", window=49)
    roofs = RoofSet("this machine", M, (*ROOFS.compute, roof), ROOFS.bandwidth, ROOFS.floors,
                    ROOFS.rates)

    def predicted(tap_flops: float) -> Any:
        kernel = {"flops": 7e6, "flops_by_op": {"stablehlo.convolution": 7e6},
                  "bytes_read": 0, "bytes_written": 0, "trips": 1, "grouped_conv_flops": 7e6,
                  "grouped_conv_taps": 49, "grouped_conv_tap_flops": tap_flops}
        p = predict.predict_kernel(kernel_record(kernel), "float32", roofs)
        assert p is not None
        return p

    padded = predicted(1e7)
    assert alu(padded) == pytest.approx(1e7 / 2e9) and padded.flops == 7e6
    # Unpadded (taps' flops equal to the count) or recorded before: its counted flops.
    assert alu(predicted(7e6)) == alu(predicted(0.0)) == pytest.approx(7e6 / 2e9)


def test_a_grouped_convolution_runs_at_the_rate_of_its_taps() -> None:
    # Roofs at 3x3 (0.5 GFLOP/s) and 7x7 (2 GFLOP/s), each flat in size.
    small = ComputeRoof("grouped convolution float32 (3x3 depthwise)", 0.5e9, "float32", M, "",
                        op="grouped-convolution", window=9)
    large = ComputeRoof("grouped convolution float32 (7x7 depthwise)", 2e9, "float32", M, "",
                        op="grouped-convolution", window=49)
    roofs = RoofSet("this machine", M, (*ROOFS.compute, large, small), ROOFS.bandwidth,
                    ROOFS.floors, ROOFS.rates)

    def seconds(window: int) -> float:
        kernel = {"flops": 1e7, "flops_by_op": {"stablehlo.convolution": 1e7},
                  "bytes_read": 0, "bytes_written": 0, "trips": 1, "grouped_conv_flops": 1e7,
                  "grouped_conv_taps": window}
        p = predict.predict_kernel(kernel_record(kernel), "float32", roofs)
        assert p is not None
        return alu(p)

    # At each measured window, that window's rate; 3x3 is four times slower per flop.
    assert seconds(9) == pytest.approx(1e7 / 0.5e9)
    assert seconds(49) == pytest.approx(1e7 / 2e9)
    # 5x5 between them in log window: 0.5 GFLOP/s x 4^(ln(25/9) / ln(49/9)).
    t = math.log(25 / 9) / math.log(49 / 9)
    assert seconds(25) == pytest.approx(1e7 / (0.5e9 * 4**t))
    # Below the fewest taps measured, on the same line in log taps (a 1x1 depthwise one runs
    # slower than a 3x3); beyond the most, that roof's rate, not the line: 128 taps over
    # groups of 8 features (1,024 multiply-adds an output) at the 7x7 roof's; a window not
    # known (older files), the fastest grouped roof's, as before.
    def on_line(taps: int) -> float:
        return 0.5e9 * 4 ** (math.log(taps / 9) / math.log(49 / 9))

    assert seconds(1) == pytest.approx(1e7 / on_line(1))
    assert seconds(1024) == pytest.approx(1e7 / 2e9)
    assert seconds(0) == pytest.approx(1e7 / 2e9)
    found = roofs.grouped_convolution("float32", 1e7, 16)
    assert found is not None and found[0].name == small.name  # the nearer window names it
    beyond = roofs.grouped_convolution("float32", 1e7, 1024)
    assert beyond is not None and beyond[0].name == large.name
    # A roof over groups of 16 features (144 taps, 20 GFLOP/s): 100 taps lie between it and
    # the 7x7 one; 2,048 taps take its rate.
    wide = ComputeRoof("grouped convolution float32 (3x3 groups of 16)", 20e9, "float32", M,
                       "", op="grouped-convolution", window=144)
    three = RoofSet("this machine", M, (*roofs.compute, wide), ROOFS.bandwidth, ROOFS.floors,
                    ROOFS.rates)
    between = three.grouped_convolution("float32", 1e7, 100)
    assert between is not None
    assert between[1] == pytest.approx(
        2e9 * 10 ** (math.log(100 / 49) / math.log(144 / 49)))
    assert three.grouped_convolution("float32", 1e7, 2048) == (wide, pytest.approx(20e9))
    # Never faster than a dense convolution of those flops.
    conv = ComputeRoof("convolution float32", 10e9, "float32", M, "", op="convolution")
    with_dense = RoofSet("this machine", M, (*three.compute, conv), roofs.bandwidth,
                         roofs.floors, roofs.rates)
    capped = with_dense.grouped_convolution("float32", 1e7, 100_000)
    assert capped is not None and capped[1] == pytest.approx(10e9)


def test_the_timing_of_an_untraced_loop_is_read_beside_its_lower_bound() -> None:
    from roofline_report.analysis.loop_trips import LoopTrips, implied_trips, per_trip

    kernels = [_looped("body.1"), _looped("body.2"), {**_looped("x.1", known=True),
                                                      "loop": None}]
    loops = (LoopTrips("while.3", 1, None, 2),)
    # One trip: 40 + 60 us predicted.
    priced = per_trip(loops, kernel_records(kernels),
                      {"body.1": 40e-6, "body.2": 60e-6, "x.1": 1e-3})
    assert priced[0].per_trip_s == pytest.approx(100e-6)
    # Predicted 1.1 ms a call (the loop once), measured 3.5 ms: 1 + 2.4 ms / 100 us = 25 trips.
    [x] = implied_trips(priced, 3.5e-3, 1.1e-3)
    assert x.implied == pytest.approx(25.0)
    # Faster than the lower bound, or two loops unknown: nothing to read.
    assert implied_trips(priced, 1.0e-3, 1.1e-3)[0].implied is None
    two = (*priced, LoopTrips("while.9", 1, None, 1, per_trip_s=1e-6))
    assert all(y.implied is None for y in implied_trips(two, 3.5e-3, 1.1e-3))
    # A loop with an unpriced kernel gets no time per trip.
    assert per_trip(loops, kernel_records(kernels), {"body.1": 40e-6})[0].per_trip_s is None


def test_a_kernel_left_on_one_thread_gets_that_share_of_rates_measured_on_two() -> None:
    """A loop fusion XLA:CPU does not split runs on one worker thread: its elementwise,
    transcendental and conversion work at half of rates whose kernels ran split in two; a
    split kernel, a library kernel and rates that do not say their threads are unchanged."""
    rates = (RateRoof("multiply-add float32", "multiply-add", "float32", 10e9, M, "",
                      threads=2),
             RateRoof("tanh float32", "tanh", "float32", 1e9, M, "", threads=2),
             RateRoof("convert float32<->bfloat16", "convert", "float32", 4e9, M, "",
                      threads=2))
    roofs = replace(ROOFS, rates=rates)
    kernel = {"flops": 1_000_000, "flops_by_op": {"stablehlo.add": 500_000,
                                                  "stablehlo.convert": 500_000},
              "transcendentals_by_op": {"stablehlo.tanh": 200_000},
              "bytes_read": 4 * KiB, "bytes_written": 4 * KiB, "category": "elementwise",
              "kind": "kLoop", "opcode": "fusion"}

    def work(k: dict[str, object], on: RoofSet = roofs) -> dict[str, float]:
        p = predict.predict_kernel(kernel_record(k), "float32", on)
        assert p is not None
        return {n: term(p, n) for n in ("elementwise", "transcendental", "conversion")}

    split = work({**kernel, "partitions": 2})
    assert split == {"elementwise": pytest.approx(5e5 / 10e9),
                     "transcendental": pytest.approx(2e5 / 1e9),
                     "conversion": pytest.approx(5e5 / 4e9)}
    alone = work({**kernel, "partitions": 1})
    assert alone == {name: pytest.approx(2 * seconds) for name, seconds in split.items()}
    p = predict.predict_kernel(kernel_record({**kernel, "partitions": 1}), "float32", roofs)
    assert p is not None and any("leaves on 1 thread of the 2" in n for n in p.notes)
    # Split in four on a machine whose rates ran on two: no faster than the rates.
    assert work({**kernel, "partitions": 4}) == split
    # A library kernel runs on the whole pool.
    assert work({**kernel, "kind": "__xnn_fusion"}) == split
    # Rates that do not say their threads (an accelerator, older ceilings): as measured.
    plain = replace(roofs, rates=tuple(replace(r, threads=None) for r in rates))
    assert work({**kernel, "partitions": 1}, plain) == split


def test_a_kernel_left_on_one_thread_takes_the_rates_measured_on_one() -> None:
    """Where the rates were measured on one worker thread too (a loop of 2,048 elements XLA
    leaves unsplit), a kernel on one thread takes them, not half of the split rates: one
    thread does more than its share of two (an exp at 3.0 G/s on one, 4.5 to 5.1 split in
    two; the multiply-add chain at 120 GFLOP/s on one, 111 split). The lookup by operation
    takes the rate on the most threads; an operation with no rate on one thread keeps the
    share."""
    split = (RateRoof("multiply-add float32", "multiply-add", "float32", 10e9, M, "",
                      threads=2),
             RateRoof("tanh float32", "tanh", "float32", 1e9, M, "", threads=2),
             RateRoof("convert float32<->bfloat16", "convert", "float32", 4e9, M, "",
                      threads=2))
    one = (RateRoof("multiply-add float32 (one thread)", "multiply-add", "float32", 9e9, M,
                    "", threads=1),
           RateRoof("tanh float32 (one thread)", "tanh", "float32", 0.7e9, M, "", threads=1))
    roofs = replace(ROOFS, rates=(*one, *split))  # listed first: still not the split kernels'
    assert roofs.rate_for("tanh", "float32") is split[1]
    kernel = {"flops": 1_000_000, "flops_by_op": {"stablehlo.add": 500_000,
                                                  "stablehlo.convert": 500_000},
              "transcendentals_by_op": {"stablehlo.tanh": 200_000},
              "bytes_read": 4 * KiB, "bytes_written": 4 * KiB, "category": "elementwise",
              "kind": "kLoop", "opcode": "fusion"}

    def priced(partitions: int) -> Any:
        p = predict.predict_kernel(kernel_record({**kernel, "partitions": partitions}),
                                   "float32", roofs)
        assert p is not None
        return p

    alone = priced(1)
    assert term(alone, "elementwise") == pytest.approx(5e5 / 9e9)
    assert term(alone, "transcendental") == pytest.approx(2e5 / 0.7e9)
    # The conversion has no rate on one thread: half the split rate, and the note says so.
    assert term(alone, "conversion") == pytest.approx(5e5 / 2e9)
    assert [n for n in alone.notes if "leaves on 1 thread" in n]
    roofs_named = {t.roof for t in alone.terms}
    assert {"multiply-add float32 (one thread)", "tanh float32 (one thread)",
            "convert float32<->bfloat16"} <= roofs_named
    # A split kernel keeps the split rates.
    both = priced(2)
    assert term(both, "elementwise") == pytest.approx(5e5 / 10e9)
    assert term(both, "transcendental") == pytest.approx(2e5 / 1e9)
    # A rate on one thread faster than the split one never prices a kernel faster than that.
    fast = replace(roofs, rates=(replace(one[0], value=20e9), *split))
    p = predict.predict_kernel(kernel_record({**kernel, "partitions": 1}), "float32", fast)
    assert p is not None and term(p, "elementwise") == pytest.approx(5e5 / 10e9)


def test_an_fft_is_priced_at_its_transform_rate_not_as_elementwise_arithmetic_too() -> None:
    """An FFT kernel's counted flops are what the FFT rate prices: with that rate measured
    they are not charged at the multiply-add rate as well (a library transform, not a loop of
    multiply-adds); without it they still are."""
    flops = 117_440_512
    kernel = {"flops": flops + 1_000, "flops_by_op": {"stablehlo.fft": flops,
                                                      "stablehlo.add": 1_000},
              "bytes_read": 4 * MiB, "bytes_written": 4 * MiB, "category": "other",
              "opcode": "fft", "pattern": "fft",
              "pattern_size": flops, "read_by_dtype": {"c64": 4 * MiB}}
    fft = RateRoof("fft complex64", "fft", "complex64", 146e9, M, "")
    with_fft = replace(ROOFS, rates=(*ROOFS.rates, fft))
    p = predict.predict_kernel(kernel_record(kernel), "float32", with_fft)
    assert p is not None
    assert term(p, "elementwise") == pytest.approx(1_000 / 10e9)
    assert term(p, "pattern") == pytest.approx(flops / 146e9)
    assert p.binding.name == "pattern"
    q = predict.predict_kernel(kernel_record(kernel), "float32", ROOFS)
    assert q is not None and term(q, "elementwise") == pytest.approx((flops + 1_000) / 10e9)
