"""bfloat16 against float32 (no jax): a memory-bound kernel and a compute-bound matmul.

* :func:`memory`: x ← −x in place (donated) on n elements. Halving the bytes per element should
  halve the time.
* :func:`compute`: a square matmul. It should speed up by the ratio of the dtypes' compute roofs.

Each prediction is the float32 program's predicted time over the bfloat16 program's: the
per-kernel model's on the measured roofs, each program priced in its own dtype (conversions at
the measured conversion rate, matmuls at the dtype's measured rate at the product's size), when
both kernel inventories were recorded; else the single-roof model's on the budgets (for the
matmul, the measured compute ceilings of both dtypes, or an assumed bfloat16 speed-up). A failed
verdict is explained by converts in the compiled bfloat16 program (the backend computes in
float32), a bfloat16 rate no higher than float32's, the data fitting in the last-level cache, or
timing noise.
"""

from __future__ import annotations

from roofline_report.analysis import seed_model as model
from roofline_report.analysis.experiments import raw
from roofline_report.analysis.experiments.common import (
    BF16,
    F32,
    cache_note,
    first_reason,
    noise,
    ratio_note,
    record,
    seconds_of,
    time_json,
)
from roofline_report.analysis.experiments.single_roof import (
    HYPOTHETICAL_BF16_SPEEDUP,
    Budgets,
    weaker,
)
from roofline_report.analysis.experiments.times import kernel_model, single_roof_note
from roofline_report.analysis.records import Experiment
from roofline_report.analysis.roofs import RoofSet
from roofline_report.analysis.stats import Timing
from roofline_report.kinds import Kind, Quantity
from roofline_report.results.schema_lab import Bf16Pair
from roofline_report.text import decimal
from roofline_report.units import format_si

VARIANTS = ("float32", "bfloat16")


