"""The XSpace protobuf messages, described at run time for the ``protobuf`` package (no jax).

``jax.profiler.trace(LOGDIR)`` writes one ``LOGDIR/plugins/profile/RUN/HOST.xplane.pb`` per host:
a serialized ``tensorflow.profiler.XSpace`` (``tsl/profiler/protobuf/xplane.proto`` in
openxla/xla; XProf reads the same file). Neither jax nor XLA ships a generated module for it, so
the messages are described here from that file's published field numbers and built into classes
with ``descriptor_pool`` and ``message_factory``; the ``protobuf`` package's C (upb) backend then
parses a trace (11 MB in about 0.1 s, where a wire-format reader in Python takes seconds):

* ``XSpace``: planes (1), errors (2), warnings (3), hostnames (4);
* ``XPlane``: id (1), name (2), lines (3), event_metadata (4, map id -> XEventMetadata),
  stat_metadata (5, map id -> XStatMetadata), stats (6);
* ``XLine``: id (1), name (2), timestamp_ns (3), events (4), duration_ps (9), display_id (10),
  display_name (11);
* ``XEvent``: metadata_id (1), oneof data {offset_ps (2), num_occurrences (5)}, duration_ps (3),
  stats (4);
* ``XStat``: metadata_id (1), oneof value {double (2), uint64 (3), int64 (4), string (5),
  bytes (6), ref (7: the id of the stat metadata whose name is the value)};
* ``XEventMetadata``: id (1), name (2), metadata (3), display_name (4), stats (5), child_id (6);
* ``XStatMetadata``: id (1), name (2), description (3).

Three liberties, all the same bytes on the wire: a map is described as the repeated entry
message it is encoded as (key 1, value 2); every ``stats`` field as repeated ``bytes``: a stat
stays serialized until it is read, and the same stat (an ``hlo_module``, a ``program_id``) recurs
on most events of a trace, so each distinct one is parsed as an ``XStat`` once; and a line's
``events`` as repeated ``bytes``: upb checks and splits the outer levels, and the reader decodes
a line's millions of events together (:mod:`roofline_report.traces.wire_columns`), parsing as
an ``XEvent`` only one of an unusual shape.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = ["PACKAGE", "message_class"]

PACKAGE = "tensorflow.profiler"
_F = descriptor_pb2.FieldDescriptorProto
_ONE, _MANY = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
_I64, _U64, _DOUBLE = _F.TYPE_INT64, _F.TYPE_UINT64, _F.TYPE_DOUBLE
_STR, _BYTES, _MSG = _F.TYPE_STRING, _F.TYPE_BYTES, _F.TYPE_MESSAGE

# message -> (field name, number, label, type, message type or "", oneof or "")
_MESSAGES: dict[str, list[tuple[str, int, int, int, str, str]]] = {
    "XSpace": [("planes", 1, _MANY, _MSG, "XPlane", ""),
               ("errors", 2, _MANY, _STR, "", ""),
               ("warnings", 3, _MANY, _STR, "", ""),
               ("hostnames", 4, _MANY, _STR, "", "")],
    "XPlane": [("id", 1, _ONE, _I64, "", ""),
               ("name", 2, _ONE, _STR, "", ""),
               ("lines", 3, _MANY, _MSG, "XLine", ""),
               ("event_metadata", 4, _MANY, _MSG, "XEventMetadataEntry", ""),
               ("stat_metadata", 5, _MANY, _MSG, "XStatMetadataEntry", ""),
               ("stats", 6, _MANY, _BYTES, "", "")],
    "XEventMetadataEntry": [("key", 1, _ONE, _I64, "", ""),
                            ("value", 2, _ONE, _MSG, "XEventMetadata", "")],
    "XStatMetadataEntry": [("key", 1, _ONE, _I64, "", ""),
                           ("value", 2, _ONE, _MSG, "XStatMetadata", "")],
    "XLine": [("id", 1, _ONE, _I64, "", ""),
              ("name", 2, _ONE, _STR, "", ""),
              ("timestamp_ns", 3, _ONE, _I64, "", ""),
              ("events", 4, _MANY, _BYTES, "", ""),
              ("duration_ps", 9, _ONE, _I64, "", ""),
              ("display_id", 10, _ONE, _I64, "", ""),
              ("display_name", 11, _ONE, _STR, "", "")],
    "XEvent": [("metadata_id", 1, _ONE, _I64, "", ""),
               ("offset_ps", 2, _ONE, _I64, "", "data"),
               ("duration_ps", 3, _ONE, _I64, "", ""),
               ("stats", 4, _MANY, _BYTES, "", ""),
               ("num_occurrences", 5, _ONE, _I64, "", "data")],
    "XStat": [("metadata_id", 1, _ONE, _I64, "", ""),
              ("double_value", 2, _ONE, _DOUBLE, "", "value"),
              ("uint64_value", 3, _ONE, _U64, "", "value"),
              ("int64_value", 4, _ONE, _I64, "", "value"),
              ("str_value", 5, _ONE, _STR, "", "value"),
              ("bytes_value", 6, _ONE, _BYTES, "", "value"),
              ("ref_value", 7, _ONE, _U64, "", "value")],
    "XEventMetadata": [("id", 1, _ONE, _I64, "", ""),
                       ("name", 2, _ONE, _STR, "", ""),
                       ("metadata", 3, _ONE, _BYTES, "", ""),
                       ("display_name", 4, _ONE, _STR, "", ""),
                       ("stats", 5, _MANY, _BYTES, "", ""),
                       ("child_id", 6, _MANY, _I64, "", "")],
    "XStatMetadata": [("id", 1, _ONE, _I64, "", ""),
                      ("name", 2, _ONE, _STR, "", ""),
                      ("description", 3, _ONE, _STR, "", "")],
}


def _file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(
        name="roofline_report/xplane.proto", package=PACKAGE, syntax="proto3")
    for name, fields in _MESSAGES.items():
        message = proto.message_type.add(name=name)
        oneofs: list[str] = []
        for field_name, number, label, kind, type_name, oneof in fields:
            f = message.field.add(name=field_name, number=number, label=label, type=kind)
            if type_name:
                f.type_name = f".{PACKAGE}.{type_name}"
            if oneof:
                if oneof not in oneofs:
                    oneofs.append(oneof)
                    message.oneof_decl.add(name=oneof)
                f.oneof_index = oneofs.index(oneof)
    return proto


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())
_CLASSES: dict[str, Any] = {}


def message_class(name: str) -> Any:
    """The message class of ``name`` (``XSpace``, ``XStat``, ...), built once."""
    if name not in _CLASSES:
        _CLASSES[name] = message_factory.GetMessageClass(
            _POOL.FindMessageTypeByName(f"{PACKAGE}.{name}"))
    return _CLASSES[name]
