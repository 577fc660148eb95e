"""Reading a profiler trace's XSpace (``HOST.xplane.pb``, gzipped or not) without jax.

``jax.profiler.trace(LOGDIR)`` writes one ``LOGDIR/plugins/profile/RUN/HOST.xplane.pb`` per host: a
serialized ``tensorflow.profiler.XSpace`` protobuf. :func:`read_xspace` parses it with the
``protobuf`` package's C backend, from the messages :mod:`.xspace_schema` describes, and turns
what the analysis reads into plain objects. ``jax.profiler.ProfileData`` reads planes, lines and
events too, but not the event metadata's stats, where the compiled modules' HLO is kept (below),
and it needs jax.

The objects returned are duck-typed as ``ProfileData``'s (planes with ``name`` and ``lines``,
lines with ``name`` and ``events``, events with ``name``, ``start_ns``, ``duration_ns`` and
``stats``), so :func:`roofline_report.traces.events.kernel_times` reads them. An event's stats are
its metadata's stats overlaid with its own (XLA puts constant stats such as ``hlo_op`` on either).
A line's events are decoded together, with numpy (:mod:`.wire_columns`; an event or stat of an
unusual shape one by one, by the ``protobuf`` package), and kept as columns
(:class:`EventColumns`: metadata ids, starts, durations, and the stats as columns too); event
objects and their stats dicts are built only when iterated; :func:`events_where` picks events by
name or stat without building the rest (a 100 MB trace holds about four million events, most
never read).

Nothing is dropped silently. A field the schema does not have is skipped and named
(``XSpace.unknown_fields``: a newer profiler); a stat whose value is of a type the schema does not
have, and an event with a negative duration, are skipped and counted (``XSpace.dropped``). A file
that is not a protobuf, is truncated, is a protobuf of another kind, uses a known field with
another wire type, or places an event in time by a field the schema does not have is refused
with :class:`TraceFormatError` (one line); so is a file over the 2 GiB one protobuf message may
hold.

Where the HLO is: the plane ``/host:metadata`` has one event metadata per compiled program, whose
stat ``Hlo Proto`` holds a serialized ``xla.HloProto`` (bytes) and whose stat ``program_id`` (else
its id) names the program (openxla/xprof ``xprof/utils/hlo_proto_map.cc``,
``ParseHloProtosFromXSpace``). ``HloProto``'s field 1 is the ``HloModuleProto``, which
:func:`hlo_module_proto` extracts and :func:`roofline_report.ingest.hlo.hlo_text` turns into text.

Pure: no jax.
"""

from __future__ import annotations

import gzip
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError
from google.protobuf.unknown_fields import UnknownFieldSet

from roofline_report.traces import line_aside
from roofline_report.traces.event_columns import Event, EventColumns, events_where
from roofline_report.traces.line_stats import NO_STATS, LineStats
from roofline_report.traces.wire_columns import (
    PAD,
    event_fields,
    narrow,
    stat_fields,
)
from roofline_report.traces.xspace_schema import message_class
from roofline_report.wire import LEN, WireFormatError, fields

# The error of a trace this reader cannot read (truncated, corrupt, not a trace, or of a newer
# profiler: ``newer``).
TraceFormatError = WireFormatError

__all__ = [
    "MAX_TRACE_BYTES",
    "METADATA_PLANE",
    "Dropped",
    "Event",
    "EventColumns",
    "Line",
    "LineColumns",
    "Plane",
    "ProgramMetadata",
    "TraceFormatError",
    "XSpace",
    "events_where",
    "hlo_module_proto",
    "read_xspace",
    "read_xspace_bytes",
]

METADATA_PLANE = "/host:metadata"
HLO_PROTO_STAT = "Hlo Proto"
GZIP_MAGIC = b"\x1f\x8b"
# One protobuf message, so one trace file, holds at most 2 GiB (protobuf's limit).
MAX_TRACE_BYTES = 2**31 - 1
# The planes a profiler writes are named ``/host:...`` or ``/device:...`` or are one of these
# (tsl/profiler/utils/xplane_schema.h); a protobuf of another kind parsed as an XSpace has none.
_PLANE_NAMES = ("Task Environment", "Host CPUs", "Syscalls")
_UNKNOWN_VALUE = object()  # a stat whose value is in a field the schema does not have


