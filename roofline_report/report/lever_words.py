"""The words for a program's levers (no jax): what could save it the most time, each sentence
built from the numbers of its :mod:`~roofline_report.analysis.levers` record, every number of
its own kind (a saving at a roof of that roof's kind; the model's dispatch and launch terms
predicted; counts and bytes analytic; times measured).
"""

from __future__ import annotations

from collections.abc import Sequence

from roofline_report.analysis.fresh_pages import FRESH_ABOVE_BYTES
from roofline_report.analysis.hardware_roof import HardwareRoof
from roofline_report.analysis.kernel_records import (
    BelowRoof,
    ExcessTraffic,
    FreshPages,
    Lever,
    Overhead,
)
from roofline_report.analysis.records import Program
from roofline_report.kinds import Kind
from roofline_report.report.blocks import Code, Inline
from roofline_report.report.format import Num, count, n, percent, plural, ratio
from roofline_report.units import format_intensity

__all__ = ["LEVERS_SHOWN", "lever_kind", "lever_long", "lever_short", "levers_lede",
           "more_levers", "what_first"]

P = Kind.PREDICTED
M = Kind.MEASURED
A = Kind.ANALYTIC
#: Levers listed in a program's own section; the rest summed in one sentence.
LEVERS_SHOWN = 8
#: Levers named after the first in the summary's sentence.
NEXT_LEVERS = 2

FUSIBLE_ONE = "kernel other than a matrix product or convolution"
FUSIBLE_MANY = "kernels other than matrix products and convolutions"
_CATEGORY = {"elementwise": ("elementwise", "elementwise"),
             "reduction": ("reduction", "reductions"),
             "data movement": ("data movement", "data movement"),
             "collective": ("collective", "collectives"), "other": ("other", "other")}


def lever_kind(lever: Lever) -> Kind:
    """The kind of a lever's saving: a roof's time for a kernel or the traffic (that roof's
    kind), the model's terms for fresh pages, dispatch and launches (predicted)."""
    if isinstance(lever, BelowRoof):
        return lever.roof.kind
    if isinstance(lever, ExcessTraffic):
        return lever.roof_kind
    return P


def _categories(items: Sequence[tuple[str, int]]) -> str:
    words = [f"{k} {_CATEGORY.get(c, (c, c))[0 if k == 1 else 1]}" for c, k in items]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _roof_rate(r: HardwareRoof, kind: Kind) -> tuple[Inline, ...]:
    """The roof's rate at the intensity, with where it comes from: a memory-bound one with
    work its bandwidth times its intensity ('152 GB/s × 0.25 FLOP/B = 38 GFLOP/s'), one
    without work its bandwidth, a compute-bound one without flops (a function's evaluations)
    its roofs' own rates; one whose binding bytes are all on-chip (a TPU loop's carry in
    vector memory: no HBM bytes, so no intensity over them) its roofs' own rates."""
    parts = r.binding_parts
    if r.rate is None or not parts:
        return (Num("unknown"),)
    rate = n(r.rate[0], r.rate[1], kind)
    if r.flops > 0 and (r.binding == "compute" or len(parts) > 1):
        return (rate,)
    own: list[Inline] = []
    for i, x in enumerate(parts):
        own += [", " if i else "", *((f"{x.name} ",) if len(parts) > 1 else ()),
                n(x.value, x.unit, kind)]
    if r.binding == "memory" and r.flops > 0 and r.bytes > 0:
        return (*own, " × ", Num(format_intensity(r.flops / r.bytes), A.value), " = ", rate)
    return tuple(own)


def lever_short(lever: Lever) -> tuple[Inline, ...]:
    """A lever in a few words and its saving: 'dot.1 below its roof: 4.56 ms (11%)'."""
    kind = lever_kind(lever)
    if isinstance(lever, BelowRoof):
        head = f"{lever.kernel} below its roof"
    elif isinstance(lever, ExcessTraffic):
        head = f"fusing {plural(len(lever.kernels), 'kernel', 'kernels')}"
    elif isinstance(lever, FreshPages):
        head = "fresh pages"
    else:
        head = "dispatch and launches"
    return (f"{head}: ", n(lever.saving, "s", kind), " (", percent(lever.share, kind), ")")


