"""The accounting's reasons: true verdicts, rewrites worded as a reader takes them in, op names
set as code and every number formatted by the report (no jax).

The hand-made program below is a Flax CNN training step's flops row as a user's report printed
it: our count 218,327,777, XLA 218,727,456, the kernels 218,727,485, apart from our count by
twelve ops' rewrites.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from roofline_report.analysis import reconcile
from roofline_report.analysis.reconcile_records import Flag, Reconciliation
from roofline_report.hlo.kernel_reconciliation import (
    MINOR_REWRITE_SHARE,
    STRENGTH_REDUCTION_RTOL,
    MinorRewrites,
    OpRewrite,
    Rewrite,
    StrengthReduction,
    group_rewrites,
    reconcile_kernels,
)
from roofline_report.report.blocks import Code
from roofline_report.report.format import Num
from roofline_report.report.kernel_view import _kernel_reconciliation
from roofline_report.report.reconcile_words import flag_text, plain
from tests.reconcile_inputs import (
    compiled_record,
    estimate_record,
    hlo_count_record,
    inventory_record,
    xla_record,
)

OURS, XLA, KERNELS = 218_327_777, 218_727_456, 218_727_485
DIFFS = {"abs": 32, "add": 399_669, "and": -1, "compare": 61, "convert": -1,
         "divide": -507_980, "maximum": -32, "multiply": 507_979, "negate": -32,
         "scatter": -32, "select": 31, "subtract": 14}


def _cnn(diffs: dict[str, int] = DIFFS) -> tuple[dict[str, Any], dict[str, Any]]:
    """(our program count, the kernel inventory) apart by ``diffs`` per op."""
    program_by = {f"stablehlo.{op}": 1_000_000 for op in diffs}
    program_by["stablehlo.convolution"] = OURS - sum(program_by.values())
    kernel_by = {op: v + diffs.get(op.split(".")[1], 0) for op, v in program_by.items()}
    program = {"flops": OURS, "transcendentals": 0, "flops_by_op": program_by,
               "transcendentals_by_op": {}, "minimum_bytes": 4096,
               "bytes_by_dtype": {"f32": 4096}, "loops": [], "custom_calls": []}
    inventory = {"flops": sum(kernel_by.values()), "transcendentals": 0,
                 "flops_by_op": kernel_by, "transcendentals_by_op": {},
                 "bytes_read": 40960, "bytes_written": 40960}
    return program, inventory


def _accounting(xla_flops: float) -> Reconciliation:
    program, inventory = _cnn()
    rewrites = reconcile_kernels(inventory, program).rewrites
    ours = hlo_count_record(program)
    result = reconcile.reconcile(
        analytic=None, ours=ours, xla=xla_record({"flops": xla_flops, "bytes accessed": 81920.0}),
        compiled=compiled_record({"kernels": 40, "converts": 0, "custom_calls": []}),
        measured_seconds=None, backend="cpu")
    return reconcile.add_kernel_columns(
        result, kernels=inventory_record(inventory),
        jax_estimate=estimate_record({"flops": 38_780_928.0, "hbm_bytes": 1.0}),
        ours=ours, rewrites=rewrites)


def _flops_flags(result: Reconciliation) -> list[Flag]:
    return list(result.rows[0].flags)


def test_the_kernels_of_the_cnn_step_sum_as_in_the_report() -> None:
    program, inventory = _cnn()
    assert inventory["flops"] == KERNELS
    assert reconcile_kernels(inventory, program).unexplained["flops"] == 0


def test_rewrites_that_explain_the_gap_to_xla_are_its_cause_not_unexplained() -> None:
    flags = _flops_flags(_accounting(XLA))
    causes = [f.cause for f in flags]
    assert "unexplained" not in causes
    assert causes[0] == "compiler_rewrites"  # the verdict comes first
    text = plain(flag_text(flags[0]))
    assert text.startswith("XLA counts the compiled program: its 218,727,456 flops are within "
                           "29 of the compiled kernels' sum, 218,727,485.")
    assert "Our count, 218,327,777, is of the program before the compiler's rewrites" in text


def test_a_kernel_sum_apart_from_xla_leaves_the_gap_unexplained() -> None:
    far = XLA * (1 + 10 * reconcile.KERNELS_XLA_RTOL)
    flags = _flops_flags(_accounting(far))
    causes = [f.cause for f in flags]
    assert causes[0] == "unexplained" and "compiler_rewrites" in causes
    rewrites = next(f for f in flags if f.cause == "compiler_rewrites")
    assert plain(flag_text(rewrites)).startswith(
        "The compiled kernels sum to 218,727,485 flops, our program count 218,327,777 (")


def test_a_divide_removed_and_a_multiply_added_are_one_strength_reduction() -> None:
    program, inventory = _cnn()
    items = reconcile_kernels(inventory, program).flops.rewrites
    (paired,) = [i for i in items if i.kind == "strength_reduction"]
    assert paired == StrengthReduction(("divide", "multiply"), removed=507_980, added=507_979,
                                       amount=-1)
    assert not any(isinstance(i, OpRewrite) and i.op in ("divide", "multiply") for i in items)
    words = plain(_kernel_reconciliation(reconcile_kernels(inventory, program)))
    assert ("strength reduction (x / c became x * (1/c)): divide -507,980 flops, "
            "multiply +507,979 flops") in words


def test_a_multiply_much_larger_than_the_divide_is_not_paired() -> None:
    # the recorded layer norm: divides -2,048, multiplies +3,072 (not within the tolerance)
    rewrites = [Rewrite("stablehlo.divide", "simplified_away", "flops", -2048),
                Rewrite("stablehlo.multiply", "duplicated", "flops", 3072)]
    assert STRENGTH_REDUCTION_RTOL < 1024 / 3072
    items = group_rewrites(rewrites, "flops", 6_292_480)
    assert items == (OpRewrite("duplicated", "multiply", 3072),
                     OpRewrite("simplified_away", "divide", -2048))


def test_small_rewrites_are_summed_and_large_ones_listed_largest_first() -> None:
    program, inventory = _cnn()
    items = reconcile_kernels(inventory, program).flops.rewrites
    assert [i.kind for i in items] == ["strength_reduction", "duplicated", "others"]
    assert items[1] == OpRewrite("duplicated", "add", 399_669)
    small = {op: d for op, d in DIFFS.items() if op not in ("add", "divide", "multiply")}
    assert all(abs(d) < MINOR_REWRITE_SHARE * OURS for d in small.values())
    assert items[2] == MinorRewrites(count=len(small), amount=sum(small.values()))
    assert sum(i.amount for i in items) == KERNELS - OURS
    text = plain(flag_text(_flops_flags(_accounting(XLA))[0]))
    assert text.endswith("; add duplicated into several kernels or added by the compiler "
                         "(+399,669 flops); 9 other ops, +40 flops together.")


def test_one_small_rewrite_is_listed_by_name() -> None:
    rewrites = [Rewrite("stablehlo.add", "duplicated", "flops", 5000),
                Rewrite("stablehlo.and", "simplified_away", "flops", -1)]
    assert group_rewrites(rewrites, "flops", 1_000_000) == (
        OpRewrite("duplicated", "add", 5000), OpRewrite("simplified_away", "and", -1))


def test_op_names_are_code_so_and_reads_as_an_op() -> None:
    diffs = {"and": -40_000, "select": 30_000, "compare": 20_000}
    program, inventory = _cnn(diffs)
    parts = _kernel_reconciliation(reconcile_kernels(inventory, program))
    codes = {p.text for p in parts if isinstance(p, Code)}
    assert {"and", "select", "compare"} <= codes
    assert not any(isinstance(p, str) and re.search(r"\b(and|select|compare) (simplified|dup)",
                                                    p) for p in parts)


def _digits_in_words(flags: Sequence[Flag]) -> list[str]:
    """Numbers written into a flag's words (not values): none may be."""
    return [part for flag in flags for part in flag.parts
            if isinstance(part, str) and re.search(r"(?<![\w.])\d", part)]


