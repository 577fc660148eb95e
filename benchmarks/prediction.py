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

from roofline_report import analysis  # noqa: E402
from roofline_report.analysis import predict  # noqa: E402
from roofline_report.results import io as results  # noqa: E402


def _measured(record: dict[str, Any]) -> float | None:
    t = record.get("timing") or {}
    if not t.get("available", True):
        return None
    return (t.get("per_call") or {}).get("median")


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
    derived = analysis.analyse(data, analysis.assumptions_for(data))
    errors: list[float] = []
    rows = []
    for w in derived.get("workloads", []):
        p, m = w.get("prediction"), _measured(w)
        if p and m and w.get("name") != step:
            e = predict.error(p["seconds"], m)
            errors.append(e)
            rows.append((w["title"], p["seconds"], m, e, p["binding"]))
    sm = derived.get("sweep_model") or {}
    for sw in sm.get("workloads", []):
        for pt in sw.get("points", []):
            e = abs(pt["predicted_s"] - pt["measured_s"]) / pt["measured_s"]
            errors.append(e)
            rows.append((f"{sw['title']} {pt['dims']}", pt["predicted_s"], pt["measured_s"], e,
                         pt["predicted_bound"]))
    kernel_errors: list[float] = []
    for w in derived.get("workloads", []):
        if step is not None and w.get("name") != step:
            continue
        for k in ((w.get("kernel_view") or {}).get("rows") or []):
            if k.get("seconds") and k["seconds"] >= 50e-6 and k.get("predicted"):
                kernel_errors.append(predict.error(k["predicted"], k["seconds"]))
    for title, pred, meas, e, bound in rows:
        print(f"{title[:48]:48} predicted {pred * 1e6:10.1f} us  measured {meas * 1e6:10.1f} us"
              f"  error {e:6.0%}  {bound}")
    median, p90 = predict.error_summary(errors)
    return {"median_error": median, "p90_error": p90,
            "points": len(errors), "kernel_median_error": predict.error_summary(kernel_errors)[0],
            "kernels": len(kernel_errors), "kernels_of": step or "the catalog"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from-json", metavar="FILE")
    parser.add_argument("--no-step", action="store_true",
                        help="leave out the shipped training step")
    ns = parser.parse_args()
    if ns.from_json:
        data = results.load(ns.from_json)
    else:
        from roofline_report import cli

        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "report"
            code = cli.main(["--no-sharding", "--no-experiments", "--progress", "none",
                             "--out", str(out)])
            if code not in (0, 3):
                return code
            data = results.load(out / "results.json")
    step = None
    if not ns.no_step:
        data, step = _with_step(data)
    print(json.dumps(score(data, step), sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
