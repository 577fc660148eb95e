"""The sections on the user's programs: the summary, each program as lowered, the three-way
accounting and the per-kernel roofline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from roofline_report.kinds import Kind
from roofline_report.report.blocks import (
    Block,
    Break,
    BulletList,
    Cell,
    Code,
    Details,
    Inline,
    Link,
    Note,
    Section,
    Status,
    Strong,
    Table,
    text,
)
from roofline_report.report.format import Num, plural
from roofline_report.report.kernel_view import KernelRowView, KernelView
from roofline_report.report.program_view import ArgumentView, LeafRow, ProgramView
from roofline_report.report.section_parts import (
    VM,
    anchored,
    c,
    figure_of,
    num,
    optional_figure,
    p,
    table,
    yes_no,
)
from roofline_report.report.view_records import AccountingView


def _leaf_table(rows: Sequence[LeafRow], caption: str = "") -> Table:
    return table(("path", "shape", "dtype", "bytes"),
                 [(c(Code(r.path)), c(Code(r.shape)), c(r.dtype), num(r.bytes))
                  for r in rows], caption=caption)


def _tree(a: ArgumentView) -> tuple[Block, ...]:
    """One argument's tree: its leaves when few; folded when long, the top levels with counts
    and bytes, and every leaf in a fold."""
    if a.role == "static" or not a.rows or a.bare:
        return ()
    if not a.folded:
        return (_leaf_table(a.rows, caption=a.name),)
    more = (p(f"{a.omitted} more leaves are counted above but not listed."),
            ) if a.omitted != "0" else ()
    return (
        table(("top level", "arrays", "bytes", "dtypes"),
              [(c(Code(g.path)), num(Num(g.leaves)), num(g.bytes), c(g.dtypes))
               for g in a.groups], caption=f"{a.name}: top levels"),
        Details((f"{a.name}: every array ({a.leaves})",),
                (_leaf_table(a.rows), *more)),
    )


def _argument_row(a: ArgumentView) -> tuple[Cell, ...]:
    role = f" ({a.role})" if a.role else ""
    if a.role == "static":
        return (c(Code(a.name), role), c(a.type, " = ", Code(a.value)), num(Num("0")),
                num(Num("not traced")))
    held = (f" ({plural(a.held, 'leaf', 'leaves')} held as Python values, not traced)"
            if a.held != "0" else "")
    return (c(Code(a.name), role), c(a.type, held), num(Num(a.leaves)),
            num(a.bytes))


def _program(vm: VM, w: ProgramView) -> Section:
    body: list[Block] = [p(w.description)] if w.description else []
    if w.has_tree:
        rows = [_argument_row(a) for a in w.arguments]
        if w.result is not None:
            rows.append(_argument_row(replace(w.result, name="result", role="")))
        body.append(p("Arguments and result (", w.summary, "):"))
        body.append(table(("argument", "type", "arrays", "bytes"), rows))
        for a in (*w.arguments, *((w.result,) if w.result else ())):
            body += _tree(a)
    elif w.args:
        body.append(p("Arguments: ", Code(w.args), "."))
    if not w.lowering_available:
        body.append(Note(text("Lowering failed: ", w.lowering_reason), "bad"))
        return Section(w.title, tuple(body))
    body.append(p("Lowering took ", w.lower_s, " and compiling ", w.compile_s, ".",
                  f" {w.program}" if w.program else None))
    if w.check_available:
        verdict = Status("Passed", "ok") if w.check_passed else Status("Failed", "bad")
        leaf = (f" (the worst of {w.check_leaves} result arrays: {w.check_leaf})"
                if w.check_leaf else "")
        note = f" {w.check_note}." if w.check_note else ""
        body.append(p("Checked against NumPy: ", verdict, f" at {w.check_tolerance}: max "
                      "absolute error ", w.check_max_abs, ", max relative error ",
                      w.check_max_rel, f"{leaf}.{note}"))
    else:
        body.append(p("Not checked against NumPy: ", w.check_reason, "."))
    work = [
        (c("flops"), num(w.flops_analytic) if not w.model else c(w.model),
         num(w.flops_ours), num(w.flops_xla)),
        (c("bytes"), num(w.traffic), num(w.bytes_ours), num(w.xla_bytes)),
    ]
    body.append(table(("quantity", "analytic", "our HLO count", "XLA"), work,
                      caption="Work and traffic (details in the three-way accounting)"))
    t = w.timing
    if t:
        body.append(p("Time per call ", t.q1, ", the first quartile of ",
                      plural(t.samples, "sample", "samples"), " (median ", t.median,
                      ", IQR ", t.iqr, f"; {t.method})."
                      + (f" The program was {w.timed_without}: this is not its time as "
                         "written." if w.timed_without else "")
                      + (f" Other processes took {w.timed_under_load} while it was timed "
                         "(under load): its time may hold theirs." if w.timed_under_load
                         else "")))
    else:
        body.append(p("Not timed: ", w.timing_reason, "."))
    pr = w.prediction
    if pr:
        body.append(p("The model of the compiled program predicts ", pr.predicted,
                      f" on {pr.roofs}, bound by {pr.binding} (bytes: "
                      f"{pr.bytes_source}); measured: ", pr.miss, "."
                      + (f" Why: {pr.why}." if pr.why else "")
                      + (f" How it was priced: {pr.notes}." if pr.notes else "")))
    return Section(w.title, tuple(body), id=w.anchor)


def programs(vm: VM) -> Section | None:
    """The user's workloads, as the subject of the report; None when there are none."""
    if not vm.programs:
        return None
    return Section("Your programs", (
        p("Each program as it was lowered: its arguments and result as trees of arrays, the "
          "NumPy check, the work and traffic counted three ways and its time on this machine. A "
          "program without a hand-written model shows none: its least traffic is every argument "
          "read once and every result written once (argument + result bytes)."),
        *(_program(vm, w) for w in vm.programs),
    ), id="programs")


