"""Each section of the report, defined once: a function from the view model to a
:class:`~roofline_report.report.blocks.Section`. Both formats are rendered from these.

The view model is :func:`roofline_report.report.views.view_model`'s dict of display strings and
:class:`~roofline_report.report.format.Num` values. A figure a section always shows is looked up
with :func:`_figure`, which raises :class:`MissingFigure`; one that a run may lack is looked up
with :func:`_optional_figure`, and :meth:`Document.check` then fails on any figure produced but
not placed, so a renamed figure is an error in either case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from roofline_report.ingest.view import trace_section
from roofline_report.kinds import Kind
from roofline_report.report.blocks import (
    Aside,
    Banner,
    Block,
    Break,
    BulletList,
    Cell,
    Code,
    CodeBlock,
    Details,
    Document,
    Emph,
    Figure,
    Group,
    Inline,
    Link,
    Marker,
    Note,
    Paragraph,
    Section,
    Status,
    Strong,
    Table,
    text,
)
from roofline_report.report.format import Num, plural

VM = Mapping[str, Any]
SOLUTION = "Reference solution (try the exercise before reading this)"
UNSTABLE = Status("(may be unstable)", "warn")


class MissingFigure(LookupError):
    """A section asked for a figure the view model does not hold."""


def _figure(vm: VM, name: str) -> Figure:
    try:
        return Figure(vm["figures"][name])
    except KeyError:
        raise MissingFigure(f"the report shows the figure {name!r}, which was not produced "
                            f"(produced: {sorted(vm['figures'])})") from None


def _optional_figure(vm: VM, name: str) -> tuple[Figure, ...]:
    f = vm["figures"].get(name)
    return (Figure(f),) if f is not None else ()


def p(*parts: Inline | None) -> Paragraph:
    """A paragraph of inline parts (None and '' dropped)."""
    return Paragraph(text(*parts))


def c(*parts: Inline | None) -> Cell:
    """A text cell."""
    return Cell(text(*parts))


def num(x: Num, *after: Inline | None) -> Cell:
    """A numeric cell: the number, then anything after it."""
    return Cell(text(x, *after), numeric=True)


def table(header: Sequence[str] | None, rows: Sequence[Sequence[Cell]], *, caption: str = "",
          row_headers: bool = False) -> Table:
    return Table(tuple(header) if header is not None else None,
                 tuple(tuple(r) for r in rows), caption, row_headers)


def yes_no(ok: bool) -> Status:
    return Status("yes", "ok") if ok else Status("no", "bad")


HYPOTHETICAL = Banner(Kind.HYPOTHETICAL.value, "Hypothetical", "assumed budgets, not a device")
MEASURED = Banner(Kind.MEASURED.value, "Measured", "this machine, this run")


# --- the seed, step by step -----------------------------------------------------------------


def lowered(vm: VM) -> Section:
    s = vm["seed"]
    body: list[Block] = []
    if not s:
        body.append(p("The seed workload is not part of this run."))
        return Section("Lowered computation", tuple(body), id="lowered")
    body.append(p("The workload is ", Code("tanh(a @ b)"), " with ", Code(s["args"]),
                  ", built as in the seed (", Code("arange / 512"), " and ",
                  Code("arange / 128"), "). Lowering specialises it to these shapes and dtypes: "
                  "the StableHLO below is the operation and shape contract."))
    if s["lowering_available"]:
        body.append(Section("Operations present (found by walking the MLIR module)", (
            table(("required operation", "present"),
                  [(c(Code(op)), c(yes_no(ok))) for op, ok in s["required"]]),
            table(("operation", "count"),
                  [(c(Code(op)), Cell((str(k),), numeric=True)) for op, k in s["ops"]]),
        )))
        body.append(Details(("StableHLO text",), (CodeBlock(s["stablehlo_text"], "mlir"),),
                            open=True))
    else:
        body.append(Note(text("Lowering failed: ", s["lowering_reason"]), "bad"))
    return Section("Lowered computation", tuple(body), id="lowered")


def _check_sentence(check: Mapping[str, Any]) -> Paragraph:
    verdict = Status("Passed", "ok") if check["passed"] else Status("Failed", "bad")
    note = f" {check['note']}." if check["note"] else ""
    return p(verdict, f" at {check['tolerance']}: max absolute error ", check["max_abs"],
             ", max relative error ", check["max_rel"], ".", note)


def compiled(vm: VM) -> Section:
    s = vm["seed"]
    if not (s and s["lowering_available"]):
        return Section("Compiled executable", (p("No compiled executable in this run."),),
                       id="compiled")
    ce = Kind.COMPILER_ESTIMATE.value
    check = s["check"]
    checked: Block = (_check_sentence(check) if check["available"]
                      else Note(text("Not checked: ", check["reason"]), "bad"))
    xla: tuple[Block, ...]
    if s["xla_available"]:
        xla = (
            p("A compiler estimate for this backend and jax version: it is neither a "
              "measurement nor the minimum the computation needs (see ",
              Link("three-way accounting", "#reconciliation"), ")."),
            table(("key", "value"), [(c(k), num(v)) for k, v in s["xla"]]),
            Details(("All keys XLA returned",),
                    (table(("key", "value"), [(c(Code(k)), num(v)) for k, v in s["xla_raw"]]),)),
        )
    else:
        xla = (p("Not available: ", s["xla_reason"]),)
    memory: tuple[Block, ...] = (
        (table(("buffer", "size"), [(c(k), num(v)) for k, v in s["memory"]]),)
        if s["memory_available"] else (p("Not available."),))
    return Section("Compiled executable", (
        Section("Result checked against NumPy", (checked,)),
        p("Lowering took ", s["lower_s"], " and compiling ", s["compile_s"],
          ", measured apart from the run time."),
        Section(("XLA's cost analysis ", Marker(ce)), xla),
        Section(("Memory analysis ", Marker(ce)), memory),
        Details(("Optimized HLO (source metadata removed)",),
                (CodeBlock(s["compiled_text"], "text"),)),
    ), id="compiled")


def model(vm: VM) -> Section:
    b, m = vm["budgets"], vm["model"]
    return Section("Hypothetical model", (
        HYPOTHETICAL,
        p("The contract of ", Code("C[m,n] = A[m,k] @ B[k,n]"), ": work 2·m·k·n flops "
          "(multiply-add; the tanh epilogue is not counted), minimum traffic "
          "itemsize·(m·k + k·n + m·n) bytes (each operand read once, the result written once), "
          "intensity = work ÷ traffic. For square float32 matrices the intensity is "
          "2n³ ÷ (3·4·n²) = n/6."),
        p("Budgets: compute ", b["peak"], " and bandwidth ", b["bandwidth"], " (", b["source"],
          "). The ridge point, where bandwidth × intensity reaches the compute budget, is at ",
          m["ridge"], *m["ridge_size"]),
        table(("n", "flops", "minimum bytes", "intensity", "bandwidth × intensity", "ceiling",
               "bound"),
              [(c(r["n"]), num(r["flops"]), num(r["bytes"]), num(r["intensity"]),
                num(r["memory_ceiling"]), num(r["ceiling"]), c(r["bound"]))
               for r in m["rows"]]),
        _figure(vm, "seed_roofline"),
    ), id="model", kind=Kind.HYPOTHETICAL.value)


def experiment(vm: VM) -> Section:
    return Section("Experiment: double the assumed data movement", (
        HYPOTHETICAL,
        p("The work is unchanged; doubling the bytes moved halves the intensity. Below the "
          "ridge the ceiling halves with it; at or above the ridge after halving, the compute "
          "budget still binds."),
        table(("n", "intensity", "halved intensity", "ceiling", "revised ceiling",
               "revised ÷ ceiling"),
              [(c(r["n"]), num(r["intensity"]), num(r["reduced"]), num(r["ceiling"]),
                num(r["revised"]), num(r["ratio"])) for r in vm["experiment"]["rows"]]),
        _figure(vm, "doubled_traffic"),
    ), id="experiment", kind=Kind.HYPOTHETICAL.value)


def exercise(vm: VM) -> Section:
    x = vm["exercise"]
    m, k, n = x["m"], x["k"], x["n"]
    return Section("Exercise", (
        p(Strong(f"Derive the work and minimum traffic for shapes {x['shapes']}"),
          f" (float32, itemsize {x['itemsize']}): how many flops, how many bytes at minimum, "
          "what intensity, and is it compute- or memory-bound under the budgets of ", x["peak"],
          " and ", x["bandwidth"], "?"),
        Details((SOLUTION,), (
            p(f"Work: 2 · {m} · {k} · {n} = ", x["flops"], " flops."),
            p(f"Minimum traffic: {x['itemsize']} · ({m}·{k} + {k}·{n} + {m}·{n}) = ", x["bytes"],
              " bytes."),
            p("Intensity: ", x["intensity"], f" (that is {x['fraction']})."),
            p("Bandwidth × intensity = ", x["bw_times_intensity"],
              f", {x['relation']} the compute budget of ", x["peak"], ": the exercise is ",
              Strong(f"{x['bound']}-bound"), "."),
        )),
    ), id="exercise")


def _timed(vm: VM) -> Section:
    m = vm["measured"]
    t = m["timing"]
    if not t:
        return Section("The seed workload, timed", (p("Not measured: ", m["timing_reason"]),))
    body: list[Block] = [
        p("Warm samples of the compiled executable, each sample ",
          plural(t["inner"], "call", "calls"), f" enqueued and blocked once ({t['method']}). "
          "Compile time is reported apart, above."),
        table(("median", "min", "Q1", "Q3", "IQR", "samples", "outliers"),
              [(num(t["median"]), num(t["min"]), num(t["q1"]), num(t["q3"]), num(t["iqr"]),
                num(Num(t["samples"])), num(Num(t["outliers"])))]),
    ]
    if t["unstable"]:
        body.append(Note(text("This result may be unstable: the spread (IQR ÷ median) is ",
                              t["spread"], ".")))
    a = m["achieved"]
    if a:
        body.append(p("Achieved: ", a["flops_per_s"], " of matmul work and ", a["bytes_per_s"],
                      " of minimum traffic.",
                      f" {m['seed_binding']}" if m["seed_binding"] else None))
    return Section("The seed workload, timed", tuple(body))


def measured(vm: VM, *, figure: bool = True) -> Section:
    m = vm["measured"]
    body: list[Block] = [MEASURED]
    if vm["run_note"]:
        body.append(Note((f"{vm['run_note']}.",)))
    body.append(Section("Environment", (
        table(None, [(c(k), c(v)) for k, v in vm["env"]], row_headers=True),)))
    if vm["seed"] or vm["parts"]["teaching"]:
        body.append(_timed(vm))
    if not m["ceilings"]:
        body.append(Section("Ceilings of this machine",
                            (p("Ceilings not measured: ", m["ceilings_reason"]),)))
        body.append(_placements(vm, figure))
        return Section("Measured on this machine", tuple(body), id="measured",
                       kind=Kind.MEASURED.value)
    rows = []
    for r in m["ceilings"]:
        value = (num(r["value"], " " if r["unstable"] else None,
                     UNSTABLE if r["unstable"] else None)
                 if r["available"] else Cell(text("not available: ", r["reason"]), numeric=True))
        rows.append((c(r["group"]), c(r["name"]), value))
    origin = m.get("ceilings_origin", "")
    body.append(Section("Ceilings of this machine", (
        *((p(origin),) if origin else ()),
        *(Note((f"Ceilings cache: {note}.",)) for note in m.get("ceilings_notes", ())),
        table(("ceiling", "kernel", "value"), rows),
    )))
    body.append(_levels(vm))
    if m["rates"]:
        body.append(Section("Operation rates and kernel patterns", (
            p("Kernels of exp, tanh or log, and bfloat16 kernels a backend computes in float32, "
              "are bound by how many of these operations run per second, not by multiply-adds "
              "or bytes. Each rate is measured on an array held in cache, the operation applied "
              "many times inside one call; multiply-adds as a chain of several per element "
              "loaded, so that arithmetic, not the cache, bounds them. The row reduction "
              "(sum over rows of 1024 float32) is timed once per call at sizes from a few KiB "
              "past the last-level cache: its best rate per call is shown, dispatch included; a "
              "reduction kernel is charged the rate measured nearest its size, with the "
              "dispatch floor taken off. Kernels of a pattern that runs below the streaming "
              "roofs (a transposing copy, a reduction along a non-minor axis, a gather, a "
              "scatter, a dot the compiler leaves to its loop emitter) are charged the rate of "
              "their pattern at their size; a rate measured beside one, not used as a roof, "
              "says so."),
            table(("operation", "rate"),
                  [(c(r["name"], "" if r["roof"] else " (beside the roof, not used by the "
                    "model)"),
                    num(r["value"], " " if r["unstable"] else None,
                        UNSTABLE if r["unstable"] else None)
                    if r["available"]
                    else Cell(text("not available: ", r["reason"]), numeric=True))
                   for r in m["rates"]]),
        )))
    body.append(_placements(vm, figure))
    return Section("Measured on this machine", tuple(body), id="measured",
                   kind=Kind.MEASURED.value)


MODEL_TEXT = (
    "The predicted time is the model of the compiled program, kernel by kernel: Σ over its "
    "kernels of trips × max(compute, memory, launch) + the dispatch floor of one call, where a "
    "kernel's compute charges matrix-product flops to the matmul roof of its dtype at the "
    "product's size, convolution flops to the convolution roof, conversions to the conversion "
    "rate, other flops to the measured multiply-add rate and each transcendental to its "
    "function's rate, and its memory time is the bytes it touches at the bandwidth of the "
    "memory level that holds them. Its roof is the rate that prediction implies (flops ÷ "
    "predicted time); the share of roof is the achieved rate ÷ that roof, which is the "
    "predicted time ÷ the measured time; the binding is the prediction's largest term. A "
    "prediction off by more than 50%, or a program above its roof, gets the likeliest reason "
    "from the evidence.")


def _placements(vm: VM, figure: bool = True) -> Block:
    m = vm["measured"]
    if not m["placement"]:
        return Section("Programs on the roofline", (p("No program of this run was timed."),))
    return Section("Programs on the roofline", (
        p(f"Every timed program, on {m['placement_roofs']}, at its compiled-program "
          "intensity: the flops its kernels count over the bytes they touch. ", MODEL_TEXT),
        table(
            ("program", "intensity", "achieved", "roof (its prediction's)", "of roof",
             "binding (largest term)", "predicted time", "measured time", "miss",
             "why they differ"),
            [(_anchored(c(r["title"]), r["anchor"] + "-roofline"), num(r["intensity"]),
              num(r["achieved"]), num(r["roof"]), num(r["of_roof"]), c(r["binding"]),
              num(r["predicted"]), num(r["measured"]), num(r["miss"]), c(r["why"]))
             for r in m["placement"]]),
        *((p(*m["accuracy"]),) if m["accuracy"] else ()),
        *((*_optional_figure(vm, "measured_roofline"),
           *_optional_figure(vm, "programs_roofline")) if figure else ())))


def _levels(vm: VM) -> Section:
    m = vm["measured"]
    body: list[Block] = [p(
        "A working-set sweep streams over arrays of growing size: while they fit in a cache the "
        "stream runs at that cache's bandwidth, past it at the next level's. ", m["level_rule"],
        (" The caches this machine reports: " + ", ".join(m["caches"]) + ".")
        if m["caches"] else None)]
    if m["levels"]:
        body.append(table(("level", "kernel", "working sets", "bandwidth", "plausible"),
                          [(c(r["level"]), c(r["kernel"]), c(r["range"]), num(r["value"]),
                            c(Status("marked unstable", "warn"), ": ", r["unstable"])
                            if r["unstable"] else c("yes"))
                           for r in m["levels"]]))
    else:
        body.append(p("Memory levels not available: ", m["levels_reason"], "."))
    body.extend(_optional_figure(vm, "working_set"))
    return Section("Memory levels", tuple(body))


def _flags(flags: Sequence[tuple[str, str]]) -> Cell:
    parts: list[Inline] = []
    for i, (cause, why) in enumerate(flags):
        parts += [Break()] if i else []
        parts += [Strong(cause), f": {why}"]
    return Cell(tuple(parts), css_class="flag")


def _accounting(r: Mapping[str, Any]) -> Section:
    if not r["rows"]:
        return Section(r["title"], (p("Not available: ", r["reason"]),))
    body: list[Block] = [_accounting_wide(r)] if r.get("extra") else [table(
        ("quantity", "analytic", "our HLO count", "XLA", "agree", "why they differ"),
        [(c(row["quantity"]), num(row["analytic"]), num(row["ours"]), num(row["xla"]),
          c(yes_no(row["agree"])), _flags(row["flags"])) for row in r["rows"]])]
    if r["efficiency"]:
        body.append(p("Traffic efficiency (XLA bytes ÷ minimum bytes): ", r["efficiency"], ".",
                      f" {r['program']}" if r["program"] else None))
    elif r["program"]:
        body.append(p(r["program"]))
    return Section(r["title"], tuple(body))


def _accounting_wide(r: Mapping[str, Any]) -> Table:
    """The accounting with two more columns: the sum over the compiled kernels and
    ``jax.experimental.roofline``'s estimate."""
    return table(
        ("quantity", "analytic", "our HLO count", "XLA", "kernel sum", "jax roofline", "agree",
         "why they differ"),
        [(c(row["quantity"]), num(row["analytic"]), num(row["ours"]), num(row["xla"]),
          num(row["kernels"]), num(row["jax"]), c(yes_no(row["agree"])), _flags(row["flags"]))
         for row in r["rows"]])


