"""The kinds of numbers (no jax): every number the report shows carries one.

* ``analytic`` -- counted exactly from shapes and dtypes (work and minimum traffic);
* ``hypothetical`` -- an assumed budget, such as the seed's 100 GFLOP/s and 20 GB/s;
* ``spec_sheet`` -- a published figure of a real chip, with its source;
* ``compiler_estimate`` -- what XLA's cost analysis says (backend- and version-dependent);
* ``predicted`` -- the model's time from the roofs shown beside it;
* ``measured`` -- timed on this machine, in this run.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class Kind(enum.StrEnum):
    """Where a number comes from. The string value is what results.json stores."""

    ANALYTIC = "analytic"
    HYPOTHETICAL = "hypothetical"
    SPEC_SHEET = "spec_sheet"
    COMPILER_ESTIMATE = "compiler_estimate"
    PREDICTED = "predicted"
    MEASURED = "measured"

    @property
    def label(self) -> str:
        return _KIND_LABELS[self]

    @property
    def description(self) -> str:
        return _KIND_DESCRIPTIONS[self]


_KIND_LABELS = {
    Kind.ANALYTIC: "analytic",
    Kind.HYPOTHETICAL: "hypothetical",
    Kind.SPEC_SHEET: "spec sheet",
    Kind.COMPILER_ESTIMATE: "compiler estimate",
    Kind.PREDICTED: "predicted",
    Kind.MEASURED: "measured",
}

_KIND_DESCRIPTIONS = {
    Kind.ANALYTIC: "counted exactly from shapes and dtypes; no machine involved",
    Kind.HYPOTHETICAL: "an assumed budget, not a property of any device",
    Kind.SPEC_SHEET: "a published figure for a real chip, with its source",
    Kind.COMPILER_ESTIMATE: "XLA's cost analysis: backend- and version-dependent",
    Kind.PREDICTED: "predicted by the model from the roofs shown beside it (measured, spec "
                    "sheet or assumed: each roof carries its own kind)",
    Kind.MEASURED: "timed on this machine in this run",
}


@dataclass(frozen=True, slots=True)
class Quantity:
    """A number with its unit and kind. ``value`` is None when unknown; ``note`` says why."""

    value: float | None
    unit: str
    kind: Kind
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "unit": self.unit, "kind": self.kind.value, "note": self.note}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Quantity:
        value = data["value"]
        return cls(
            value=None if value is None else float(value),
            unit=str(data["unit"]),
            kind=Kind(data["kind"]),
            note=str(data.get("note", "")),
        )
