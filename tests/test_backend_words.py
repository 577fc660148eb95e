"""Each page sentence states the backend it holds for: a CPU's model (split launches, page
faults, worker threads) is never the one told for an accelerator's programs, and a TPU's kernel
times, which ran one after another, are not said to have been shared."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from roofline_report.analysis.analyse import analyse
from roofline_report.analysis.kernels import _overlapped
from roofline_report.report import views
from roofline_report.report.model_words import ACCELERATOR_MODEL_TEXT, MODEL_TEXT
from tests.kernel_records import kernel_time

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "cpu_results.json"


def test_the_model_is_told_as_the_backend_runs_it() -> None:
    data = json.loads(FIXTURE.read_text())
    as_tpu = copy.deepcopy(data)
    as_tpu["environment"]["backend"] = "tpu"
    texts = {name: views.view_model_of(analyse(doc)).measured.model_text
             for name, doc in (("cpu", data), ("tpu", as_tpu))}
    assert texts["cpu"] == MODEL_TEXT and texts["tpu"] == ACCELERATOR_MODEL_TEXT
    for words in ("split-launch", "page fault", "worker threads", "glibc"):
        assert words in MODEL_TEXT and words not in ACCELERATOR_MODEL_TEXT
    for words in ("longer of the two", "on-chip rate", "asynchronous copy"):
        assert words in ACCELERATOR_MODEL_TEXT and words not in MODEL_TEXT


def test_shares_are_said_only_where_kernels_overlapped() -> None:
    alone = kernel_time(launches=[1, 1], busy_s=[1e-3, 2e-3], share_s=[1e-3, 2e-3])
    beside = kernel_time(launches=[1, 1], busy_s=[1e-3, 2e-3], share_s=[0.5e-3, 2e-3])
    assert not _overlapped(alone) and _overlapped(beside)
    assert not _overlapped(kernel_time(launches=[1, 1], busy_s=[1e-3, 2e-3]))  # no shares