def _agreement(r: Mapping[str, Any]) -> str:
    if not r["rows"]:
        return "not available"
    differ = [row["quantity"] for row in r["rows"] if not row["agree"]]
    return f"{', '.join(differ)} differ" if differ else "all three agree"


def reconciliation(vm: VM) -> Section:
    body: list[Block] = [p(
        "The analytic model counts the work and the minimum traffic from shapes; our count "
        "walks the StableHLO program (following calls, multiplying loop bodies by their trip "
        "counts); XLA's cost analysis is the compiler's estimate. Where they disagree the cause "
        "is named.")]
    for i, r in enumerate(vm["reconciliation"]):
        sub = _accounting(r)
        body.append(sub if i == 0 else Details((f"{r['title']}: {_agreement(r)}",), (sub,)))
    return Section("Three-way accounting: analytic, our HLO count, XLA", tuple(body),
                   id="reconciliation")


KERNEL_COLUMNS = ("kernel", "category", "source", "launches", "time", "share", "flops", "bytes",
                  "intensity", "achieved", "roof (its prediction's)", "of roof", "binding",
                  "predicted", "miss", "why")


def _kernel_cells(r: Mapping[str, Any]) -> tuple[Cell, ...]:
    return (c(Code(r["name"])), c(r["category"]), c(r["source"]), num(r["launches"]),
            num(r["time"]), num(r["share"]), num(r["flops"]), num(r["bytes"]),
            num(r["intensity"]), num(r["achieved"]), num(r["roof"]), num(r["of_roof"]),
            c(r["binding"]), num(r["predicted"]), num(r["miss"]), c(r["why"]))