# --- what a trace holds -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Line:
    id: int
    name: str
    events: Sequence[Event]  # the reader's: EventColumns
    timestamp_ns: int = 0  # the time its events' offsets count from


@dataclass(frozen=True, slots=True)
class ProgramMetadata:
    """One event metadata of a plane: its id, name, display name and stats (on the metadata
    plane, one per compiled program, with its ``Hlo Proto``)."""

    id: int
    name: str
    display_name: str
    stats: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Plane:
    id: int
    name: str
    lines: list[Line]
    stats: dict[str, Any]
    event_metadata: dict[int, ProgramMetadata] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Dropped:
    """What was skipped while reading, to be said: events with a negative duration (by event
    name) and stats whose value is of a type the schema does not have (by stat name)."""

    negative_durations: dict[str, int] = field(default_factory=dict)
    unknown_stat_values: dict[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.negative_durations or self.unknown_stat_values)


@dataclass(frozen=True, slots=True)
class XSpace:
    """A decoded XSpace: its planes, the profiler's errors and warnings, the hosts it names,
    the fields the reader did not know (message name -> field numbers) and what it skipped."""

    planes: list[Plane]
    errors: list[str]
    warnings: list[str]
    hostnames: list[str]
    unknown_fields: dict[str, list[int]]
    dropped: Dropped = field(default_factory=Dropped)

    def plane(self, name: str) -> Plane | None:
        return next((p for p in self.planes if p.name == name), None)

    def hlo_protos(self) -> dict[int, tuple[str, bytes]]:
        """program id -> (module name, serialized ``HloProto``) from the metadata plane."""
        out: dict[int, tuple[str, bytes]] = {}
        for plane in self.planes:
            if plane.name != METADATA_PLANE:
                continue
            for meta in plane.event_metadata.values():
                proto = meta.stats.get(HLO_PROTO_STAT)
                if not isinstance(proto, bytes):
                    continue
                program = meta.stats.get("program_id", meta.id)
                out[int(program)] = (meta.name, proto)
        return out


# --- decoding -----------------------------------------------------------------------------------


def _newer(message: str) -> TraceFormatError:
    return TraceFormatError(message, newer=True)


def _wire_clash(message: Any, number: int, wire: int) -> TraceFormatError:
    name = message.DESCRIPTOR.name
    return _newer(f"{name} field {number} has wire type {wire} where the XSpace schema has "
                  "another: the file is corrupt or was written by a profiler with another "
                  "schema")


def _unknown_of(message: Any, unknown: dict[str, set[int]]) -> None:
    """Record the fields of ``message`` (itself, not its children) the schema does not have;
    a known field with another wire type is refused."""
    known = message.DESCRIPTOR.fields_by_number
    for f in UnknownFieldSet(message):
        if f.field_number in known:
            raise _wire_clash(message, f.field_number, f.wire_type)
        unknown.setdefault(message.DESCRIPTOR.name, set()).add(f.field_number)


def _all_unknown(message: Any, unknown: dict[str, set[int]]) -> None:
    """Record the fields the schema does not have of ``message`` and of every message inside
    it, depth first in field order (a known field with another wire type is refused). Events
    and stats are bytes here (read by the columns' decoder and :meth:`_PlaneReader.parse_stat`),
    so this walks planes, lines and metadata only: no serializing of the whole trace."""
    _unknown_of(message, unknown)
    for fd in message.DESCRIPTOR.fields:
        if fd.message_type is None:
            continue
        value = getattr(message, fd.name)
        if hasattr(value, "DESCRIPTOR"):  # one message
            if message.HasField(fd.name):
                _all_unknown(value, unknown)
        else:  # repeated
            for item in value:
                _all_unknown(item, unknown)


# An XStat of a small metadata id whose value is a varint: most stats of a trace (run ids, flow
# ids, program ids), each distinct. Read here in Python at half upb's cost per message.
_ID_TAG = 0x08  # field 1 (metadata_id), varint
_UINT64_TAG, _INT64_TAG, _REF_TAG = 0x18, 0x20, 0x38  # fields 3, 4, 7, varint


