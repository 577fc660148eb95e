"""The machine's load while the ceilings are measured: read before and after each round, a
round under load taken again within a time budget (no jax).

A reading (:class:`Sample`) holds a monotonic time, the busy time of every core since boot
(``/proc/stat``: user, nice, system, irq, softirq and steal ticks), this process's own CPU time
(``os.times``: user and system, every thread) and the 1-minute load average
(``os.getloadavg``). Between two readings, other processes took the cores' busy time less this
process's own: :func:`load_between` makes that the ``LoadReading`` record of results.json, and
:mod:`roofline_report.analysis.measuring_load` judges it.

Tests replace :data:`PROBE` (a function returning a :class:`Sample`) to inject readings: no
test depends on the real machine's load.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from roofline_report.analysis.measuring_load import Load

_PROC_STAT = Path("/proc/stat")
# Ticks of /proc/stat's first line counted as busy: user, nice, system, irq, softirq, steal
# (guest time is already inside user). proc(5).
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)
#: A round under load is taken again at most this many times.
MAX_REPEATS = 2

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Sample:
    """One reading: ``wall`` (monotonic seconds), ``busy_s`` (busy time of all ``cores`` since
    boot; None where unknown), ``own_s`` (this process's CPU time) and ``loadavg`` (the
    1-minute load average; None where unknown)."""

    wall: float
    busy_s: float | None
    cores: int | None
    own_s: float
    loadavg: float | None


def read_proc_stat(path: Path = _PROC_STAT) -> tuple[float, int] | None:
    """(busy seconds of all cores since boot, number of cores) from ``/proc/stat``, or None
    where it cannot be read (not Linux)."""
    try:
        lines = path.read_text(encoding="ascii").splitlines()
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError, UnicodeDecodeError):
        return None
    if not lines or not lines[0].startswith("cpu ") or ticks <= 0:
        return None
    try:
        values = [int(v) for v in lines[0].split()[1:]]
        busy = sum(values[i] for i in _BUSY_FIELDS if i < len(values))
    except ValueError:
        return None
    cores = sum(1 for line in lines[1:] if line.startswith("cpu") and line[3:4].isdigit())
    return busy / ticks, max(1, cores)


def sample() -> Sample:
    """A reading of this machine now."""
    stat = read_proc_stat()
    times = os.times()
    try:
        average: float | None = os.getloadavg()[0]
    except (OSError, AttributeError):  # no load average on this system
        average = None
    return Sample(wall=time.monotonic(), busy_s=stat[0] if stat else None,
                  cores=stat[1] if stat else None, own_s=times.user + times.system,
                  loadavg=average)


#: Where readings come from: tests replace it.
PROBE: Callable[[], Sample] = sample


def load_between(start: Sample, end: Sample) -> dict[str, Any]:
    """The ``LoadReading`` record of the span from ``start`` to ``end``."""
    others: float | None = None
    if start.busy_s is not None and end.busy_s is not None:
        others = max(0.0, (end.busy_s - start.busy_s) - (end.own_s - start.own_s))
    averages = [float(a) for a in (start.loadavg, end.loadavg)
                if a is not None and math.isfinite(a) and a >= 0]
    return {"wall_s": max(0.0, float(end.wall - start.wall)), "others_cpu_s": others,
            "cores": end.cores if end.cores else None, "loadavg": averages}


def is_loaded(reading: dict[str, Any] | None) -> bool:
    """Whether a ``LoadReading`` record was taken under load (the analysis's rule)."""
    load = Load.from_json(reading)
    return load is not None and load.loaded


def preferred(rates: list[float], loads: list[dict[str, Any] | None]) -> int:
    """The index of the round a ceiling keeps: the fastest of the rounds not under load, else
    the fastest of all (a round under load is discarded where a quiet one exists)."""
    order = range(len(rates))
    quiet = [i for i in order if not is_loaded(loads[i] if i < len(loads) else None)]
    return max(quiet or order, key=lambda i: (rates[i], -i))


@dataclass
class Budget:
    """Seconds left for taking rounds again because of load, over one measurement of the
    ceilings; ``repeated`` counts the rounds taken again."""

    seconds: float
    repeated: int = 0
    spent: float = field(default=0.0)

    def left(self) -> float:
        return self.seconds - self.spent


def quiet_round(run: Callable[[], T], rate: Callable[[T], float], budget: Budget | None
                ) -> tuple[T, dict[str, Any], int]:
    """Run one round (``run``) with the load read around it; while it was under load and
    ``budget`` has time left, run it again (at most :data:`MAX_REPEATS` more times). Returns
    the kept attempt, its load and how many times it was taken again: the fastest (by ``rate``)
    of the attempts not under load, else the fastest of all. Exceptions of ``run`` propagate
    from the first attempt; a later attempt that fails is dropped."""
    start = PROBE()
    result = run()
    reading = load_between(start, PROBE())
    attempts = [(result, reading)]
    repeats = 0
    while (budget is not None and repeats < MAX_REPEATS and is_loaded(attempts[-1][1])
           and budget.left() > 0):
        start = PROBE()
        try:
            again = run()
        except Exception:
            break
        reading = load_between(start, PROBE())
        budget.spent += reading["wall_s"]
        budget.repeated += 1
        repeats += 1
        attempts.append((again, reading))
    kept = attempts[preferred([rate(a[0]) for a in attempts], [a[1] for a in attempts])]
    return kept[0], kept[1], repeats


__all__ = ["MAX_REPEATS", "PROBE", "Budget", "Sample", "is_loaded", "load_between",
           "preferred", "quiet_round", "read_proc_stat", "sample"]
