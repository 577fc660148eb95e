"""The answer's ``record`` is the program's record as results.json holds it: made from the
typed workload by the dump the results writer uses, it equals the file's record key for key,
with no default the file left out added (no jax)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from roofline_report.api import result_of
from roofline_report.results import io as results_io

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "cpu_results.json"


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_the_record_is_the_workload_as_the_file_holds_it(document: dict[str, Any]) -> None:
    for workload in document["workloads"]:
        answer = result_of(document, workload["name"])
        assert answer.record == workload, workload["name"]
        assert answer.to_dict()["record"] == workload, workload["name"]


def test_the_record_leaves_out_the_defaults_the_file_left_out(
        document: dict[str, Any]) -> None:
    workload = document["workloads"][0]
    record = result_of(document, workload["name"]).record
    # A key the schema defaults and this file does not hold stays absent.
    assert "trace" not in workload and "trace" not in record
    typed = results_io.typed(document).workloads[0]
    assert typed.trace is None and typed.host_dispatch is None
    assert "host_dispatch" not in record


def test_each_record_is_a_fresh_copy(document: dict[str, Any]) -> None:
    answer = result_of(document, document["workloads"][0]["name"])
    answer.record["title"] = "changed"
    assert answer.record["title"] == document["workloads"][0]["title"]


def test_every_answer_of_a_tpu_run_has_its_plain_form() -> None:
    """A TPU run's programs hold custom calls the count cannot price (no flops, no bytes): their
    kernels' roofs have no part to name, and the plain form says so rather than failing."""
    import gzip

    path = FIXTURE.parent / "tpu_v5e_results" / "heldout_part_a.json.gz"
    document = json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))
    unnamed = 0
    for workload in document["workloads"]:
        plain = result_of(document, workload["name"]).to_dict()
        for kernel in plain.get("kernels") or []:
            roof = kernel.get("hardware_roof")
            if roof is not None and not roof["parts"]:
                assert roof["roofs"] is None and roof["seconds"] == 0
                unnamed += 1
    assert unnamed > 0  # the fixture holds such kernels (the case this checks)
