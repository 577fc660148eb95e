"""The held-out suite's structure, the prediction script's scoring, and the pieces of
benchmarks/kernels_alone.py that do not time anything (a kernel cut out of the HLO, busy time
from trace events, the agreement test)."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import kernels_alone as alone
from benchmarks import prediction
from benchmarks.heldout import PROGRAMS
from roofline_report.config import load_config
from roofline_report.errors import EXIT_INPUT
from roofline_report.hlo import ir, shapes
from roofline_report.results import io as results
from roofline_report.traces.events import kernel_times, xspace_text

REPO = Path(__file__).resolve().parent.parent
HELDOUT = REPO / "benchmarks" / "heldout"
FIXTURES = REPO / "tests" / "fixtures"

# ------------------------------------------------------------------------------ the suite


def _setup_parameters(module: str) -> list[str]:
    """The keyword parameters of ``setup`` in benchmarks/heldout/<module>.py (read, not run)."""
    tree = ast.parse((HELDOUT / f"{module}.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "setup":
            assert len(node.args.defaults) == len(node.args.args), \
                f"{module}.setup: every parameter needs a default"
            return [a.arg for a in node.args.args]
    raise AssertionError(f"{module} has no setup function")


def test_the_suite_has_ten_programs_never_used_for_fitting() -> None:
    assert len(PROGRAMS) >= 10
    assert len(set(PROGRAMS)) == len(PROGRAMS)
    doc = (HELDOUT / "__init__.py").read_text(encoding="utf-8")
    head = doc.split("\n\n")[1]
    assert "never used to choose or fit any rate" in " ".join(head.split())
    for module in PROGRAMS:
        assert module in doc, f"{module} is not described in the package docstring"


def test_the_config_lists_every_program_with_its_setup_parameters() -> None:
    config = load_config(HELDOUT / "heldout.toml")
    setups = {spec.setup: spec for spec in config.workloads}
    assert sorted(s.split(":")[0] for s in setups if s) == sorted(PROGRAMS)
    for spec in config.workloads:
        module, function = str(spec.setup).split(":")
        assert function == "setup"
        assert set(spec.dims) <= set(_setup_parameters(module)), spec.name
    names = prediction.heldout_names(HELDOUT / "heldout.toml")
    assert names == [f"user:{spec.name}" for spec in config.workloads]


def test_programs_import_nothing_from_each_other_or_the_project() -> None:
    for module in PROGRAMS:
        tree = ast.parse((HELDOUT / f"{module}.py").read_text(encoding="utf-8"))
        imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                    if isinstance(node, ast.Import) for alias in node.names}
        imported |= {str(node.module).split(".")[0] for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and node.level == 0}
        assert not imported & ({"roofline_report", "benchmarks", *PROGRAMS}), module
        assert not any(isinstance(node, ast.ImportFrom) and node.level
                       for node in ast.walk(tree)), f"{module} has a relative import"


# ------------------------------------------------------------------------------ prediction


def _kernel(name: str, predicted: float, measured: float) -> prediction.KernelScore:
    return prediction.KernelScore(name, "elementwise", predicted, measured, None)


def test_summary_scores_programs_and_kernels_of_at_least_50_us() -> None:
    a = prediction.Score("user:a", "a", 2e-3, 1e-3, "memory", (
        _kernel("k1", 60e-6, 40e-6),     # under 50 us measured: left out
        _kernel("k2", 50e-6, 100e-6),    # error 0.5
    ))
    b = prediction.Score("user:b", "b", 1e-3, 1e-3, "compute", (
        _kernel("k3", 300e-6, 200e-6),   # error 0.5
        _kernel("k4", 200e-6, 200e-6),   # error 0
    ))
    out = prediction.summary([a, b], [a, b], "them", "heldout")
    assert out["points"] == 2 and out["median_error"] == pytest.approx(0.5)
    assert out["kernels"] == 3 and out["kernel_median_error"] == pytest.approx(0.5)
    assert (out["kernels_of"], out["suite"]) == ("them", "heldout")
    # The largest absolute misses first, whatever their size.
    assert [k.name for k in prediction.worst_kernels(a)] == ["k2", "k1"]
    assert [k.name for k in prediction.worst_kernels(b, 1)] == ["k3"]


def test_catalog_suite_scores_a_saved_run(capsys: pytest.CaptureFixture[str]) -> None:
    code = prediction.main(["--from-json", str(FIXTURES / "cpu_results.json"), "--no-step"])
    assert code == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["suite"] == "catalog" and out["points"] > 0 and out["kernels"] > 0
    assert 0 <= out["median_error"] <= out["p90_error"]


def test_heldout_suite_refuses_a_run_without_its_programs(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = prediction.main(["--suite", "heldout", "--from-json",
                            str(FIXTURES / "cpu_results.json")])
    assert code == EXIT_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "heldout.toml" in err[0]


# ------------------------------------------------------------------------------ kernels alone

SMALL_HLO = """HloModule jit_f, entry_computation_layout={(f32[4,8]{1,0}, f32[8,2]{1,0})->f32[4]{0}}