def _varint_stat(raw: bytes) -> tuple[int, int, int] | None:
    """(metadata id, value tag, value) of a stat serialized as exactly ``08 id TAG varint``
    with ``id`` under 128 and a uint64, int64 or ref value; None for any other stat (upb
    reads those: other value types, unknown fields, malformed varints)."""
    n = len(raw)
    if n < 4 or raw[0] != _ID_TAG or raw[1] >= 0x80 or raw[1] == 0:
        return None
    tag = raw[2]
    if tag != _INT64_TAG and tag != _UINT64_TAG and tag != _REF_TAG:
        return None
    if n > 13 or raw[n - 1] >= 0x80 or (n == 13 and raw[12] > 1):
        return None  # not a varint of at most 64 bits ending with the stat
    value = 0
    shift = 0
    for i in range(3, n - 1):
        b = raw[i]
        if b < 0x80:
            return None  # the varint ends before the stat does: another field follows
        value |= (b & 0x7F) << shift
        shift += 7
    value |= raw[n - 1] << shift
    if tag == _INT64_TAG and value >= 1 << 63:
        value -= 1 << 64
    return raw[1], tag, value


# Distinct stats a plane's cache keeps before it starts again: a trace's recurring stats (op and
# module names) are back in it within a few events; its run and flow ids would fill it.
_STATS_KEPT = 65536
# Events of a line decoded together: bounds the memory the decoding's temporaries take.
_CHUNK = 1 << 18
_NOTHING_ASIDE: Mapping[int, int] = MappingProxyType({})  # no line left to a helper


class _StatCache(dict[bytes, tuple[int, Any]]):
    """Serialized stat -> (metadata id, value), each distinct one parsed on first use (a
    missing key parses it)."""

    def __init__(self, reader: _PlaneReader) -> None:
        super().__init__()
        self.reader: _PlaneReader | None = reader

    def close(self) -> None:
        """Forget the stats and the reader (a cycle that would keep the parsed trace alive
        while the cycle collector is paused)."""
        self.clear()
        self.reader = None

    def __missing__(self, raw: bytes) -> tuple[int, Any]:
        if self.reader is None:
            raise KeyError(raw)
        out = self.reader.parse_stat(raw)
        if len(self) >= _STATS_KEPT:  # most stats are distinct (ids): keep memory bounded
            self.clear()
        self[raw] = out
        return out


@dataclass(slots=True)
class _LineParts:
    """A line's columns as its chunks of events are decoded."""

    meta: list[np.ndarray] = field(default_factory=list)
    offset: list[np.ndarray] = field(default_factory=list)
    duration: list[np.ndarray] = field(default_factory=list)
    counts: list[np.ndarray] = field(default_factory=list)  # own stats per kept event
    key: list[np.ndarray] = field(default_factory=list)
    kind: list[np.ndarray] = field(default_factory=list)
    bits: list[np.ndarray] = field(default_factory=list)
    objects: list[Any] = field(default_factory=list)
    exact: dict[int, dict[str, Any]] = field(default_factory=dict)
    kept: int = 0

    def extend(self, tail: _LineParts) -> None:
        """Append the columns of the events after these (decoded apart, by a helper process):
        its objects' indices and its exactly decoded events' indices moved past these."""
        objects, kept = len(self.objects), self.kept
        for kind, bits in zip(tail.kind, tail.bits, strict=True):
            picked = kind == 0  # an object's index, not a value
            if objects and picked.any():
                bits = bits.copy()
                bits[picked] += np.uint64(objects)
            self.bits.append(bits)
        self.kind += tail.kind
        self.meta += tail.meta
        self.offset += tail.offset
        self.duration += tail.duration
        self.counts += tail.counts
        self.key += tail.key
        self.objects += tail.objects
        self.exact.update({i + kept: stats for i, stats in tail.exact.items()})
        self.kept += tail.kept


