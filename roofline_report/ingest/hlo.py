"""The HLO text of a program kept in a trace (the one step of reading a trace that needs jaxlib).

A trace keeps each compiled program's optimized HLO as a serialized ``HloModuleProto`` (inside
the ``Hlo Proto`` stat of the metadata plane: :mod:`roofline_report.traces.xspace`). The
project's HLO reader (:func:`roofline_report.hlo.ir.parse_module`) reads HLO *text*, as
``compiled.as_text()`` prints it; jaxlib's XLA prints the proto the same way.
"""

from __future__ import annotations

from roofline_report.traces.xspace import TraceFormatError, hlo_module_proto

__all__ = ["hlo_text"]


def _version_tuple(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts) or None


def hlo_text(hlo_proto: bytes, *, module: str, trace_jaxlib: str | None = None) -> str:
    """The HLO text of a serialized ``xla.HloProto`` from a trace's metadata plane, printed as
    ``compiled.as_text()`` prints it (full operand shapes, the source-location tables).

    Reading a trace needs jaxlib installed (it prints the HLO: ``xla_client.XlaComputation``),
    but not the trace's backend: the HLO of a GPU or TPU program prints on a CPU-only jaxlib.
    jaxlib is imported here, lazily, and nowhere else on the path that reads a trace.

    Raises :class:`TraceFormatError` when this jaxlib cannot read the proto; when the trace was
    written by a newer jaxlib (``trace_jaxlib``) the message says so (``newer=True``).
    """
    try:
        import jaxlib
        from jaxlib import xla_client  # prints the HLO protos of any backend
    except ImportError as exc:  # pragma: no cover - jax is a dependency of the project
        raise TraceFormatError(f"reading the HLO of {module} needs jaxlib installed "
                               f"({exc})") from None

    module_proto = hlo_module_proto(hlo_proto)
    try:
        computation = xla_client.XlaComputation(module_proto)
        text = computation.get_hlo_module().to_string()
    except Exception as exc:  # jaxlib raises its own error types for an unreadable proto
        here = str(getattr(jaxlib, "__version__", "unknown"))
        theirs = _version_tuple(trace_jaxlib)
        ours = _version_tuple(here)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        if theirs is not None and ours is not None and theirs > ours:
            raise TraceFormatError(
                f"the HLO of {module} was written by jaxlib {trace_jaxlib}, newer than this "
                f"jaxlib {here}, which cannot read it ({first}); install jaxlib>="
                f"{trace_jaxlib} to read this trace", newer=True) from None
        raise TraceFormatError(f"the HLO of {module} cannot be read by jaxlib {here} "
                               f"({first})") from None
    return str(text)