def _kernel_workload(vm: VM, k: Mapping[str, Any]) -> Section:
    body: list[Block] = [p(k["summary"], " ", *(k["coverage"] or (k["unavailable"],)))]
    if k["opportunities"]:
        body.append(p(Strong("Largest opportunities"), " (time each could save per call: "
                      "measured minus predicted at its roof):"))
        body.append(BulletList(tuple(text(*o) for o in k["opportunities"])))
    body.append(table(KERNEL_COLUMNS, [_kernel_cells(r) for r in k["rows"]]))
    if k["rest"]:
        body.append(Details((k["more"], " Every kernel:"),
                            (table(KERNEL_COLUMNS, [_kernel_cells(r) for r in k["rest"]]),)))
    if k["figure"]:
        body.append(_figure(vm, k["figure"]))
    body.append(p(Strong("Where the time goes.")))
    body.append(table(("category", "kernels", "time", "share", "flops", "bytes"),
                      [(c(x["title"]), num(x["kernels"]), num(x["time"]), num(x["share"]),
                        num(x["flops"]), num(x["bytes"])) for x in k["categories"]]))
    body.append(p(*k["reconciliation"]))
    return Section(k["title"], tuple(body), id=k["anchor"] + "-kernels")


def kernels(vm: VM) -> Section | None:
    """The per-kernel roofline of every workload: the user's first and open, the catalog's
    folded."""
    views = vm.get("kernels") or []
    if not views:
        return None
    body: list[Block] = [p(
        "Each compiled kernel, counted from the optimized HLO and timed from a profiler trace "
        "of repeated calls. Kernels can overlap, so shares are of the summed kernel time. "
        "Predicted: launches × max(compute, memory, launch) from the kernel's own flops, "
        "transcendentals and the bytes it touches, under the roofs named below each program "
        "(this machine's where this run measured them). Its roof is the rate that prediction "
        "implies, the share of roof the achieved rate ÷ that roof, the binding the largest "
        "term of that same prediction; the miss says how many times slower or faster than "
        "predicted it ran.")]
    for i, k in enumerate(views):
        sub = _kernel_workload(vm, k)
        body.append(sub if i == 0 or k["user"] else Details((k["title"],), (sub,)))
    return Section("Per-kernel roofline", tuple(body), id="kernels", kind=Kind.MEASURED.value)


