"""One rule for a kernel's source column, whatever the entry point (``analyze()``, the command
line's ``--config``, ``roofline-report profile``): a path relative to the current folder where
the file is under it (``rr_progs/rr_layers.py:7``), else ``<path>/rr_layers.py:7``, never an
absolute path."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

jax = pytest.importorskip("jax")
np = pytest.importorskip("numpy")

import roofline_report  # noqa: E402
from roofline_report import cli  # noqa: E402
from roofline_report.hlo.ir import SourceLocation  # noqa: E402
from roofline_report.hlo.kernels import relative_source  # noqa: E402

SOURCE = '''"""A user's program, in a package of the user's project."""

import jax.numpy as jnp


def layer(x, w):
    return jnp.tanh(x @ w)
'''
LINE = 7  # the line of the computation above
CONFIG = '''[[workload]]
name = "layer"
function = "rr_progs.rr_layers:layer"
args = [ { shape = [32, 32], dtype = "float32" }, { shape = [32, 32], dtype = "float32" } ]
'''


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, ModuleType]]:
    """A project folder holding the package ``rr_progs`` with the module ``rr_layers``."""
    root = tmp_path_factory.mktemp("project")
    package = root / "rr_progs"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "rr_layers.py").write_text(SOURCE, encoding="utf-8")
    (root / "w.toml").write_text(CONFIG, encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(root))
        module = importlib.import_module("rr_progs.rr_layers")
        yield root, module
    import sys

    for name in ("rr_progs.rr_layers", "rr_progs"):
        sys.modules.pop(name, None)


def _sources(md: str) -> set[str]:
    """The source cells of the kernel table, Markdown's escapes undone."""
    import re

    text = md.replace("\\_", "_").replace("&lt;", "<")
    return set(re.findall(r"[^\s|`(]*rr_layers\.py:\d+", text))


@pytest.mark.slow
def test_the_api_the_config_and_profile_give_the_same_source(
        project: tuple[Path, ModuleType], monkeypatch: pytest.MonkeyPatch) -> None:
    root, module = project
    monkeypatch.chdir(root)
    expected = f"rr_progs/rr_layers.py:{LINE}"
    x = np.ones((32, 32), np.float32)

    record = roofline_report.analyze(module.layer, x, x, name="layer", out=root / "api").record
    assert expected in {k["source"] for k in record["kernels"]["kernels"]}

    assert cli.main(["--config", "w.toml", "--only-config", "--quick", "--no-ceilings",
                     "--no-sweeps", "--no-sharding", "--progress", "none",
                     "--out", "cli"]) in (0, 3)

    step = jax.jit(module.layer)
    jax.block_until_ready(step(x, x))
    with jax.profiler.trace(str(root / "log")):
        for _ in range(3):
            jax.block_until_ready(step(x, x))
    assert cli.main(["profile", "log", "--out", "profile"]) in (0, 3)

    for folder in ("api", "cli", "profile"):
        md = (root / folder / "report.md").read_text(encoding="utf-8")
        assert _sources(md) == {expected}, (folder, _sources(md))
        assert str(root) not in md


@pytest.mark.slow
def test_a_file_outside_the_current_folder_keeps_only_its_name(
        project: tuple[Path, ModuleType], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    _, module = project
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    x = np.ones((32, 32), np.float32)
    record = roofline_report.analyze(module.layer, x, x, name="layer", out=tmp_path / "r").record
    assert f"<path>/rr_layers.py:{LINE}" in {k["source"] for k in record["kernels"]["kernels"]}
    md = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert _sources(md) == {f"<path>/rr_layers.py:{LINE}"}


@pytest.mark.parametrize(("file", "cwd", "shown"), [
    ("/home/me/proj/progs/myprogs.py", "/home/me/proj", "progs/myprogs.py:23"),
    ("/home/me/proj/progs/myprogs.py", "/home/me/proj/", "progs/myprogs.py:23"),
    ("/home/me/other/myprogs.py", "/home/me/proj", "<path>/myprogs.py:23"),
    ("/home/me/project2/myprogs.py", "/home/me/proj", "<path>/myprogs.py:23"),
    ("/home/me/proj/.venv/lib/python3.11/site-packages/flax/nnx/module.py", "/home/me/proj",
     "flax/nnx/module.py:23"),
    ("/anywhere/myprogs.py", "/", "<path>/myprogs.py:23"),
])
def test_the_rule(file: str, cwd: str, shown: str) -> None:
    assert relative_source(SourceLocation(file, 23), cwd) == shown
