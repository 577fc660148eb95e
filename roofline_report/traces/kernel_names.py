"""Kernel events whose ``hlo_op`` names no kernel, matched by the kernel's own name (pure: no jax).

XLA's GPU runtime records most of a program's kernels into command buffers (CUDA graphs) and
launches each buffer as one thunk. The profiler still records every kernel the graph runs, but
each such event's ``hlo_op`` stat names the command buffer's thunk (``command_buffer_1``), not
the fusion: on an H200 trace of a training step (jax 0.11.2), all 350 kernel events of five steps
said ``command_buffer_1``, and none matched a kernel of the program. What names the kernel is
the event's own name: the compiled kernel's symbol, which XLA makes from the fusion's name with
``.`` and ``-`` written as ``_`` (``input_reduce_fusion.8`` runs as ``input_reduce_fusion_8``).

Two fusions whose bodies are identical share one compiled kernel, named after the first: in the
same trace four matrix-product fusions ran as ``gemm_fusion_dot_47`` and five additions as
``loop_add_fusion_16``. The events of one call come in the program's schedule order (one
stream runs the graph's nodes in the order they were recorded), so an event whose name is that
of a kernel already seen in the call is given to the next kernel in schedule order that shares
its name's stem (``loop_add_fusion``) and whose own name no event of the trace carries.

:func:`resolve_ops` does this for the events of a trace in time order; events it cannot place
keep their ``hlo_op`` (they are then reported as unmatched).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Resolved", "by_symbol", "resolve_ops", "symbol"]

_SUFFIX = re.compile(r"[._-]\d+$")
_NOT_SYMBOL = re.compile(r"[^A-Za-z0-9_$]")


def symbol(name: str) -> str:
    """The compiled kernel's symbol for an HLO instruction's name, as XLA's GPU backend writes
    it (a character other than a letter, digit, ``_`` or ``$`` as ``_``), or for a device
    event's name (ROCm's ``.kd`` after it left out)."""
    return _NOT_SYMBOL.sub("_", name.removesuffix(".kd"))


def _stem(name: str) -> str:
    """A kernel's name without its numeric suffix: ``loop_add_fusion`` of ``loop_add_fusion_16``
    and of ``loop_add_fusion.12``."""
    return symbol(_SUFFIX.sub("", name))


def by_symbol(kernels: Iterable[str]) -> dict[str, str]:
    """Each kernel by its symbol (:func:`symbol`), leaving out symbols two kernels share."""
    out: dict[str, str] = {}
    clashes: set[str] = set()
    for k in kernels:
        s = symbol(k)
        if s in out and out[s] != k:
            clashes.add(s)
        out[s] = k
    for s in clashes:
        del out[s]
    return out


@dataclass(frozen=True, slots=True)
class Resolved:
    """The events' ops after matching (one per event, in the order given), how many events
    were matched by their own name, and how many of those to a kernel that shares another's
    compiled code."""

    ops: list[str]
    by_name: int
    shared: int
    wrappers: tuple[str, ...]  # the hlo_op values the matched events carried

    def note(self) -> str | None:
        """The sentence the kernel timing's notes carry, or None where nothing was matched."""
        if not self.by_name:
            return None
        around = ", ".join(self.wrappers[:3])
        text = (f"{self.by_name} kernel events named {around} as their HLO op (a command "
                "buffer: XLA launched those kernels as a CUDA graph); each was matched to its "
                "kernel by the kernel's own name")
        if self.shared:
            text += (f", {self.shared} of them to kernels that share another's compiled code, "
                     "in the program's schedule order")
        return text


def resolve_ops(ops: Sequence[str], names: Sequence[str], calls: Iterable[int],
                kernels: Sequence[str], launches: Mapping[str, int] | None = None) -> Resolved:
    """The kernel of each event (``ops``, ``names`` and ``calls``: each event's ``hlo_op``,
    own name and call, the events in time order) given the program's kernels in schedule
    order and, where known, each kernel's launches per call (``launches``: a loop body's trip
    count; else one).

    An event whose op is a kernel keeps it. Another, whose name is a kernel's symbol
    (:func:`symbol`), is placed within its call on the first kernel in schedule order, from
    the last one placed on, that still has a launch to take in this pass over the schedule and
    is either that kernel or one whose own name no event carries with the same stem
    (:func:`_stem`). Where none is left ahead, a new pass begins (the next call, where the
    events do not number the calls, or a kernel launched again): the kernels' launches are
    free again and the search starts from the first kernel; failing that too, the named
    kernel itself."""
    known = set(kernels)
    of_symbol = by_symbol(kernels)
    out = list(ops)
    unknown = [i for i, op in enumerate(ops) if op not in known]
    if not unknown:  # every event names its kernel: nothing to place
        return Resolved(out, 0, 0, ())
    symbol_of = {n: symbol(n) for n in set(names)}  # one per distinct name, not per event
    symbols = [symbol_of[n] for n in names]
    pending = [i for i in unknown if symbols[i] in of_symbol]
    if not pending:
        return Resolved(out, 0, 0, ())
    seen = set(symbol_of.values()) | {symbol(op) for op in known & set(ops)}
    stems = [_stem(k) for k in kernels]
    silent = [symbol(k) not in seen for k in kernels]
    caps = [max(1, int((launches or {}).get(k, 1))) for k in kernels]
    position = {k: i for i, k in enumerate(kernels)}
    # Per named kernel: the positions it may be placed on, in schedule order (itself, and the
    # kernels no event names with its stem).
    places: dict[int, list[int]] = {}
    call_of = list(calls)
    placed: dict[int, dict[int, int]] = {}  # call -> launches placed per kernel, this pass
    cursor: dict[int, int] = {}  # call -> where the search for its next event starts
    shared = 0
    wrappers: set[str] = set()
    for i in pending:
        own = position[of_symbol[symbols[i]]]
        fit = places.get(own)
        if fit is None:
            fit = places[own] = [j for j in range(len(kernels))
                                 if j == own or (silent[j] and stems[j] == stems[own])]
        call = call_of[i]
        taken = placed.setdefault(call, {})
        start = cursor.get(call, 0)
        j = next((j for j in fit if j >= start and taken.get(j, 0) < caps[j]), None)
        if j is None:  # a new pass over the schedule
            taken = placed[call] = {}
            j = next((j for j in fit if taken.get(j, 0) < caps[j]), own)
        taken[j] = taken.get(j, 0) + 1
        cursor[call] = j if taken[j] < caps[j] else j + 1
        wrappers.add(ops[i])
        if j != own:
            shared += 1
        out[i] = kernels[j]
    return Resolved(out, len(pending), shared, tuple(sorted(wrappers)))
