"""Ceilings measured again when the run's own programs beat them (``--remeasure-if-suspect``).

After the programs are timed, the analysis checks the ceilings against them
(:mod:`roofline_report.analysis.roof_check`); when most programs ran faster than the roofs
allow, the ceilings (cached, or measured in this run while the machine was busier) are measured
once more, and the new ones replace them in the results and in the cache. The check runs on
the results measured so far: the programs, before any sweep or experiment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roofline_report.analysis.analyse import analyse
from roofline_report.analysis.roof_check_records import RoofCheck


def suspect(results: Mapping[str, Any]) -> RoofCheck | None:
    """The roof check of ``results`` (measured so far) when it finds the ceilings suspect, else
    None (also when the check cannot be made, and when the kernels above were held to the
    roofs of some kinds of work while the commonest roof held: measuring the ceilings again
    would measure those kinds the same way)."""
    ceilings = results.get("ceilings") or {}
    if not ceilings.get("available") or not results.get("workloads"):
        return None
    so_far = {**results, "sweeps": [], "skipped": [],
              "lab": {"available": False, "reason": "not measured yet"},
              "sharding": {"available": False, "reason": "not measured yet"}}
    try:
        check = analyse(so_far).roof_check
    except Exception:  # a check that cannot be made leaves the ceilings as they are
        return None
    return check if check is not None and check.suspect and not check.by_kind else None


def note(check: RoofCheck, cached: bool) -> str:
    """The note on ceilings measured again, for their ``origin``."""
    found, checked, noun = ((len(check.programs), check.programs_checked, "program")
                            if check.programs else
                            (len(check.kernels), check.kernels_checked, "kernel"))
    what = f"{found} of {checked} {noun}{'' if checked == 1 else 's'}"
    return (f"measured again in this run (--remeasure-if-suspect): {what} ran faster than the "
            f"{'cached' if cached else 'first'} ceilings allowed")


__all__ = ["note", "suspect"]
