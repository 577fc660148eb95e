"""What could save a program the most time (no jax): its levers, ranked, each with the time it
could save per call and the numbers it rests on. Four kinds, each an upper bound, which may
overlap (a kernel's time can count in two of them), so they are ranked, not added:

* **a kernel below its roof** (:class:`~roofline_report.analysis.kernel_records.BelowRoof`): its
  measured time less its time at the hardware roof at its intensity
  (:mod:`~roofline_report.analysis.headroom`), less the time its fresh pages are charged (the
  next lever's);
* **fresh pages** (:class:`~roofline_report.analysis.kernel_records.FreshPages`): the page faults
  the prediction charges the kernels that first write memory the C allocator maps afresh on
  every call (:mod:`~roofline_report.analysis.fresh_pages`), at the measured cost of one. Memory
  the allocator keeps between calls faults no page. glibc keeps it with one arena, no mapping
  of its own for large blocks and no trimming of its heap (``MALLOC_ARENA_MAX=1
  MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=4294967295`` in the process's environment before it
  starts; ``man mallopt``). Measured on the 2-core CPU this was built on (jax 0.10.2, glibc
  2.36): a Flax pre-norm encoder block's Adam step (batch 8 × 512 × 64, 4 heads) took 55,938
  page faults a call and 85 ms; with those three settings, none and 38 ms. Either of the last
  two alone took more faults (67,443 and 95,259) and longer (91 and 142 ms); both without the
  first, 32,121 faults and 58 ms (the runtime's threads allocate from arenas of their own);
* **traffic above the minimum** (:class:`~roofline_report.analysis.kernel_records.ExcessTraffic`):
  every kernel together moves more bytes than the program must (the analytic minimum, or every
  argument read and every result written once); the kernels bound by memory at their roofs
  (not matrix products: elementwise kernels such as an optimizer's, reductions, copies) move
  part of them, and fused they could move up to the smaller of their bytes and the excess
  less: that many bytes at their own memory roofs, no more than the time they took;
* **dispatch and launches** (:class:`~roofline_report.analysis.kernel_records.Overhead`):
  the model's dispatch of a call and its kernels' launch terms (split launches included),
  against the call's time: work done in fewer, larger calls (a loop of steps inside one call)
  and fewer kernels could save all of it but one launch.

A program that was not timed has none.
"""

from __future__ import annotations

from collections.abc import Sequence

from roofline_report.analysis.kernel_records import (
    BelowRoof,
    ExcessTraffic,
    FreshPages,
    KernelRow,
    KernelTable,
    Lever,
    Overhead,
)
from roofline_report.analysis.predict import Prediction, faults_charged
from roofline_report.analysis.roofs import PAGE_FAULT, SPLIT_LAUNCH, RoofSet
from roofline_report.kinds import Kind

__all__ = ["FUSIBLE", "LAUNCH_TERMS", "program_levers"]

#: The categories of kernels whose traffic fusion takes away: not matrix products and
#: convolutions (their operands are read as they must be), not collectives.
FUSIBLE = ("elementwise", "reduction", "data movement", "other")
#: The prediction's terms that are a kernel's launch costs.
LAUNCH_TERMS = ("launch", SPLIT_LAUNCH)
_ORDER = {BelowRoof.what: 3, ExcessTraffic.what: 0, FreshPages.what: 1, Overhead.what: 2}


def program_levers(seconds: float | None, table: KernelTable | None,
                   prediction: Prediction | None, minimum: float | None, minimum_basis: str,
                   roofs: RoofSet) -> tuple[Lever, ...]:
    """A program's levers, the largest saving first (ties: traffic, then fresh pages, then
    overhead, then kernels by name). ``seconds``: its measured time per call; ``minimum``:
    the bytes it must move (``minimum_basis`` says which minimum)."""
    if not seconds or seconds <= 0:
        return ()
    rows = [r for r in table.rows if r.charged] if table is not None else []
    found: list[Lever] = [*_below(rows, seconds)]
    traffic = _traffic(rows, seconds, minimum, minimum_basis, roofs)
    if traffic is not None:
        found.append(traffic)
    pages = _fresh_pages(table, rows, seconds)
    if pages is not None:
        found.append(pages)
    overhead = _overhead(rows, table is not None, prediction, seconds, roofs)
    if overhead is not None:
        found.append(overhead)
    return tuple(sorted(found, key=lambda x: (-x.saving, _ORDER[x.what], _name(x))))


def _name(lever: Lever) -> str:
    return lever.kernel if isinstance(lever, BelowRoof) else ""