def test_every_number_is_a_value_formatted_with_its_kind() -> None:
    result = _accounting(XLA)
    for row in result.rows:
        assert not _digits_in_words(row.flags), row.quantity
    text = flag_text(_flops_flags(result)[0])
    numbers = [p for p in text if isinstance(p, Num)]
    assert all(p.kind in ("analytic", "compiler_estimate") for p in numbers)
    assert {p.text for p in numbers} >= {"218,727,456", "218,327,777", "+399,669 flops"}
    assert "218327777" not in plain(text)


def test_the_recorded_run_has_no_number_in_its_words() -> None:
    from roofline_report.analysis.analyse import analyse
    from roofline_report.results import io as results

    an = analyse(results.load(Path(__file__).resolve().parent / "fixtures" / "cpu_results.json"))
    flags = [f for p in an.programs if p.reconciliation
             for row in p.reconciliation.rows for f in row.flags]
    assert len(flags) > 20
    assert not _digits_in_words(flags)


SCAN_OURS: dict[str, Any] = {
    "flops": 5242900, "transcendentals": 40960,
    "flops_by_op": {"stablehlo.dot_general": 5242880, "stablehlo.add": 10,
                    "stablehlo.compare": 10},
    "minimum_bytes": 49152, "bytes_by_dtype": {"f32": 49152},
    "loops": [{"index": 0, "trip_count": 10, "source": "cond", "body_flops": 524290}],
    "custom_calls": [],
}


