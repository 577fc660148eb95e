"""A prediction, its terms and how one launch's terms combine into its time (no jax).

A kernel's prediction (:mod:`roofline_report.analysis.predict`) is a set of :class:`Term`:
each a part of its work or overhead priced at one roof, gathered in a :class:`Prediction`.
:func:`combine` is the one place they become a time and a binding: its compute, memory and
pattern groups overlap, its overheads add.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from roofline_report.kinds import Kind

__all__ = ["UNITS", "Group", "Prediction", "Term", "combine"]

Group = Literal["compute", "memory", "pattern", "overhead"]


@dataclass(frozen=True, slots=True)
class Term:
    """One part of a prediction: ``seconds`` per call of the program, priced at ``roof`` (its
    name) of ``kind``. ``name``: matmul, convolution, conversion, elementwise, transcendental,
    memory, reduction, launch, split launch or dispatch; ``detail``: the function, level or
    pattern."""

    name: str
    group: Group
    seconds: float
    roof: str
    kind: Kind
    detail: str = ""

    @property
    def label(self) -> str:
        """The words for what binds: 'compute: tanh', 'memory: L2', 'transpose', 'launch'."""
        if self.group == "overhead" or self.group == "pattern":
            return self.detail or self.name
        what = self.detail or self.name
        return f"{self.group}: {what}" if what != self.group else self.group



#: The unit each compute term runs on, where the backend's units work side by side: a TPU's
#: matrix unit (products and convolutions), vector unit (other arithmetic, conversions) and
#: transcendental unit.
UNITS = {"matmul": "matrix", "convolution": "matrix", "elementwise": "vector",
         "conversion": "vector", "transcendental": "transcendental"}


def _in_series(members: Sequence[Term]) -> float:
    """A group's terms one after another: its traffic (the largest of its ``memory`` terms,
    which price the same bytes at different levels) and each of its other terms."""
    traffic = max((t.seconds for t in members if t.name == "memory"), default=0.0)
    return traffic + sum(t.seconds for t in members if t.name != "memory")


def combine(terms: tuple[Term, ...], units_overlap: bool = False, *,
           in_series: bool = False) -> tuple[float, Term]:
    """(seconds, binding) of terms combined as max(Σ compute, max memory, max pattern) + Σ
    overhead: a launch's costs are paid before its work, not while it runs. The binding is the
    largest of the work's group (its largest term standing for it) and each overhead term.
    Where the backend's compute units work side by side (``units_overlap``: a TPU's matrix,
    vector and transcendental units, pipelined within a kernel), its compute is the largest of
    its units' sums, not the sum of all. ``in_series``
    (:func:`~roofline_report.analysis.past_the_cache.passes_in_series`): the work is the sum
    of every term, none hiding another."""
    compute = [t for t in terms if t.group == "compute"]
    groups: list[tuple[float, Term]] = []
    if compute and units_overlap:
        by_unit: dict[str, list[Term]] = {}
        for t in compute:
            by_unit.setdefault(UNITS.get(t.name, t.name), []).append(t)
        groups += [(sum(t.seconds for t in members), max(members, key=lambda t: t.seconds))
                   for members in by_unit.values()]
    elif compute:
        groups.append((sum(t.seconds for t in compute), max(compute, key=lambda t: t.seconds)))
    for group in ("memory", "pattern"):
        members = [t for t in terms if t.group == group]
        if members:
            top = max(members, key=lambda t: t.seconds)
            groups.append((_in_series(members) if in_series else top.seconds, top))
    overhead = [(t.seconds, t) for t in terms if t.group == "overhead"]
    work = sum(seconds for seconds, _ in groups) if in_series \
        else max((seconds for seconds, _ in groups), default=0.0)
    binding = max([*groups, *overhead], key=lambda g: g[0])[1]
    return work + sum(seconds for seconds, _ in overhead), binding


@dataclass(frozen=True, slots=True)
class Prediction:
    """A predicted time per call, its terms, the term that binds, and what it was priced on."""

    seconds: float
    terms: tuple[Term, ...]
    binding: Term
    flops: float  # the work priced, per call
    bytes: float  # the bytes priced, per call
    bytes_source: str
    level: str  # the memory level(s) holding the bytes
    notes: tuple[str, ...] = field(default=())
    kind: Kind = Kind.PREDICTED
    # True when a while loop whose trip count is neither known to the compiler nor observed in
    # a trace is counted once: the time, work and bytes are then lower bounds.
    lower_bound: bool = False
    # An asynchronous pair's transfer per call (its work terms combined), off the call's path where
    # the kernels issued between its start and its done hide it
    # (:mod:`roofline_report.analysis.async_exposure`); None for any other kernel.
    transfer: Term | None = None
    # The work left out for want of a measured rate (the ceilings' entry failed or was never
    # measured), each as "what (which rate)": the time is then a lower bound of the model's.
    unpriced: tuple[str, ...] = ()

    def group_seconds(self, group: Group) -> float:
        """The summed seconds of one group's terms."""
        return sum(t.seconds for t in self.terms if t.group == group)

    @property
    def roofs(self) -> tuple[str, ...]:
        """The names of the roofs priced, in order, once each."""
        return tuple(dict.fromkeys(t.roof for t in self.terms if t.seconds > 0 or t.roof))

    @property
    def roof_kinds(self) -> tuple[Kind, ...]:
        """The kinds of the roofs priced, once each."""
        return tuple(dict.fromkeys(t.kind for t in self.terms))

    @property
    def roof_rate(self) -> tuple[float, str] | None:
        """The rate the prediction implies, the roof it holds the program or kernel to: its
        flops ÷ its time in FLOP/s, or for one that computes nothing its bytes ÷ its time in
        B/s; None for a zero time or no work and no bytes."""
        if self.seconds <= 0:
            return None
        if self.flops > 0:
            return self.flops / self.seconds, "FLOP/s"
        if self.bytes > 0:
            return self.bytes / self.seconds, "B/s"
        return None
