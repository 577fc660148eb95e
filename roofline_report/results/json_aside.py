"""A large results document's JSON text written by a helper process while the report renders
(no jax).

A profile of a long run makes a results.json of tens of megabytes (a 100 MB trace of 170,940
calls: 18 MB, whose text takes about 1.2 s to write on a 2-core CPU, most of the time the page
takes to render), and both are pure functions of the same document: the text is made on
another core while this process renders. The helper is a fresh interpreter (not a fork: the
process has threads, numpy's among them, and a fork copies their locks as they are; nor would
a fork be quicker: tried on that trace, the pages both processes then copy on writing made
each of them slower than the pickling and the interpreter's start it saved) that imports only
:mod:`roofline_report.results.json_text` and :mod:`.per_call_columns` (the standard library
beside them); the document goes to it pickled in a temporary file and the text comes back in
another, so that neither process waits on a pipe.

The text is the one :func:`~roofline_report.results.json_text.dumps` gives in this process,
byte for byte (the same function on the same values: pickle keeps every float exactly). A
helper that cannot start, fails, or outlasts :data:`WAIT_S` is set aside and the text made
here, so the result never depends on it. A small document is written here directly: starting
an interpreter costs more than its text (:data:`ASIDE_BYTES`).
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from roofline_report import children
from roofline_report.results.json_text import dumps
from roofline_report.results.per_call_columns import compact

__all__ = ["ASIDE_BYTES", "WAIT_S", "Aside", "main"]

# A pickled document at least this large is written by the helper: its text takes about
# 0.1 s per 2 MB pickled here, more than starting an interpreter that imports the standard
# library's json.
ASIDE_BYTES = 2 * 2**20
WAIT_S = 600.0  # a helper still writing after this long is stopped and the text made here
_INPUT, _OUTPUT = "document.pickle", "results.json"


class Aside:
    """``with Aside(document) as aside: ...; text = aside.text()``: the helper starts on
    entering (for a large document), :meth:`text` waits for it, and leaving stops it and
    removes its files, whatever happened in between."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self.document = document
        self._proc: subprocess.Popen[bytes] | None = None
        self._folder: str | None = None

    def __enter__(self) -> Aside:
        try:
            # In the compact form it is written in (its text is the same): fewer objects to
            # pickle here and to unpickle there (a long trace's calls: five lists, not a
            # record each).
            blob = pickle.dumps(compact(self.document), protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
            return self  # not picklable as it is: the text is made here
        if len(blob) < ASIDE_BYTES:
            return self
        folder = tempfile.mkdtemp(prefix="roofline-report-json-")
        self._folder = folder
        try:
            with open(os.path.join(folder, _INPUT), "wb") as fh:
                fh.write(blob)
            del blob
            self._proc = children.start("roofline_report.results.json_aside", [folder])
        except (OSError, children.NotStarted):  # no interpreter to start, say
            self._close()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._close()

    @property
    def helping(self) -> bool:
        """Whether a helper process is writing the text (and so holds a core)."""
        return self._proc is not None

    def text(self) -> str:
        """The document's JSON text: the helper's once it has finished cleanly, else made
        here."""
        if self._proc is not None and self._folder is not None:
            try:
                code = self._proc.wait(timeout=WAIT_S)
            except subprocess.TimeoutExpired:
                code = None
            if code == 0:
                try:
                    with open(os.path.join(self._folder, _OUTPUT), encoding="utf-8",
                              newline="") as fh:
                        text = fh.read()
                except OSError:
                    text = ""
                if text.endswith("\n"):
                    self._close()
                    return text
            self._close()
        return dumps(self.document)

    def _close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            children.end(proc)
        folder, self._folder = self._folder, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """The helper: read the pickled document in the folder given, write its text beside it
    (through a temporary name, so that a helper stopped midway leaves no text to be taken for
    a whole one)."""
    folder = (sys.argv[1:] if argv is None else argv)[0]
    with open(os.path.join(folder, _INPUT), "rb") as fh:
        document = pickle.load(fh)
    partial = os.path.join(folder, _OUTPUT + ".partial")
    with open(partial, "w", encoding="utf-8", newline="") as fh:
        fh.write(dumps(document))
    os.replace(partial, os.path.join(folder, _OUTPUT))
    return 0
