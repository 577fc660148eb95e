"""Reading a profiler trace's XSpace (``HOST.xplane.pb``, gzipped or not) without jax.

``jax.profiler.trace(LOGDIR)`` writes one ``LOGDIR/plugins/profile/RUN/HOST.xplane.pb`` per host: a
serialized ``tensorflow.profiler.XSpace`` protobuf (``xla/tsl/profiler/protobuf/xplane.proto`` in
openxla/xla). :func:`read_xspace` decodes it with a small reader of the protobuf wire format that
knows the six messages of that file:

* ``XSpace``: planes (1), errors (2), warnings (3), hostnames (4);
* ``XPlane``: id (1), name (2), lines (3), event_metadata (4, a map id -> XEventMetadata),
  stat_metadata (5, a map id -> XStatMetadata), stats (6);
* ``XLine``: id (1), name (2), timestamp_ns (3), events (4), duration_ps (9), display_id (10),
  display_name (11);
* ``XEvent``: metadata_id (1), offset_ps (2) or num_occurrences (5), duration_ps (3), stats (4);
* ``XStat``: metadata_id (1) and one value: double (2), uint64 (3), int64 (4), string (5),
  bytes (6) or ref (7: the name of another stat metadata);
* ``XEventMetadata``: id (1), name (2), metadata (3), display_name (4), stats (5), child_id (6);
  ``XStatMetadata``: id (1), name (2), description (3).

Why a reader of its own rather than the ``protobuf`` package: jax does not depend on protobuf,
XLA does not ship the generated ``xplane_pb2`` module, and the wire format of these six messages
takes a hundred lines to read; reading it here also lets every problem be named (a truncated file,
a field whose wire type does not match the schema, a field the schema does not have).
``jax.profiler.ProfileData`` reads planes, lines and events but not the event metadata's stats,
where the compiled modules' HLO is kept (below), and it needs jax.

The objects returned are duck-typed as ``ProfileData``'s (planes with ``name`` and ``lines``,
lines with ``name`` and ``events``, events with ``name``, ``start_ns``, ``duration_ns`` and
``stats``), so :func:`roofline_report.traces.events.kernel_times` reads them. An event's stats are
its metadata's stats overlaid with its own (XLA puts constant stats such as ``hlo_op`` on either).

Where the HLO is: the plane ``/host:metadata`` has one event metadata per compiled program, whose
stat ``Hlo Proto`` holds a serialized ``xla.HloProto`` (bytes) and whose stat ``program_id`` (else
its id) names the program (openxla/xprof ``xprof/utils/hlo_proto_map.cc``,
``ParseHloProtosFromXSpace``). ``HloProto``'s field 1 is the ``HloModuleProto``, which
:func:`hlo_module_proto` extracts and :func:`roofline_report.ingest.hlo.hlo_text` turns into text.

Pure: no jax.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from roofline_report.wire import I64, LEN, VARINT, WireFormatError, fields, signed

# The error of a trace this reader cannot read (truncated, corrupt, or of a newer profiler:
# ``newer``): the wire reader's, under the name the trace readers catch.
TraceFormatError = WireFormatError

__all__ = [
    "METADATA_PLANE",
    "Event",
    "Line",
    "Plane",
    "ProgramMetadata",
    "TraceFormatError",
    "XSpace",
    "hlo_module_proto",
    "read_xspace",
    "read_xspace_bytes",
]

METADATA_PLANE = "/host:metadata"
HLO_PROTO_STAT = "Hlo Proto"
GZIP_MAGIC = b"\x1f\x8b"


def _text(buf: bytes, span: tuple[int, int], where: str) -> str:
    try:
        return buf[span[0]:span[1]].decode("utf-8")
    except UnicodeDecodeError:
        raise TraceFormatError(f"corrupt {where}: a string that is not UTF-8") from None


@dataclass
class _Schema:
    """Fields a message may carry, by number: the wire type each must have."""

    name: str
    wires: Mapping[int, int]


_SPACE = _Schema("XSpace", {1: LEN, 2: LEN, 3: LEN, 4: LEN})
_PLANE = _Schema("XPlane", {1: VARINT, 2: LEN, 3: LEN, 4: LEN, 5: LEN, 6: LEN})
_LINE = _Schema("XLine", {1: VARINT, 2: LEN, 3: VARINT, 4: LEN, 9: VARINT, 10: VARINT,
                          11: LEN})
_EVENT = _Schema("XEvent", {1: VARINT, 2: VARINT, 3: VARINT, 4: LEN, 5: VARINT})
_STAT = _Schema("XStat", {1: VARINT, 2: I64, 3: VARINT, 4: VARINT, 5: LEN, 6: LEN,
                          7: VARINT})
_EVENT_META = _Schema("XEventMetadata", {1: VARINT, 2: LEN, 3: LEN, 4: LEN, 5: LEN,
                                         6: LEN})
_STAT_META = _Schema("XStatMetadata", {1: VARINT, 2: LEN, 3: LEN})
_MAP_ENTRY = _Schema("map entry", {1: VARINT, 2: LEN})
# Packed repeated int64 (XEventMetadata.child_id) may also arrive unpacked.
_PACKABLE = {("XEventMetadata", 6)}


class _Reader:
    """Reads one XSpace; records the fields the schema does not know (a newer profiler)."""

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.unknown: dict[str, set[int]] = {}

    def fields(self, span: tuple[int, int], schema: _Schema) -> list[tuple[int, Any]]:
        """(number, value) of each field; a field the schema does not know is recorded and
        given as (number, None)."""
        out: list[tuple[int, Any]] = []
        wires = schema.wires
        for number, wire, value in fields(self.buf, span[0], span[1], schema.name):
            expected = wires.get(number)
            if expected == wire:
                out.append((number, value))
            elif expected is None:
                self.unknown.setdefault(schema.name, set()).add(number)
                out.append((number, None))
            elif (schema.name, number) in _PACKABLE and wire == VARINT:
                out.append((number, value))
            else:
                raise TraceFormatError(
                    f"{schema.name} field {number} has wire type {wire} where the XSpace schema "
                    f"has {expected}: the file is corrupt or was written by a profiler with "
                    "another schema", newer=True)
        return out

    # --- messages ----------------------------------------------------------------------------

    def stat(self, span: tuple[int, int], stat_names: Mapping[int, str]) -> tuple[int, Any]:
        meta = 0
        value: Any = None
        have = False
        unknown: list[int] = []
        for number, v in self.fields(span, _STAT):
            if v is None:
                unknown.append(number)
                continue
            if number == 1:
                meta = signed(v)
            elif number == 2:
                value, have = struct.unpack("<d", v.to_bytes(8, "little"))[0], True
            elif number == 3:
                value, have = v, True
            elif number == 4:
                value, have = signed(v), True
            elif number == 5:
                value, have = _text(self.buf, v, "XStat"), True
            elif number == 6:
                value, have = bytes(self.buf[v[0]:v[1]]), True
            elif number == 7:
                value, have = stat_names.get(signed(v), ""), True
        if not have and unknown:
            raise TraceFormatError(
                "a stat's value is in a field this reader does not know (XStat field "
                f"{min(unknown)}): the trace was written by a newer profiler", newer=True)
        return meta, value

    def stats(self, spans: list[tuple[int, int]], stat_names: Mapping[int, str]
              ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for span in spans:
            meta, value = self.stat(span, stat_names)
            out[stat_names.get(meta, f"stat {meta}")] = value
        return out

    def stat_metadata(self, span: tuple[int, int]) -> tuple[int, str]:
        key, name = 0, ""
        for number, value in self.fields(span, _MAP_ENTRY):
            if number == 1:
                key = signed(value)
            elif number == 2:
                for n, v in self.fields(value, _STAT_META):
                    if n == 2:
                        name = _text(self.buf, v, "XStatMetadata")
        return key, name

    def event_metadata(self, span: tuple[int, int]
                       ) -> tuple[int, str, str, list[tuple[int, int]]]:
        key, name, display = 0, "", ""
        stats: list[tuple[int, int]] = []
        for number, value in self.fields(span, _MAP_ENTRY):
            if number == 1:
                key = signed(value)
            elif number == 2:
                for n, v in self.fields(value, _EVENT_META):
                    if n == 2:
                        name = _text(self.buf, v, "XEventMetadata")
                    elif n == 4:
                        display = _text(self.buf, v, "XEventMetadata")
                    elif n == 5:
                        stats.append(v)
        return key, name, display, stats

    def plane(self, span: tuple[int, int]) -> Plane:
        name = ""
        plane_id = 0
        line_spans: list[tuple[int, int]] = []
        event_meta_spans: list[tuple[int, int]] = []
        stat_meta_spans: list[tuple[int, int]] = []
        stat_spans: list[tuple[int, int]] = []
        for number, value in self.fields(span, _PLANE):
            if number == 1:
                plane_id = signed(value)
            elif number == 2:
                name = _text(self.buf, value, "XPlane")
            elif number == 3:
                line_spans.append(value)
            elif number == 4:
                event_meta_spans.append(value)
            elif number == 5:
                stat_meta_spans.append(value)
            elif number == 6:
                stat_spans.append(value)
        stat_names = dict(self.stat_metadata(s) for s in stat_meta_spans)
        metadata: dict[int, ProgramMetadata] = {}
        event_names: dict[int, str] = {}
        event_stats: dict[int, dict[str, Any]] = {}
        for s in event_meta_spans:
            key, ev_name, display, stats = self.event_metadata(s)
            event_names[key] = ev_name
            decoded = self.stats(stats, stat_names)
            event_stats[key] = decoded
            metadata[key] = ProgramMetadata(key, ev_name, display, decoded)
        lines = [self.line(s, event_names, event_stats, stat_names) for s in line_spans]
        return Plane(plane_id, name, lines, self.stats(stat_spans, stat_names), metadata)

    def line(self, span: tuple[int, int], event_names: Mapping[int, str],
             event_stats: Mapping[int, Mapping[str, Any]], stat_names: Mapping[int, str]
             ) -> Line:
        line_id = 0
        name = display = ""
        timestamp = 0
        event_spans: list[tuple[int, int]] = []
        for number, value in self.fields(span, _LINE):
            if number == 1:
                line_id = signed(value)
            elif number == 2:
                name = _text(self.buf, value, "XLine")
            elif number == 3:
                timestamp = signed(value)
            elif number == 4:
                event_spans.append(value)
            elif number == 11:
                display = _text(self.buf, value, "XLine")
        events = []
        for s in event_spans:
            meta = 0
            offset = duration = 0
            timed = aggregated = False
            unknown: list[int] = []
            stat_spans: list[tuple[int, int]] = []
            for number, value in self.fields(s, _EVENT):
                if value is None:
                    unknown.append(number)
                elif number == 1:
                    meta = signed(value)
                elif number == 2:
                    offset, timed = signed(value), True
                elif number == 3:
                    duration = signed(value)
                elif number == 4:
                    stat_spans.append(value)
                elif number == 5:
                    aggregated = True
            if not timed:
                if not aggregated and unknown:
                    raise TraceFormatError(
                        "an event's time is in a field this reader does not know (XEvent "
                        f"field {min(unknown)}): the trace was written by a newer profiler",
                        newer=True)
                continue  # an aggregated event (num_occurrences): no place in time
            if duration < 0:
                raise TraceFormatError(f"corrupt XEvent: a negative duration ({duration} ps)")
            stats = dict(event_stats.get(meta, {}))
            if stat_spans:
                stats.update(self.stats(stat_spans, stat_names))
            events.append(Event(event_names.get(meta, ""), timestamp + offset / 1000.0,
                                duration / 1000.0, stats))
        return Line(line_id, name or display, events)


# --- what a trace holds -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Event:
    """One event: its name, start (ns since the epoch), duration (ns) and stats by name."""

    name: str
    start_ns: float
    duration_ns: float
    stats: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Line:
    id: int
    name: str
    events: list[Event]


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
class XSpace:
    """A decoded XSpace: its planes, the profiler's errors and warnings, the hosts it names and
    the fields the reader did not know (message name -> field numbers)."""

    planes: list[Plane]
    errors: list[str]
    warnings: list[str]
    hostnames: list[str]
    unknown_fields: dict[str, list[int]]

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


def read_xspace_bytes(data: bytes, where: str = "the trace") -> XSpace:
    """Decode an XSpace from its bytes (gzip is undone first). Raises :class:`TraceFormatError`
    naming ``where`` for a truncated or corrupt file or one of a schema this reader cannot
    read."""
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceFormatError(f"{where}: a gzip file that does not decompress "
                                   f"({exc})") from None
    if not data:
        raise TraceFormatError(f"{where}: the file is empty")
    reader = _Reader(data)
    try:
        planes: list[Plane] = []
        errors: list[str] = []
        warnings: list[str] = []
        hosts: list[str] = []
        for number, value in reader.fields((0, len(data)), _SPACE):
            if number == 1:
                planes.append(reader.plane(value))
            elif number == 2:
                errors.append(_text(data, value, "XSpace"))
            elif number == 3:
                warnings.append(_text(data, value, "XSpace"))
            elif number == 4:
                hosts.append(_text(data, value, "XSpace"))
    except TraceFormatError as exc:
        raise TraceFormatError(f"{where}: {exc}", newer=exc.newer) from None
    if not planes:
        raise TraceFormatError(f"{where}: holds no profiler plane (not an XSpace trace)")
    unknown = {k: sorted(v) for k, v in sorted(reader.unknown.items())}
    return XSpace(planes, errors, warnings, hosts, unknown)


def read_xspace(path: str | Any) -> XSpace:
    """Decode the XSpace in the file ``path`` (``.xplane.pb`` or ``.xplane.pb.gz``)."""
    from pathlib import Path

    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise TraceFormatError(f"{p.name}: cannot be read ({exc.strerror})") from None
    return read_xspace_bytes(data, p.name)


def hlo_module_proto(hlo_proto: bytes) -> bytes:
    """The serialized ``HloModuleProto`` inside a serialized ``xla.HloProto`` (its field 1;
    field 3, the buffer assignment, is not needed). Raises TraceFormatError when absent."""
    for number, wire, value in fields(hlo_proto, 0, len(hlo_proto), "HloProto"):
        if number == 1 and wire == LEN:
            return bytes(hlo_proto[value[0]:value[1]])
    raise TraceFormatError("an Hlo Proto without its HLO module")
