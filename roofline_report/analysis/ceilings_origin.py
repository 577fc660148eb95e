"""Where a run's ceilings came from, and their age as of the run (pure; no clock).

A run either measured its ceilings or reused those saved in the ceilings cache
(``ceilings.origin`` in results.json). The age of reused ceilings is the time from their
measurement to the run's own ``generator.measured_at``: a report rendered again later says the
same, since the clock is never read.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from roofline_report.results import schema

_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
DAY_S = 86_400


@dataclass(frozen=True, slots=True)
class CeilingsOrigin:
    """``cached``: reused from the cache; ``measured_at``: when they were measured (UTC, ISO
    8601); ``age_days``: whole days from then to the run's own time (None where either time is
    missing, or the run's is earlier: clocks that disagree); ``notes``: what the cache noted."""

    cached: bool
    measured_at: str | None
    age_days: int | None
    notes: tuple[str, ...]


def _time(text: str | None) -> datetime.datetime | None:
    if text is None:
        return None
    try:
        return datetime.datetime.strptime(text, _FORMAT).replace(tzinfo=datetime.UTC)
    except ValueError:
        return None


def ceilings_origin(results: schema.Results) -> CeilingsOrigin | None:
    """The origin of the run's ceilings; None where no ceilings are available. Ceilings
    without an ``origin`` record (runs saved before the cache) were measured in their run."""
    ceilings = results.ceilings
    if not isinstance(ceilings, schema.Ceilings):
        return None
    origin = ceilings.origin
    run_at = results.generator.measured_at
    if origin is None:
        return CeilingsOrigin(cached=False, measured_at=run_at, age_days=None, notes=())
    then, now = _time(origin.measured_at), _time(run_at)
    age = None
    if then is not None and now is not None and now >= then:
        age = int((now - then).total_seconds() // DAY_S)
    return CeilingsOrigin(cached=origin.cached, measured_at=origin.measured_at, age_days=age,
                          notes=tuple(origin.notes))


__all__ = ["CeilingsOrigin", "ceilings_origin"]
