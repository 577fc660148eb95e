"""``profile`` on traces of the size people capture, against XProf's conversion of the same file.

    python benchmarks/profile_scale.py [--sizes 10,100] [--with-400] [--keep DIR]
                                       [--xprof-tools hlo_stats,trace_viewer]
                                       [--gpu-sizes 110] [--no-bytecode-cache]

With ``--keep DIR`` the traces are written into DIR and kept; a later run with the same DIR
reads the traces already there instead of capturing them again.

For each size (MB) it writes a real ``jax.profiler.trace`` capture into a temporary folder: a
long run of a small jitted step (a matmul, a tanh and an add; one ``StepTraceAnnotation`` per
call), the number of calls scaled from a short calibration capture so the ``.xplane.pb`` comes
out near the size asked. Then, each in a fresh process so its time and peak memory are its own:

* ``roofline-report profile LOGDIR --out TMP`` end to end (reading, analysis, rendering), and
  of that the writing once the trace is read (``write_s``: validating, analysing and rendering
  the document, its results.json text and the report folder; the aim is 2 s at 100 MB);
* XProf's own conversion of the same file (``xprof.convert.raw_to_tool_data.
  xspace_to_tool_data`` with the tools ``hlo_stats`` and ``trace_viewer``; what XProf saved
  beside the trace is removed first, so each converts cold), when the ``xprof`` package is
  installed (it is not a dependency of this project: ``pip install xprof``); without it those
  columns say "not run". On a CPU-only trace ``hlo_stats`` has no rows (XProf's device type
  CPU_ONLY), so ``trace_viewer``, the conversion of every event, is the one to compare.

``profile`` runs as an installed package runs: with the bytecode of the package and its
dependencies compiled once beforehand (as pip does when it installs a package; here by one
untimed ``profile`` of the shipped H200 trace) and cached in a temporary folder
(``PYTHONPYCACHEPREFIX``), whatever ``PYTHONDONTWRITEBYTECODE`` says; without that, each run
first compiles the source of every module it imports (about 0.4 s). ``--no-bytecode-cache``
runs it as the environment says instead.

Peak RSS is the child's ``ru_maxrss``; each row also gives the machine's load average (1 min)
when its ``profile`` started, since other work on a shared machine slows every column.
``--with-400`` adds a 400 MB trace (minutes to capture).

``--gpu-sizes`` adds GPU traces of about those sizes (MB), made from the H200 training-step
trace the tests ship (``tests/fixtures/traces_real/h200_train_step``, five steps captured on an
NVIDIA H200): its events repeated in time, each copy's step numbers and run ids shifted, so a
long run of real GPU events is read, not synthetic ones. On a GPU a stream's kernel events
overlap their neighbours and carry 13 stats each, and XLA ran them in a command buffer whose
events name no HLO op: the paths a CPU trace never takes. (XProf's ``hlo_stats`` gives no rows
on this trace: its kernel events name the command buffer, not the ops.)
The machine may be shared: compare the columns of one run, not runs of different days. The last
line is one JSON object with a row per size; a Markdown table is printed before it.
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
PYTHON = sys.executable

_CAPTURE = r"""
import sys
import jax
import jax.numpy as jnp

logdir, calls = sys.argv[1], int(sys.argv[2])


@jax.jit
def step(x, w):
    return jnp.tanh(x @ w) + x


x = jnp.ones((64, 64), jnp.float32)
w = jnp.full((64, 64), 0.01, jnp.float32)
step(x, w).block_until_ready()
with jax.profiler.trace(logdir):
    for i in range(calls):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            x = step(x, w)
    x.block_until_ready()
"""

_XPROF = r"""
import sys
import time
try:
    from xprof.convert import raw_to_tool_data
except ImportError:
    print("NO_XPROF")
    sys.exit(0)