def summary(vm: VM) -> Section | None:
    """The first section of a report about programs: what to fix first in each program (its
    biggest lever first, in words built from its numbers), then every program with its time,
    prediction and miss, its share of the hardware roof, what binds it and its largest levers,
    and the figure with every program placed. None without programs of the user's."""
    s = vm.summary
    if not s.rows:
        return None
    rows = []
    for r in s.rows:
        levers: list[Inline] = []
        for i, x in enumerate(r.levers):
            levers += [Break()] if i else []
            levers += list(x.words)
        rows.append((anchored(c(Link(r.title, "#" + r.target)), r.anchor + "-summary"),
                     num(r.measured, *(f" ({r.timed_without})",)
                         if r.timed_without else ()),
                     num(r.predicted), num(r.miss), num(r.achieved),
                     num(r.of_roof), c(r.binding),
                     Cell(tuple(levers) or ("none",))))
    warning = vm.roof_warning
    # A host-bound program's time is not its kernels': said before any roof is.
    host_bound = vm.trace.host_bound if vm.trace else []
    assumed = (" These are assumed budgets, not this machine's roofs: a share of them is no "
               "headroom, and the savings held to them are as hypothetical as they are "
               "(measure the ceilings for this machine's)." if s.assumed else "")
    return Section("Summary", (
        *(Note(text(*x)) for x in host_bound),
        *((Note(warning),) if warning else ()),
        p(Strong("What to fix first"), f" (on {s.roofs}): each program's levers, ranked by "
          "the time each could save per call: a kernel below the hardware roof at its "
          "intensity, traffic above the program's minimum, pages the C allocator maps afresh "
          "on every call, dispatch and launches." + assumed),
        BulletList(tuple(text(*x) for x in s.first)),
        p("Every program: its measured time per call, the time the model predicts for it and "
          "the miss between them (the model's accuracy), its achieved rate and its share of "
          "the hardware roof at its intensity (headroom: the achieved rate ÷ the roof its "
          "work and bytes allow), what binds its prediction, and its largest levers."),
        table(("program", "measured", "predicted", "miss", "achieved", "of hardware roof",
               "binds", "largest levers: time each could save per call"), rows),
        *((p("A predicted time marked “at least” counts a while loop whose trip "
             "count is neither known to the compiler nor observed in a profiler trace once per "
             "call: a lower bound (trace the program to price every trip)."),)
          if any(r.lower_bound for r in s.rows) else ()),
        *optional_figure(vm, "measured_roofline"),
        *optional_figure(vm, "programs_roofline"),
    ), id="summary")


def _flags(flags: Sequence[tuple[str, Sequence[Inline]]]) -> Cell:
    parts: list[Inline] = []
    for i, (cause, why) in enumerate(flags):
        parts += [Break()] if i else []
        parts += [Strong(cause), ": ", *why]
    return Cell(tuple(parts), css_class="flag prose")


def _accounting(r: AccountingView) -> Section:
    if not r.rows:
        return Section(r.title, (p("Not available: ", r.reason),))
    body: list[Block] = [_accounting_wide(r)] if r.extra else [table(
        ("quantity", "analytic", "our HLO count", "XLA", "agree", "why they differ"),
        [(c(row.quantity), num(row.analytic), num(row.ours), num(row.xla),
          c(yes_no(row.agree)), _flags(row.flags)) for row in r.rows])]
    if r.efficiency:
        body.append(p("Traffic efficiency (XLA bytes ÷ minimum bytes): ", r.efficiency, ".",
                      f" {r.program}" if r.program else None))
    elif r.program:
        body.append(p(r.program))
    return Section(r.title, tuple(body))


def _accounting_wide(r: AccountingView) -> Table:
    """The accounting with two more columns: the sum over the compiled kernels and
    ``jax.experimental.roofline``'s estimate."""
    return table(
        ("quantity", "analytic", "our HLO count", "XLA", "kernel sum", "jax roofline", "agree",
         "why they differ"),
        [(c(row.quantity), num(row.analytic), num(row.ours), num(row.xla),
          num(row.kernels), num(row.jax), c(yes_no(row.agree)), _flags(row.flags))
         for row in r.rows])


