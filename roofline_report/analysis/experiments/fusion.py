"""Fusion saves traffic (no jax): tanh(a@b) against the same with the product forced to memory.

The prediction is the ratio of the forced-to-memory program's predicted time to the fused one's:
the per-kernel model's on the measured roofs when both kernel inventories were recorded (it
prices the bytes at the kernels' boundaries, so a product that XLA did not fuse is priced as
moved), else the single-roof model's on the minimum traffic of each (:func:`fusion_traffic`). A
failed verdict is explained, in order, by XLA not fusing (more than one kernel in the fused
variant), by the product fitting in the last-level cache (where the model charged main memory),
by timing noise, or by the fused variant not being memory-bound.
"""

from __future__ import annotations

from typing import Literal

from roofline_report.analysis import seed_model as model
from roofline_report.analysis.experiments import raw
from roofline_report.analysis.experiments.common import (
    cache_note,
    dtype_of,
    first_reason,
    noise,
    ratio_note,
    record,
    seconds_of,
    time_json,
)
from roofline_report.analysis.experiments.single_roof import Budgets
from roofline_report.analysis.experiments.times import kernel_model, single_roof_note
from roofline_report.analysis.records import Experiment
from roofline_report.analysis.roofs import RoofSet
from roofline_report.analysis.stats import Timing
from roofline_report.kinds import Quantity
from roofline_report.results.schema_lab import Fusion
from roofline_report.text import decimal
from roofline_report.units import format_si

Variant = Literal["fused", "unfused"]
VARIANTS: tuple[Variant, ...] = ("fused", "unfused")


def fusion_traffic(m: int, k: int, n: int, itemsize: int) -> dict[str, int]:
    """Minimum traffic of tanh(a@b) fused (the contract's) and with the m×n product in memory
    (written once and read back once more)."""
    c = model.contract(m, k, n, itemsize)
    intermediate = itemsize * m * n
    return {
        "flops": c.flops,
        "fused": c.minimum_bytes,
        "unfused": c.minimum_bytes + 2 * intermediate,
        "intermediate": intermediate,
    }


def build(recorded: Fusion, budgets: Budgets, roofs: RoofSet | None, cache_bytes: int | None
          ) -> Experiment:
    m, k, n, s = recorded.m, recorded.k, recorded.n, recorded.itemsize
    fused, unfused = Timing.of(recorded.fused), Timing.of(recorded.unfused)
    traffic = fusion_traffic(m, k, n, s)
    km, why = kernel_model(roofs, raw.programs(recorded.programs, VARIANTS),
                           dict.fromkeys(VARIANTS, dtype_of(s)))
    if km is not None:
        t_f, t_u = km.seconds("fused"), km.seconds("unfused")
        bound = km.bound("fused")
        moved = {"fused": km.bytes("fused"), "unfused": km.bytes("unfused")}
        under = "the per-kernel model"
        prediction = Quantity(
            t_u / t_f,
            "×",
            km.kind,
            f"predicted time of the forced-to-memory program ÷ that of tanh(a@b), whose kernels "
            f"move {decimal(moved['unfused'] / moved['fused'], 3)}× the bytes; {km.note()}",
        )
    else:
        t_f = budgets.seconds(
            traffic["flops"], traffic["fused"])
        t_u = budgets.seconds(
            traffic["flops"], traffic["unfused"])
        bound = model.bound_by(traffic["flops"] / traffic["fused"], budgets.peak, budgets.bandwidth)
        moved = {"fused": float(traffic["fused"]), "unfused": float(traffic["unfused"])}
        under = "these ceilings"
        prediction = Quantity(
            t_u / t_f,
            "×",
            budgets.kind,
            single_roof_note(
                f"traffic ratio {decimal(traffic['unfused'] / traffic['fused'], 3)} "
                "(unfused ÷ fused "
                f"minimum bytes) through predicted_seconds; the fused shape is {bound}-bound; "
                f"{budgets.note}",
                why,
            ),
        )
    measured = seconds_of(unfused) / seconds_of(fused)
    kernels = {variant: recorded.kernels.get(variant) for variant in VARIANTS}
    in_main_memory = km is None or km.main_memory("unfused")

    def reason(ratio: float) -> str:
        not_fused = ""
        if kernels["fused"] is not None and kernels["fused"] > 1:
            same = kernels["fused"] == kernels["unfused"]
            not_fused = (
                f"XLA did not fuse the dot and the tanh on this backend: the 'fused' variant "
                f"runs {kernels['fused']} kernels (the forced one {kernels['unfused']}), so both "
                f"write and re-read the {format_si(traffic['intermediate'], 'B')} product and "
                f"fusion has nothing to save"
                + ("; any gap between the two is noise" if same and abs(ratio - 1) > 0.1 else "")
            )
        return first_reason(
            not_fused,
            cache_note(traffic["intermediate"], cache_bytes) if in_main_memory else "",
            noise({"fused": fused, "unfused": unfused}),
            f"the fused kernel is {bound}-bound under {under}" if bound != "memory" else "",
        )

    details = {
        "m": m,
        "k": k,
        "n": n,
        "itemsize": s,
        "flops": traffic["flops"],
        "transcendentals": m * n,
        "bytes": {"fused": traffic["fused"], "unfused": traffic["unfused"]},
        "model_bytes": moved,
        "intermediate_bytes": traffic["intermediate"],
        "traffic_ratio": traffic["unfused"] / traffic["fused"],
        "bound": bound,
        "kernels": kernels,
        "predicted_seconds": {"fused": t_f, "unfused": t_u},
        "seconds": {"fused": time_json(fused), "unfused": time_json(unfused)},
        "median_ratio": unfused.per_call.median / fused.per_call.median,
        "cache_bytes": cache_bytes,
    }
    return record(
        "fusion",
        prediction,
        measured,
        ratio_note("the forced-to-memory variant", "tanh(a@b)"),
        reason,
        details,
        model=km,
        why=why,
        budgets=budgets,
    )
