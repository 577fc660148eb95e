"""The reader decodes a line's events together (traces.wire_columns): every shape of event and
stat reads as the protobuf package reads it one by one, the unusual ones (fields twice, both
members of a oneof, unknown fields, long keys, negative and 64-bit values) included."""

from __future__ import annotations

import random
import struct
from typing import Any

import numpy as np

from roofline_report.traces.wire_columns import PAD, event_fields, narrow, stat_fields, varints
from roofline_report.traces.xspace import read_xspace_bytes
from roofline_report.traces.xspace_schema import message_class
from tests.test_ingest_reader import _bytes, _int, _key, _varint

_VALUES = (0, 1, 127, 128, 300, 2**35, 2**63 - 1, 2**63, 2**64 - 1)


def test_varints_as_python_reads_them() -> None:
    values = [*_VALUES, 5, 2**56]
    raw = b"".join(_varint(v) for v in values)
    at = np.cumsum([0] + [len(_varint(v)) for v in values])[:-1]
    buf = np.frombuffer(raw + bytes(PAD), dtype=np.uint8)
    value, length = varints(buf, at)
    assert value.tolist() == values
    assert length.tolist() == [len(_varint(v)) for v in values]
    # Values of every length, at every alignment, as Python reads them.
    rng = random.Random(3)
    values = [rng.getrandbits(rng.randrange(1, 65)) for _ in range(2000)]
    raw = b"".join(_varint(v) for v in values)
    at = np.cumsum([0] + [len(_varint(v)) for v in values])[:-1]
    value, length = varints(np.frombuffer(raw + bytes(PAD), dtype=np.uint8), at)
    assert value.tolist() == values
    assert length.tolist() == [len(_varint(v)) for v in values]
    # Eleven bytes, or a tenth byte over 1: not a 64-bit varint.
    bad = np.frombuffer(b"\xff" * 10 + b"\x01" + b"\xff" * 9 + b"\x02" + bytes(PAD), np.uint8)
    assert varints(bad, np.array([0, 11]))[1].tolist() == [0, 0]


def _stat(rng: random.Random) -> bytes:
    meta = rng.choice((1, 2, 3, 200, 0))
    kind = rng.randrange(9)
    if kind == 0:
        return _int(1, meta) + _key(2, 1) + struct.pack("<d", rng.random() * 1e6)
    if kind == 1:
        return _int(1, meta) + _bytes(5, rng.choice(("fusion", "jit_f", "é")))
    if kind == 2:
        return _int(1, meta) + _bytes(6, b"\x00\x01")
    if kind == 3:
        return _int(1, meta) + _int(4, rng.choice((-1, -300, 5, -2**63)))
    if kind == 4:
        return _int(1, meta) + _int(7, rng.choice((1, 2, 3, 99)))
    if kind == 5:
        return _int(1, meta) + _bytes(8, b"new")  # a value of a type the schema lacks
    if kind == 6:
        return _int(1, meta) + _int(3, 7) + _int(12, 1)  # an unknown field after
    if kind == 7:
        return _int(3, rng.choice(_VALUES)) + _int(1, meta)  # fields out of order
    return _int(1, meta) + _int(3, rng.choice(_VALUES))


def _event(rng: random.Random) -> bytes:
    fields = [_int(1, rng.choice((1, 2, 3, 7))),
              _int(2, rng.choice((0, 5, 2**40))) if rng.random() < 0.9 else b"",
              _int(3, rng.choice((0, 10, 2**33, -5))) if rng.random() < 0.9 else b""]
    fields += [_bytes(4, _stat(rng)) for _ in range(rng.randrange(4))]
    odd = rng.randrange(12)
    if odd == 0:
        fields.append(_int(5, 3))  # num_occurrences: both members of the oneof
    elif odd == 1:
        fields.append(_int(1, 2))  # a field twice: the last wins
    elif odd == 2 and fields[1]:  # (untimed, the reader would refuse it as newer)
        fields.append(_int(9, 1))  # a field the schema does not have
    elif odd == 3 and fields[1]:
        fields.append(_key(300, 0) + _varint(1))  # a two-byte key
    elif odd == 4:
        rng.shuffle(fields)
    return b"".join(fields)


def _exact(raw: bytes, names: dict[int, str], stat_names: dict[int, str]
           ) -> tuple[str, float, float, dict[str, Any]] | None:
    """One event as the protobuf package reads it (a stat of an unknown value type left out)."""
    e = message_class("XEvent").FromString(raw)
    if e.WhichOneof("data") != "offset_ps" or e.duration_ps < 0:
        return None
    stats: dict[str, Any] = {}
    for s in map(message_class("XStat").FromString, e.stats):
        kind = s.WhichOneof("value")
        if kind is None:
            continue
        value = getattr(s, kind)
        if kind == "ref_value":
            value = stat_names.get(value, "")
        stats[stat_names.get(s.metadata_id, f"stat {s.metadata_id}")] = value
    return names.get(e.metadata_id, ""), e.offset_ps / 1000.0, e.duration_ps / 1000.0, stats