%region_0.1 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %add.1 = f32[] add(%a, %b), metadata={op_name="jit(f)/add" stack_frame_id=3}
}

%fused_computation (param_0: f32[4,8], param_1: f32[]) -> f32[4] {
  %param_0 = f32[4,8]{1,0} parameter(0)
  %param_1 = f32[] parameter(1)
  %bitcast.1 = f32[4,1,8]{2,0,1} bitcast(%param_0)
  %reshape.2 = f32[4,8]{1,0} reshape(%bitcast.1)
  ROOT %reduce.3 = f32[4]{0} reduce(%reshape.2, %param_1), dimensions={1}, to_apply=%region_0.1
}

ENTRY %main.4 (x.1: f32[4,8], w.1: f32[8,2]) -> f32[4] {
  %x.1 = f32[4,8]{1,0} parameter(0), metadata={op_name="x"}
  %w.1 = f32[8,2]{1,0} parameter(1)
  %constant.5 = f32[] constant(-inf)
  %dot.6 = f32[4,2]{1,0} dot(%x.1, %w.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="d" stack_frame_id=1}
  %sort.7 = f32[4,8]{1,0} sort(%x.1), dimensions={1}, to_apply=%compare.8
  ROOT %reduce_fusion = f32[4]{0} fusion(%x.1, %constant.5), kind=kInput, calls=%fused_computation
}
"""  # noqa: E501


def test_a_fusion_alone_is_its_fused_computation_as_entry() -> None:
    m = alone.alone_module(SMALL_HLO, "reduce_fusion")
    assert m.how == "fused computation"
    assert "ENTRY %fused_computation (" in m.text
    assert "%region_0.1 (" in m.text and m.text.index("%region_0.1") < m.text.index("ENTRY")
    assert "metadata" not in m.text and "%dot.6" not in m.text
    # The bitcast only inserts a dimension of size 1: it is written as a reshape.
    assert " bitcast(" not in m.text and "f32[4,1,8]{2,0,1} reshape(%param_0)" in m.text
    assert [(p.dtype, p.dims, p.constant) for p in m.parameters] == [
        ("f32", (4, 8), None), ("f32", (), "-inf")]
    parsed = ir.parse_module(m.text)
    assert parsed.entry == "fused_computation"


def test_a_bare_instruction_alone_is_wrapped_with_its_operands_as_parameters() -> None:
    m = alone.alone_module(SMALL_HLO, "dot.6")
    assert m.how == "wrapped instruction"
    assert "ROOT %dot.6 = f32[4,2]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}" in m.text
    assert [(p.dims, p.layout) for p in m.parameters] == [((4, 8), "{1,0}"), ((8, 2), "{1,0}")]
    parsed = ir.parse_module(m.text)
    root = parsed.computations["alone"].root
    assert root is not None and root.operands == ("p0", "p1")


def test_a_kernel_that_cannot_run_alone_says_why() -> None:
    with pytest.raises(KeyError):
        alone.alone_module(SMALL_HLO, "no_such_kernel")
    with pytest.raises(ValueError, match=r"compare\.8"):  # its comparator is not in the text
        alone.alone_module(SMALL_HLO, "sort.7")
    moved = SMALL_HLO.replace("f32[4,1,8]{2,0,1} bitcast", "f32[8,4]{0,1} bitcast")
    with pytest.raises(ValueError, match="changes the layout"):
        alone.alone_module(moved, "reduce_fusion")


def test_row_major_ignores_dimensions_of_size_one() -> None:
    shape = shapes.parse_shape
    assert alone._row_major(shape("f32[8,4,64,1,32]{4,2,1,0,3}"))
    assert alone._row_major(shape("f32[2,3]{1,0}")) and alone._row_major(shape("f32[]"))
    assert not alone._row_major(shape("f32[2,3]{0,1}"))
    assert not alone._row_major(shape("(f32[2], f32[3])"))


def test_the_scan_fixture_kernels_cut_out_and_compile_with_jaxlib() -> None:
    hlo = (FIXTURES / "cpu_scan_hlo.txt").read_text(encoding="utf-8")
    m = alone.alone_module(hlo, "wrapped_tanh")  # a kernel inside a while body
    assert [p.dims for p in m.parameters] == [(256, 256)]
    executable = alone.compile_hlo(m.text)
    arrays = alone._inputs(m.parameters, seed=0)
    assert alone._call(executable, arrays) > 0
    kernels = alone._alone_kernels(executable)
    assert [k["kind"] for k in kernels] == ["kLoop"]


def _profile(events: dict[str, list[dict[str, object]]]) -> object:
    from jax.profiler import ProfileData

    return ProfileData.from_text_proto(xspace_text({"/host:CPU": events}))


def test_busy_time_sums_each_kernels_own_events_per_call() -> None:
    def ev(name: str, start: float, dur: float, run: int, module: str = "jit_f"
           ) -> dict[str, object]:
        return {"name": name, "start_ns": start, "duration_ns": dur,
                "stats": {"hlo_op": name, "hlo_module": module, "run_id": run}}

    profile = _profile({
        "a": [ev("dot.1", 0, 100, 7), ev("dot.1", 150, 50, 7), ev("fusion", 300, 40, 7),
              ev("dot.1", 1000, 80, 3), ev("other", 1100, 999, 3, module="jit_g")],
        "b": [{"name": "end: dot.1", "start_ns": 900, "duration_ns": 5, "stats": {}},
              ev("fusion", 1200, 60, 3)],
    })
    # kernels_alone takes busy times from the trace's kernel_timing record, the one reader.
    record = kernel_times(profile, module="jit_f")
    busy = {row["name"]: row["busy_s"] for row in record["kernels"]}
    assert busy == {"dot.1": pytest.approx([150e-9, 80e-9]),
                    "fusion": pytest.approx([40e-9, 60e-9])}


def test_agreement_is_overlap_of_the_two_spreads() -> None:
    assert alone.overlap((1.0, 2.0), (2.0, 3.0))
    assert alone.overlap((1.0, 5.0), (2.0, 3.0))
    assert not alone.overlap((1.0, 1.9), (2.0, 3.0))
    assert alone.quartiles([3.0, 1.0, 2.0, 4.0, 5.0]) == (2.0, 3.0, 4.0)


def test_per_call_sums_need_samples_of_the_same_calls() -> None:
    assert alone._per_call_sums([[1.0, 2.0], [10.0, 20.0]]) == [11.0, 22.0]
    assert alone._per_call_sums([[1.0, 2.0], [10.0]]) == []
    assert alone._per_call_sums([]) == []


def test_kernels_alone_gathers_the_trace_record_it_is_given(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark reads per-kernel samples from kernel_timing records as results.json holds
    them (span_s per traced call, launches per call, a program time per call)."""
    from jax.profiler import ProfileData

    from roofline_report.hlo.kernels import kernel_inventory

    fixtures = Path(__file__).parent / "fixtures"
    profile = ProfileData.from_text_proto((fixtures / "cpu_scan_trace.pbtxt").read_text())
    inventory = kernel_inventory((fixtures / "cpu_scan_hlo.txt").read_text())
    by_name = {k["name"]: k for k in inventory["kernels"]}
    names = set(by_name)
    monkeypatch.setattr(alone, "trace_program", lambda *a: (profile, [1e-3] * 5))
    traces = alone._Traces(inventory["module"], by_name, {}, {}, {}, {}, {}, [], [], [], [])
    traces.add(None, (), {}, 5)
    assert traces.span and set(traces.span) <= names
    assert set(traces.held) == set(traces.queued) == set(traces.span)
    # Each kernel's share of the machine is at most the span less its wait, at most the span.
    assert all(0 <= h <= q + 1e-12 <= s + 2e-12 for name in traces.span
               for h, q, s in zip(traces.held[name], traces.queued[name], traces.span[name],
                                  strict=True))
    assert all(len(v) >= 1 and all(x > 0 for x in v) for v in traces.span.values())
    assert len(traces.program) >= 1 and traces.untraced == [1e-3] * 5
    assert all(n >= 1 for n in traces.launches.values())


