"""The hardware roof at a kernel's or a program's intensity (no jax): what the machine allows
its work and its bytes, against which its achieved rate is a share (headroom), apart from the
model's prediction (whose miss is its accuracy).

A kernel's roof is the roofline's ``min(compute, bandwidth × intensity)`` for its own mix of
work, as a time per call::

    compute = matrix-product flops ÷ its dtype's matmul roof (an integer product's at its
              integer type's, a product asking for the highest precision at the roof measured
              at it, where one was)
            + convolution flops ÷ the convolution roof (grouped ones ÷ the grouped-convolution
              roof nearest their window)
            + conversions ÷ the conversion rate
            + other flops ÷ the multiply-add rate of the dtype it computes in (the matmul roof
              where none was measured)
              (a reduction's own adds, and the conversions it does in its loads where its
              row reduction was measured in its 16-bit type, left out as the prediction
              leaves them: the reduction's code path, as a pattern's is)
            + each transcendental ÷ its function's rate
    memory  = the bytes it touches ÷ the fastest roof of the memory level holding its working
              set (read where the level meets main memory at its size and its program's
              traffic, as the model reads it; not the write-new roof: writing into fresh
              pages is a cost a program can avoid)
    at the roof = trips × max(compute, memory)

On a TPU (roofs whose ``units_overlap``) its matrix, vector and transcendental units work side
by side, as its HBM and its core's own memory do: compute is the busiest unit's sum, memory the
larger of its HBM bytes at the HBM roof and its on-chip bytes at the on-chip rate.

Each roof at its peak, its ``value``: unlike the prediction, not a product's rate read at its
size, nor a kernel's share of the worker threads, nor the launch floor, the dispatch, page
faults or a pattern's code path. Those are what a kernel loses below its roof, which is what
headroom measures. A program's roof sums its charged kernels' compute parts and their memory
parts and takes the larger: the roof at the program's intensity, with each kernel's bytes at
its own level's roof.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from roofline_report.analysis.convolution_roofs import convolution_parts
from roofline_report.analysis.hardware_roof import HardwareRoof, RoofPart
from roofline_report.analysis.on_chip import ON_CHIP
from roofline_report.analysis.predict import (
    Facts,
    function_rate,
    kernel_facts,
    reduction_work,
)
from roofline_report.analysis.roofs import RoofSet
from roofline_report.results import schema

__all__ = ["facts_roof", "kernel_roof", "program_roof"]

Group = Literal["compute", "memory"]


def facts_roof(f: Facts, roofs: RoofSet, traffic: float | None = None, trips: int = 1
               ) -> HardwareRoof | None:
    """The roof of ``trips`` launches of work ``f`` (see the module docstring) in a program
    moving ``traffic`` bytes per call; None where ``roofs`` lack a compute or a bandwidth
    roof."""
    compute = roofs.compute_for(f.dtype)
    memory = roofs.bandwidth_for(f.bytes, None, program=True, passes=f.passes, traffic=traffic)
    if compute is None or memory is None:
        return None
    parts: list[RoofPart] = []
    engines: list[str] = []  # the unit each part runs on, where units work side by side

    def add(group: Group, work: float, name: str, value: float, unit: str,
            engine: str = "") -> None:
        if work > 0 and value > 0:
            parts.append(RoofPart(group, name, trips * work, trips * work / value, unit))
            engines.append(engine or group)

    matmul = f.dot_flops - f.conv_flops
    products = compute
    if f.matmul_dtype is not None:
        integer = roofs.compute_for(f.matmul_dtype)
        products = integer if integer is not None and integer.dtype == f.matmul_dtype \
            else compute
    elif f.precision == "highest" and compute.precision != "highest":
        products = roofs.compute_at_precision(f.dtype, "highest") or compute
    add("compute", matmul, products.name, products.value, "FLOP/s", "matrix")
    convs, _ = convolution_parts(roofs, f.dtype, compute, f.convolutions)
    for c in convs:  # each at its roof's peak
        add("compute", c.flops, c.roof.name, c.roof.value, "FLOP/s", "matrix")
    arithmetic = "float32" if f.converts else f.dtype
    # A reduction's adds and the widening it does in its loads are its own code path's work
    # (as the prediction prices them), not arithmetic or conversions at their peaks.
    _, reducing, widened = reduction_work(f, roofs)
    convert = roofs.rate_for("convert", "float32")
    if convert is not None:
        add("compute", f.converts - widened, convert.name, convert.value, "op/s", "vector")
    other = f.other_flops - reducing + f.recomputed_flops + f.complex_flops
    fma = roofs.rate_for("multiply-add", arithmetic)
    if fma is not None:
        add("compute", other, fma.name, fma.value, "FLOP/s", "vector")
    else:
        add("compute", other, compute.name, compute.value, "FLOP/s", "vector")
    for op, n in sorted(f.evaluated().items()):
        rate = function_rate(op, roofs, arithmetic)[0] or roofs.rate_for("exp", arithmetic)
        if rate is not None:
            add("compute", n, rate.name, rate.value, "op/s", "transcendental")
    add("memory", f.bytes, memory.name, memory.value, "B/s", "memory")
    if f.on_chip:
        chip = roofs.rate_for(ON_CHIP, "float32")
        if chip is not None:
            add("memory", f.on_chip, chip.name, chip.value, "B/s", "on chip")
    if roofs.units_overlap:
        parts = _overlapping(parts, engines)
    return HardwareRoof(trips * f.flops, trips * f.bytes, _merged(parts), roofs.kind)


def _overlapping(parts: list[RoofPart], engines: list[str]) -> list[RoofPart]:
    """Where a backend's units work side by side (a TPU's matrix, vector and transcendental
    units; its HBM and its on-chip memory), a kernel's compute at the roof is its busiest
    unit's and its memory its busiest memory's: the parts of the others run hidden behind
    them and are left out."""
    kept: list[RoofPart] = []
    for group in ("compute", "memory"):
        totals: dict[str, float] = {}
        for x, engine in zip(parts, engines, strict=True):
            if x.group == group:
                totals[engine] = totals.get(engine, 0.0) + x.seconds
        if not totals:
            continue
        busiest = max(sorted(totals), key=lambda e: totals[e])
        kept += [x for x, engine in zip(parts, engines, strict=True)
                 if x.group == group and engine == busiest]
    return kept


def kernel_roof(kernel: schema.KernelRecord, dtype: str, roofs: RoofSet,
                traffic: float | None = None) -> HardwareRoof | None:
    """The roof of a kernel of the inventory per call of its program (its trips included), in
    the dtype it computes in (``dtype``, the program's, where it moves no float)."""
    return facts_roof(kernel_facts(kernel, dtype), roofs, traffic, max(1, kernel.trips))


def program_roof(kernels: Iterable[HardwareRoof | None]) -> HardwareRoof | None:
    """The roof at a program's intensity from its charged kernels' roofs: their compute parts
    summed against their memory parts summed; None without kernels or where one has no
    roof."""
    roofs = list(kernels)
    if not roofs or any(r is None for r in roofs):
        return None
    known = [r for r in roofs if r is not None]
    parts = [x for r in known for x in r.parts]
    return HardwareRoof(sum(r.flops for r in known), sum(r.bytes for r in known),
                        _merged(parts), known[0].kind)


def _merged(parts: Iterable[RoofPart]) -> tuple[RoofPart, ...]:
    """Parts of the same group and roof summed, the largest first (ties by name)."""
    summed: dict[tuple[str, str], RoofPart] = {}
    for x in parts:
        key = (x.group, x.name)
        was = summed.get(key)
        summed[key] = x if was is None else RoofPart(x.group, x.name, was.work + x.work,
                                                     was.seconds + x.seconds, x.unit)
    return tuple(sorted(summed.values(), key=lambda x: (-x.seconds, x.group, x.name)))