def _joined(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


class _PlaneReader:
    """Decodes one plane; each distinct serialized stat is parsed once (stat ids are the
    plane's own)."""

    def __init__(self, plane: Any, unknown: dict[str, set[int]], negative: Counter[str],
                 unknown_values: Counter[str]) -> None:
        self.plane = plane
        self.unknown = unknown
        self.negative = negative
        self.unknown_values = unknown_values
        self.stat_names: dict[int, str] = {e.key: e.value.name for e in plane.stat_metadata}
        self.cache = _StatCache(self)
        self._stat = message_class("XStat")
        self._event = message_class("XEvent")
        self.heads: dict[int, _LineParts] = {}  # lines' first events, decoded by :meth:`read`

    def parse_stat(self, raw: bytes) -> tuple[int, Any]:
        """(metadata id, value) of a serialized stat (the value ``_UNKNOWN_VALUE`` where it is
        of a type the schema does not have)."""
        fast = _varint_stat(raw)
        if fast is not None:
            number, tag, read = fast
            if tag == _REF_TAG:
                return number, self.stat_names.get(read, "")
            return number, read
        try:
            s = self._stat.FromString(raw)
        except DecodeError:
            raise TraceFormatError("corrupt XStat: not a well-formed message") from None
        kind = s.WhichOneof("value")
        value: Any
        if kind is None:
            _unknown_of(s, {})  # a known field with another wire type: refused
            value = _UNKNOWN_VALUE
        elif kind == "ref_value":
            value = self.stat_names.get(s.ref_value, "")
        else:
            value = getattr(s, kind)
            # Fields the schema does not have make the stat larger than its known fields.
            s.DiscardUnknownFields()
            if s.ByteSize() != len(raw):
                _unknown_of(self._stat.FromString(raw), self.unknown)
        return s.metadata_id, value

    def stat_name(self, number: int) -> str:
        return self.stat_names.get(number, f"stat {number}")

    def stats(self, raws: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for raw in raws:
            number, value = self.cache[raw]
            name = self.stat_name(number)
            if value is _UNKNOWN_VALUE:
                self.unknown_values[name] += 1
            else:
                out[name] = value
        return out

    def metadata(self) -> tuple[dict[int, str], dict[int, dict[str, Any]],
                                dict[int, ProgramMetadata]]:
        """The plane's event names, the stats of the event metadata that have some, and its
        event metadata, by metadata id."""
        metadata: dict[int, ProgramMetadata] = {}
        names: dict[int, str] = {}
        meta_stats: dict[int, dict[str, Any]] = {}
        for entry in self.plane.event_metadata:
            m = entry.value
            names[entry.key] = m.name
            decoded = self.stats(m.stats)
            meta_stats[entry.key] = decoded
            metadata[entry.key] = ProgramMetadata(entry.key, m.name, m.display_name, decoded)
        return names, {m: st for m, st in meta_stats.items() if st}, metadata

    def read(self, aside: Mapping[int, int] = _NOTHING_ASIDE
             ) -> tuple[Plane, dict[int, str], dict[int, dict[str, Any]]]:
        """The plane, with its names and the stats of its event metadata. The lines ``aside``
        (index: the first event a helper process decodes) are left empty, to be filled with
        :meth:`assemble`; of those the helper decodes from some event on, the events before
        it are decoded here, in the line's turn, and kept in :attr:`heads`."""
        p = self.plane
        names, with_stats, metadata = self.metadata()
        lines = []
        for i, line in enumerate(p.lines):
            first = aside.get(i)
            if first is None:
                lines.append(self.line(line, names, with_stats))
                continue
            if first > 0:
                self.heads[i] = self.parts(line, names, with_stats, 0, first)
            lines.append(_EMPTY_LINE)
        plane = Plane(p.id, p.name, lines, self.stats(p.stats), metadata)
        self.cache.close()  # the serialized stats: not needed once the plane is read
        return plane, names, with_stats

    def untimed(self, e: Any) -> None:
        """An event without an offset: aggregated (num_occurrences), skipped; one placed in
        time by a field the schema does not have is refused."""
        if e.WhichOneof("data") is None:
            numbers = sorted(f.field_number for f in UnknownFieldSet(e))
            if numbers:
                raise _newer("an event's time is in a field this reader does not know "
                             f"(XEvent field {numbers[0]}): the trace was written by a newer "
                             "profiler")

    def exact_event(self, raw: bytes, names: Mapping[int, str],
                    with_stats: Mapping[int, dict[str, Any]]
                    ) -> tuple[int, int, int, dict[str, Any]] | None:
        """(metadata id, offset, duration, stats) of an event of an unusual shape, parsed by
        the protobuf package; None for an event skipped (untimed, negative duration)."""
        try:
            e = self._event.FromString(raw)
        except DecodeError as exc:
            raise TraceFormatError(f"corrupt XSpace: a plane that does not parse ({exc})"
                                   ) from None
        offset = e.offset_ps
        if not offset and e.WhichOneof("data") != "offset_ps":
            self.untimed(e)
            _unknown_of(e, self.unknown)
            return None
        _unknown_of(e, self.unknown)
        duration = e.duration_ps
        meta = e.metadata_id
        if duration < 0:
            self.negative[names.get(meta, "")] += 1
            return None
        raws = e.stats
        if not raws:
            return meta, offset, duration, with_stats.get(meta, NO_STATS)
        own = self.stats(raws)
        return meta, offset, duration, ({**with_stats[meta], **own} if meta in with_stats
                                        else own)

    def chunk(self, raws: list[bytes], names: Mapping[int, str],
              with_stats: Mapping[int, dict[str, Any]], parts: _LineParts) -> None:
        """Decode the events ``raws`` of a line into ``parts`` (see :mod:`.wire_columns`)."""
        lengths = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws))
        joined = b"".join(raws)
        buf = np.frombuffer(joined + bytes(PAD), dtype=np.uint8)
        ends = np.cumsum(lengths)
        f = event_fields(buf, ends - lengths, ends)
        timed = ~f.odd & f.has_offset & ~f.has_occurrences
        keep = timed & (f.duration >= 0)
        negative = timed & (f.duration < 0)
        if negative.any():
            ids, counts = np.unique(f.meta[negative], return_counts=True)
            for m, c in zip(ids.tolist(), counts.tolist(), strict=True):
                self.negative[names.get(m, "")] += c
        meta, offset, duration = f.meta, f.offset, f.duration
        exact: dict[int, dict[str, Any]] = {}
        for i in np.flatnonzero(f.odd).tolist():
            got = self.exact_event(raws[i], names, with_stats)
            if got is not None:
                keep[i] = True
                meta[i], offset[i], duration[i], exact[i] = got
        # The stats of the events kept and decoded here, in wire order.
        rows = np.flatnonzero(keep[f.stat_event] & ~f.odd[f.stat_event])
        event, lo, hi = f.stat_event[rows], f.stat_start[rows], f.stat_end[rows]
        st = stat_fields(buf, lo, hi)
        kind, bits, key, stat_kept = st.kind, st.bits, st.meta, np.ones(len(rows), dtype=bool)
        for j in np.flatnonzero(st.odd).tolist():
            number, value = self.cache[joined[lo[j]:hi[j]]]
            if value is _UNKNOWN_VALUE:
                self.unknown_values[self.stat_name(number)] += 1
                stat_kept[j] = False
                continue
            key[j] = number
            bits[j] = len(parts.objects)
            parts.objects.append(value)
        new_index = np.cumsum(keep) - 1 + parts.kept
        own = event[stat_kept]
        parts.counts.append(np.bincount(new_index[own] - parts.kept,
                                        minlength=int(keep.sum())).astype(np.int64))
        parts.key.append(key[stat_kept])
        parts.kind.append(kind[stat_kept])
        parts.bits.append(bits[stat_kept])
        for i, stats in exact.items():
            parts.exact[int(new_index[i])] = stats
        parts.meta.append(meta[keep])
        parts.offset.append(offset[keep])
        parts.duration.append(duration[keep])
        parts.kept += int(keep.sum())

    def parts(self, line: Any, names: dict[int, str], with_stats: dict[int, dict[str, Any]],
              lo: int = 0, hi: int | None = None) -> _LineParts:
        """The events ``lo:hi`` of a line decoded, a chunk at a time (the columns do not depend
        on where the chunks begin: a line decoded in two parts joins to the same)."""
        parts = _LineParts()
        events = line.events
        hi = len(events) if hi is None else hi
        for first in range(lo, hi, _CHUNK):
            self.chunk(events[first:min(first + _CHUNK, hi)], names, with_stats, parts)
        return parts

    def columns(self, line: Any, names: dict[int, str],
                with_stats: dict[int, dict[str, Any]]) -> LineColumns:
        """A line's events decoded as columns (see :class:`LineColumns`)."""
        # Every event of a trace is decoded here, a chunk of a line's events at a time, as
        # columns (EventColumns), not objects.
        return self.finished(line, self.parts(line, names, with_stats))

    def finished(self, line: Any, parts: _LineParts) -> LineColumns:
        """A line's columns from all its events' decoded parts."""
        counts = _joined(parts.counts, np.int64)
        bounds = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=bounds[1:])
        # As base + offset_ps / 1000.0 event by event: the same IEEE operations, in numpy.
        start = line.timestamp_ns + _joined(parts.offset, np.int64) / 1000.0
        return LineColumns(narrow(_joined(parts.meta, np.int64)), start,
                           _joined(parts.duration, np.int64) / 1000.0, narrow(bounds),
                           narrow(_joined(parts.key, np.int64)), _joined(parts.kind, np.uint8),
                           _joined(parts.bits, np.uint64), parts.objects, parts.exact)

    def assemble(self, line: Any, c: LineColumns, names: dict[int, str],
                 with_stats: dict[int, dict[str, Any]]) -> Line:
        """The line of ``line`` (the message) whose events are ``c``."""
        stats = LineStats(self.stat_names, dict(with_stats), c.bounds, c.key, c.kind, c.bits,
                          c.objects, c.exact)
        return Line(line.id, line.name or line.display_name,
                    EventColumns(names, c.meta, c.start_ns, c.duration_ns, stats),
                    line.timestamp_ns)

    def line(self, line: Any, names: dict[int, str],
             with_stats: dict[int, dict[str, Any]]) -> Line:
        return self.assemble(line, self.columns(line, names, with_stats), names, with_stats)


