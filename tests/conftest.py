"""Shared fixtures: one rendered report folder per test session.

The report is rendered from a saved results file, the way ``python generate.py --from-json FILE
--out DIR`` does it. The committed ``tests/fixtures/cpu_results.json`` is preferred; while it does
not exist, the real pipeline is run once in a subprocess (``--quick --no-sweeps --no-sharding
--no-ceilings``) to produce one, so jax runs in its own process, apart from this one's settings.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings as _hypothesis_settings

from roofline_report import cli
from roofline_report.errors import EXIT_OK, EXIT_PARTIAL
from roofline_report.observe.ceilings import cache as ceilings_cache

# On a TPU v5e host whose transparent hugepages are off, `import jax` warns about the TPU
# runtime's start-up time (jax/_src/cloud_tpu_init.py), whatever JAX_PLATFORMS says: in every
# process, the CPU-only ones included. The warning is the machine's, not the tool's; tests that
# hold a child's stderr to the tool's own lines (one line for Ctrl-C, one for bad input) run
# their children without it.
_MACHINE_WARNING = "ignore::UserWarning:jax._src.cloud_tpu_init"
os.environ["PYTHONWARNINGS"] = ",".join(
    w for w in (os.environ.get("PYTHONWARNINGS"), _MACHINE_WARNING) if w)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ``cpu_backend(why)`` asserts what holds where jax's default backend is
    the CPU (XLA:CPU's kernels and byte rules, a CPU's timing): skipped on another backend,
    saying what it checks and which backend ran."""
    marker = item.get_closest_marker("cpu_backend")
    if marker is None:
        return
    import jax

    backend = jax.default_backend()
    if backend != "cpu":
        pytest.skip(f"on the CPU backend only ({marker.args[0]}); this one is {backend}")


REPO = Path(__file__).resolve().parent.parent
FIXTURE_RESULTS = REPO / "tests" / "fixtures" / "cpu_results.json"
ARTIFACTS = REPO / ".test-artifacts"
PIPELINE_FLAGS = ("--quick", "--no-sweeps", "--no-sharding", "--no-ceilings")


def _results_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The committed results fixture, or a fresh one measured once on this machine."""
    if FIXTURE_RESULTS.is_file():
        return FIXTURE_RESULTS
    out = tmp_path_factory.mktemp("measured") / "report"
    proc = subprocess.run(
        [sys.executable, str(REPO / "generate.py"), *PIPELINE_FLAGS, "--progress", "none",
         "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode not in (EXIT_OK, EXIT_PARTIAL):
        pytest.fail(f"generate.py {' '.join(PIPELINE_FLAGS)} exited {proc.returncode}:\n"
                    f"{proc.stderr[-2000:]}")
    results = out / "results.json"
    assert results.is_file(), f"the pipeline wrote no {results}"
    return results


@pytest.fixture(scope="session", autouse=True)
def _session_ceilings_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The ceilings cache of the whole session (session- and module-scoped fixtures, and the
    processes they start) is a fresh temporary folder: tests never read or write the user's
    cache, and no two runs of the suite share one."""
    folder = tmp_path_factory.mktemp("ceilings-cache-session")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ceilings_cache.ENV_VAR, str(folder))
        yield folder


@pytest.fixture(scope="module", autouse=True)
def _module_ceilings_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Each module's fixtures their own ceilings cache: a module-scoped build that measures
    ceilings (with a tiny plan, say) is never reused by another module's."""
    folder = tmp_path_factory.mktemp("ceilings-cache-module")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ceilings_cache.ENV_VAR, str(folder))
        yield folder


@pytest.fixture(autouse=True)
def ceilings_cache_folder(tmp_path_factory: pytest.TempPathFactory,
                          monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test its own empty ceilings cache, so that a test that measures ceilings measures
    them (not what an earlier test saved) and saves nowhere else; the folder is
    ``$ROOFLINE_REPORT_CACHE`` (the ceilings are under its ``ceilings/``)."""
    folder = tmp_path_factory.mktemp("ceilings-cache")
    monkeypatch.setenv(ceilings_cache.ENV_VAR, str(folder))
    return folder


@pytest.fixture(scope="session")
def rendered_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report folder (report.html, report.md, figures/*.svg, results.json) rendered once from a
    saved results file with ``--from-json``; treat it as read-only."""
    results = _results_file(tmp_path_factory)
    out = tmp_path_factory.mktemp("rendered") / "report"
    rc = cli.main(["--from-json", str(results), "--out", str(out)])
    assert rc in (EXIT_OK, EXIT_PARTIAL), f"--from-json {results} exited {rc}"
    for name in ("report.html", "report.md", "results.json"):
        assert (out / name).is_file(), f"the rendered report has no {name}"
    return out


# Shared, loaded machines: a property test must never fail for being slow.
_hypothesis_settings.register_profile("roofline-report", deadline=None)
_hypothesis_settings.load_profile("roofline-report")
