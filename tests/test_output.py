"""The report folder is swapped in whole, and only a folder the tool wrote is ever replaced."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

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


# ------------------------------------------------------------------ refused at once, no walk


def _no_walking(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any recursive walk of a folder fail the test."""

    def walk(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("check_destination walked a tree")

    monkeypatch.setattr(Path, "rglob", walk)
    monkeypatch.setattr(Path, "glob", walk)
    monkeypatch.setattr(Path, "iterdir", walk)
    monkeypatch.setattr(os, "walk", walk)


@pytest.mark.parametrize("folder", ["/", "/usr", "/etc", "/var", "/opt", "/srv", "/bin", "/tmp"])
def test_refuses_the_root_and_system_folders_without_listing_them(
        folder: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_walking(monkeypatch)

    def no_listing(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("check_destination listed a system folder")

    monkeypatch.setattr(os, "scandir", no_listing)
    started = time.perf_counter()
    # A home folder that is itself a system folder (a service user's /tmp) is refused as home.
    with pytest.raises(InputError,
                       match=r"root of the file system|system folder|your home folder") as info:
        output.check_destination(Path(folder))
    assert time.perf_counter() - started < 1.0
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("folder", ["/proc/roofline-report-test", "/sys/x", "/dev/x/y",
                                    "/usr/share/roofline-report", "/etc/report"])
def test_refuses_anything_inside_system_trees(folder: str) -> None:
    with pytest.raises(InputError, match="inside the system folder"):
        output.check_destination(Path(folder))
    assert not Path(folder).exists()


def test_refuses_the_home_folder_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("mine")
    monkeypatch.setenv("HOME", str(home))
    _no_walking(monkeypatch)
    with pytest.raises(InputError, match="home folder"):
        output.check_destination(home)
    with pytest.raises(InputError, match="home folder"):
        output.check_destination(home / "sub" / "..")
    output.check_destination(home / "report")  # a new folder inside it is fine


def test_refuses_a_large_foreign_folder_at_its_first_entry(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "big"
    big.mkdir()
    for i in range(300):
        (big / f"f{i}").write_text("x")
    _no_walking(monkeypatch)
    seen: list[str] = []
    real_scandir = os.scandir

    class Counting:
        def __init__(self, path: Any) -> None:
            self.inner = real_scandir(path)

        def __enter__(self) -> Counting:
            return self

        def __exit__(self, *exc: object) -> None:
            self.inner.close()

        def __iter__(self) -> Counting:
            return self

        def __next__(self) -> os.DirEntry[str]:
            entry = next(self.inner)
            seen.append(entry.name)
            return entry

    monkeypatch.setattr(os, "scandir", Counting)
    with pytest.raises(InputError, match="not empty"):
        output.check_destination(big)
    assert len(seen) == 1
    seen.clear()
    (big / output.MANIFEST).write_text('{"files": ["report.html"], "tool": "roofline-report"}')
    with pytest.raises(InputError, match="did not write"):
        output.check_destination(big)
    assert len(seen) <= 3  # the manifest and report.html at most, then the first foreign entry


def test_refuses_a_user_file_inside_a_report_subfolder(tmp_path: Path) -> None:
    out = tmp_path / "report"
    output.write_report(out, {"report.html": "old\n", "figures/a.svg": "<svg/>\n"})
    output.check_destination(out)  # a previous report alone is replaced
    (out / "figures" / "mine.svg").write_text("mine")
    with pytest.raises(InputError, match=r"figures/mine\.svg"):
        output.write_report(out, {"report.html": "new\n"})
    assert (out / "figures" / "mine.svg").read_text() == "mine"


def test_refuses_a_folder_where_the_report_had_a_file(tmp_path: Path) -> None:
    out = tmp_path / "report"
    output.write_report(out, {"report.html": "old\n"})
    (out / "report.html").unlink()
    (out / "report.html").mkdir()
    (out / "report.html" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match=r"report\.html"):
        output.check_destination(out)


def test_refuses_an_empty_foreign_subfolder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "drafts").mkdir(parents=True)
    with pytest.raises(InputError, match="not empty"):
        output.check_destination(out)


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_writability_is_probed_not_guessed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Even where permissions say yes (root on /proc), a folder that refuses new entries is found
    out before anything is measured."""
    monkeypatch.setattr(output, "SYSTEM_FOLDERS", ())
    monkeypatch.setattr(output, "SYSTEM_TREES", ())
    monkeypatch.setattr(os, "access", lambda *_a, **_k: True)
    with pytest.raises(InputError, match="cannot write in proc"):
        output.check_destination(Path("/proc/roofline-report-test/report"))


def test_the_probe_leaves_nothing_behind(tmp_path: Path) -> None:
    output.check_destination(tmp_path / "new" / "report")
    assert list(tmp_path.iterdir()) == []


def test_refuses_a_path_under_a_file(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match=r"notes\.txt is a file"):
        output.check_destination(tmp_path / "notes.txt" / "report")
