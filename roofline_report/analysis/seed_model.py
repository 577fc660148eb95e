"""The seed's roofline model, without jax: the minimum-traffic contract of a matmul, the ridge,
the attainable rate and the single-roof time bound the seed's hypothetical sections teach.

The ridge, the roof at an intensity and the single-roof bound are
:mod:`roofline_report.roofline`'s, under the names the seed uses. The functions here are pure
and fully determined by their arguments, so the report can be
re-rendered from ``results.json`` and the model can be tested with hand-computed values.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from roofline_report.results.schema_run import DEFAULT_INTERCONNECT, SEED_BANDWIDTH, SEED_PEAK_FLOPS
from roofline_report.roofline import attainable, bound_at, ridge, single_roof_seconds

__all__ = ["DEFAULT_INTERCONNECT", "SEED_BANDWIDTH", "SEED_PEAK_FLOPS", "SEED_SIZES",
           "Contract", "attainable", "attainable_series", "bound_by", "contract",
           "predicted_seconds", "ridge", "square_intensity"]


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    as_int = int(value)
    if as_int <= 0:
        raise ValueError("positive dimensions and itemsize required")
    return as_int


@dataclass(frozen=True, slots=True)
class Contract:
    """Work and minimum traffic of C[m,n] = A[m,k] @ B[k,n] (the seed's matmul-only accounting)."""

    m: int
    k: int
    n: int
    itemsize: int
    flops: int
    minimum_bytes: int

    @property
    def intensity(self) -> float:
        """FLOP per byte of minimum traffic."""
        return self.flops / self.minimum_bytes

    def to_json(self) -> dict[str, Any]:
        return {
            "m": self.m,
            "k": self.k,
            "n": self.n,
            "itemsize": self.itemsize,
            "flops": self.flops,
            "minimum_bytes": self.minimum_bytes,
            "intensity": self.intensity,
        }


def contract(m: int, k: int, n: int, itemsize: int = 4) -> Contract:
    """The seed's contract: flops 2mkn (multiply-add, excluding any epilogue such as tanh),
    minimum bytes itemsize*(mk+kn+mn): each operand read once, the result written once.

    Raises ValueError for non-positive or non-integer arguments.
    """
    m_, k_, n_, s_ = (
        _positive_int("m", m),
        _positive_int("k", k),
        _positive_int("n", n),
        _positive_int("itemsize", itemsize),
    )
    return Contract(m_, k_, n_, s_, 2 * m_ * k_ * n_, s_ * (m_ * k_ + k_ * n_ + m_ * n_))


def square_intensity(n: int, itemsize: int = 4) -> float:
    """Closed form of the square matmul's intensity: 2n^3 / (3 s n^2) = 2n / (3s)."""
    return 2 * n / (3 * itemsize)


def attainable_series(
    intensities: Sequence[float], peak_flops: float, bandwidth: float
) -> list[float]:
    return [attainable(x, peak_flops, bandwidth) for x in intensities]


def bound_by(intensity: float, peak_flops: float, bandwidth: float) -> str:
    """Which ceiling binds at this intensity: 'memory' below the ridge, 'compute' at or above."""
    return bound_at(intensity, ridge(peak_flops, bandwidth))


def predicted_seconds(
    flops: float,
    traffic_bytes: float,
    peak_flops: float,
    bandwidth: float,
    dispatch_seconds: float = 0.0,
) -> float:
    """Lower-bound time: max(work / peak, traffic / bandwidth, dispatch floor)."""
    return single_roof_seconds(flops, traffic_bytes, peak_flops, bandwidth, dispatch_seconds)


SEED_SIZES = (8, 16, 32, 64, 128)
