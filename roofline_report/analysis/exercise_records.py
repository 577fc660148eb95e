"""The answers of the lab's exercises (no jax): one frozen record per exercise, every number
the seed model computed for its solution (:mod:`roofline_report.analysis.experiments.exercises`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "Answer",
    "BatchingAnswer",
    "Bf16Answer",
    "DispatchAnswer",
    "DoubledAnswer",
    "DtypeRow",
    "FusionAnswer",
    "ScanAnswer",
    "StreamRow",
]


@dataclass(frozen=True, slots=True)
class StreamRow:
    """One reduction of the doubled-traffic exercise: its traffic (bytes), intensity
    (FLOP/byte), attainable rate (FLOP/s) and predicted time (seconds)."""

    bytes: int
    intensity: float
    attainable: float
    seconds: float


@dataclass(frozen=True, slots=True)
class DoubledAnswer:
    flops: int
    one_array: StreamRow
    two_arrays: StreamRow
    time_ratio: float


@dataclass(frozen=True, slots=True)
class FusionAnswer:
    flops: int
    fused_bytes: int
    unfused_bytes: int
    intensity_fused: float
    fused_seconds: float
    unfused_seconds: float
    time_ratio: float


@dataclass(frozen=True, slots=True)
class DtypeRow:
    """The seed's contract in one dtype: its work, minimum traffic, intensity, attainable rate
    and what bounds it ("memory" or "compute")."""

    flops: int
    minimum_bytes: int
    intensity: float
    attainable: float
    bound: str


@dataclass(frozen=True, slots=True)
class Bf16Answer:
    float32: DtypeRow
    bfloat16: DtypeRow


@dataclass(frozen=True, slots=True)
class BatchingAnswer:
    """The batch b* at the ridge (None where no batch reaches it), the first whole batch at it
    and the intensities either side; the measured ones only where this machine's ceilings
    give them."""

    d: int
    ridge: float
    b_star: float | None
    first_batch_at_ridge: int | None
    intensity_at_first: float | None
    intensity_below_first: float | None
    measured_ridge: float | None
    measured_b_star: float | None


@dataclass(frozen=True, slots=True)
class DispatchAnswer:
    dispatch_s: float
    bandwidth: float
    bytes_per_element: int
    n_star: float
    traffic_seconds_at_n_star: float
    measured_n_star: float | None  # only where this machine's dispatch floor was measured


@dataclass(frozen=True, slots=True)
class ScanAnswer:
    body_flops: int
    our_flops: int
    xla_flops: int
    ratio: float
    our_seconds: float
    xla_seconds: float


Answer = DoubledAnswer | FusionAnswer | Bf16Answer | BatchingAnswer | DispatchAnswer | ScanAnswer
