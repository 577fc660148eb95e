"""Statistics of samples (no jax): a timing's statistics, a call's own time and the judgement
of a timing's stability.

Every quantile in roofline-report is :func:`roofline_report.quantiles.quantile`: linear
interpolation between order statistics (numpy's default, Hyndman & Fan type 7). A
:class:`Stats` derives everything from its samples, as pytest-benchmark's ``Stats`` does, so
results.json keeps only the samples and a saved run's statistics are recomputed the same way
when it is rendered.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from roofline_report.errors import InputError
from roofline_report.quantiles import median, quantile
from roofline_report.results import schema

__all__ = ["MIN_STABLE_SAMPLES", "OWN_QUANTILE", "UNSTABLE_SPREAD", "Stats", "Timing",
           "error_summary", "median", "own_time", "quantile", "quartiles"]

# The quantile of its samples that is a call's own time, a program's and a kernel's alike
# (:func:`own_time`).
OWN_QUANTILE = 0.25
# Stats.unstable: spread (IQR / median) above this, or fewer samples than MIN_STABLE_SAMPLES.
UNSTABLE_SPREAD = 0.10
MIN_STABLE_SAMPLES = 5


@dataclass(frozen=True, slots=True)
class Stats:
    """Statistics of per-call times in seconds (positive, finite; at least one).

    Quartiles use linear interpolation (numpy's default). ``outliers`` counts samples outside
    [q1 - 1.5 iqr, q3 + 1.5 iqr]. ``spread`` = iqr / median. The result is ``unstable`` when
    spread > UNSTABLE_SPREAD (0.10) or there are fewer than MIN_STABLE_SAMPLES (5) samples.

    Raises ValueError for an empty sequence or a non-positive or non-finite time.
    """

    samples: Sequence[float]
    _sorted: tuple[float, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        values = tuple(map(float, self.samples))
        if not values:
            raise ValueError("Stats needs at least one sample")
        # Checked and sorted by numpy: a long trace's calls are 150,000 samples and more.
        array = np.fromiter(values, dtype=np.float64, count=len(values))
        if not (np.isfinite(array).all() and (array > 0).all()):
            raise ValueError(f"per-call times must be positive and finite, got {values!r}")
        object.__setattr__(self, "samples", values)
        object.__setattr__(self, "_sorted", tuple(np.sort(array).tolist()))

    @property
    def n(self) -> int:
        return len(self._sorted)

    @property
    def min(self) -> float:
        return self._sorted[0]

    @property
    def max(self) -> float:
        return self._sorted[-1]

    @property
    def median(self) -> float:
        return quantile(self._sorted, 0.5)

    @property
    def q1(self) -> float:
        return quantile(self._sorted, 0.25)

    @property
    def q3(self) -> float:
        return quantile(self._sorted, 0.75)

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def mean(self) -> float:
        return math.fsum(self._sorted) / self.n

    @property
    def outliers(self) -> int:
        low, high = self.q1 - 1.5 * self.iqr, self.q3 + 1.5 * self.iqr
        return sum(1 for v in self._sorted if v < low or v > high)

    @property
    def own(self) -> float:
        """The time a call costs the program itself: :func:`own_time` of the samples."""
        return quantile(self._sorted, OWN_QUANTILE)

    @property
    def spread(self) -> float:
        return self.iqr / self.median

    @property
    def unstable(self) -> bool:
        return self.spread > UNSTABLE_SPREAD or self.n < MIN_STABLE_SAMPLES

@dataclass(frozen=True, slots=True)
class Timing:
    """A measurement: per-call statistics and how they were taken.

    ``min_sample_s`` is the minimum sample duration calibration aimed at (the larger of the
    requested one and RESOLUTION_MULTIPLE timer ticks); ``inner_reps`` the calls per sample.
    """

    per_call: Stats
    inner_reps: int
    resolution_s: float
    min_sample_s: float
    method: str
    # Minor page faults the process took per call while the samples ran (the operating
    # system mapping fresh pages: the allocator serving a call's outputs anew); None where
    # they were not counted.
    page_faults: float | None = None

    @property
    def samples(self) -> int:
        return self.per_call.n

    @property
    def seconds(self) -> float:
        """The headline per-call time: :attr:`Stats.own`, the first quartile (the same rule as
        every program and kernel time the report, ``compare``, the gate and the API show)."""
        return self.per_call.own

    def to_json(self) -> dict[str, Any]:
        """The record results.json keeps: the samples in the order they were taken and how they
        were taken; no statistic (they are derived when the run is rendered)."""
        return {
            "per_call_s": list(self.per_call.samples),
            "inner_reps": self.inner_reps,
            "resolution_s": self.resolution_s,
            "min_sample_s": self.min_sample_s,
            "method": self.method,
            **({"page_faults_per_call": self.page_faults} if self.page_faults is not None
               else {}),
        }

    @classmethod
    def of(cls, record: schema.Timing) -> Timing:
        """Rebuild from a validated timing record of results.json."""
        faults = record.page_faults_per_call
        return cls(Stats(record.per_call_s), record.inner_reps, float(record.resolution_s),
                   float(record.min_sample_s), record.method,
                   None if faults is None else float(faults))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Timing:
        """Rebuild from a timing record of results.json (version 3: ``per_call_s``). Raises
        InputError when the record is malformed."""
        try:
            raw = data["per_call_s"]
            if not isinstance(raw, list) or not all(
                isinstance(v, int | float) and not isinstance(v, bool) for v in raw
            ):
                raise ValueError("per_call_s must be a list of numbers")
            per_call = Stats(raw)
            inner = data["inner_reps"]
            if isinstance(inner, bool) or not isinstance(inner, int) or inner < 1:
                raise ValueError(f"inner_reps must be a positive integer, got {inner!r}")
            resolution, min_sample = float(data["resolution_s"]), float(data["min_sample_s"])
            if not (math.isfinite(resolution) and math.isfinite(min_sample)):
                raise ValueError("resolution_s and min_sample_s must be finite")
            method = data["method"]
            if not isinstance(method, str):
                raise ValueError("method must be a string")
            faults = data.get("page_faults_per_call")
            if faults is not None and (isinstance(faults, bool)
                                       or not isinstance(faults, int | float)
                                       or not math.isfinite(faults) or faults < 0):
                raise ValueError(f"page_faults_per_call must be a number of at least 0, got "
                                 f"{faults!r}")
            return cls(per_call, inner, resolution, min_sample, method,
                       None if faults is None else float(faults))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"timing record is malformed: {_one_line(exc)}") from exc


def error_summary(errors: Sequence[float]) -> tuple[float | None, float | None]:
    """(median, 90th percentile) of errors by :func:`quantile`; (None, None) for none."""
    if not errors:
        return None, None
    ordered = sorted(errors)
    return quantile(ordered, 0.5), quantile(ordered, 0.9)


def own_time(values: Sequence[float]) -> float:
    """A call's own time from at least one sample of it: their first quartile
    (:data:`OWN_QUANTILE`). On a shared machine other work only lengthens a call, never
    shortens it (the reason Python's ``timeit`` documentation prefers the fastest repetition,
    and Chen and Revels, "Robust benchmarking in noisy environments", 2016, the minimum); the
    first quartile keeps that while no single lucky sample sets it. The one rule for a
    program's time (:attr:`Stats.own`) and a kernel's
    (:func:`roofline_report.analysis.kernels.kernel_time`, where waiting for a worker thread
    also only lengthens a call), the measured side of the comparison with predictions, whose
    ceilings keep their fastest round."""
    return quantile(sorted(values), OWN_QUANTILE)


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """(Q1, median, Q3) of at least one value, by :func:`quantile`."""
    ordered = sorted(values)
    return quantile(ordered, 0.25), quantile(ordered, 0.5), quantile(ordered, 0.75)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if text else type(exc).__name__
