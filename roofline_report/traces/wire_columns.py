"""The fields of many serialized XEvents and XStats at once, decoded with numpy (no jax).

A 100 MB trace holds about four million events; decoding them one by one in Python took most of
the time of reading it. Here the events of a line are one buffer with each event's bounds, and
the fields are read for all events together, one field of each event per step (an event has a
handful of fields), so Python runs a loop over field positions, not over events.

Only the common shapes are decoded here: one-byte keys, the schema's own fields with their own
wire types, each scalar field once, valid varints. Anything else marks the event (or stat)
``odd``, and the caller decodes it exactly, with the protobuf package, as before; so a corrupt,
newer or unusual message reads exactly as it would one by one.

Field numbers (``tsl/profiler/protobuf/xplane.proto`` in openxla/xla): ``XEvent`` metadata_id 1,
offset_ps 2, duration_ps 3, stats 4 (repeated XStat), num_occurrences 5 (offset and
num_occurrences are one oneof); ``XStat`` metadata_id 1, value one of double 2, uint64 3, int64 4,
str 5, bytes 6, ref 7.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PAD", "EventFields", "StatFields", "event_fields", "narrow", "stat_fields",
           "varints"]

# Bytes of zeros the caller appends to a buffer, so that reading a key or a 10-byte varint at
# any position inside the buffer stays inside the array (a zero ends a varint).
PAD = 16
_U8 = np.uint64

# Stat kinds of StatFields.kind: the value tag of the XStat (field << 3 | wire type).
DOUBLE, UINT64, INT64, REF = 0x11, 0x18, 0x20, 0x38


def varints(buf: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values as uint64, lengths in bytes) of the varints starting at positions ``at`` of
    ``buf`` (uint8, padded by :data:`PAD`). A length of 0: not a varint of at most 64 bits (more
    than 10 bytes, or a tenth byte over 1).

    A varint of up to 8 bytes (nearly all) is read from the 8 bytes at its position as one
    little-endian word: its last byte is the first without the high bit, and its 7-bit groups
    are gathered by shifts; longer ones byte by byte (:func:`_long_varints`)."""
    first = buf[at]
    value = first.astype(_U8)
    length = np.ones(len(at), dtype=np.int64)
    more = np.flatnonzero(first >= 0x80)  # the one-byte varints (most) are read
    if more.size:
        value[more], length[more] = _word_varints(buf, at[more])
    return value, length


