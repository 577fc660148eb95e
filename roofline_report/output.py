"""Writing the report folder safely (no jax).

The report is written into a temporary folder beside the destination and swapped in only when
complete, so a failed or interrupted build leaves the previous report untouched. The tool only ever
replaces a folder that it wrote itself (recognised by its manifest), and refuses anything else.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from roofline_report.errors import InputError

MANIFEST = ".roofline-report.json"


def _manifest_files(folder: Path) -> set[str] | None:
    """The files a previous report recorded writing, or None if the folder is not ours."""
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        return None
    return {str(f) for f in data["files"]}


def _present_files(folder: Path) -> set[str]:
    return {
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() or p.is_symlink()
    }


def check_destination(out: Path) -> None:
    """Refuse a destination the tool must not replace; InputError names it and why.

    Allowed: a folder that does not exist yet (its parent must exist or be creatable), an empty
    folder, or a folder holding only a previous report of this tool.
    """
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: is a file, not a folder")
    if out.is_symlink():
        raise InputError(f"--out {out}: is a symbolic link; give the real folder")
    if out.is_dir():
        if (out / ".git").exists() or (out / "pyproject.toml").exists():
            raise InputError(f"--out {out}: looks like a project root; give a folder of its own")
        present = _present_files(out)
        if present:
            ours = _manifest_files(out)
            if ours is None:
                raise InputError(
                    f"--out {out}: folder is not empty and holds no previous report; "
                    "give an empty or new folder"
                )
            foreign = sorted(present - ours - {MANIFEST})
            if foreign:
                raise InputError(
                    f"--out {out}: holds files roofline-report did not write "
                    f"({', '.join(foreign[:3])}); move them or give another folder"
                )
    parent = out.resolve().parent
    probe = parent
    while not probe.exists():
        probe = probe.parent
    if not os.access(probe, os.W_OK | os.X_OK):
        raise InputError(f"--out {out}: cannot write in {probe.name or probe}")


def write_report(out: Path, files: Mapping[str, str]) -> None:
    """Write ``files`` (relative path -> text) as the folder ``out``, atomically replacing it.

    Text is written as UTF-8 with "\\n" line ends. On any failure the temporary folder is removed
    and ``out`` is as it was.
    """
    check_destination(out)
    parent = out.resolve().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=parent))
    except OSError as exc:
        raise InputError(f"--out {out}: cannot create ({exc.strerror})") from None
    try:
        for rel, text in sorted(files.items()):
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
        manifest = {"files": sorted(files), "tool": "roofline-report"}
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n",
                                        encoding="utf-8")
        os.chmod(staging, 0o755)
        _swap(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _swap(staging: Path, out: Path) -> None:
    if not out.exists():
        os.replace(staging, out)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.resolve().parent))
    old.rmdir()
    try:
        os.replace(out, old)
        os.replace(staging, out)
    except BaseException:
        # An interrupt may land between the two renames: put the previous report back if it
        # was moved aside and the new one is not in place.
        if old.exists() and not out.exists():
            os.replace(old, out)
        raise
    shutil.rmtree(old, ignore_errors=True)
