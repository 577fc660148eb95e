"""An asynchronous copy is charged what of its transfer the kernels issued beside it leave
(:mod:`roofline_report.analysis.async_exposure`): the kernels between its start and its done
recorded by the inventory, and the waits on its done in a real TPU v5e trace of a Mamba block
(tests/fixtures/tpu_v5e_updates/: its trace, and the ceilings measured on that chip)."""

from __future__ import annotations

import functools
import gzip
from pathlib import Path
from typing import Any

import pytest

from roofline_report.analysis.analyse import analyse
from roofline_report.analysis.async_exposure import EXPOSED, expose, slack
from roofline_report.analysis.on_chip import ON_CHIP_DETAIL
from roofline_report.analysis.predict import Prediction
from roofline_report.analysis.terms import Term
from roofline_report.hlo.kernels import kernel_inventory
from roofline_report.ingest.pipeline import read_profile
from roofline_report.ingest.records import results_document
from roofline_report.kinds import Kind
from roofline_report.results import schema

HERE = Path(__file__).resolve().parent / "fixtures" / "tpu_v5e_updates"
MAMBA = "heldout_mamba_selective_scan_tpu"


@functools.cache
def _inventory() -> dict[str, Any]:
    return kernel_inventory(gzip.decompress((HERE / f"{MAMBA}.txt.gz").read_bytes()).decode())


def _record(name: str) -> schema.KernelRecord:
    [k] = [k for k in _inventory()["kernels"] if k["name"] == name]
    return schema.KernelRecord.model_validate(k)


def test_the_inventory_records_the_kernels_issued_between_a_start_and_its_done() -> None:
    kernels = {k["name"]: k for k in _inventory()["kernels"]}
    # a 64 MiB copy out of vector memory issued right before its done
    assert kernels["copy-start.4"]["overlapped_by"] == []
    assert kernels["copy-start.1"]["overlapped_by"] == ["fusion.27", "fusion.26"]
    # kernels of a loop scheduled between count too
    assert "dynamic_update_slice.8" in kernels["slice-start.1"]["overlapped_by"]
    assert all(k["overlapped_by"] is None for k in kernels.values() if not k["asynchronous"])


def _prediction(seconds: float, terms: tuple[Term, ...], transfer: Term | None = None
                ) -> Prediction:
    return Prediction(seconds, terms, terms[0], 0.0, 0.0, "", "HBM", transfer=transfer)


def _term(name: str, group: Any, seconds: float, detail: str = "") -> Term:
    return Term(name, group, seconds, "a roof", Kind.MEASURED, detail)


def test_a_transfer_hides_behind_compute_and_vector_memory_not_behind_hbm_traffic() -> None:
    issue = _term("launch", "overhead", 0.2e-6)
    transfer = _term("memory", "memory", 50e-6)
    copy = _prediction(0.2e-6, (issue,), transfer)
    compute = _prediction(60e-6, (_term("elementwise", "compute", 60e-6),
                                  _term("memory", "memory", 10e-6),
                                  _term("memory", "memory", 55e-6, ON_CHIP_DETAIL)))
    streaming = _prediction(60e-6, (_term("memory", "memory", 60e-6),))
    assert slack(compute) == pytest.approx(50e-6)  # its HBM term aside, not its on-chip one
    assert slack(streaming) == 0.0 and slack(copy) == 0.0
    start, first, second = _record("copy-start.1"), _record("fusion.27"), _record("fusion.26")
    hidden = expose([start, first, second], [copy, compute, streaming])
    assert hidden[0] is not None and hidden[0].seconds == pytest.approx(0.2e-6)
    exposed = expose([start, first, second], [copy, streaming, streaming])
    assert exposed[0] is not None and exposed[0].binding.name == EXPOSED
    assert exposed[0].seconds == pytest.approx(50.2e-6)
    assert "exposed" in exposed[0].notes[-1]
    assert exposed[1:] == [streaming, streaming]  # the others unchanged
    # nothing between: the whole transfer
    alone = expose([_record("copy-start.4")], [copy])[0]
    assert alone is not None and alone.seconds == pytest.approx(50.2e-6)
    # kernels not recorded (a document written before they were): left as priced
    unknown = _record("copy-start.4").model_copy(update={"overlapped_by": None})
    assert expose([unknown], [copy]) == [copy]


@functools.cache
def _rows() -> dict[str, Any]:
    doc = results_document(read_profile(HERE / "mamba_trace",
                                        ceilings=HERE / "ceilings_results.json", jobs=1))
    [program] = [p for p in analyse(doc).programs
                 if p.kernels is not None]
    assert program.kernels is not None
    return {r.name: r for r in program.kernels.rows}


def test_a_tpu_v5e_waited_on_the_copies_nothing_hid_as_predicted() -> None:
    rows = _rows()
    for name in ("copy-start.4", "copy-start.5", "copy-start.7"):  # 64, 64, 32 MiB alone
        row = rows[name]
        assert row.prediction is not None and row.seconds is not None
        assert row.prediction.seconds == pytest.approx(row.seconds, rel=0.1), name
    for name in ("copy-start.1", "copy-start.2"):  # 32 MiB beside two compute-bound kernels
        row = rows[name]
        assert row.prediction is not None and row.seconds is not None
        assert row.prediction.seconds < 1e-6 and row.seconds < 1e-6, name
