"""Where a run's ceilings came from, and their age as of the run (pure; no clock).

A run either measured its ceilings or reused those saved in the ceilings cache
(``ceilings.origin`` in results.json). The age of reused ceilings is the time from their
measurement to the run's own ``generator.measured_at``: a report rendered again later says the
same, since the clock is never read.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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


def _time(text: Any) -> datetime.datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.datetime.strptime(text, _FORMAT).replace(tzinfo=datetime.UTC)
    except ValueError:
        return None


def ceilings_origin(doc: Mapping[str, Any]) -> CeilingsOrigin | None:
    """The origin of ``doc``'s ceilings; None where no ceilings are available. Ceilings without
    an ``origin`` record (runs saved before the cache) were measured in their run."""
    ceilings = doc.get("ceilings")
    if not isinstance(ceilings, Mapping) or not ceilings.get("available"):
        return None
    origin = ceilings.get("origin")
    run_at = (doc.get("generator") or {}).get("measured_at")
    if not isinstance(origin, Mapping):
        return CeilingsOrigin(cached=False, measured_at=run_at if isinstance(run_at, str)
                              else None, age_days=None, notes=())
    measured_at = origin.get("measured_at")
    then, now = _time(measured_at), _time(run_at)
    age = None
    if then is not None and now is not None and now >= then:
        age = int((now - then).total_seconds() // DAY_S)
    return CeilingsOrigin(cached=bool(origin.get("cached")),
                          measured_at=measured_at if isinstance(measured_at, str) else None,
                          age_days=age, notes=tuple(str(n) for n in origin.get("notes", ())))


__all__ = ["CeilingsOrigin", "ceilings_origin"]
