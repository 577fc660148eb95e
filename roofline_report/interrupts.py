"""Ctrl-C stops a build at any moment, writes nothing, and exits with 130 (no jax).

An interrupt may not be raised just anywhere. Python's own SIGINT handler raises
KeyboardInterrupt wherever the main thread is, and where that is inside native code calling
back into Python the build does not stop cleanly: raised while jaxlib's extension modules were
being imported (nanobind creating an enum), it crossed C++ that cannot unwind and the process
died of SIGABRT or SIGSEGV; raised while pydantic_core was imported or built a validator, it
came out as a panic or a SchemaError, a traceback and exit code 1; raised in jax's
garbage-collection callback (``_xla_gc_callback``), it was printed as "Exception ignored" and
dropped, and the build ran on to the next point that looked for it (past the whole ceilings
measurement, a minute). And the main thread runs Python's handlers only between bytecodes, so
during a long compile nothing answers at all.

So the entry points run a build under :func:`run`: the build runs on a thread of its own, and
the main thread does nothing but wait for it. Python runs signal handlers on the main thread
only, so nothing is ever raised inside the build (an import, a compile, a callback all run to
their end), and the main thread answers an interrupt at once:

* it waits for a *critical section* in progress to end (:func:`critical`: a file of the new
  report written, a child process started, the ceilings cache saved: each a few milliseconds)
  and keeps the build out of any other;
* if the new report has been swapped in already (:func:`committing`: the commit point), the
  interrupt changes nothing and the build ends as it would have;
* otherwise it runs the stop actions (:func:`on_stop`: the child processes killed, the staging
  folder of the new report removed, the progress line cleared), prints one line and ends the
  process with :data:`EXIT_INTERRUPTED` at once (``os._exit``: the interpreter's shutdown, with
  threads still compiling or importing, took 0.2 s and more, and could crash). The temporary
  files of the build live in one folder (:func:`run` points :mod:`tempfile` at it), removed
  then too.

A build that reaches a *safe point* (:func:`safe_point`) once the interrupt has arrived waits
there for the process to end, so it starts nothing new meanwhile.

Where no entry point supervises (a build run in-process: ``cli.main`` from a test or from
Python), :func:`handled` installs the handler for its duration and it raises KeyboardInterrupt
where the main thread is; an interrupt swallowed by a callback is raised again at the next safe
point, and the unraisable hook keeps the swallowed one off stderr. The swap of the new report
runs to its end whatever arrives, and nothing after it interrupts.

Tests name a phase in the environment variable :data:`TEST_HOOK` (``PHASE`` or
``PHASE:swallowed``) to make the process send itself SIGINT when it reaches that safe point, so
that an interrupt lands at a known moment whatever the machine's load: ``swallowed`` sends it
where the exception is dropped, as in a callback, and the build must still stop there.
"""

from __future__ import annotations

# Only what the handler needs is imported before it is installed: an interrupt that arrives
# sooner meets Python's own handler (tempfile, shutil and typing are imported when used).
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType
    from typing import Any, Literal, NoReturn

    Mode = Literal["raise", "defer", "ignore"]

#: The exit code of an interrupted build (128 + SIGINT, as a shell reports it).
EXIT_INTERRUPTED = 130
#: The one line an interrupted build prints on stderr.
MESSAGE = "interrupted: nothing was written; any previous report is untouched"
#: Environment variable naming the safe point at which a test makes the process interrupt itself.
TEST_HOOK = "ROOFLINE_REPORT_SIGINT_AT"


class _State:
    installed = False
    pending = False  # an interrupt arrived (and may have been swallowed)
    mode: Mode = "raise"
    supervised = False  # the build runs on its own thread under :func:`run`
    committed = False  # the new report has been swapped in


_state = _State()
#: Held by the build through each critical section, and by the main thread once it stops the
#: process (the build then waits at the next one, for good).
_critical = threading.RLock()
#: How deep in critical sections each thread is (the lock's owner may enter one again).
_depth = threading.local()
#: What the main thread undoes before an interrupted process ends, by a key of its own.
_stop_actions: dict[int, Callable[[], object]] = {}


def _handler(_signum: int, _frame: FrameType | None) -> None:
    if _state.mode == "ignore":
        return
    _state.pending = True
    if _state.supervised and threading.current_thread() is threading.main_thread():
        # The main thread only waits for the build: raising here is always safe, and one
        # interrupt is enough (a second one while the process ends changes nothing).
        _state.mode = "ignore"
        raise KeyboardInterrupt
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
        yield  # the build thread of :func:`run`, whose main thread holds the handler
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is _handler or previous is signal.SIG_IGN:
        # Installed by the entry point (it stays, and so does its state), or ignored.
        yield
        return
    previous_hook = sys.unraisablehook
    was = (_state.installed, _state.pending, _state.mode, _state.committed)
    _state.pending, _state.mode, _state.committed = False, "raise", False
    install()
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        sys.unraisablehook = previous_hook
        _state.installed, _state.pending, _state.mode, _state.committed = was


def _noop() -> None:
    """A Python call: the interpreter runs pending signal handlers on entering one."""


def _stopping() -> bool:
    """Whether the main thread of a supervised build is ending the process."""
    return (_state.supervised and _state.pending and not _state.committed
            and threading.current_thread() is not threading.main_thread())


def _wait_for_the_end() -> NoReturn:
    """The build's thread, once the main thread ends the process: start nothing more."""
    threading.Event().wait()
    raise AssertionError("unreachable: the process ends while this thread waits")


