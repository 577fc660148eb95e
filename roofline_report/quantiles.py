"""The one quantile of roofline-report (no jax, no analysis): linear interpolation between
order statistics, numpy's default (Hyndman & Fan type 7), and the median by it. It sits below
the readers of traces and the analysis, which both use it; :mod:`roofline_report.analysis.stats`
builds every timing statistic on it."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["median", "quantile"]


def quantile(ordered: Sequence[float], p: float) -> float:
    """Quantile of sorted data by linear interpolation between order statistics.

    This is numpy's default method ('linear', Hyndman & Fan type 7): position h = (n - 1) p.
    """
    h = (len(ordered) - 1) * p
    lo = math.floor(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


def median(values: Sequence[float]) -> float | None:
    """The median by :func:`quantile`; None for no values."""
    return quantile(sorted(values), 0.5) if values else None