def test_the_prediction_benchmark_measures_its_ceilings_in_a_cache_of_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Measured in the run by default (an empty cache folder), the user's cache untouched and
    the variable restored after; ``--cached-ceilings`` (None) leaves the environment alone."""
    import os

    monkeypatch.setenv(prediction.CACHE_ENV, "/users/own/cache")
    with prediction._ceilings_cache(tmp_path / "fresh"):
        assert os.environ[prediction.CACHE_ENV] == str(tmp_path / "fresh")
    assert os.environ[prediction.CACHE_ENV] == "/users/own/cache"
    monkeypatch.delenv(prediction.CACHE_ENV)
    with prediction._ceilings_cache(tmp_path / "fresh"):
        assert os.environ[prediction.CACHE_ENV] == str(tmp_path / "fresh")
    assert prediction.CACHE_ENV not in os.environ
    with prediction._ceilings_cache(None):
        assert prediction.CACHE_ENV not in os.environ


def test_catalog_suite_scores_the_training_step_of_a_saved_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A saved run holding the training step (a run of examples/transformer.toml beside the
    catalog) scores its kernels, and never counts it among the catalog's programs."""
    data = results.load(FIXTURES / "cpu_results.json")
    timed = [w for w in data["workloads"] if (w.get("kernel_timing") or {}).get("available")]
    assert timed, "the fixture holds a workload with traced kernels"
    renamed = {**timed[0], "name": prediction.STEP_NAME}
    data["workloads"] = [renamed if w is timed[0] else w for w in data["workloads"]]
    saved = tmp_path / "results.json"
    saved.write_text(results.dumps(data), encoding="utf-8")
    assert prediction.main(["--from-json", str(saved)]) == 0
    with_step = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert prediction.main(["--from-json", str(saved), "--no-step"]) == 0
    without = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert with_step["kernels_of"] == prediction.STEP_NAME
    assert without["kernels_of"] == "the catalog"
    assert with_step["points"] == without["points"]  # the step is no catalog program either way


def test_a_run_times_the_users_programs_first_and_keeps_the_catalogs_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from roofline_report.observe import run as run_mod

    timed: list[str] = []

    def fake_measure(w: Any, **_k: Any) -> dict[str, Any]:
        timed.append(w.title)
        return {"name": w.title}

    catalog = [SimpleNamespace(title="a", sweep=None), SimpleNamespace(title="b", sweep=None)]
    monkeypatch.setattr(run_mod, "catalog", lambda: catalog)
    monkeypatch.setattr(run_mod, "measure_workload", fake_measure)
    monkeypatch.setattr(run_mod.results_mod, "validate", lambda *_a, **_k: None)
    options = run_mod.RunOptions(quick=True, ceilings=False, sweeps=False, sharding=False,
                                 experiments=False,
                                 user_workloads=(SimpleNamespace(title="mine", sweep=None),))  # type: ignore[arg-type]
    out = run_mod.run(options)
    assert timed == ["mine", "a", "b"]
    assert [w["name"] for w in out["workloads"]] == ["a", "b", "mine"]