def _check_cell(w: Mapping[str, Any]) -> Cell:
    return c(Status("passed", "ok") if w["check"] == "passed" else Status(w["check"], "bad"))


def _anchored(cell: Cell, anchor: str) -> Cell:
    """``cell`` carrying the anchor ``anchor`` (a workload's, stable across runs)."""
    return replace(cell, id=anchor)


def catalog(vm: VM) -> Section:
    rows = [(_anchored(c(w["title"], " (yours)" if w["user"] else None), w.get("anchor", "")),
             c(Code(w["args"])),
             num(w["flops"]), num(w["bytes"]), num(w["intensity"]), _check_cell(w),
             num(w["median"], " " if w["unstable"] else None, UNSTABLE if w["unstable"] else None),
             num(w["achieved"]))
            for w in vm["catalog"]]
    body: list[Block] = [table(("workload", "arguments", "flops", "minimum traffic",
                                "intensity", "check", "median time", "achieved"), rows)]
    failed = [w for w in vm["catalog"] if w["check"] == "failed"]
    if failed:
        body.append(p(Status("Checks that failed", "bad"), " against NumPy, with the largest "
                      "errors and the tolerance they were held to:"))
        body.append(BulletList(tuple(
            text(Strong(w["title"]), ": max absolute error ", w["check_max_abs"],
                 ", max relative error ", w["check_max_rel"], f" at {w['check_tolerance']}.",
                 f" {w['check_note']}." if w["check_note"] else None)
            for w in failed)))
    return Section("Workload catalog", tuple(body), id="catalog")


# --- beyond the seed ------------------------------------------------------------------------


def _exercise_aside(x: Mapping[str, Any]) -> Aside:
    return Aside("exercise", (
        p(Strong("Exercise."), " ", x["question"]),
        Details((SOLUTION,), (BulletList(tuple((step,) for step in x["solution"]),
                                         ordered=True),)),
    ))


def _verdict(r: Mapping[str, Any]) -> Inline:
    tone = {"held": "ok", "failed": "bad"}.get(r["status"])
    return Status(r["verdict"], tone) if tone else r["verdict"]


