"""The three-way reconciliation, from recorded numbers only (no jax).

The XLA dicts below are what ``compiled.cost_analysis()`` returned, recorded: the seed on CPU
(jax 0.10.2), a 10-step scan on CPU, and a lone bf16 4096^2 cuBLAS matmul on the H200.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pydantic
import pytest

from roofline_report.analysis import reconcile
from roofline_report.analysis.reconcile_records import Flag, ReconciledRow, Reconciliation
from roofline_report.errors import InputError
from roofline_report.report.reconcile_words import flag_text, plain
from tests.reconcile_inputs import (
    analytic_record,
    compiled_record,
    estimate_record,
    hlo_count_record,
    inventory_record,
    xla_record,
)

SEED_ANALYTIC = {"flops": 8192, "minimum_bytes": 3584}
SEED_OURS: dict[str, Any] = {
    "flops": 8192,
    "transcendentals": 256,
    "flops_by_op": {"stablehlo.dot_general": 8192},
    "transcendentals_by_op": {"stablehlo.tanh": 256},
    "minimum_bytes": 3584,
    "bytes_by_dtype": {"f32": 3584},
    "loops": [],
    "custom_calls": [],
}
SEED_XLA_CPU = {
    "flops": 8192.0,
    "transcendentals": 256.0,
    "bytes accessed": 5632.0,
    "bytes accessed0{}": 3072.0,
    "bytes accessed1{}": 512.0,
    "bytes accessedout{}": 2048.0,
    "utilization0{}": 2.0,
    "utilization1{}": 1.0,
}
SEED_COMPILED_CPU = {"kernels": 2, "converts": 0, "custom_calls": []}

SCAN_OURS: dict[str, Any] = {
    "flops": 5242900,
    "transcendentals": 40960,
    "flops_by_op": {"stablehlo.dot_general": 5242880, "stablehlo.add": 10, "stablehlo.compare": 10},
    "minimum_bytes": 49152,
    "bytes_by_dtype": {"f32": 49152},
    "loops": [{"index": 0, "trip_count": 10, "source": "cond", "body_flops": 524290}],
    "custom_calls": [],
}
SCAN_XLA_CPU = {"flops": 524290.0, "transcendentals": 4096.0, "bytes accessed": 114765.0}

N = 4096
GEMM_ANALYTIC = {"flops": 2 * N**3, "minimum_bytes": 2 * 3 * N * N}
GEMM_OURS: dict[str, Any] = {
    "flops": 2 * N**3,
    "transcendentals": 0,
    "flops_by_op": {"stablehlo.dot_general": 2 * N**3},
    "minimum_bytes": 2 * 3 * N * N,
    "bytes_by_dtype": {"bf16": 2 * 3 * N * N},
    "loops": [],
    "custom_calls": [],
}
GEMM_XLA_H200 = {"flops": -1.0, "bytes accessed": -1.0, "optimal_seconds": -1.0}
GEMM_COMPILED_H200 = {
    "kernels": 1,
    "converts": 0,
    "custom_calls": [{"name": "custom-call.1", "target": "__cublas$gemm"}],
}


def _run(**overrides: Any) -> Reconciliation:
    """The reconciliation of the seed on CPU, with ``overrides`` (recorded dicts, validated
    into the workload's records)."""
    recorded: dict[str, Any] = {
        "analytic": SEED_ANALYTIC,
        "ours": SEED_OURS,
        "xla": SEED_XLA_CPU,
        "compiled": SEED_COMPILED_CPU,
        "measured_seconds": None,
        "backend": "cpu",
    }
    recorded.update(overrides)
    return reconcile.reconcile(
        analytic=analytic_record(recorded["analytic"]), ours=hlo_count_record(recorded["ours"]),
        xla=xla_record(recorded["xla"]), compiled=compiled_record(recorded["compiled"]),
        measured_seconds=recorded["measured_seconds"], backend=recorded["backend"])


def _row(result: Reconciliation, quantity: str) -> ReconciledRow:
    (row,) = [r for r in result.rows if r.quantity == quantity]
    assert row == result.row(quantity)
    return row


def _causes(result: Reconciliation, quantity: str) -> list[str]:
    return [flag.cause for flag in _row(result, quantity).flags]


def _text(flag: Flag) -> str:
    """A flag's sentence as the report words it, without kind markers."""
    return plain(flag_text(flag))


def _numbers(value: Any) -> list[float]:
    """Every number the result gives as a value (the flags' sentences quote XLA's -1 as what
    it reported, which is not using it)."""
    if isinstance(value, dict):
        return [n for k, v in value.items() if k != "flags" for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [float(value)]
    return []


def test_reconcile_does_not_import_jax() -> None:
    code = "import sys, roofline_report.analysis.reconcile; print('jax' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.stdout.strip() == "False"


def test_seed_on_cpu() -> None:
    result = _run()
    assert [r.quantity for r in result.rows] == ["flops", "transcendentals", "bytes"]
    flops = _row(result, "flops")
    assert (flops.analytic, flops.ours, flops.xla) == (8192, 8192, 8192.0)
    assert flops.agree and flops.flags == ()
    trans = _row(result, "transcendentals")
    assert trans.agree and trans.analytic is None
    assert _causes(result, "transcendentals") == ["epilogue_not_in_analytic"]
    assert "256" in _text(trans.flags[0])
    traffic = _row(result, "bytes")
    assert not traffic.agree
    assert _causes(result, "bytes") == ["unfused_intermediate"]
    explanation = _text(traffic.flags[0])
    assert "5,632" in explanation and "3,584" in explanation and "2,048" in explanation
    assert "written" in explanation and "read back" in explanation
    assert result.traffic_efficiency == pytest.approx(5632 / 3584)
    assert result.measured is None


def test_one_fused_kernel_above_the_minimum() -> None:
    result = _run(
        xla={**SEED_XLA_CPU, "bytes accessed": 4096.0}, compiled={**SEED_COMPILED_CPU, "kernels": 1}
    )
    assert _causes(result, "bytes") == ["fusion_beyond_minimum"]
    exact = _run(
        xla={**SEED_XLA_CPU, "bytes accessed": 3584.0}, compiled={**SEED_COMPILED_CPU, "kernels": 1}
    )
    assert _row(exact, "bytes").agree and _row(exact, "bytes").flags == ()
    assert exact.traffic_efficiency == 1.0


def test_scan_loop_counted_once_by_xla() -> None:
    result = _run(
        analytic=None,
        ours=SCAN_OURS,
        xla=SCAN_XLA_CPU,
        compiled={"kernels": 42, "converts": 0, "custom_calls": []},
    )
    for quantity in ("flops", "transcendentals"):
        row = _row(result, quantity)
        assert not row.agree
        assert "loop_counted_once" in _causes(result, quantity)
    flops = _row(result, "flops")
    assert flops.ours == 10 * flops.xla
    text = _text(flops.flags[0])
    assert "524,290" in text and "5,242,900" in text and "10× as much" in text


def test_unknown_trip_count_makes_ours_a_lower_bound() -> None:
    ours = {
        **SCAN_OURS,
        "flops": 524290,
        "transcendentals": 4096,
        "loops": [{"index": 0, "trip_count": None, "source": "unknown", "body_flops": 524290}],
    }
    result = _run(analytic=None, ours=ours, xla=SCAN_XLA_CPU)
    flops = _row(result, "flops")
    assert flops.agree  # both count one iteration ...
    assert _causes(result, "flops") == ["loop_counted_once"]  # ... and we say so
    assert "lower bound" in _text(flops.flags[0])


def test_gpu_minus_one_is_never_a_number() -> None:
    result = _run(
        analytic=GEMM_ANALYTIC,
        ours=GEMM_OURS,
        xla=GEMM_XLA_H200,
        compiled=GEMM_COMPILED_H200,
        measured_seconds=0.2,
        backend="gpu",
    )
    flops = _row(result, "flops")
    assert flops.xla is None
    assert "negative_or_missing" in _causes(result, "flops")
    explanation = _text(flops.flags[0])
    assert "-1" in explanation and "custom call" in explanation
    assert flops.agree  # analytic and ours, the two numbers there are
    assert _row(result, "bytes").xla is None
    assert "negative_or_missing" in _causes(result, "bytes")
    assert result.traffic_efficiency is None
    assert result.measured is not None
    assert result.measured.achieved_flops_per_s == pytest.approx(2 * N**3 / 0.2)
    assert -1.0 not in _numbers(result.to_json())
    assert all(n >= 0 for n in _numbers(result.to_json()))


def test_gpu_total_with_custom_calls_summed_in_is_not_used() -> None:
    # tanh(x @ w) @ v on the H200: two cuBLAS gemms costed -1 each, summed into a positive total.
    xla = {
        "flops": 1.0737e9,
        "transcendentals": 4.2e6,
        "bytes accessed": 5.0e7,
        "optimal_seconds": -1.0,
    }
    compiled = {
        "kernels": 3,
        "converts": 0,
        "custom_calls": [
            {"name": "custom-call.1", "target": "__cublas$gemm"},
            {"name": "custom-call.2", "target": "__cublas$gemm"},
        ],
    }
    ours = {**GEMM_OURS, "flops": 2 * 2 * N**3 + N * N, "transcendentals": N * N}
    result = _run(analytic=None, ours=ours, xla=xla, compiled=compiled, backend="cuda")
    flops = _row(result, "flops")
    assert flops.xla is None
    assert _causes(result, "flops") == ["unknown_custom_call"]
    assert "2 custom calls (__cublas$gemm)" in _text(flops.flags[0])
    assert _row(result, "transcendentals").xla == 4.2e6  # custom calls do not touch these
    assert result.traffic_efficiency is None


def test_missing_keys_read_as_zero_and_no_dict_as_unavailable() -> None:
    no_trans = {"flops": 8192.0, "bytes accessed": 5632.0}  # XLA omits zero-valued keys
    result = _run(ours={**SEED_OURS, "transcendentals": 0}, xla=no_trans)
    assert _row(result, "transcendentals").xla == 0.0
    missing: dict[str, float] | None
    for missing in (None, {}):
        result = _run(xla=missing)
        for row in result.rows:
            assert row.xla is None
            assert "negative_or_missing" in [f.cause for f in row.flags]
        assert result.traffic_efficiency is None


def test_non_finite_xla_value_is_unknown() -> None:
    result = _run(xla={**SEED_XLA_CPU, "flops": math.nan})
    assert _row(result, "flops").xla is None
    assert _causes(result, "flops") == ["negative_or_missing"]
    json.dumps(result.to_json(), allow_nan=False)


def test_bf16_upcast_on_cpu_only() -> None:
    ours = {
        **SEED_OURS,
        "transcendentals": 0,
        "transcendentals_by_op": {},
        "minimum_bytes": 1792,
        "bytes_by_dtype": {"bf16": 1792},
    }
    xla = {"flops": 9088.0, "bytes accessed": 8960.0}
    compiled = {"kernels": 4, "converts": 3, "custom_calls": []}
    result = _run(
        analytic={"flops": 8192, "minimum_bytes": 1792}, ours=ours, xla=xla, compiled=compiled
    )
    assert _causes(result, "flops") == ["dtype_upcast"]
    assert "896 more than ours" in _text(_row(result, "flops").flags[0])
    assert "dtype_upcast" in _causes(result, "bytes")
    on_gpu = _run(
        analytic={"flops": 8192, "minimum_bytes": 1792},
        ours=ours,
        xla=xla,
        compiled=compiled,
        backend="gpu",
    )
    assert "dtype_upcast" not in _causes(on_gpu, "flops")


def test_epilogue_beyond_the_analytic_contraction() -> None:
    ours = {
        **SEED_OURS,
        "flops": 8192 + 256,
        "flops_by_op": {"stablehlo.dot_general": 8192, "stablehlo.maximum": 256},
    }
    result = _run(ours=ours, xla={**SEED_XLA_CPU, "flops": 8448.0})
    assert _causes(result, "flops") == ["epilogue_not_in_analytic"]
    assert "256" in _text(_row(result, "flops").flags[0])


def test_all_reduce_group_size() -> None:
    # shard_map psum(tanh(a @ b)) over 4 CPU devices: XLA assumes 2 participants per all-reduce.
    ours = {
        **SEED_OURS,
        "flops": 16384 + 768,
        "flops_by_op": {"stablehlo.dot_general": 16384, "stablehlo.all_reduce": 768},
    }
    result = _run(analytic=None, ours=ours, xla={**SEED_XLA_CPU, "flops": 16640.0})
    assert _causes(result, "flops") == ["collective_group_size"]
    assert "768" in _text(_row(result, "flops").flags[0])


def test_unexplained_difference_is_said() -> None:
    result = _run(xla={**SEED_XLA_CPU, "flops": 9000.0})
    assert _causes(result, "flops") == ["unexplained"]
    assert "9,000" in _text(_row(result, "flops").flags[0])


# sum(x, axis=-1) of a bfloat16 x[1024, 1024] on CPU, as recorded: JAX accumulates in float32,
# so the StableHLO converts (1049600 elements, counted as flops) around the reduction.
ROW_SUM_BF16_ANALYTIC = {"flops": 1047552, "minimum_bytes": 2099200, "transcendentals": 0}
ROW_SUM_BF16_OURS: dict[str, Any] = {
    "flops": 2097152, "transcendentals": 0,
    "flops_by_op": {"stablehlo.convert": 1049600, "stablehlo.reduce": 1047552},
    "minimum_bytes": 2099200, "bytes_by_dtype": {"bf16": 2099200}, "loops": [],
    "custom_calls": [],
}


def test_conversions_explain_the_gap_to_the_analytic_count_and_it_is_not_unexplained(
        ) -> None:
    """The accounting cell once read "unexplained: ... no known cause matched" beside the
    cause: a disagreement that has an explanation is not labelled unexplained."""
    result = _run(analytic=ROW_SUM_BF16_ANALYTIC, ours=ROW_SUM_BF16_OURS,
                  xla={"flops": 2097152.0, "transcendentals": 0.0, "bytes accessed": 2107392.0},
                  compiled={"kernels": 2, "converts": 2, "custom_calls": []})
    row = _row(result, "flops")
    assert not row.agree
    assert _causes(result, "flops") == ["conversions_not_in_analytic"]
    text = _text(row.flags[0])
    assert "1,047,552 + 1,049,600 = 2,097,152" in text
    result = reconcile.add_kernel_columns(
        result, kernels=inventory_record({"flops": 2097152, "bytes_read": 0, "bytes_written": 0}),
        jax_estimate=estimate_record({"flops": 0.0, "hbm_bytes": 0.0}),
        ours=hlo_count_record(ROW_SUM_BF16_OURS))
    assert "unexplained" not in _causes(result, "flops")


def test_no_accounting_cell_of_the_recorded_run_is_unexplained() -> None:
    from roofline_report.analysis.analyse import analyse
    from roofline_report.results import io as results

    fixture = Path(__file__).resolve().parent / "fixtures" / "cpu_results.json"
    an = analyse(results.load(fixture))
    rows = [(p.name, row) for p in an.programs if p.reconciliation
            for row in p.reconciliation.rows]
    assert len(rows) > 20
    flagged = [(name, row.quantity) for name, row in rows
               if any(f.cause == "unexplained" for f in row.flags)]
    assert not flagged


def test_agreement_tolerance() -> None:
    close = _run(xla={**SEED_XLA_CPU, "flops": 8192.0 * (1 + 1e-4)})
    assert _row(close, "flops").agree
    far = _run(xla={**SEED_XLA_CPU, "flops": 8192.0 * 1.01})
    assert not _row(far, "flops").agree
    lonely = _run(analytic=None, xla=None)
    assert not _row(lonely, "flops").agree  # one value alone agrees with nothing


def test_measured_throughput() -> None:
    result = _run(measured_seconds=2e-6)
    assert result.measured is not None
    assert result.measured.to_json() == {
        "seconds": 2e-6,
        "achieved_flops_per_s": pytest.approx(8192 / 2e-6),
        "flops_basis": "analytic",
    }
    ours_only = _run(analytic=None, measured_seconds=1e-3)
    assert ours_only.measured is not None and ours_only.measured.flops_basis == "ours"


def test_absent_count_is_tolerated() -> None:
    result = _run(ours={}, analytic=None)
    assert all(row.ours is None for row in result.rows)


@pytest.mark.parametrize(
    "overrides",
    [
        {"ours": {**SEED_OURS, "flops": math.inf}},
        {"measured_seconds": -1.0},
        {"measured_seconds": math.inf},
        {"backend": ""},
    ],
)
def test_bad_inputs_raise_input_error(overrides: dict[str, Any]) -> None:
    with pytest.raises(InputError):
        _run(**overrides)


@pytest.mark.parametrize(
    "overrides",
    [
        {"analytic": {"flops": "many", "minimum_bytes": 1}},
        {"analytic": {"minimum_bytes": 1}},
        {"analytic": {"flops": -5, "minimum_bytes": 1}},
        {"xla": {"flops": "x"}},
    ],
)
def test_malformed_records_are_refused_where_they_are_read(overrides: dict[str, Any]) -> None:
    """A count of the wrong type, sign or none at all never reaches the reconciliation: the
    document's records refuse it (reading results.json names its key path)."""
    with pytest.raises(pydantic.ValidationError):
        _run(**overrides)


def test_plain_and_deterministic_json() -> None:
    first = json.dumps(_run(measured_seconds=1e-3).to_json(), sort_keys=True, allow_nan=False)
    second = json.dumps(_run(measured_seconds=1e-3).to_json(), sort_keys=True, allow_nan=False)
    assert first == second
    result = _run(measured_seconds=1e-3)
    for row in result.rows:
        for flag in row.flags:
            assert flag.cause in reconcile.CAUSES
            assert _text(flag).endswith(".") and "\n" not in _text(flag)
