"""The seed's teaching sections, step by step: the lowered computation, the compiled executable,
the hypothetical model, its experiment and exercise, and the workload catalog.
"""

from __future__ import annotations

from roofline_report.kinds import Kind
from roofline_report.report.blocks import (
    Block,
    BulletList,
    Cell,
    Code,
    CodeBlock,
    Details,
    Link,
    Marker,
    Note,
    Paragraph,
    Section,
    Status,
    Strong,
    text,
)
from roofline_report.report.section_parts import (
    HYPOTHETICAL,
    SOLUTION,
    UNSTABLE,
    VM,
    anchored,
    c,
    figure_of,
    num,
    p,
    table,
    yes_no,
)
from roofline_report.report.view_records import CatalogRow, SeedCheck


def lowered(vm: VM) -> Section:
    s = vm.seed
    body: list[Block] = []
    if not s:
        body.append(p("The seed workload is not part of this run."))
        return Section("Lowered computation", tuple(body), id="lowered")
    body.append(p("The workload is ", Code("tanh(a @ b)"), " with ", Code(s.args),
                  ", built as in the seed (", Code("arange / 512"), " and ",
                  Code("arange / 128"), "). Lowering specialises it to these shapes and dtypes: "
                  "the StableHLO below is the operation and shape contract."))
    if s.lowering_available:
        body.append(Section("Operations present (found by walking the MLIR module)", (
            table(("required operation", "present"),
                  [(c(Code(op)), c(yes_no(ok))) for op, ok in s.required]),
            table(("operation", "count"),
                  [(c(Code(op)), Cell((str(k),), numeric=True)) for op, k in s.ops]),
        )))
        body.append(Details(("StableHLO text",), (CodeBlock(s.stablehlo_text, "mlir"),),
                            open=True))
    else:
        body.append(Note(text("Lowering failed: ", s.lowering_reason), "bad"))
    return Section("Lowered computation", tuple(body), id="lowered")


def _check_sentence(check: SeedCheck) -> Paragraph:
    verdict = Status("Passed", "ok") if check.passed else Status("Failed", "bad")
    note = f" {check.note}." if check.note else ""
    return p(verdict, f" at {check.tolerance}: max absolute error ", check.max_abs,
             ", max relative error ", check.max_rel, ".", note)


def compiled(vm: VM) -> Section:
    s = vm.seed
    if not (s and s.lowering_available):
        return Section("Compiled executable", (p("No compiled executable in this run."),),
                       id="compiled")
    ce = Kind.COMPILER_ESTIMATE.value
    check = s.check
    checked: Block = (_check_sentence(check) if check.available
                      else Note(text("Not checked: ", check.reason), "bad"))
    xla: tuple[Block, ...]
    if s.xla_available:
        xla = (
            p("A compiler estimate for this backend and jax version: it is neither a "
              "measurement nor the minimum the computation needs (see ",
              Link("three-way accounting", "#reconciliation"), ")."),
            table(("key", "value"), [(c(k), num(v)) for k, v in s.xla]),
            Details(("All keys XLA returned",),
                    (table(("key", "value"), [(c(Code(k)), num(v)) for k, v in s.xla_raw]),)),
        )
    else:
        xla = (p("Not available: ", s.xla_reason),)
    memory: tuple[Block, ...] = (
        (table(("buffer", "size"), [(c(k), num(v)) for k, v in s.memory]),)
        if s.memory_available else (p("Not available."),))
    return Section("Compiled executable", (
        Section("Result checked against NumPy", (checked,)),
        p("Lowering took ", s.lower_s, " and compiling ", s.compile_s,
          ", measured apart from the run time."),
        Section(("XLA's cost analysis ", Marker(ce)), xla),
        Section(("Memory analysis ", Marker(ce)), memory),
        Details(("Optimized HLO (source metadata removed)",),
                (CodeBlock(s.compiled_text, "text"),)),
    ), id="compiled")


