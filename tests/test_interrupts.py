"""Ctrl-C stops a build at any moment: exit code 130, one line on stderr, no traceback, and the
previous report byte for byte as it was.

The process is made to interrupt itself at named points of a real (quick) build through the
test hook of :mod:`roofline_report.interrupts` (an environment variable naming the phase), so the
interrupt lands where it should whatever the machine's load; ``:swallowed`` drops the
KeyboardInterrupt where it is raised, as jax's garbage-collection callback does, and the build
must stop at the next safe point all the same. Two interrupts at wall-clock moments are checked
with tolerant assertions (interrupted with the old report, or finished with a complete new one),
and a real run is interrupted at moments spread over its whole length, each of which must end it
at once. The main thread of a supervised run is checked on its own, whatever its build does.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from roofline_report import interrupts

REPO = Path(__file__).resolve().parent.parent
MESSAGE = interrupts.MESSAGE

PROGRAM = '''
import jax.numpy as jnp


def f(x):
    return jnp.tanh(x) * 2.0
'''
CONFIG = '''
[[workload]]
name = "tiny"
function = "sigint_program:f"
args = [ { shape = [64, 64], dtype = "float32" } ]
'''
QUICKEST = ["--config", "w.toml", "--only-config", "--quick", "--no-ceilings", "--no-sweeps",
            "--no-sharding", "--no-experiments"]


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` (hidden ones too): file bytes, or None for a folder."""
    return {p.relative_to(root).as_posix(): None if p.is_dir() else p.read_bytes()
            for p in sorted(root.rglob("*"))}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != interrupts.TEST_HOOK}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env["JAX_PLATFORMS"] = "cpu"
    return {**env, **extra}


@pytest.fixture(autouse=True)
def _sigint_as_python_sets_it() -> Iterator[None]:
    """The tests' own process with Python's SIGINT handler, whatever it inherited, restored
    afterwards. A job started in the background by a shell without job control (nohup, CI
    runners) inherits SIGINT ignored, and the build rightly keeps an ignored SIGINT ignored,
    so no interrupt would reach it; a process started while the handler is set gets SIGINT at
    its default (a handler does not survive exec, an ignored signal does)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _build(folder: Path, *, progress: str = "none", **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(REPO / "generate.py"), *QUICKEST, "--progress", progress,
         "--out", "report"],
        cwd=folder, env=_env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the workload's files and a report from one real quick build."""
    folder = tmp_path_factory.mktemp("sigint")
    (folder / "sigint_program.py").write_text(PROGRAM, encoding="utf-8")
    (folder / "w.toml").write_text(CONFIG, encoding="utf-8")
    proc = _build(folder)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return folder


@pytest.fixture
def work(built: Path, tmp_path: Path) -> Iterator[Path]:
    folder = Path(shutil.copytree(built, tmp_path / "work"))
    yield folder


def _assert_interrupted(proc: subprocess.Popen[str], before: dict[str, bytes | None],
                        folder: Path) -> None:
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == interrupts.EXIT_INTERRUPTED, err
    assert err.splitlines() == [MESSAGE], err
    assert snapshot(folder) == before  # the report, and no staging folder left beside it


PHASES = ["start", "import", "lowering", "measuring", "rendering", "writing", "swap",
          "lowering:swallowed", "measuring:swallowed", "rendering:swallowed", "swap:swallowed"]


@pytest.mark.slow
@pytest.mark.parametrize("phase", PHASES)
def test_an_interrupt_at_each_phase_leaves_the_previous_report(phase: str, work: Path) -> None:
    before = snapshot(work)
    _assert_interrupted(_build(work, **{interrupts.TEST_HOOK: phase}), before, work)


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.0, 0.4])
def test_an_interrupt_at_a_wall_clock_moment_is_clean(delay: float, work: Path) -> None:
    """Sent ``delay`` seconds after the build said it had started measuring (jax imported):
    either the build stops with the previous report untouched, or it had already committed the
    new report, which is then complete. Never a traceback, never half a report."""
    before = snapshot(work)
    proc = _build(work, progress="plain")
    assert proc.stderr is not None
    lines = [proc.stderr.readline()]
    while lines[-1] and "environment" not in lines[-1]:
        lines.append(proc.stderr.readline())
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=300)
    err = "".join(lines) + rest
    assert "Traceback" not in err and "Exception ignored" not in err, err
    if proc.returncode == interrupts.EXIT_INTERRUPTED:
        assert err.splitlines()[-1] == MESSAGE, err
        assert snapshot(work) == before
        return
    assert proc.returncode == 0, err
    report = work / "report"
    manifest = json.loads((report / ".roofline-report.json").read_text(encoding="utf-8"))
    assert all((report / f).is_file() for f in manifest["files"])
    json.loads((report / "results.json").read_text(encoding="utf-8"))
    assert sorted(p.name for p in work.iterdir()) == sorted(before_names(before))


def before_names(before: dict[str, bytes | None]) -> list[str]:
    return [k for k in before if "/" not in k]


# ------------------------------------------------------- Ctrl-C at moments spread over a run

