"""The report folder is swapped in whole, and only a folder the tool wrote is ever replaced."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline_report import output
from roofline_report.errors import InputError


def test_writes_a_new_folder_with_a_manifest(tmp_path: Path) -> None:
    out = tmp_path / "report"
    output.write_report(out, {"report.html": "<p>hi</p>\n", "figures/a.svg": "<svg/>\n"})
    assert (out / "report.html").read_text() == "<p>hi</p>\n"
    assert (out / "figures" / "a.svg").read_text() == "<svg/>\n"
    assert (out / output.MANIFEST).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]  # no staging left behind


def test_replaces_a_previous_report(tmp_path: Path) -> None:
    out = tmp_path / "report"
    output.write_report(out, {"report.html": "old\n", "figures/old.svg": "x\n"})
    output.write_report(out, {"report.html": "new\n"})
    assert (out / "report.html").read_text() == "new\n"
    assert not (out / "figures" / "old.svg").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


def test_failure_while_writing_keeps_the_previous_report(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "report"
    output.write_report(out, {"report.html": "old\n"})

    def boom(staging: Path, target: Path) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(output, "_swap", boom)
    with pytest.raises(KeyboardInterrupt):
        output.write_report(out, {"report.html": "new\n"})
    assert (out / "report.html").read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


def test_refuses_a_file(tmp_path: Path) -> None:
    f = tmp_path / "notes.txt"
    f.write_text("mine")
    with pytest.raises(InputError, match="is a file"):
        output.write_report(f, {"report.html": "x"})
    assert f.read_text() == "mine"


def test_refuses_a_foreign_non_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("mine")
    with pytest.raises(InputError, match="not empty"):
        output.write_report(tmp_path / "docs", {"report.html": "x"})
    assert (tmp_path / "docs" / "index.md").read_text() == "mine"


def test_refuses_a_previous_report_with_files_added_by_the_user(tmp_path: Path) -> None:
    out = tmp_path / "report"
    output.write_report(out, {"report.html": "old\n"})
    (out / "my-notes.txt").write_text("mine")
    with pytest.raises(InputError, match="did not write"):
        output.write_report(out, {"report.html": "new\n"})
    assert (out / "my-notes.txt").read_text() == "mine"
    assert (out / "report.html").read_text() == "old\n"


def test_refuses_a_project_root(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    with pytest.raises(InputError, match="project root"):
        output.check_destination(tmp_path)


def test_accepts_an_empty_folder(tmp_path: Path) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    output.write_report(out, {"report.html": "x\n"})
    assert (out / "report.html").read_text() == "x\n"
