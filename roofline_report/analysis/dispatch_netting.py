"""Rates measured one call per sample, net of the dispatch each call paid (pure; no jax).

A ceiling timed by size, one call a sample, includes the call's dispatch in its time; a kernel
inside a program pays none. These take the enqueued dispatch floor (or a size's own call timed
without its kernel) off each size's time before the rate is read, and fit the dispatch's cost
per buffer passed: :func:`~roofline_report.analysis.roofs.measured` builds its roofs from them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from roofline_report.analysis import levels as levels_mod
from roofline_report.results import schema

__all__ = ["DISPATCH_FLOOR_BUFFERS", "net_of_dispatch", "net_of_dispatch_times", "per_buffer",
           "positive", "products_net_of_dispatch"]


def positive(value: object) -> float | None:
    """``value`` as a float where it is a finite positive number (not a bool); else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


#: The buffers of the scalar add the enqueued dispatch floor times: two arguments, one result.
DISPATCH_FLOOR_BUFFERS = 3


def per_buffer(points: Sequence[schema.BufferDispatch]) -> tuple[float, int]:
    """(seconds per buffer, the buffers of the floor it adds to) of the dispatch measured by
    buffers: the least-squares slope of the enqueued time over the buffers passed (0 where
    fewer than two counts were measured or the slope is not positive: below the noise)."""
    xy = [(float(p.buffers), float(p.enqueued)) for p in points
          if positive(p.buffers) and positive(p.enqueued)]
    if len({x for x, _ in xy}) < 2:
        return 0.0, DISPATCH_FLOOR_BUFFERS
    mx = sum(x for x, _ in xy) / len(xy)
    my = sum(y for _, y in xy) / len(xy)
    slope = (sum((x - mx) * (y - my) for x, y in xy)
             / sum((x - mx) ** 2 for x, _ in xy))
    return (slope if slope > 0 else 0.0), DISPATCH_FLOOR_BUFFERS


def products_net_of_dispatch(points: Sequence[schema.MatmulSize], dispatch: float | None,
                              overlaps: bool = False) -> tuple[tuple[float, float], ...]:
    """(flops of one product, FLOP/s) of a compute roof's sizes. Each size was timed one call
    at a time, its dispatch included, so its rate is the one net of the enqueued dispatch floor
    (as a product inside a program pays none; where the dispatch ``overlaps`` the device's
    work, a call's time is the device's); a call of ``batch`` small products is read at the
    flops of one of them."""
    out: list[tuple[float, float]] = []
    for x in points:
        flops, value = positive(x.flops), positive(x.value)
        if flops is None or value is None:
            continue
        net = net_of_dispatch_times([(flops, flops / value)], dispatch, overlaps)
        out.extend((f / x.batch, rate) for f, rate in net)
    return tuple(sorted(out))


def net_of_dispatch(points: Sequence[schema.RateSize], dispatch: float | None,
                     overlaps: bool = False) -> tuple[tuple[float, float], ...]:
    """(elements, elements per second) of a rate measured by size, one call per sample, with
    the enqueued dispatch floor taken off each call's time (:func:`net_of_dispatch_times`);
    a size also timed without its kernel (``alone``: the same buffers in and out) takes that
    call's time off instead, at any size the difference leaves positive: its dispatch is
    the very call's, not the floor's."""
    own = [(float(p.elements), float(p.seconds - p.alone)) for p in points
           if p.alone is not None and p.seconds > p.alone]
    sized = {e for e, _ in own}
    rest = net_of_dispatch_times([(p.elements, p.seconds) for p in points
                                   if float(p.elements) not in sized], dispatch, overlaps)
    return tuple(sorted([*rest, *((e, e / t) for e, t in own)]))


def net_of_dispatch_times(points: Sequence[tuple[float, float]], dispatch: float | None,
                           overlaps: bool = False) -> tuple[tuple[float, float], ...]:
    """(elements, elements per second) of (elements, seconds per call) measured one call per
    sample, with the enqueued dispatch floor taken off each call's time (where the dispatch
    ``overlaps`` the device's work, an accelerator's, the call's time is the device's and
    nothing is taken off); a point under
    :data:`~roofline_report.analysis.levels.DISPATCH_MARGIN` dispatches is mostly dispatch and
    left out, as the write-new sweep's are."""
    out = []
    for count, time in points:
        seconds, elements = positive(time), positive(count)
        if seconds is None or elements is None:
            continue
        if dispatch:
            if seconds < levels_mod.DISPATCH_MARGIN * dispatch:
                continue
            if not overlaps:
                seconds -= dispatch
        out.append((elements, elements / seconds))
    return tuple(sorted(out))
