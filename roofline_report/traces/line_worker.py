"""The helper process of :mod:`roofline_report.traces.line_aside`: the lines of a trace the
process reading it asked for, decoded from the file as that process would decode them (no jax).

Its own module, apart from the one that starts it: the helper runs the reader
(:mod:`.xspace`), and the reader starts the helper.
"""

from __future__ import annotations

import gzip
import os
import pickle
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roofline_report.traces import xspace
from roofline_report.traces.line_aside import _REQUEST, _RESULT, Helped, Source
from roofline_report.traces.xspace_schema import message_class

__all__ = ["main"]


def _decode(source: Source, lines: Mapping[int, Mapping[int, int]]) -> Helped | None:
    """The helper's work: the lines asked for, decoded from the file as the caller would;
    None where the file is not the one the caller read or a line is corrupt (the caller
    decodes them then, and raises their error itself)."""
    path = Path(source.path)
    st = path.stat()
    if (st.st_size, st.st_mtime_ns) != (source.size, source.mtime_ns):
        return None
    data = path.read_bytes()
    if data[:2] == xspace.GZIP_MAGIC:
        data = gzip.decompress(data)
    if len(data) != source.message_bytes:
        return None
    space = message_class("XSpace").FromString(data)
    del data
    out: dict[tuple[int, int], Any] = {}
    unknown: dict[str, set[int]] = {}
    negative: Counter[str] = Counter()
    unknown_values: Counter[str] = Counter()
    try:
        for p, firsts in sorted(lines.items()):
            plane = space.planes[p]
            # The metadata's own counts are the caller's: counted there, not here.
            names, with_stats, _ = xspace._PlaneReader(plane, {}, Counter(), Counter()
                                                        ).metadata()
            reader = xspace._PlaneReader(plane, unknown, negative, unknown_values)
            for i, first in sorted(firsts.items()):
                out[(p, i)] = reader.parts(plane.lines[i], names, with_stats, first)
            reader.cache.close()
    except (xspace.TraceFormatError, IndexError):
        return None
    return Helped(out, dict(negative), dict(unknown_values),
                  {k: sorted(v) for k, v in unknown.items()})


def main(argv: list[str] | None = None) -> int:
    """The helper: decode the lines the request in the folder given asks for and write them
    beside it (through a temporary name, so a helper stopped midway leaves nothing to be taken
    for a whole result); exit 1 where it cannot."""
    folder = (sys.argv[1:] if argv is None else argv)[0]
    with open(os.path.join(folder, _REQUEST), "rb") as fh:
        source, lines = pickle.load(fh)
    helped = _decode(source, lines)
    if helped is None:
        return 1
    partial = os.path.join(folder, _RESULT + ".partial")
    with open(partial, "wb") as fh:
        pickle.dump(helped, fh, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(partial, os.path.join(folder, _RESULT))
    return 0