#: What a lever's kernel of a pattern loses below its roof, and what a program can change.
PATTERN_ADVICE = {
    "update-slice": (" Its in-place update writes part of each tile it crosses, and each of "
                     "those tiles is read and written whole: an update along its array's "
                     "major axis writes whole tiles."),
}


def _pattern_advice(pattern: str | None) -> tuple[Inline, ...]:
    advice = PATTERN_ADVICE.get(pattern or "")
    return (advice,) if advice else ()


def lever_long(lever: Lever) -> tuple[Inline, ...]:
    """A lever as a sentence of its numbers (see the module docstring)."""
    kind = lever_kind(lever)
    share: tuple[Inline, ...] = (percent(lever.share, kind), " of the call")
    if isinstance(lever, BelowRoof):
        r = lever.roof
        of = lever.of_roof
        return (f"{lever.kernel} ({lever.category}) runs at ", percent(of, kind),
                f" of its roof at its intensity ({r.names}: ", *_roof_rate(r, kind),
                "): it took ",
                n(lever.seconds, "s", M), " against ", n(r.seconds, "s", kind),
                " at that roof, so it could save up to ", n(lever.saving, "s", kind),
                *((" (besides the ", n(lever.faults, "s", P), " its fresh pages are "
                   "charged, a lever of their own)") if lever.faults > 0 else ()),
                *((", the timed call's ", n(lever.call, "s", M),
                   " less its time at the roof (its own time, from the traced calls, is longer "
                   "than the timed call)") if lever.capped else ()),
                ", ", *share, ".", *_pattern_advice(lever.pattern))
    if isinstance(lever, ExcessTraffic):
        one = len(lever.kernels) == 1
        at = lever.excess / lever.bandwidth
        held: tuple[Inline, ...] = (n(at, "s", kind), ", ")
        if lever.saving < at:  # held to the time they took, or to the call's
            took = lever.saving >= lever.seconds
            held = (n(at, "s", kind), ", more than the ",
                    *((n(lever.seconds, "s", M), f" {'it' if one else 'they'} took: up to "
                       "all of it, ") if took else
                      ("timed call's ", n(lever.call, "s", M), ": up to all of it, ")))
        return ("Fusion: the kernels move ",
                n(lever.total_bytes, "B", A), " a call, ", ratio(lever.ratio, A, 3),
                "× the program's minimum of ", n(lever.minimum_bytes, "B", A),
                f" ({lever.minimum_basis}); the "
                f"{plural(len(lever.kernels), FUSIBLE_ONE, FUSIBLE_MANY)} "
                f"({_categories(lever.categories)}) {'moves' if one else 'move'} ",
                n(lever.bytes, "B", A), " of them in ", n(lever.seconds, "s", M),
                ". Fused " + ("with its neighbours, it" if one else "together, they")
                + " could move up to ",
                n(lever.excess, "B", A), f" less, which at the {lever.roof} roof (",
                n(lever.bandwidth, "B/s", lever.roof_kind), ", the level of the program's "
                "traffic per call) take ", *held, *share, ".")
    if isinstance(lever, FreshPages):
        return _fresh_pages(lever, kind, share)
    return _overhead(lever, kind, share)


#: What keeps glibc's memory between calls (see analysis.levers).
KEEP_PAGES = "MALLOC_ARENA_MAX=1 MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=4294967295"


