"""The sum over a program's compiled kernels beside our count of the program (the StableHLO
count), as typed records: equal, or apart by the rewrites the compiler made, each with its
amount (no jax).

* :class:`Rewrite`: one op whose kernel sum differs from the program's, and by how much.
* :class:`OpRewrite`, :class:`StrengthReduction`, :class:`MinorRewrites`: the rewrites of one
  quantity as a reader takes them in (:func:`group_rewrites`), the items of
  :data:`GroupedRewrite`.
* :class:`QuantityReconciliation`: one quantity's kernel sum, program count and rewrites.
* :class:`KernelReconciliation`: flops and transcendentals, the rewrites, and what no rewrite
  explains (:func:`reconcile_kernels`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

__all__ = [
    "MINOR_REWRITE_SHARE",
    "STRENGTH_REDUCTION_RTOL",
    "Counts",
    "GroupedRewrite",
    "KernelReconciliation",
    "MinorRewrites",
    "OpRewrite",
    "QuantityReconciliation",
    "Rewrite",
    "StrengthReduction",
    "group_rewrites",
    "reconcile_counts",
    "reconcile_kernels",
]

#: A rewrite smaller than this share of the program count is not listed on its own: the small
#: ones are summed into one item ("9 other ops, +40 together").
MINOR_REWRITE_SHARE = 1e-4
#: A divide simplified away and a multiply added are one strength reduction (x / c becomes
#: x * (1/c)) when their amounts are within this share of each other: the multiplies added
#: equal the divides removed, give or take the few reciprocals the compiler computes once.
STRENGTH_REDUCTION_RTOL = 1e-2


@dataclass(frozen=True, slots=True)
class Rewrite:
    """One op's share of the difference between the kernel sum and our program count."""

    op: str  # as the program names it (``stablehlo.divide``)
    kind: str  # "converts_inserted", "duplicated" or "simplified_away"
    quantity: str  # "flops" or "transcendentals"
    amount: int  # the kernels' count less the program's


@dataclass(frozen=True, slots=True)
class OpRewrite:
    """One op's rewrite as a reader takes it in, by the op's short name (``divide``)."""

    kind: str  # "converts_inserted", "duplicated" or "simplified_away"
    op: str
    amount: int

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "op": self.op, "amount": self.amount}


@dataclass(frozen=True, slots=True)
class StrengthReduction:
    """A divide simplified away and a multiply added in about its amount: x / c became
    x * (1/c)."""

    kind: ClassVar[str] = "strength_reduction"
    ops: tuple[str, str]  # ("divide", "multiply")
    removed: int  # the divides' amount, taken away
    added: int  # the multiplies' amount
    amount: int  # added less removed

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "ops": list(self.ops), "removed": self.removed,
                "added": self.added, "amount": self.amount}


@dataclass(frozen=True, slots=True)
class MinorRewrites:
    """The rewrites each under :data:`MINOR_REWRITE_SHARE` of the program count, summed."""

    kind: ClassVar[str] = "others"
    count: int
    amount: int

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "count": self.count, "amount": self.amount}


GroupedRewrite = OpRewrite | StrengthReduction | MinorRewrites


@dataclass(frozen=True, slots=True)
class QuantityReconciliation:
    """One quantity's kernel sum beside the program count (None: nothing to compare with)."""

    kernels: int
    program: int | None
    difference: int | None  # kernels less program
    equal: bool
    rewrites: tuple[GroupedRewrite, ...]  # grouped for reading (:func:`group_rewrites`)


@dataclass(frozen=True, slots=True)
class KernelReconciliation:
    """The kernel sums beside our program count, per quantity."""

    flops: QuantityReconciliation
    transcendentals: QuantityReconciliation
    rewrites: tuple[Rewrite, ...]  # every op apart, both quantities
    # What the rewrites leave of each compared quantity's difference (0: all explained).
    unexplained: Mapping[str, int]

    def quantity(self, name: str) -> QuantityReconciliation:
        """The reconciliation of ``name`` ("flops" or "transcendentals")."""
        return self.flops if name == "flops" else self.transcendentals


def _rewrite(op: str, amount: int, unit: str) -> Rewrite:
    """One op's share of the difference: ``kind`` says which rewrite; the report words it."""
    short = op.split(".", 1)[-1]
    if short == "convert" and amount > 0:
        kind = "converts_inserted"  # narrow floats computed in a wider type
    elif amount > 0:
        kind = "duplicated"  # into several kernels, or added by the compiler
    else:
        kind = "simplified_away"
    return Rewrite(op, kind, unit, amount)


def _size(item: GroupedRewrite) -> int:
    """How large a rewrite is, whatever its net amount."""
    if isinstance(item, StrengthReduction):
        return max(item.removed, item.added)
    return abs(item.amount)