#: Moments per round, spread evenly over a run, and rounds (each round's moments fall between
#: the last one's).
MOMENTS, ROUNDS = 20, 2
#: The longest an interrupted run may take to end once the signal is sent. The aim is half a
#: second; a process needs a core to answer at all, and on a 2-core machine shared with other
#: jobs it can wait a few hundred milliseconds for one (answering took at most 0.07 s here on
#: an idle machine and 0.2 s beside two processes spinning on both cores), hence the slack. A
#: build that waited for a compile, a jax import or the next step to end took 0.6 to 65 s.
LATENCY_S = 0.75


def _inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except OSError:
        return None


def _commit_moment(folder: Path) -> float:
    """Seconds from its start until an uninterrupted run swaps its new report in (the report
    folder is then another), watched every few milliseconds."""
    report = folder / "report"
    old = _inode(report)
    start = time.monotonic()
    proc = _build(folder)
    committed = None
    while proc.poll() is None:
        if committed is None and _inode(report) != old:
            committed = time.monotonic() - start
        time.sleep(0.003)
    _, err = proc.communicate()
    assert proc.returncode == 0, err
    return time.monotonic() - start if committed is None else committed


def _startup_s() -> float:
    """How long this interpreter takes to start and install the tool's handler: before that
    only Python's own handler is in place (an interrupt while ``site`` is imported is Python's
    to deal with, whatever the tool does)."""
    start = time.monotonic()
    subprocess.run([sys.executable, "-c", "from roofline_report import interrupts; "
                    "interrupts.install()"], env=_env(), check=True)
    return time.monotonic() - start


@pytest.mark.slow
def test_ctrl_c_at_any_moment_of_a_run(built: Path, tmp_path: Path) -> None:
    """A real run interrupted at moments spread over its whole length (importing jax, compiling,
    measuring, rendering, writing): it exits 130 each time, within :data:`LATENCY_S` of the
    signal, with one line on stderr, the previous report byte for byte as it was and nothing
    left beside it, and never dies of a signal. The moments run from the end of the
    interpreter's start to just before the first run's commit point (the swap of the new
    report: an interrupt after it changes nothing, by design)."""
    reference = Path(shutil.copytree(built, tmp_path / "reference"))
    committed = _commit_moment(reference)
    first = 2 * _startup_s()
    last = 0.95 * committed
    assert last > first + 1.0, (first, committed)  # a run long enough to interrupt
    figures: list[tuple[float, float]] = []
    failures: list[str] = []
    for round_ in range(ROUNDS):
        for i in range(MOMENTS):
            fraction = (i + (round_ + 1) / (ROUNDS + 1)) / MOMENTS
            moment = first + (last - first) * fraction
            work = Path(shutil.copytree(built, tmp_path / f"work-{round_}-{i}"))
            before = snapshot(work)
            report = work / "report"
            old = _inode(report)
            for attempt in range(4):
                if attempt == 3:
                    # Runs have grown faster than the first (a shared machine's load fell):
                    # time one again and place the moment on its length.
                    shutil.rmtree(work)
                    committed = _commit_moment(Path(shutil.copytree(
                        built, tmp_path / f"again-{round_}-{i}")))
                    last = max(first + 1.0, 0.95 * committed)
                    moment = first + (last - first) * fraction
                    work = Path(shutil.copytree(built, tmp_path / f"work-{round_}-{i}"))
                    old = _inode(report)
                start = time.monotonic()
                proc = _build(work)
                time.sleep(max(0.0, moment - (time.monotonic() - start)))
                if proc.poll() is None and _inode(report) == old:
                    break
                # A run faster than the first had committed already: the moment is past its
                # end, not one to interrupt. Put the previous report back and come earlier.
                proc.communicate()
                shutil.rmtree(work)
                work = Path(shutil.copytree(built, work))
                old = _inode(report)
                moment *= 0.9
            else:
                failures.append(f"{moment:.2f} s: each run had committed before it")
                continue
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)
            try:
                _, err = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
            latency = time.monotonic() - sent
            figures.append((moment, latency))
            what = f"{moment:.2f} s (exit {proc.returncode}, {latency:.3f} s)"
            if proc.returncode < 0:
                failures.append(f"{what}: died of signal {-proc.returncode}: {err[-2000:]}")
            elif proc.returncode != interrupts.EXIT_INTERRUPTED:
                failures.append(f"{what}: not interrupted: {err[-2000:]}")
            elif err.splitlines() != [MESSAGE]:
                failures.append(f"{what}: stderr is not one line: {err[-2000:]}")
            elif latency > LATENCY_S:
                failures.append(f"{what}: ended {latency:.3f} s after the signal")
            if snapshot(work) != before:
                failures.append(f"{what}: the folder of the previous report changed")
            shutil.rmtree(work)
    latencies = sorted(latency for _, latency in figures)
    print(f"\n{len(figures)} interrupts from {first:.2f} to {last:.2f} s of a run committing "
          f"at {committed:.2f} s: worst {latencies[-1]:.3f} s, median "
          f"{latencies[len(latencies) // 2]:.3f} s after the signal; {len(failures)} failures")
    assert failures == []