def memory(recorded: Bf16Pair, budgets: Budgets, roofs: RoofSet | None, cache_bytes: int | None
           ) -> Experiment:
    n = raw.count("bf16_memory", "elements", recorded.elements)
    f32, bf16 = Timing.of(recorded.float32), Timing.of(recorded.bfloat16)
    bytes_ = {"float32": 2 * F32 * n, "bfloat16": 2 * BF16 * n}
    km, why = kernel_model(roofs, raw.programs(recorded.programs, VARIANTS), _dtypes(recorded))
    if km is not None:
        t32, t16 = km.seconds("float32"), km.seconds("bfloat16")
        moved = {v: km.bytes(v) for v in VARIANTS}
        prediction = Quantity(
            t32 / t16,
            "×",
            km.kind,
            f"predicted time of the float32 program ÷ that of the bfloat16 program; {km.note()}",
        )
    else:
        t32 = budgets.seconds(n, bytes_["float32"])
        t16 = budgets.seconds(n, bytes_["bfloat16"])
        moved = {v: float(bytes_[v]) for v in VARIANTS}
        prediction = Quantity(
            t32 / t16,
            "×",
            budgets.kind,
            single_roof_note(
                f"predicted_seconds of n flops over 2·itemsize·n bytes (read + write), float32 "
                f"÷ bfloat16; {budgets.note}",
                why,
            ),
        )
    measured = seconds_of(f32) / seconds_of(bf16)
    converts = {variant: recorded.converts.get(variant) for variant in VARIANTS}
    achieved = {k: moved[k] / seconds_of(t) for k, t in (("float32", f32), ("bfloat16", bf16))}
    in_main_memory = km is None or km.main_memory("float32")

    predicted = t32 / t16

    def reason(ratio: float) -> str:
        upcast = ""
        c16, c32 = converts["bfloat16"], converts["float32"] or 0
        # Conversions explain a slow bfloat16 kernel, not a fast one.
        if ratio < predicted and c16 is not None and c16 > c32:
            upcast = (
                f"this backend computes bfloat16 arithmetic in float32: the bfloat16 kernel "
                f"holds {c16} converts, so conversion work, not memory, bounds it (it streams "
                f"{format_si(achieved['bfloat16'], 'B/s')} against "
                f"{format_si(achieved['float32'], 'B/s')} for float32)"
            )
        return first_reason(
            upcast,
            cache_note(bytes_["float32"] // 2, cache_bytes) if ratio < 2 and in_main_memory
            else "",
            noise({"float32": f32, "bfloat16": bf16}),
        )

    details = {
        "elements": n,
        "bytes": bytes_,
        "model_bytes": moved,
        "predicted_seconds": {"float32": t32, "bfloat16": t16},
        "seconds": {"float32": time_json(f32), "bfloat16": time_json(bf16)},
        "achieved_bandwidth": achieved,
        "converts": converts,
        "median_ratio": f32.per_call.median / bf16.per_call.median,
        "cache_bytes": cache_bytes,
    }
    return record(
        "bf16_memory", prediction, measured, ratio_note("float32", "bfloat16"), reason, details,
        model=km, why=why, budgets=budgets,
    )


def _dtypes(recorded: Bf16Pair) -> dict[str, str]:
    """The dtype of each variant; a variant without one is named after its dtype."""
    return {variant: recorded.dtypes.get(variant, variant) for variant in VARIANTS}


def dtype_rates(roofs: RoofSet, flops: float) -> dict[str, float | None]:
    """The measured matmul rate of each dtype at a product of ``flops``; None for a dtype
    without a compute roof of its own."""
    out: dict[str, float | None] = {}
    for dtype in VARIANTS:
        roof = roofs.compute_for(dtype)
        out[dtype] = roof.rate_at(flops) if roof is not None and roof.dtype == dtype else None
    return out


def compute(recorded: Bf16Pair, budgets: Budgets, roofs: RoofSet | None, cache_bytes: int | None
            ) -> Experiment:
    size = raw.count("bf16_compute", "size", recorded.size)
    f32, bf16 = Timing.of(recorded.float32), Timing.of(recorded.bfloat16)
    c32, c16 = model.contract(size, size, size, F32), model.contract(size, size, size, BF16)
    km, why = kernel_model(roofs, raw.programs(recorded.programs, VARIANTS), _dtypes(recorded))
    if km is not None:
        t32, t16 = km.seconds("float32"), km.seconds("bfloat16")
        rates = dtype_rates(km.roofs, c32.flops)
        m32, m16 = rates["float32"], rates["bfloat16"]
        what = "matmul rate at this size"
        ceilings: dict[str, float | None] = dict(rates)
        prediction = Quantity(
            t32 / t16,
            "×",
            km.kind,
            f"predicted time of the float32 program ÷ that of the bfloat16 program; {km.note()}",
        )
    else:
        m32, m16 = budgets.compute.get("float32"), budgets.compute.get("bfloat16")
        what = "ceiling"
        if m32 is not None and m16 is not None:
            kind, p32, p16 = Kind.MEASURED, m32, m16
            note = (
                f"measured compute ceilings: bfloat16 {format_si(m16, 'FLOP/s')}, float32 "
                f"{format_si(m32, 'FLOP/s')}"
            )
        else:
            kind, p32 = Kind.HYPOTHETICAL, budgets.peak
            p16 = HYPOTHETICAL_BF16_SPEEDUP * p32
            note = (
                f"no measured bfloat16 and float32 compute ceilings: assumes bfloat16 runs at "
                f"{decimal(HYPOTHETICAL_BF16_SPEEDUP, 6)}× the float32 peak "
                f"({format_si(p32, 'FLOP/s')})"
            )
        t32 = model.predicted_seconds(c32.flops, c32.minimum_bytes, p32, budgets.bandwidth,
                                      budgets.dispatch)
        t16 = model.predicted_seconds(c16.flops, c16.minimum_bytes, p16, budgets.bandwidth,
                                      budgets.dispatch)
        ceilings = {"float32": p32, "bfloat16": p16}
        prediction = Quantity(
            t32 / t16,
            "×",
            weaker(kind, budgets.kind),
            single_roof_note(f"predicted_seconds float32 ÷ bfloat16; {note}", why),
        )
    predicted = t32 / t16
    measured = seconds_of(f32) / seconds_of(bf16)
    converts = {variant: recorded.converts.get(variant) for variant in VARIANTS}

    def reason(ratio: float) -> str:
        upcast = ""
        slower = ratio < predicted  # an upcast explains a slow bfloat16, not a fast one
        if not slower:
            upcast = ""
        elif m16 is not None and m32 is not None and m16 <= m32:
            upcast = (
                f"this backend upcasts bfloat16 matmuls to float32: its measured bfloat16 "
                f"{what} ({format_si(m16, 'FLOP/s')}) is no higher than float32's "
                f"({format_si(m32, 'FLOP/s')}), so bfloat16 gains nothing"
            )
        elif converts["bfloat16"]:
            upcast = (
                f"this backend upcasts bfloat16 matmuls to float32 ({converts['bfloat16']} "
                f"converts in the compiled bfloat16 matmul), so bfloat16 gains nothing"
            )
        return first_reason(upcast, noise({"float32": f32, "bfloat16": bf16}))

    details = {
        "size": size,
        "flops": c32.flops,
        "bytes": {"float32": c32.minimum_bytes, "bfloat16": c16.minimum_bytes},
        "intensity": {"float32": c32.intensity, "bfloat16": c16.intensity},
        "ceilings": ceilings,
        "predicted_seconds": {"float32": t32, "bfloat16": t16},
        "seconds": {"float32": time_json(f32), "bfloat16": time_json(bf16)},
        "achieved": {
            "float32": c32.flops / seconds_of(f32),
            "bfloat16": c16.flops / seconds_of(bf16),
        },
        "converts": converts,
        "median_ratio": f32.per_call.median / bf16.per_call.median,
    }
    return record(
        "bf16_compute", prediction, measured, ratio_note("float32", "bfloat16"), reason, details,
        model=km, why=why, budgets=budgets,
    )
