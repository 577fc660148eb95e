"""The timing harness used by every measurement, and the statistics of its samples.

Concepts:

* A *workload runner* ``run(n)`` executes the workload ``n`` times back to back and blocks once at
  the end. On asynchronous backends (GPUs, and jax's CPU client) this matters: blocking after every
  call adds the round trip to each call and under-reports a GPU by 20-35%.
* A *sample* is one timed ``run(n)``; its duration divided by ``n`` is one per-call time. The inner
  count ``n`` is calibrated by doubling until one sample lasts at least ``min_sample_seconds`` and
  :data:`RESOLUTION_MULTIPLE` ticks of the timer.
* :class:`Stats` summarises the per-call times (median, quartiles, IQR, 1.5 IQR outliers) and flags
  unstable results instead of printing a confident number; :class:`Timing` adds how it was taken.

The clock is injectable (``timer=``) so the harness can be tested on a synthetic clock. The
module imports jax only when :func:`block` (and so :func:`time_jitted`) is called.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from roofline_report.errors import InputError

Timer = Callable[[], float]
Runner = Callable[[int], object]

# Full mode: enough samples for quartiles that mean something, each well above timer noise.
DEFAULT_SAMPLES = 15
DEFAULT_MIN_SAMPLE_SECONDS = 0.03
# Quick mode: a rough figure in a fraction of the time.
QUICK_SAMPLES = 5
QUICK_MIN_SAMPLE_SECONDS = 0.005
# Time a freshly compiled program runs untimed before its samples: on the 2-core CPU a new
# 256^3 matmul executable ran its first ~80 ms of calls at 350 us and then at 200 us.
PROGRAM_WARMUP_SECONDS = 0.1
QUICK_PROGRAM_WARMUP_SECONDS = 0.02
# Upper bound on the calibrated inner count (a 1 us call reaches 0.03 s at 32768).
DEFAULT_MAX_INNER = 1 << 16
# A sample must also last this many timer ticks, whatever min_sample_seconds says.
RESOLUTION_MULTIPLE = 1000
# Stats.unstable: spread (IQR / median) above this, or fewer samples than MIN_STABLE_SAMPLES.
UNSTABLE_SPREAD = 0.10
MIN_STABLE_SAMPLES = 5
# With a time budget, at least this many samples are taken.
MIN_BUDGET_SAMPLES = 3


def _quantile(ordered: Sequence[float], p: float) -> float:
    """Quantile of sorted data by linear interpolation between order statistics.

    This is numpy's default method ('linear', Hyndman & Fan type 7): position h = (n - 1) p.
    """
    h = (len(ordered) - 1) * p
    lo = math.floor(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


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
        values = tuple(float(v) for v in self.samples)
        if not values:
            raise ValueError("Stats needs at least one sample")
        if not all(math.isfinite(v) and v > 0 for v in values):
            raise ValueError(f"per-call times must be positive and finite, got {values!r}")
        object.__setattr__(self, "samples", values)
        object.__setattr__(self, "_sorted", tuple(sorted(values)))

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
        return _quantile(self._sorted, 0.5)

    @property
    def q1(self) -> float:
        return _quantile(self._sorted, 0.25)

    @property
    def q3(self) -> float:
        return _quantile(self._sorted, 0.75)

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
    def spread(self) -> float:
        return self.iqr / self.median

    @property
    def unstable(self) -> bool:
        return self.spread > UNSTABLE_SPREAD or self.n < MIN_STABLE_SAMPLES

    def to_json(self) -> dict[str, Any]:
        """Plain JSON: the derived figures, then the samples in the order they were taken."""
        return {
            "n": self.n,
            "min": self.min,
            "max": self.max,
            "median": self.median,
            "q1": self.q1,
            "q3": self.q3,
            "iqr": self.iqr,
            "mean": self.mean,
            "outliers": self.outliers,
            "spread": self.spread,
            "unstable": self.unstable,
            "samples": list(self.samples),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Stats:
        """Rebuild from ``to_json`` output (only ``samples`` is read; the rest is derived).

        Raises InputError when the record is malformed.
        """
        try:
            raw = data["samples"]
            if not isinstance(raw, list) or not all(
                isinstance(v, int | float) and not isinstance(v, bool) for v in raw
            ):
                raise ValueError("samples must be a list of numbers")
            return cls(raw)
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"timing statistics record is malformed: {_one_line(exc)}") from exc


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

    @property
    def samples(self) -> int:
        return self.per_call.n

    @property
    def seconds(self) -> float:
        """The headline per-call time: the median."""
        return self.per_call.median

    def to_json(self) -> dict[str, Any]:
        return {
            "per_call": self.per_call.to_json(),
            "inner_reps": self.inner_reps,
            "samples": self.samples,
            "resolution_s": self.resolution_s,
            "min_sample_s": self.min_sample_s,
            "method": self.method,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Timing:
        """Rebuild from ``to_json`` output. Raises InputError when the record is malformed."""
        try:
            per_call = Stats.from_json(data["per_call"])
            inner = data["inner_reps"]
            if isinstance(inner, bool) or not isinstance(inner, int) or inner < 1:
                raise ValueError(f"inner_reps must be a positive integer, got {inner!r}")
            if data["samples"] != per_call.n:
                raise ValueError(f"samples is {data['samples']!r} but per_call holds {per_call.n}")
            resolution, min_sample = float(data["resolution_s"]), float(data["min_sample_s"])
            if not (math.isfinite(resolution) and math.isfinite(min_sample)):
                raise ValueError("resolution_s and min_sample_s must be finite")
            method = data["method"]
            if not isinstance(method, str):
                raise ValueError("method must be a string")
            return cls(per_call, inner, resolution, min_sample, method)
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"timing record is malformed: {_one_line(exc)}") from exc


def timer_resolution(timer: Timer = time.perf_counter, reads: int = 10_000) -> float:
    """Smallest positive difference between successive reads of ``timer``.

    Falls back to the resolution perf_counter declares if no two reads differ.
    """
    best = math.inf
    previous = timer()
    for _ in range(reads):
        now = timer()
        if previous < now < previous + best:
            best = now - previous
        previous = now
    if math.isfinite(best):
        return best
    return float(time.get_clock_info("perf_counter").resolution)


def measure(
    run: Runner,
    *,
    samples: int,
    min_sample_seconds: float,
    max_inner: int = DEFAULT_MAX_INNER,
    timer: Timer = time.perf_counter,
    warmup: int = 1,
    budget_seconds: float | None = None,
    method: str = "enqueued calls, one block per sample",
    warmup_seconds: float = 0.0,
) -> Timing:
    """Time ``run`` and return per-call statistics.

    ``run(n)`` must execute the workload n times and block once at the end. Steps: ``warmup``
    untimed ``run(1)`` calls; calibration of n by doubling from 1 until one ``run(n)`` lasts at
    least max(min_sample_seconds, RESOLUTION_MULTIPLE timer ticks) or n reaches ``max_inner``;
    untimed ``run(n)`` until ``warmup_seconds`` have passed since the calibration began; then
    ``samples`` timed ``run(n)``, each divided by n. With ``budget_seconds``, sampling stops
    once that much time has been spent on samples (but after at least MIN_BUDGET_SAMPLES).
    A sample shorter than one timer tick is recorded as one tick.

    Raises InputError for invalid settings; exceptions from ``run`` propagate.
    """
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise InputError(f"samples must be a positive integer, got {samples!r}")
    if not (math.isfinite(min_sample_seconds) and min_sample_seconds > 0):
        raise InputError(f"min_sample_seconds must be positive, got {min_sample_seconds!r}")
    if isinstance(max_inner, bool) or not isinstance(max_inner, int) or max_inner < 1:
        raise InputError(f"max_inner must be a positive integer, got {max_inner!r}")
    if warmup < 0:
        raise InputError(f"warmup must be zero or more, got {warmup!r}")

    resolution = timer_resolution(timer)
    target = max(min_sample_seconds, RESOLUTION_MULTIPLE * resolution)

    for _ in range(warmup):
        run(1)

    inner = 1
    calibration_started = timer()
    while True:
        start = timer()
        run(inner)
        elapsed = timer() - start
        if elapsed >= target or inner >= max_inner:
            break
        inner = min(2 * inner, max_inner)
    while timer() - calibration_started < warmup_seconds:
        run(inner)

    per_call: list[float] = []
    sampling_started = timer()
    for _ in range(samples):
        start = timer()
        run(inner)
        elapsed = timer() - start
        per_call.append(max(elapsed, resolution) / inner)
        if (
            budget_seconds is not None
            and len(per_call) >= MIN_BUDGET_SAMPLES
            and timer() - sampling_started > budget_seconds
        ):
            break
    return Timing(Stats(per_call), inner, resolution, target, method)


def time_jitted(
    compiled: Any,
    args: Sequence[Any],
    *,
    quick: bool,
    timer: Timer = time.perf_counter,
    samples: int | None = None,
    min_sample_seconds: float | None = None,
    budget_seconds: float | None = None,
    keep_outputs: bool = False,
    warmup_seconds: float = 0.0,
) -> Timing:
    """Time a compiled jax executable (``jax.stages.Compiled``) called with ``args``.

    Each sample enqueues n calls and blocks once with ``jax.block_until_ready`` on the last
    output: a device runs its calls in order, so that waits for all of them. Earlier outputs are
    dropped as the loop goes on, so the allocator can reuse their memory as a real loop would;
    holding all n (``keep_outputs=True``, which waits on every one) makes each call take fresh
    pages, about 20% slower for a 1024^2 matmul on the 2-core CPU. Defaults: QUICK_* constants
    when ``quick``, DEFAULT_* otherwise; ``budget_seconds`` as in :func:`measure`. Exceptions
    from the executable propagate.
    """
    n_samples = samples if samples is not None else (QUICK_SAMPLES if quick else DEFAULT_SAMPLES)
    min_seconds = min_sample_seconds
    if min_seconds is None:
        min_seconds = QUICK_MIN_SAMPLE_SECONDS if quick else DEFAULT_MIN_SAMPLE_SECONDS
    block(compiled(*args))  # a first call before the harness's own warm-up

    def run(n: int) -> None:
        if keep_outputs:
            block([compiled(*args) for _ in range(n)])
            return
        out = None
        for _ in range(n):
            out = compiled(*args)
        block(out)

    return measure(
        run,
        samples=n_samples,
        min_sample_seconds=min_seconds,
        timer=timer,
        budget_seconds=budget_seconds,
        warmup_seconds=warmup_seconds,
        method="jax: n enqueued calls, block_until_ready "
        + ("on all outputs" if keep_outputs else "on the last")
        + " once per sample",
    )


def geometric(first: int, last: int, factor: int) -> tuple[int, ...]:
    """first, first·factor, first·factor², ... up to ``last`` (inclusive): the sizes of a
    measurement sweep."""
    out = []
    value = first
    while value <= last:
        out.append(value)
        value *= factor
    return tuple(out)


def block(tree: Any) -> Any:
    """``jax.block_until_ready`` on every array in ``tree``; returns ``tree``."""
    import jax

    return jax.block_until_ready(tree)  # type: ignore[no-untyped-call]


def measure_compile(jitted_fn: Any, args: Sequence[Any]) -> tuple[Any, Any, float, float]:
    """Lower and compile ``jitted_fn`` for ``args``, timing each step apart.

    Returns (lowered, compiled, lower_seconds, compile_seconds). Exceptions propagate.
    """
    start = time.perf_counter()
    lowered = jitted_fn.lower(*args)
    lowered_at = time.perf_counter()
    compiled = lowered.compile()
    done = time.perf_counter()
    return lowered, compiled, lowered_at - start, done - lowered_at


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if text else type(exc).__name__