@dataclass(frozen=True, slots=True)
class LineColumns:
    """A line's events as decoded (plain arrays and lists, so a helper process can send them
    back): metadata ids, starts and durations (ns), and the stat columns of
    :class:`~roofline_report.traces.line_stats.LineStats`."""

    meta: np.ndarray
    start_ns: np.ndarray
    duration_ns: np.ndarray
    bounds: np.ndarray
    key: np.ndarray
    kind: np.ndarray
    bits: np.ndarray
    objects: list[Any]
    exact: dict[int, dict[str, Any]]


_EMPTY_LINE = Line(0, "", ())  # a line's place while a helper decodes it


def _profiler_plane(name: str) -> bool:
    return name.startswith("/") or name in _PLANE_NAMES


def _plane_name(data: bytes, span: tuple[int, int]) -> str:
    """An XPlane's name (field 2) read from its own fields only, or "" where they are not
    an XPlane's."""
    try:
        for number, wire, value in fields(data, span[0], span[1], "XPlane"):
            if number == 2 and wire == LEN:
                return data[value[0]:value[1]].decode("utf-8", "replace")
    except WireFormatError:
        pass
    return ""


def _not_parsed(data: bytes, exc: Exception) -> str:
    """Why the bytes that did not parse are not an XSpace: their top-level fields broken
    (truncated, corrupt), no plane of a profiler's among them (another kind of protobuf), or
    a plane that does not parse."""
    try:
        top = fields(data, 0, len(data), "XSpace")
    except WireFormatError as wire:
        return str(wire)
    names = [_plane_name(data, value) for number, wire, value in top
             if number == 1 and wire == LEN]
    if not any(_profiler_plane(n) for n in names):
        return "not a profiler trace (a protobuf message without the planes of an XSpace)"
    return f"corrupt XSpace: a plane that does not parse ({exc})"


