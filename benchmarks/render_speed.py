"""How long rendering a saved results.json takes, against the aim of 3 s.

    python benchmarks/render_speed.py [FILE ...] [--runs 3]

Each FILE (default: build/results.json, the default build's, where it exists, and the test
fixture tests/fixtures/cpu_results.json) is rendered with ``generate.py --from-json FILE --out
TMP`` ``--runs`` times, each in a fresh process, timed end to end (the interpreter's start and
every import included, as a user waits for it). In the same run, alternating with them, the
same command with ``ROOFLINE_REPORT_SVG_JOBS=1`` (every figure written in one process) is the
reference the two-core writing is compared with, and a Python loop of 20 million additions
says how fast the machine was: these machines are shared, so compare the columns of one run.

The renders run as an installed package runs: with the bytecode of the package and of its
dependencies compiled once beforehand (as pip does when it installs a package; here by one
untimed render) and cached in a temporary folder (``PYTHONPYCACHEPREFIX``), whatever
``PYTHONDONTWRITEBYTECODE`` says; without that, each render first compiles the source of
every module it imports (0.25 s of the package's alone on a 2-core CPU).
``--no-bytecode-cache`` times them as the environment says instead.

A Markdown table is printed, then one JSON object on the last line with each file's times,
the reference's, the loop's, and ``within_aim`` (every run of every file at most 3 s).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
AIM_S = 3.0
_LOOP = "s = 0\nfor i in range(20_000_000):\n    s += i\n"


def _with_bytecode(pycache: str) -> dict[str, str]:
    """The environment of a timed child whose modules' bytecode is written to and read from
    ``pycache``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = pycache
    return env


_ENV: dict[str, str] = dict(os.environ)


def _render(path: Path, out: Path, one_core: bool) -> float:
    env = {**_ENV, "PYTHONPATH": str(ROOT)}
    if one_core:
        env["ROOFLINE_REPORT_SVG_JOBS"] = "1"
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "generate.py"), "--from-json", str(path),
                           "--out", str(out)], env=env, capture_output=True, text=True,
                          check=False)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 3):  # 3: built, some measurement not available
        last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
        raise SystemExit(f"rendering {path} failed ({proc.returncode}): {last}")
    return wall


def _loop_s() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", _LOOP], check=True)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="*", type=Path, help="results.json files to render")
    p.add_argument("--runs", type=int, default=3, help="renders of each file (default 3)")
    p.add_argument("--no-bytecode-cache", action="store_true",
                   help="run the renders as the environment says (PYTHONDONTWRITEBYTECODE "
                        "makes each compile the package's source first)")
    ns = p.parse_args(argv)
    if ns.runs < 1:
        p.error("--runs: at least 1")
    files = ns.files or [f for f in (ROOT / "build" / "results.json",
                                     ROOT / "tests" / "fixtures" / "cpu_results.json")
                         if f.exists()]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        p.error(f"no such file: {', '.join(missing)}")
    loop = _loop_s()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="render_speed_") as tmp:
        if not ns.no_bytecode_cache:
            _ENV.clear()
            _ENV.update(_with_bytecode(str(Path(tmp) / "pycache")))
            _render(files[0], Path(tmp) / "warm", one_core=True)  # compiles what it imports
        for path in files:
            times, reference = [], []
            for i in range(ns.runs):
                times.append(_render(path, Path(tmp) / f"two_{i}", one_core=False))
                reference.append(_render(path, Path(tmp) / f"one_{i}", one_core=True))
            rows.append({"file": str(path), "render_s": [round(t, 2) for t in times],
                         "one_core_s": [round(t, 2) for t in reference],
                         "within_aim": max(times) <= AIM_S})
    loop_after = _loop_s()
    print(f"| file | `--from-json` (s) | figures on one core (s) | within {AIM_S:g} s |")
    print("| --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['file']} | {', '.join(map(str, r['render_s']))} | "
              f"{', '.join(map(str, r['one_core_s']))} | {'yes' if r['within_aim'] else 'no'} |")
    print(f"A Python loop of 20 million additions: {loop:.2f} s before, {loop_after:.2f} s after.")
    print(f"Bytecode: {'as the environment says' if ns.no_bytecode_cache else 'cached'}.")
    print(json.dumps({"rows": rows, "loop_s": [round(loop, 2), round(loop_after, 2)],
                      "bytecode_cached": not ns.no_bytecode_cache,
                      "within_aim": all(r["within_aim"] for r in rows)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