# ------------------------------------------------------- the main thread of a supervised run

SUPERVISED = """
import os, signal, sys, time
from roofline_report import interrupts
interrupts.install()
def main():
    print("ready", flush=True)
{body}
    return 0
raise SystemExit(interrupts.run(main))
"""

BUILDS = {
    # a long call that holds no interpreter lock, as XLA's compile does
    "native": "    time.sleep(60)",
    # one critical section after another, as fast as it can: the main thread still ends it
    "critical": "    while True:\n        with interrupts.critical():\n            pass",
    # something to undo, then a wait that swallows any exception raised into it
    "undo": "    interrupts.add_stop(lambda: print('undone', flush=True))\n"
            "    while True:\n        try:\n            time.sleep(60)\n"
            "        except BaseException:\n            pass",
}


def _supervised(body: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", SUPERVISED.format(body=body)],
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    return proc


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_the_main_thread_ends_an_interrupted_run_whatever_the_build_does(build: str) -> None:
    proc = _supervised(BUILDS[build])
    time.sleep(0.2)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - sent < LATENCY_S
    assert proc.returncode == interrupts.EXIT_INTERRUPTED, err
    assert err.splitlines() == [MESSAGE]
    assert out == ("undone\n" if build == "undo" else "")


def test_an_interrupt_during_the_commit_lets_the_run_end_as_it_would_have() -> None:
    proc = _supervised("    with interrupts.committing():\n"
                       "        os.kill(os.getpid(), signal.SIGINT)\n"
                       "        time.sleep(0.3)\n"
                       "    print('committed', flush=True)")
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out, err) == (0, "committed\n", "")


# ------------------------------------------------------------------ the handler, in-process


def test_a_swallowed_interrupt_is_raised_at_the_next_safe_point() -> None:
    with interrupts.handled():
        with pytest.raises(KeyboardInterrupt):  # raised where the main thread is
            os.kill(os.getpid(), signal.SIGINT)
            interrupts._noop()
        assert interrupts.interrupted()
        with pytest.raises(KeyboardInterrupt):  # and again at the next safe point
            interrupts.safe_point("anywhere")
    assert not interrupts.interrupted()  # the process is left as it was


def test_a_swallowed_interrupt_is_not_printed(capsys: pytest.CaptureFixture[str]) -> None:
    with interrupts.handled():
        hook = sys.unraisablehook
        hook(SimpleNamespace(exc_type=KeyboardInterrupt, exc_value=KeyboardInterrupt(),
                             exc_traceback=None, err_msg=None, object=None))
    assert capsys.readouterr().err == ""


def test_the_swap_runs_to_its_end_and_nothing_after_it_interrupts() -> None:
    with interrupts.handled():
        with interrupts.committing():
            os.kill(os.getpid(), signal.SIGINT)  # deferred: the swap is not cut in half
            interrupts._noop()
            swapped = True
        assert swapped
        interrupts.safe_point("after")  # committed: the build ends as it would have
        os.kill(os.getpid(), signal.SIGINT)
        interrupts._noop()


def test_an_interrupt_before_the_swap_stops_it() -> None:
    with interrupts.handled():
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            interrupts._noop()
        entered = False
        with pytest.raises(KeyboardInterrupt), interrupts.committing():
            entered = True
        assert not entered


def test_the_entry_points_install_the_handler_before_anything_else() -> None:
    for path in (REPO / "generate.py", REPO / "roofline_report" / "__main__.py"):
        code = [line.split("#")[0].strip() for line in path.read_text(encoding="utf-8")
                .splitlines()]
        code = [line for line in code
                if line and not line.startswith(('"""', "if __name__"))]
        assert code[:2] == ["from roofline_report import interrupts", "interrupts.install()"], path
    # The installed command's entry point installs it before importing the command line.
    import ast

    from roofline_report import entry

    tree = ast.parse((REPO / "roofline_report" / "entry.py").read_text(encoding="utf-8"))
    top_imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    assert [ast.unparse(n) for n in top_imports] == ["from roofline_report import interrupts"]
    main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
    assert ast.unparse(main.body[1]) == "interrupts.install()"  # after the docstring, first
    assert entry.main.__module__ == "roofline_report.entry"
    import tomllib

    scripts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "scripts"]
    assert scripts["roofline-report"] == "roofline_report.entry:main"


def test_an_interrupted_build_stops_the_sharded_child(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The sharded measurement's thread returns at once when its child is stopped, so an
    interrupted process does not wait for it to finish."""
    from roofline_report.observe import sharding

    slow = tmp_path / "slow-python"
    slow.write_text("#!/bin/sh\nexec sleep 120\n", encoding="utf-8")
    slow.chmod(0o755)
    monkeypatch.setattr(sharding.sys, "executable", str(slow))
    done: list[dict[str, object]] = []
    thread = threading.Thread(target=lambda: done.append(
        sharding.run_sharded_analysis(devices=2, quick=True, timeout=300)))
    thread.start()
    for _ in range(600):
        if sharding._running:
            break
        time.sleep(0.05)
    sharding.stop_children()
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert done and done[0]["available"] is False
