"""Child processes: every one the tool starts is started here (no jax).

The helpers and workers (the results.json text written aside, a trace's lines decoded aside,
several hosts' traces read side by side, the sharded measurement, the copy that writes half of
a report's figures) start one way: a fresh interpreter that imports the module named and runs
its ``main()`` (:func:`start`), or a fork of this process (:func:`fork`). Each child gets the
same environment (:func:`environment`), a child that cannot start raises :class:`NotStarted`
(the caller then does its work itself, or says why), and each child is recorded while it runs,
inside an interrupt's critical section, so that an interrupted build stops every child it
started before the process ends (:func:`roofline_report.interrupts.on_stop`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from roofline_report import interrupts

__all__ = ["ROOT", "NotStarted", "end", "end_fork", "environment", "fork", "start"]

#: The folder holding the package: a child imports it from there, as this process does.
ROOT = str(Path(__file__).resolve().parents[1])

#: The children running now, each with what stops it.
_running: dict[int, Callable[[], None]] = {}


class NotStarted(Exception):
    """A child process could not be started (no interpreter to start, a path it cannot take,
    no fork): ``error`` is the reason."""

    def __init__(self, error: OSError | ValueError) -> None:
        super().__init__(str(error))
        self.error = error


def environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A child's environment: this process's with ``extra`` over it, the package's folder first
    on ``PYTHONPATH``, and without the test hook that makes a build interrupt itself (an
    interrupt a test asks for is meant for the build, not its children)."""
    env = {k: v for k, v in os.environ.items() if k != interrupts.TEST_HOOK}
    env.update(extra or {})
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH", "")) if p)
    return env


def _stop_all() -> None:
    for stop in list(_running.values()):
        with contextlib.suppress(OSError):
            stop()


def start(module: str, args: Sequence[str] = (), *, isolated: bool = True,
          env: Mapping[str, str] | None = None, cwd: str | None = None,
          capture: bool = False) -> subprocess.Popen[Any]:
    """Start a fresh interpreter that runs ``module``'s ``main()`` with ``args`` (its
    ``sys.argv[1:]``) and exits with what it returns.

    ``isolated`` (a helper that imports only the package, its dependencies and the standard
    library): the interpreter runs with ``-I``, away from the ``PYTHON*`` variables and the
    user's ``sitecustomize``, on this process's import path, and nothing is read from or
    written to its standard streams. Otherwise (a child that imports the
    user's modules, as the sharded measurement does) it runs in ``cwd`` with the user's paths,
    and with ``capture`` its output and errors come back as text (``communicate()``). ``env``
    is its whole environment, made by :func:`environment` (by default with nothing added).

    The child is recorded until :func:`end`; raises :class:`NotStarted` if it cannot start.
    """
    # An isolated interpreter drops the user's site and PYTHONPATH, where the package's own
    # dependencies may live (protobuf installed with --user, or from a folder on PYTHONPATH):
    # it takes this process's import path instead, the package's folder first.
    path = [ROOT, *(p for p in sys.path if p and p != ROOT)] if isolated else [ROOT]
    code = (f"import sys; sys.path[:0] = {path!r}; "
            f"from {module} import main; raise SystemExit(main())")
    command = [sys.executable, *(["-I"] if isolated else []), "-c", code, *args]
    streams: dict[str, Any] = {"stdin": subprocess.DEVNULL}
    if capture:
        streams.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    else:
        streams.update(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with interrupts.critical():  # started and recorded with no interrupt between
        try:
            proc: subprocess.Popen[Any] = subprocess.Popen(
                command, env=environment() if env is None else env, cwd=cwd, **streams)
        except (OSError, ValueError) as exc:
            raise NotStarted(exc) from exc
        _running[id(proc)] = proc.kill
    return proc


def end(proc: subprocess.Popen[Any]) -> None:
    """Stop ``proc`` if it still runs, wait for it, and forget it."""
    with interrupts.critical():
        try:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        finally:
            _running.pop(id(proc), None)


def fork() -> int:
    """``os.fork()``: 0 in the child, the child's id here (recorded until :func:`end_fork`).
    Raises :class:`NotStarted` if the process cannot fork."""
    with interrupts.critical():
        try:
            pid = os.fork()
        except OSError as exc:
            raise NotStarted(exc) from exc
        if pid:
            _running[-pid] = lambda: os.kill(pid, signal.SIGKILL)
    return pid


def end_fork(pid: int) -> None:
    """Stop the forked child ``pid``, wait for it, and forget it."""
    with interrupts.critical():  # not stopped twice: its id may be another's once waited for
        try:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        finally:
            _running.pop(-pid, None)


interrupts.add_stop(_stop_all)
