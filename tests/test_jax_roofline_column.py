"""The jax.experimental.roofline column: filled where the estimator imports (absl-py is a
dependency of the project), and where it does not, the reconciliation says why instead of
leaving 'unknown' unexplained."""

from __future__ import annotations

from roofline_report.analysis import reconcile
from roofline_report.analysis.reconcile_records import Flag, ReconciledRow, Reconciliation
from tests.reconcile_inputs import estimate_record, hlo_count_record


def _rows() -> Reconciliation:
    return Reconciliation(rows=(ReconciledRow("flops", None, None, None, False, ()),
                                ReconciledRow("bytes", None, None, None, False, ())))


def test_an_unavailable_estimator_is_said_with_its_reason() -> None:
    reason = "ImportError: jax.experimental.roofline needs absl-py"
    result = reconcile.add_kernel_columns(
        _rows(), kernels=None,
        jax_estimate=estimate_record({"available": False, "reason": reason}), ours=None)
    flops, traffic = result.rows
    assert flops.jax is None
    assert flops.flags == (Flag("estimator_unavailable",
                                (f"jax.experimental.roofline not available: {reason}",)),)
    assert traffic.flags == ()  # said once, on the first row
    assert "estimator_unavailable" in reconcile.CAUSES


def test_an_available_estimator_fills_the_column() -> None:
    result = reconcile.add_kernel_columns(
        _rows(), kernels=None,
        jax_estimate=estimate_record({"available": True, "flops": 8192.0, "hbm_bytes": 3584.0}),
        ours=hlo_count_record({"flops": 8192}))
    flops, traffic = result.rows
    assert (flops.jax, traffic.jax) == (8192.0, 3584.0)
    assert not any(f.cause == "estimator_unavailable" for f in flops.flags)