def read_xspace_bytes(data: bytes, where: str = "the trace", *,
                      path: Path | None = None) -> XSpace:
    """Decode an XSpace from its bytes (gzip is undone first). Raises :class:`TraceFormatError`
    naming ``where`` for a truncated or corrupt file, one over 2 GiB, a protobuf that is not
    a trace, or one of a schema this reader cannot read. ``path``: the file the bytes were
    read from, which a helper process may read again to decode some lines of a large trace
    on another core (:mod:`.line_aside`)."""
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceFormatError(f"{where}: a gzip file that does not decompress "
                                   f"({exc})") from None
    if not data:
        raise TraceFormatError(f"{where}: the file is empty")
    if len(data) > MAX_TRACE_BYTES:
        raise TraceFormatError(f"{where}: {len(data) / 2**30:.1f} GiB, over the 2 GiB one "
                               "protobuf message may hold: not a trace this reader can read")
    xspace = message_class("XSpace")
    try:
        space = xspace.FromString(data)
    except DecodeError as exc:
        raise TraceFormatError(f"{where}: {_not_parsed(data, exc)}") from None
    unknown: dict[str, set[int]] = {}
    try:
        _unknown_of(space, unknown)  # the planes field with another wire type: refused here
    except TraceFormatError as exc:
        raise TraceFormatError(f"{where}: {exc}", newer=exc.newer) from None
    if not space.planes:
        raise TraceFormatError(f"{where}: holds no profiler plane (not an XSpace trace): not a "
                               "profiler trace")
    if not any(_profiler_plane(p.name) for p in space.planes):
        raise TraceFormatError(f"{where}: not a profiler trace (a protobuf message whose "
                               "planes are not named as a profiler names them)")
    negative: Counter[str] = Counter()
    unknown_values: Counter[str] = Counter()
    try:
        source = line_aside.Source.of(path, len(data)) if path is not None else None
        planes = _planes(space, unknown, negative, unknown_values, source)
        _all_unknown(space, unknown)  # fields the schema does not have, message by message
    except TraceFormatError as exc:
        raise TraceFormatError(f"{where}: {exc}", newer=exc.newer) from None
    dropped = Dropped(dict(sorted(negative.items())), dict(sorted(unknown_values.items())))
    return XSpace(planes, list(space.errors), list(space.warnings), list(space.hostnames),
                  {k: sorted(v) for k, v in sorted(unknown.items())}, dropped)


