"""How close are the project's measured ceilings to a reference measured in the same run?

Usage, from the repository root: ``python benchmarks/ceilings.py [--quick] [--rounds N]``.

* CPU reference: NumPy's float32 matmul at each size the project sweeps, and NumPy's in-place
  streaming kernels (``scale``: a <- -a; ``triad``: a <- b - a) run by one thread per core on
  disjoint slices of arrays of the project's size (NumPy releases the GIL in its loops).
* GPU reference (when torch is installed): cuBLAS matmul through torch (TF32 allowed for float32,
  as jax's default precision does) and a device-to-device copy, timed with CUDA events.

A shared machine's load comes in bursts that last seconds to minutes, so one comparison says
little: the run interleaves ``--rounds`` (default 7) rounds, reference pass 0, then project round
1 (``measure_ceilings``), reference pass 1, project round 2, ... Round i's ratios are the
project's figures over the mean of the reference passes just before and after it. The first
project round is a full ``measure_ceilings`` (its time is reported); the others measure only
what is compared (float32 matmuls, streams, dispatch), so that they sit close in time to the
passes around them. Seven rounds rather than five: the median of per-round ratios that each
spread by ±20% moves less from run to run. Every figure, project or reference, is work over
the fastest sample, and bytes count reads plus writes. The last line printed is one JSON object
with ``backend``, the median ``compute_ratio`` and ``bandwidth_ratio`` over the rounds
(project / reference; None where no reference could be measured), their ranges (min, max) and
every round's ratios.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from roofline_report.analysis.stats import Stats, median  # noqa: E402
from roofline_report.observe import timer as timing  # noqa: E402
from roofline_report.observe.ceilings import host  # noqa: E402
from roofline_report.observe.ceilings import machine as ceilings  # noqa: E402
from roofline_report.observe.ceilings.plan import Plan, plan_for  # noqa: E402
from roofline_report.observe.ceilings.sampling import MiB  # noqa: E402

TARGETS = {"compute_ratio": 0.95, "bandwidth_ratio": 0.90}
Rates = dict[str, float]


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class NumpyReference:
    """NumPy's matmul and multithreaded in-place streaming kernels, timed with the harness."""

    name = "numpy"

    def __init__(self, plan: Plan, samples: int, min_sample_s: float) -> None:
        self.plan = plan
        self.samples = samples
        self.min_sample_s = min_sample_s
        self.threads = _cores()
        self.pool = ThreadPoolExecutor(self.threads)
        elements = plan.array_bytes // 4
        self.a: npt.NDArray[np.float32] = np.ones(elements, dtype=np.float32)
        self.b: npt.NDArray[np.float32] = np.full(elements, 2.0, dtype=np.float32)
        bounds = np.linspace(0, elements, self.threads + 1).astype(int) // 1024 * 1024
        bounds[-1] = elements
        self.slices = [slice(int(lo), int(hi)) for lo, hi in itertools.pairwise(bounds)]

    def _rate(self, work: float, run: timing.Runner) -> float:
        measured = timing.measure(
            run, samples=self.samples, min_sample_seconds=self.min_sample_s, method="reference"
        )
        return work / measured.per_call.min

    def compute(self, n: int, dtype: str) -> float | None:
        if dtype != "float32":
            return None
        rng = np.random.default_rng(0)
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        out = np.empty((n, n), dtype=np.float32)

        def run(k: int) -> None:
            for _ in range(k):
                np.matmul(a, b, out=out)

        return self._rate(2 * n**3, run)

    def _parallel(self, kernel: Callable[[slice], object]) -> timing.Runner:
        def run(k: int) -> None:
            for _ in range(k):
                list(self.pool.map(kernel, self.slices))

        return run

    def bandwidth(self) -> Rates:
        a, b = self.a, self.b
        nbytes = a.nbytes

        def scale(s: slice) -> object:
            return np.multiply(a[s], np.float32(-1.0), out=a[s])

        def triad(s: slice) -> object:
            return np.subtract(b[s], a[s], out=a[s])

        return {
            "scale": self._rate(2 * nbytes, self._parallel(scale)),
            "triad": self._rate(3 * nbytes, self._parallel(triad)),
        }

    def describe(self) -> str:
        return f"numpy {np.__version__}, {self.threads} threads for streaming"


