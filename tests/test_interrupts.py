"""Ctrl-C stops a build at any moment: exit code 130, one line on stderr, no traceback, and the
previous report byte for byte as it was.

The process is made to interrupt itself at named points of a real (quick) build through the
test hook of :mod:`roofline_report.interrupts` (an environment variable naming the phase), so the
interrupt lands where it should whatever the machine's load; ``:swallowed`` drops the
KeyboardInterrupt where it is raised, as jax's garbage-collection callback does, and the build
must stop at the next safe point all the same. Two interrupts at wall-clock moments are checked
with tolerant assertions (interrupted with the old report, or finished with a complete new one).
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
