"""The predicted time of each variant an experiment compares, and the model behind it (no jax).

:func:`kernel_model` prices an experiment's variants (one array against two, fused against
unfused, the points of a sweep, ...) with the per-kernel model,
:func:`roofline_report.analysis.predict.predict_kernels` of each variant's kernels
in its dtype under the measured roof set, when that set is given and complete and every variant
has an inventory the model can price. Otherwise it returns None with the reason, and the
experiment prices every variant with the single-roof model of its
:class:`~roofline_report.analysis.experiments.single_roof.Budgets`. One model prices all the
variants of an experiment: a ratio of two models' times would measure neither.

:class:`KernelModel` also answers what the likely reasons compare a measurement against: the
bandwidth the model streamed a variant's bytes at and the memory level holding them, whether the
model charged main memory or a write-new roof, and the term that bound it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roofline_report.analysis.experiments.knees import knee_fit, model_knee_note
from roofline_report.analysis.experiments.raw import NOT_RECORDED
from roofline_report.analysis.predict import (
    Prediction,
    predict_kernels,
    predict_program,
    program_footprint,
    program_traffic,
)
from roofline_report.analysis.roofs import FRESH, RoofSet
from roofline_report.kinds import Kind, Quantity
from roofline_report.results import schema
from roofline_report.units import format_si

Programs = Mapping[str, schema.KernelInventory | str]
"""A kernel inventory by variant, or the reason a variant has none."""


@dataclass(frozen=True, slots=True)
class KernelModel:
    """The per-kernel model's predictions of an experiment's variants, by variant."""

    roofs: RoofSet
    predictions: Mapping[str, Prediction]
    inventories: Mapping[str, schema.KernelInventory]
    labels: Mapping[str, str]
    kernels: Mapping[str, Sequence[Prediction]]  # each variant's kernels' predictions

    @property
    def kind(self) -> Kind:
        return self.roofs.kind

    def seconds(self, variant: str) -> float:
        return self.predictions[variant].seconds

    def bound(self, variant: str) -> str:
        """'compute', 'memory' or 'overhead': the term that binds the variant's time."""
        return self.predictions[variant].binding.group

    def bandwidth(self, variant: str) -> float | None:
        """The bandwidth the model streams the variant's bytes at: its bytes ÷ its memory time
        (over several kernels, their levels' bandwidths averaged by bytes, harmonically); None
        when it moves nothing."""
        moved = memory = 0.0
        for p in self.kernels[variant]:
            streamed = max((t.seconds for t in p.terms if t.group == "memory"), default=0.0)
            if streamed > 0 and p.bytes > 0:
                moved += p.bytes
                memory += streamed
        return moved / memory if memory > 0 else None

    def level(self, variant: str) -> str:
        """The memory level (or levels, comma-separated) holding the variant's bytes."""
        return self.predictions[variant].level

    def main_memory(self, variant: str) -> bool:
        """Whether the model charges some of the variant's bytes to the outermost level."""
        order = self.roofs.levels()
        return bool(order) and order[-1] in self.level(variant).split(", ")

    def fresh_roof(self, variant: str) -> bool:
        """Whether the model priced some kernel of the variant on a write-new roof (measured
        writing a fresh output once per call)."""
        return any(name.endswith(f"{FRESH})") for name in self.predictions[variant].roofs)

    def bytes(self, variant: str) -> float:
        """The bytes the model priced: the bytes the kernels touch, times their trips."""
        return self.predictions[variant].bytes

    def counts(self, variant: str) -> tuple[int, int]:
        """(kernels, launches per call) of the variant's program."""
        kernels = self.inventories[variant].kernels
        return len(kernels), sum(kernel.trips for kernel in kernels)

    def bandwidth_text(self, variant: str) -> str:
        """'the 31.3 GB/s the model charges for DRAM' (or the level alone without traffic)."""
        bw = self.bandwidth(variant)
        level = self.level(variant)
        if bw is None:
            return f"the bandwidth the model charges for {level}"
        return f"the {format_si(bw, 'B/s')} the model charges for {level}"

    def note(self, variants: Sequence[str] | None = None) -> str:
        """Names the model and, for each of ``variants`` (default: all), its kernels and the
        term that binds it; then the model's own notes (roofs it had to do without)."""
        parts = []
        for v in variants if variants is not None else list(self.predictions):
            kernels, launches = self.counts(v)
            count = f"{kernels} kernel" + ("" if kernels == 1 else "s")
            if launches != kernels:
                count += f" ({launches} launches)"
            bound = self.bound(v)
            if bound == "memory":
                bound += f" ({self.level(v)})"
            parts.append(f"{self.labels.get(v, v)}: {count}, bound by {bound}")
        text = (
            f"the per-kernel model on {self.roofs.label}'s {self.roofs.kind.label} roofs: "
            + "; ".join(parts)
        )
        notes = dict.fromkeys(n for p in self.predictions.values() for n in p.notes)
        return text + (f" ({'; '.join(notes)})" if notes else "")

    def knee(self, labels: Sequence[str], xs: Sequence[float], unit: str
             ) -> tuple[Quantity, list[float], dict[str, Any] | None]:
        """The model's knee over a sweep: the prediction (in ``unit``, with how it was found
        and the model of the sweep's ends), the model's times at the points ``labels`` (at
        ``xs``) and their :func:`~roofline_report.analysis.experiments.knees.knee_fit`."""
        times = [self.seconds(x) for x in labels]
        fit = knee_fit(xs, times)
        predicted = None if fit is None else float(fit["knee"])
        prediction = Quantity(predicted, unit, self.kind,
                              f"{model_knee_note(fit)}; {self.note([labels[0], labels[-1]])}")
        return prediction, times, fit

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for v, p in self.predictions.items():
            kernels, launches = self.counts(v)
            out[v] = {
                "seconds": p.seconds,
                "terms": {g: p.group_seconds(g)
                          for g in ("compute", "memory", "pattern", "overhead")},
                "binding": p.binding.group,
                "bytes": p.bytes,
                "level": p.level,
                "bandwidth": self.bandwidth(v),
                "roofs": list(p.roofs),
                "notes": list(p.notes),
                "kernels": kernels,
                "launches": launches,
            }
        return out


