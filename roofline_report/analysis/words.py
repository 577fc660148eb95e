"""Words that compare numbers, computed from the numbers (no jax).

A sentence that says "below", "under the ridge" or "memory-bound" must follow from the values it
states, for any budgets a user passes; these helpers are the only place such words are chosen.
The boundary is :func:`roofline_report.roofline.bound_at`: at the ridge, compute
binds.
"""

from __future__ import annotations

from typing import Literal

from roofline_report.roofline import bound_at
from roofline_report.text import decimal


def relation(value: float, other: float) -> Literal["below", "equal to", "above"]:
    """How ``value`` stands to ``other``."""
    if value < other:
        return "below"
    return "equal to" if value == other else "above"


def ridge_side(intensity: float, ridge: float) -> str:
    """'under the ridge', 'at the ridge' or 'over the ridge'."""
    side = relation(intensity, ridge)
    return {"below": "under", "equal to": "at", "above": "over"}[side] + " the ridge"


def bound(intensity: float, ridge: float) -> Literal["memory", "compute"]:
    """The ceiling that binds at ``intensity`` (:func:`roofline_report.roofline.bound_at`)."""
    return bound_at(intensity, ridge)


def sides(intensities: list[float], ridge: float) -> str:
    """'both under the ridge R', 'all over the ridge R' or 'X under and Y over the ridge'."""
    kinds = {ridge_side(x, ridge) for x in intensities}
    if len(kinds) == 1:
        quantifier = "both" if len(intensities) == 2 else "all"
        return f"{quantifier} {kinds.pop()}"
    return "; ".join(f"{decimal(x, 3)} FLOP/B {ridge_side(x, ridge)}" for x in intensities)


def bounds_text(intensities: list[float], ridge: float) -> str:
    """'memory-bound', 'compute-bound', or each intensity's bound when they differ."""
    found = [bound(x, ridge) for x in intensities]
    if len(set(found)) == 1:
        return f"{found[0]}-bound"
    return ", ".join(f"{b}-bound" for b in found) + " respectively"
