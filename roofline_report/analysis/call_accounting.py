"""Every traced call's time accounted for, on the kernel table's own basis (no jax).

The kernel table gives each kernel one time per call: the first quartile of its samples over
the traced calls (:func:`~roofline_report.analysis.kernels.kernel_time`), so a stall that lands
on a different kernel in each call is in no kernel's first quartile and vanishes from every row.
This module puts it back, call by call. For each traced call (seconds)::

    program = table + beyond + overlap + dispatch + loop control + gaps (+ residual)

* ``table``: the kernel table's column, the sum of the kernels' first quartiles (the same in
  every call);
* ``beyond``: what the kernels took in this call beyond (or, negative, short of) their first
  quartiles: the call's summed kernel samples less ``table``;
* ``overlap``: the time at least one kernel ran (``busy``) less the call's summed kernel
  samples: negative where kernels ran side by side and each counted the shared time, positive
  where kernels were launched but their time is charged to none (queued behind another);
* dispatch, loop control and the gaps between kernels as the trace reader measured them;
* ``residual``: what is left (only where those rounded parts overlap: nearly 0).

It also finds the kernels whose time varies more than :data:`VARIES` times across calls (with
their range) and the calls in which one kernel took at least :data:`VARIES` times its first
quartile and a :data:`STALL_SHARE` of the call: when those kernels differ from call to call,
the stall moves from kernel to kernel (the host or another process held the core), and the
report says so instead of letting it vanish from the rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from roofline_report.results import schema

__all__ = ["STALL_SHARE", "VARIES", "CallAccount", "CallAccounting", "Stalls", "Varying",
           "account_calls"]

VARIES = 3.0  # a kernel whose slowest call is over this many times its fastest varies
STALL_SHARE = 0.1  # a stall takes at least this share of its call
LISTED = 5  # varying kernels kept, the widest range first


@dataclass(frozen=True, slots=True)
class CallAccount:
    """One traced call's time in parts that sum to it (seconds; see the module docstring)."""

    program_s: float
    table_s: float
    beyond_s: float
    overlap_s: float
    dispatch_s: float
    loop_control_s: float
    gaps_s: float

    @property
    def kernels_s(self) -> float:
        """The call's summed kernel samples (the table's basis, this call)."""
        return self.table_s + self.beyond_s

    @property
    def residual_s(self) -> float:
        return self.program_s - (self.table_s + self.beyond_s + self.overlap_s
                                 + self.dispatch_s + self.loop_control_s + self.gaps_s)

    @property
    def unexplained(self) -> float:
        """The share of the call its parts leave unexplained, as a fraction (0: none)."""
        return abs(self.residual_s) / self.program_s if self.program_s > 0 else 0.0


@dataclass(frozen=True, slots=True)
class Varying:
    """A kernel whose time varies more than :data:`VARIES` times across calls."""

    name: str
    low_s: float
    high_s: float
    q1_s: float  # its time in the table


@dataclass(frozen=True, slots=True)
class Stalls:
    """Calls in which one kernel took at least :data:`VARIES` × its first quartile and
    :data:`STALL_SHARE` of the call: how many, the range of those kernels' times, and which
    kernels (by how many calls each)."""

    calls: int
    of_calls: int
    low_s: float
    high_s: float
    kernels: tuple[tuple[str, int], ...]

    @property
    def moving(self) -> bool:
        """Whether the stall landed on more than one kernel."""
        return len(self.kernels) > 1


@dataclass(frozen=True, slots=True)
class CallAccounting:
    """Every traced call accounted for (:attr:`calls`, each a :class:`CallAccount`), the
    median call (by program time) apart, with the kernels that vary and the stalls. The calls'
    parts are kept as columns (a long trace holds hundreds of thousands of calls), one
    :class:`CallAccount` built per call only when :attr:`calls` is read."""

    columns: _Columns
    median_call: CallAccount
    varying: tuple[Varying, ...]
    stalls: Stalls | None
    worst_residual: float  # the largest unexplained share of any call

    @property
    def table_s(self) -> float:
        return self.median_call.table_s

    @property
    def count(self) -> int:
        """The number of calls accounted for."""
        return len(self.columns.program)

    @property
    def calls(self) -> tuple[CallAccount, ...]:
        return tuple(self.columns.account(i) for i in range(len(self.columns.program)))


@dataclass(frozen=True, slots=True)
class _Columns:
    """The parts of every call (seconds), one array each, in call order."""

    table: float
    program: np.ndarray
    beyond: np.ndarray
    overlap: np.ndarray
    dispatch: np.ndarray
    loop_control: np.ndarray
    gaps: np.ndarray

    def account(self, i: int) -> CallAccount:
        return CallAccount(
            program_s=float(self.program[i]), table_s=self.table,
            beyond_s=float(self.beyond[i]), overlap_s=float(self.overlap[i]),
            dispatch_s=float(self.dispatch[i]), loop_control_s=float(self.loop_control[i]),
            gaps_s=float(self.gaps[i]))

    def unexplained(self) -> np.ndarray:
        """:attr:`CallAccount.unexplained` of every call, by the same operations."""
        residual = self.program - (self.table + self.beyond + self.overlap + self.dispatch
                                   + self.loop_control + self.gaps)
        out = np.zeros(len(self.program))
        positive = self.program > 0
        out[positive] = np.abs(residual[positive]) / self.program[positive]
        return out