def _fresh_pages(f: FreshPages, kind: Kind, share: tuple[Inline, ...]) -> tuple[Inline, ...]:
    if f.counted is not None:
        why: tuple[Inline, ...] = (
            "while it was timed, the process took ", count(f.counted, M), " page faults a "
            "call: the C allocator gave its buffers back between calls and mapped them anew")
    elif f.temp_bytes:
        why = ("its temporary buffers (", n(f.temp_bytes, "B", Kind.COMPILER_ESTIMATE),
               ") reach ", n(FRESH_ABOVE_BYTES, "B", Kind.HYPOTHETICAL),
               " (glibc's largest mmap threshold, assumed of the C allocator), past which it "
               "maps them afresh on every call")
    else:
        why = ("the C allocator maps its buffers afresh on every call",)
    at = f.pages * f.fault
    held: tuple[Inline, ...] = ((", more than the timed call's ", n(f.call, "s", M),
                                 ": up to all of it") if f.saving >= f.call < at else ())
    return ("Fresh pages: ", *why, "; the first writes of ",
            plural(len(f.kernels), "kernel", "kernels"), " fault on ", count(f.pages, P),
            f" {'page' if f.pages == 1 else 'pages'} a call, ", n(at, "s", kind),
            " at the measured ", n(f.fault, "s", M), " a page", *held, ", ", *share,
            ". Memory the allocator keeps between calls faults no page: glibc keeps it with ",
            Code(KEEP_PAGES), " in the environment before the process starts (one arena, no "
            "mapping of its own for large blocks, no trimming of its heap).")


def _overhead(o: Overhead, kind: Kind, share: tuple[Inline, ...]) -> tuple[Inline, ...]:
    parts: list[Inline] = ["Dispatch and launches: the model charges a call "]
    if o.dispatch > 0:
        parts += [n(o.dispatch, "s", kind), " of dispatch"]
    if o.dispatch > 0 and o.launch > 0:
        parts += [" and "]
    if o.launch > 0:
        parts += [count(o.launches, A), f" {'launch' if o.launches == 1 else 'launches'} (",
                  n(o.launch, "s", kind), ")"]
    parts += [", ", percent(o.total / o.seconds, kind), " of the call's ",
              n(o.seconds, "s", M), "; more work per call (steps looped inside one) and "
              "fewer kernels could save up to "]
    if o.saving >= o.seconds and o.seconds < o.total - o.floor:  # more than the call took
        parts += ["all of the call's ", n(o.saving, "s", M)]
    else:
        parts += [n(o.saving, "s", kind)]
        if o.floor > 0:
            parts += [" (all of it but one launch)"]
    return (*parts, ", ", *share, ".")


def what_first(p: Program) -> tuple[Inline, ...]:
    """The summary's sentence on a program: its biggest lever in full, the next ones in a few
    words; or why it has none."""
    levers = p.levers
    if not levers:
        empty = p.kernels is not None and not p.kernels.rows
        why = ("it was not timed" if p.seconds is None else
               "it compiled to no kernel: its call is its dispatch alone" if empty else
               "nothing ran below its roof, above its minimum traffic or beyond one launch"
               if p.hardware is not None else "no roof prices its work")
        return (f"{p.title}: no lever to rank: {why}.",)
    first = levers[0]
    parts: list[Inline] = [f"{p.title}: the biggest lever ({first.what}). ", *lever_long(first)]
    rest = levers[1:1 + NEXT_LEVERS]
    if rest:
        parts.append(" Next: ")
        for i, x in enumerate(rest):
            parts += ["; " if i else "", *lever_short(x)]
        parts.append(".")
    return tuple(parts)


def levers_lede(p: Program) -> tuple[Inline, ...]:
    """The sentence after a program's levers: they overlap, and the ones in the fold."""
    left = p.levers[LEVERS_SHOWN:]
    parts: list[Inline] = [
        "Each is an upper bound and they overlap (a kernel's time can count in two), so they "
        "rank and do not add."]
    if left:
        kind = lever_kind(left[0])
        parts += [f" {plural(len(left), 'more lever saves', 'more levers save')} up to ",
                  n(left[0].saving, "s", kind), " each (listed below)."]
    return tuple(parts)


def more_levers(p: Program) -> str:
    """The fold's title of the levers after the first :data:`LEVERS_SHOWN`."""
    return plural(len(p.levers[LEVERS_SHOWN:]), "more lever", "more levers")
