"""How well the roofline model predicts this machine: relative errors of predicted times.

    python benchmarks/prediction.py                  # measure (catalog and sweeps), then score
    python benchmarks/prediction.py --from-json FILE # score a saved results.json

Scores every catalog workload and every sweep point with a measured time and a prediction:
error = |predicted − measured| ÷ measured. Prints one line per workload, then a last line of JSON
with ``median_error`` (target ≤ 0.25 on the 2-core CPU), ``p90_error``, ``points``, and
``kernel_median_error`` (target ≤ 0.35) over the kernels of at least 50 µs of the shipped
training step (examples/transformer.py, measured here when flax is installed; ``--no-step``
leaves it out), or of the catalog where the step is not measured.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from roofline_report.analysis.analyse import analyse  # noqa: E402
from roofline_report.analysis.stats import error_summary  # noqa: E402
from roofline_report.results import io as results  # noqa: E402


def _with_step(data: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """``data`` with the shipped training step measured here as one more workload."""
    try:
        from examples import transformer
    except ImportError as exc:
        print(f"training step not measured: {exc}", file=sys.stderr)
        return data, None
    import roofline_report

    fn, args = transformer.setup()
    record = roofline_report.analyze(fn, *args, name="transformer training step", quick=False)
    return {**data, "workloads": [*data["workloads"], record]}, str(record["name"])


def score(data: dict[str, Any], step: str | None = None) -> dict[str, Any]:
    """The model's errors over the programs and sweep points of ``data`` (the training step
    ``step`` apart), and over the kernels of at least 50 µs of ``step`` (else of every
    program)."""
    an = analyse(data)
    errors: list[float] = []
    rows = []
    for p in an.programs:
        if p.miss is not None and p.prediction is not None and p.name != step:
            errors.append(p.miss.error)
            rows.append((p.title, p.miss.predicted, p.miss.measured, p.miss.error, p.binding))
    for sw in an.sweeps:
        for pt in sw.points:
            if pt.miss is not None:
                errors.append(pt.miss.error)
                rows.append((f"{sw.title} {pt.dims}", pt.miss.predicted, pt.miss.measured,
                             pt.miss.error, pt.predicted_bound))
    kernel_errors: list[float] = []
    for p in an.programs:
        if (step is not None and p.name != step) or p.kernels is None:
            continue
        kernel_errors += [r.miss.error for r in p.kernels.rows
                          if r.miss is not None and (r.seconds or 0.0) >= 50e-6]
    for title, pred, meas, e, bound in rows:
        print(f"{title[:48]:48} predicted {pred * 1e6:10.1f} us  measured {meas * 1e6:10.1f} us"
              f"  error {e:6.0%}  {bound}")
    median, p90 = error_summary(errors)
    return {"median_error": median, "p90_error": p90,
            "points": len(errors), "kernel_median_error": error_summary(kernel_errors)[0],
            "kernels": len(kernel_errors), "kernels_of": step or "the catalog"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from-json", metavar="FILE")
    parser.add_argument("--no-step", action="store_true",
                        help="leave out the shipped training step")
    ns = parser.parse_args()
    if ns.from_json:
        data = (results.load(ns.from_json))
    else:
        from roofline_report import cli

        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "report"
            code = cli.main(["--no-sharding", "--no-experiments", "--progress", "none",
                             "--out", str(out)])
            if code not in (0, 3):
                return code
            data = (results.load(out / "results.json"))
    step = None
    if not ns.no_step:
        data, step = _with_step(data)
    print(json.dumps(score(data, step), sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