def _faults(r: KernelRow) -> float:
    """The time a kernel's first writes to fresh pages are charged per call (0: none)."""
    return faults_charged((r.prediction,)) if r.prediction is not None else 0.0


def _below(rows: Sequence[KernelRow], seconds: float) -> list[BelowRoof]:
    """Each kernel's headroom less its fresh pages' time, no more than the call's time less
    the kernel's time at its roof (a kernel's time comes from the traced calls, which can run
    longer than the timed ones)."""
    out = []
    for r in rows:
        room, roof = r.headroom, r.hardware
        if not room or room <= 0 or roof is None or not r.seconds:
            continue
        faults = min(_faults(r), room)
        saving = min(room - faults, seconds - roof.seconds)
        if saving > 0:
            out.append(BelowRoof(r.name, r.category, r.seconds, roof, saving,
                                 saving / seconds, seconds, capped=saving < room - faults,
                                 pattern=r.pattern, faults=faults))
    return out


def _fresh_pages(table: KernelTable | None, rows: Sequence[KernelRow],
                 seconds: float) -> FreshPages | None:
    """The page faults the prediction charges the kernels, no more than the call's time;
    None where it charges none or the page fault was not measured."""
    floor = table.roofs.floor(PAGE_FAULT) if table is not None else None
    if table is None or floor is None or not table.fresh_pages:
        return None
    charged = sorted(((_faults(r), r.name) for r in rows), key=lambda x: (-x[0], x[1]))
    kernels = tuple(name for s, name in charged if s > 0)
    saving = min(table.fault_seconds, seconds)
    if saving <= 0:
        return None
    return FreshPages(pages=table.fresh_pages, fault=floor.seconds, kernels=kernels,
                      counted=table.counted_pages, temp_bytes=table.temp_bytes,
                      saving=saving, share=saving / seconds, call=seconds)


def _traffic(rows: Sequence[KernelRow], seconds: float, minimum: float | None, basis: str,
             roofs: RoofSet) -> ExcessTraffic | None:
    """The fusible kernels' traffic above the program's minimum (see the module docstring);
    None where there is no minimum, no excess, no bandwidth roof or no such kernel timed."""
    if not minimum or minimum <= 0 or not rows:
        return None
    total = sum(r.bytes for r in rows)
    group = [r for r in rows if r.category in FUSIBLE and r.seconds and r.bytes
             and not r.uncosted]
    roof = roofs.bandwidth_for(total, None, program=True, traffic=total)
    if not group or total <= minimum or roof is None or roof.value <= 0:
        return None
    moved = sum(r.bytes for r in group)
    took = sum(r.seconds or 0.0 for r in group)
    excess = min(moved, total - minimum)
    categories: dict[str, int] = {}
    for r in group:
        categories[r.category] = categories.get(r.category, 0) + 1
    saving = min(took, excess / roof.value, seconds)
    return ExcessTraffic(
        kernels=tuple(r.name for r in group),
        categories=tuple(sorted(categories.items(), key=lambda kv: (-kv[1], kv[0]))),
        seconds=took, bytes=moved, total_bytes=total, minimum_bytes=minimum,
        minimum_basis=basis, excess=excess, bandwidth=roof.value, roof=roof.name,
        roof_kind=roof.kind, saving=saving, share=saving / seconds, call=seconds)


def _overhead(rows: Sequence[KernelRow], tabled: bool, prediction: Prediction | None,
              seconds: float, roofs: RoofSet) -> Overhead | None:
    """The model's dispatch and launch terms against the call; None without a prediction or
    where they leave nothing to save beyond one launch."""
    if prediction is None:
        return None
    dispatch = sum(t.seconds for t in prediction.terms if t.name == "dispatch")
    terms = [t for r in rows if r.prediction is not None for t in r.prediction.terms] \
        if tabled else list(prediction.terms)
    launch = sum(t.seconds for t in terms if t.name in LAUNCH_TERMS)
    floor = roofs.floor("launch")
    launches = float(sum(r.trips for r in rows)) if tabled else \
        (launch / floor.seconds if floor is not None and floor.seconds > 0 else 0.0)
    one = floor.seconds if floor is not None and launch > 0 else 0.0
    saving = min(seconds, dispatch + launch - one)
    if saving <= 0:
        return None
    kinds = {t.kind for t in prediction.terms if t.name == "dispatch"} | \
        {t.kind for t in terms if t.name in LAUNCH_TERMS}
    kind = kinds.pop() if len(kinds) == 1 else Kind.MEASURED
    return Overhead(dispatch, launch, launches, one, seconds, saving, saving / seconds, kind)
