"""Loops fool the compiler's estimate (no jax): a k-step lax.scan of tanh(c@x) against one body.

A loop of k steps costs k body calls, as our count says, not one, as XLA's cost analysis says.
The prediction is the scan's predicted time over one body call's: the per-kernel model's on the
measured roofs when both kernel inventories were recorded (the loop's kernels priced once per
trip, with their launches), else the single-roof model's on our count (k bodies over one
contract's traffic: the carry stays on the device). A failed verdict is explained, in order, by
a measurement nearer XLA's implied ratio (the compiler hoisted or simplified the body), by a body
call within a few dispatch floors (mostly overhead), by the loop's per-step bookkeeping, or by
timing noise.
"""

from __future__ import annotations

import math
from typing import Literal

from roofline_report.analysis import seed_model as model
from roofline_report.analysis.experiments import raw
from roofline_report.analysis.experiments.common import (
    F32,
    NEAR_DISPATCH,
    first_reason,
    noise,
    ratio_note,
    record,
    seconds_of,
    time_json,
)
from roofline_report.analysis.experiments.single_roof import Budgets, weaker
from roofline_report.analysis.experiments.times import kernel_model, single_roof_note
from roofline_report.analysis.records import Experiment
from roofline_report.analysis.roofs import RoofSet
from roofline_report.analysis.stats import Timing
from roofline_report.kinds import Quantity
from roofline_report.results.schema_lab import Scan
from roofline_report.text import decimal
from roofline_report.units import format_si

Part = Literal["body", "scan"]
VARIANTS: tuple[Part, ...] = ("body", "scan")
PARTS: tuple[Part, ...] = ("scan", "body")  # in the order the details list them


def build(recorded: Scan, budgets: Budgets, roofs: RoofSet | None, cache_bytes: int | None
          ) -> Experiment:
    size, steps = recorded.size, recorded.steps
    scan, body = Timing.of(recorded.scan), Timing.of(recorded.body)
    c = model.contract(size, size, size, F32)
    km, why = kernel_model(roofs, raw.programs(recorded.programs, VARIANTS),
                           dict.fromkeys(VARIANTS, "float32"))
    if km is not None:
        t_body, t_scan = km.seconds("body"), km.seconds("scan")
        prediction = Quantity(
            t_scan / t_body,
            "×",
            km.kind,
            f"predicted time of the {steps}-step scan ÷ that of one body call, each loop "
            f"kernel once per trip; {km.note()}",
        )
        floor = km.roofs.dispatch_enqueued or 0.0
        floor_name = "enqueued dispatch floor"
        launch = km.roofs.launch
        launches = km.counts("scan")[1]
        charged = (
            f"; the model charges its {launches} launches at {format_si(launch, 's')} each"
            if launch else ""
        )
    else:
        t_body = budgets.seconds(c.flops, c.minimum_bytes)
        # The carry stays on the device between steps: the scan's minimum traffic is one contract.
        t_scan = budgets.seconds(
            steps * c.flops, c.minimum_bytes)
        prediction = Quantity(
            t_scan / t_body,
            "×",
            weaker(budgets.kind, budgets.dispatch_kind),
            single_roof_note(
                f"predicted_seconds of {steps} bodies ÷ one body, our count ({steps} × "
                f"{c.flops} flops); {budgets.note}",
                why,
            ),
        )
        floor, floor_name, charged = budgets.dispatch, "dispatch floor", ""
    predicted = t_scan / t_body
    measured = seconds_of(scan) / seconds_of(body)
    xla = {part: raw.number("scan", f"xla_flops.{part}", recorded.xla_flops.get(part))
           for part in PARTS}
    ours = {part: raw.number("scan", f"our_flops.{part}", recorded.our_flops.get(part))
            for part in PARTS}
    kernels = {part: recorded.kernels.get(part) for part in PARTS}
    xla_ratio = xla["scan"] / xla["body"] if xla["scan"] is not None and xla["body"] else None

    def reason(m: float) -> str:
        p = predicted
        closer_to_xla = ""
        if (
            xla_ratio is not None
            and xla_ratio > 0
            and abs(math.log(m / xla_ratio)) < abs(math.log(m / p))
        ):
            closer_to_xla = (
                f"the scan ran about as fast as {decimal(m, 2)} body calls, nearer XLA's implied "
                f"{decimal(xla_ratio, 2)}×: the body may have been hoisted or simplified by the "
                "compiler"
            )
        overhead = ""
        if m < p and seconds_of(body) < NEAR_DISPATCH * floor:
            overhead = (
                f"one body call ({format_si(seconds_of(body), 's')}) is within "
                f"{decimal(NEAR_DISPATCH, 6)}× of the {floor_name} ({format_si(floor, 's')}): its "
                f"time is mostly overhead, so the ratio comes out low"
            )
        per_step = ""
        if m > p and kernels["scan"] is not None and kernels["body"]:
            per_step = (
                f"the scan runs {kernels['scan']} kernels "
                f"({decimal(kernels['scan'] / steps, 2)} per "
                f"step) against {kernels['body']} for one body call: the loop's bookkeeping "
                f"(carry copies, the counter) adds work each step{charged}"
            )
        return first_reason(closer_to_xla, overhead, per_step, noise({"scan": scan, "body": body}))

    details = {
        "size": size,
        "steps": steps,
        "body_flops": c.flops,
        "scan_flops": steps * c.flops,
        "xla_flops": xla,
        "our_flops": ours,
        "xla_ratio": xla_ratio,
        "kernels": kernels,
        "predicted_seconds": {"scan": t_scan, "body": t_body},
        "seconds": {"scan": time_json(scan), "body": time_json(body)},
        "median_ratio": scan.per_call.median / body.per_call.median,
    }
    return record(
        "scan",
        prediction,
        measured,
        ratio_note(f"the {steps}-step scan", "one body call"),
        reason,
        details,
        model=km,
        why=why,
        budgets=budgets,
    )
