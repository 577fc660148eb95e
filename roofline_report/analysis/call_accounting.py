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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
    """Every traced call accounted for (:class:`CallAccount`), the median call (by program
    time) apart, with the kernels that vary and the stalls."""

    calls: tuple[CallAccount, ...]
    median_call: CallAccount
    varying: tuple[Varying, ...]
    stalls: Stalls | None

    @property
    def table_s(self) -> float:
        return self.median_call.table_s

    @property
    def worst_residual(self) -> float:
        """The largest unexplained share of any call."""
        return max((c.unexplained for c in self.calls), default=0.0)


def account_calls(timing: Mapping[str, Any], times: Mapping[str, float],
                  samples: Mapping[str, Sequence[float | None]]) -> CallAccounting | None:
    """The accounting of a ``kernel_timing`` record's calls. ``times``: each table row's time
    (its first quartile), by kernel; ``samples``: each kernel's samples on the same basis, one
    per call in call order (None in a call it did not run in). None without calls."""
    calls = list(timing.get("calls") or [])
    if not calls:
        return None
    per_call = int(timing.get("calls_per_sample") or 1)
    table = sum(times.values())
    accounts: list[CallAccount] = []
    for i, c in enumerate(calls):
        kernels = sum(s[i] or 0.0 for name, s in samples.items() if name in times and i < len(s))
        busy = float(c["busy_s"])
        accounts.append(CallAccount(
            program_s=float(c["program_s"]), table_s=table, beyond_s=kernels - table,
            overlap_s=busy - kernels, dispatch_s=float(c["dispatch_s"]),
            loop_control_s=float(c["loop_control_s"]), gaps_s=float(c["gaps_s"])))
    order = sorted(range(len(accounts)), key=lambda i: accounts[i].program_s)
    middle = accounts[order[(len(order) - 1) // 2]]
    usable = {name: list(s) for name, s in samples.items()
              if name in times and any(x is not None for x in s)}
    return CallAccounting(tuple(accounts), middle, _varying(usable, times),
                          _stalls(usable, times, accounts, per_call))


def _varying(samples: Mapping[str, list[float | None]], times: Mapping[str, float]
             ) -> tuple[Varying, ...]:
    found = []
    for name, ran in samples.items():
        s = [x for x in ran if x is not None]
        low, high = min(s), max(s)
        if len(s) > 1 and high > 0 and high > VARIES * low:
            found.append(Varying(name, low, high, times[name]))
    found.sort(key=lambda v: (-(v.high_s - v.low_s), v.name))
    return tuple(found[:LISTED])


def _stalls(samples: Mapping[str, list[float | None]], times: Mapping[str, float],
            accounts: Sequence[CallAccount], per_call: int) -> Stalls | None:
    """The calls whose worst kernel (the largest time beyond its first quartile) took at
    least VARIES × that quartile and STALL_SHARE of the call."""
    hit: list[tuple[str, float]] = []
    for i, call in enumerate(accounts):
        worst: tuple[float, str, float] | None = None
        for name, s in samples.items():
            took = s[i] if i < len(s) else None
            if took is None:
                continue
            excess = took - times[name]
            if worst is None or excess > worst[0]:
                worst = (excess, name, took)
        if worst is None:
            continue
        _, name, took = worst
        if took >= VARIES * times[name] and took >= STALL_SHARE * call.program_s and took > 0:
            hit.append((name, took))
    if not hit:
        return None
    by_kernel: dict[str, int] = {}
    for name, _ in hit:
        by_kernel[name] = by_kernel.get(name, 0) + 1
    kernels = tuple(sorted(by_kernel.items(), key=lambda kv: (-kv[1], kv[0])))
    took_all = [t for _, t in hit]
    return Stalls(len(hit) * per_call, len(accounts) * per_call, min(took_all), max(took_all),
                  kernels)