def _experiment(vm: VM, r: Mapping[str, Any]) -> Section:
    return Section(r["title"], (
        p(Emph("Hypothesis."), " ", r["hypothesis"]),
        table(None, [
            (c("prediction"), num(r["prediction"]), c(r["prediction_note"])),
            (c("measurement"), num(r["measurement"]), c(r["measurement_note"])),
            (c("verdict"), Cell((_verdict(r),), span=2)),
        ], row_headers=True),
        *_optional_figure(vm, r["figure"]),
        *(_exercise_aside(x) for x in r["exercises"]),
    ), id=f"exp-{r['id']}")


def lab(vm: VM) -> Section:
    lb = vm["lab"]
    body: list[Block] = []
    if lb["rows"]:
        body.append(p(
            "Each experiment states a hypothesis and the roofline model's prediction, measures it "
            "here and says whether the model held. The verdict is computed from the numbers, "
            f"with the likely reason when it failed. {lb['held']} of {lb['count']} held in this "
            "run."))
        body += [_experiment(vm, r) for r in lb["rows"]]
    else:
        body.append(p("Not run: ", lb["reason"]))
    body += [_exercise_aside(x) for x in lb["exercises"]]
    return Section("Lab notebook: the model's predictions, tested on this machine", tuple(body),
                   id="lab")


def sweeps(vm: VM) -> Section:
    sw = vm["sweeps"]
    body: list[Block] = [MEASURED]
    if not sw["available"]:
        body.append(p("Not available: ", sw["reason"]))
    else:
        body += [
            p("Each workload at growing sizes. The model of the compiled program predicts each "
              "point's time from this machine's measured roofs, kernel by kernel as in the "
              "measured section; the predicted crossing is the first size whose prediction is "
              "bound by compute, the observed one the first size whose measured time is "
              f"closest to its compute time. Over {plural(sw['points'], 'point', 'points')} "
              "the median prediction error is ", sw["median_error"], "."),
            table(("workload", "points", "crosses the ridge: predicted", "observed",
                   "median error"),
                  [(c(r["title"]), num(Num(r["points"])), c(r["predicted"]), c(r["observed"]),
                    num(r["error"])) for r in sw["rows"]]),
            Details(("Every point: predicted against measured, and why they differ",), (
                table(("workload", "size", "predicted time", "measured time", "miss",
                       "binding (largest term)", "why they differ"),
                      [(c(r["title"]), c(r["size"]), num(r["predicted"]), num(r["measured"]),
                        num(r["miss"]), c(r["bound"]), c(r["why"]))
                       for r in sw["point_rows"]]),)),
            *_optional_figure(vm, "sweep_roofline"),
            *_optional_figure(vm, "sweep_prediction"),
        ]
    return Section("Size sweeps across the ridge", tuple(body), id="sweeps",
                   kind=Kind.MEASURED.value)


def preset(vm: VM) -> Section | None:
    """The spec-sheet section, or None when the run chose no preset. Each workload's predicted
    time there is at least the chip's launch floor where one is known; a chip without one is
    said to have no launch floor known."""
    pr = vm["preset"]
    if not pr["available"]:
        return None
    sources: list[Inline] = []
    for i, (title, url) in enumerate(pr["sources"]):
        sources += ["; "] if i else []
        sources.append(Link(title, url))
    launch = pr["launch"]
    held = (f"Each workload is held to the roof of its own dtype ({pr['float32_roof']}; "
            "bfloat16 to bfloat16's). ")
    if launch is not None:
        cited: list[Inline] = []
        for i, (title, url) in enumerate(pr["launch_sources"]):
            cited += ["; "] if i else [" ("]
            cited.append(Link(title, url))
        cited += [")"] if cited else []
        floor_line: tuple[Inline, ...] = ("; kernel launch floor ", launch, " (assumed)")
        times = p(held, "Its predicted time is the largest of flops ÷ that roof, minimum bytes "
                  "÷ HBM bandwidth and the launch floor, ", launch, ": a program runs at least "
                  "one kernel, and no kernel finishes sooner than its launch. Where the floor "
                  "comes from: ", pr["launch_note"], *cited, ". ", pr["launch_binds"])
        columns: tuple[str, ...] = ("workload", "intensity", "roof", "roofline time", "binds",
                                    "predicted time on it")
        rows: list[tuple[Cell, ...]] = [
            (c(r["title"]), num(r["intensity"]), c(r["roof_name"]), num(r["roofline"]),
             c(r["bound"]), num(r["time"])) for r in pr["placed"]]
    else:
        floor_line = ("; no launch floor known for this chip",)
        times = p(held, "The times are the roofline's alone (flops ÷ that roof or minimum bytes "
                  "÷ HBM bandwidth, whichever is larger): no launch floor known for this chip, "
                  "so they leave out the cost of starting a kernel on it, which its spec sheet "
                  "does not publish.")
        columns = ("workload", "intensity", "roof", "bound", "roofline time on it")
        rows = [(c(r["title"]), num(r["intensity"]), c(r["roof_name"]), c(r["bound"]),
                 num(r["time"])) for r in pr["placed"]]
    return Section(f"Spec sheet: {pr['name']}", (
        p(f"Published dense figures of a real chip ({pr['chosen']}), not measured here: the "
          "workloads above placed against its roof show where they would be bound on it."),
        table(("dtype", "dense peak", "ridge", "note"),
              [(c(r["dtype"]), num(r["value"]), num(r["ridge"]), c(r["note"]))
               for r in pr["peaks"]]),
        p("Memory bandwidth ", pr["hbm"], "; interconnect ", pr["interconnect_name"], " ",
          pr["interconnect"], *floor_line, ".", f" {pr['notes']}" if pr["notes"] else None),
        *((p("Sources: ", *sources, "."),) if sources else ()),
        times,
        table(columns, rows),
    ), id="preset")


