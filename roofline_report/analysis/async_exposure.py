"""What of an asynchronous copy the kernels beside it do not hide (no jax).

An asynchronous pair (a TPU's ``copy-start``/``copy-done`` or
``slice-start``/``slice-done``, listed once) starts a transfer and returns; the kernels the
schedule issues between its start and its done run while it moves, and its done waits for
whatever is left. The transfer moves its bytes through the same HBM as those kernels' own
traffic: only the part of their time that is not their HBM traffic (a kernel bound by its
compute, or by vector memory, its launch) leaves the HBM free for it. The kernel inventory
records the kernels issued between (``overlapped_by``), and :func:`expose` charges the pair
what of its transfer (its largest term: its bytes at the HBM roof, or at the on-chip rate)
outlasts that slack: nothing where compute-bound kernels cover it, the whole transfer where
the schedule put nothing between (a 64 MiB copy into vector memory issued right before its
done) or only kernels that stream memory themselves.

On a TPU v5e (jax 0.10.2) the waits on those dones matched: a Mamba block's two 64 MiB
copies with nothing between took 102 µs each (99 µs predicted), its 32 MiB one 51 µs (49.5),
a DLRM step's 64 MiB copy beside two kernels streaming HBM 82 µs (99; 36 if their whole time
had hidden it) and its 16 MiB slices beside a 1.3 ms split of their source 22 µs each (22;
nothing if it had hidden them).

Only copies and slices: an asynchronous collective's time is the communication model's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from roofline_report.analysis.on_chip import ON_CHIP_DETAIL
from roofline_report.analysis.terms import Prediction, Term
from roofline_report.results import schema
from roofline_report.units import format_si

__all__ = ["EXPOSED", "TRANSFERS", "expose", "slack"]

#: The asynchronous pairs whose transfer :func:`expose` charges (by their start's opcode).
TRANSFERS = ("copy-start", "slice-start")
EXPOSED = "exposed transfer"  # the term of what the kernels beside a transfer left of it


def _words(transfer: float, beside: float, count: int) -> str:
    def fmt(value: float) -> str:
        return format_si(value, "s")

    if count == 0:
        return (f"asynchronous, with no kernel issued between its start and its done: its "
                f"transfer ({fmt(transfer)}) is the call's time")
    return (f"asynchronous: its transfer ({fmt(transfer)}) ran beside the {count} kernels "
            f"issued between its start and its done, whose predicted time leaves the HBM to "
            f"it for {fmt(beside)} (the rest is their own HBM traffic): "
            f"{fmt(max(0.0, transfer - beside))} of it exposed")


def slack(p: Prediction) -> float:
    """What of a kernel's predicted time leaves the HBM to a transfer beside it: its time less
    its largest memory term in HBM (nothing for a kernel bound by its HBM traffic, or for
    another transfer); its bytes in the core's own memory do not hold the HBM."""
    if p.transfer is not None:
        return 0.0
    memory = max((t.seconds for t in p.terms
                  if t.group == "memory" and t.detail != ON_CHIP_DETAIL), default=0.0)
    return max(0.0, p.seconds - memory)


def expose(kernels: Sequence[schema.KernelRecord],
           predictions: Sequence[Prediction | None]) -> list[Prediction | None]:
    """``predictions`` (one per kernel of ``kernels``, in order, of one program) with each
    asynchronous copy or slice charged what of its transfer the :func:`slack` of the kernels
    issued between its start and its done leaves; a pair whose kernels were not recorded
    (``overlapped_by`` None) keeps its prediction."""
    by_name = {k.name: p for k, p in zip(kernels, predictions, strict=True) if p is not None}
    out: list[Prediction | None] = []
    for kernel, p in zip(kernels, predictions, strict=True):
        names = kernel.overlapped_by
        if p is None or p.transfer is None or names is None \
                or kernel.opcode not in TRANSFERS:
            out.append(p)
            continue
        beside = sum(slack(by_name[n]) for n in names if n in by_name)
        left = max(0.0, p.transfer.seconds - beside)
        note = _words(p.transfer.seconds, beside, len(names))
        notes = (*(n for n in p.notes if not n.startswith("asynchronous")), note)
        if left <= 0:
            out.append(replace(p, notes=notes))
            continue
        term = Term(EXPOSED, p.transfer.group, left, p.transfer.roof, p.transfer.kind,
                    p.transfer.detail)
        terms = (term, *p.terms)
        out.append(replace(p, seconds=p.seconds + left, terms=terms, binding=term,
                           notes=notes))
    return out
