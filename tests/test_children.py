"""Child processes start one way (roofline_report/children.py): one command, one environment,
one error path, each child recorded while it runs so that an interrupted build stops it."""

from __future__ import annotations

import ast
import os
import signal
import sys
from pathlib import Path

import pytest

from roofline_report import children, interrupts

PACKAGE = Path(__file__).resolve().parents[1] / "roofline_report"
#: Calls that start a process of the tool's own (an interpreter, a copy of this one). An
#: external tool run to its end and read (lscpu) is not one.
STARTS = {("subprocess", "Popen"), ("os", "fork"), ("os", "forkpty"), ("os", "posix_spawn"),
          ("os", "posix_spawnp"), ("os", "spawnv"), ("os", "execv")}


def _starts(path: Path) -> list[str]:
    """Where ``path`` starts a process itself (a call of :data:`STARTS`, or one of them
    imported by name), or imports multiprocessing, as 'file:line name'."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and (node.func.value.id, node.func.attr) in STARTS):
            found.append(f"{path.name}:{node.lineno} {node.func.value.id}.{node.func.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found += [f"{path.name}:{node.lineno} {node.module}.{a.name}" for a in node.names
                      if (node.module, a.name) in STARTS]
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [
                node.module or ""]
            found += [f"{path.name}:{node.lineno} {n}" for n in names
                      if n.split(".")[0] == "multiprocessing"
                      or n.startswith("concurrent.futures.process")]
    return found


def test_child_processes_start_in_one_module() -> None:
    elsewhere = [hit for path in sorted(PACKAGE.rglob("*.py"))
                 if path != PACKAGE / "children.py" for hit in _starts(path)]
    assert elsewhere == []
    assert _starts(PACKAGE / "children.py")  # the check sees the module that does start them


def test_the_check_sees_a_process_started_elsewhere(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("import os, subprocess\n"
                     "from subprocess import Popen\n"
                     "import multiprocessing\n"
                     "p: subprocess.Popen[str] | None = None\n"  # a type: no process
                     "def f():\n    subprocess.Popen(['x'])\n    return os.fork()\n")
    assert sorted(_starts(probe)) == ["probe.py:2 subprocess.Popen", "probe.py:3 multiprocessing",
                                      "probe.py:6 subprocess.Popen", "probe.py:7 os.fork"]


def test_a_childs_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(interrupts.TEST_HOOK, "lowering")  # meant for the build, not its child
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    env = children.environment({"XLA_FLAGS": "--x"})
    assert interrupts.TEST_HOOK not in env
    assert env["XLA_FLAGS"] == "--x"
    assert env["PYTHONPATH"].split(os.pathsep) == [children.ROOT, "/elsewhere"]
    assert (Path(children.ROOT) / "roofline_report" / "children.py").is_file()


@pytest.fixture
def child_module(tmp_path: Path) -> Path:
    """A folder with a module whose main() exits with its argument, or sleeps on 'sleep'."""
    (tmp_path / "probe_child.py").write_text(
        "import sys, time\n"
        "def main():\n"
        "    if sys.argv[1] == 'sleep':\n"
        "        time.sleep(120)\n"
        "    return int(sys.argv[1])\n", encoding="utf-8")
    return tmp_path


def test_a_child_runs_main_and_is_recorded_until_it_ends(child_module: Path) -> None:
    proc = children.start("probe_child", ["3"], isolated=False, cwd=str(child_module))
    assert id(proc) in children._running
    assert proc.wait(timeout=60) == 3  # exits with what main() returned
    children.end(proc)
    assert id(proc) not in children._running


def test_an_isolated_child_imports_the_package_only(child_module: Path) -> None:
    """-I: the current folder is not on its path (nor are the user's PYTHON* variables read)."""
    proc = children.start("probe_child", ["0"], cwd=str(child_module))
    assert proc.wait(timeout=60) == 1  # ImportError: no probe_child for an isolated child
    children.end(proc)


def test_an_isolated_child_keeps_this_processs_import_path(
        child_module: Path, tmp_path_factory: pytest.TempPathFactory,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The package's dependencies may live where only this process's path finds them (a
    folder on PYTHONPATH, the user's site): -I drops both, so the child is given the path."""
    reached = tmp_path_factory.mktemp("reached")
    (child_module / "probe_child.py").rename(reached / "probe_child.py")
    monkeypatch.syspath_prepend(str(reached))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    proc = children.start("probe_child", ["4"], cwd=str(child_module))
    assert proc.wait(timeout=60) == 4
    children.end(proc)


def test_a_child_that_cannot_start(child_module: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", str(child_module / "no-such-python"))
    with pytest.raises(children.NotStarted) as raised:
        children.start("probe_child", ["0"], isolated=False, cwd=str(child_module))
    assert isinstance(raised.value.error, OSError)
    assert str(raised.value) == str(raised.value.error)
    assert not children._running


@pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")  # the copy runs no jax
def test_the_stop_action_kills_every_child(child_module: Path) -> None:
    procs = [children.start("probe_child", ["sleep"], isolated=False, cwd=str(child_module))
             for _ in range(2)]
    pid = children.fork()
    if pid == 0:  # the copy: wait to be stopped
        signal.pause()
        os._exit(0)
    children._stop_all()  # what an interrupted build's main thread runs
    assert [p.wait(timeout=60) for p in procs] == [-signal.SIGKILL] * 2
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    for p in procs:
        children.end(p)
    children._running.pop(-pid, None)
    assert not children._running
