"""The one accumulator of flops and transcendentals that both counts use (no jax): our
StableHLO count of a program and the per-kernel count of the optimized HLO charge each op through
:meth:`Cost.charge` and fold callees and loop bodies in through :meth:`Cost.add`."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Cost:
    """Flops and transcendentals, with the amount charged to each op (StableHLO names), the ops
    seen, and the instructions no rule could cost."""

    flops: int = 0
    transcendentals: int = 0
    flops_by_op: Counter[str] = field(default_factory=Counter)
    transcendentals_by_op: Counter[str] = field(default_factory=Counter)
    ops: Counter[str] = field(default_factory=Counter)
    uncosted: set[str] = field(default_factory=set)
    by_name: set[str] = field(default_factory=set)  # how calls known by name were counted

    def charge(self, op: str, flops: int = 0, transcendentals: int = 0) -> None:
        if flops:
            self.flops += flops
            self.flops_by_op[op] += flops
        if transcendentals:
            self.transcendentals += transcendentals
            self.transcendentals_by_op[op] += transcendentals

    def add(self, other: Cost, times: int = 1, *, scale_ops: bool = True) -> None:
        """Fold ``other`` in ``times`` times (a loop body); ``scale_ops=False`` counts its ops
        once (the opcodes inside one kernel, whatever its trip count)."""
        self.flops += other.flops * times
        self.transcendentals += other.transcendentals * times
        for key, value in other.flops_by_op.items():
            self.flops_by_op[key] += value * times
        for key, value in other.transcendentals_by_op.items():
            self.transcendentals_by_op[key] += value * times
        for key, value in other.ops.items():
            self.ops[key] += value * times if scale_ops else value
        self.uncosted |= other.uncosted
        self.by_name |= other.by_name
