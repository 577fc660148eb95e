"""The exercises (no jax): one after each group of the lab's experiments.

:func:`exercises` poses each question on the hypothetical budgets and computes every number of
its solution with :mod:`roofline_report.analysis.seed_model` (and this machine's figure where the
measured ceilings hold one). Everything returned is deterministic: typed records, each answer
the numbers its solution states (:mod:`roofline_report.analysis.exercise_records`).
"""

from __future__ import annotations

import math
from dataclasses import replace

from roofline_report.analysis import seed_model as model
from roofline_report.analysis import words
from roofline_report.analysis.exercise_records import (
    BatchingAnswer,
    Bf16Answer,
    DispatchAnswer,
    DoubledAnswer,
    DtypeRow,
    FusionAnswer,
    ScanAnswer,
    StreamRow,
)
from roofline_report.analysis.experiments.batching import batch_ridge
from roofline_report.analysis.experiments.common import BF16, F32
from roofline_report.analysis.experiments.dispatch import dispatch_size
from roofline_report.analysis.experiments.fusion import fusion_traffic
from roofline_report.analysis.experiments.single_roof import (
    HYPOTHETICAL_DISPATCH_S,
    Budgets,
    MeasuredCeilings,
    budgets,
)
from roofline_report.analysis.experiments.verdicts import number
from roofline_report.analysis.records import Exercise
from roofline_report.kinds import Kind
from roofline_report.text import decimal
from roofline_report.units import format_si

# The exercises' inputs (sizes and the budgets they assume); every answer is computed.
EX_STREAM_ELEMENTS = 1 << 24
EX_FUSION_SHAPE = (2048, 4, 2048)
EX_SEED_SHAPE = (48, 24, 12)
EX_BATCH_D = 1024
EX_SCAN_SIZE, EX_SCAN_STEPS = 256, 10


def exercises(
    *, peak: float, bandwidth: float, ceilings: MeasuredCeilings | None
) -> list[Exercise]:
    """One exercise after each group of experiments, every number computed by the model.

    ``peak``/``bandwidth`` are the hypothetical budgets the questions assume; when this
    machine's measured ``ceilings`` hold a peak and a bandwidth (or a dispatch floor), answers
    that depend on the machine also give this machine's figure.
    Returns one :class:`~roofline_report.analysis.records.Exercise` each, its ``answer`` the
    numbers its solution states.
    Raises InputError for non-positive budgets.
    """
    b = budgets(None, peak=peak, bandwidth=bandwidth)
    measured = budgets(ceilings, peak=peak, bandwidth=bandwidth)
    has_measured = measured.kind is Kind.MEASURED
    return [
        _ex_doubled(b),
        _ex_fusion(b),
        _ex_bf16(b),
        _ex_batching(b, measured if has_measured else None),
        _ex_dispatch(b, measured if measured.dispatch_kind is Kind.MEASURED else None),
        _ex_scan(b),
    ]


def _gflops(x: float) -> str:
    return format_si(x, "FLOP/s")


def _ex_doubled(b: Budgets) -> Exercise:
    n = EX_STREAM_ELEMENTS
    flops = 2 * n
    one, two = (_stream_row(flops, arrays * F32 * n, b) for arrays in (1, 2))
    ratio = two.seconds / one.seconds
    xs = [one.intensity, two.intensity]
    ridge = model.ridge(b.peak, b.bandwidth)
    return Exercise(
        id="ex_doubled_traffic",
        after="doubled_traffic",
        question=(
            f"sum(2·x) and sum(w·x) on n = {n} float32 elements both do 2n flops; the first reads "
            f"one array, the second two. Under {_gflops(b.peak)} and "
            f"{format_si(b.bandwidth, 'B/s')}, what are their intensities, attainable rates and "
            f"times, and the time ratio?"
        ),
        solution=(
            f"work: 2n = {flops} flops for both",
            f"traffic: {one.bytes} B for one array, {two.bytes} B for two",
            f"intensity: {decimal(one.intensity, 3)} and "
            f"{decimal(two.intensity, 3)} FLOP/B, "
            f"{words.sides(xs, ridge)} {decimal(ridge, 3)} FLOP/B: {words.bounds_text(xs, ridge)}",
            f"attainable: {_gflops(one.attainable)} and {_gflops(two.attainable)}",
            f"times: {format_si(one.seconds, 's')} and "
            f"{format_si(two.seconds, 's')}, ratio {decimal(ratio, 3)}",
        ),
        answer=DoubledAnswer(flops, one, two, ratio),
    )


def _stream_row(flops: int, traffic: int, assumed: Budgets) -> StreamRow:
    intensity = flops / traffic
    return StreamRow(traffic, intensity,
                     model.attainable(intensity, assumed.peak, assumed.bandwidth),
                     model.predicted_seconds(flops, traffic, assumed.peak, assumed.bandwidth))