def _word_varints(buf: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`varints`, each read from the 8 bytes at its position as one word."""
    words = np.ndarray((len(buf) - 7,), dtype="<u8", buffer=buf, strides=(1,))[at]
    stop = ~words & _HIGH_BITS  # the high bit of each byte that ends a varint
    last = stop & (~stop + _U8(1))  # the first of them
    length = ((np.log2(np.where(last == 0, 1, last)).astype(np.int64) + 1) // 8)
    words &= (last << _U8(1)) - _U8(1)  # its bytes only (all 8: the shift wraps to 0)
    value = words & _U8(0x7F)
    for j in range(1, 8):
        value |= ((words >> _U8(8 * j)) & _U8(0x7F)) << _U8(7 * j)
    long = np.flatnonzero(last == 0)
    if long.size:
        value[long], length[long] = _long_varints(buf, at[long])
    return value, length


_HIGH_BITS = _U8(0x8080808080808080)


def _long_varints(buf: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`varints`, byte by byte (for those over 8 bytes)."""
    n = len(at)
    value = np.zeros(n, dtype=_U8)
    length = np.zeros(n, dtype=np.int64)
    left = np.arange(n)
    pos = at
    for j in range(10):
        byte = buf[pos]
        value[left] |= (byte & 0x7F).astype(_U8) << _U8(7 * j)
        more = byte >= 0x80
        if j == 9:
            length[left[~more & (byte <= 1)]] = 10
            break
        length[left[~more]] = j + 1
        left = left[more]
        if not left.size:
            break
        pos = pos[more] + 1
    return value, length


@dataclass(frozen=True, slots=True)
class EventFields:
    """Per event: metadata id, offset and duration (ps), whether the offset and the
    num_occurrences fields are present, and ``odd`` (to be decoded exactly); per stat field
    (in wire order within each event): its event and its bytes' bounds."""

    meta: np.ndarray
    offset: np.ndarray
    duration: np.ndarray
    has_offset: np.ndarray
    has_occurrences: np.ndarray
    odd: np.ndarray
    stat_event: np.ndarray
    stat_start: np.ndarray
    stat_end: np.ndarray


# The bit of each scalar field in EventFields' seen mask.
_BITS = np.zeros(8, dtype=np.uint8)
_BITS[1], _BITS[2], _BITS[3], _BITS[5] = 1, 2, 4, 8


def event_fields(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> EventFields:
    """The fields of the events at ``buf[starts[i]:ends[i]]`` (``buf`` padded by :data:`PAD`)."""
    n = len(starts)
    meta = np.zeros(n, dtype=np.int64)
    offset = np.zeros(n, dtype=np.int64)
    duration = np.zeros(n, dtype=np.int64)
    seen = np.zeros(n, dtype=np.uint8)
    odd = np.zeros(n, dtype=bool)
    stat_event: list[np.ndarray] = []
    stat_start: list[np.ndarray] = []
    stat_end: list[np.ndarray] = []
    pos = starts.astype(np.int64, copy=True)
    active = np.flatnonzero(pos < ends)
    while active.size:
        p = pos[active]
        tag = buf[p].astype(np.int64)
        number, wire = tag >> 3, tag & 7
        value, length = varints(buf, p + 1)
        scalar = (wire == 0) & ((number == 1) | (number == 2) | (number == 3) | (number == 5))
        stat = (wire == 2) & (number == 4)
        room = ends[active] - (p + 1 + length)
        bad = (tag >= 0x80) | (length == 0) | ~(scalar | stat) | (room < 0)
        bad |= stat & (value > room.clip(0).astype(_U8))
        bit = _BITS[np.where(scalar, number, 0)]
        bad |= scalar & ((seen[active] & bit) != 0)  # a scalar field twice: decoded exactly
        good = ~bad
        after = p + 1 + length + np.where(stat & good, value, _U8(0)).astype(np.int64)
        signed = value.view(np.int64)
        for field_number, column in ((1, meta), (2, offset), (3, duration)):
            pick = good & scalar & (number == field_number)
            column[active[pick]] = signed[pick]
        pick = good & scalar
        seen[active[pick]] |= bit[pick]
        pick = good & stat
        stat_event.append(active[pick])
        stat_start.append((p + 1 + length)[pick])
        stat_end.append(after[pick])
        odd[active[bad]] = True
        pos[active[good]] = after[good]
        active = active[good & (after < ends[active])]
    # Both members of the oneof: the last one wins, as the exact decoding says.
    odd |= ((seen & 2) != 0) & ((seen & 8) != 0)
    events = np.concatenate(stat_event) if stat_event else np.zeros(0, dtype=np.int64)
    order = np.argsort(events, kind="stable")  # by event, each event's stats in wire order
    return EventFields(
        meta, offset, duration, (seen & 2) != 0, (seen & 8) != 0, odd, events[order],
        (np.concatenate(stat_start) if stat_start else events)[order],
        (np.concatenate(stat_end) if stat_end else events)[order])


@dataclass(frozen=True, slots=True)
class StatFields:
    """Per stat: metadata id, value kind (:data:`DOUBLE`, :data:`UINT64`, :data:`INT64`,
    :data:`REF`; 0 when ``odd``), the value's 64 bits (a varint, or a double's bytes), and
    ``odd`` (any other stat: strings, bytes, unknown fields or values: decoded exactly)."""

    meta: np.ndarray
    kind: np.ndarray
    bits: np.ndarray
    odd: np.ndarray


def stat_fields(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> StatFields:
    """The stats at ``buf[starts[i]:ends[i]]`` serialized as exactly a metadata id (field 1)
    then a double, uint64, int64 or ref value; the others are ``odd``."""
    n = len(starts)
    meta, meta_length = varints(buf, starts + 1)
    at = starts + 1 + meta_length
    kind = buf[at].astype(np.int64)
    ok = (buf[starts] == 0x08) & (meta_length > 0) & (ends > starts)
    value, value_length = varints(buf, at + 1)
    is_varint = (kind == UINT64) | (kind == INT64) | (kind == REF)
    ok_varint = is_varint & (value_length > 0) & (at + 1 + value_length == ends)
    ok_double = (kind == DOUBLE) & (at + 9 == ends)
    ok &= ok_varint | ok_double
    bits = np.where(ok_varint, value, _U8(0))
    if ok_double.any():
        where = np.flatnonzero(ok & ok_double)
        raw = buf[(at[where] + 1)[:, None] + np.arange(8)]
        bits[where] = np.ascontiguousarray(raw).view("<u8").ravel()
    return StatFields(meta.view(np.int64) if n else np.zeros(0, dtype=np.int64),
                      np.where(ok, kind, 0).astype(np.uint8), bits, ~ok)


_I32 = np.iinfo(np.int32)


def narrow(values: np.ndarray) -> np.ndarray:
    """``values`` (integers) as int32 where they all fit, else as they are: the ids and
    bounds a reader keeps per event and per stat (tens of millions in a 100 MB trace) in half
    the memory. Their ``tolist()`` is the same Python ints."""
    if values.size and (int(values.min()) < _I32.min or int(values.max()) > _I32.max):
        return values
    return values.astype(np.int32)
