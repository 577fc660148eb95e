"""Finding a profiler run's trace files (no jax).

``jax.profiler.trace(LOGDIR)`` writes ``LOGDIR/plugins/profile/RUN/HOST.xplane.pb``: one folder
per run (named by the time it started, ``2026_12_01_12_16_17``) and one file per host. A trace
may also be given as that run folder, or one ``.xplane.pb`` file; any of them may be gzipped
(``.xplane.pb.gz``). Processes of one capture that save in different seconds write adjacent run
folders: a run's hosts are read with those of runs saved within seconds of it that name other
hosts, and a note says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from roofline_report.errors import InputError
from roofline_report.units import format_si

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
    notes: tuple[str, ...] = ()  # runs whose hosts were read with this one


# Processes of one capture that save their hosts' files in different seconds write them into
# run folders this many seconds apart at most (each names its folder by its own clock).
ADJACENT_RUN_S = 10


def _run_time(name: str) -> datetime | None:
    if not _RUN_TIME.match(name):
        return None
    return datetime.strptime(name, "%Y_%m_%d_%H_%M_%S")


def _with_adjacent(chosen: Path, runs: list[Path]) -> RunFiles:
    """The chosen run, with the hosts of the runs saved within ADJACENT_RUN_S of it whose host
    names it does not have (one capture whose processes saved in different seconds), and a
    note naming each such run and its hosts."""
    hosts = _host_files(chosen)
    at = _run_time(chosen.name)
    notes: list[str] = []
    if at is not None:
        names = {h.host for h in hosts}
        for other in runs:
            when = _run_time(other.name)
            if other == chosen or when is None or abs((when - at).total_seconds()) > \
                    ADJACENT_RUN_S:
                continue
            extra = _host_files(other)
            if not extra or names & {h.host for h in extra}:
                continue
            hosts += extra
            names |= {h.host for h in extra}
            notes.append(f"run {other.name}, saved "
                         f"{format_si(abs((when - at).total_seconds()), 's')} "
                         f"from run {chosen.name}, holds other hosts "
                         f"({', '.join(h.host for h in extra)}): read with it as one capture")
    return RunFiles(chosen.name, tuple(r.name for r in runs), tuple(hosts), tuple(notes))


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
    return _with_adjacent(chosen, runs)
