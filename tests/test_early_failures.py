"""benchmarks/early_failures.py: a failure's reason printed when its test ends, before the
session's own summary, so that a run cut short by a time limit still says why."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

TESTS = '''
def test_fails():
    assert 1 + 1 == 3, "arithmetic went wrong"


def test_passes():
    pass


def test_last():
    pass
'''


def test_a_failures_reason_comes_as_soon_as_it_ends(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(TESTS, encoding="utf-8")
    path = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p",
         "benchmarks.early_failures", "test_sample.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout[-2000:]
    out = done.stdout
    block = out.index("--- test_sample.py::test_fails failed:")
    assert "arithmetic went wrong" in out[block:out.index("test_sample.py::test_passes")]
    # printed before the later tests ran and before pytest's own summary
    assert block < out.index("test_sample.py::test_last") < out.index("= FAILURES =")
    assert "test_passes failed" not in out
