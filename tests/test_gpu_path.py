"""The GPU path, tested without a GPU: device facts, recorded GPU cost analyses, rendering.

What these cannot show (real TF32 and bf16 ceilings, cuBLAS custom calls in real HLO, timings of
enqueued calls) is what benchmarks/gpu_check.sh checks on a machine with a GPU.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from roofline_report.report import views as render
from roofline_report.results import io as results
from roofline_report.results import schema

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "cpu_results.json"

# XLA's cost analysis of tanh(x @ w) @ v on an H200 (jax 0.11.2), as recorded in the project's
# facts: the cuBLAS gemms are custom calls costed -1 and the totals silently add the -1s.
H200_COST = {"flops": -1.0, "transcendentals": 256.0, "bytes accessed": -1.0,
             "optimal_seconds": -1.0}


def _as_gpu(data: dict[str, Any]) -> dict[str, Any]:
    gpu = copy.deepcopy(data)
    gpu["environment"].update({"backend": "gpu", "device_kind": "NVIDIA H200",
                               "compute_capability": "9.0",
                               "device_memory_bytes": 150_000_000_000})
    seed = next(w for w in gpu["workloads"] if w["name"] == "seed_tanh_matmul")
    seed["xla"] = {"available": True, "reason": "", "raw": dict(H200_COST),
                   "values": {"flops": -1.0, "transcendentals": 256.0, "bytes accessed": -1.0}}
    # The reconciliation is derived at render time from these observations.
    seed["compiled"] = {**seed["compiled"], "kernels": 2,
                        "custom_calls": [{"name": "custom-call", "target": "__cublas$gemm",
                                          "shape": "f32[32,8]", "bytes": 1024}]}
    return gpu


@pytest.fixture(scope="module")
def gpu_rendered() -> render.Rendered:
    return render.render(_as_gpu(results.load(FIXTURE)))


def test_cublas_minus_one_is_never_a_number(gpu_rendered: render.Rendered) -> None:
    html = gpu_rendered.html
    start = html.index('id="reconciliation"')
    section = html[start:html.index("</section>", start)]
    seed_table = section.split("<h3>")[1].split("</table>")[0]
    assert '<span class="v">-1' not in seed_table  # never shown as a value
    # XLA's flops and bytes (the kernel-sum and JAX-estimate columns may add their own)
    assert seed_table.count('<span class="v">unknown</span>') >= 2
    assert "cuBLAS" in seed_table  # and the reason is given


def test_device_and_preset_are_shown(gpu_rendered: render.Rendered) -> None:
    html = gpu_rendered.html
    assert "NVIDIA H200" in html
    assert "compute capability" in html
    assert "Spec sheet: H200" in html
    assert "matched to this device" in html
    # Every spec-sheet roof of the matched chip is drawn, each with its value.
    figure = gpu_rendered.figures["measured_roofline"]
    assert "H200: bf16 989 TFLOP/s" in figure
    assert "H200: HBM 4.8 TB/s" in figure


def test_preset_is_matched_automatically() -> None:
    from roofline_report.analysis import analyse as analysis

    a = analysis.Assumptions()
    saved = results.read(FIXTURE)

    def run(device_kind: str, preset: str | None = None) -> schema.Results:
        return saved.model_copy(update={
            "environment": saved.environment.model_copy(update={"device_kind": device_kind}),
            "options": saved.options.model_copy(update={"preset": preset})})

    got = analysis.preset_record(run("NVIDIA H100 80GB HBM3"), a)
    assert got is not None and got.preset.name == "H100 SXM"
    assert got.chosen == "matched to this device"
    assert analysis.preset_record(run("cpu"), a) is None
    chosen = analysis.preset_record(run("cpu", "A100"), a)
    assert chosen is not None and chosen.preset.name == "A100" and chosen.chosen == "by name"


@pytest.mark.slow
def test_gpu_results_survive_a_round_trip(tmp_path: Path) -> None:
    gpu = _as_gpu(results.load(FIXTURE))
    text = results.dumps(gpu)
    again = results.loads(text)
    assert render.render(again).html == render.render(gpu).html


@pytest.mark.slow
def test_gpu_ceilings_measure_float32_at_default_and_highest_precision(
        monkeypatch: pytest.MonkeyPatch) -> None:
    jax = pytest.importorskip("jax")
    from roofline_report.observe.ceilings import machine as ceilings
    from roofline_report.observe.ceilings.plan import Plan

    tiny = Plan(matmul_sizes=(32,), matmul_max_call_s=1.0,
                         matmul_dtypes=("float32", "bfloat16"), array_bytes=1 << 20, samples=3,
                         min_sample_s=1e-3, sweep_samples=2, sweep_min_sample_s=5e-4,
                         budget_s=0.2, huge_pages=False)
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    data = ceilings.measure_ceilings(quick=True, plan=tiny)
    names = [e["name"] for e in data["compute"]]
    assert names == ["matmul float32", "matmul bfloat16", "matmul float32 (highest precision)"]
    default, highest = data["compute"][0], data["compute"][2]
    assert "TF32" in default["reason"]
    assert highest["precision"] == "highest" and highest["available"]


@pytest.mark.slow
def test_a_failed_float32_check_on_gpu_names_tf32(monkeypatch: pytest.MonkeyPatch) -> None:
    jax = pytest.importorskip("jax")
    import numpy as np

    from roofline_report.observe import run as measure
    from roofline_report.observe import workloads

    seed = workloads.SEED
    # A reference a little off, as TF32 would make it, on a backend that says it is a GPU.
    off = dataclasses.replace(seed, reference=lambda a, b: np.tanh(a @ b) * (1 + 1e-3))
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    skips = measure.Skips()
    record = measure.measure_workload(off, quick=True, skips=skips, keep_text=False)
    assert record["check"]["passed"] is False
    assert "TF32" in record["check"]["note"]
    assert any("TF32" in s["reason"] for s in skips.items)


@pytest.mark.slow
def test_the_gpu_capture_script_reads_back_what_it_traced(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """benchmarks/capture_gpu_trace.py on the default backend (here the CPU): every kernel of
    the traced step timed, one sample per step, the summary's keys those of today's records."""
    pytest.importorskip("flax")
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location(
        "capture_gpu_trace", REPO / "benchmarks" / "capture_gpu_trace.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(["--steps", "2", "--logdir", str(tmp_path / "trace"),
                 "--out", str(tmp_path / "report")])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    (w,) = summary["workloads"]
    assert w["per"] == "step" and len(w["steps_s"]) == 2 and len(w["calls"]) == 2
    assert w["kernels"] == w["timed"] > 0 and not w["untimed"] and not w["unmatched"]
    assert len(w["busiest_kernels"]) == 5
    assert all(len(k["busy_s"]) == 2 for k in w["busiest_kernels"])
    assert (tmp_path / "report" / "report.html").is_file()