def _planes(space: Any, unknown: dict[str, set[int]], negative: Counter[str],
            unknown_values: Counter[str], source: line_aside.Source | None) -> list[Plane]:
    """The planes of ``space`` decoded; a large trace's lines split between this process and
    a helper reading ``source`` (:mod:`.line_aside`)."""
    loads = [[line_aside.load(line.events) for line in p.lines] for p in space.planes]
    split = (line_aside.plan(loads, line_aside.cores())
             if source is not None and line_aside.helping else {})
    if source is None or not split:
        return [_PlaneReader(p, unknown, negative, unknown_values).read()[0]
                for p in space.planes]
    readers = [_PlaneReader(p, unknown, negative, unknown_values) for p in space.planes]
    with line_aside.LineAside(source, split) as aside:
        try:
            read = [reader.read(split.get(i, _NOTHING_ASIDE))
                    for i, reader in enumerate(readers)]
        except TraceFormatError:
            read = None
        helped = aside.result() if read is not None else None
    if read is None:
        # A corrupt line of this process's: read again in one process, so that the error
        # raised is the first in the trace's order, as without the helper.
        unknown.clear()
        negative.clear()
        unknown_values.clear()
        return [_PlaneReader(p, unknown, negative, unknown_values).read()[0]
                for p in space.planes]
    if helped is not None:
        negative.update(helped.negative)
        unknown_values.update(helped.unknown_values)
        for name, numbers in helped.unknown.items():
            unknown.setdefault(name, set()).update(numbers)
    planes = []
    for p, (plane, names, with_stats) in enumerate(read):
        if p in split:
            message = space.planes[p]
            reader = _PlaneReader(message, unknown, negative, unknown_values)
            heads = readers[p].heads
            for i, first in split[p].items():
                line = message.lines[i]
                tail = (helped.lines[(p, i)] if helped is not None
                        else reader.parts(line, names, with_stats, first))
                parts = heads.pop(i, None) or _LineParts()
                parts.extend(tail)
                plane.lines[i] = reader.assemble(line, reader.finished(line, parts), names,
                                                 with_stats)
            reader.cache.close()
        planes.append(plane)
    return planes


def read_xspace(path: str | Path) -> XSpace:
    """Decode the XSpace in the file ``path`` (``.xplane.pb`` or ``.xplane.pb.gz``); a file
    over the 2 GiB protobuf limit is refused before it is read."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_TRACE_BYTES:
            raise TraceFormatError(f"{p.name}: {size / 2**30:.1f} GiB, over the 2 GiB one "
                                   "protobuf message may hold: not a trace this reader can read")
        data = p.read_bytes()
    except OSError as exc:
        raise TraceFormatError(f"{p.name}: cannot be read ({exc.strerror})") from None
    return read_xspace_bytes(data, p.name, path=p)


def hlo_module_proto(hlo_proto: bytes) -> bytes:
    """The serialized ``HloModuleProto`` inside a serialized ``xla.HloProto`` (its field 1;
    field 3, the buffer assignment, is not needed). Raises TraceFormatError when absent."""
    for number, wire, value in fields(hlo_proto, 0, len(hlo_proto), "HloProto"):
        if number == 1 and wire == LEN:
            return bytes(hlo_proto[value[0]:value[1]])
    raise TraceFormatError("an Hlo Proto without its HLO module")
