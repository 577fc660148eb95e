"""A kernel's pattern as the inventory records it (:class:`Pattern`), and what every pattern
rule asks of a kernel: whether a library runs it (:func:`is_library`, :func:`backend_kind`)
and its shapes in brief (:func:`plain`). Pure: no jax."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from roofline_report.hlo.ir import Instruction
from roofline_report.hlo.shapes import Shape


@dataclass(frozen=True, slots=True)
class Pattern:
    """A kernel's pattern: its name (one of :data:`~roofline_report.pattern_names.PATTERNS`,
    None for none), its size per launch (elements moved, or flops for ``loop-dot``; 0 with no
    pattern) and a short text."""

    name: str | None = None
    size: int = 0
    detail: str | None = None
    # Elements per row, where a pattern's rate depends on it: a top-k's row length (the last
    # dimension of its operand), a gather's slice or a scatter's update window per index, the
    # length of the dimension a sort sorts, a block transpose's run, a matrix-vector
    # product's narrow width, an FFT's last transformed length.
    row: int = 0
    # A gather's or scatter's table: the bytes of the operand it gathers from or scatters
    # into (0 for other patterns, or an element type of unknown width). Where it fits a
    # core's own memory a TPU gathers from it far faster than from a table in HBM; a CPU
    # scatters into a table its caches hold far faster than into one they do not.
    table: int = 0
    # A transpose's bytes between two reads one step along its output's minor axis (the
    # stride of the source axis that comes out minor-most); 0 for other patterns.
    walk: int = 0
    # A transpose's source rows read per run of its output: the length of the source axis
    # that comes out minor-most (n for ``x.T`` of ``[n, n]``); 0 for other patterns. A
    # ``broadcast-transpose`` keeps it as its row.
    reach: int = 0


def plain(shape: Shape | None) -> str:
    """A shape in brief: ``f32[512,1024]`` (``?`` for none or a tuple)."""
    if shape is None or shape.array is None:
        return "?"
    return f"{shape.array.dtype}[{','.join(map(str, shape.array.dims))}]"


def is_library(instr: Instruction) -> bool:
    """Whether a library runs the kernel: a custom call, a ``kCustom`` fusion or a fusion of a
    backend's own kind (``__ynn_fusion``, oneDNN, a Triton gemm)."""
    return instr.opcode == "custom-call" or instr.fusion_kind == "kCustom" \
        or backend_kind(instr) is not None


def backend_kind(instr: Instruction) -> str | None:
    """The kind a backend names its own fusion (``__ynn_fusion``), from its config; None for
    none."""
    config = instr.backend_config or {}
    for key in ("fusion_backend_config", "fusion_config"):
        section = config.get(key)
        if isinstance(section, Mapping) and "kind" in section:
            return str(section["kind"])
    return None
