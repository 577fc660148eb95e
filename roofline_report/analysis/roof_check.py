"""A run's roofs checked against its own measurements (pure; no jax).

A roof is the fastest a kind of work runs on this machine, so a program held to roofs that it
beats says more about the roofs than about the program. One program a little above its roof is
the model's own error; most of a run's programs above theirs, each by more than its timing's
spread, is the mark of ceilings measured too low: measured while other work held the cores,
reused from the ceilings cache after the machine changed, or measured on another machine.

:func:`roof_check` counts the programs (and the significant kernels of their traces) that ran
faster than their predictions, held to this run's measured roofs, allow by more than their
timing's spread (and by more than :data:`~roofline_report.analysis.miss.AS_PREDICTED`), and
calls the roofs **suspect** when at least :data:`SUSPECT_SHARE` of the programs checked (or of
the kernels checked) did. It names the likely reasons from the run's own record: ceilings
measured under load (:mod:`.measuring_load`), reused from the cache, measured on another
device. The report words it; the command line's ``--remeasure`` measures the ceilings again.
It tallies the kernels by the roof each was held to: where the kernels above were held to the
roofs of some kinds of work (on a TPU v5e, every gather held to the gather roofs, 26 of 26)
while the roof most kernels were held to held for all of them (none of 23 to 31 above the
triad stream's), the ceilings as a whole are not too low, and the report says which roofs do
not describe their kernels instead of advising to measure them all again.
A program or kernel whose prediction is bound by the dispatch and launch floors (a trivial
program's) is not checked: beating a floor says nothing of the roofs.
"""

from __future__ import annotations

from collections.abc import Sequence

from roofline_report.analysis.ceilings_origin import CeilingsOrigin
from roofline_report.analysis.kernel_records import SIGNIFICANT_KERNEL_S
from roofline_report.analysis.measuring_load import conditions
from roofline_report.analysis.predict import Prediction
from roofline_report.analysis.records import Program
from roofline_report.analysis.roof_check_records import (
    Above,
    Cause,
    RoofCheck,
    RoofTally,
    above,
)
from roofline_report.results import schema


def _device_name(backend: str | None, kind: str | None) -> str:
    """A device as a comparison takes it: backend and kind, spaces and case aside (jax names
    a v5e ``TPU v5 lite`` where its profiler trace's plane says ``TPU v5 Lite``)."""
    return " ".join(f"{backend or ''} {kind or ''}".split()).casefold()


def _on_floors(p: Prediction) -> bool:
    """Whether a prediction is bound by its floors (the dispatch of a call, the launches of
    its kernels): a trivial program faster than them says nothing of the roofs."""
    return p.binding.group == "overhead"


def _kernels(programs: Sequence[Program]) -> tuple[list[Above], int, tuple[RoofTally, ...]]:
    found: list[Above] = []
    checked = 0
    tally: dict[str, list[int]] = {}
    for p in programs:
        if p.kernels is None:
            continue
        for r in p.kernels.rows:
            if not r.charged or r.prediction is None or r.miss is None \
                    or (r.seconds or 0.0) < SIGNIFICANT_KERNEL_S or _on_floors(r.prediction):
                continue
            checked += 1
            q1, q3 = r.spread if r.spread is not None else (0.0, 0.0)
            spread = (q3 - q1) / r.miss.measured if q3 > q1 else 0.0
            counts = tally.setdefault(r.prediction.binding.roof, [0, 0])
            counts[0] += 1
            if (a := above(f"{p.name}: {r.name}", r.prediction.seconds, r.miss.measured,
                           spread)) is not None:
                found.append(a)
                counts[1] += 1
    roofs = sorted((RoofTally(roof, n, up) for roof, (n, up) in tally.items()),
                   key=lambda t: (-t.above, -t.checked, t.roof))
    return found, checked, tuple(roofs)


def roof_check(results: schema.Results, programs: Sequence[Program], measured_roofs: bool,
               origin: CeilingsOrigin | None) -> RoofCheck | None:
    """The check of ``programs`` against the run's measured roofs; None where the run has no
    measured roofs (its predictions then rest on assumed budgets). ``origin``: where the
    ceilings came from; the load they were measured under is read from them."""
    ceilings = results.ceilings
    if not measured_roofs or not isinstance(ceilings, schema.Ceilings):
        return None
    measuring = conditions(ceilings)
    found: list[Above] = []
    checked = 0
    for p in programs:
        if p.prediction is None or p.timing is None or p.seconds is None \
                or _on_floors(p.prediction):
            continue
        checked += 1
        if (a := above(p.name, p.prediction.seconds, p.seconds, p.timing.spread)) is not None:
            found.append(a)
    kernels, kernels_checked, roofs = _kernels(programs)
    causes: list[Cause] = []
    if measuring.loaded:
        causes.append(Cause.LOADED)
    if origin is not None and origin.cached:
        causes.append(Cause.CACHED)
    env = results.environment
    ceilings_device = _device_name(ceilings.backend, ceilings.device_kind)
    run_device = _device_name(env.backend, env.device_kind)
    if ceilings_device and run_device and ceilings_device != run_device:
        causes.append(Cause.OTHER_DEVICE)
    return RoofCheck(programs=tuple(found), programs_checked=checked, kernels=tuple(kernels),
                     kernels_checked=kernels_checked, causes=tuple(causes),
                     age_days=origin.age_days if origin is not None and origin.cached else None,
                     ceilings_device=ceilings.device_kind,
                     measured_quietly=(not causes and measuring.recorded and origin is not None
                                       and not origin.cached),
                     run_device=env.device_kind, roofs=roofs)


__all__ = ["roof_check"]
