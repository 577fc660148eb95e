"""How the machine ceilings take and state their figures: the rate of the fastest sample (a
ceiling is what the device reaches), the rounds the final timings are split into, byte units and
the reasons a measurement gives when it fails.
"""

from __future__ import annotations

from collections.abc import Callable

from roofline_report.analysis.stats import Timing
from roofline_report.errors import reason
from roofline_report.observe import timer as timing

Progress = Callable[[str], None]
Again = list[Callable[[], None]]  # timings to take once more, after the other ceilings

MiB = 1 << 20
GiB = 1 << 30
_REASON_CHARS = 200

ROUNDS = 2  # rounds of the compute and stream ceilings' final timings


def round_samples(samples: int) -> int:
    """Samples of one round of a final timing: a plan's ``samples`` split between rounds."""
    return max(timing.MIN_BUDGET_SAMPLES, -(-samples // ROUNDS))


def fastest_rate(work: float, measured: Timing) -> float:
    """Work per second of the fastest sample: a ceiling is what the device reaches, and noise
    from other processes only ever slows it. The median and spread stay in the timing record."""
    return work / measured.per_call.min


def failure_reason(exc: BaseException) -> str:
    return reason(exc, _REASON_CHARS)


def join_notes(*parts: str) -> str:
    return "; ".join(p for p in parts if p)