def _interrupt_self() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    if _state.supervised and threading.current_thread() is not threading.main_thread():
        _wait_for_the_end()  # the main thread's handler ends the process
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
    was swallowed) since the handler was installed; under :func:`run`, waits there for the
    process to end. ``phase`` names it for :data:`TEST_HOOK`."""
    _test_hook(phase)
    if _stopping() and not getattr(_depth, "n", 0):  # never waits holding the lock
        _wait_for_the_end()
    if _state.installed and _state.pending and _state.mode == "raise":
        raise KeyboardInterrupt


@contextlib.contextmanager
def critical() -> Iterator[None]:
    """A step that an interrupt must not cut in half: writing a file, starting a child process
    (and recording it, so that it is stopped), saving to the cache. Under :func:`run` the main
    thread waits for it to end before it ends the process, and once it does, no other begins.
    Keep one short: the interrupt is answered after it. Reentrant: one inside another runs
    to its end with it."""
    depth = getattr(_depth, "n", 0)
    _critical.acquire()
    if depth == 0 and _stopping():
        # The interrupt came first, and the main thread waits for the lock: it is let go.
        _critical.release()
        _wait_for_the_end()
    _depth.n = depth + 1
    try:
        yield
    finally:
        _depth.n = depth
        _critical.release()


def add_stop(action: Callable[[], object]) -> int:
    """Have the main thread of :func:`run` call ``action`` before an interrupted process ends,
    to undo something it must not leave behind (a child process, a folder); returns the key
    that :func:`remove_stop` takes. Add it inside the :func:`critical` section that makes the
    thing, so that no interrupt falls between the two. An action must not raise, and must not
    wait for the build."""
    key = id(action)
    while key in _stop_actions:  # the same action twice: a key of its own
        key += 1
    _stop_actions[key] = action
    return key


def remove_stop(key: int) -> None:
    """Forget the stop action added under ``key``."""
    _stop_actions.pop(key, None)


@contextlib.contextmanager
def on_stop(action: Callable[[], object]) -> Iterator[None]:
    """:func:`add_stop` for the block inside."""
    key = add_stop(action)
    try:
        yield
    finally:
        remove_stop(key)


@contextlib.contextmanager
def committing() -> Iterator[None]:
    """The swap of a new report for the old one: a safe point first (an interrupt so far stops
    the build, nothing written), then the swap runs to its end whatever arrives; once it is done,
    an interrupt changes nothing more (the build ends as it would have)."""
    safe_point("swap")
    with critical():
        mode = _state.mode
        _state.mode = "defer"
        try:
            yield
        except BaseException:
            _state.mode = mode
            raise
        _state.committed = True
        _state.mode = "ignore" if _state.installed else mode


def interrupted() -> bool:
    """Whether an interrupt has arrived since the handler was installed."""
    return _state.installed and _state.pending


def _end_interrupted() -> NoReturn:
    """The main thread, interrupted before the new report was swapped in: undo what the build
    leaves behind, say so in one line, and end the process at once."""
    for action in reversed(list(_stop_actions.values())):
        with contextlib.suppress(Exception):
            action()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    with contextlib.suppress(Exception):
        sys.stderr.write(MESSAGE + "\n")
        sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)


def _ending() -> None:
    """The process is ending: an interrupt changes nothing now. SIGINT is ignored from here on:
    the interpreter's shutdown puts back the default action of a signal that had a handler of
    Python's, and an interrupt during it killed the process."""
    _state.mode = "ignore"
    if _state.installed and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def run(main: Callable[[], int]) -> int:
    """Run an entry point's ``main`` under the handler and return its exit code.

    With the handler installed (:func:`install`), ``main`` runs on a thread of its own while
    this one, the main thread, waits for it and answers an interrupt at once (see the module's
    docstring): the process then ends here, with one line and :data:`EXIT_INTERRUPTED`. The
    build's temporary files are kept in one folder for the purpose. Once ``main`` has returned,
    Ctrl-C changes nothing: the process is ending (SIGINT is ignored then). Without the handler
    (SIGINT ignored), ``main`` runs here."""
    if not _state.installed or threading.current_thread() is not threading.main_thread():
        try:
            code = main()
        except KeyboardInterrupt:
            _state.mode = "ignore"
            print(MESSAGE, file=sys.stderr)
            code = EXIT_INTERRUPTED
        _ending()
        return code
    outcome: list[tuple[int | None, BaseException | None]] = []
    done = threading.Event()

    def build() -> None:
        try:
            outcome.append((main(), None))
        except BaseException as exc:  # SystemExit of --help, say: raised again below
            outcome.append((None, exc))
        finally:
            done.set()

    # The build's temporary files go in one folder, made and recorded for removal with the
    # interrupt held back (it is acted on at once after).
    _state.mode = "defer"
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="roofline-report-")
    tempfile.tempdir = folder
    key = add_stop(lambda: shutil.rmtree(folder, ignore_errors=True))
    try:
        _state.supervised = True
        _state.mode = "raise"
        if _state.pending:
            raise KeyboardInterrupt
        threading.Thread(target=build, name="roofline-report build", daemon=True).start()
        # A wait the interrupt ends at once: a sleep, which a signal cuts short, and a flag read
        # without a lock. (Event.wait takes a lock inside, and an interrupt raised while it
        # restores that lock left it released twice: exit 1, "release unlocked lock".) The
        # sleep's length only bounds the wait where the signal went to another thread, and how
        # long a finished build waits to be noticed.
        while not done.is_set():
            time.sleep(0.02)
    except KeyboardInterrupt:
        _state.mode = "ignore"
        with _critical:  # the build is in no critical section now, and enters none again
            if not _state.committed:
                _end_interrupted()
        done.wait()  # committed: the build ends as it would have
    _ending()
    tempfile.tempdir = None
    remove_stop(key)
    shutil.rmtree(folder, ignore_errors=True)
    returned, error = outcome[0]
    if error is not None:
        raise error
    assert returned is not None
    return returned
