"""Which roof each part of a kernel's convolution flops runs under, in one place: the
prediction prices each part at its roof's rate at the part's size, the hardware roof at that
roof's peak (pure; no jax).

A kernel's convolution flops split four ways: dense 1-D ones (a sequence's) at the 1-D
convolution roof read at their filter's size, grouped (depthwise) ones at the grouped roof read
at their taps, a bare one XLA:CPU hands to no library at the generic convolutions' roof read at
its window's size, the rest at the convolution roof read at their patch matrix's size where it was
recorded (else at their flops): the weight gradients' roof where the largest of them is the
gradient of a filter, else the padded convolutions' roof where it pads its input, else the
unpadded one's. A part whose roof was not measured falls to the convolution roof (a weight
gradient first to the padded one where it pads), and a note says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline_report.analysis.roofs import (
    GENERIC_CONVOLUTION,
    PADDED_CONVOLUTION,
    WEIGHT_GRADIENT,
    ComputeRoof,
    RoofSet,
)


@dataclass(frozen=True, slots=True)
class ConvolutionPart:
    """``flops`` of a kernel's convolutions priced at ``roof``, at ``rate`` FLOP/s for their
    size; ``detail`` names the kind ("" for plain convolutions). ``priced``: the flops their
    time is priced at where those differ (a padded grouped convolution's, as if its taps on
    the padding counted); 0: ``flops``."""

    flops: float
    roof: ComputeRoof
    rate: float
    detail: str = ""
    priced: float = 0.0

    @property
    def seconds(self) -> float:
        """The time the part is priced at."""
        return (self.priced or self.flops) / self.rate


@dataclass(frozen=True, slots=True)
class Convolutions:
    """A kernel's convolutions as the roofs price them: ``flops`` in all; ``grouped`` of them
    grouped, of ``taps`` multiply-adds an output, ``grouped_taps_flops`` had every tap landed
    on the input (their time goes with their outputs; 0: not recorded); ``line`` of them dense
    1-D ones, whose largest filter has ``line_filter`` elements; ``generic`` of them run by
    XLA:CPU's own code, over a window of ``generic_window`` elements; the largest of the rest
    with a patch matrix of ``patch`` elements (0: not recorded), ``padded`` where it pads its
    input, ``weight_gradient`` where it is the gradient of a filter."""

    flops: float
    grouped: float = 0.0
    taps: int = 0
    grouped_taps_flops: float = 0.0
    line: float = 0.0
    line_filter: int = 0
    generic: float = 0.0
    generic_window: int = 0
    patch: int = 0
    padded: bool = False
    weight_gradient: bool = False


def convolution_parts(roofs: RoofSet, dtype: str, fallback: ComputeRoof, kernel: Convolutions
                      ) -> tuple[list[ConvolutionPart], list[str]]:
    """The parts of a ``kernel``'s convolutions in ``dtype``, each with its roof (the
    convolution roof, else ``fallback``, where a part's own was not measured), and the notes
    saying which fell back."""
    flops, grouped, taps = kernel.flops, kernel.grouped, kernel.taps
    line, line_filter, patch = kernel.line, kernel.line_filter, kernel.patch
    generic, generic_window = kernel.generic, kernel.generic_window
    conv = roofs.compute_for(dtype, op="convolution") or fallback
    parts: list[ConvolutionPart] = []
    notes: list[str] = []
    dense = flops - grouped
    if line:
        # A sequence's convolution runs at a rate its filter sets: its own roof.
        found = roofs.line_convolution(dtype, line_filter)
        if found is None:
            notes.append(f"no 1-D convolution roof measured: 1-D convolutions at the "
                         f"{conv.name} roof")
        else:
            parts.append(ConvolutionPart(line, found[0], found[1], "1-D convolution"))
            dense -= line
    if generic:
        # A convolution no library takes runs on XLA:CPU's generic code, far below them all.
        own = roofs.compute_for(dtype, op=GENERIC_CONVOLUTION)
        if own is None:
            notes.append(f"no generic convolution roof measured: a convolution no library "
                         f"takes at the {conv.name} roof")
        else:
            parts.append(ConvolutionPart(generic, own,
                                         own.rate_at_window(generic_window, generic),
                                         "generic convolution"))
            dense -= generic
    if dense > 0:
        image = _image_roof(roofs, dtype, conv, kernel.padded, kernel.weight_gradient, notes)
        parts.append(ConvolutionPart(dense, image,
                                     image.rate_at(image.patch_flops(patch, dense))))
    if grouped:
        # A grouped (depthwise) convolution runs far below a dense one: its own roof, measured
        # unpadded. Its time goes with its outputs: a padded one is priced at its flops as if
        # its taps on the padding counted.
        priced = max(grouped, kernel.grouped_taps_flops)
        at = roofs.grouped_convolution(dtype, priced, taps)
        if at is None:
            notes.append("no grouped-convolution roof measured: grouped convolutions at the "
                         f"{conv.name} roof")
            at = (conv, conv.rate_at(grouped))
            priced = grouped
        parts.append(ConvolutionPart(grouped, at[0], at[1], "grouped convolution",
                                     priced if priced > grouped else 0.0))
    return parts, notes


def _image_roof(roofs: RoofSet, dtype: str, conv: ComputeRoof, padded: bool,
                weight_gradient: bool, notes: list[str]) -> ComputeRoof:
    """The roof of a dense image convolution: a weight gradient's runs below a forward one,
    a padded ("same") one on a faster path than an unpadded one; a note for each roof that
    was not measured."""
    if weight_gradient:
        found = roofs.compute_for(dtype, op=WEIGHT_GRADIENT)
        if found is not None:
            return found
        notes.append("no weight-gradient convolution roof measured: weight gradients at the "
                     + ("padded convolutions' roof" if padded else f"{conv.name} roof"))
    if padded:
        found = roofs.compute_for(dtype, op=PADDED_CONVOLUTION)
        if found is not None:
            return found
        notes.append(f"no padded convolution roof measured: padded convolutions at the "
                     f"{conv.name} roof")
    return conv


__all__ = ["ConvolutionPart", "Convolutions", "convolution_parts"]
