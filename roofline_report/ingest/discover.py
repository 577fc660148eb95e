"""Finding a profiler run's trace files (no jax).

``jax.profiler.trace(LOGDIR)`` writes ``LOGDIR/plugins/profile/RUN/HOST.xplane.pb``: one folder
per run (named by the time it started, ``2026_12_01_12_16_17``) and one file per host. A trace
may also be given as that run folder, or one ``.xplane.pb`` file; any of them may be gzipped
(``.xplane.pb.gz``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from roofline_report.errors import InputError

__all__ = ["HostFile", "RunFiles", "find_run"]

SUFFIXES = (".xplane.pb", ".xplane.pb.gz")
_RUN_TIME = re.compile(r"^\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}$")


@dataclass(frozen=True, slots=True)
class HostFile:
    host: str  # the file's name without its suffix: the host that wrote it
    path: Path


@dataclass(frozen=True, slots=True)
class RunFiles:
    run: str
    runs: tuple[str, ...]  # every run found beside it
    hosts: tuple[HostFile, ...]


def _host_files(folder: Path) -> list[HostFile]:
    out = []
    try:
        entries = sorted(folder.iterdir())
    except OSError as exc:
        raise InputError(f"{folder}: cannot be read ({exc.strerror})") from None
    for p in entries:
        for suffix in SUFFIXES:
            if p.name.endswith(suffix) and p.is_file():
                out.append(HostFile(p.name[: -len(suffix)], p))
    seen: dict[str, HostFile] = {}
    for f in out:  # a host written both plain and gzipped: the plain file
        if f.host not in seen or f.path.name.endswith(".pb"):
            seen[f.host] = f
    return list(seen.values())


def _newest(runs: list[Path]) -> Path:
    """The newest run: by its name where every name is a run time (as jax names them), else
    by the folder's modification time."""
    if all(_RUN_TIME.match(r.name) for r in runs):
        return max(runs, key=lambda r: r.name)
    return max(runs, key=lambda r: (r.stat().st_mtime, r.name))


def find_run(path: str | Path, run: str | None = None) -> RunFiles:
    """The run to read under ``path`` (a LOGDIR, its ``plugins/profile`` folder, a run folder or
    one trace file): the one named ``run``, else the newest. Raises InputError (one line)
    when there is no trace or no such run."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{path}: no such file or folder")
    if p.is_file():
        if not p.name.endswith(SUFFIXES):
            raise InputError(f"{path}: not a profiler trace (expected a folder written by "
                             "jax.profiler.trace, or a .xplane.pb file)")
        if run is not None:
            raise InputError(f"--run {run}: {p.name} is one trace file, not a folder of runs")
        host = p.name[: -len(next(s for s in SUFFIXES if p.name.endswith(s)))]
        return RunFiles(p.parent.name, (p.parent.name,), (HostFile(host, p),))
    profile = p
    for candidate in (p / "plugins" / "profile", p / "profile"):
        if candidate.is_dir():
            profile = candidate
            break
    runs = sorted((d for d in profile.iterdir() if d.is_dir() and _host_files(d)),
                  key=lambda d: d.name) if profile.is_dir() else []
    if not runs:
        here = _host_files(p)
        if here:  # the run folder itself
            if run is not None and run != p.name:
                raise InputError(f"--run {run}: {path} is the run {p.name}")
            return RunFiles(p.name, (p.name,), tuple(here))
        raise InputError(f"{path}: no profiler trace (no plugins/profile/RUN/HOST.xplane.pb "
                         "under it; write one with jax.profiler.trace(LOGDIR))")
    names = tuple(r.name for r in runs)
    if run is not None:
        chosen = next((r for r in runs if r.name == run), None)
        if chosen is None:
            raise InputError(f"--run {run}: no such run under {path}; runs: {', '.join(names)}")
    else:
        chosen = _newest(runs)
    return RunFiles(chosen.name, names, tuple(_host_files(chosen)))
