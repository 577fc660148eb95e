"""Figures' SVG written on two cores: a forked copy of the renderer writes every second figure,
and the report is the same byte for byte, whatever the copy does."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from roofline_report.report import svg_sharing
from roofline_report.report import views as render
from roofline_report.results import io as results

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "cpu_results.json"
HERE = os.getpid()


pytestmark = pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")


@pytest.fixture(autouse=True)
def _two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a machine of two cores, whatever this one has, in a process without jax (other
    tests import it; the copies here run no jax); sharing not turned off."""
    monkeypatch.setattr(svg_sharing, "_cores", lambda: 2)
    monkeypatch.setattr(svg_sharing, "_jax_loaded", lambda: False)
    monkeypatch.delenv(svg_sharing.ENV_VAR, raising=False)


def _by_pid(i: int) -> str:
    return f"figure {i} written by {os.getpid()}"


def _each(write: Callable[[int], str], names: Callable[[int], str], count: int) -> list[str]:
    """``count`` figures met in order inside a share, figure i named ``names(i)``."""
    return [svg_sharing.written(names(i), functools.partial(write, i)) for i in range(count)]


def _name(i: int) -> str:
    return f"f{i}"


def _figures(count: int = 7) -> list[str]:
    with svg_sharing.sharing():
        return _each(_by_pid, _name, count)


def test_the_copy_writes_every_second_figure() -> None:
    texts = _figures()
    assert texts[0::2] == [_by_pid(i) for i in range(0, 7, 2)], "written here"
    for i, text in zip(range(1, 7, 2), texts[1::2], strict=True):
        assert text.startswith(f"figure {i} written by ")
        assert text != _by_pid(i), "written by the copy, another process"
    assert svg_sharing._current == [], "the share ends with the block"


@pytest.mark.slow
def test_a_report_rendered_on_two_cores_is_the_same_byte_for_byte(
        monkeypatch: pytest.MonkeyPatch) -> None:
    data = results.load(FIXTURE)
    written_by_copy: list[str] = []
    wait = svg_sharing._Share._wait

    def counted(self: svg_sharing._Share, index: int, name: str) -> str | None:
        text = wait(self, index, name)
        if text is not None:
            written_by_copy.append(name)
        return text

    monkeypatch.setattr(svg_sharing._Share, "_wait", counted)
    shared = render.render(data)
    assert len(written_by_copy) >= 2, "the copy wrote some of the figures"
    monkeypatch.setenv(svg_sharing.ENV_VAR, "1")
    written_by_copy.clear()
    alone = render.render(data)
    assert written_by_copy == []
    assert shared.html == alone.html and shared.markdown == alone.markdown
    assert shared.figures == alone.figures


def test_a_figure_the_copy_fails_on_is_written_here() -> None:
    def write(i: int) -> str:
        if os.getpid() != HERE and i == 3:
            raise RuntimeError("the copy fails here")
        return _by_pid(i)

    with svg_sharing.sharing():
        texts = _each(write, _name, 7)
    assert texts[1] != _by_pid(1), "the copy wrote the one before it fails"
    assert texts[3] == _by_pid(3) and texts[5] == _by_pid(5), "after it: all here"


def test_a_figure_the_copy_names_otherwise_is_written_here() -> None:
    with svg_sharing.sharing():
        texts = _each(_by_pid, lambda i: "other" if os.getpid() != HERE and i == 3
                      else _name(i), 5)
    assert texts[1] != _by_pid(1)
    assert texts[3] == _by_pid(3), "the renderings differ at it: not taken from the copy"


def test_a_copy_that_stalls_is_waited_for_once_and_only_so_long(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(svg_sharing, "WAIT_S", 1.0)

    def write(i: int) -> str:
        if os.getpid() != HERE:
            time.sleep(60)
        return _by_pid(i)

    start = time.monotonic()
    with svg_sharing.sharing():
        texts = _each(write, _name, 12)  # six figures the copy would write
    assert texts == [_by_pid(i) for i in range(12)]
    # Waited for the first of the copy's figures only (six waits would take 6 s), and the
    # stalled copy is stopped, not waited for, at the end.
    assert time.monotonic() - start < 4


@pytest.mark.parametrize("why", ["turned off", "cores taken", "one core", "jax", "nested"])
def test_without_a_second_core_every_figure_is_written_here(
        why: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if why == "turned off":
        monkeypatch.setenv(svg_sharing.ENV_VAR, "1")
        assert _figures() == [_by_pid(i) for i in range(7)]
    elif why == "cores taken":
        with svg_sharing.cores_taken(1):
            assert _figures() == [_by_pid(i) for i in range(7)]
        assert svg_sharing._taken == []
    elif why == "one core":
        monkeypatch.setattr(svg_sharing, "_cores", lambda: 1)
        assert _figures() == [_by_pid(i) for i in range(7)]
    elif why == "jax":
        monkeypatch.setattr(svg_sharing, "_jax_loaded", lambda: True)
        assert _figures() == [_by_pid(i) for i in range(7)]
    else:
        with svg_sharing.sharing():
            outer = svg_sharing._current[-1]
            inner = _figures()
            assert svg_sharing._current == [outer]
        assert inner[1] != _by_pid(1), "the outer share's copy writes the inner figures"


def test_an_error_here_stops_the_copy_and_leaves_no_files(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    with pytest.raises(ValueError, match="here"), svg_sharing.sharing():
        svg_sharing.written("f0", lambda: _by_pid(0))
        if os.getpid() == HERE:
            raise ValueError("here")
    assert svg_sharing._current == []
    assert list(tmp_path.iterdir()) == [], "the copy's folder is removed"


@pytest.mark.slow
@pytest.mark.parametrize("large", [False, True])
def test_the_report_writer_leaves_the_core_the_json_helper_holds(
        large: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from roofline_report import output
    from roofline_report.results import json_aside

    data = results.load(FIXTURE)
    if large:
        monkeypatch.setattr(json_aside, "ASIDE_BYTES", 0)  # this document goes to the helper
    seen: list[bool] = []
    real = render.render

    def recording(*args: object, **kwargs: object) -> render.Rendered:
        seen.append(svg_sharing._enabled())
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(render, "render", recording)
    output.write_results(tmp_path / "r", data, source="fixture")
    assert seen == [not large], "sharing only where the helper leaves two cores"
    assert svg_sharing._taken == []
