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
printed. :func:`read_stack_frames` decodes the table from the serialized module's bytes
(:mod:`roofline_report.wire`: jax does not ship XLA's generated protobuf modules) as
:class:`roofline_report.hlo.ir.StackFrames`; :mod:`roofline_report.observe.stack_frames` takes
the bytes from a compiled program.
"""

from __future__ import annotations

from types import MappingProxyType

from roofline_report.hlo.ir import StackFrames
from roofline_report.wire import LEN, VARINT, WireFormatError, fields

__all__ = ["read_stack_frames"]

_STACK_FRAME_INDEX = 17  # HloModuleProto.stack_frame_index


def _ints(data: bytes, start: int, end: int) -> dict[int, int]:
    return {n: v for n, wire, v in fields(data, start, end, "a stack frame")
            if wire == VARINT}


def read_stack_frames(module_proto: bytes) -> StackFrames | None:
    """The stack-frame table of a serialized ``HloModuleProto``; None when it has none or the
    bytes cannot be read."""
    files: dict[int, str] = {}
    functions: dict[int, str] = {}
    locations: dict[int, tuple[int, int, int, int]] = {}
    frames: dict[int, tuple[int, int]] = {}
    try:
        index = [v for n, wire, v in fields(module_proto, 0, len(module_proto), "HloModuleProto")
                 if n == _STACK_FRAME_INDEX and wire == LEN]
        if not index:
            return None
        start, end = index[-1]
        parts = fields(module_proto, start, end, "StackFrameIndexProto")
        for number, (a, b) in ((n, v) for n, w, v in parts if w == LEN):
            if number == 1:
                files[len(files) + 1] = module_proto[a:b].decode("utf-8", "replace")
            elif number == 2:
                functions[len(functions) + 1] = module_proto[a:b].decode("utf-8", "replace")
            elif number == 3:
                f = _ints(module_proto, a, b)
                locations[len(locations) + 1] = (f.get(1, 0), f.get(2, 0), f.get(3, 0),
                                                  f.get(4, 0))
            elif number == 4:
                f = _ints(module_proto, a, b)
                frames[len(frames) + 1] = (f.get(1, 0), f.get(2, 0))
    except WireFormatError:
        return None
    if not frames:
        return None
    return StackFrames(MappingProxyType(files), MappingProxyType(functions),
                       MappingProxyType(locations), MappingProxyType(frames))
