"""A profile's per-call samples in results.json's compact forms: written shorter, read back
value for value, and refused in one line where the written form is not well formed."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from roofline_report.errors import InputError
from roofline_report.results import io as results
from roofline_report.results.per_call_columns import SAME_AS, compact, expand

FIXTURE = Path(__file__).parent / "fixtures" / "cpu_results.json"


def _timed(document: dict[str, Any]) -> dict[str, Any]:
    """The first workload's kernel timing (the fixture's seed matmul, five traced calls)."""
    for workload in document["workloads"]:
        timing = workload.get("kernel_timing")
        if isinstance(timing, dict) and timing.get("kernels"):
            return timing
    raise AssertionError("the fixture has a kernel timing")


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return results.load(FIXTURE)


def test_the_written_form_reads_back_value_for_value(document: dict[str, Any]) -> None:
    document = copy.deepcopy(document)
    kernel = _timed(document)["kernels"][0]
    # The fixture's first kernel ran alone: its span is its busy time; give it a share of the
    # machine that is not.
    assert kernel["span_s"] == kernel["busy_s"]
    kernel["share_s"] = [x / 3 for x in kernel["busy_s"]]
    assert results.loads(results.dumps(document)) == document, "the doctored document is valid"
    before = copy.deepcopy(document)
    text = results.dumps(document)
    assert document == before, "writing does not change the document"
    assert results.loads(text) == document
    written = _timed(json.loads(text))
    assert written["kernels"][0]["span_s"] == SAME_AS
    assert written["kernels"][0]["share_s"] == kernel["share_s"]
    assert len(text) < len(json.dumps(document)), "shorter than the full form"
    calls = _timed(document)["calls"]
    assert written["calls"] == {key: [c[key] for c in calls] for key in calls[0]}


def test_the_full_form_still_loads(document: dict[str, Any]) -> None:
    """A file written before the compact forms (the fixture itself) loads as it did."""
    text = FIXTURE.read_text(encoding="utf-8")
    assert isinstance(_timed(json.loads(text))["calls"], list)
    assert results.loads(text) == document


def test_expand_undoes_compact_and_copies_what_it_rewrites(document: dict[str, Any]) -> None:
    small = compact(document)
    assert small is not document
    assert _timed(document)["calls"] is not _timed(dict(small))["calls"]
    back = expand(small)
    assert back == document
    kernel = _timed(dict(back))["kernels"][0]
    assert kernel["span_s"] is not kernel["busy_s"], "a repeated column comes back a new list"
    assert compact({"schema_version": 3}) == {"schema_version": 3}
    assert expand({"workloads": "not a list"}) == {"workloads": "not a list"}


def test_calls_of_different_keys_stay_records() -> None:
    timing = {"calls": [{"a": 1.0}, {"b": 2.0}], "kernels": []}
    doc = {"workloads": [{"kernel_timing": timing}]}
    assert compact(doc) is doc


_COLUMNS = "kernel_timing.calls: written as columns"


@pytest.mark.parametrize(("change", "where"), [
    (lambda t: t["kernels"][0].__setitem__("span_s", "wait_s"), "span_s"),
    (lambda t: t["calls"]["busy_s"].pop(), f"{_COLUMNS}, whose lengths differ (4, 5)"),
    (lambda t: t["calls"].__setitem__("busy_s", 1.0), f"{_COLUMNS}, which must be lists"),
    (lambda t: t["calls"].pop("gaps_s"), "gaps_s"),
    (lambda t: t.__setitem__("calls", {}), f"{_COLUMNS}, of which there are none"),
])
def test_a_malformed_written_form_is_refused_in_one_line(
        document: dict[str, Any], change: Any, where: str) -> None:
    written = json.loads(results.dumps(document))
    change(_timed(written))
    with pytest.raises(InputError) as err:
        results.loads(json.dumps(written), source="doctored.json")
    message = str(err.value)
    assert message.startswith("doctored.json: ") and "\n" not in message
    assert where in message
