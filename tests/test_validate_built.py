"""A document this tool built is validated with a long trace's call records checked all at
once: it refuses what full validation refuses, with the same one-line error."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest

from roofline_report.errors import InputError
from roofline_report.results import io as results

FIXTURE = Path(__file__).parent / "fixtures" / "cpu_results.json"


@pytest.fixture(scope="module")
def long_trace() -> dict[str, Any]:
    """The fixture with its first traced workload's calls repeated past CALLS_AT_ONCE."""
    document = results.load(FIXTURE)
    for workload in document["workloads"]:
        timing = workload.get("kernel_timing")
        if isinstance(timing, dict) and timing.get("calls"):
            calls = timing["calls"]
            timing["calls"] = [dict(calls[i % len(calls)])
                               for i in range(results.CALLS_AT_ONCE + 7)]
            return document
    raise AssertionError("the fixture has a traced workload")


def _calls(document: dict[str, Any]) -> list[dict[str, Any]]:
    return next(w["kernel_timing"]["calls"] for w in document["workloads"]
                if isinstance(w.get("kernel_timing"), dict) and w["kernel_timing"].get("calls"))


def test_a_well_formed_long_trace_passes_as_in_full(long_trace: dict[str, Any]) -> None:
    results.validate(long_trace)
    results.validate_built(long_trace)


def _outcome(check: Any, document: dict[str, Any]) -> str:
    try:
        check(document, source="built")
    except InputError as exc:
        return str(exc)
    return "accepted"


@pytest.mark.parametrize(("change", "refused"), [
    (lambda c: c.__setitem__("gaps_s", -1e-6), True),
    (lambda c: c.__setitem__("dispatch_s", True), True),
    (lambda c: c.__setitem__("program_s", "1e-3"), True),
    (lambda c: c.pop("loop_control_s"), True),
    (lambda c: c.__setitem__("extra_s", 0.0), True),
    # Not all at once (an infinite time): validated in full, which accepts it (the text
    # writes it as null, which loading then refuses).
    (lambda c: c.__setitem__("busy_s", math.inf), False),
])
def test_a_bad_record_past_the_first_gets_what_full_validation_gives(
        long_trace: dict[str, Any], change: Any, refused: bool) -> None:
    document = copy.deepcopy(long_trace)
    change(_calls(document)[results.CALLS_AT_ONCE])
    full = _outcome(results.validate, document)
    assert _outcome(results.validate_built, document) == full
    assert (full != "accepted") is refused
    if refused:
        assert "calls" in full and "\n" not in full


def test_a_record_that_is_not_a_mapping_is_refused(long_trace: dict[str, Any]) -> None:
    document = copy.deepcopy(long_trace)
    calls: list[Any] = _calls(document)
    calls[-1] = [1.0, 2.0]
    with pytest.raises(InputError):
        results.validate_built(document)