def test_events_of_every_shape_read_as_one_by_one() -> None:
    rng = random.Random(7)
    events = [_event(rng) for _ in range(3000)]
    names = {1: "fusion", 2: "end: fusion", 3: "while"}
    stat_names = {1: "hlo_op", 2: "_c", 3: "run_id"}
    body = _int(1, 1) + _bytes(2, "/host:CPU")
    body += _bytes(3, _int(1, 1) + _bytes(2, "t") + b"".join(_bytes(4, e) for e in events))
    for i, n in names.items():
        body += _bytes(4, _int(1, i) + _bytes(2, _int(1, i) + _bytes(2, n)))
    for i, n in stat_names.items():
        body += _bytes(5, _int(1, i) + _bytes(2, _int(1, i) + _bytes(2, n)))
    xs = read_xspace_bytes(_bytes(1, body))
    read = [(e.name, e.start_ns, e.duration_ns, e.stats) for e in xs.planes[0].lines[0].events]
    expected = [x for x in (_exact(raw, names, stat_names) for raw in events) if x is not None]
    assert read == expected
    assert len(expected) > 1000
    assert xs.unknown_fields == {"XEvent": [9, 300], "XStat": [12]}
    assert sum(xs.dropped.negative_durations.values()) > 0
    assert sum(xs.dropped.unknown_stat_values.values()) > 0
    # Picking by stat gives the events whose stats hold it.
    line = xs.planes[0].lines[0].events
    assert [e.stats for e in line.where(stat="run_id")] == \
        [st for *_, st in expected if "run_id" in st]


def test_odd_shapes_are_left_to_the_exact_reading() -> None:
    events = [_int(1, 1) + _int(2, 5) + _int(3, 7),  # plain
              _int(1, 1) + _int(2, 5) + _int(5, 2),  # both members of the oneof
              _int(1, 1) + _int(1, 2) + _int(2, 5),  # a field twice
              _int(1, 1) + _int(9, 2) + _int(2, 5),  # unknown field
              _int(2, 5) + _bytes(4, b"\x08\x01\x18\x05")]  # a stat, fields out of order
    raw = b"".join(events)
    ends = np.cumsum([len(e) for e in events])
    buf = np.frombuffer(raw + bytes(PAD), dtype=np.uint8)
    f = event_fields(buf, ends - [len(e) for e in events], ends)
    assert f.odd.tolist() == [False, True, True, True, False]
    assert f.offset.tolist()[0] == 5 and f.duration.tolist()[0] == 7
    assert f.stat_event.tolist() == [4]
    st = stat_fields(buf, f.stat_start, f.stat_end)
    assert st.meta.tolist() == [1] and st.bits.tolist() == [5] and not st.odd.any()


def test_ids_are_kept_narrow_only_where_they_fit() -> None:
    small = narrow(np.array([0, 5, 2**31 - 1, -(2**31)], dtype=np.int64))
    assert small.dtype == np.int32 and small.tolist() == [0, 5, 2**31 - 1, -(2**31)]
    for wide in ([0, 2**31], [-(2**31) - 1, 3]):
        kept = narrow(np.array(wide, dtype=np.int64))
        assert kept.dtype == np.int64 and kept.tolist() == wide
    assert narrow(np.zeros(0, dtype=np.int64)).dtype == np.int32
    # Event and stat metadata ids past int32 read the same as small ones.
    big_event, big_stat = 2**40 + 1, 2**33 + 5
    body = _int(1, 1) + _bytes(2, "/host:CPU")
    events = [_int(1, big_event) + _int(2, 1000) + _int(3, 5000)
              + _bytes(4, _int(1, big_stat) + _int(3, 7)),
              _int(1, 1) + _int(2, 2000) + _int(3, 5000) + _bytes(4, _int(1, 1) + _int(3, 8))]
    body += _bytes(3, _int(1, 1) + _bytes(2, "t") + b"".join(_bytes(4, e) for e in events))
    for i, n in ((big_event, "far"), (1, "near")):
        body += _bytes(4, _int(1, i) + _bytes(2, _int(1, i) + _bytes(2, n)))
    for i, n in ((big_stat, "run_id"), (1, "step_num")):
        body += _bytes(5, _int(1, i) + _bytes(2, _int(1, i) + _bytes(2, n)))
    line = read_xspace_bytes(_bytes(1, body)).planes[0].lines[0].events
    assert [(e.name, e.start_ns, e.stats) for e in line] == [
        ("far", 1.0, {"run_id": 7}), ("near", 2.0, {"step_num": 8})]
    assert [e.name for e in line.where(stat="run_id")] == ["far"]
    assert [e.name for e in line.where(name=lambda n: n == "near")] == ["near"]
