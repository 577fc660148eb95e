"""The reconciliation's inputs as the tests write them, validated into the records a results
document holds (:mod:`roofline_report.results.schema`).

The tests give only the keys a case is about, as recorded or as ``count_stablehlo`` and
``inspect_compiled`` return them; the keys a case does not need are filled here with empty
values (no loops, no custom calls, no notes), so each record is validated as reading a
results.json would validate it.
"""

from __future__ import annotations

from collections.abc import Mapping

from roofline_report.results import schema

Fields = Mapping[str, object]


def analytic_record(fields: Fields | None) -> schema.Analytic | None:
    """The hand model (its transcendentals only where ``fields`` states them)."""
    return None if fields is None else schema.Analytic.model_validate(dict(fields))


def _loop(fields: Fields) -> dict[str, object]:
    return {"index": 0, "trip_count": None, "source": "unknown", "body_flops": 0,
            "body_transcendentals": 0, "op_name": None, "location": None,
            "compiled_while": None, "matched_by": None, **fields}


def hlo_count_record(fields: Fields | None) -> schema.HloCount | None:
    """Our count of the StableHLO; None for no count (an empty one included)."""
    if not fields:
        return None
    loops = fields.get("loops") or []
    assert isinstance(loops, list)
    return schema.HloCount.model_validate({
        "entry": None, "ops": {}, "ops_static": {}, "flops": 0, "transcendentals": 0,
        "flops_by_op": {}, "transcendentals_by_op": {}, "argument_bytes": 0,
        "result_bytes": 0, "minimum_bytes": 0, "bytes_by_dtype": {}, "unknown_trip_counts": 0,
        "custom_calls": [], "notes": [], **fields, "loops": [_loop(loop) for loop in loops]})


def xla_record(raw: Mapping[str, float] | None) -> schema.XlaCost | None:
    """XLA's cost analysis as the backend returned it; None: not asked for."""
    if raw is None:
        return None
    return schema.XlaCost(available=True, raw=dict(raw), values=dict(raw))


def compiled_record(fields: Fields | None) -> schema.Compiled | None:
    """The facts of the optimized HLO: its kernels, converts and custom calls."""
    if fields is None:
        return None
    calls = fields.get("custom_calls") or []
    assert isinstance(calls, list)
    return schema.Compiled.model_validate({
        "entry": None, "fusions": {"count": 0, "by_kind": {}, "by_backend_kind": {}},
        "collectives": [], "while_loops": [], "kernels": 0, "kernels_static": 0,
        "converts": 0, "opcodes": {}, "notes": [], **fields,
        "custom_calls": [{"name": "custom-call", "shape": "", **call} for call in calls]})


def inventory_record(fields: Fields | None) -> schema.KernelInventory | None:
    """The kernel inventory's sums (no kernels listed)."""
    if fields is None:
        return None
    return schema.KernelInventory.model_validate({
        "module": "", "count": 0, "launches": 0, "flops": 0, "transcendentals": 0,
        "bytes_read": 0, "bytes_written": 0, "flops_by_op": {}, "transcendentals_by_op": {},
        "by_category": {}, "kernels": [], "notes": [], **fields})


def estimate_record(fields: Fields | None
                    ) -> schema.JaxRoofline | schema.Unavailable | None:
    """``jax.experimental.roofline``'s figures, or why it gave none."""
    if fields is None:
        return None
    if fields.get("available") is False:
        return schema.Unavailable.model_validate(dict(fields))
    return schema.JaxRoofline.model_validate(
        {"unfused_flops": 0.0, "unfused_hbm_bytes": 0.0, **fields})
