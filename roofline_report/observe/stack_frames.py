"""The stack-frame table of a compiled program, read from its serialized HLO module.

JAX records, for every op it lowers, the Python stack that created it (jax's own frames left
out); XLA keeps it in the module as a ``StackFrameIndexProto`` (field 17 of ``HloModuleProto``
in openxla/xla ``xla/service/hlo.proto``), and each instruction's metadata names its innermost
frame by ``stack_frame_id``. The index holds four lists, each entry's id its 1-based position:

* ``file_names`` (1) and ``function_names`` (2): strings;
* ``file_locations`` (3): ``file_name_id`` (1), ``function_name_id`` (2), ``line`` (3),
  ``column`` (4), ``end_line`` (5), ``end_column`` (6);
* ``stack_frames`` (4): ``file_location_id`` (1), ``parent_frame_id`` (2: the calling frame,
  0 or absent for the outermost).

The optimized HLO text prints the same tables, but its printer writes every parent one higher
(jaxlib 0.10.2); the serialized module is the one source that does not depend on how it is
printed. :func:`stack_frame_table` returns the table as
:class:`roofline_report.hlo.ir.StackFrames`, which the pure readers in
:mod:`roofline_report.hlo` take. A small reader of the protobuf wire format reads these few
fields: jax does not ship XLA's generated protobuf modules.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from roofline_report.hlo.ir import StackFrames

__all__ = ["read_stack_frames", "stack_frame_table"]

_STACK_FRAME_INDEX = 17  # HloModuleProto.stack_frame_index
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


class _Truncated(ValueError):
    pass


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(data) or shift > 63:
            raise _Truncated("a varint runs past the end")
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) of each field: an int for a varint, bytes for a length-delimited
    field; fixed-width fields are skipped (none of the fields read here has one)."""
    out: list[tuple[int, int | bytes]] = []
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == _VARINT:
            value, i = _varint(data, i)
            out.append((number, value))
        elif wire == _LEN:
            size, i = _varint(data, i)
            if i + size > len(data):
                raise _Truncated("a field runs past the end")
            out.append((number, data[i:i + size]))
            i += size
        elif wire in (_I64, _I32):
            i += 8 if wire == _I64 else 4
        else:
            raise _Truncated(f"wire type {wire} is not read here")
    return out


def _ints(data: bytes) -> dict[int, int]:
    return {n: v for n, v in _fields(data) if isinstance(v, int)}


def read_stack_frames(module_proto: bytes) -> StackFrames | None:
    """The stack-frame table of a serialized ``HloModuleProto``; None when it has none or the
    bytes cannot be read."""
    try:
        index = [v for n, v in _fields(module_proto)
                 if n == _STACK_FRAME_INDEX and isinstance(v, bytes)]
        if not index:
            return None
        files: dict[int, str] = {}
        functions: dict[int, str] = {}
        locations: dict[int, tuple[int, int, int, int]] = {}
        frames: dict[int, tuple[int, int]] = {}
        for number, value in _fields(index[-1]):
            if not isinstance(value, bytes):
                continue
            if number == 1:
                files[len(files) + 1] = value.decode("utf-8", "replace")
            elif number == 2:
                functions[len(functions) + 1] = value.decode("utf-8", "replace")
            elif number == 3:
                f = _ints(value)
                locations[len(locations) + 1] = (f.get(1, 0), f.get(2, 0), f.get(3, 0),
                                                  f.get(4, 0))
            elif number == 4:
                f = _ints(value)
                frames[len(frames) + 1] = (f.get(1, 0), f.get(2, 0))
    except _Truncated:
        return None
    if not frames:
        return None
    return StackFrames(MappingProxyType(files), MappingProxyType(functions),
                       MappingProxyType(locations), MappingProxyType(frames))


def stack_frame_table(compiled: Any) -> StackFrames | None:
    """The stack-frame table of a compiled program (``jax.stages.Compiled``) from its first
    HLO module as serialized; None when this jax does not give the module."""
    try:
        modules = compiled.runtime_executable().hlo_modules()
        proto = modules[0].as_serialized_hlo_module_proto()
    except Exception:  # jax's API for the module moves between versions: no table then
        return None
    return read_stack_frames(bytes(proto))