def _ex_fusion(b: Budgets) -> Exercise:
    m, k, n = EX_FUSION_SHAPE
    t = fusion_traffic(m, k, n, F32)
    seconds = {
        key: model.predicted_seconds(t["flops"], t[key], b.peak, b.bandwidth)
        for key in ("fused", "unfused")
    }
    ratio = seconds["unfused"] / seconds["fused"]
    fused_x = t["flops"] / t["fused"]
    unfused_x = t["flops"] / t["unfused"]
    ridge = model.ridge(b.peak, b.bandwidth)
    return Exercise(
        id="ex_fusion",
        after="fusion",
        question=(
            f"tanh(a@b) with a ({m},{k}) and b ({k},{n}) in float32: what is the minimum traffic "
            f"when the tanh is fused into the matmul, and when the ({m},{n}) product goes "
            f"through memory? What time ratio do {_gflops(b.peak)} and "
            f"{format_si(b.bandwidth, 'B/s')} predict?"
        ),
        solution=(
            f"work: 2mkn = {t['flops']} flops (the tanh is counted apart)",
            f"fused: 4(mk + kn + mn) = {t['fused']} B",
            f"unfused: add the product written and read back, 2 × 4mn = "
            f"{2 * t['intermediate']} B, for {t['unfused']} B",
            f"intensity: {decimal(fused_x, 3)} FLOP/B fused and {decimal(unfused_x, 3)} FLOP/B "
            "unfused, "
            f"{words.sides([fused_x, unfused_x], ridge)} {decimal(ridge, 3)} FLOP/B: "
            f"{words.bounds_text([fused_x, unfused_x], ridge)}"
            + (", so time follows traffic"
               if words.bound(unfused_x, ridge) == words.bound(fused_x, ridge) == "memory"
               else ""),
            f"times: {format_si(seconds['fused'], 's')} and {format_si(seconds['unfused'], 's')}"
            f", ratio {decimal(ratio, 3)}",
        ),
        answer=FusionAnswer(t["flops"], t["fused"], t["unfused"], fused_x, seconds["fused"],
                            seconds["unfused"], ratio),
    )


def _ex_bf16(b: Budgets) -> Exercise:
    m, k, n = EX_SEED_SHAPE
    f, h = (_dtype_row(model.contract(m, k, n, itemsize), b) for itemsize in (F32, BF16))
    return Exercise(
        id="ex_bf16",
        after="bf16_compute",
        question=(
            f"The seed's exercise, ({m},{k})×({k},{n}), in bfloat16: what are its minimum "
            f"traffic, intensity and attainable rate under {_gflops(b.peak)} and "
            f"{format_si(b.bandwidth, 'B/s')}, against float32?"
        ),
        solution=(
            f"work is unchanged: 2mkn = {h.flops} flops",
            f"traffic halves: 2(mk + kn + mn) = {h.minimum_bytes} B (float32: "
            f"{f.minimum_bytes} B)",
            f"intensity doubles: {decimal(h.intensity, 4)} FLOP/B (float32: "
            f"{decimal(f.intensity, 4)})",
            f"against the ridge {decimal(model.ridge(b.peak, b.bandwidth), 3)} FLOP/B: bfloat16 is "
            f"{h.bound}-bound at {_gflops(h.attainable)}; float32 is {f.bound}-bound at "
            f"{_gflops(f.attainable)}",
        ),
        answer=Bf16Answer(float32=f, bfloat16=h),
    )


def _dtype_row(contract: model.Contract, assumed: Budgets) -> DtypeRow:
    intensity = contract.intensity
    return DtypeRow(contract.flops, contract.minimum_bytes, intensity,
                    model.attainable(intensity, assumed.peak, assumed.bandwidth),
                    model.bound_by(intensity, assumed.peak, assumed.bandwidth))


