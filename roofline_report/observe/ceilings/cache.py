"""The ceilings cache: a machine's measured ceilings saved once and reused by later runs.

Measuring the ceilings takes most of a build's time (half a minute on a two-core machine), and
they do not change while the machine and the software that measures them stay the same. So the
``ceilings`` record of results.json is saved, with the time it was measured, in the user's cache
folder, and later runs on the same machine take it from there; ``--remeasure`` (or
``analyze(..., remeasure=True)``) measures again and replaces the entry.

Where: ``$ROOFLINE_REPORT_CACHE/ceilings/`` when that variable is set (tests use it), else under
the platform's cache folder: ``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux and other Unix systems,
``~/Library/Caches`` on macOS, ``%LOCALAPPDATA%`` on Windows, each followed by
``roofline-report/ceilings/``. One JSON file per key.

The key is what makes a measurement valid (:class:`Key`): the CPU model and the cores this
process may run on, the backend, the device kind and device count, the jax and jaxlib versions,
this project's version and results schema version, the plan (``quick`` or ``full``) and the
format of the cache file. A file made under any other key has another name and is never read.

The plan rule: a full measurement (more samples, more sizes) may serve a quick run; a quick one
never serves a full run. A quick run takes the more recent of the full and the quick entries (so
that ``--quick --remeasure`` is not shadowed by an older full entry); a full run takes only the
full entry.

A cache file that is not JSON, has other keys, fails validation against the ``Ceilings`` record
of :mod:`roofline_report.results.schema`, or whose key does not match its name or its content
is ignored with a note, and the ceilings are measured again. A folder that cannot be read or
written is a note too: the cache never stops a build. Files are written to a temporary file
beside the entry and renamed over it, so a reader never sees half of one.

Ceilings are checked before they are believed. A file's ``digest`` is a hash of everything else
in it (format, key, time and ceilings), so an entry edited after it was saved (its rates
multiplied by ten, say) no longer matches and is ignored as altered. The file must be a regular
file (never a FIFO or a device, which are not opened: a FIFO would block the reader) of at most
:data:`MAX_FILE_BYTES`, owned by the user who runs the build, and writable by no one else; the
folder must be owned by that user (a symlink to another user's folder is neither read nor
written). Any of these failing is a note naming why, and a fresh measurement. Ceilings
measured under load (see :mod:`roofline_report.analysis.measuring_load`) are not saved, and an
entry that says it was measured under load is ignored: the next run measures again, until a
quiet measurement is saved.

Notes name cache files by their file name only (no folder, which holds the user's name).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import stat
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import pydantic

from roofline_report.analysis.measuring_load import conditions
from roofline_report.errors import reason
from roofline_report.results import io as results_io
from roofline_report.results import schema
from roofline_report.version import __version__

# The layout and the rates of a cache file; a change makes every older file a miss
# (2: the sqrt and rsqrt rates are measured; 5: what splitting a kernel across threads adds;
# 6: each compute size timed in both rounds; 7: small products timed as batches; 8: the cost of
# a page fault; 9: the digest covers the content, and the ceilings carry the load they were
# measured under; 10: the split launch with calls enqueued, grouped convolutions per window,
# an int32 argmax; 11: a complex64 loop dot; 12: the interleaved reduction and the
# transpose fused with a broadcast; 13: a CPU's matrix-vector products, transposed dots,
# block transposes, real FFTs and row scatters by their widths; 14: real FFTs of rows of 400,
# products of a few vectors on the left, a sequence's convolutions, dense and depthwise; 15:
# a CPU's scatters of single elements into tables of a fixed size; 16: the row reduction
# in bfloat16 too; 17: a TPU's in-place updates of part of their tiles; 18: the rates of
# log1p, expm1, power, tan and atan2, and a CPU's FFTs of an operand computed before them;
# 19: a CPU's 2-D swap with its operand in main memory; 20: a CPU's rates on one thread;
# 21: a CPU's reduce-windows by the arrays they reduce together; 22: a CPU's gathers of
# single elements from tables of a fixed size; 23: top-k roofs on operands of other values in
# turn; 24: a CPU's conversions alone in their kernels; 25: a CPU's row reduction at every
# doubling of its size; 26: a CPU's small row reductions timed beside the same call without
# the reduction; 27: a CPU's layer norm of short rows in one library kernel; 28: a CPU's
# gather of rows of 64; 29: the convolution roof's output features, its patch matrices' key;
# 30: the padded convolutions' roof; 31: the weight gradients' roof; 32: XLA:CPU's generic
# convolutions' roof; 33: a CPU's single arithmetic operations alone in their kernels; 34: a
# CPU's broadcast transposes by the rows each output run reads; 35: a CPU's product of one
# column with its matrix computed before it)
CACHE_FORMAT = 35
MAX_FILE_BYTES = 4 << 20  # a cache file is about 50 KB; a larger one is not read
ENV_VAR = "ROOFLINE_REPORT_CACHE"
APP = "roofline-report"
FOLDER = "ceilings"
FILE_KEYS = frozenset({"format", "key", "digest", "measured_at", "ceilings"})
_MEASURED_AT = re.compile(schema.MEASURED_AT_PATTERN)

Plan = Literal["quick", "full"]


def cache_root(environ: Mapping[str, str] | None = None, platform: str | None = None,
               home: Path | None = None) -> Path:
    """This project's cache folder: ``$ROOFLINE_REPORT_CACHE``, else the platform's user cache
    folder followed by ``roofline-report``. Pure in its arguments (defaults: this process's)."""
    env = os.environ if environ is None else environ
    plat = sys.platform if platform is None else platform
    base_home = Path.home() if home is None else home
    override = env.get(ENV_VAR, "").strip()
    if override:
        return Path(override).expanduser()
    if plat.startswith("win"):
        local = env.get("LOCALAPPDATA", "").strip()
        return (Path(local) if local else base_home / "AppData" / "Local") / APP
    if plat == "darwin":
        return base_home / "Library" / "Caches" / APP
    xdg = env.get("XDG_CACHE_HOME", "").strip()
    # The XDG specification: a relative XDG_CACHE_HOME is invalid and is ignored.
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else base_home / ".cache"
    return base / APP


def ceilings_folder(environ: Mapping[str, str] | None = None) -> Path:
    """Where the ceilings cache files are."""
    return cache_root(environ) / FOLDER


@dataclass(frozen=True, slots=True)
class Key:
    """What a ceilings measurement is valid for. Two runs whose keys are equal may share one."""

    cpu_model: str
    cpu_count: int | None  # cores this process may run on (its affinity)
    backend: str
    device_kind: str
    device_count: int
    jax: str
    jaxlib: str
    version: str  # roofline-report's
    schema: int  # results.json's schema version
    plan: Plan
    format: int = CACHE_FORMAT

    def fields(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def digest(self) -> str:
        """A short hash of the key (in the file name and in results.json's ``origin``)."""
        text = json.dumps(self.fields(), sort_keys=True, ensure_ascii=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    @property
    def filename(self) -> str:
        return f"ceilings-{self.plan}-{self.digest}.json"

    def with_plan(self, plan: Plan) -> Key:
        return Key(**{**self.fields(), "plan": plan})


def key_for(environment: Mapping[str, Any], *, quick: bool, version: str = __version__) -> Key:
    """The key of a measurement on the machine ``environment`` describes (results.json's
    ``environment`` record, as :func:`roofline_report.observe.lower.environment` returns it)."""
    count = environment.get("cpu_count")
    return Key(
        cpu_model=str(environment.get("cpu_model") or "unknown"),
        cpu_count=count if isinstance(count, int) and not isinstance(count, bool) else None,
        backend=str(environment.get("backend", "")),
        device_kind=str(environment.get("device_kind", "")),
        device_count=int(environment.get("device_count", 0)),
        jax=str(environment.get("jax", "")),
        jaxlib=str(environment.get("jaxlib", "")),
        version=version,
        schema=schema.SCHEMA_VERSION,
        plan="quick" if quick else "full",
    )


@dataclass(frozen=True, slots=True)
class Entry:
    """Ceilings read from the cache: the record (without ``origin``) as validated, when it was
    measured and under which key."""

    ceilings: schema.Ceilings
    measured_at: str
    key: Key


class Damaged(ValueError):
    """A cache file that must not be trusted; the message says why."""


def parse_entry(text: str, key: Key) -> Entry:
    """The entry a cache file's text holds, checked against the expected ``key``; raises
    :class:`Damaged` with the reason for anything else."""
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise Damaged(f"not JSON ({reason(exc, 120)})") from None
    if not isinstance(data, dict):
        raise Damaged(f"not a JSON object but {type(data).__name__}")
    if set(data) != FILE_KEYS:
        extra = sorted(set(data) - FILE_KEYS)
        missing = sorted(FILE_KEYS - set(data))
        raise Damaged("other keys than a cache file's: "
                      + "; ".join(part for part in (
                          f"unknown {', '.join(map(repr, extra))}" if extra else "",
                          f"missing {', '.join(map(repr, missing))}" if missing else "")
                          if part))
    if type(data["format"]) is not int or data["format"] != CACHE_FORMAT:
        raise Damaged(f"cache format {data['format']!r}, not {CACHE_FORMAT}")
    if data["key"] != key.fields():
        raise Damaged("its key is not this run's key")
    if data["digest"] != content_digest(data):
        raise Damaged("it was altered after it was saved (its digest does not match its "
                      "content)")
    measured_at = data["measured_at"]
    if not isinstance(measured_at, str) or not _MEASURED_AT.match(measured_at):
        raise Damaged(f"measured_at {measured_at!r} is not a UTC time like 2025-01-31T12:00:00Z")
    ceilings = data["ceilings"]
    if not isinstance(ceilings, dict):
        raise Damaged(f"ceilings is {type(ceilings).__name__}, not an object")
    if "origin" in ceilings:
        raise Damaged("its ceilings carry an origin (a results.json record, not a cache entry)")
    try:
        typed = schema.Ceilings.model_validate(ceilings)
    except pydantic.ValidationError as exc:
        raise Damaged(f"not a valid ceilings record: {results_io.describe(exc)}") from None
    for field in ("backend", "device_kind"):
        if ceilings[field] != getattr(key, field):
            raise Damaged(f"its ceilings' {field} {ceilings[field]!r} is not its key's")
    if ceilings["quick"] != (key.plan == "quick"):
        raise Damaged(f"its ceilings were measured with the other plan than its key's "
                      f"({key.plan})")
    if (why := under_load(typed)):
        raise Damaged(why)
    return Entry(ceilings=typed, measured_at=measured_at, key=key)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def content_digest(document: Mapping[str, Any]) -> str:
    """A hash of a cache file's content: every key but ``digest``, as canonical JSON."""
    body = {k: v for k, v in document.items() if k != "digest"}
    text = json.dumps(body, sort_keys=True, ensure_ascii=True, separators=(",", ":"),
                      allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def under_load(ceilings: schema.Ceilings) -> str:
    """Why ceilings measured under load must not be kept ('' when they were not): which
    roofs came from rounds under load, or the load over the whole measurement."""
    c = conditions(ceilings)
    if not c.loaded:
        return ""
    if c.loaded_ceilings:
        names = c.loaded_ceilings
        return (f"measured under load (other work held the cores while {', '.join(names)} "
                f"{'was' if len(names) == 1 else 'were'} timed)")
    share = c.whole.others_share if c.whole is not None else None
    return ("measured under load (other processes took "
            f"{round(100 * share) if share is not None else '?'}% of the cores' time)")


def _uid() -> int | None:
    getuid = getattr(os, "getuid", None)  # not on Windows
    return int(getuid()) if getuid is not None else None


def _foreign(info: os.stat_result) -> str:
    """'' when the user who runs the build owns a file or folder of this status (or the system
    has no users), else whose it is."""
    uid = _uid()
    # No user ids in the note: it goes into results.json and onto the page.
    if uid is not None and info.st_uid != uid:
        return "owned by another user"
    return ""


def folder_problem(folder: Path) -> str:
    """Why the cache folder must be neither read nor written ('' when it may be, or does not
    exist yet): not a folder, or owned by another user, directly or as the target of a
    symbolic link. (Its files are checked one by one: a folder others may write to cannot
    slip one of theirs past those checks.)"""
    try:
        link = os.lstat(folder)
    except OSError:
        return ""  # no folder (yet): a miss, and save makes it
    try:
        info = os.stat(folder)
    except OSError as exc:
        return f"the ceilings cache folder cannot be read ({reason(exc, 120)})"
    if not stat.S_ISDIR(info.st_mode):
        return "the ceilings cache folder is not a folder"
    if whose := _foreign(info):
        if stat.S_ISLNK(link.st_mode):
            return f"the ceilings cache folder is a symbolic link to a folder {whose}"
        return f"the ceilings cache folder is {whose}"
    return ""


def _read_text(path: Path) -> str | None:
    """The text of the regular file ``path``, or None where there is none; raises
    :class:`Damaged` for a file that must not be read or trusted. Never opens anything but a
    regular file, never blocks, never reads more than :data:`MAX_FILE_BYTES`."""
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise Damaged(f"it could not be read ({reason(exc, 120)})") from None
    if stat.S_ISLNK(info.st_mode):
        raise Damaged("it is a symbolic link, not a file")
    if not stat.S_ISREG(info.st_mode):
        kind = ("a FIFO" if stat.S_ISFIFO(info.st_mode) else
                "a socket" if stat.S_ISSOCK(info.st_mode) else
                "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else
                "a folder" if stat.S_ISDIR(info.st_mode) else "something else")
        raise Damaged(f"it is {kind}, not a regular file")
    if whose := _foreign(info):
        raise Damaged(f"it is {whose}")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and _uid() is not None:
        raise Damaged(f"it is writable by group or others (mode {stat.filemode(info.st_mode)})")
    if info.st_size > MAX_FILE_BYTES:
        raise Damaged(f"it is {info.st_size} bytes, more than a cache file's "
                      f"{MAX_FILE_BYTES} at most")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Damaged("it is a symbolic link, not a file") from None
        raise Damaged(f"it could not be read ({reason(exc, 120)})") from None
    with os.fdopen(fd, "rb") as f:
        opened = os.fstat(f.fileno())
        if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino) \
                or not stat.S_ISREG(opened.st_mode):
            raise Damaged("it was replaced while it was read")
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise Damaged(f"it is more than a cache file's {MAX_FILE_BYTES} bytes at most")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Damaged(f"it could not be read ({reason(exc, 120)})") from None


def read(key: Key, folder: Path, notes: list[str]) -> Entry | None:
    """The entry saved under ``key`` in ``folder``, or None (a miss). A file that cannot be read
    or trusted is a miss with a note in ``notes``."""
    try:
        text = _read_text(folder / key.filename)
    except Damaged as exc:
        notes.append(f"the cached ceilings {key.filename} were ignored: {exc}")
        return None
    if text is None:  # no entry (or no folder): a miss
        return None
    try:
        return parse_entry(text, key)
    except Damaged as exc:
        notes.append(f"the cached ceilings {key.filename} were ignored: {exc}")
        return None


def lookup(key: Key, folder: Path | None = None) -> tuple[Entry | None, list[str]]:
    """The saved ceilings that may serve a run of ``key``, and notes on cache files ignored.

    A full run takes the full entry; a quick run the more recent of the full and quick ones
    (the ISO times compare as text)."""
    where = ceilings_folder() if folder is None else folder
    notes: list[str] = []
    if why := folder_problem(where):
        return None, [f"the ceilings cache was not read: {why}"]
    plans: tuple[Plan, ...] = ("full",) if key.plan == "full" else ("full", "quick")
    found = [e for plan in plans if (e := read(key.with_plan(plan), where, notes)) is not None]
    if not found:
        return None, notes
    return max(found, key=lambda e: (e.measured_at, e.key.plan == "full")), notes


def save(key: Key, ceilings: Mapping[str, Any], measured_at: str,
         folder: Path | None = None) -> list[str]:
    """Save ``ceilings`` (without any ``origin``) under ``key``, atomically; returns notes (a
    folder that cannot be written is a note, not an error)."""
    where = ceilings_folder() if folder is None else folder
    record = {k: v for k, v in ceilings.items() if k != "origin"}
    # The digest is of the content as it will be read back (tuples as lists, no NaN).
    body = json.loads(results_io.dumps({"format": CACHE_FORMAT, "key": key.fields(),
                                        "measured_at": measured_at, "ceilings": record}))
    try:  # read as the next run reads it; a record it would refuse is refused below
        typed: schema.Ceilings | None = schema.Ceilings.model_validate(body["ceilings"])
    except pydantic.ValidationError:
        typed = None
    if typed is not None and (why := under_load(typed)):
        return [f"the ceilings were not saved to the cache: {why}; the next run measures them "
                "again"]
    if why := folder_problem(where):
        return [f"the ceilings were not saved to the cache: {why}"]
    document = {**body, "digest": content_digest(body)}
    # What is saved must be what the next run accepts: check it the way it will be read.
    text = results_io.dumps(document)
    try:
        parse_entry(text, key)
    except Damaged as exc:
        return [f"the ceilings were not saved to the cache: {exc}"]
    temporary: str | None = None
    try:
        where.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=f".{key.filename}.", suffix=".tmp", dir=where)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, where / key.filename)
        temporary = None
    except OSError as exc:
        return [f"the ceilings could not be saved to the cache ({reason(exc, 120)}): the next "
                "run measures them again"]
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    return []


def origin(*, cached: bool, measured_at: str, key: Key, notes: list[str]) -> dict[str, Any]:
    """results.json's ``ceilings.origin``: whether the ceilings came from the cache, when they
    were measured, the key's digest, and the notes on the cache."""
    return {"cached": cached, "measured_at": measured_at, "key": key.digest, "notes": notes}


__all__ = ["CACHE_FORMAT", "ENV_VAR", "MAX_FILE_BYTES", "Damaged", "Entry", "Key", "cache_root",
           "ceilings_folder", "content_digest", "folder_problem", "key_for", "lookup", "origin",
           "parse_entry", "read", "save", "under_load"]
