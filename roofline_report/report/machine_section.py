"""The section on the measured machine: its environment, the seed timed, its ceilings, memory
levels and operation rates, and every timed program placed on its roofline.
"""

from __future__ import annotations

from roofline_report.analysis.speed_drift import DRIFT
from roofline_report.kinds import Kind
from roofline_report.report.blocks import Banner, Block, Cell, Note, Section, Status, text
from roofline_report.report.format import Num, percent_text, plural
from roofline_report.report.section_parts import (
    MEASURED,
    UNSTABLE,
    VM,
    anchored,
    c,
    num,
    optional_figure,
    p,
    table,
)
from roofline_report.report.view_records import RateRow, SpeedCheck


def _timed(vm: VM) -> Section:
    m = vm.measured
    t = m.timing
    if not t:
        return Section("The seed workload, timed", (p("Not measured: ", m.timing_reason),))
    body: list[Block] = [
        p("Warm samples of the compiled executable, each sample ",
          plural(t.inner, "call", "calls"), f" enqueued and blocked once ({t.method}). "
          "Compile time is reported apart, above."),
        table(("median", "min", "Q1", "Q3", "IQR", "samples", "outliers"),
              [(num(t.median), num(t.min), num(t.q1), num(t.q3), num(t.iqr),
                num(Num(t.samples)), num(Num(t.outliers)))]),
    ]
    if t.unstable:
        body.append(Note(text("This result may be unstable: the spread (IQR ÷ median) is ",
                              t.spread, ".")))
    a = m.achieved
    if a:
        body.append(p("Achieved: ", a.flops_per_s, " of matmul work and ", a.bytes_per_s,
                      " of minimum traffic.",
                      f" {m.seed_binding}" if m.seed_binding else None))
    return Section("The seed workload, timed", tuple(body))


def _speed_checks(rows: list[SpeedCheck]) -> Section:
    drifted = sum(1 for r in rows if r.drifted)
    return Section("The ceilings timed again after the programs", (
        p("Once the programs were timed, the float32 matmul ceiling at its own size, one "
          "point of each memory roof of the working-set sweep (in a cache, the largest working "
          "set the level holds; in main memory, the smallest) and the enqueued dispatch of one "
          "call (shown as its time; its ratio is the ceiling's time over the time after) were "
          "timed again as they had been: a machine slower or faster than at its ceilings moves "
          "every prediction made from them by about as much. A ratio off 1 by ",
          percent_text(DRIFT), " or more of the faster rate is said above and named on the "
          "programs it explains; ",
          plural(drifted, "check is", "checks are"), " that far off here."),
        table(("timed again", "at the ceilings", "after the programs", "ratio"),
              [(c(r.probe), num(r.before), num(r.after), num(r.ratio))
               for r in rows]),
    ))