def sharding(vm: VM) -> Section:
    sh = vm["sharding"]
    title = "Past one device: the communication roofline"
    if not sh["available"]:
        return Section(title, (p("Not available: ", sh["reason"]),), id="sharding")
    st = sh["steps"]
    body: list[Block] = [p(
        f"Each workload below is compiled for {plural(sh['devices'], 'device', 'devices')} "
        "(the built-ins: a matmul ", Code("x[B, D] @ w[D, F]"), " sharded three ways, "
        + ("once more in bfloat16, " if sh["bf16_variant"] else "")
        + "and whole training steps: forward, backward and an Adam update, data "
        "parallel, FSDP, a tensor-parallel MLP and FSDP over scanned layers). Every collective "
        "is read from the compiled HLO with its replica groups and the trip count of any loop "
        "around it, in the dtype the program gives it (a combined collective, several arrays "
        "in one instruction, once); per device, T_math = flops ÷ peak, T_mem = bytes ÷ memory "
        "bandwidth, and T_comm = the sum over collectives of latency × steps + bytes sent ÷ "
        "interconnect bandwidth (the α–β model). The largest is a lower bound on the step time "
        "(perfect overlap), their sum an upper bound (no overlap). Budgets: ", sh["peak"], ", ",
        sh["bandwidth"], " memory, ", sh["interconnect"], " interconnect, ",
        st["latency"] if st["available"] else "no", " latency per step; a device that computes "
        "fewer than ", sh["critical"], " per byte it sends is communication-bound.")]
    if sh["emulated"]:
        body.append(Note((f"{sh['note']}.",)))
    batches = {r["name"]: r["batch"] for r in st.get("rows", [])}
    body.append(table(
        ("sharding", "batch, mesh", "collectives (compiled HLO, program dtype)", "flops / device",
         "memory traffic / device (shards)", "sent / device", "XLA flops / device", "check"),
        [(c(r["description"]), c(batches.get(r["name"], "not analysed")),
          c(Code(r["collectives"])), num(r["flops"]), num(r["hbm"]), num(r["comm_hlo"]),
          num(r["xla_flops"]), c(r["check"])) for r in sh["rows"]],
        caption="What each device computes, moves and sends, per step"))
    if sh["notes"]:
        body.append(BulletList(tuple((note,) for note in sh["notes"])))
    if st["available"]:
        body += _sharded_steps(st)
    body += [*_optional_figure(vm, "comm_times"), *_optional_figure(vm, "comm_scaling"),
             *_optional_figure(vm, "comm_projection")]
    return Section(title, tuple(body), id="sharding")


def _sharded_steps(st: VM) -> list[Block]:
    """The alpha-beta tables, the comparison with jax.experimental.roofline, the emulated
    measurement and the projection beyond this machine."""
    body: list[Block] = []
    if st["collectives"]:
        body.append(table(
            ("workload", "collective", "arrays (per device, program dtype)", "replica groups",
             "sent / device, each run", "runs per step", "algorithm (the faster)",
             "latency × steps", "bytes ÷ bandwidth"),
            [(c(r["workload"]), c(r["op"]), c(Code(r["array"])), c(r["groups"]), num(r["sent"]),
              c(r["runs"]), c(r["algorithm"]), num(r["t_latency"]), num(r["t_bandwidth"]))
             for r in st["collectives"]],
            caption="Every collective of the compiled programs, priced by the α–β model"))
    body.append(p("Algorithm factors, for a group of N devices: ", "; ".join(st["algorithms"]),
                  ". Each collective takes the faster of the two; bytes are what one device "
                  "sends, in the program's dtype."))
    body.append(table(
        ("workload", "batch, mesh", "T_math", "T_mem", "memory traffic (shards + collective "
         "buffers)", "T_comm latency", "T_comm bandwidth", "lower bound (max)",
         "upper bound (sum)", "binds", "critical batch"),
        [(c(r["name"]), c(r["batch"]), num(r["t_math"]), num(r["t_mem"]), num(r["memory"]),
          num(r["t_latency"]), num(r["t_bandwidth"]), num(r["lower"]), num(r["upper"]),
          c(r["binding"]), num(r["critical"])) for r in st["rows"]],
        caption="Time bounds per step (α–β), each at the batch and mesh it was compiled at"))
    body.append(p(
        "The critical batch is the global batch at which T_math catches up with T_comm, the "
        "math growing with the batch: gradients and weights (data parallel, FSDP) cost the same "
        "at any batch; activations (tensor parallel, the contracting-axis matmul) grow with it, "
        "so only their latency is left to amortise. A training step's memory traffic counts "
        "its arguments' and results' shards and each collective's own buffers: the operand it "
        "reads, the result it writes and the read of that result (the gathered weights of "
        "FSDP)."))
    if st["flags"]:
        body.append(BulletList(tuple((flag,) for flag in st["flags"])))
    if st["jax_roofline"]:
        body.append(table(
            ("workload", "sent / device (ours, HLO)", "ICI bytes (jax)", "latency steps (ours)",
             "ICI latency (jax, hops)", "matmul flops (ours)", "flops (jax)", "why they differ"),
            [(c(r["name"]), num(r["ours_bytes"]), num(r["jax_bytes"]), num(r["ours_steps"]),
              num(r["jax_latency"]), num(r["ours_flops"]), num(r["jax_flops"]), c(r["why"]))
             for r in st["jax_roofline"]],
            caption="Beside jax.experimental.roofline, which costs the shard_map body"))
        body.append(p(
            "jax.experimental.roofline prices each collective of the traced program with the "
            "same ring formulas, so the bytes agree where no loop intervenes; it counts N hops "
            "of latency per all-gather or reduce-scatter (2N per all-reduce) where our steps "
            "are those of the faster algorithm, and it costs the body of a scan once, as XLA's "
            "cost analysis does, where the compiled loop runs it once per iteration.",
            *((" Not available here: ", st["jax_unavailable"], " (it needs absl-py, a "
               "dependency of this package).") if st["jax_unavailable"] else ())))
    if st["emulated"]:
        body.append(p(
            "What the emulated timings can show: the devices are threads of one process on this "
            "machine's cores, so their work runs one after another and their collectives are "
            "memory copies. The prediction is the devices' work added up at this machine's "
            "measured rates (devices × the larger of flops ÷ measured peak and bytes ÷ measured "
            "bandwidth); measured ÷ predicted is ", st["emulated_range"], " here, where 1 would "
            "mean the serialised work explains the whole time and the rest is the runtime's "
            "threads, copies and dispatch. It cannot show the interconnect, the overlap of "
            "communication with compute, or the time one real device would take: T_comm above "
            "is a model."))
        body.append(table(
            ("workload", "devices", "T_math of one device at the measured peak",
             "predicted, devices serialised", "measured", "measured ÷ predicted"),
            [(c(r["name"]), c(r["devices"]), num(r["per_device"]), num(r["serialised"]),
              num(r["measured"]), num(r["ratio"])) for r in st["emulated"]],
            caption="The emulated measurement, predicted from this machine's measured roofs"))
    if st["projection"]:
        topology = (f"the {st['torus']} torus of one pod, each mesh axis a bidirectional ring "
                    "where it spans a whole torus axis (wraparound), a one-way line where it "
                    "does not" if st["torus"] else
                    f"one domain of {st['domain']} devices on the fast link, beyond it the "
                    "network: a collective over more devices runs inside each domain and across "
                    "domains on the slower link (an all-reduce reduce-scatters inside, "
                    "all-reduces 1/D of the array across, all-gathers inside)")
        body.append(p(
            Strong("Projection, not a measurement:"), " ",
            f"the compiled 8-device training steps carried to more devices on {st['preset']} "
            "(peak ", st["peak"], f" {st['peak_dtype']} for float32 steps, HBM ", st["hbm"],
            "; links: ", "; ".join(st["links"]), f"). The network is {topology}; "
            + ("the ring along the torus axes is the algorithm priced there. " if st["torus"]
               else "each level prices its own latency and bandwidth and takes the faster of "
               "the ring and the tree. ")
            + "Each device keeps its share of the batch (weak scaling), so its flops stay "
            "those compiled here; its memory traffic rescales the shards (weights split over "
            "the mesh shrink) and adds the collectives' buffers; a collective over the whole "
            "mesh grows its group and keeps its array (activations grow with the global "
            "batch). Latencies are assumptions (marked hypothetical), and so is every time "
            "they enter. A weight dimension that cannot be split over the devices is not "
            "projected."))
        body.append(table(
            ("training step", "devices", "global batch", "network: devices, algorithm",
             "T_math", "T_mem", "T_comm latency", "T_comm bandwidth", "step lower bound",
             "binds", "compute-bound above", "flags"),
            [(c(r["name"]), c(r["devices"]), c(r["batch"]), c(r["network"]), num(r["t_math"]),
              num(r["t_mem"]), num(r["t_latency"]), num(r["t_bandwidth"]), num(r["lower"]),
              c(r["binding"]), num(r["critical"]), c(r["flags"])) if r["available"] else
             (c(r["name"]), c(r["devices"]), c(""), c(r["reason"]), c(""), c(""), c(""),
              c(""), c(""), c(""), c(""), c(""))
             for r in st["projection"]],
            caption=f"Projected step time on {st['preset']} for 8 to 1024 devices (projection)"))
        if st["crossovers"]:
            body.append(p(
                "Where a data-parallel or FSDP step stays compute-bound: its gradients and "
                "weights cost the same time at any batch, so above the per-device batch where "
                "its math catches up with them ('How to Scale Your Model': the chip's FLOP/s "
                "over the bandwidth each device sends at, scaled by the step's flops and bytes "
                "per sample) the communication hides behind the math."))
            body.append(BulletList(tuple(st["crossovers"])))
    return [*body]


