"""Ctrl-C stops a build at any moment, writes nothing, and exits with 130 (no jax).

Python's own SIGINT handler raises KeyboardInterrupt wherever the main thread is. Where that is
inside a callback the interpreter calls for itself, the exception is printed as "Exception
ignored" and dropped: jax's garbage-collection callback (``_xla_gc_callback``) is one, and a
build interrupted there carried on and replaced the previous report. So the entry points install
one handler of their own, before jax is imported (:func:`install`), that

* records the interrupt and raises KeyboardInterrupt where the main thread is;
* when that exception is swallowed, raises it again at the next *safe point* of the pipeline
  (:func:`safe_point`: between workloads, before each measurement, before rendering, before the
  new report is swapped in), and keeps the swallowed one off stderr;
* lets nothing be written after it: the swap of the new report for the old one is the commit
  point (:func:`committing`): an interrupt before it stops the build with the previous report
  untouched; one during the swap lets the swap finish (a complete new report), and none after it
  changes anything.

Tests name a phase in the environment variable :data:`TEST_HOOK` (``PHASE`` or
``PHASE:swallowed``) to make the process send itself SIGINT when it reaches that safe point, so
that an interrupt lands at a known moment whatever the machine's load: ``swallowed`` sends it
where the exception is dropped, as in a callback, and the build must still stop there.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, Literal

#: The exit code of an interrupted build (128 + SIGINT, as a shell reports it).
EXIT_INTERRUPTED = 130
#: The one line an interrupted build prints on stderr.
MESSAGE = "interrupted: nothing was written; any previous report is untouched"
#: Environment variable naming the safe point at which a test makes the process interrupt itself.
TEST_HOOK = "ROOFLINE_REPORT_SIGINT_AT"

Mode = Literal["raise", "defer", "ignore"]


class _State:
    installed = False
    pending = False  # an interrupt arrived (and may have been swallowed)
    mode: Mode = "raise"


_state = _State()


def _handler(_signum: int, _frame: FrameType | None) -> None:
    if _state.mode == "ignore":
        return
    _state.pending = True
    if _state.mode == "raise":
        raise KeyboardInterrupt


def _quiet(previous: Callable[[Any], object]) -> Callable[[Any], object]:
    def hook(args: Any) -> object:
        if _state.installed and isinstance(args.exc_value, KeyboardInterrupt):
            return None  # recorded by the handler; raised again at the next safe point
        return previous(args)

    hook.roofline_report_quiet = True  # type: ignore[attr-defined]
    return hook


def install() -> bool:
    """Install the handler (from the main thread only, and not where SIGINT is ignored, as in a
    background job: elsewhere nothing happens and False is returned). Idempotent."""
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        return False
    signal.signal(signal.SIGINT, _handler)
    if not getattr(sys.unraisablehook, "roofline_report_quiet", False):
        sys.unraisablehook = _quiet(sys.unraisablehook)
    _state.installed = True
    return True


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """The handler for the duration of a build (``cli.main``): a fresh state on entry, the
    previous handler and unraisable hook put back on exit (a build run in-process, by a test,
    leaves the process as it was)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is _handler or previous is signal.SIG_IGN:
        # Installed by the entry point (it stays, and so does its state), or ignored.
        yield
        return
    previous_hook = sys.unraisablehook
    was = (_state.installed, _state.pending, _state.mode)
    _state.pending, _state.mode = False, "raise"
    install()
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        sys.unraisablehook = previous_hook
        _state.installed, _state.pending, _state.mode = was


def _noop() -> None:
    """A Python call: the interpreter runs pending signal handlers on entering one."""


def _interrupt_self() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(1000):  # until the handler has run (it raises, unless deferred)
        if _state.pending:
            break
        _noop()


def _test_hook(phase: str) -> None:
    wanted = os.environ.get(TEST_HOOK, "")
    name, _, how = wanted.partition(":")
    if not wanted or name != phase:
        return
    if how == "swallowed":
        # As in a callback the interpreter calls itself: the exception is dropped there.
        with contextlib.suppress(KeyboardInterrupt):
            _interrupt_self()
        return
    _interrupt_self()


def safe_point(phase: str) -> None:
    """A point where the build may stop: raises KeyboardInterrupt if an interrupt arrived (and
    was swallowed) since the handler was installed. ``phase`` names it for :data:`TEST_HOOK`."""
    _test_hook(phase)
    if _state.installed and _state.pending and _state.mode == "raise":
        raise KeyboardInterrupt


@contextlib.contextmanager
def committing() -> Iterator[None]:
    """The swap of a new report for the old one: a safe point first (an interrupt so far stops
    the build, nothing written), then the swap runs to its end whatever arrives; once it is done,
    an interrupt changes nothing more (the build ends as it would have)."""
    safe_point("swap")
    mode = _state.mode
    _state.mode = "defer"
    try:
        yield
    except BaseException:
        _state.mode = mode
        raise
    _state.mode = "ignore" if _state.installed else mode


def interrupted() -> bool:
    """Whether an interrupt has arrived since the handler was installed."""
    return _state.installed and _state.pending


def run(main: Callable[[], int]) -> int:
    """Run an entry point's ``main`` under the handler; an interrupt that escapes it (while the
    command line is imported, say) is one line and :data:`EXIT_INTERRUPTED`. Once ``main`` has
    returned, Ctrl-C changes nothing: the process is ending."""
    try:
        code = main()
    except KeyboardInterrupt:
        _state.mode = "ignore"
        print(MESSAGE, file=sys.stderr)
        code = EXIT_INTERRUPTED
    _state.mode = "ignore"
    return code
