"""The regression gate of ``roofline-report compare BASE NEW --fail-if COND`` (no jax).

A condition is one of (spaces allowed around the parts, case ignored)::

    time>P%      a workload's median time grew by more than P percent (NEW ÷ BASE − 1 > P/100)
    roof<-Qpp    its share of the roof fell by more than Q percentage points (share = achieved
                 rate ÷ the run's own measured roof at the workload's intensity)
    topN-new     a kernel is among the workload's N longest kernels in NEW but not in BASE
                 (read from both runs' profiler traces, ``kernel_timing``; skipped, with a
                 note, where absent), and outranks BASE's N-th beyond both spreads

The gate is aware of noise: a change counts only when it lies beyond both runs' spread, the
interquartile range (Q1..Q3) of the timing samples. A slowdown fires when NEW's Q1 is above
BASE's Q3; a drop of the share when the share at NEW's fastest quartile (Q1) is below the share at
BASE's slowest (Q3). A change past the threshold but inside the spread is reported as noise, not
as a regression. Only workloads present in both runs are gated; the others are listed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from roofline_report.errors import InputError
from roofline_report.kinds import Kind
from roofline_report.report.format import Num, n, percent, percent_text

GRAMMAR = ("time>P% (median time up by more than P percent), roof<-Qpp (share of the roof down "
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
            return f"median time up by more than {percent_text(self.threshold)}"
        if self.metric == "roof":
            return f"share of the roof down by more than {self.threshold:g} percentage points"
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
    raise InputError(f"compare: --fail-if {text!r} is not a condition; write {GRAMMAR}")


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


def _by_name(results: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(w["name"]): w for w in results.get("workloads", [])}


def common_workloads(base: Mapping[str, Any], new: Mapping[str, Any]
                     ) -> tuple[list[str], list[str], list[str]]:
    """Names in both runs (BASE's order), only in BASE, only in NEW."""
    b, nw = _by_name(base), _by_name(new)
    return ([k for k in b if k in nw], [k for k in b if k not in nw],
            [k for k in nw if k not in b])


def _stats(w: Mapping[str, Any]) -> Mapping[str, Any] | None:
    t = w.get("timing") or {}
    return t.get("per_call") if t.get("available") else None


def _roof_at(w: Mapping[str, Any], results: Mapping[str, Any]) -> float | None:
    """The run's own measured roof at the workload's analytic intensity (FLOP/s), or None."""
    an = w.get("analytic") or {}
    roofs = results.get("roofs")
    roof_set = getattr(roofs, "measured", None)
    if roof_set is None or "flops" not in an or not an.get("minimum_bytes"):
        return None
    roof: float | None = roof_set.roof_at(an["flops"], an["minimum_bytes"],
                                          str(w.get("dtype", "")))
    return roof


def _kernel_times(w: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """The kernels of the workload's profiler trace (``kernel_timing.kernels``), longest first
    (ties by name), each with its ``total_s`` per call of the program and its quartiles; None
    for a run without a trace (or whose trace was not available)."""
    trace = w.get("kernel_timing")
    if not isinstance(trace, Mapping) or trace.get("available", True) is False:
        return None
    kernels = [k for k in trace.get("kernels") or []
               if isinstance(k, Mapping) and "name" in k
               and isinstance(k.get("total_s"), int | float)]
    kernels.sort(key=lambda k: (-float(k["total_s"]), str(k["name"])))
    return kernels or None


def top_kernels(w: Mapping[str, Any], count: int) -> list[str] | None:
    """The names of the workload's ``count`` longest kernels, from the per-kernel times a run
    records from its profiler trace; None without them."""
    kernels = _kernel_times(w)
    return None if kernels is None else [str(k["name"]) for k in kernels[:count]]


def _time(c: Condition, name: str, title: str, b: Mapping[str, Any],
          nw: Mapping[str, Any]) -> Finding | None:
    sb, sn = _stats(b), _stats(nw)
    if sb is None or sn is None:
        which = "either run" if sb is None and sn is None else "BASE" if sb is None else "NEW"
        return Finding(name, title, c.text, "skipped", Num("not measured"), Num("not measured"),
                       Num(""), f"the time was not measured in {which}")
    change = sn["median"] / sb["median"] - 1.0 if sb["median"] > 0 else None
    if change is None or change <= c.threshold:
        return None
    base, new = n(sb["median"], "s", Kind.MEASURED), n(sn["median"], "s", Kind.MEASURED)
    shown = Num(f"+{percent_text(change)}", Kind.MEASURED.value)
    if sn["q1"] > sb["q3"]:
        return Finding(name, title, c.text, "regression", base, new, shown,
                       f"beyond both runs' spread (NEW's Q1 {n(sn['q1'], 's', Kind.MEASURED).text}"
                       f" > BASE's Q3 {n(sb['q3'], 's', Kind.MEASURED).text})")
    return Finding(name, title, c.text, "noise", base, new, shown,
                   "inside both runs' spread: the interquartile ranges of the samples overlap "
                   f"(NEW's Q1 {n(sn['q1'], 's', Kind.MEASURED).text} ≤ BASE's Q3 "
                   f"{n(sb['q3'], 's', Kind.MEASURED).text}); not a regression")


def _roof(c: Condition, name: str, title: str, b: Mapping[str, Any], nw: Mapping[str, Any],
          base_run: Mapping[str, Any], new_run: Mapping[str, Any]) -> Finding | None:
    sb, sn = _stats(b), _stats(nw)
    rb, rn = _roof_at(b, base_run), _roof_at(nw, new_run)
    flops_b, flops_n = (b.get("analytic") or {}).get("flops"), (nw.get("analytic") or {}).get(
        "flops")
    missing = [why for why, bad in (
        ("the time was not measured in BASE", sb is None), ("the time was not measured in NEW",
                                                            sn is None),
        ("BASE has no measured roof for it", rb is None), ("NEW has no measured roof for it",
                                                          rn is None),
        ("no analytic work count", not flops_b or not flops_n)) if bad]
    if missing or sb is None or sn is None or rb is None or rn is None:
        return Finding(name, title, c.text, "skipped", Num("not measured"), Num("not measured"),
                       Num(""), "; ".join(missing))
    share_b = flops_b / sb["median"] / rb
    share_n = flops_n / sn["median"] / rn
    drop_pp = (share_n - share_b) * 100.0
    if drop_pp >= -c.threshold:
        return None
    base, new = percent(share_b, Kind.MEASURED), percent(share_n, Kind.MEASURED)
    shown = Num(f"{drop_pp:.1f} pp", Kind.MEASURED.value)
    best_new = flops_n / sn["q1"] / rn if sn["q1"] > 0 else float("inf")
    worst_base = flops_b / sb["q3"] / rb if sb["q3"] > 0 else float("inf")
    if best_new < worst_base:
        return Finding(name, title, c.text, "regression", base, new, shown,
                       f"beyond both runs' spread (NEW at its Q1 time reaches "
                       f"{percent_text(best_new)} < BASE at its Q3 time "
                       f"{percent_text(worst_base)})")
    return Finding(name, title, c.text, "noise", base, new, shown,
                   "inside both runs' spread: the shares at the quartile times overlap "
                   f"(NEW up to {percent_text(best_new)}, BASE down to "
                   f"{percent_text(worst_base)}); not a regression")


def _top(c: Condition, name: str, title: str, b: Mapping[str, Any],
         nw: Mapping[str, Any]) -> Finding | None:
    """A kernel among NEW's ``count`` longest that is not among BASE's: a regression when it
    outranks BASE's last one beyond both spreads (its first quartile in NEW above the third
    quartile of BASE's ``count``-th longest), else noise (near-ties trade places)."""
    count = int(c.threshold)
    kb, kn = _kernel_times(b), _kernel_times(nw)
    if kb is None or kn is None:
        which = "either run" if kb is None and kn is None else "BASE" if kb is None else "NEW"
        return Finding(name, title, c.text, "skipped", Num(""), Num(""), Num(""),
                       f"no per-kernel times in {which}")
    top_b = [str(k["name"]) for k in kb[:count]]
    top_n = [str(k["name"]) for k in kn[:count]]
    entered = [k for k in kn[:count] if str(k["name"]) not in top_b]
    if not entered:
        return None
    last_b = kb[:count][-1]
    bar = float(last_b.get("q3_s", last_b["total_s"]))
    clear = [k for k in entered if float(k.get("q1_s", k["total_s"])) > bar]
    names = ", ".join(str(k["name"]) for k in entered)
    shown = (Num(", ".join(top_b)), Num(", ".join(top_n)), Num(f"new: {names}"))
    bar_text = n(bar, "s", Kind.MEASURED).text
    if clear:
        return Finding(name, title, c.text, "regression", *shown,
                       f"{', '.join(str(k['name']) for k in clear)} entered the {count} longest "
                       f"kernels beyond both spreads (NEW's Q1 above the Q3 of BASE's "
                       f"{count}-th longest, {bar_text})")
    return Finding(name, title, c.text, "noise", *shown,
                   f"{names} entered the {count} longest kernels inside the spread (NEW's Q1 "
                   f"at or below the Q3 of BASE's {count}-th longest, {bar_text}): near-ties "
                   "trading places, not a regression")


def evaluate(conditions: Sequence[Condition], base: Mapping[str, Any],
             new: Mapping[str, Any]) -> GateResult:
    """Every condition on every workload in both runs. ``base`` and ``new`` are analysed
    results (:func:`roofline_report.analysis.analyse`), so each run's roofs are its own."""
    common, only_base, only_new = common_workloads(base, new)
    b, nw = _by_name(base), _by_name(new)
    findings: list[Finding] = []
    notes: list[str] = []
    for cond in conditions:
        found: list[Finding] = []
        for name in common:
            title = str(b[name].get("title", name))
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
