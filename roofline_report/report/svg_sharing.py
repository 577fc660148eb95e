"""A report's figures written as SVG on two cores (no jax).

matplotlib's SVG writer takes about 40% of a report's rendering (12 figures of the default
build: 1.4 of 3.4 s on a 2-core CPU), one figure after another on one core. Inside
:func:`sharing`, this process forks a copy of itself which runs the same rendering: the figures
come in the same order in both (rendering is a pure function of the results), and the copy
writes every second one (the second, the fourth, ...) while this process writes the others:
both build every figure, and each writes half. This process takes the copy's SVG text from a
file the copy writes, waiting for it where it is not yet written. The copy's own page is thrown
away. (Taking turns beats claiming each figure first come, first served: the copy, which writes
nothing to read back, reaches each figure first and would write them all.)

The text is the same as this process would write (the same function on the same figure); a
figure the copy wrote under another name (the two renderings differing), or did not write
because it failed, stopped or took more than :data:`WAIT_S` (after which the copy is not waited
for again), is written here instead, so the report never depends on the copy. Figures are
written here one after another without ``os.fork``, with one usable core, with :data:`ENV_VAR`
set to 1, in a process running jax (a build that measured: its runtime's threads may hold locks
a copy would wait on), and while another helper holds the second core (:func:`cores_taken`: the
results.json text of a long profile is written by one; a third busy process on two cores made a
100 MB profile 0.4 s slower, not faster).

The copy is forked from a process that may hold other threads (numpy's): it runs only
matplotlib's and this package's Python code, and it is stopped when the rendering ends,
whether the page needed it or not.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import struct
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

from roofline_report import children

__all__ = ["ENV_VAR", "WAIT_S", "cores_taken", "sharing", "written"]

ENV_VAR = "ROOFLINE_REPORT_SVG_JOBS"  # "1": every figure written in this process
WAIT_S = 30.0  # the longest wait for one figure from the copy before writing it here
_HERE, _COPY = 0, 1  # which process writes a figure: its index modulo 2
_INDEX = struct.Struct("<I")


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


_taken: list[int] = []  # cores other helpers of this process hold, while they hold them


@contextlib.contextmanager
def cores_taken(count: int) -> Iterator[None]:
    """Inside, ``count`` cores are held by other helper processes: the copy is forked only
    where two cores are left."""
    _taken.append(count)
    try:
        yield
    finally:
        _taken.pop()


def _jax_loaded() -> bool:
    """Whether jax runs in this process: its runtime's threads may hold locks a forked copy
    would wait on forever (jax warns of a fork for that reason)."""
    return "jax" in sys.modules


def _enabled() -> bool:
    return (hasattr(os, "fork") and os.environ.get(ENV_VAR, "").strip() != "1"
            and not _jax_loaded() and _cores() - sum(_taken) >= 2)


class _Share:
    """One side of a shared rendering: which side it is, the folder the copy writes its SVGs
    to, and the pipe it says each one is written on."""

    def __init__(self, side: int, folder: Path, fd: int) -> None:
        self.side = side
        self.folder = folder
        self.fd = fd  # the copy: the pipe's write end; this process: its read end
        self.count = 0  # figures met so far
        self.ready: set[int] = set()  # this process: the copy's figures written
        self.closed = False  # this process: the copy closed the pipe (ended)

    def _path(self, index: int) -> Path:
        return self.folder / f"{index}.svg"

    def take(self, name: str, write: Callable[[], str]) -> str:
        index = self.count
        self.count += 1
        owner = index % 2
        if self.side == _COPY:
            if owner != _COPY:
                return ""  # this process's figure: the copy's page is thrown away
            text = write()
            part = self._path(index).with_suffix(".part")
            part.write_text(f"{name}\n{text}", encoding="utf-8")
            part.rename(self._path(index))
            os.write(self.fd, _INDEX.pack(index))
            return text
        if owner == _COPY:
            got = self._wait(index, name)
            if got is not None:
                return got
        return write()

    def _wait(self, index: int, name: str) -> str | None:
        """The copy's text of figure ``index``, or None where it has not written it as
        ``name`` within WAIT_S."""
        deadline = time.monotonic() + WAIT_S
        while index not in self.ready and not self.closed:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                self.closed = True  # a copy this slow is not waited for again
                return None
            data = os.read(self.fd, 4096)
            if not data:
                self.closed = True
                break
            whole = len(data) - len(data) % _INDEX.size
            self.ready.update(i for (i,) in _INDEX.iter_unpack(data[:whole]))
        if index not in self.ready:
            return None
        try:
            head, _, text = self._path(index).read_text(encoding="utf-8").partition("\n")
        except OSError:
            return None
        return text if head == name else None


_current: list[_Share] = []  # the active share of this process, while :func:`sharing` runs


def written(name: str, write: Callable[[], str]) -> str:
    """A figure's SVG text: ``write()``'s, made here or by the copy (inside :func:`sharing`),
    or made here (outside)."""
    if _current:
        return _current[-1].take(name, write)
    return write()


@contextlib.contextmanager
def sharing() -> Iterator[None]:
    """Figures met inside (by :func:`written`) are shared with a forked copy that runs the
    same code (see the module docstring). The code inside must be a pure function of its
    inputs: the copy runs it too, and ends when it leaves the block."""
    if _current or not _enabled():
        yield
        return
    folder = Path(tempfile.mkdtemp(prefix="roofline-svg-"))
    read_end, write_end = os.pipe()
    try:
        with warnings.catch_warnings():
            # Python 3.12 warns of a fork while other threads run: the copy never touches
            # what they hold (it runs no jax) and is waited for with a limit.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = children.fork()
    except children.NotStarted:
        for fd in (read_end, write_end):
            os.close(fd)
        shutil.rmtree(folder, ignore_errors=True)
        yield
        return
    if pid == 0:  # the copy
        code = 0
        try:
            os.close(read_end)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            _current.append(_Share(_COPY, folder, write_end))
            yield
        except BaseException:  # the copy's failure only costs this process time
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    share = _Share(_HERE, folder, read_end)
    _current.append(share)
    try:
        yield
    finally:
        _current.remove(share)
        children.end_fork(pid)
        os.close(read_end)
        shutil.rmtree(folder, ignore_errors=True)