def _agreement(r: AccountingView) -> str:
    if not r.rows:
        return "not available"
    differ = [row.quantity for row in r.rows if not row.agree]
    return f"{', '.join(differ)} differ" if differ else "all three agree"


def reconciliation(vm: VM) -> Section:
    body: list[Block] = [p(
        "The analytic model counts the work and the minimum traffic from shapes; our count "
        "walks the StableHLO program (following calls, multiplying loop bodies by their trip "
        "counts); XLA's cost analysis is the compiler's estimate. Where they disagree the cause "
        "is named.")]
    for i, r in enumerate(vm.reconciliation):
        sub = _accounting(r)
        body.append(sub if i == 0 else Details((f"{r.title}: {_agreement(r)}",), (sub,)))
    return Section("Three-way accounting: analytic, our HLO count, XLA", tuple(body),
                   id="reconciliation")


KERNEL_COLUMNS = ("kernel", "category", "source", "launches", "time", "share", "flops", "bytes",
                  "intensity", "achieved", "hardware roof at its intensity",
                  "of hardware roof", "binding", "predicted", "miss", "why")


def _kernel_cells(r: KernelRowView) -> tuple[Cell, ...]:
    return (c(Code(r.name)), c(r.category), c(r.source), num(r.launches),
            num(r.time), num(r.share), num(r.flops), num(r.bytes),
            num(r.intensity), num(r.achieved), num(r.roof), num(r.of_roof),
            c(r.binding), num(r.predicted), num(r.miss),
            Cell(text(r.why), css_class="prose"))


def _kernel_workload(vm: VM, k: KernelView) -> Section:
    body: list[Block] = [p(k.summary, *k.loops, " ",
                           *(k.coverage or (k.unavailable,)))]
    if k.faults:
        body.append(p(*k.faults))
    if k.levers:
        body.append(p(Strong("What to fix first"), " (the time each lever could save per "
                      "call, largest first):"))
        body.append(BulletList(tuple(text(*x) for x in k.levers)))
        body.append(p(*k.levers_note))
        if k.levers_rest:
            body.append(Details((k.levers_more,),
                                (BulletList(tuple(text(*x) for x in k.levers_rest)),)))
    body.append(table(KERNEL_COLUMNS, [_kernel_cells(r) for r in k.rows]))
    if k.rest:
        body.append(Details((k.more, " Every kernel:"),
                            (table(KERNEL_COLUMNS, [_kernel_cells(r) for r in k.rest]),)))
    if k.figure:
        body.append(figure_of(vm, k.figure))
    body.append(p(Strong("Where the time goes.")))
    body.append(table(("category", "kernels", "time", "share", "flops", "bytes"),
                      [(c(x.title), num(x.kernels), num(x.time), num(x.share),
                        num(x.flops), num(x.bytes)) for x in k.categories]))
    body.append(p(*k.reconciliation))
    return Section(k.title, tuple(body), id=k.anchor + "-kernels")


def kernels(vm: VM) -> Section | None:
    """The per-kernel roofline of every workload: the user's first and open, the catalog's
    folded."""
    views = vm.kernels
    if not views:
        return None
    body: list[Block] = [p(
        "Each compiled kernel, counted from the optimized HLO and timed from a profiler trace "
        "of repeated calls. Kernels can overlap, so shares are of the summed kernel time. "
        "Predicted: launches × (max(compute, memory, pattern) + launch) (on a CPU whose "
        "caches were measured, their sum for a kernel that reads its input in several passes "
        "past the last-level cache) from the kernel's own "
        "flops, transcendentals and the bytes it touches (and, for a kernel of a measured "
        "pattern such as a transpose, a gather or an FFT, its size at that pattern's rate), "
        "under the roofs named below each program "
        + ("(the spec sheet or the ceilings given for the machine that ran the trace, "
           "where there is one)" if vm.trace
           else "(this machine's where this run measured them)") +
        ". The binding is the largest term of that prediction, and the miss says how many "
        "times slower or faster than predicted it ran: the model's accuracy. Apart from it, "
        "each kernel's hardware roof at its intensity is what those roofs allow its work and "
        "bytes at their peaks (its products at its dtype's matmul roof, whatever their size; "
        "elementwise flops at the multiply-add rate; each function at its rate; its bytes at "
        "the fastest roof of the memory level holding them; no launch cost), whichever takes "
        "longer: its achieved rate ÷ that roof is its share of it, its headroom, above 100% "
        "only where a roof is lower than what ran (the row names which).")]
    for i, k in enumerate(views):
        sub = _kernel_workload(vm, k)
        body.append(sub if i == 0 or k.user else Details((k.title,), (sub,)))
    return Section("Per-kernel roofline", tuple(body), id="kernels", kind=Kind.MEASURED.value)