def model(vm: VM) -> Section:
    b, m = vm.budgets, vm.model
    return Section("Hypothetical model", (
        HYPOTHETICAL,
        p("The contract of ", Code("C[m,n] = A[m,k] @ B[k,n]"), ": work 2·m·k·n flops "
          "(multiply-add; the tanh epilogue is not counted), minimum traffic "
          "itemsize·(m·k + k·n + m·n) bytes (each operand read once, the result written once), "
          "intensity = work ÷ traffic. For square float32 matrices the intensity is "
          "2n³ ÷ (3·4·n²) = n/6."),
        p("Budgets: compute ", b.peak, " and bandwidth ", b.bandwidth, " (", b.source,
          "). The ridge point, where bandwidth × intensity reaches the compute budget, is at ",
          m.ridge, *m.ridge_size),
        table(("n", "flops", "minimum bytes", "intensity", "bandwidth × intensity", "ceiling",
               "bound"),
              [(c(r.n), num(r.flops), num(r.bytes), num(r.intensity),
                num(r.memory_ceiling), num(r.ceiling), c(r.bound))
               for r in m.rows]),
        figure_of(vm, "seed_roofline"),
    ), id="model", kind=Kind.HYPOTHETICAL.value)


def experiment(vm: VM) -> Section:
    return Section("Experiment: double the assumed data movement", (
        HYPOTHETICAL,
        p("The work is unchanged; doubling the bytes moved halves the intensity. Below the "
          "ridge the ceiling halves with it; at or above the ridge after halving, the compute "
          "budget still binds."),
        table(("n", "intensity", "halved intensity", "ceiling", "revised ceiling",
               "revised ÷ ceiling"),
              [(c(r.n), num(r.intensity), num(r.reduced), num(r.ceiling),
                num(r.revised), num(r.ratio)) for r in vm.experiment.rows]),
        figure_of(vm, "doubled_traffic"),
    ), id="experiment", kind=Kind.HYPOTHETICAL.value)


def exercise(vm: VM) -> Section:
    x = vm.exercise
    m, k, n = x.m, x.k, x.n
    return Section("Exercise", (
        p(Strong(f"Derive the work and minimum traffic for shapes {x.shapes}"),
          f" (float32, itemsize {x.itemsize}): how many flops, how many bytes at minimum, "
          "what intensity, and is it compute- or memory-bound under the budgets of ", x.peak,
          " and ", x.bandwidth, "?"),
        Details((SOLUTION,), (
            p(f"Work: 2 · {m} · {k} · {n} = ", x.flops, " flops."),
            p(f"Minimum traffic: {x.itemsize} · ({m}·{k} + {k}·{n} + {m}·{n}) = ", x.bytes,
              " bytes."),
            p("Intensity: ", x.intensity, f" (that is {x.fraction})."),
            p("Bandwidth × intensity = ", x.bw_times_intensity,
              f", {x.relation} the compute budget of ", x.peak, ": the exercise is ",
              Strong(f"{x.bound}-bound"), "."),
        )),
    ), id="exercise")


def _check_cell(w: CatalogRow) -> Cell:
    return c(Status("passed", "ok") if w.check == "passed" else Status(w.check, "bad"))


def catalog(vm: VM) -> Section:
    rows = [(anchored(c(w.title, " (yours)" if w.user else None), w.anchor),
             c(Code(w.args)),
             num(w.flops), num(w.bytes), num(w.intensity), _check_cell(w),
             num(w.time, " " if w.unstable else None, UNSTABLE if w.unstable else None),
             num(w.achieved))
            for w in vm.catalog]
    body: list[Block] = [table(("workload", "arguments", "flops", "minimum traffic",
                                "intensity", "check", "time per call", "achieved"), rows)]
    failed = [w for w in vm.catalog if w.check == "failed"]
    if failed:
        body.append(p(Status("Checks that failed", "bad"), " against NumPy, with the largest "
                      "errors and the tolerance they were held to:"))
        body.append(BulletList(tuple(
            text(Strong(w.title), ": max absolute error ", w.check_max_abs,
                 ", max relative error ", w.check_max_rel, f" at {w.check_tolerance}.",
                 f" {w.check_note}." if w.check_note else None)
            for w in failed)))
    return Section("Workload catalog", tuple(body), id="catalog")