class TorchReference:
    """cuBLAS matmul and a device copy through torch, timed with CUDA events."""

    name = "torch"

    def __init__(self, plan: Plan, samples: int, min_sample_s: float) -> None:
        import torch

        self.torch = torch
        self.samples = samples
        self.min_sample_s = min_sample_s
        torch.backends.cuda.matmul.allow_tf32 = True  # jax's default float32 precision
        elements = plan.array_bytes // 4
        self.src = torch.ones(elements, device="cuda", dtype=torch.float32)
        self.dst = torch.empty_like(self.src)

    def _event_seconds(self, op: Callable[[], object], inner: int) -> float:
        torch = self.torch
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            op()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1e3

    def _rate(self, work: float, op: Callable[[], object]) -> float:
        op()
        self.torch.cuda.synchronize()
        inner = 1
        while (
            self._event_seconds(op, inner) < self.min_sample_s and inner < timing.DEFAULT_MAX_INNER
        ):
            inner *= 2
        per_call = [self._event_seconds(op, inner) / inner for _ in range(self.samples)]
        return work / Stats(per_call).min

    def compute(self, n: int, dtype: str) -> float | None:
        torch = self.torch
        kind = {"float32": torch.float32, "bfloat16": torch.bfloat16}.get(dtype)
        if kind is None:
            return None
        a = torch.randn(n, n, device="cuda", dtype=kind)
        b = torch.randn(n, n, device="cuda", dtype=kind)
        out = torch.empty(n, n, device="cuda", dtype=kind)
        return self._rate(2 * n**3, lambda: torch.matmul(a, b, out=out))

    def bandwidth(self) -> Rates:
        nbytes = self.src.numel() * self.src.element_size()
        return {"copy": self._rate(2 * nbytes, lambda: self.dst.copy_(self.src))}

    def describe(self) -> str:
        return f"torch {self.torch.__version__} (cuBLAS, CUDA events)"


Reference = NumpyReference | TorchReference


def _reference(backend: str, plan: Plan, quick: bool) -> tuple[Reference | None, str]:
    samples = timing.QUICK_SAMPLES if quick else timing.DEFAULT_SAMPLES
    min_sample = timing.QUICK_MIN_SAMPLE_SECONDS if quick else timing.DEFAULT_MIN_SAMPLE_SECONDS
    if backend == "cpu":
        return NumpyReference(plan, samples, min_sample), ""
    if backend in ("gpu", "cuda", "rocm"):
        try:
            return TorchReference(plan, samples, min_sample), ""
        except Exception as exc:
            return None, f"no torch reference: {type(exc).__name__}: {exc}"
    return None, f"no reference for backend {backend!r}"


def _reference_pass(ref: Reference, plan: Plan) -> dict[str, Rates]:
    """One pass: matmul at every size the project sweeps, per dtype, then the streaming kernels."""
    compute: Rates = {}
    for dtype in plan.matmul_dtypes:
        for n in plan.matmul_sizes:
            rate = ref.compute(n, dtype)
            if rate is not None:
                compute[f"{dtype} {n}"] = rate
    return {"compute": compute, "bandwidth": ref.bandwidth()}


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _ratio(project: float | None, reference: float | None) -> float | None:
    if project is None or not reference:
        return None
    return project / reference


def _fmt(value: float | None, unit: str) -> str:
    return "-" if value is None else f"{value / 1e9:8.1f} G{unit}"


def _gb(values: Sequence[float | None] | None) -> list[float | None]:
    return [None if v is None else round(v / 1e9, 1) for v in values or []]


def _spread(values: Sequence[float | None]) -> tuple[float | None, list[float] | None]:
    """The median of the ratios that exist and their (min, max); None without any."""
    known = [v for v in values if v is not None]
    if not known:
        return None, None
    return median(known), [min(known), max(known)]


def lean(plan: Plan) -> Plan:
    """``plan`` measuring only what the benchmark compares: float32 matmuls, streams and
    dispatch (a shorter round sits closer in time to the reference passes around it)."""
    return dataclasses.replace(plan, levels=None, rates=None, patterns=None, launch=False,
                               conv_sizes=(), batch_sides=(), matmul_dtypes=("float32",))


