"""Reading one lab experiment's typed record (no jax): what the schema leaves open checked, with
InputError naming the field: a size only some experiments record, a sweep's lists aligned with
its points, a number that must be finite. The kernel inventories are handed to the kernel model
as their typed records, or the reason a variant has none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from roofline_report.analysis.experiments.verdicts import finite
from roofline_report.analysis.stats import Timing
from roofline_report.errors import InputError
from roofline_report.results.schema_base import Timing as TimingRecord
from roofline_report.results.schema_base import Unavailable
from roofline_report.results.schema_kernels import KernelInventory

__all__ = ["NOT_RECORDED", "count", "number", "programs", "sizes", "sweep_programs", "timings"]

Inventory = KernelInventory | Unavailable
"""A program's kernel inventory as the lab recorded it, or why its reading failed."""

Variant = TypeVar("Variant", bound=str)


def _fail(exp_id: str, key: str, problem: str) -> InputError:
    return InputError(f"lab measurements: experiment {exp_id!r} field {key!r} {problem}")


def count(exp_id: str, key: str, value: int | None) -> int:
    """A size the schema leaves optional (the experiment needs it)."""
    if value is None:
        raise _fail(exp_id, key, f"must be a positive integer, got {value!r}")
    return value


def number(exp_id: str, key: str, value: float | None) -> float | None:
    """A finite number, or None when not recorded."""
    if value is None:
        return None
    result = finite(value)
    if result is None:
        raise _fail(exp_id, key, f"must be a finite number, got {value!r}")
    return result


def sizes(exp_id: str, key: str, values: list[int] | None) -> list[int]:
    """A sweep's points (the schema leaves them optional: a sweep records batches or sizes)."""
    if values is None:
        raise _fail(exp_id, key, "must be a list of positive integers")
    return list(values)


def timings(exp_id: str, key: str, records: Sequence[TimingRecord], points: int
            ) -> list[Timing]:
    """A sweep's timings, one per point."""
    if len(records) != points:
        raise _fail(exp_id, key, f"must be a list of {points} timing records")
    return [Timing.of(record) for record in records]


def programs(by_variant: Mapping[Variant, Inventory], variants: Sequence[Variant]
             ) -> dict[str, KernelInventory | str]:
    """The kernel inventory of each variant (as results.json holds it, for the kernel model),
    or the reason it has none (not recorded, or its reading failed)."""
    return {variant: _inventory(by_variant.get(variant)) for variant in variants}


def sweep_programs(exp_id: str, inventories: Sequence[Inventory], labels: Sequence[str]
                   ) -> dict[str, KernelInventory | str]:
    """The kernel inventory of each sweep point (named by ``labels``), from the list aligned
    with the points, or the reason it has none."""
    if len(inventories) != len(labels):
        raise _fail(exp_id, "programs", f"must be a list of {len(labels)} kernel inventories")
    return {label: _inventory(inventory)
            for label, inventory in zip(labels, inventories, strict=True)}


def _inventory(inventory: Inventory | None) -> KernelInventory | str:
    if inventory is None:
        return NOT_RECORDED
    if isinstance(inventory, Unavailable):
        why = inventory.reason
        return f"its kernel inventory failed: {why}" if why else "its kernel inventory failed"
    return inventory


NOT_RECORDED = "no kernel inventory recorded (results saved before the lab recorded them)"
