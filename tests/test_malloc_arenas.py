"""glibc's arena limit, raised before a process's threads allocate (malloc_arenas)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from roofline_report import malloc_arenas

ROOT = Path(__file__).resolve().parents[1]
GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"

# Start THREADS threads that each allocate (each asks glibc for an arena) and print how many
# arenas the process holds then, from malloc_info's report.
_ARENAS = textwrap.dedent("""
    import ctypes, os, sys, tempfile, threading
    from roofline_report import malloc_arenas
    if sys.argv[1] == "widen":
        print(malloc_arenas.widen(), os.environ.get("MALLOC_ARENA_MAX"))
    stop = threading.Event()
    def hold():
        kept = [bytearray(1000) for _ in range(50)]
        stop.wait()
    threads = [threading.Thread(target=hold) for _ in range(int(sys.argv[2]))]
    for t in threads:
        t.start()
    libc = ctypes.CDLL(None)
    libc.fdopen.restype = ctypes.c_void_p
    libc.fdopen.argtypes = [ctypes.c_int, ctypes.c_char_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fflush.argtypes = [ctypes.c_void_p]
    fd, path = tempfile.mkstemp()
    stream = libc.fdopen(fd, b"w")
    libc.malloc_info(0, stream)
    libc.fflush(stream)
    print(open(path).read().count("<heap nr="))
    stop.set()
""")


def _arenas(mode: str, threads: int) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != malloc_arenas.VARIABLE}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, "-c", _ARENAS, mode, str(threads)], env=env,
                         capture_output=True, text=True, check=True, timeout=60)
    return out.stdout.split()


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc alone has arenas to widen")
def test_widened_before_threads_every_thread_gets_an_arena() -> None:
    cores = len(os.sched_getaffinity(0))
    threads = 8 * cores + 8  # past glibc's own limit of eight arenas a core
    widened = _arenas("widen", threads)
    assert widened[:2] == ["64", "64"]  # the limit, and the variable for child processes
    assert int(widened[2]) > 8 * cores
    # Without it, glibc's own limit holds: threads past it share arenas.
    assert int(_arenas("plain", threads)[0]) <= 8 * cores


def test_a_limit_the_user_set_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(malloc_arenas.VARIABLE, "2")
    assert malloc_arenas.widen() == 2
    assert malloc_arenas.in_force() == 2
    monkeypatch.setenv(malloc_arenas.VARIABLE, "many")
    assert malloc_arenas.widen() is None
    assert malloc_arenas.in_force() is None


def test_in_force_is_none_without_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(malloc_arenas.VARIABLE, raising=False)
    assert malloc_arenas.in_force() is None


PROGRAM = """
import jax.numpy as jnp

def f(x):
    return 2.0 * x
"""
CONFIG = """
[[workload]]
name = "tiny"
function = "arenas_program:f"
args = [ { shape = [256], dtype = "float32" } ]
"""


@pytest.mark.slow
@pytest.mark.skipif(not GLIBC, reason="glibc's malloc alone has arenas to widen")
def test_a_build_runs_under_the_widened_limit_and_records_it(tmp_path: Path) -> None:
    (tmp_path / "arenas_program.py").write_text(PROGRAM, encoding="utf-8")
    (tmp_path / "w.toml").write_text(CONFIG, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != malloc_arenas.VARIABLE}
    env["PYTHONPATH"] = str(ROOT)
    env["JAX_PLATFORMS"] = "cpu"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "generate.py"), "--config", "w.toml", "--only-config",
         "--quick", "--no-ceilings", "--no-sweeps", "--no-sharding", "--no-experiments",
         "--progress", "none", "--out", "report"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    results = json.loads((tmp_path / "report" / "results.json").read_text(encoding="utf-8"))
    assert results["environment"]["malloc_arena_max"] == malloc_arenas.LIMIT
    assert "malloc arenas" in (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
