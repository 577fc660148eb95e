"""Doubled data movement, measured (no jax): sum(w·x) against sum(2·x) on n float32 elements.

Both do 2n flops; the first reads two arrays, the second one. The prediction is the ratio of the
two programs' predicted times: the per-kernel model's on the measured roofs when their kernel
inventories were recorded, else the single-roof model's on the budgets. A failed verdict is
explained, in order, by the data fitting in the last-level cache (where the model charged main
memory), by the one-array kernel streaming well under the bandwidth the model charged it, or by
timing noise.
"""

from __future__ import annotations

from typing import Literal

from roofline_report.analysis import seed_model as model
from roofline_report.analysis.experiments import raw
from roofline_report.analysis.experiments.common import (
    LOW_EFFICIENCY,
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
from roofline_report.results.schema_lab import DoubledTraffic
from roofline_report.units import format_si

Variant = Literal["one_array", "two_arrays"]
VARIANTS: tuple[Variant, ...] = ("one_array", "two_arrays")


def build(recorded: DoubledTraffic, budgets: Budgets, roofs: RoofSet | None,
          cache_bytes: int | None) -> Experiment:
    n, s = recorded.elements, recorded.itemsize
    one, two = Timing.of(recorded.one_array), Timing.of(recorded.two_arrays)
    flops = 2 * n
    bytes_one, bytes_two = s * n, 2 * s * n
    km, why = kernel_model(roofs, raw.programs(recorded.programs, VARIANTS),
                           dict.fromkeys(VARIANTS, dtype_of(s)))
    if km is not None:
        t_one, t_two = km.seconds("one_array"), km.seconds("two_arrays")
        bounds = [km.bound(v) for v in VARIANTS]
        moved = [km.bytes(v) for v in VARIANTS]
        ceiling = km.bandwidth_text("one_array")
        model_bw = km.bandwidth("one_array")
        prediction = Quantity(
            t_two / t_one,
            "×",
            km.kind,
            f"predicted time of the two-array program ÷ that of the one-array program; "
            f"{km.note()}",
        )
    else:
        t_one = budgets.seconds(flops, bytes_one)
        t_two = budgets.seconds(flops, bytes_two)
        bounds = [model.bound_by(flops / x, budgets.peak, budgets.bandwidth)
                  for x in (bytes_one, bytes_two)]
        moved = [float(bytes_one), float(bytes_two)]
        ceiling = f"the {format_si(budgets.bandwidth, 'B/s')} bandwidth ceiling"
        model_bw = budgets.bandwidth
        prediction = Quantity(
            t_two / t_one,
            "×",
            budgets.kind,
            single_roof_note(
                f"predicted_seconds(two arrays) ÷ predicted_seconds(one array), "
                f"{bounds[0]}-bound and {bounds[1]}-bound; {budgets.note}",
                why,
            ),
        )
    predicted = t_two / t_one
    measured = seconds_of(two) / seconds_of(one)
    achieved = [moved[0] / seconds_of(one), moved[1] / seconds_of(two)]
    in_main_memory = km is None or km.main_memory("two_arrays")

    def reason(m: float) -> str:
        low = ""
        if m < predicted and model_bw is not None and achieved[0] < LOW_EFFICIENCY * model_bw:
            low = (
                f"the one-array kernel reaches only {format_si(achieved[0], 'B/s')} of "
                f"{ceiling}: something other than memory bounds it, so more bytes cost less "
                f"than proportionally more time"
            )
        elif m > predicted and achieved[1] < LOW_EFFICIENCY * achieved[0]:
            low = (
                f"the two-array kernel streams only {format_si(achieved[1], 'B/s')} against "
                f"{format_si(achieved[0], 'B/s')} for one array"
            )
        return first_reason(
            cache_note(bytes_two, cache_bytes) if m < predicted and in_main_memory else "",
            low,
            noise({"one-array": one, "two-array": two}),
        )

    details = {
        "elements": n,
        "itemsize": s,
        "flops": flops,
        "bytes": {"one_array": bytes_one, "two_arrays": bytes_two},
        "model_bytes": {"one_array": moved[0], "two_arrays": moved[1]},
        "intensity": {"one_array": flops / bytes_one, "two_arrays": flops / bytes_two},
        "bound": {"one_array": bounds[0], "two_arrays": bounds[1]},
        "predicted_seconds": {"one_array": t_one, "two_arrays": t_two},
        "seconds": {"one_array": time_json(one), "two_arrays": time_json(two)},
        "achieved_bandwidth": {"one_array": achieved[0], "two_arrays": achieved[1]},
        "median_ratio": two.per_call.median / one.per_call.median,
        "cache_bytes": cache_bytes,
    }
    return record(
        "doubled_traffic",
        prediction,
        measured,
        ratio_note("sum(w·x)", "sum(2·x)"),
        reason,
        details,
        model=km,
        why=why,
        budgets=budgets,
    )

