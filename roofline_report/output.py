"""Writing the report folder safely (no jax).

The report is written into a temporary folder beside the destination and swapped in only when
complete, so a failed or interrupted build leaves the previous report untouched. The tool only ever
replaces a folder that it wrote itself (recognised by its manifest), and refuses anything else.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline_report import interrupts
from roofline_report.errors import InputError, first_line
from roofline_report.text import plural

if TYPE_CHECKING:
    from roofline_report.analysis.analyse import Assumptions
    from roofline_report.results.schema import Results

MANIFEST = ".roofline-report.json"

#: Folders that hold the system, never a report: each is refused itself, wherever a symbolic link
#: leads (``/bin`` may resolve to ``/usr/bin``).
SYSTEM_FOLDERS: tuple[str, ...] = (
    "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media",
    "/mnt", "/opt", "/proc", "/root", "/run", "/sbin", "/snap", "/srv", "/sys", "/tmp", "/usr",
    "/var", "/var/tmp", "/Applications", "/Library", "/System", "/Users", "/Volumes", "/private",
    "/private/tmp", "/private/var", "/nix",
)  # fmt: skip
#: System folders whose whole subtree is refused too: pseudo file systems and the operating
#: system's own files. Elsewhere (/var, /opt, /srv, /mnt, ...) a user's own folder is fine.
SYSTEM_TREES: tuple[str, ...] = (
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/sbin",
    "/sys", "/usr", "/System", "/Library", "/nix",
)  # fmt: skip


def _manifest_files(folder: Path) -> set[str] | None:
    """The files a previous report recorded writing, or None if the folder is not ours."""
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        return None
    return {str(f) for f in data["files"]}


def _resolved(path: str | Path) -> Path:
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):  # a symbolic link loop
        return Path(os.path.abspath(path))


def _system_refusal(out: Path) -> str | None:
    """Why ``out`` is a system location (the root, the home folder, a system folder), or None.

    Looks only at the path: nothing is listed, so ``--out /usr`` is refused at once.
    """
    target = _resolved(out)
    if target == Path(target.anchor):
        return "is the root of the file system; give a folder of its own"
    try:
        home = _resolved(Path.home())
    except (KeyError, RuntimeError):  # no home folder known
        home = None
    if home is not None and target == home:
        return "is your home folder; give a folder of its own inside it"
    for name in SYSTEM_FOLDERS:
        if target in (Path(name), _resolved(name)):
            return f"is the system folder {name}; give a folder of your own"
    for name in SYSTEM_TREES:
        for tree in {Path(name), _resolved(name)}:
            if tree != Path(tree.anchor) and target.is_relative_to(tree):
                return f"is inside the system folder {name}; give a folder of your own"
    return None


def _first_foreign(folder: Path, files: set[str], *, top: bool = True) -> str | None:
    """The first entry of ``folder`` that a previous report did not write, or None.

    ``files`` are the manifest's relative paths. Only the folder's own entries and those of
    subfolders the manifest names are listed, and listing stops at the first foreign entry, so
    a large foreign tree is refused after one look.
    """
    expected_files: set[str] = {MANIFEST} if top else set()
    expected_dirs: dict[str, set[str]] = {}
    for rel in files:
        head, sep, rest = rel.partition("/")
        if sep:
            expected_dirs.setdefault(head, set()).add(rest)
        else:
            expected_files.add(head)
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name in expected_dirs and entry.is_dir(follow_symlinks=False):
                inner = _first_foreign(Path(entry.path), expected_dirs[entry.name], top=False)
                if inner is not None:
                    return f"{entry.name}/{inner}"
            elif entry.name not in expected_files or entry.is_dir(follow_symlinks=False):
                return entry.name
    return None


def _is_empty(folder: Path) -> bool:
    with os.scandir(folder) as entries:
        return next(entries, None) is None


def _probe_writable(out: Path, label: str) -> None:
    """Create and remove a temporary folder where the report's staging folder will go (the
    nearest existing ancestor of ``out``'s parent): permissions alone do not tell, on /proc or
    a read-only mount."""
    probe = _resolved(out).parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise InputError(f"{label}: {probe.name or probe} is a file, not a folder")
    with interrupts.critical():  # made and removed with no interrupt between
        try:
            made = tempfile.mkdtemp(prefix=".roofline-report-probe-", dir=probe)
        except OSError:
            raise InputError(f"{label}: cannot write in {probe.name or probe}") from None
        with contextlib.suppress(OSError):
            os.rmdir(made)


def check_destination(out: Path, *, label: str | None = None) -> None:
    """Refuse a destination the tool must not replace; InputError names it and why.

    Allowed: a folder that does not exist yet (its nearest existing ancestor must accept new
    entries), an empty folder, or a folder holding only a previous report of this tool. Refused
    at once, from the path alone: the file system's root, the home folder and system folders.
    Never walks a large tree: a folder is refused at its first entry that no previous report's
    manifest names.

    ``label`` starts each message; by default ``--out OUT`` (the command line's flag).
    """
    label = f"--out {out}" if label is None else label
    why = _system_refusal(out)
    if why is not None:
        raise InputError(f"{label}: {why}")
    if out.is_symlink():
        raise InputError(f"{label}: is a symbolic link; give the real folder")
    if out.exists() and not out.is_dir():
        raise InputError(f"{label}: is a file, not a folder")
    if out.is_dir():
        if (out / ".git").exists() or (out / "pyproject.toml").exists():
            raise InputError(f"{label}: looks like a project root; give a folder of its own")
        try:
            empty = _is_empty(out)
            ours = None if empty else _manifest_files(out)
            foreign = None if empty or ours is None else _first_foreign(out, ours)
        except OSError as exc:
            raise InputError(f"{label}: cannot read the folder ({exc.strerror})") from None
        if not empty and ours is None:
            raise InputError(
                f"{label}: folder is not empty and holds no previous report; "
                "give an empty or new folder"
            )
        if foreign is not None:
            raise InputError(
                f"{label}: holds {foreign}, which roofline-report did not write; "
                "move it or give another folder"
            )
    _probe_writable(out, label)


def write_report(out: Path, files: Mapping[str, str], *, label: str | None = None) -> None:
    """Write ``files`` (relative path -> text) as the folder ``out``, atomically replacing it.

    Text is written as UTF-8 with "\\n" line ends. On any failure the temporary folder is removed
    and ``out`` is as it was.
    """
    label = f"--out {out}" if label is None else label
    check_destination(out, label=label)
    parent = out.resolve().parent
    # Each step on the disk is a critical section: an interrupt waits for the step under way,
    # then removes the staging folder (recorded as it is made) and ends the process.
    with interrupts.critical():
        try:
            parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=parent))
        except OSError as exc:
            raise InputError(f"{label}: cannot create ({exc.strerror})") from None
        undo = interrupts.add_stop(lambda: shutil.rmtree(staging, ignore_errors=True))
    try:
        for rel, text in sorted(files.items()):
            with interrupts.critical():
                target = staging / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(target, "w", encoding="utf-8", newline="\n") as fh:
                    fh.write(text)
        manifest = {"files": sorted(files), "tool": "roofline-report"}
        with interrupts.critical():
            (staging / MANIFEST).write_text(
                json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            os.chmod(staging, 0o755)
        # The commit point: an interrupt until here leaves the previous report as it was; the
        # swap, once begun, runs to its end.
        with interrupts.committing():
            _swap(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        interrupts.remove_stop(undo)


def write_results(out: Path, data: Results | Mapping[str, Any], *, source: str | None = None,
                  label: str | None = None, assumptions: Assumptions | None = None,
                  title: str | None = None,
                  check: Callable[[Mapping[str, Any]], None] | None = None,
                  typed: Results | None = None) -> list[dict[str, str]]:
    """Render a results document (as in results.json) under ``assumptions`` (default: the
    budgets the run was given) and write the whole report folder atomically: report.html,
    report.md, results.json and figures/*.svg. Returns what was not available, measured or
    derived (the report lists it; the command line exits 3 for it).

    ``source`` names saved data (``--from-json FILE``): a failure to render it is then the data's
    fault and becomes an InputError naming it; with None (fresh measurements) it propagates.
    ``label`` names the destination in messages (see :func:`check_destination`); ``title``
    replaces the page's default title (a rendering option, not recorded in results.json).
    ``check`` validates a document not yet validated (one the caller built): it runs while the
    document's text is written beside it, and what it raises stops the write. ``typed``: the
    typed form of a plain ``data`` where the caller has it (rendered from, so that the document
    is not validated again).
    """
    from roofline_report.results import io as results
    from roofline_report.results import json_aside

    interrupts.safe_point("rendering")
    document = data if isinstance(data, Mapping) else results.document(data)
    # A large document's text is written by a helper process while this one renders; the
    # renderer's modules (matplotlib's among them: half a second) are imported once it runs.
    with json_aside.Aside(document) as aside:
        from roofline_report.report import svg_sharing
        from roofline_report.report import views as render

        if check is not None:
            check(document)
        try:
            # Without a title, the call is the one a renderer stand-in in a test also accepts.
            # The figures' SVG is written on two cores only where the helper leaves two.
            with svg_sharing.cores_taken(1 if aside.helping else 0):
                shown = typed if typed is not None else data
                rendered = (render.render(shown, assumptions) if title is None
                            else render.render(shown, assumptions, title=title))
        except Exception as exc:
            if source is None:
                raise
            # Saved data that passed validation but does not render: the file's shape is at
            # fault (rendering is a pure function of it). The cause's traceback is shown with
            # --debug.
            raise InputError(f"{source}: unexpected structure ({type(exc).__name__}: "
                             f"{first_line(exc)[:200]})") from exc
        files = {"report.html": rendered.html, "report.md": rendered.markdown,
                 "results.json": aside.text()}
    for name, svg in rendered.figures.items():
        files[f"figures/{name}.svg"] = svg
    interrupts.safe_point("writing")
    write_report(out, files, label=label)
    return rendered.skipped


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


def wrote_line(out: Path, skipped: int) -> str:
    """The line a build prints on stderr: where it wrote the report, and how many items were
    not available ("1 item", "3 items")."""
    line = f"wrote {out / 'report.html'} and {out / 'report.md'}"
    if skipped:
        line += f" ({plural(skipped, 'item', 'items')} not available: see the report)"
    return line
