"""One of the user's programs as the subject of the report (no jax): its arguments and result as
trees of arrays, its lowering and compile times, the optimized program in a sentence, its
counts, the check of its result, its timing (and the options of its jit it was timed without),
and the model's prediction beside the measured time. Display strings of numbers the analysis
computed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from roofline_report.analysis.explain import share_of_cores
from roofline_report.analysis.records import Program
from roofline_report.kinds import Kind
from roofline_report.report import meta
from roofline_report.report.format import (
    Num,
    count,
    decimal,
    miss_text,
    n,
    percent_text,
    plural,
    ratio,
)
from roofline_report.report.roof_words import prediction_cells, roofs_words
from roofline_report.results import schema
from roofline_report.units import format_si

__all__ = ["MODEL_NOTES", "NO_MODEL", "ArgumentView", "GroupRow", "LeafRow", "ProgramPrediction",
           "ProgramView", "TimingView", "has_model", "model_notes", "program_sentence",
           "program_view", "timed_without", "timing_rows", "tolerance", "traffic_num",
           "tree_summary"]

M = Kind.MEASURED
A = Kind.ANALYTIC

NO_MODEL = "no analytic model"
#: Leaves an argument may have before its tree is folded to its top levels.
FOLD_AFTER = 8
#: Rows of a folded tree's top levels at most (the rest are summed in one row).
MAX_GROUPS = 24
_PATH_PART = re.compile(r"\[[^\]]*\]|\.[^.\[]+")


#: How each option of a user's jit that a program was timed without is named on the page.
_JIT_OPTION_WORDS = {
    "jit_options": "its jit's options (this jax does not expose them)",
    "in_layouts": "its jit's in_layouts", "out_layouts": "its jit's out_layouts",
    "device": "its jit's device=", "backend": "its jit's backend=",
    "in_shardings": "its jit's in_shardings", "out_shardings": "its jit's out_shardings",
}


def timed_without(p: Program) -> str:
    """'timed without its jit's in_shardings and out_shardings', or '' when the program was
    timed as written."""
    if not p.timed_without:
        return ""
    names = [_JIT_OPTION_WORDS.get(x, f"its jit's {x}") for x in p.timed_without]
    if len(names) > 1 and all(x.startswith("its jit's ") for x in names):
        names = [names[0], *(x.removeprefix("its jit's ") for x in names[1:])]
    joined = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"timed without {joined}"


def tree_summary(tree: schema.ArgumentTree, *, result: bool = False) -> str:
    """The traced arguments' count, arrays and bytes; with ``result``, the result's after them
    (a tree's own counts cover its arguments only)."""
    nodes = [a for a in tree.arguments if not a.static]
    out = (f"{plural(len(nodes), 'argument', 'arguments')}, "
           f"{plural(tree.leaf_count, 'array', 'arrays')}, "
           f"{format_si(tree.bytes, 'B')}")
    shown = tree.result if result else None
    if shown is not None:
        out += (f"; the result {plural(shown.leaf_count, 'array', 'arrays')}, "
                f"{format_si(shown.bytes, 'B')}")
    return out


def _path_parts(path: str) -> list[str]:
    return _PATH_PART.findall(path) or ([path] if path else [])


@dataclass(frozen=True, slots=True)
class GroupRow:
    """One top level of a folded argument tree."""

    path: str
    leaves: str
    bytes: Num
    dtypes: str


@dataclass(frozen=True, slots=True)
class LeafRow:
    """One array of an argument tree."""

    path: str
    shape: str
    dtype: str
    bytes: Num


def _groups(leaves: Sequence[schema.ArgumentLeaf]) -> list[GroupRow]:
    """The top levels of a tree: the shallowest depth (1 to 3) with at least 3 groups, each
    with its leaf count, bytes and dtypes."""
    chosen: dict[str, list[schema.ArgumentLeaf]] = {}
    for depth in (1, 2, 3):
        groups: dict[str, list[schema.ArgumentLeaf]] = {}
        for leaf in leaves:
            parts = _path_parts(leaf.path)
            groups.setdefault("".join(parts[:depth]) or "(the argument itself)", []).append(leaf)
        chosen = groups
        if len(groups) >= 3:
            break
    items = sorted(chosen.items(), key=lambda kv: -sum(x.bytes for x in kv[1]))
    rows = [_group_row(prefix, members) for prefix, members in items[:MAX_GROUPS]]
    rest = [x for _, members in items[MAX_GROUPS:] for x in members]
    if rest:
        rows.append(_group_row(f"{len(items) - MAX_GROUPS} more", rest))
    return rows


def _group_row(prefix: str, members: Sequence[schema.ArgumentLeaf]) -> GroupRow:
    return GroupRow(path=prefix, leaves=str(len(members)),
                    bytes=n(sum(x.bytes for x in members), "B", A),
                    dtypes=", ".join(sorted({x.dtype for x in members})))


def _leaf_row(leaf: schema.ArgumentLeaf) -> LeafRow:
    return LeafRow(path=leaf.path or "(the argument itself)",
                   shape=str(list(leaf.shape)), dtype=leaf.dtype,
                   bytes=n(leaf.bytes, "B", A))


def _bare(leaves: Sequence[schema.ArgumentLeaf]) -> bool:
    """An argument that is one array (no tree to show)."""
    return len(leaves) == 1 and not leaves[0].path


def _type_name(name: str, leaves: int) -> str:
    return "array" if name in ("ArrayImpl", "ndarray", "ShapeDtypeStruct") and leaves == 1 \
        else name


@dataclass(frozen=True, slots=True)
class ArgumentView:
    """One argument (or the result) of a program, as a tree of arrays."""

    name: str
    role: str
    type: str
    bare: bool
    value: str
    leaves: str
    bytes: Num
    held: str
    omitted: str
    folded: bool
    groups: list[GroupRow]
    rows: list[LeafRow]


def _argument_view(node: schema.ArgumentNode) -> ArgumentView:
    leaves = node.leaves
    leaf_count = node.leaf_count
    role = "static" if node.static else "keyword" if node.keyword else ""
    if node.donated:
        role = ", ".join(x for x in (role, "donated by your jit, and by every timed call")
                         if x)
    return ArgumentView(
        name=node.name, role=role,
        type=(f"{leaves[0].dtype}{list(leaves[0].shape)}" if _bare(leaves)
              else _type_name(node.type, leaf_count)),
        bare=_bare(leaves), value=node.value, leaves=str(leaf_count),
        bytes=n(node.bytes, "B", A), held=str(node.held_leaves),
        omitted=str(node.omitted), folded=leaf_count > FOLD_AFTER,
        groups=_groups(leaves) if leaf_count > FOLD_AFTER else [],
        rows=[_leaf_row(x) for x in leaves],
    )


def traffic_num(p: Program) -> Num:
    """The least traffic shown for a program, labelled with its basis."""
    if p.minimum_bytes is None:
        return Num(NO_MODEL)
    if p.minimum_basis == "analytic minimum traffic":
        return n(p.minimum_bytes, "B", A)
    return Num(f"{format_si(p.minimum_bytes, 'B')} ({p.minimum_basis})", A.value)


def has_model(p: Program) -> bool:
    """Whether the program has a hand model (its analytic work and minimum traffic)."""
    return isinstance(p.workload.analytic, schema.Analytic)


@dataclass(frozen=True, slots=True)
class TimingView:
    """A program's timing samples, summarised."""

    median: Num
    min: Num
    q1: Num
    q3: Num
    iqr: Num
    samples: str
    outliers: str
    inner: str
    unstable: bool
    spread: str
    method: str


def timing_rows(p: Program) -> TimingView | None:
    s = p.timing
    if s is None:
        return None
    timed = p.workload.timing
    timing = timed if isinstance(timed, schema.Timing) else None
    return TimingView(
        median=n(s.median, "s", M), min=n(s.min, "s", M), q1=n(s.q1, "s", M),
        q3=n(s.q3, "s", M), iqr=n(s.iqr, "s", M), samples=str(s.n),
        outliers=str(s.outliers), inner=str(timing.inner_reps if timing is not None else 1),
        unstable=s.unstable, spread=percent_text(s.spread),
        method=timing.method if timing is not None else "",
    )


def tolerance(check: schema.Check | schema.Unavailable | None) -> str:
    """The check's tolerances (0 for a check not run)."""
    rtol, atol = (check.rtol, check.atol) if isinstance(check, schema.Check) else (0, 0)
    return f"rtol = {decimal(float(rtol), 3)}, atol = {decimal(float(atol), 3)}"


def program_sentence(compiled: schema.Compiled | None) -> str:
    """One sentence on the optimized program: kernels, fusions, custom calls, loops."""
    if compiled is None:
        return ""
    parts = [plural(compiled.kernels, "kernel launch", "kernel launches")]
    fusions = compiled.fusions.count
    if fusions:
        parts.append(plural(fusions, "fusion", "fusions"))
    calls = sorted({x.target for x in compiled.custom_calls})
    if calls:
        parts.append("custom calls " + ", ".join(calls))
    loops = [x.known_trip_count for x in compiled.while_loops]
    if loops:
        parts.append("loops with trip counts " + ", ".join(str(t) for t in loops))
    colls = compiled.collectives
    if colls:
        parts.append(plural(len(colls), "collective", "collectives"))
    return "The optimized program: " + "; ".join(parts) + "."


MODEL_NOTES = 4  # notes of the model named on a program's paragraph; the rest counted


def model_notes(notes: Sequence[str]) -> str:
    """What the model says of how it priced a program (a rate it lacked, work it charged
    beyond the count, a kernel on fewer threads than its rates), the first
    :data:`MODEL_NOTES` in the order the kernels gave them, the others counted; "" for none."""
    shown = "; ".join(notes[:MODEL_NOTES])
    left = len(notes) - MODEL_NOTES
    return shown + (f"; and {plural(left, 'more note', 'more notes')}" if left > 0 else "")


@dataclass(frozen=True, slots=True)
class ProgramPrediction:
    """The model's prediction for a program, beside its measured time."""

    predicted: Num
    miss: Num
    binding: str
    bytes_source: str
    roofs: str
    why: str
    notes: str


@dataclass(frozen=True, slots=True)
class ProgramView:
    """One of the user's programs as the subject of the report."""

    title: str
    description: str
    anchor: str
    has_tree: bool
    arguments: list[ArgumentView]
    result: ArgumentView | None
    summary: str
    args: str
    lowering_available: bool
    lowering_reason: str
    lower_s: Num
    compile_s: Num
    program: str
    model: str
    flops_analytic: Num
    flops_ours: Num
    flops_xla: Num
    traffic: Num
    xla_bytes: Num
    bytes_ours: Num
    check_available: bool
    check_reason: str
    check_passed: bool
    check_max_abs: Num
    check_max_rel: Num
    check_tolerance: str
    check_note: str
    check_leaf: str
    check_leaves: str
    timing: TimingView | None
    timing_reason: str
    timed_without: str
    timed_under_load: str  # '45% of the 2 cores' others took while it was timed; '' unloaded
    prediction: ProgramPrediction | None


def program_view(p: Program) -> ProgramView:
    """One of the user's programs as the subject of the report."""
    w = p.workload
    tree = w.arguments
    low = w.lowering
    check = w.check
    passed = check if isinstance(check, schema.Check) else None
    ours = w.hlo_count if isinstance(w.hlo_count, schema.HloCount) else None
    xla = w.xla.values if w.xla is not None else {}
    analytic = w.analytic if isinstance(w.analytic, schema.Analytic) else None
    cells = prediction_cells(p.prediction)
    return ProgramView(
        title=p.title, description=w.description,
        anchor=meta.workload_anchor(p.name) + "-program",
        has_tree=tree is not None,
        arguments=[_argument_view(a) for a in tree.arguments] if tree is not None else [],
        result=_argument_view(tree.result) if tree is not None and tree.result is not None
        else None,
        summary=tree_summary(tree, result=True) if tree is not None else "",
        args=", ".join(f"{a.dtype}{a.shape}" for a in w.args),
        lowering_available=low.available,
        lowering_reason=low.reason,
        lower_s=n(low.lower_s, "s", M), compile_s=n(low.compile_s, "s", M),
        program=program_sentence(w.compiled),
        model="" if has_model(p) else NO_MODEL,
        flops_analytic=count(analytic.flops if analytic is not None else None, A),
        flops_ours=count(ours.flops if ours is not None else None, A),
        flops_xla=count(xla.get("flops"), Kind.COMPILER_ESTIMATE),
        traffic=traffic_num(p),
        xla_bytes=n(xla.get("bytes accessed"), "B", Kind.COMPILER_ESTIMATE),
        bytes_ours=n(ours.minimum_bytes if ours is not None else None, "B", A),
        check_available=passed is not None,
        check_reason=check.reason if isinstance(check, schema.Unavailable) else "",
        check_passed=passed is not None and passed.passed,
        check_max_abs=ratio(passed.max_abs_error if passed is not None else None, M, 3),
        check_max_rel=ratio(passed.max_rel_error if passed is not None else None, M, 3),
        check_tolerance=tolerance(check) if check is not None else "",
        check_note=passed.note if passed is not None else "",
        check_leaf=(passed.leaf if passed is not None else None) or "",
        check_leaves=str((passed.leaves if passed is not None else None) or ""),
        timing=timing_rows(p), timing_reason=p.timing_reason or "not measured",
        timed_without=timed_without(p),
        timed_under_load=share_of_cores(p.timing_load)
        if p.timing_load is not None and p.timed_under_load is not None else "",
        prediction=None if p.prediction is None or p.miss is None else ProgramPrediction(
            predicted=cells.predicted, miss=miss_text(p.miss),
            binding=cells.binding, bytes_source=p.prediction.bytes_source,
            roofs=roofs_words(p.kernels.roofs) if p.kernels else "",
            why=p.why, notes=model_notes(p.prediction.notes)),
    )