path, tool = sys.argv[1], sys.argv[2]
t = time.perf_counter()
data, _ = raw_to_tool_data.xspace_to_tool_data([path], tool, {})
print("XPROF", time.perf_counter() - t, len(data or b""))
"""


def _run_measured(args: list[str], env: dict[str, str] | None = None
                  ) -> tuple[float, float, str, int]:
    """Wall seconds, peak RSS (MB), stdout and exit code of one child (its own rusage)."""
    with tempfile.TemporaryFile(mode="w+") as out_file, \
            tempfile.TemporaryFile(mode="w+") as err_file:
        start = time.perf_counter()
        proc = subprocess.Popen(args, stdout=out_file, stderr=err_file, text=True, env=env)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        proc.returncode = code
        out_file.seek(0)
        err_file.seek(0)
        out, err = out_file.read(), err_file.read()
    if code not in (0, 3):
        last = err.strip().splitlines()[-1] if err.strip() else ""
        raise SystemExit(f"{' '.join(args[:4])}... failed ({code}): {last}")
    return wall, usage.ru_maxrss / 1024, out, code


def _capture(logdir: Path, calls: int) -> Path:
    _run_measured([PYTHON, "-c", _CAPTURE, str(logdir), str(calls)])
    (logdir / "calls.txt").write_text(f"{calls}\n")
    files = sorted(logdir.glob("plugins/profile/*/*.xplane.pb"))
    if not files:
        raise SystemExit(f"the capture wrote no trace under {logdir}")
    return files[-1]


def _kept(logdir: Path) -> Path | None:
    """A trace an earlier run kept in ``logdir`` (``--keep``), None where there is none."""
    files = sorted(logdir.glob("plugins/profile/*/*.xplane.pb"))
    return files[-1] if files else None


def _trace_of_size(root: Path, mb: float, per_call: float, reuse: bool) -> tuple[Path, int]:
    calls = max(100, round(mb * 1e6 / per_call))
    logdir = root / f"trace_{mb:g}MB"
    kept = _kept(logdir) if reuse else None
    if kept is not None:
        print(f"reusing the trace kept in {logdir}", file=sys.stderr)
        written = logdir / "calls.txt"
        return kept, int(written.read_text()) if written.exists() else calls
    return _capture(logdir, calls), calls


XPROF_TOOLS = ("hlo_stats", "trace_viewer")
H200 = ROOT / "tests" / "fixtures" / "traces_real" / "h200_train_step"
H200_STEPS = 5  # the training steps the shipped trace holds


def _h200_of_size(root: Path, mb: float, reuse: bool) -> tuple[Path, int]:
    """The shipped H200 trace repeated to about ``mb`` MB (kept in ``root`` for reuse):
    the trace file and its calls (steps)."""
    import gzip

    sys.path.insert(0, str(ROOT))
    from roofline_report.traces.xspace_schema import message_class

    logdir = root / f"h200_{mb:g}MB"
    kept = _kept(logdir) if reuse else None
    if kept is not None:
        print(f"reusing the trace kept in {logdir}", file=sys.stderr)
        return kept, int((logdir / "calls.txt").read_text())
    (source,) = sorted(H200.glob("plugins/profile/*/*.xplane.pb*"))
    data = source.read_bytes()
    space = message_class("XSpace").FromString(gzip.decompress(data) if data[:2] == b"\x1f\x8b"
                                               else data)
    event_class, stat_class = message_class("XEvent"), message_class("XStat")
    # The metadata (the HLO protos among it) is written once; the events once per copy.
    per_copy = sum(len(raw) + 4 for plane in space.planes for line in plane.lines
                   for raw in line.events)
    copies = max(1, round((mb * 1e6 - space.ByteSize() + per_copy) / per_copy))
    first, last = None, None
    for plane in space.planes:
        for line in plane.lines:
            for raw in line.events:
                ev = event_class.FromString(raw)
                at = line.timestamp_ns * 1000 + ev.offset_ps
                first = at if first is None else min(first, at)
                last = at + ev.duration_ps if last is None else max(last, at + ev.duration_ps)
    period = (last or 0) - (first or 0) + 10**9  # ps: each copy 1 ms after the last ends
    for plane in space.planes:
        counters = {e.key for e in plane.stat_metadata
                    if e.value.name in ("step_num", "run_id")}
        for line in plane.lines:
            events = [event_class.FromString(raw) for raw in line.events]
            out = []
            for copy in range(copies):
                for ev in events:
                    moved = event_class()
                    moved.CopyFrom(ev)
                    moved.offset_ps += copy * period
                    if counters:
                        stats = []
                        for raw in ev.stats:
                            stat = stat_class.FromString(raw)
                            kind = stat.WhichOneof("value")
                            if stat.metadata_id in counters and kind in ("int64_value",
                                                                          "uint64_value"):
                                setattr(stat, kind, getattr(stat, kind) + copy * 1000)
                            stats.append(stat.SerializeToString())
                        del moved.stats[:]
                        moved.stats.extend(stats)
                    out.append(moved.SerializeToString())
            del line.events[:]
            line.events.extend(out)
    run = logdir / "plugins" / "profile" / "run"
    run.mkdir(parents=True, exist_ok=True)
    trace = run / "h200.xplane.pb"
    trace.write_bytes(space.SerializeToString())
    (logdir / "calls.txt").write_text(f"{H200_STEPS * copies}\n")
    return trace, H200_STEPS * copies


# ``profile`` as its command line runs it, with the report's writing timed from inside.
_PROFILE = r"""
import sys
import time