def _column(calls: Sequence[schema.TraceCall], part: Callable[[schema.TraceCall], float]
            ) -> np.ndarray:
    """One part of every call (its ``program_s``, ``busy_s``, ...) as an array."""
    return np.fromiter(map(part, calls), dtype=np.float64, count=len(calls))


PerCall = Sequence[float | None] | np.ndarray  # a kernel's sample in each call (None or NaN: none)


def _samples(samples: Mapping[str, PerCall], names: Sequence[str], calls: int) -> np.ndarray:
    """The samples as a (kernel, call) array, NaN where a kernel did not run in a call (or
    its samples end before it)."""
    out = np.full((len(names), calls), np.nan)
    for row, name in zip(out, names, strict=True):
        s = samples[name]
        n = min(len(s), calls)
        if isinstance(s, np.ndarray):
            row[:n] = s[:n]
            continue
        row[:n] = np.fromiter((np.nan if x is None else x for x in s[:n]), dtype=np.float64,
                              count=n)
    return out


def account_calls(calls: Sequence[schema.TraceCall], times: Mapping[str, float],
                  samples: Mapping[str, PerCall], calls_per_sample: int = 1
                  ) -> CallAccounting | None:
    """The accounting of a ``kernel_timing`` record's ``calls`` (each sample of which averages
    ``calls_per_sample`` traced calls). ``times``: each table row's time (its first quartile),
    by kernel; ``samples``: each kernel's samples on the same basis, one per call in call order
    (None or NaN in a call it did not run in). None without calls."""
    if not calls:
        return None
    per_call = calls_per_sample
    table = sum(times.values())
    names = [name for name in samples if name in times]
    grid = _samples(samples, names, len(calls))
    # Each call's summed samples, kernel by kernel in the samples' order (as a sum would).
    kernels = np.zeros(len(calls))
    for row in grid:
        kernels += np.where(np.isnan(row), 0.0, row)
    busy = _column(calls, lambda call: call.busy_s)
    columns = _Columns(table, _column(calls, lambda call: call.program_s), kernels - table,
                       busy - kernels, _column(calls, lambda call: call.dispatch_s),
                       _column(calls, lambda call: call.loop_control_s),
                       _column(calls, lambda call: call.gaps_s))
    order = np.argsort(columns.program, kind="stable")
    middle = columns.account(int(order[(len(order) - 1) // 2]))
    ran = ~np.isnan(grid)
    usable = [j for j in range(len(names)) if ran[j].any()]
    used = [names[j] for j in usable]
    grid = grid[usable]
    return CallAccounting(columns, middle, _varying(used, grid, times),
                          _stalls(used, grid, times, columns.program, per_call),
                          float(columns.unexplained().max()))


def _varying(names: Sequence[str], grid: np.ndarray, times: Mapping[str, float]
             ) -> tuple[Varying, ...]:
    found = []
    for name, row in zip(names, grid, strict=True):
        s = row[~np.isnan(row)]
        low, high = float(s.min()), float(s.max())
        if len(s) > 1 and high > 0 and high > VARIES * low:
            found.append(Varying(name, low, high, times[name]))
    found.sort(key=lambda v: (-(v.high_s - v.low_s), v.name))
    return tuple(found[:LISTED])


def _stalls(names: Sequence[str], grid: np.ndarray, times: Mapping[str, float],
            program: np.ndarray, per_call: int) -> Stalls | None:
    """The calls whose worst kernel (the largest time beyond its first quartile, the first
    such kernel where several tie) took at least VARIES × that quartile and STALL_SHARE of
    the call."""
    if not names:
        return None
    quartile = np.array([times[name] for name in names])
    excess = np.where(np.isnan(grid), -np.inf, grid - quartile[:, None])
    worst = np.argmax(excess, axis=0)  # the first of the largest, per call
    calls = np.arange(grid.shape[1])
    took = grid[worst, calls]
    hit = (~np.isnan(took) & (took >= VARIES * quartile[worst])
           & (took >= STALL_SHARE * program) & (took > 0))
    if not hit.any():
        return None
    by_kernel: dict[str, int] = {}
    for j in worst[hit].tolist():
        by_kernel[names[j]] = by_kernel.get(names[j], 0) + 1
    kernels = tuple(sorted(by_kernel.items(), key=lambda kv: (-kv[1], kv[0])))
    took_all = took[hit]
    return Stalls(int(hit.sum()) * per_call, grid.shape[1] * per_call, float(took_all.min()),
                  float(took_all.max()), kernels)
