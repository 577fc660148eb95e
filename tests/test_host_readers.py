"""Hosts read side by side in worker processes (roofline_report.ingest.host_readers): the same
readings as one after another, the same first error, and the hosts read here where a worker
cannot start or fails."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from roofline_report.errors import InputError
from roofline_report.ingest import host_readers, pipeline
from roofline_report.ingest.pipeline import read_profile
from roofline_report.ingest.records import results_document

TWO_HOSTS = Path(__file__).parent / "fixtures" / "traces" / "two_hosts"


def _document(path: Path, jobs: int) -> str:
    return json.dumps(results_document(read_profile(path, jobs=jobs)), sort_keys=True)


@pytest.fixture
def parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers even for the fixture's two small hosts."""
    monkeypatch.setattr(host_readers, "PARALLEL_BYTES", 0)


def test_hosts_go_to_the_least_loaded_worker_largest_first() -> None:
    assert host_readers.shares([5, 1, 9, 3], 2) == [[2], [0, 1, 3]]
    assert host_readers.shares([4, 4, 4], 2) == [[0, 2], [1]]
    assert host_readers.shares([7], 3) == [[0]]  # workers without a host are dropped


def test_workers_read_what_one_process_reads(parallel: None,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[Any] = []
    popen = subprocess.Popen

    def counted(*args: Any, **kwargs: Any) -> Any:
        started.append(args)
        return popen(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", counted)
    alone = _document(TWO_HOSTS, jobs=1)
    assert not started  # one job: read here
    here: list[Any] = []
    read_host = pipeline.read_host

    def read_here(f: Any) -> Any:
        here.append(f)
        return read_host(f)

    monkeypatch.setattr(pipeline, "read_host", read_here)
    assert _document(TWO_HOSTS, jobs=2) == alone
    assert len(started) == 2 and not here  # one worker a host, and nothing read here


def test_below_the_threshold_the_hosts_are_read_here(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a worker was started")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    assert _document(TWO_HOSTS, jobs=8)


@pytest.mark.parametrize("broken", ["start", "request"])
def test_a_worker_that_cannot_start_or_fails_has_its_hosts_read_here(
        parallel: None, monkeypatch: pytest.MonkeyPatch, broken: str) -> None:
    alone = _document(TWO_HOSTS, jobs=1)
    if broken == "start":  # no interpreter to start
        monkeypatch.setattr(sys, "executable", "/nonexistent/python3")
    else:  # the request is written where the workers do not look: each exits 1
        monkeypatch.setattr(host_readers, "_REQUEST", "elsewhere-{}.pickle")
    assert _document(TWO_HOSTS, jobs=2) == alone


def test_the_first_bad_host_in_order_is_the_error(parallel: None, tmp_path: Path) -> None:
    (run,) = (TWO_HOSTS / "plugins" / "profile").iterdir()
    copy = tmp_path / "plugins" / "profile" / run.name
    shutil.copytree(run, copy)
    second = copy / "host1.xplane.pb.gz"
    second.write_bytes(second.read_bytes()[:200])  # truncated
    with pytest.raises(InputError) as alone:
        read_profile(tmp_path, jobs=1)
    with pytest.raises(InputError) as workers:
        read_profile(tmp_path, jobs=2)
    assert str(workers.value) == str(alone.value)
    assert "host1" in str(alone.value)


def test_jobs_must_be_a_whole_number_of_at_least_one(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from roofline_report import cli
    from roofline_report.profile_cli import profile

    bad: Any
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(InputError, match="jobs= must be a whole number"):
            profile(TWO_HOSTS, jobs=bad)
    capsys.readouterr()
    assert cli.main(["profile", str(TWO_HOSTS), "--out", str(tmp_path / "out"),
                     "--jobs", "0"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("error: roofline-report profile: argument --jobs: '0' is not a whole "
                           "number of at least 1")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("jobs", "helped"), [(1, False), (2, True), (None, True)])
def test_one_job_decodes_in_this_process_alone(monkeypatch: pytest.MonkeyPatch,
                                               jobs: int | None, helped: bool) -> None:
    """--jobs 1: no worker and no line helper; more: the line helper where a trace is large
    enough (under the threshold here, so no worker); the flag is restored after."""
    from roofline_report.traces import line_aside

    seen: list[bool] = []
    read_host = pipeline.read_host

    def read_here(f: Any) -> Any:
        seen.append(line_aside.helping)
        return read_host(f)

    monkeypatch.setattr(pipeline, "read_host", read_here)
    read_profile(TWO_HOSTS, jobs=jobs)
    assert seen == [helped, helped]
    assert line_aside.helping
    with line_aside.alone(), pytest.raises(RuntimeError):
        assert not line_aside.helping
        raise RuntimeError
    assert line_aside.helping  # restored on an error too
