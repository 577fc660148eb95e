"""How long ``roofline-report profile`` takes to read a trace, beside the jax import it needs.

    python benchmarks/profile_read.py [--trace LOGDIR] [--repeats N]

The default trace is the shipped transformer training step (about 150 kernels, three steps),
captured on a CPU by tests/fixtures/traces/capture.py. In one process: ``import jax`` is timed
first (jaxlib prints the trace's HLO, so a read needs it loaded); then the trace is read into a
results document ``--repeats`` times (default 3): decoding every host's XSpace, sorting the
events, printing and counting the program's HLO, timing each kernel. The first read includes
jaxlib's first use. Rendering the report is timed apart. The last line is one JSON object:
``jax_import_s``, ``read_s`` (each read), ``read_first_s``, ``read_best_s``, ``render_s``,
``kernels``, ``events`` and ``budget_s`` (5: a read takes at most that beyond the jax import),
``within_budget`` (the first read against it).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]
DEFAULT_TRACE = ROOT / "tests" / "fixtures" / "traces" / "transformer"
BUDGET_S = 5.0


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trace", default=str(DEFAULT_TRACE), metavar="LOGDIR")
    p.add_argument("--repeats", type=int, default=3)
    ns = p.parse_args(argv)
    t0 = time.perf_counter()
    import jax  # noqa: F401  (timed: what a read needs loaded)
    import jaxlib.xla_client  # noqa: F401

    jax_import = time.perf_counter() - t0

    from roofline_report.ingest.pipeline import read_profile
    from roofline_report.ingest.records import results_document
    from roofline_report.report import views

    reads = []
    data = None
    for _ in range(max(1, ns.repeats)):
        t = time.perf_counter()
        reading = read_profile(ns.trace)
        data = results_document(reading)
        reads.append(time.perf_counter() - t)
    assert data is not None
    t = time.perf_counter()
    views.render(data)
    render = time.perf_counter() - t
    workload = data["workloads"][0]
    kernels = workload["kernels"]
    events = sum(m["events"] for m in data["trace"]["modules"])
    print(json.dumps({
        "trace": Path(ns.trace).name,
        "jax_import_s": round(jax_import, 3),
        "read_s": [round(r, 3) for r in reads],
        "read_first_s": round(reads[0], 3),
        "read_best_s": round(min(reads), 3),
        "render_s": round(render, 3),
        "kernels": kernels.get("count") if kernels.get("available", True) else None,
        "events": events,
        "budget_s": BUDGET_S,
        "within_budget": reads[0] <= BUDGET_S,
    }))


if __name__ == "__main__":
    main()