def _ex_batching(b: Budgets, measured: Budgets | None) -> Exercise:
    d = EX_BATCH_D
    ridge = model.ridge(b.peak, b.bandwidth)
    b_star = batch_ridge(d, ridge, F32)
    first = None if b_star is None else math.ceil(b_star)
    below = None if first is None or first <= 1 else model.contract(d, d, first - 1, F32)
    at = None if first is None else model.contract(d, d, first, F32)
    answer = BatchingAnswer(
        d=d, ridge=ridge, b_star=b_star, first_batch_at_ridge=first,
        intensity_at_first=None if at is None else at.intensity,
        intensity_below_first=None if below is None else below.intensity,
        measured_ridge=None, measured_b_star=None)
    steps = [
        f"intensity of W[{d},{d}] @ X[{d},b]: 2d²b / (4(d² + 2db)) (the contract with m = k = "
        f"{d}, n = b)",
        f"ridge: {_gflops(b.peak)} ÷ {format_si(b.bandwidth, 'B/s')} = {decimal(ridge, 3)} FLOP/B",
        "solve 2d²b = 4R(d² + 2db): b* = 4Rd / (2(d − 4R)) = 2Rd / (d − 4R)",
    ]
    if b_star is not None and at is not None:
        steps.append(f"b* = {decimal(b_star, 4)}: the first whole batch at the ridge is b = {at.n}")
        steps.append(
            f"check: intensity {decimal(at.intensity, 4)} FLOP/B at b = {at.n}"
            + ("" if below is None else f", {decimal(below.intensity, 4)} at b = {below.n}")
        )
    else:
        steps.append(f"d/4 = {decimal(d / 4, 6)} FLOP/B is under the ridge: no batch reaches it")
    if measured is not None:
        m_ridge = model.ridge(measured.peak, measured.bandwidth)
        answer = replace(answer, measured_ridge=m_ridge,
                         measured_b_star=batch_ridge(d, m_ridge, F32))
        steps.append(
            f"on this machine (measured ridge {decimal(m_ridge, 3)} FLOP/B): b* = "
            + (
                "never reached"
                if answer.measured_b_star is None
                else number(answer.measured_b_star)
            )
        )
    return Exercise(
        id="ex_batching",
        after="batching",
        question=(
            f"At what batch b does W[{d},{d}] @ X[{d},b] in float32 reach the ridge of "
            f"{_gflops(b.peak)} and {format_si(b.bandwidth, 'B/s')}?"
        ),
        solution=tuple(steps),
        answer=answer,
    )


def _ex_dispatch(b: Budgets, measured: Budgets | None) -> Exercise:
    per_element = 2 * F32
    n_star = dispatch_size(HYPOTHETICAL_DISPATCH_S, b.bandwidth, per_element)
    check = model.predicted_seconds(n_star, per_element * n_star, b.peak, b.bandwidth)
    answer = DispatchAnswer(
        dispatch_s=HYPOTHETICAL_DISPATCH_S, bandwidth=b.bandwidth, bytes_per_element=per_element,
        n_star=n_star, traffic_seconds_at_n_star=check, measured_n_star=None)
    steps = [
        f"y = 2·x in float32 reads 4 B and writes 4 B per element: {per_element} B",
        f"traffic time n · {per_element} B ÷ {format_si(b.bandwidth, 'B/s')} equals the "
        f"{format_si(HYPOTHETICAL_DISPATCH_S, 's')} dispatch at n* = dispatch × bandwidth ÷ "
        f"{per_element}",
        f"n* = {number(n_star)} elements ({format_si(per_element * n_star, 'B')} moved)",
        f"check: predicted_seconds at n* = {format_si(check, 's')}",
    ]
    if measured is not None:
        measured_n_star = dispatch_size(measured.dispatch, measured.bandwidth, per_element)
        answer = replace(answer, measured_n_star=measured_n_star)
        steps.append(
            f"on this machine ({format_si(measured.dispatch, 's')}, "
            f"{format_si(measured.bandwidth, 'B/s')}): n* = {number(measured_n_star)}"
        )
    return Exercise(
        id="ex_dispatch",
        after="dispatch",
        question=(
            f"A call costs {format_si(HYPOTHETICAL_DISPATCH_S, 's')} to dispatch and memory "
            f"streams {format_si(b.bandwidth, 'B/s')}: below what size n is y = 2·x in float32 "
            f"dispatch-bound?"
        ),
        solution=tuple(steps),
        answer=answer,
    )


def _ex_scan(b: Budgets) -> Exercise:
    n, steps = EX_SCAN_SIZE, EX_SCAN_STEPS
    body = model.contract(n, n, n, F32)
    ours = steps * body.flops
    xla = body.flops  # XLA costs a loop as one iteration of its body
    t_ours = model.predicted_seconds(ours, body.minimum_bytes, b.peak, b.bandwidth)
    t_xla = model.predicted_seconds(xla, body.minimum_bytes, b.peak, b.bandwidth)
    return Exercise(
        id="ex_scan",
        after="scan",
        question=(
            f"A {steps}-step lax.scan applies tanh(c@x) with c and x ({n},{n}) float32. How many "
            f"flops does it do, how many does XLA's cost analysis report (it costs a loop as one "
            f"iteration), and what times do they predict under {_gflops(b.peak)}?"
        ),
        solution=(
            f"one body: 2n³ = {body.flops} flops (the tanh is counted apart)",
            f"our count: {steps} × {body.flops} = {ours} flops",
            f"XLA's: one iteration, {xla} flops (plus a few for the loop counter)",
            f"predicted times: {format_si(t_ours, 's')} by our count, {format_si(t_xla, 's')} "
            f"by XLA's, a factor {decimal(ours / xla, 3)} apart",
        ),
        answer=ScanAnswer(body.flops, ours, xla, ours / xla, t_ours, t_xla),
    )
