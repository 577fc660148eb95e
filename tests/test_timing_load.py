"""A program timed while other processes held the machine's cores says so: the measured run
reads the load over its timing (injected readings here: no test depends on the real machine's
load), results.json keeps it, the API gives the share, the page says it beside the time, and a
program slower than predicted names it among the reasons."""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from roofline_report.analysis.explain import share_of_cores
from roofline_report.analysis.measuring_load import Load, load_of
from roofline_report.results import schema
from tests.test_explain import _prediction, _why

# A run of real programs (the held-out suite's second part on a TPU v5e).
FIXTURE = (Path(__file__).resolve().parent / "fixtures" / "tpu_v5e_results"
           / "heldout_part_b.json.gz")


def _loaded(share: float, cores: int = 2) -> dict[str, Any]:
    return {"wall_s": 2.0, "others_cpu_s": share * 2.0 * cores, "cores": cores,
            "loadavg": [1.5, 1.6]}


def test_a_timings_load_is_a_typed_record_and_a_load() -> None:
    record = schema.LoadReading.model_validate(_loaded(0.45))
    load = load_of(record)
    assert load is not None and load.loaded and load.others_share == pytest.approx(0.45)
    assert share_of_cores(load) == "45% of the 2 cores"
    assert load_of(None) is None
    quiet = load_of(schema.LoadReading.model_validate(_loaded(0.05)))
    assert quiet is not None and not quiet.loaded


def test_a_slow_program_timed_under_load_names_it() -> None:
    prediction = _prediction(1e-3)
    loaded = Load(wall_s=2.0, others_cpu_s=1.8, cores=2)  # 45% of 2 cores
    why = _why(prediction, 3e-3, load=loaded)
    assert "timed under load: other processes took 45% of the 2 cores while it was timed" \
        in why
    assert "under load" not in _why(prediction, 3e-3, load=Load(2.0, 0.1, 2))
    # a program faster than predicted: the load is not why
    assert "under load" not in _why(prediction, 0.3e-3, load=loaded)


@pytest.fixture(scope="module")
def document() -> Iterator[dict[str, Any]]:
    yield json.loads(gzip.decompress(FIXTURE.read_bytes()))


def _with_load(document: dict[str, Any], share: float | None) -> tuple[dict[str, Any], str]:
    doc = copy.deepcopy(document)
    timed = next(w for w in doc["workloads"]
                 if w.get("user") and (w.get("timing") or {}).get("available"))
    if share is not None:
        timed["timing_load"] = _loaded(share)
    return doc, timed["name"]


def test_the_api_and_the_page_say_a_program_was_timed_under_load(
        document: dict[str, Any]) -> None:
    from roofline_report.api import result_of
    from roofline_report.report import views as render

    doc, name = _with_load(document, 0.45)
    result = result_of(doc, name)
    assert result.timed_under_load == pytest.approx(0.45)
    assert result.to_dict()["timed_under_load"] == pytest.approx(0.45)
    page = render.render(doc).markdown
    assert ("Other processes took 45% of the 2 cores while it was timed (under load): its "
            "time may hold theirs.") in page
    assert page.count("(under load)") == 1  # the one program
    # quiet, or not read: nothing said, and None
    doc, name = _with_load(document, 0.05)
    assert result_of(doc, name).timed_under_load is None
    assert "(under load)" not in render.render(doc).markdown
    doc, name = _with_load(document, None)
    assert result_of(doc, name).timed_under_load is None


@pytest.mark.slow
def test_a_measured_program_records_the_load_over_its_timing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    jax = pytest.importorskip("jax")
    import roofline_report
    from roofline_report.observe.ceilings import load as machine_load

    readings = iter([machine_load.Sample(wall=10.0, busy_s=100.0, cores=2, own_s=5.0,
                                         loadavg=1.0),
                     machine_load.Sample(wall=12.0, busy_s=104.0, cores=2, own_s=6.0,
                                         loadavg=2.0)])
    monkeypatch.setattr(machine_load, "PROBE", lambda: next(readings))
    result = roofline_report.analyze(jax.jit(lambda x: x * 2.0), jax.numpy.ones(1024))
    # 4 s of the cores' busy time over 2 s, 1 s of it this process's: 3 s of 2 x 2 s = 75%
    assert result.record["timing_load"] == {"wall_s": 2.0, "others_cpu_s": 3.0, "cores": 2,
                                            "loadavg": [1.0, 2.0]}
    assert result.timed_under_load == pytest.approx(0.75)
