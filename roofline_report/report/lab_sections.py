"""The lab notebook's experiments and exercises, and the size sweeps across the ridge.
"""

from __future__ import annotations

from roofline_report.kinds import Kind
from roofline_report.report.blocks import (
    Aside,
    Block,
    BulletList,
    Cell,
    Details,
    Emph,
    Inline,
    Section,
    Status,
    Strong,
)
from roofline_report.report.format import Num, plural
from roofline_report.report.section_parts import (
    MEASURED,
    SOLUTION,
    VM,
    c,
    num,
    optional_figure,
    p,
    table,
)
from roofline_report.report.view_records import LabExercise, LabRow


def _exercise_aside(x: LabExercise) -> Aside:
    return Aside("exercise", (
        p(Strong("Exercise."), " ", x.question),
        Details((SOLUTION,), (BulletList(tuple((step,) for step in x.solution),
                                         ordered=True),)),
    ))


def _verdict(r: LabRow) -> Inline:
    tone = {"held": "ok", "failed": "bad"}.get(r.status)
    return Status(r.verdict, tone) if tone else r.verdict


def _experiment(vm: VM, r: LabRow) -> Section:
    return Section(r.title, (
        p(Emph("Hypothesis."), " ", r.hypothesis),
        table(None, [
            (c("prediction"), num(r.prediction), c(r.prediction_note)),
            (c("measurement"), num(r.measurement), c(r.measurement_note)),
            (c("verdict"), Cell((_verdict(r),), span=2)),
        ], row_headers=True),
        *optional_figure(vm, r.figure),
        *(_exercise_aside(x) for x in r.exercises),
    ), id=f"exp-{r.id}")


def lab(vm: VM) -> Section:
    lb = vm.lab
    body: list[Block] = []
    if lb.rows:
        body.append(p(
            "Each experiment states a hypothesis and the roofline model's prediction, measures it "
            "here and says whether the model held. The verdict is computed from the numbers, "
            f"with the likely reason when it failed. {lb.held} of {lb.count} held in this "
            "run."))
        body += [_experiment(vm, r) for r in lb.rows]
    else:
        body.append(p("Not run: ", lb.reason))
    body += [_exercise_aside(x) for x in lb.exercises]
    return Section("Lab notebook: the model's predictions, tested on this machine", tuple(body),
                   id="lab")


def sweeps(vm: VM) -> Section:
    sw = vm.sweeps
    body: list[Block] = [MEASURED]
    if not sw.available:
        body.append(p("Not available: ", sw.reason))
    else:
        body += [
            p("Each workload at growing sizes. The model of the compiled program predicts each "
              "point's time from this machine's measured roofs, kernel by kernel as in the "
              "measured section; the predicted crossing is the first size whose prediction is "
              "bound by compute, the observed one the first size whose measured time is "
              f"closest to its compute time. Over {plural(sw.points, 'point', 'points')} "
              "the median prediction error is ", sw.median_error, "."),
            table(("workload", "points", "crosses the ridge: predicted", "observed",
                   "median error"),
                  [(c(r.title), num(Num(r.points)), c(r.predicted), c(r.observed),
                    num(r.error)) for r in sw.rows]),
            Details(("Every point: predicted against measured, and why they differ",), (
                table(("workload", "size", "predicted time", "measured time", "miss",
                       "binding (largest term)", "why they differ"),
                      [(c(r.title), c(r.size), num(r.predicted), num(r.measured),
                        num(r.miss), c(r.bound), c(r.why))
                       for r in sw.point_rows]),)),
            *optional_figure(vm, "sweep_roofline"),
            *optional_figure(vm, "sweep_prediction"),
        ]
    return Section("Size sweeps across the ridge", tuple(body), id="sweeps",
                   kind=Kind.MEASURED.value)