def _round_ratios(project: dict[str, Any], before: dict[str, Rates] | None,
                  after: dict[str, Rates] | None) -> dict[str, Any]:
    """One round's ratios: the project's float32 matmul peak over the reference at the same
    size, and its best stream over the reference's best, each reference the mean of the passes
    around the round."""
    passes = [p for p in (before, after) if p is not None]
    f32 = next((e for e in project["compute"]
                if e.get("op", "matmul") == "matmul" and e["dtype"] == "float32"
                and e.get("precision", "default") == "default"), None)
    key = f"float32 {f32['size']}" if f32 and f32.get("size") else None
    compute_refs = [p["compute"][key] for p in passes if key and key in p["compute"]]
    bandwidth_refs = [max(p["bandwidth"].values()) for p in passes if p["bandwidth"]]
    compute_ref = _mean(compute_refs) if compute_refs else None
    bandwidth_ref = _mean(bandwidth_refs) if bandwidth_refs else None
    stream: dict[str, Any] = next((e for e in project["bandwidth"]
                                   if e["name"] == project["peak_bandwidth"]["name"]), {})
    return {
        "compute_ratio": _ratio(project["peak_compute"]["value"], compute_ref),
        "bandwidth_ratio": _ratio(project["peak_bandwidth"]["value"], bandwidth_ref),
        "compute": {"project": project["peak_compute"]["value"], "size": key,
                    "project_rounds": f32.get("rounds") if f32 else None,
                    "reference": compute_ref},
        "bandwidth": {"project": project["peak_bandwidth"]["value"],
                      "kernel": project["peak_bandwidth"]["name"],
                      "project_rounds": stream.get("rounds"),
                      "huge_pages": stream.get("huge_pages"), "reference": bandwidth_ref},
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer samples")
    parser.add_argument("--rounds", type=int, default=7,
                        help="interleaved rounds of reference and project (default 7)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    started = time.perf_counter()

    import jax

    backend = jax.default_backend()
    device = jax.devices()[0]
    cache = host.read_cache_bytes() if backend == "cpu" else None
    free = host.free_memory_bytes(device)
    plan = plan_for(backend, quick=args.quick, cache_bytes=cache, free_bytes=free)

    ref, why_not = _reference(backend, plan, args.quick)
    passes: list[dict[str, Rates] | None] = [_reference_pass(ref, plan) if ref else None]
    projects: list[dict[str, Any]] = []
    rounds: list[dict[str, Any]] = []
    project_seconds = 0.0
    for i in range(args.rounds):
        project_started = time.perf_counter()
        project = ceilings.measure_ceilings(quick=args.quick, plan=plan if i == 0 else lean(plan))
        if i == 0:
            project_seconds = time.perf_counter() - project_started
        passes.append(_reference_pass(ref, plan) if ref else None)
        projects.append(project)
        rounds.append(_round_ratios(project, passes[i], passes[i + 1]))
        print(f"round {i + 1}: compute ratio {rounds[-1]['compute_ratio']}, "
              f"bandwidth ratio {rounds[-1]['bandwidth_ratio']}", flush=True)

    first = projects[0]
    print(
        f"backend {backend} ({first['device_kind']}); reference: "
        f"{ref.describe() if ref else why_not}"
    )
    print(
        f"plan: matmul sizes {plan.matmul_sizes}, arrays {plan.array_bytes // MiB} MiB,"
        f" last-level cache {cache} B, {plan.samples} samples, {args.rounds} rounds"
    )
    header = "".join(f"{'round ' + str(i + 1):>14}" for i in range(args.rounds))
    print(f"{'quantity':<30}{header}")
    for name, unit, group, key in (
        ("project matmul float32", "FLOP/s", "compute", "project"),
        ("reference matmul float32", "FLOP/s", "compute", "reference"),
        ("project stream", "B/s", "bandwidth", "project"),
        ("reference stream", "B/s", "bandwidth", "reference"),
    ):
        print(f"{name:<30}" + "".join(f"{_fmt(r[group][key], unit):>14}" for r in rounds))
    for key in ("compute_ratio", "bandwidth_ratio"):
        print(f"{key:<30}" + "".join(
            f"{'-' if r[key] is None else format(r[key], '.3f'):>14}" for r in rounds))
    print("project matmul sizes (GFLOP/s in each of its rounds): " + "; ".join(
        f"{r['compute']['size']} {_gb(r['compute']['project_rounds'])}" for r in rounds))
    print("project stream kernels (GB/s in each of its rounds; huge pages): " + "; ".join(
        f"{r['bandwidth']['kernel']} {_gb(r['bandwidth']['project_rounds'])} "
        f"{r['bandwidth']['huge_pages']}" for r in rounds))
    for entry in first["compute"]:
        if entry.get("op", "matmul") != "matmul":  # no NumPy or torch reference for it
            print(f"{entry['name'] + ' ' + str(entry['size']):<30}"
                  f"{_fmt(entry['value'], 'FLOP/s'):>14}")
    dispatch = first["dispatch"]["value"]
    print(f"dispatch floor: {dispatch * 1e6:.2f} us" if dispatch else "dispatch floor: -")

    compute_ratio, compute_range = _spread([r["compute_ratio"] for r in rounds])
    bandwidth_ratio, bandwidth_range = _spread([r["bandwidth_ratio"] for r in rounds])
    print(
        f"median compute ratio {compute_ratio} (range {compute_range}), median bandwidth ratio "
        f"{bandwidth_ratio} (range {bandwidth_range}); the first measure_ceilings took "
        f"{project_seconds:.1f} s, everything {time.perf_counter() - started:.1f} s"
    )
    summary = {
        "backend": backend,
        "quick": args.quick,
        "rounds": args.rounds,
        "compute_ratio": compute_ratio,
        "compute_ratio_range": compute_range,
        "bandwidth_ratio": bandwidth_ratio,
        "bandwidth_ratio_range": bandwidth_range,
        "targets": TARGETS,
        "met": {
            key: (value is not None and value >= TARGETS[key])
            for key, value in (
                ("compute_ratio", compute_ratio),
                ("bandwidth_ratio", bandwidth_ratio),
            )
        },
        "per_round": rounds,
        "reference": ref.describe() if ref else why_not,
        "measure_ceilings_seconds": round(project_seconds, 2),
    }
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
