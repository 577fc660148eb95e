"""Device events that no HLO op claims, while a program ran (pure: no jax).

A GPU's device plane holds, besides the kernels XLA annotated with the HLO op they run (the
``hlo_op`` stat), events no op claims: memory copies, a runtime's copy kernels
(``__amd_rocclr_copyBuffer``), library internals, and now and then a kernel of the program
whose annotation the profiler missed (the first call's ``input_transpose_fusion_1`` in a
ROCm trace). They are not dropped: :func:`unclaimed` lists each name that ran on a device
between the program's first and last kernel there, with its events and their summed time, and
the program's kernel its name looks like, where one does (a kernel's symbol is its HLO name
with ``.`` spelt ``_``, and ``.kd`` after it on ROCm). :func:`several_kernels` names the ops
that ran as more than one device kernel.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from roofline_report.ingest import timeline
from roofline_report.traces.kernel_names import by_symbol, symbol
from roofline_report.traces.xspace import EventColumns, XSpace

__all__ = ["Unclaimed", "several_kernels", "unclaimed"]


@dataclass(frozen=True, slots=True)
class Unclaimed:
    name: str
    events: int
    seconds: float  # summed durations over the trace, while the program ran
    like: str | None  # the program's kernel whose name it looks like

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "events": self.events, "seconds": self.seconds,
                "like": self.like}


def unclaimed(space: XSpace, lane: timeline.Lane, module: str,
              kernels: Iterable[str]) -> list[Unclaimed]:
    """The events of ``lane``'s device plane with no ``hlo_op`` that ran between ``module``'s
    first and last kernel on it, by name, the longest first. None on a TPU: every event of its
    op lines is an HLO instruction's (claimed by its program, :mod:`roofline_report.traces.
    tpu_ops`), and its other lines (modules, steps) span the ops."""
    plane = space.plane(f"/device:{lane.device}") if lane.on_device else None
    if plane is None or lane.device.startswith("TPU"):
        return []
    k = lane.kernels
    ours = np.flatnonzero(k.as_array("modules") == module)
    if not len(ours):
        return []
    first = float(k.start_ns[ours].min())
    last = float((k.start_ns[ours] + k.duration_ns[ours]).max())
    named = by_symbol(kernels)
    found: dict[str, list[float]] = {}
    for line in plane.lines:
        events = line.events
        if isinstance(events, EventColumns):  # picked from the columns, none built but these
            start, duration = events.start_ns, events.duration_ns
            rows = np.flatnonzero(~events.stats.having(events.meta, "hlo_op") & (duration > 0)
                                  & (start < last) & (start + duration > first))
            names, _, took, _ = events.columns(rows, "hlo_op")
            for name, d in zip(names, took, strict=True):
                found.setdefault(name, []).append(d * 1e-9)
            continue
        for e in events:
            if "hlo_op" in e.stats or e.duration_ns <= 0:
                continue
            if e.start_ns >= last or e.start_ns + e.duration_ns <= first:
                continue
            found.setdefault(e.name, []).append(e.duration_ns * 1e-9)
    out = [Unclaimed(name, len(d), sum(d), named.get(symbol(name)))
           for name, d in found.items()]
    return sorted(out, key=lambda u: (-u.seconds, u.name))


def several_kernels(lane: timeline.Lane, module: str,
                    kernels_of: Iterable[str] | None = None) -> dict[str, list[str]]:
    """The HLO ops of ``module`` that ran on ``lane`` as more than one device kernel (a
    convolution as an im2col and a gemm), with their kernels' names in the order first run;
    every event of such an op is the op's (the per-kernel times sum them). Given the program's
    kernels (``kernels_of``), only ops among them: a command buffer's thunk names every kernel
    of its graph, which are matched by their own names
    (:mod:`roofline_report.traces.kernel_names`). None on a TPU: each of its op events is one
    HLO instruction (an asynchronous op's start and done are its two halves, both the start's
    kernel's time, not kernels of their own)."""
    if lane.device.startswith("TPU"):
        return {}
    # Each (op, kernel) pair once, in the order first run (a dict keeps its first insertion;
    # a lane's kernels are in time order, and every one holds an hlo_op).
    k = lane.kernels
    ours = k.as_array("modules") == module
    ops, kernels = k.stat("hlo_op"), k.names()
    if not ours.all():
        at = np.flatnonzero(ours).tolist()
        ops, kernels = [ops[j] for j in at], [kernels[j] for j in at]
    # The distinct raw pairs in the order first run (zip and dict in C), then as written.
    pairs = dict.fromkeys((str(op), kernel.removesuffix(".kd"))
                          for op, kernel in dict.fromkeys(zip(ops, kernels, strict=True)))
    names: dict[str, list[str]] = {}
    known = set(kernels_of) if kernels_of is not None else None
    for op, kernel in pairs:
        if known is None or op in known:
            names.setdefault(op, []).append(kernel)
    return {op: kernels for op, kernels in sorted(names.items()) if len(kernels) > 1}


def summary(items: Sequence[Unclaimed]) -> str:
    """One line naming them, for a note."""
    return ", ".join(f"{u.name} x{u.events}" for u in items)
