"""The words for how far a run's ceilings can be trusted: the load they were measured under
(:mod:`roofline_report.analysis.measuring_load`) and the check of the roofs against the run's
own programs (:mod:`roofline_report.analysis.roof_check`). Pure: numbers come from the
analysis, formatted here.
"""

from __future__ import annotations

from roofline_report.analysis.measuring_load import LOADED_SHARE, conditions
from roofline_report.analysis.records import Analysis
from roofline_report.analysis.roof_check_records import Cause, RoofCheck, RoofTally
from roofline_report.kinds import Kind
from roofline_report.report.blocks import Inline, Text, text
from roofline_report.report.format import Num, count, n, percent, plural, ratio
from roofline_report.results import schema

M = Kind.MEASURED


def _again(an: Analysis) -> str:
    """How whoever asked for this run measures the ceilings again."""
    if an.results.options.origin == "python":
        return "analyze(..., remeasure=True)"
    return "--remeasure"


def _names(names: tuple[str, ...]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def conditions_text(an: Analysis) -> Text:
    """The sentence on the load the ceilings were measured under, beside their origin; ()
    where the run did not record it (runs saved before it was)."""
    ceilings = an.results.ceilings
    if not isinstance(ceilings, schema.Ceilings):
        return ()
    c = conditions(ceilings)
    if not c.recorded:
        return ()
    sentences: list[list[Inline]] = []
    whole = c.whole
    if whole is not None:
        first: list[Inline] = ["They were measured over ", n(whole.wall_s, "s", M)]
        share = whole.others_share
        if share is not None and whole.cores:
            first += [" while other processes took ", percent(share, M), " of this machine's ",
                      count(whole.cores, M), f" {'core' if whole.cores == 1 else 'cores'}"]
        else:
            first += [", the CPU time other processes took not known on this system"]
        if whole.loadavg:
            averages = [ratio(a, M, 3) for a in whole.loadavg]
            first += [" (1-minute load average ", averages[0]]
            if len(averages) > 1:
                first += [" at the start, ", averages[-1], " at the end"]
            first += [")"]
        sentences.append([*first, "."])
    if c.repeated:
        sentences.append([f"{plural(c.repeated, 'round', 'rounds')} of the compute and "
                          "streaming ceilings ran while other work held the cores and "
                          f"{'was' if c.repeated == 1 else 'were'} taken again."])
    threshold: list[Inline] = [" (other processes holding ",
                               percent(LOADED_SHARE, Kind.HYPOTHETICAL),
                               " of the cores or more)"]
    if c.loaded_ceilings:
        sentences.append(["Measured under load", *threshold,
                          f": {_names(c.loaded_ceilings)}, whose best round ran while other "
                          "work held the cores; roofs measured so are too low, and the programs "
                          f"held to them look slow. {_again(an)} measures them again."])
    elif c.loaded:
        sentences.append(["That is under load", *threshold, ": the ceilings timed without "
                          "rounds (the floors, the operation rates, the memory levels) may be "
                          f"too low; {_again(an)} measures them again."])
    parts: list[Inline] = []
    for i, sentence in enumerate(sentences):
        parts += [" "] if i else []
        parts += sentence
    return text(*parts)


_CAUSES = {
    Cause.LOADED: "they were measured while other work held the cores (see the ceilings' "
                  "measuring conditions)",
    Cause.CACHED: "they were reused from the ceilings cache",
    Cause.OTHER_DEVICE: "they were measured on another device",
}


def roof_warning(an: Analysis) -> Text:
    """The caution at the top of the summary when most programs (or kernels) ran faster than
    this run's roofs allow: how many, by how much, the likely reasons and how to measure the
    ceilings again; () otherwise."""
    rc: RoofCheck | None = an.roof_check
    if rc is None or not rc.suspect:
        return ()
    parts: list[Inline] = ["Check these roofs: " if rc.by_kind else "Check these ceilings: "]
    if rc.programs:
        parts += [_of(len(rc.programs), rc.programs_checked, "program", "programs")]
        if rc.kernels:
            parts += [" and ", _of(len(rc.kernels), rc.kernels_checked, "kernel", "kernels")]
    else:
        parts += [_of(len(rc.kernels), rc.kernels_checked, "kernel", "kernels")]
    factors = rc.factors
    parts += [" ran faster than their roofs allow, by more than their timings' spread: "]
    parts += ["the programs " if rc.programs and rc.kernels else ""]
    if len(factors) == 1:
        parts += ["by ", _times(factors[0])]
    else:
        parts += ["by ", _times(min(factors)), " to ", _times(max(factors)), " (median ",
                  _times(rc.median_factor), ")"]
    if rc.by_kind:
        parts += [". ", *_by_kind(rc)]
        return text(*parts)
    if rc.measured_quietly:
        parts += [". They were measured in this run while the machine was quiet (see their "
                  "measuring conditions), so nothing recorded makes them too low: the model "
                  "may charge these programs more time than their work takes. "
                  f"{_again(an)} measures them again to rule the roofs out."]
        return text(*parts)
    parts += [". A roof is the fastest this machine runs a kind of work, so these roofs are "
              "likely too low"]
    reasons = []
    for cause in rc.causes:
        words = _CAUSES[cause]
        if cause is Cause.CACHED and rc.age_days is not None:
            age = ("less than a day" if rc.age_days == 0
                   else plural(rc.age_days, "day", "days"))
            words += f", measured {age} before this run"
        if cause is Cause.OTHER_DEVICE and rc.ceilings_device:
            words += f" ({rc.ceilings_device}, not {rc.run_device or 'this one'})"
        reasons.append(words)
    if reasons:
        parts += [": " + "; or ".join(reasons)]
    else:
        origin = an.ceilings_origin
        measured_here = origin is not None and not origin.cached
        parts += [": the machine was likely busier while they were measured than while the "
                  "programs ran" + (" (they were measured in this run)" if measured_here
                                    else "")]
    parts += [f". {_again(an)} measures them again; every prediction, miss and share of roof "
              "below rests on them."]
    return text(*parts)


LISTED_ROOFS = 4  # roofs named in the warning, the most kernels above first


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _by_kind(rc: RoofCheck) -> list[Inline]:
    """The kernels above by the roof they were held to, and the roofs that held: the words of
    a check whose roofs are wrong for a few kinds of work, not as a whole."""
    beaten, held = rc.beaten, rc.held

    def one(t: RoofTally) -> str:
        return f"{t.roof} ({t.above} of {plural(t.checked, 'kernel', 'kernels')} held to it)"

    named = [one(t) for t in beaten[:LISTED_ROOFS]]
    if len(beaten) > LISTED_ROOFS:
        rest = len(beaten) - LISTED_ROOFS
        named.append(f"{plural(rest, 'roof', 'roofs')} more")
    checked = sum(t.checked for t in held)
    return [f"The kernels above were held to the roofs of some kinds of work: "
            f"{_listed(named)}; none of the {checked} kernels held to "
            f"{_listed([t.roof for t in held])} ran above {'it' if len(held) == 1 else 'them'}."
            " So the ceilings as a whole are not too low: those roofs do not describe these "
            "kernels, and the model charges them more time than they take. Measuring the "
            "ceilings again measures the same kinds of work the same way."]


def _of(found: int, checked: int, one: str, many: str) -> str:
    return f"{found} of {plural(checked, one, many)}"


def _times(factor: float | None) -> Num:
    return Num("unknown" if factor is None else f"{ratio(factor, Kind.PREDICTED, 3).text}×",
               Kind.PREDICTED.value)


__all__ = ["conditions_text", "roof_warning"]