def skipped(vm: VM) -> Section | None:
    """What this run left out, or None when it left nothing out."""
    if not vm["skipped"]:
        return None
    return Section("Not available in this run", (BulletList(tuple(
        text(Strong(str(item["what"])), ": ", str(item["reason"])) for item in vm["skipped"])),),
        id="skipped")


# --- the user's programs --------------------------------------------------------------------


def _leaf_table(rows: Sequence[Mapping[str, Any]], caption: str = "") -> Table:
    return table(("path", "shape", "dtype", "bytes"),
                 [(c(Code(r["path"])), c(Code(r["shape"])), c(r["dtype"]), num(r["bytes"]))
                  for r in rows], caption=caption)


def _tree(a: Mapping[str, Any]) -> tuple[Block, ...]:
    """One argument's tree: its leaves when few; folded when long, the top levels with counts
    and bytes, and every leaf in a fold."""
    if a["role"] == "static" or not a["rows"] or a["bare"]:
        return ()
    if not a["folded"]:
        return (_leaf_table(a["rows"], caption=a["name"]),)
    more = (p(f"{a['omitted']} more leaves are counted above but not listed."),
            ) if a["omitted"] != "0" else ()
    return (
        table(("top level", "arrays", "bytes", "dtypes"),
              [(c(Code(g["path"])), num(Num(g["leaves"])), num(g["bytes"]), c(g["dtypes"]))
               for g in a["groups"]], caption=f"{a['name']}: top levels"),
        Details((f"{a['name']}: every array ({a['leaves']})",),
                (_leaf_table(a["rows"]), *more)),
    )


def _argument_row(a: Mapping[str, Any]) -> tuple[Cell, ...]:
    role = f" ({a['role']})" if a["role"] else ""
    if a["role"] == "static":
        return (c(Code(a["name"]), role), c(a["type"], " = ", Code(a["value"])), num(Num("0")),
                num(Num("not traced")))
    held = (f" ({plural(a['held'], 'leaf', 'leaves')} held as Python values, not traced)"
            if a["held"] != "0" else "")
    return (c(Code(a["name"]), role), c(a["type"], held), num(Num(a["leaves"])),
            num(a["bytes"]))


