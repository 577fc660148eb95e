"""Per-kernel times of a TPU trace read whole (pure: no jax).

A measured run traces its program and times each kernel from the trace
(:mod:`roofline_report.observe.trace`). On a TPU the events that time the kernels are the
device plane's op events, which name their instructions and programs only in their metadata
(:mod:`roofline_report.traces.tpu_ops`): ``jax.profiler.ProfileData`` does not give those, so
the measured run reads its TPU trace with the project's reader and times it here, by the same
lanes, views and timing as ``roofline-report profile`` (:mod:`.timeline`,
:func:`roofline_report.traces.events.kernel_times`), so the two paths give the same per-kernel
times of the same trace.

:func:`unseen_note` says which kernels of the inventory no op event ran: a TPU runs scalar
instructions (a step counter's add, an optimizer's power of a scalar) on its scalar unit between
ops, and its profiler records no op event for them; their time is unknown, not zero.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from roofline_report.ingest import timeline
from roofline_report.traces.events import kernel_times
from roofline_report.traces.xspace import XSpace

__all__ = ["has_tpu_ops", "tpu_kernel_times", "unseen_note"]

TPU_PLANE = "/device:TPU:"
UNSEEN_LISTED = 5  # kernels named in the note


def has_tpu_ops(space: XSpace) -> bool:
    """Whether the trace has a TPU device plane (whose op events time the kernels)."""
    return any(p.name.startswith(TPU_PLANE) for p in space.planes)


def unseen_note(timing: Mapping[str, Any], kernels: Iterable[str] | None,
                device: str) -> str | None:
    """The note naming the kernels of ``kernels`` (the inventory's) that no op event of the
    timing ran, on a TPU; None where every kernel ran or the timing has none."""
    if kernels is None or not timing.get("available"):
        return None
    timed = {str(k["name"]) for k in timing.get("kernels") or []}
    unseen = [k for k in kernels if k not in timed]
    if not unseen:
        return None
    named = ", ".join(unseen[:UNSEEN_LISTED]) + (", ..." if len(unseen) > UNSEEN_LISTED else "")
    return (f"{len(unseen)} kernel(s) of the program ran no op event on {device} ({named}): "
            "a TPU's profiler records none for the scalar instructions its scalar unit runs "
            "between ops (nor for a branch not taken), so their time is unknown")


def _program_ids(lane: timeline.Lane, module: str) -> list[int]:
    """The program of ``module`` with the most op events on ``lane`` (several programs may
    share a name: another shape compiled before)."""
    ours = lane.kernels.as_array("modules") == module
    counts = Counter(p for p in lane.kernels.as_array("programs")[ours].tolist()
                     if isinstance(p, int))
    return [counts.most_common(1)[0][0]] if counts else []


def tpu_kernel_times(space: XSpace, *, module: str | None,
                     kernels: Iterable[str] | None = None, calls: int = 1,
                     wants: Mapping[str, int] | None = None, cores: int | None = None,
                     launches: Mapping[str, int] | None = None) -> dict[str, Any]:
    """:func:`~roofline_report.traces.events.kernel_times` of the program ``module`` (its
    name without the program id; None: the one with the most op time) on the first TPU of
    ``space`` that ran it, as ``roofline-report profile`` times it: per step where the trace
    marks steps, else per call (by the module executions' run ids), each call as long as its
    execution. The other arguments as :func:`~roofline_report.traces.events.kernel_times`
    takes them."""
    order: Sequence[str] | None = list(kernels) if kernels is not None else None
    lanes = [lane for lane in timeline.lanes(space) if lane.device.startswith("TPU")]
    if not lanes:
        return {"available": False,
                "reason": "the trace holds no op event of a TPU (another profiler may have been "
                          "running)"}
    summaries = timeline.modules(lanes)
    chosen = module if module is not None else summaries[0].name
    lane = next((lane for lane in lanes if chosen in set(lane.kernels.modules())), None)
    if lane is None:
        seen = ", ".join(m.name for m in summaries[:5])
        return {"available": False,
                "reason": f"the trace's TPU op events hold no op of {chosen} (programs seen: "
                          f"{seen})"}
    view = timeline.profile_for(space, lane, chosen, _program_ids(lane, chosen),
                                markers=timeline.steps(space), trips=launches)
    timing = kernel_times(view, module=chosen, kernels=order, calls=view.calls, wants=wants,
                          cores=cores, launches=launches)
    if timing.get("available"):
        note = unseen_note(timing, order, lane.device)
        timing["notes"] = [*timing["notes"], *view.notes, *([note] if note else [])]
    return timing
