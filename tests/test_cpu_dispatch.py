"""A measured build runs its CPU calls the way jax's client does by default (a worker thread) or
as JAX_CPU_ENABLE_ASYNC_DISPATCH asks (roofline_report.observe.cpu_dispatch), and results.json
says which way its calls ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VARIABLE = "JAX_CPU_ENABLE_ASYNC_DISPATCH"

# Ask before any array exists (or after, with "late"), then call a small program 2000 times,
# blocking after each, and print what the module says and the waits the calls took: a call
# handed to a worker thread waits for it (a voluntary context switch, where the two threads
# share a core or the worker sleeps), a call run on the calling thread never does.
_PROBE = textwrap.dedent("""
    import json, os, sys
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax, jax.numpy as jnp
    from roofline_report.observe import cpu_dispatch
    if sys.argv[1] == "late":
        jnp.ones(4).block_until_ready()
    on_worker = cpu_dispatch.from_environment()
    f = jax.jit(lambda x: 2 * x)
    x = jnp.ones(1024, jnp.float32)
    f(x).block_until_ready()
    def waits():
        total = 0
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/status") as status:
                for line in status:
                    if line.startswith("voluntary_ctxt_switches"):
                        total += int(line.split()[1])
        return total
    before = waits()
    for _ in range(2000):
        f(x).block_until_ready()
    print(json.dumps({"on_worker": on_worker, "async": cpu_dispatch.async_dispatch(),
                      "waits_per_call": (waits() - before) / 2000}))
""")


def _path() -> str:
    """The checkout first, then the PYTHONPATH this process was given (where jax itself may
    live)."""
    return os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)


def _probe(when: str, **env: str) -> dict[str, object]:
    environment = {k: v for k, v in os.environ.items() if k != VARIABLE}
    environment.update(env, PYTHONPATH=_path())
    out = subprocess.run([sys.executable, "-c", _PROBE, when], env=environment,
                         capture_output=True, text=True, timeout=120, check=True)
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts waits from /proc")
def test_asked_before_the_client_exists_calls_run_on_the_calling_thread() -> None:
    result = _probe("early", **{VARIABLE: "false"})
    assert result["on_worker"] is False and result["async"] is False
    # On the calling thread a blocking call never waits for another thread.
    assert isinstance(result["waits_per_call"], float) and result["waits_per_call"] < 0.05


def test_unasked_the_client_keeps_jax_s_worker_thread() -> None:
    result = _probe("early")
    assert result["on_worker"] is True and result["async"] is True
    assert _probe("early", **{VARIABLE: "TRUE"})["async"] is True


def test_a_client_made_already_keeps_its_way_and_says_so() -> None:
    result = _probe("late", **{VARIABLE: "false"})
    assert result["on_worker"] is True and result["async"] is True


PROGRAM = """
def f(x):
    return 2.0 * x
"""
CONFIG = """
[[workload]]
name = "twice"
function = "dispatch_program:f"
args = [ { shape = [256], dtype = "float32" } ]
"""


def _build(folder: Path, **env: str) -> subprocess.CompletedProcess[str]:
    (folder / "dispatch_program.py").write_text(PROGRAM, encoding="utf-8")
    (folder / "w.toml").write_text(CONFIG, encoding="utf-8")
    environment = {k: v for k, v in os.environ.items() if k != VARIABLE}
    environment.update(env, PYTHONPATH=_path(), JAX_PLATFORMS="cpu")
    return subprocess.run(
        [sys.executable, str(ROOT / "generate.py"), "--config", "w.toml", "--only-config",
         "--quick", "--no-ceilings", "--no-sweeps", "--no-sharding", "--no-experiments",
         "--progress", "none", "--out", "report"],
        cwd=folder, env=environment, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize(("asked", "recorded", "shown"), [
    (None, True, "on a worker thread (asynchronous dispatch)"),
    ("false", False, "on the calling thread")])
def test_a_build_records_which_way_its_calls_ran(tmp_path: Path, asked: str | None,
                                                 recorded: bool, shown: str) -> None:
    proc = _build(tmp_path, **({VARIABLE: asked} if asked else {}))
    assert proc.returncode == 0, proc.stderr
    results = json.loads((tmp_path / "report" / "results.json").read_text(encoding="utf-8"))
    assert results["environment"]["cpu_async_dispatch"] is recorded
    page = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert f"| CPU calls run | {shown} |" in page


def test_a_bad_value_of_the_variable_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = _build(tmp_path, **{VARIABLE: "sometimes"})
    assert proc.returncode == 2
    # jax itself may warn as it is imported (on a TPU host: transparent huge pages are off);
    # the tool's own words are the one line.
    ours = [line for line in proc.stderr.strip().splitlines()
            if "Warning: " not in line and line.strip() != "warnings.warn("]
    assert ours == ["error: JAX_CPU_ENABLE_ASYNC_DISPATCH='sometimes': expected true or false"]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "report").exists()