def _program(vm: VM, w: Mapping[str, Any]) -> Section:
    body: list[Block] = [p(w["description"])] if w["description"] else []
    if w["has_tree"]:
        rows = [_argument_row(a) for a in w["arguments"]]
        if w["result"] is not None:
            rows.append(_argument_row({**w["result"], "name": "result", "role": ""}))
        body.append(p("Arguments and result (", w["summary"], "):"))
        body.append(table(("argument", "type", "arrays", "bytes"), rows))
        for a in (*w["arguments"], *((w["result"],) if w["result"] else ())):
            body += _tree(a)
    elif w["args"]:
        body.append(p("Arguments: ", Code(w["args"]), "."))
    if not w["lowering_available"]:
        body.append(Note(text("Lowering failed: ", w["lowering_reason"]), "bad"))
        return Section(w["title"], tuple(body))
    body.append(p("Lowering took ", w["lower_s"], " and compiling ", w["compile_s"], ".",
                  f" {w['program']}" if w["program"] else None))
    if w["check_available"]:
        verdict = Status("Passed", "ok") if w["check_passed"] else Status("Failed", "bad")
        leaf = (f" (the worst of {w['check_leaves']} result arrays: {w['check_leaf']})"
                if w["check_leaf"] else "")
        note = f" {w['check_note']}." if w["check_note"] else ""
        body.append(p("Checked against NumPy: ", verdict, f" at {w['check_tolerance']}: max "
                      "absolute error ", w["check_max_abs"], ", max relative error ",
                      w["check_max_rel"], f"{leaf}.{note}"))
    else:
        body.append(p("Not checked against NumPy: ", w["check_reason"], "."))
    work = [
        (c("flops"), num(w["flops_analytic"]) if not w["model"] else c(w["model"]),
         num(w["flops_ours"]), num(w["flops_xla"])),
        (c("bytes"), num(w["traffic"]), num(w["bytes_ours"]), num(w["xla_bytes"])),
    ]
    body.append(table(("quantity", "analytic", "our HLO count", "XLA"), work,
                      caption="Work and traffic (details in the three-way accounting)"))
    t = w["timing"]
    if t:
        body.append(p("Median time per call ", t["median"], " (IQR ", t["iqr"], ", ",
                      plural(t["samples"], "sample", "samples"), f", {t['method']})."))
    else:
        body.append(p("Not timed: ", w["timing_reason"], "."))
    pr = w["prediction"]
    if pr:
        body.append(p("The model of the compiled program predicts ", pr["predicted"],
                      f" on {pr['roofs']}, bound by {pr['binding']} (bytes: "
                      f"{pr['bytes_source']}); measured: ", pr["miss"], "."
                      + (f" Why: {pr['why']}." if pr["why"] else "")))
    return Section(w["title"], tuple(body), id=w["anchor"])


def programs(vm: VM) -> Section | None:
    """The user's workloads, as the subject of the report; None when there are none."""
    if not vm["programs"]:
        return None
    return Section("Your programs", (
        p("Each program as it was lowered: its arguments and result as trees of arrays, the "
          "NumPy check, the work and traffic counted three ways and its time on this machine. A "
          "program without a hand-written model shows none: its least traffic is every argument "
          "read once and every result written once (argument + result bytes)."),
        *(_program(vm, w) for w in vm["programs"]),
    ), id="programs")


def summary(vm: VM) -> Section | None:
    """The first section of a report about programs: every program with its time, prediction,
    share of roof and what binds, the kernels that could save the most time, and the figure with
    every program placed. None without programs of the user's."""
    s = vm["summary"]
    if not s["rows"]:
        return None
    rows = []
    for r in s["rows"]:
        savers: list[Inline] = []
        for i, k in enumerate(r["savers"]):
            savers += [Break()] if i else []
            savers += [Link(k["name"], "#" + k["anchor"]), ": ", k["saving"]]
        rows.append((_anchored(c(Link(r["title"], "#" + r["target"])), r["anchor"] + "-summary"),
                     num(r["measured"]), num(r["predicted"]), num(r["miss"]), num(r["achieved"]),
                     num(r["of_roof"]), c(r["binding"]),
                     Cell(tuple(savers) or ("none",))))
    return Section("Summary", (
        p(f"Every program on {s['roofs']}: its measured time per call, the time the model "
          "predicts for it, its achieved rate, its share of the roof its prediction uses, what "
          "binds it, and the kernels that could save the most time, each with the time it "
          "could save per call (its measured time minus its predicted time at its roof)."),
        table(("program", "measured", "predicted", "miss", "achieved", "of roof", "binds",
               "kernels that could save the most: time per call"), rows),
        *_optional_figure(vm, "measured_roofline"),
        *_optional_figure(vm, "programs_roofline"),
    ), id="summary")


def _user_document(vm: VM) -> Document:
    """A report about the user's programs: theirs first, then this machine and the accounting;
    the seed's teaching sections, the catalog and the lab only when the run asked for them."""
    # A profile read from a trace has no StableHLO to account three ways.
    accounting = reconciliation(vm) if vm["reconciliation"] or not vm.get("trace") else None
    main = tuple(s for s in (summary(vm), trace_section(vm), programs(vm), kernels(vm),
                             measured(vm, figure=summary(vm) is None), accounting)
                 if s is not None)
    also = tuple(s for s in (lab(vm) if vm["lab"]["rows"] else None,
                             sweeps(vm) if vm["sweeps"]["available"] else None, preset(vm),
                             sharding(vm) if vm["sharding"]["available"] else None,
                             skipped(vm)) if s is not None)
    groups = [Group("", main, numbered=True)]
    if also:
        groups.append(Group("Also in this run", also))
    return Document(tuple(groups), figures=tuple(vm["figures"]))


def document(vm: VM) -> Document:
    """The whole report body: the seed's steps, numbered, then what lies beyond the seed."""
    if not vm["parts"]["teaching"]:
        return _user_document(vm)
    seed = tuple(s for s in (lowered(vm), compiled(vm), model(vm), experiment(vm), exercise(vm),
                             measured(vm), reconciliation(vm), kernels(vm), catalog(vm))
                 if s is not None)
    beyond = tuple(s for s in (programs(vm), lab(vm), sweeps(vm), preset(vm), sharding(vm),
                               skipped(vm)) if s is not None)
    return Document((Group("", seed, numbered=True), Group("Beyond the seed", beyond)),
                    figures=tuple(vm["figures"]))
