"""The three-way reconciliation of one program as typed records (no jax), built by
:func:`roofline_report.analysis.reconcile.reconcile`.

* A flag's sentence is a tuple of :data:`Part`: words (``str``), and the values the report
  formats: :class:`CountPart`, :class:`RatioPart`, :class:`CodePart` and
  :class:`RewritesPart`. No number is baked into the words.
* :class:`Flag`: one known cause of a disagreement, and its sentence.
* :class:`ReconciledRow`: one quantity (flops, transcendentals, bytes) by the analytic model,
  our count, XLA, and where added the kernel sum and JAX's estimate.
* :class:`MeasuredRate`: the measured time of one call and the rate it implies.
* :class:`Reconciliation`: the rows of one program, or why it has none.

Each has ``to_json``: the plain form, as the reconciliation was once handed over.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline_report.hlo.kernel_reconciliation import GroupedRewrite

__all__ = [
    "CodePart",
    "CountPart",
    "Flag",
    "MeasuredRate",
    "Part",
    "RatioPart",
    "ReconciledRow",
    "Reconciliation",
    "RewritesPart",
]

@dataclass(frozen=True, slots=True)
class CountPart:
    """A count in a sentence, of a kind (a Kind value); ``signed``: a change ("+399,669")."""

    count: int | float
    kind: str
    signed: bool = False

    def to_json(self) -> dict[str, object]:
        return {"count": self.count, "kind": self.kind, **({"signed": True} if self.signed
                                                           else {})}


@dataclass(frozen=True, slots=True)
class RatioPart:
    """A ratio in a sentence ("10x"), of a kind."""

    ratio: float
    kind: str

    def to_json(self) -> dict[str, object]:
        return {"ratio": self.ratio, "kind": self.kind}


@dataclass(frozen=True, slots=True)
class CodePart:
    """An op name, a custom-call target, a dtype, or a value XLA reported as a marker (its
    -1): set as code, never as a count."""

    code: str

    def to_json(self) -> dict[str, object]:
        return {"code": self.code}


@dataclass(frozen=True, slots=True)
class RewritesPart:
    """The compiler's rewrites of one quantity (``unit``), largest first
    (:func:`roofline_report.hlo.kernel_reconciliation.group_rewrites`)."""

    rewrites: tuple[GroupedRewrite, ...]
    unit: str

    def to_json(self) -> dict[str, object]:
        return {"rewrites": [item.to_json() for item in self.rewrites],
                "unit": self.unit}


Part = str | CountPart | RatioPart | CodePart | RewritesPart


def _part_json(part: Part) -> object:
    return part if isinstance(part, str) else part.to_json()


@dataclass(frozen=True, slots=True)
class Flag:
    """A known cause of a disagreement (one of :data:`~.reconcile.CAUSES`) and its sentence."""

    cause: str
    parts: tuple[Part, ...]

    def to_json(self) -> dict[str, object]:
        return {"cause": self.cause, "parts": [_part_json(part) for part in self.parts]}


@dataclass(frozen=True, slots=True)
class ReconciledRow:
    """One quantity by each count; ``agree``: the analytic model, our count and XLA's (those
    available, at least two) within :data:`~.reconcile.AGREE_RTOL` of each other."""

    quantity: str  # "flops", "transcendentals" or "bytes"
    analytic: float | None
    ours: float | None
    xla: float | None
    agree: bool
    flags: tuple[Flag, ...]
    kernels: float | None = None  # the sum over the compiled kernels (with the kernel columns)
    jax: float | None = None  # jax.experimental.roofline's estimate (with the kernel columns)

    def to_json(self, kernel_columns: bool = False) -> dict[str, object]:
        """The plain row; ``kernel_columns``: with the kernel sum and JAX's estimate."""
        out: dict[str, object] = {
            "quantity": self.quantity, "analytic": self.analytic, "ours": self.ours,
            "xla": self.xla, "agree": self.agree,
            "flags": [flag.to_json() for flag in self.flags]}
        if kernel_columns:
            out["kernels"] = self.kernels
            out["jax"] = self.jax
        return out


@dataclass(frozen=True, slots=True)
class MeasuredRate:
    """The measured time of one call and the rate of the flops it is credited with (the
    analytic model's, else our count's; None: neither)."""

    seconds: float
    achieved_flops_per_s: float | None
    flops_basis: str | None  # "analytic" or "ours"

    def to_json(self) -> dict[str, object]:
        return {"seconds": self.seconds, "achieved_flops_per_s": self.achieved_flops_per_s,
                "flops_basis": self.flops_basis}


@dataclass(frozen=True, slots=True)
class Reconciliation:
    """One program's reconciliation: a row per quantity (flops, transcendentals, bytes), XLA's
    bytes over the minimum, the measured rate; or no rows and the ``reason`` there are
    none."""

    rows: tuple[ReconciledRow, ...]
    traffic_efficiency: float | None = None  # XLA's bytes ÷ the minimum bytes
    measured: MeasuredRate | None = None
    kernel_columns: bool = False  # the rows have the kernel sum and JAX's estimate
    reason: str = ""  # why it could not be reconciled (no rows)

    @classmethod
    def unavailable(cls, reason: str) -> Reconciliation:
        """No reconciliation, and why."""
        return cls(rows=(), reason=reason)

    def row(self, quantity: str) -> ReconciledRow | None:
        """The row of ``quantity`` (None: no such row)."""
        return next((r for r in self.rows if r.quantity == quantity), None)

    def to_json(self) -> dict[str, object]:
        """The plain form: ``{"rows", "traffic_efficiency", "measured"}``, or
        ``{"available": False, "reason"}``."""
        if self.reason:
            return {"available": False, "reason": self.reason}
        return {"rows": [r.to_json(self.kernel_columns) for r in self.rows],
                "traffic_efficiency": self.traffic_efficiency,
                "measured": self.measured.to_json() if self.measured is not None else None}