@pytest.mark.parametrize(("xla_bytes", "others"), [
    (114765.0, ["unfused_intermediate"]),  # recorded: above the minimum, yet a body once
    (40000.0, []),  # under the minimum: the loop is the reason, not 'below_minimum'
])
def test_xla_bytes_are_said_to_count_a_loop_body_once(xla_bytes: float,
                                                      others: list[str]) -> None:
    result = reconcile.reconcile(
        analytic=None, ours=hlo_count_record(SCAN_OURS),
        xla=xla_record({"flops": 524290.0, "transcendentals": 4096.0,
                        "bytes accessed": xla_bytes}),
        compiled=compiled_record({"kernels": 42, "converts": 0, "custom_calls": []}),
        measured_seconds=None, backend="cpu")
    traffic = result.rows[2]
    assert [f.cause for f in traffic.flags] == ["loop_counted_once", *others]
    text = plain(flag_text(traffic.flags[0]))
    assert "bytes accessed count each loop body once (the body runs 10 times)" in text
    assert ("under the minimum of 49,152 bytes" in text) == (xla_bytes < 49152)


def test_no_loop_no_loop_reason_on_bytes() -> None:
    ours = {**SCAN_OURS, "loops": []}
    result = reconcile.reconcile(
        analytic=None, ours=hlo_count_record(ours),
        xla=xla_record({"flops": 5242900.0, "bytes accessed": 114765.0}),
        compiled=compiled_record({"kernels": 42, "converts": 0, "custom_calls": []}),
        measured_seconds=None, backend="cpu")
    assert [f.cause for f in result.rows[2].flags] == ["unfused_intermediate"]


@pytest.mark.slow
def test_the_catalog_accounting_words_its_rewrites() -> None:
    import json

    from roofline_report.report import views

    data = json.loads((Path(__file__).resolve().parent / "fixtures" / "cpu_results.json")
                      .read_text())
    md = views.render(data).markdown
    assert "strength reduction (`x / c` became `x * (1/c)`): `divide` -1,047,552 flops" in md
    assert "`convert` ops inserted by the compiler" in md
    assert "XLA counts the compiled program: its 33,751,040 `C` flops are equal to the " \
           "compiled kernels' sum." in md
    assert "bytes accessed count each loop body once (the body runs 10 `A` times)" in md
    assert not re.search(r"\d{4,}(?![\d,])", " ".join(
        line for line in md.splitlines() if line.startswith("| bytes |")
        or line.startswith("| flops |")).replace("`", ""))


def test_the_plain_form_keeps_the_kernel_columns_and_the_rewrites() -> None:
    import json

    plain_form = json.loads(json.dumps(_accounting(XLA).to_json(), allow_nan=False))
    flops = plain_form["rows"][0]
    assert (flops["kernels"], flops["jax"]) == (KERNELS, 38_780_928.0)
    (listed,) = [part for part in flops["flags"][0]["parts"]
                 if isinstance(part, dict) and "rewrites" in part]
    assert listed["unit"] == "flops"
    assert listed["rewrites"][0] == {"kind": "strength_reduction", "ops": ["divide", "multiply"],
                                     "removed": 507_980, "added": 507_979, "amount": -1}
    assert listed["rewrites"][-1]["kind"] == "others"
