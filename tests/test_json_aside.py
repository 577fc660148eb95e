"""The helper process that writes a large results document's text while the report renders."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from roofline_report.results import json_aside
from roofline_report.results.json_text import dumps


def _large(calls: int = 120_000) -> dict[str, Any]:
    """A profile-like document whose pickle is over the helper's threshold, with awkward
    values: floats that need all 17 digits, a NaN, non-ASCII text, nested layout levels."""
    return {"schema_version": 3, "title": "Zürich — µs",
            "workloads": [{"name": "user:jit_f", "kernel_timing": {
                "calls": [{"program_s": (i + 1) / 3e7, "busy_s": i * 1e-9 + 0.1 + 0.2,
                           "gaps_s": math.nan if i == 7 else 0.0} for i in range(calls)]}}]}


def test_a_large_document_is_written_by_the_helper_byte_for_byte() -> None:
    document = _large()
    with json_aside.Aside(document) as aside:
        assert aside._proc is not None, "the document is large enough for the helper"
        folder = aside._folder
        assert folder is not None and os.path.isdir(folder)
        text = aside.text()
    assert text == dumps(document)
    assert not os.path.exists(folder), "its files are removed"


def test_a_small_document_is_written_here() -> None:
    document = {"schema_version": 3, "x": [1.5, 2.0]}
    with json_aside.Aside(document) as aside:
        assert aside._proc is None and aside._folder is None
        assert aside.text() == dumps(document)


def test_a_helper_that_fails_leaves_the_text_to_this_process(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    failing = tmp_path / "python"
    failing.write_text("#!/bin/sh\nexit 1\n")
    failing.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(failing))
    document = _large()
    with json_aside.Aside(document) as aside:
        assert aside._proc is not None
        assert aside.text() == dumps(document)


def test_a_helper_that_cannot_start_leaves_the_text_to_this_process(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
    document = _large()
    with json_aside.Aside(document) as aside:
        assert aside._proc is None and aside._folder is None, "nothing left behind"
        assert aside.text() == dumps(document)


def test_leaving_early_stops_the_helper_and_removes_its_files() -> None:
    started: list[Any] = []
    with pytest.raises(KeyboardInterrupt), json_aside.Aside(_large()) as aside:
        started += [aside._proc, aside._folder]
        raise KeyboardInterrupt
    proc, folder = started
    assert proc is not None and folder is not None
    assert proc.poll() is not None, "the helper is not left running"
    assert not os.path.exists(folder)


def test_the_helper_writes_through_a_temporary_name(tmp_path: Path) -> None:
    import pickle

    document = _large(100)
    (tmp_path / "document.pickle").write_bytes(pickle.dumps(document))
    assert json_aside.main([str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["document.pickle", "results.json"]
    assert (tmp_path / "results.json").read_text(encoding="utf-8") == dumps(document)