def measured(vm: VM, *, figure: bool = True) -> Section:
    m = vm.measured
    machine = vm.machine
    banner = MEASURED if machine == "this machine" else \
        Banner(Kind.MEASURED.value, "Measured", f"{machine}, as its trace records it")
    body: list[Block] = [banner]
    if vm.run_note:
        note = str(vm.run_note)
        body.append(Note((f"{note[:1].upper()}{note[1:]}.",)))  # a sentence of its own
    body.append(Section("Environment", (
        table(None, [(c(k), c(v)) for k, v in vm.env], row_headers=True),)))
    if vm.seed or vm.teaching:
        body.append(_timed(vm))
    if not m.ceilings:
        body.append(Section(f"Ceilings of {machine}",
                            (p("Ceilings not measured: ", m.ceilings_reason),)))
        body.append(_placements(vm, figure))
        return Section(f"Measured on {machine}", tuple(body), id="measured",
                       kind=Kind.MEASURED.value)
    rows = []
    for r in m.ceilings:
        value = (num(r.value, " " if r.unstable else None,
                     UNSTABLE if r.unstable else None)
                 if r.available else Cell(text("not available: ", r.reason), numeric=True))
        rows.append((c(r.group), c(r.name), value))
    origin = m.ceilings_origin
    by_size: list[Block] = []
    if m.by_size:
        by_size = [
            p("A product's rate grows with its size: each matrix product or convolution is held "
              "to the rate measured at its size (the enqueued dispatch floor taken off each "
              "call's time, as a product inside a program pays none), interpolated in log size "
              "between the sizes below, and never above the roof in the table above. The sizes "
              "are square products, one a call; sides below the smallest of those are timed as "
              "a batch of products in one call (one such product alone is mostly dispatch) and "
              "read at the flops of one product. A matrix product of another shape is read at "
              "its own flops (tall, skinny products ran at the rate of square ones of their "
              "flops); a batched product, as one of its products; an image convolution, at the "
              "flops the convolution roof's own kernels had with a patch matrix (output "
              "positions × window × input features) of its size, its rate following that "
              "matrix more than its flops; a padded one (a \"same\" convolution's), on the "
              "padded convolutions' roof, measured on the same kernels padded by one, and a "
              "filter's gradient on the weight gradients' roof, measured on those kernels' "
              "own; one no convolution library takes, on the generic convolutions' roof, read "
              "at the elements of the window it slides."),
            table(("roof", "flops of one product", "rate measured", "rate held to"),
                  [(c(r.name) if i == 0 else c(""), num(f), num(v), num(held))
                   for r in m.by_size for i, (f, v, held) in enumerate(r.points)]),
        ]
    conditions = m.ceilings_conditions
    warning = vm.roof_warning
    body.append(Section(f"Ceilings of {machine}", (
        *((Note(warning),) if warning else ()),
        *((p(origin),) if origin else ()),
        *((p(*conditions),) if conditions else ()),
        *(Note((f"Ceilings cache: {note}.",)) for note in m.ceilings_notes),
        table(("ceiling", "kernel", "value"), rows),
        *by_size,
    )))
    if m.speed_checks:
        body.append(_speed_checks(m.speed_checks))
    body.append(_levels(vm))
    if m.rates:
        body.append(Section("Operation rates and kernel patterns", (
            p("Kernels of exp, tanh, log, square roots or sines, of the functions the "
              "compiler expands into longer code (log1p, expm1, power, tan and atan2, each at "
              "its own rate, measured in float32), and bfloat16 kernels a backend computes"
              " in float32, are bound by how many of these operations run per second, not by "
              "multiply-adds or bytes. Each rate is measured on an array held in cache, the "
              "operation applied many times inside one call; multiply-adds as a chain of several "
              "per element loaded, so that arithmetic, not the cache, bounds them. The row "
              "reduction (sum over rows of 1024 float32) is timed once per call at sizes from a "
              "few KiB past the last-level cache: its best rate per call is shown, dispatch "
              "included; a reduction kernel is charged the rate measured nearest its size, with "
              "the dispatch floor taken off. Kernels of a pattern that runs below the streaming "
              "roofs (a transposing copy, alone, fused into other work or fused with a "
              "broadcast over rows of a power of two bytes, a reduction along a non-minor "
              "axis, a reduction that keeps an axis "
              "between two it reduces, an argmax, a gather, a scatter, a sort, a top-k, a dot "
              "the compiler leaves to its loop emitter, a conversion of element type alone "
              "in its kernel) are "
              "charged the rate of their pattern at their size (a sort's in comparisons, "
              "n ⌈log2 n⌉ for n keys; a reduction keeping an axis between reduced ones in the "
              "contiguous runs it reads; a top-k at the roof measured on rows nearest its own, "
              "each call of it on operands of other values in turn (a branch predictor "
              "learns an operand it meets again); "
              "a gather at the roof measured on the contiguous run per index nearest its own, "
              "then on the table nearest its own (single elements from tables of fixed "
              "sizes); a transpose fused with a broadcast at its rate for the square of the "
              "source rows each run of its output reads; "
              "a windowed maximum outside the library (a reduce-window) in the window "
              "elements it visits times the arrays it reduces together, at the roof measured "
              "on the count of arrays nearest its own: a max pool's, or a max pool's "
              "gradient's window of the values and their indices; a windowed sum in its "
              "window elements; "
              "an FFT, and a product of one column with its matrix, at the roof measured "
              "with its operand as its own comes, a program's argument or computed by a "
              "kernel before it, that kernel's time taken off); "
              "a rate measured beside one, not used as a roof, says so." + _rate_kinds(m.rates)),
            table(("operation", "sizes measured (a call)", "rate"),
                  [(c(r.name, "" if r.roof else " (beside the roof, not used by the "
                    "model)"), c(r.sizes),
                    num(r.value, " " if r.unstable else None,
                        UNSTABLE if r.unstable else None)
                    if r.available
                    else Cell(text("not available: ", r.reason), numeric=True))
                   for r in m.rates]),
        )))
    body.append(_placements(vm, figure))
    return Section(f"Measured on {machine}", tuple(body), id="measured",
                   kind=Kind.MEASURED.value)