def group_rewrites(rewrites: Sequence[Rewrite] | None, quantity: str,
                   reference: float | None) -> tuple[GroupedRewrite, ...]:
    """The rewrites of ``quantity`` as a reader takes them in, largest first (by the size of
    the rewrite, not its net amount): one :class:`OpRewrite` per op, a divide simplified
    away with a multiply added in an amount within STRENGTH_REDUCTION_RTOL of it as one
    :class:`StrengthReduction`, and last the rewrites each under MINOR_REWRITE_SHARE of
    ``reference`` as one :class:`MinorRewrites` (two or more of them). The items' amounts
    add up to the rewrites'."""
    mine = [r for r in rewrites or () if r.quantity == quantity]
    items: list[GroupedRewrite] = [OpRewrite(r.kind, r.op.split(".", 1)[-1], int(r.amount))
                                   for r in mine]
    divide = next((i for i in items if isinstance(i, OpRewrite) and i.op == "divide"
                   and i.amount < 0), None)
    multiply = next((i for i in items if isinstance(i, OpRewrite) and i.op == "multiply"
                     and i.amount > 0), None)
    if divide is not None and multiply is not None:
        removed, added = -divide.amount, multiply.amount
        if abs(added - removed) <= STRENGTH_REDUCTION_RTOL * max(removed, added):
            items = [i for i in items if i is not divide and i is not multiply]
            items.append(StrengthReduction(("divide", "multiply"), removed, added,
                                           added - removed))

    items.sort(key=lambda i: (-_size(i), i.op if isinstance(i, OpRewrite) else ""))
    floor = MINOR_REWRITE_SHARE * abs(reference) if reference else 0.0
    minor = [i for i in items if _size(i) < floor]
    if len(minor) < 2:
        return tuple(items)
    major = [i for i in items if _size(i) >= floor]
    return (*major, MinorRewrites(len(minor), sum(i.amount for i in minor)))


@dataclass(frozen=True, slots=True)
class Counts:
    """What the reconciliation reads of a count, the kernels' or the program's: its flops and
    transcendentals, and each by op."""

    flops: int
    transcendentals: int
    flops_by_op: Mapping[str, int]
    transcendentals_by_op: Mapping[str, int]

    def total(self, quantity: str) -> int:
        return self.flops if quantity == "flops" else self.transcendentals

    def by_op(self, quantity: str) -> Mapping[str, int]:
        return self.flops_by_op if quantity == "flops" else self.transcendentals_by_op


def _available(program: Mapping[str, object] | None) -> bool:
    return program is not None and program.get("available", True) is not False


def _count(record: Mapping[str, object], key: str) -> int:
    value = record.get(key, 0)
    return int(value) if isinstance(value, int | float | str) else 0


def _counts(record: Mapping[str, object]) -> Counts:
    """The counts of a record as results.json holds it (a kernel inventory, ``hlo_count``)."""
    return Counts(_count(record, "flops"), _count(record, "transcendentals"),
                  _by_op(record, "flops_by_op"), _by_op(record, "transcendentals_by_op"))


def reconcile_kernels(inventory: Mapping[str, object], program: Mapping[str, object] | None
                      ) -> KernelReconciliation:
    """:func:`reconcile_counts` of a kernel inventory and our program count (``hlo_count``)
    as results.json holds them; ``program`` None (or not available) compares nothing."""
    return reconcile_counts(_counts(inventory),
                            _counts(program) if program is not None and _available(program)
                            else None)


def reconcile_counts(kernels: Counts, program: Counts | None) -> KernelReconciliation:
    """The kernel sums (``kernels``: the kernel inventory's) beside our program count
    (``program``: ``hlo_count``'s), per quantity.

    The difference of each quantity is split by op: every op whose kernel sum differs from the
    program's is one :class:`Rewrite` (converts inserted, an op duplicated into several
    kernels or added, an op simplified away), so the rewrites' amounts add up to the
    difference; what no op accounts for is ``unexplained``. Each quantity's ``rewrites`` are
    the same, grouped for reading (:func:`group_rewrites`). ``program`` None compares nothing.
    """
    rewrites: list[Rewrite] = []
    unexplained: dict[str, int] = {}
    compared: dict[str, QuantityReconciliation] = {}
    for quantity in ("flops", "transcendentals"):
        ours = kernels.total(quantity)
        theirs = program.total(quantity) if program is not None else None
        grouped: tuple[GroupedRewrite, ...] = ()
        if theirs is not None and program is not None:
            mine = kernels.by_op(quantity)
            other = program.by_op(quantity)
            explained = 0
            for op in sorted(set(mine) | set(other)):
                diff = int(mine.get(op, 0)) - int(other.get(op, 0))
                if diff:
                    rewrites.append(_rewrite(op, diff, quantity))
                    explained += diff
            unexplained[quantity] = (ours - theirs) - explained
            grouped = group_rewrites(rewrites, quantity, theirs)
        compared[quantity] = QuantityReconciliation(
            kernels=ours, program=theirs,
            difference=None if theirs is None else ours - theirs,
            equal=theirs is not None and ours == theirs, rewrites=grouped)
    return KernelReconciliation(flops=compared["flops"],
                                transcendentals=compared["transcendentals"],
                                rewrites=tuple(rewrites), unexplained=unexplained)


def _by_op(record: Mapping[str, object], key: str) -> Mapping[str, int]:
    """A record's counts by op (``flops_by_op``), empty where it has none."""
    counts = record.get(key)
    if not isinstance(counts, Mapping):
        return {}
    return {str(op): int(value) for op, value in counts.items()}
