"""The stack-frame table of a compiled program, taken from its serialized HLO module (imports
nothing of jax itself: it calls the compiled program's own methods).

:func:`roofline_report.hlo.stack_frames.read_stack_frames` decodes it (see there for what the
table holds and why the serialized module is read rather than the printed text).
"""

from __future__ import annotations

from typing import Any

from roofline_report.hlo.ir import StackFrames
from roofline_report.hlo.stack_frames import read_stack_frames

__all__ = ["stack_frame_table"]


def stack_frame_table(compiled: Any) -> StackFrames | None:
    """The stack-frame table of a compiled program (``jax.stages.Compiled``) from its first
    HLO module as serialized; None when this jax does not give the module."""
    try:
        modules = compiled.runtime_executable().hlo_modules()
        proto = modules[0].as_serialized_hlo_module_proto()
    except Exception:  # jax's API for the module moves between versions: no table then
        return None
    return read_stack_frames(bytes(proto))