def _rate_kinds(rates: list[RateRow]) -> str:
    """The sentences on the rates measured on one thread and from main memory, where the
    machine's ceilings hold such rates ("" otherwise)."""
    measured = [r for r in rates if r.available]
    out = ""
    if any(r.one_thread for r in measured):
        out += (" A rate marked (one thread) was measured again over a loop the compiler "
                "leaves on one worker thread: a kernel it leaves on one thread is charged that "
                "rate, not a share of the rate split across the cores.")
    if any(r.from_memory for r in measured):
        out += (" The 2-D swap with its operand from main memory took each call's operand in "
                "turn from more than the caches hold: a transposing copy of a program's "
                "argument, in a program whose data outgrow the last-level cache, is charged "
                "that rate for the elements it reads from the arguments.")
    return out


def _placements(vm: VM, figure: bool = True) -> Block:
    m = vm.measured
    if not m.placement:
        return Section("Programs on the roofline", (p("No program of this run was timed."),))
    return Section("Programs on the roofline", (
        p(f"Every timed program, on {m.placement_roofs}, at its compiled-program "
          "intensity: the flops its kernels count over the bytes they touch. ",
          m.model_text),
        table(
            ("program", "intensity", "achieved", "hardware roof at its intensity",
             "of hardware roof", "binding (largest term)", "predicted time", "measured time",
             "miss", "largest lever: time it could save per call", "why they differ"),
            [(anchored(c(r.title), r.anchor + "-roofline"), num(r.intensity),
              num(r.achieved), num(r.roof), num(r.of_roof), c(r.binding),
              num(r.predicted), num(r.measured), num(r.miss), c(*r.lever),
              Cell(text(r.why), css_class="prose"))
             for r in m.placement]),
        *((p(*m.accuracy),) if m.accuracy else ()),
        *((*optional_figure(vm, "measured_roofline"),
           *optional_figure(vm, "programs_roofline")) if figure else ())))


def _levels(vm: VM) -> Section:
    m = vm.measured
    body: list[Block] = [p(
        "A working-set sweep streams over arrays of growing size: while they fit in a cache the "
        "stream runs at that cache's bandwidth, past it at the next level's. ", m.level_rule,
        (" The caches this machine reports: " + ", ".join(m.caches) + ".")
        if m.caches else None)]
    if m.levels:
        body.append(table(("level", "kernel", "working sets", "bandwidth", "plausible"),
                          [(c(r.level), c(r.kernel), c(r.range), num(r.value),
                            c(Status("marked unstable", "warn"), ": ", r.unstable)
                            if r.unstable else c("yes"))
                           for r in m.levels]))
    else:
        body.append(p("Memory levels not available: ", m.levels_reason, "."))
    body.extend(optional_figure(vm, "working_set"))
    return Section("Memory levels", tuple(body))
