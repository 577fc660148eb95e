"""The regression gate of ``roofline-report compare BASE NEW --fail-if COND`` (no jax).

A condition is one of (spaces allowed around the parts, case ignored)::

    time>P%      a workload's time per call grew by more than P percent (NEW ÷ BASE − 1 > P/100)
    roof<-Qpp    its share of the roof fell by more than Q percentage points (share = its
                 achieved rate ÷ the run's own measured roof at its intensity: its time at
                 that roof ÷ its measured time)
    topN-new     a kernel is among the workload's N longest kernels in NEW but not in BASE
                 (read from both runs' profiler traces, ``kernel_timing``; skipped, with a
                 note, where absent), and outranks BASE's N-th beyond both spreads

A workload's time is the one the page, ``compare`` and ``analyze()`` show:
:attr:`~roofline_report.analysis.records.Program.seconds`, the first quartile of its samples
(:func:`~roofline_report.analysis.stats.own_time`), and its share of the roof is
:attr:`~roofline_report.analysis.records.Program.share_of_hardware_roof` at that time.

The gate is aware of noise: a change counts only when it lies beyond both runs' spread, the
interquartile range (Q1..Q3) of the timing samples. A slowdown fires when NEW's Q1 is above
BASE's Q3; a drop of the share when the share at NEW's fastest quartile (Q1) is below the share at
BASE's slowest (Q3). A change past the threshold but inside the spread is reported as noise, not
as a regression. Only workloads present in both runs are gated; the others are listed. A
measurement BASE had and NEW lost (a timing, a prediction) fires: a lost number is not a pass.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from roofline_report.analysis.hardware_roof import roof_share
from roofline_report.analysis.kernel_records import KernelRow
from roofline_report.analysis.records import Analysis, Program
from roofline_report.errors import InputError
from roofline_report.kinds import Kind
from roofline_report.text import Num, decimal, n, ordinal, percent, percent_text

GRAMMAR = ("time>P% (time per call up by more than P percent), roof<-Qpp (share of the roof down "
           "by more than Q percentage points) or topN-new (a kernel new among the N longest)")

_NUMBER = r"(\d+(?:\.\d+)?)"
_TIME = re.compile(rf"time\s*>\s*{_NUMBER}\s*%")
_ROOF = re.compile(rf"roof\s*<\s*-\s*{_NUMBER}\s*pp")
_TOP = re.compile(r"top\s*(\d+)\s*-\s*new")

Metric = Literal["time", "roof", "top"]
Status = Literal["regression", "noise", "skipped"]


@dataclass(frozen=True, slots=True)
class Condition:
    """One ``--fail-if`` condition. ``threshold``: a fraction for time (0.1 is 10%), percentage
    points for roof, the number of kernels for top."""

    metric: Metric
    threshold: float
    text: str

    @property
    def meaning(self) -> str:
        if self.metric == "time":
            return f"time per call up by more than {percent_text(self.threshold)}"
        if self.metric == "roof":
            return (f"share of the roof down by more than {decimal(self.threshold, 4)} "
                    "percentage points")
        return f"a kernel new among the {int(self.threshold)} longest"


def parse(text: str) -> Condition:
    """A condition from its text; InputError (one line, with the grammar) when malformed."""
    spec = text.strip().lower()
    if m := _TIME.fullmatch(spec):
        return Condition("time", float(m.group(1)) / 100.0, f"time>{m.group(1)}%")
    if m := _ROOF.fullmatch(spec):
        return Condition("roof", float(m.group(1)), f"roof<-{m.group(1)}pp")
    if (m := _TOP.fullmatch(spec)) and int(m.group(1)) >= 1:
        return Condition("top", float(int(m.group(1))), f"top{int(m.group(1))}-new")
    shown = json.dumps(text, ensure_ascii=False)
    raise InputError(f"compare: --fail-if {shown} is not a condition; write {GRAMMAR}")


@dataclass(frozen=True, slots=True)
class Finding:
    """What one condition found for one workload: a regression, a change inside the noise, or
    a check that could not be made (with the reason)."""

    name: str
    title: str
    condition: str
    status: Status
    base: Num
    new: Num
    change: Num
    why: str

    def line(self) -> str:
        """One line for stderr, naming the workload as results.json does."""
        who = self.name if self.name == self.title else f"{self.name} ({self.title})"
        if self.status == "skipped":
            return f"{who}: {self.condition} not checked: {self.why}"
        return (f"{who}: {self.condition}: {self.base.text} -> {self.new.text} "
                f"({self.change.text}); {self.why}")


@dataclass(frozen=True, slots=True)
class GateResult:
    conditions: tuple[Condition, ...]
    findings: tuple[Finding, ...]
    gated: tuple[str, ...]  # names of the workloads in both runs
    only_base: tuple[str, ...]
    only_new: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def regressions(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.status == "regression")

    @property
    def offenders(self) -> tuple[str, ...]:
        """Names of the workloads with a regression, in order of first finding."""
        return tuple(dict.fromkeys(f.name for f in self.regressions))

    def to_json(self) -> dict[str, Any]:
        return {
            "conditions": [c.text for c in self.conditions],
            "regressions": [f.line() for f in self.regressions],
            "noise": [f.line() for f in self.findings if f.status == "noise"],
            "skipped": [f.line() for f in self.findings if f.status == "skipped"],
            "notes": list(self.notes),
            "only_in_base": list(self.only_base),
            "only_in_new": list(self.only_new),
        }


def _by_name(an: Analysis) -> dict[str, Program]:
    return {p.name: p for p in an.programs}


def common_workloads(base: Analysis, new: Analysis) -> tuple[list[str], list[str], list[str]]:
    """Names in both runs (BASE's order), only in BASE, only in NEW."""
    b, nw = _by_name(base), _by_name(new)
    return ([k for k in b if k in nw], [k for k in b if k not in nw],
            [k for k in nw if k not in b])


def _kernel_times(p: Program) -> list[KernelRow] | None:
    """The kernels of the program's profiler trace, longest first (ties by name); None for a
    run without a trace (or whose trace was not available)."""
    if p.kernels is None or p.kernels.trace is None:
        return None
    rows = [r for r in p.kernels.rows if r.seconds is not None]
    rows.sort(key=lambda r: (-(r.seconds or 0.0), r.name))
    return rows or None


def top_kernels(p: Program, count: int) -> list[str] | None:
    """The names of the program's ``count`` longest kernels; None without a trace."""
    kernels = _kernel_times(p)
    return None if kernels is None else [r.name for r in kernels[:count]]


def _lost(c: Condition, name: str, title: str, what: str, base: Num) -> Finding:
    """NEW lost a measurement BASE had: the gate cannot say it did not regress."""
    return Finding(name, title, c.text, "regression", base, Num("not measured"), Num(""),
                   f"NEW has no {what} for it while BASE had one: a lost measurement is not a "
                   "pass")


def _time(c: Condition, name: str, title: str, b: Program, nw: Program) -> Finding | None:
    sb, sn = b.timing, nw.timing
    if sb is not None and sn is None:
        return _lost(c, name, title, "timing", n(b.seconds, "s", Kind.MEASURED))
    if sb is None or sn is None:
        which = "either run" if sb is None and sn is None else "BASE"
        return Finding(name, title, c.text, "skipped", Num("not measured"), Num("not measured"),
                       Num(""), f"the time was not measured in {which}")
    t_base, t_new = sb.own, sn.own  # Program.seconds: the page's time per call
    change = t_new / t_base - 1.0 if t_base > 0 else None
    if change is None or change <= c.threshold:
        return None
    base, new = n(t_base, "s", Kind.MEASURED), n(t_new, "s", Kind.MEASURED)
    shown = Num(f"+{percent_text(change)}", Kind.MEASURED.value)
    if sn.q1 > sb.q3:
        return Finding(name, title, c.text, "regression", base, new, shown,
                       f"beyond both runs' spread (NEW's Q1 {n(sn.q1, 's', Kind.MEASURED).text}"
                       f" > BASE's Q3 {n(sb.q3, 's', Kind.MEASURED).text})")
    return Finding(name, title, c.text, "noise", base, new, shown,
                   "inside both runs' spread: the interquartile ranges of the samples overlap "
                   f"(NEW's Q1 {n(sn.q1, 's', Kind.MEASURED).text} ≤ BASE's Q3 "
                   f"{n(sb.q3, 's', Kind.MEASURED).text}); not a regression")


def _roof(c: Condition, name: str, title: str, b: Program, nw: Program, base: Analysis,
          new: Analysis) -> Finding | None:
    """Each run's share of roof: its achieved rate ÷ its own measured roof at its intensity
    (its time at that roof ÷ its measured time)."""
    sb, sn = b.timing, nw.timing
    pb, pn = b.prediction, nw.prediction
    if sb is not None and pb is not None and base.roofs.measured is not None \
            and (sn is None or pn is None):
        return _lost(c, name, title, "timing" if sn is None else "prediction",
                     percent(b.share_of_hardware_roof, Kind.MEASURED))
    missing = [why for why, bad in (
        ("the time was not measured in BASE", sb is None),
        ("the time was not measured in NEW", sn is None),
        ("BASE measured no roofs", base.roofs.measured is None),
        ("NEW measured no roofs", new.roofs.measured is None),
        ("no prediction in BASE (its work was not counted)", pb is None),
        ("no prediction in NEW (its work was not counted)", pn is None)) if bad]
    if missing or sb is None or sn is None or pb is None or pn is None:
        return Finding(name, title, c.text, "skipped", Num("not measured"), Num("not measured"),
                       Num(""), "; ".join(missing))
    share_b = b.share_of_hardware_roof or 0.0  # the page's share: at each run's own time
    share_n = nw.share_of_hardware_roof or 0.0
    drop_pp = (share_n - share_b) * 100.0
    if drop_pp >= -c.threshold:
        return None
    base_num, new_num = percent(share_b, Kind.MEASURED), percent(share_n, Kind.MEASURED)
    shown = Num(f"{decimal(drop_pp, 3)} pp", Kind.MEASURED.value)
    # The same share at the quartile times: timing samples are positive, so both exist.
    best_new = roof_share(nw.hardware, sn.q1) or 0.0
    worst_base = roof_share(b.hardware, sb.q3) or 0.0
    if best_new < worst_base:
        return Finding(name, title, c.text, "regression", base_num, new_num, shown,
                       f"beyond both runs' spread (NEW at its Q1 time reaches "
                       f"{percent_text(best_new)} < BASE at its Q3 time "
                       f"{percent_text(worst_base)})")
    return Finding(name, title, c.text, "noise", base_num, new_num, shown,
                   "inside both runs' spread: the shares at the quartile times overlap "
                   f"(NEW up to {percent_text(best_new)}, BASE down to "
                   f"{percent_text(worst_base)}); not a regression")


def _top(c: Condition, name: str, title: str, b: Program, nw: Program) -> Finding | None:
    """A kernel among NEW's ``count`` longest that is not among BASE's: a regression when it
    outranks BASE's last one beyond both spreads (its first quartile in NEW above the third
    quartile of BASE's ``count``-th longest), else noise (near-ties trade places)."""
    count = int(c.threshold)
    kb, kn = _kernel_times(b), _kernel_times(nw)
    if kb is None or kn is None:
        which = "either run" if kb is None and kn is None else "BASE" if kb is None else "NEW"
        return Finding(name, title, c.text, "skipped", Num(""), Num(""), Num(""),
                       f"no per-kernel times in {which}")
    top_b = [r.name for r in kb[:count]]
    top_n = [r.name for r in kn[:count]]
    entered = [r for r in kn[:count] if r.name not in top_b]
    if not entered:
        return None
    last_b = kb[:count][-1]
    bar = last_b.spread[1] if last_b.spread else float(last_b.seconds or 0.0)
    clear = [r for r in entered if (r.spread[0] if r.spread else (r.seconds or 0.0)) > bar]
    names = ", ".join(r.name for r in entered)
    shown = (Num(", ".join(top_b)), Num(", ".join(top_n)), Num(f"new: {names}"))
    bar_text = n(bar, "s", Kind.MEASURED).text
    longest = f"the {ordinal(count)} longest kernel of BASE"
    if clear:
        return Finding(name, title, c.text, "regression", *shown,
                       f"{', '.join(r.name for r in clear)} entered the {count} longest "
                       f"kernels beyond both spreads (NEW's Q1 above the Q3 of {longest}, "
                       f"{bar_text})")
    return Finding(name, title, c.text, "noise", *shown,
                   f"{names} entered the {count} longest kernels inside the spread (NEW's Q1 "
                   f"at or below the Q3 of {longest}, {bar_text}): near-ties trading places, "
                   "not a regression")


def evaluate(conditions: Sequence[Condition], base: Analysis, new: Analysis) -> GateResult:
    """Every condition on every program in both runs, each run analysed on its own roofs."""
    common, only_base, only_new = common_workloads(base, new)
    b, nw = _by_name(base), _by_name(new)
    findings: list[Finding] = []
    notes: list[str] = []
    for cond in conditions:
        found: list[Finding] = []
        for name in common:
            title = b[name].title
            if cond.metric == "time":
                f = _time(cond, name, title, b[name], nw[name])
            elif cond.metric == "roof":
                f = _roof(cond, name, title, b[name], nw[name], base, new)
            else:
                f = _top(cond, name, title, b[name], nw[name])
            if f is not None:
                found.append(f)
        skipped = [f for f in found if f.status == "skipped"]
        if common and len(skipped) == len(common):
            # Not checkable anywhere: one note, not a line per workload.
            reasons = sorted({f.why for f in skipped})
            notes.append(f"{cond.text} was not checked: {'; '.join(reasons)}")
            found = []
        findings += found
    order = {"regression": 0, "noise": 1, "skipped": 2}
    findings.sort(key=lambda f: order[f.status])  # stable: conditions and workloads in order
    return GateResult(tuple(conditions), tuple(findings), tuple(common), tuple(only_base),
                      tuple(only_new), tuple(notes))


__all__ = ["GRAMMAR", "Condition", "Finding", "GateResult", "common_workloads", "evaluate",
           "parse", "top_kernels"]
