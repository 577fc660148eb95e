"""Hand-built ceilings records for the analysis's tests, read as the typed record the analysis
takes (:class:`roofline_report.results.schema.Ceilings`), validated by the schema."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roofline_report.results import schema

#: The keys a ``Ceilings`` record must have that a test leaves out: no backend named, no cache
#: size, no compute or streaming ceiling, the dispatch floor not measured.
REQUIRED: dict[str, Any] = {
    "backend": "", "device_kind": "", "cache_bytes": None, "quick": True, "compute": [],
    "bandwidth": [], "dispatch": {"available": False, "reason": "not measured"},
}


def typed_ceilings(data: Mapping[str, Any]) -> schema.Ceilings:
    """``data`` (a plain ceilings record, as results.json holds it, perhaps with only the keys
    a test is about) as the typed record, the keys it leaves out from :data:`REQUIRED`."""
    return schema.Ceilings.model_validate({**REQUIRED, **data})