from roofline_report import cli, output

_write = output.write_results
taken = []


def timed(*args, **kwargs):
    start = time.perf_counter()
    try:
        return _write(*args, **kwargs)
    finally:
        taken.append(time.perf_counter() - start)


output.write_results = timed
code = cli.main(["profile", *sys.argv[1:]])
print("WRITE", sum(taken))
sys.exit(code)
"""


_ENV: dict[str, str] = dict(os.environ)


def _profile(logdir: Path, out: Path) -> tuple[float, float, float | None]:
    """Wall seconds, peak RSS (MB) and the seconds of writing the report of one ``profile``."""
    env = {**_ENV, "PYTHONPATH": str(ROOT)}
    wall, rss, text, _ = _run_measured([PYTHON, "-c", _PROFILE, str(logdir), "--out", str(out)],
                                       env)
    line = next((ln for ln in text.splitlines() if ln.startswith("WRITE")), "")
    return wall, rss, float(line.split()[1]) if line else None


def _xprof(path: Path, tool: str) -> tuple[float | None, float | None, str]:
    # XProf saves what it converted beside the trace and reuses it: remove it, so that each
    # tool converts the trace cold.
    for saved in path.parent.iterdir():
        if saved != path and saved.is_file():
            saved.unlink()
    wall, rss, out, _ = _run_measured([PYTHON, "-c", _XPROF, str(path), tool], dict(_ENV))
    if "NO_XPROF" in out:
        return None, None, "xprof not installed (pip install xprof)"
    line = next((ln for ln in out.splitlines() if ln.startswith("XPROF")), "")
    parts = line.split()
    return (float(parts[1]) if len(parts) > 1 else wall), rss, \
        f"{tool}: {parts[2] if len(parts) > 2 else '?'} bytes out"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="10,100", help="trace sizes in MB, comma separated")
    p.add_argument("--with-400", action="store_true", help="add a 400 MB trace")
    p.add_argument("--keep", metavar="DIR", help="write the traces here and keep them")
    p.add_argument("--no-bytecode-cache", action="store_true",
                   help="run profile as the environment says (PYTHONDONTWRITEBYTECODE makes "
                        "each run compile the package's source first)")
    p.add_argument("--gpu-sizes", default="",
                   help="sizes in MB of GPU traces made by repeating the shipped H200 trace, "
                        "comma separated (default: none)")
    p.add_argument("--xprof-tools", default=",".join(XPROF_TOOLS),
                   help="XProf's conversions to time, comma separated (default: %(default)s; "
                        "trace_viewer takes about ten times as long as profile)")
    ns = p.parse_args(argv)
    tools = [t.strip() for t in ns.xprof_tools.split(",") if t.strip()]
    unknown = [t for t in tools if t not in XPROF_TOOLS]
    if unknown:
        p.error(f"--xprof-tools: {', '.join(unknown)} is not one of {', '.join(XPROF_TOOLS)}")
    sizes = [float(s) for s in ns.sizes.split(",") if s.strip()]
    if ns.with_400:
        sizes.append(400.0)
    gpu_sizes = [float(s) for s in ns.gpu_sizes.split(",") if s.strip()]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="profile_scale_") as tmp:
        root = Path(ns.keep) if ns.keep else Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        # With --keep, a folder that already holds the traces is read again, not captured
        # again: three runs of one set of traces compare the tools, not three captures.
        reuse = bool(ns.keep)
        if not ns.no_bytecode_cache:
            _ENV.clear()
            _ENV.update({k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
            _ENV["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
            _profile(H200, Path(tmp) / "warm")  # compiles what it imports, untimed
            if tools:  # and XProf's, on a copy (it writes beside the trace)
                import gzip

                (fixture,) = sorted(H200.glob("plugins/profile/*/*.xplane.pb.gz"))
                copy = Path(tmp) / "warm_xprof" / "h200.xplane.pb"
                copy.parent.mkdir()
                copy.write_bytes(gzip.decompress(fixture.read_bytes()))
                _xprof(copy, tools[0])
        per_call = 0.0
        if sizes:
            calibration = (_kept(root / "calibration") if reuse else None) \
                or _capture(root / "calibration", 2000)
            per_call = calibration.stat().st_size / 2000
            print(f"calibration: {per_call:.0f} bytes per call", file=sys.stderr)
        traces = [(mb, "CPU", *_trace_of_size(root, mb, per_call, reuse)) for mb in sizes]
        traces += [(mb, "H200", *_h200_of_size(root, mb, reuse)) for mb in gpu_sizes]
        for mb, kind, trace, calls in traces:
            size_mb = trace.stat().st_size / 1e6
            print(f"{size_mb:.1f} MB trace ({calls} calls) written", file=sys.stderr)
            load = os.getloadavg()[0]
            wall, rss, write = _profile(trace.parent.parent.parent.parent,
                                        root / f"out_{kind}_{mb:g}")
            row: dict[str, Any] = {"trace": kind, "trace_mb": round(size_mb, 1), "calls": calls,
                                   "profile_s": round(wall, 2), "profile_rss_mb": round(rss),
                                   "write_s": round(write, 2) if write is not None else None,
                                   "load_1min": round(load, 2)}
            for tool in XPROF_TOOLS:
                xs, xrss, what = _xprof(trace, tool) if tool in tools else \
                    (None, None, f"{tool}: not run (--xprof-tools)")
                row[f"xprof_{tool}_s"] = round(xs, 2) if xs is not None else None
                row[f"xprof_{tool}_rss_mb"] = round(xrss) if xrss is not None else None
                row[f"xprof_{tool}_note"] = what
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    print("| trace | calls | `profile` wall | of it writing | peak RSS | XProf hlo_stats | "
          "peak RSS | XProf trace_viewer | peak RSS | load |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")

    def cell(v: Any, unit: str) -> str:
        return "not run" if v is None else f"{v} {unit}"

    for r in rows:
        print(f"| {r['trace']} {r['trace_mb']} MB | {r['calls']:,} | {r['profile_s']} s | "
              f"{cell(r['write_s'], 's')} | {r['profile_rss_mb']} MB | "
              f"{cell(r['xprof_hlo_stats_s'], 's')} | "
              f"{cell(r['xprof_hlo_stats_rss_mb'], 'MB')} | {cell(r['xprof_trace_viewer_s'], 's')}"
              f" | {cell(r['xprof_trace_viewer_rss_mb'], 'MB')} | {r['load_1min']} |")
    print(f"Bytecode: {'as the environment says' if ns.no_bytecode_cache else 'cached'}.")
    print(json.dumps({"rows": rows, "bytecode_cached": not ns.no_bytecode_cache}))


if __name__ == "__main__":
    main()