def label(variant: str) -> str:
    """A variant's name as prose: 'one_array' -> 'one array'."""
    return variant.replace("_", " ")


def kernel_model(
    roofs: RoofSet | None,
    programs: Programs,
    dtypes: Mapping[str, str],
    labels: Mapping[str, str] | None = None,
) -> tuple[KernelModel | None, str]:
    """The per-kernel model of every variant in ``programs`` (in its dtype), or None and why
    not: no measured roofs, an incomplete set, a variant without an inventory, or one the model
    cannot price (no kernels listed)."""
    names = {v: (labels or {}).get(v, label(v)) for v in programs}
    if roofs is None:
        return None, "no measured roofs"
    if not roofs.complete:
        return None, "the measured roofs lack a compute or a bandwidth roof"
    inventories: dict[str, schema.KernelInventory] = {}
    missing: dict[str, str] = {}
    for v, inv in programs.items():
        if isinstance(inv, str):
            missing[v] = inv
        else:
            inventories[v] = inv
    if missing:
        if not inventories and set(missing.values()) == {NOT_RECORDED}:
            return None, NOT_RECORDED
        v, why = next(iter(missing.items()))
        return None, f"the {names[v]} program: {why}"
    predictions: dict[str, Prediction] = {}
    kernels: dict[str, list[Prediction]] = {}
    for v, inv in inventories.items():
        parts = predict_kernels(inv.kernels, dtypes[v], roofs, program_traffic(inv),
                                program_footprint(inv))
        p = predict_program(parts, roofs) if parts is not None else None
        if parts is None or p is None:
            why = "its inventory lists no kernels" if not inv.kernels else (
                "a roof it needs is missing")
            return None, f"the per-kernel model gives no time for the {names[v]} program: {why}"
        predictions[v], kernels[v] = p, parts
    return KernelModel(roofs, predictions, inventories, names, kernels), ""


def single_roof_note(note: str, why: str) -> str:
    """The single-roof prediction's note, with why the per-kernel model did not predict."""
    return f"{note}; single-roof model: {why}"
