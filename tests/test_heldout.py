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
from roofline_report.errors import EXIT_INPUT, InputError
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


def test_the_suite_has_sixteen_programs_never_used_for_fitting() -> None:
    assert len(PROGRAMS) >= 16
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


def test_each_suite_names_its_worst_programs_with_the_reason_on_their_rows(
        capsys: pytest.CaptureFixture[str]) -> None:
    scores = [prediction.Score("user:a", "a", 1e-3, 1e-3, "memory"),
              prediction.Score("user:b", "b", 1e-3, 4e-3, "compute",
                               why="loop: its iterations run one after the other"),
              prediction.Score("user:c", "c", 1e-3, 2e-3, "memory")]
    out = prediction.summary(scores, scores, "them", "heldout")
    worst = out["worst_programs"]
    assert [w["name"] for w in worst] == ["b", "c", "a"]
    assert worst[0]["error"] == pytest.approx(0.75)
    assert worst[0]["reason"] == "loop: its iterations run one after the other"
    assert worst[1]["reason"] == ""
    prediction.print_worst(scores, "held-out")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "worst programs of the held-out suite:"
    assert lines[1].lstrip().startswith("b ") and lines[1].endswith(
        "(loop: its iterations run one after the other)")
    assert lines[2].endswith("(the analysis names no reason)")


def test_both_suites_refuse_a_run_without_the_heldout_programs(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = prediction.main(["--suite", "both", "--from-json",
                            str(FIXTURES / "cpu_results.json")])
    assert code == EXIT_INPUT
    captured = capsys.readouterr()
    assert "worst programs of the catalog suite:" in captured.out
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "heldout.toml" in err[0]


def test_both_suites_score_one_run_separately(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run holding catalog and held-out programs gives each suite its own summary; a
    held-out program is never counted among the catalog's."""
    data = results.load(FIXTURES / "cpu_results.json")
    catalog_alone = prediction.catalog(data, None)["points"]
    timed = [w for w in data["workloads"] if (w.get("kernel_timing") or {}).get("available")]
    name = prediction.heldout_names()[0]
    data["workloads"] = [{**w, "name": name} if w is timed[0] else w
                         for w in data["workloads"]]
    saved = tmp_path / "results.json"
    saved.write_text(results.dumps(data), encoding="utf-8")
    assert prediction.main(["--suite", "both", "--from-json", str(saved)]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out.strip().splitlines()[-1])
    assert (out["catalog"]["suite"], out["heldout"]["suite"]) == ("catalog", "heldout")
    assert out["heldout"]["points"] == 1 and out["catalog"]["points"] > 0
    assert [p["name"] for p in out["heldout"]["programs"]] == [timed[0]["title"]]
    assert out["catalog"]["points"] == catalog_alone - 1  # the renamed one is held-out now
    text = captured.out
    assert text.index("worst programs of the catalog suite:") < text.index(
        "worst programs of the held-out suite:")


def test_the_blind_programs_are_scored_apart_too(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The programs added after the model's changes (``BLIND``) get a summary of their own
    beside the whole held-out suite's; a run without them has none."""
    from benchmarks.heldout import BLIND

    assert BLIND and set(BLIND) < set(PROGRAMS)
    blind = prediction.heldout_names(blind=True)
    everyone = prediction.heldout_names()
    assert len(blind) == len(BLIND) and set(blind) < set(everyone)
    data = results.load(FIXTURES / "cpu_results.json")
    timed = [w for w in data["workloads"] if (w.get("kernel_timing") or {}).get("available")]
    renamed = {id(timed[0]): blind[0], id(timed[1]): everyone[0]}
    data["workloads"] = [{**w, "name": renamed[id(w)]} if id(w) in renamed else w
                         for w in data["workloads"]]
    saved = tmp_path / "results.json"
    saved.write_text(results.dumps(data), encoding="utf-8")
    assert prediction.main(["--suite", "heldout", "--from-json", str(saved)]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["points"] == 2 and out["blind"]["points"] == 1
    assert out["blind"]["suite"] == "blind"
    only_first = {**data, "workloads": [w for w in data["workloads"]
                                        if w.get("name") != blind[0]]}
    saved.write_text(results.dumps(only_first), encoding="utf-8")
    assert prediction.main(["--suite", "heldout", "--from-json", str(saved)]) == 0
    assert "blind" not in json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_catalog_suite_scores_a_saved_run(capsys: pytest.CaptureFixture[str]) -> None:
    code = prediction.main(["--from-json", str(FIXTURES / "cpu_results.json"), "--no-step"])
    assert code == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["suite"] == "catalog" and out["points"] > 0 and out["kernels"] > 0
    assert 0 < len(out["worst_programs"]) <= prediction.WORST_PROGRAMS
    assert all(isinstance(w["reason"], str) for w in out["worst_programs"])
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
    jax = pytest.importorskip("jax")
    if jax.default_backend() != "cpu":  # the kernel's fusion kind is XLA:CPU's
        pytest.skip("an XLA:CPU kernel compiled for the CPU; this backend fuses it otherwise")
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
    monkeypatch.setattr(run_mod, "catalog", lambda _backend="cpu": catalog)
    monkeypatch.setattr(run_mod, "measure_workload", fake_measure)
    monkeypatch.setattr(run_mod.results_mod, "validate", lambda *_a, **_k: None)
    options = run_mod.RunOptions(quick=True, ceilings=False, sweeps=False, sharding=False,
                                 experiments=False,
                                 user_workloads=(SimpleNamespace(title="mine", sweep=None),))  # type: ignore[arg-type]
    out = run_mod.run(options)
    assert timed == ["mine", "a", "b"]
    assert [w["name"] for w in out["workloads"]] == ["a", "b", "mine"]


# ------------------------------------------------------------------------------ cited programs
# The programs reimplemented from open-source models: each carries its citation, lowers,
# compiles, and computes what a NumPy reference of the same model computes (at small sizes).


def _load(module: str) -> Any:
    import importlib

    return importlib.import_module(f"benchmarks.heldout.{module}")


def _run(module: str, **dims: Any) -> tuple[Any, tuple[Any, ...], str]:
    """The program's NumPy inputs, its outputs as NumPy arrays and its compiled HLO text, run on
    jax's CPU device whatever the default backend: the references' tolerances and the HLO forms
    the tests name (an ``fft``, a ``scatter``, a ``while``) are XLA:CPU's; a TPU computes an
    FFT as matrix products and a float32 matmul at default precision in bfloat16. A test that
    calls it compiles and runs a whole program, as the pipeline does a workload's (seconds
    each): it is marked slow."""
    import jax
    import numpy as np

    with jax.default_device(jax.devices("cpu")[0]):
        fn, args = _load(module).setup(**dims)
        compiled = jax.jit(fn).lower(*args).compile()
        out = jax.tree.map(np.asarray, compiled(*args))
    return out, jax.tree.map(np.asarray, args), compiled.as_text()


def _sigmoid(x: Any) -> Any:
    import numpy as np

    return 1.0 / (1.0 + np.exp(-x))


def _close(got: Any, want: Any, tol: float = 2e-4) -> None:
    import numpy as np

    scale = max(1.0, float(np.max(np.abs(want))))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=tol * scale)


def test_the_cited_programs_name_repository_file_and_commit() -> None:
    import re

    from benchmarks.heldout import CITED

    assert len(CITED) >= 6 and len(PROGRAMS) >= 16 and set(CITED) <= set(PROGRAMS)
    for module in CITED:
        doc = ast.get_docstring(ast.parse((HELDOUT / f"{module}.py").read_text("utf-8")))
        assert doc is not None, module
        text = " ".join(doc.split())
        assert "Reimplemented (no code copied) from " in text, module
        repo = re.search(r"from ([\w.-]+/[\w.-]+),? ", text)
        assert repo is not None, f"{module} names no repository"
        assert re.search(r"``[\w./-]+\.py``", text), f"{module} names no file"
        assert re.search(r"commit [0-9a-f]{40}\b", text), f"{module} names no commit"


@pytest.mark.slow
def test_graph_net_matches_numpy_segment_sums() -> None:
    import numpy as np

    out, (params, nodes, edges, globals_, senders, receivers, n_node, n_edge), hlo = _run(
        "graph_net", graphs=3, nodes=40, edges=120, features=8, rounds=2)
    assert " scatter(" in hlo  # segment sums stay scatters after compiling

    def mlp(p: dict[str, Any], x: Any) -> Any:
        return np.maximum(x @ p["w1"] + p["b1"], 0) @ p["w2"] + p["b2"]

    assert n_node.sum() == 40 and n_edge.sum() == 120 and len(set(n_node.tolist())) > 1
    node_graph = np.repeat(np.arange(3), n_node)
    edge_graph = np.repeat(np.arange(3), n_edge)
    assert (node_graph[senders] == edge_graph).all() and (node_graph[receivers] == edge_graph).all()
    for _ in range(2):
        edges = mlp(params["edge"], np.concatenate(
            [edges, nodes[senders], nodes[receivers], globals_[edge_graph]], axis=-1))
        out_sum, in_sum = np.zeros_like(nodes), np.zeros_like(nodes)
        np.add.at(out_sum, senders, edges)
        np.add.at(in_sum, receivers, edges)
        nodes = mlp(params["node"], np.concatenate(
            [nodes, out_sum, in_sum, globals_[node_graph]], axis=-1))
        node_pool, edge_pool = np.zeros_like(globals_), np.zeros_like(globals_)
        np.add.at(node_pool, node_graph, nodes)
        np.add.at(edge_pool, edge_graph, edges)
        globals_ = mlp(params["global"], np.concatenate([node_pool, edge_pool, globals_], -1))
    for got, want in zip(out, (nodes, edges, globals_), strict=True):
        _close(got, want, 1e-3)


@pytest.mark.slow
def test_lstm_stack_matches_a_numpy_lstm() -> None:
    import numpy as np

    out, (params, xs), hlo = _run("lstm_stack", time=6, batch=3, features=5, hidden=7,
                                  layers=2, classes=4)
    assert " while(" in hlo
    for layer in params["layers"]:
        c = h = np.zeros((xs.shape[1], layer["whi"].shape[0]), np.float32)
        hs = []
        for x in xs:
            pre = {g: x @ layer[f"wi{g}"] + h @ layer[f"wh{g}"] + layer[f"bh{g}"] for g in "ifgo"}
            c = _sigmoid(pre["f"]) * c + _sigmoid(pre["i"]) * np.tanh(pre["g"])
            h = _sigmoid(pre["o"]) * np.tanh(c)
            hs.append(h)
        xs = np.stack(hs)
    _close(out, xs[-1] @ params["head"]["w"] + params["head"]["b"])


@pytest.mark.slow
def test_fnet_matches_numpy_fft_mixing() -> None:
    import numpy as np

    out, (params, x), hlo = _run("fnet_fourier", batch=2, seq=8, width=16, hidden=32, blocks=2)
    assert " fft(" in hlo

    def norm(v: Any, scale: Any, bias: Any) -> Any:
        mean = v.mean(-1, keepdims=True)
        return (v - mean) / np.sqrt(((v - mean) ** 2).mean(-1, keepdims=True) + 1e-12) * scale \
            + bias

    def gelu(v: Any) -> Any:  # jax.nn.gelu's default, the tanh approximation
        return 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))

    for p in params:
        x = norm(x + np.fft.fftn(x, axes=(1, 2)).real, p["mix_scale"], p["mix_bias"])
        x = norm(x + gelu(x @ p["w_in"] + p["b_in"]) @ p["w_out"] + p["b_out"],
                 p["out_scale"], p["out_bias"])
    _close(out, x, 1e-3)


@pytest.mark.slow
def test_int8_mlp_multiplies_int8_and_matches_numpy_integers() -> None:
    import numpy as np

    out, (params, x), hlo = _run("int8_mlp", tokens=8, width=32, hidden=64, outputs=16)
    assert params["w1"].dtype == np.int8 and params["w2"].dtype == np.int8
    assert "s32" in hlo and "s8[" in hlo  # the products take int8 and accumulate in int32

    def dense(v: Any, w: Any, s: Any, b: Any) -> Any:
        absmax = np.abs(v).max(axis=1, keepdims=True)
        scale = np.where(absmax == 0, 1.0, absmax) / 127.0
        q = np.round(np.clip(v / scale, -127, 127)).astype(np.int64)
        return (q @ w.astype(np.int64)).astype(np.float64) * scale * s + b

    h = np.maximum(dense(x, params["w1"], params["s1"], params["b1"]), 0)
    _close(out, dense(h, params["w2"], params["s2"], params["b2"]), 2e-2)


@pytest.mark.slow
def test_mbconv_depthwise_convolution_matches_numpy() -> None:
    import numpy as np

    out, (params, x), hlo = _run("mbconv_depthwise", batch=2, size=6, channels=4, expand=3,
                                 kernel=3, blocks=2)
    assert "feature_group_count=12" in hlo  # the depthwise convolution, one group a channel

    def swish(v: Any) -> Any:
        return v * _sigmoid(v)

    for p in params:
        y = swish(np.einsum("bhwc,cd->bhwd", x, p["w_exp"][0, 0]) * p["s_exp"] + p["t_exp"])
        k = p["w_dw"].shape[0]
        padded = np.pad(y, ((0, 0), (k // 2, k // 2), (k // 2, k // 2), (0, 0)))
        dw = sum(padded[:, i:i + y.shape[1], j:j + y.shape[2], :] * p["w_dw"][i, j, 0]
                 for i in range(k) for j in range(k))
        y = swish(dw * p["s_dw"] + p["t_dw"])
        se = swish(y.mean(axis=(1, 2), keepdims=True) @ p["w_red"] + p["b_red"])
        y = y * _sigmoid(se @ p["w_se"] + p["b_se"])
        x = np.einsum("bhwc,cd->bhwd", y, p["w_pwl"][0, 0]) * p["s_pwl"] + p["t_pwl"] + x
    _close(out, x, 1e-3)


@pytest.mark.slow
def test_sampling_stops_when_every_sequence_has_ended_as_numpy_decides() -> None:
    """Each emitted token is the one NumPy's decoder picks from the same prefix (teacher
    forcing, so a near-tie decided differently in float32 cannot derail the rest), and the
    loop ran exactly until every sequence had emitted the end marker: a trip count the data
    decides, below the length."""
    import numpy as np

    module = _load("sample_until_eos")
    length = 48
    out, (params, prompts, noise, temperature), hlo = _run(
        "sample_until_eos", batch=4, length=length, prompt=3, vocab=64, hidden=16, k=6,
        eos_bias=2.0)
    assert " while(" in hlo and ("TopK" in hlo or " sort(" in hlo)
    eos = module.EOS
    batch = out.shape[0]
    np.testing.assert_array_equal(out[:, :3], prompts[:, :3])
    h = np.zeros((batch, params["w_h"].shape[0]))
    token = np.zeros(batch, np.int64)
    ended = np.zeros(batch, bool)
    decided = 0
    i = -1
    while i < length - 1 and not ended.all():
        h = np.tanh(params["embed"][token] + h @ params["w_h"] + params["b_h"])
        logits = h @ params["w_out"] + params["b_out"]
        order = np.argsort(-logits, axis=-1, kind="stable")
        top = np.take_along_axis(logits, order, -1)[:, :6] / temperature + noise[i + 1]
        choice = top.argmax(-1)
        sampled = order[np.arange(batch), choice]
        gaps = np.sort(top, -1)[:, -1] - np.sort(top, -1)[:, -2]
        edge = np.sort(logits, -1)[:, -6] - np.sort(logits, -1)[:, -7]
        want = np.where(prompts[:, i + 1] == 0, sampled, prompts[:, i + 1])
        want = np.where(ended, 0, want)
        clear = (gaps > 1e-4) & (edge > 1e-4)
        np.testing.assert_array_equal(out[clear, i + 1], want[clear])
        decided += int(clear.sum())
        token = out[:, i + 1].astype(np.int64)  # teacher forcing on the program's own choice
        ended |= token == eos
        i += 1
    trips = i + 1
    assert ended.all() and trips < length - 1, "the loop should stop on the data"
    assert (out[:, trips:] == 0).all()  # positions the loop never reached stay empty
    assert decided >= batch * trips // 2


def _np_layer_norm(x: Any, scale: Any, bias: Any, eps: float) -> Any:
    import numpy as np

    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps) * scale + bias


def _np_gelu_exact(x: Any) -> Any:
    import math

    import numpy as np

    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def _np_conv2d_same(x: Any, w: Any, b: Any) -> Any:
    """NHWC input, HWIO kernel, odd kernel, stride 1, zero padding to the same size."""
    import numpy as np

    k = w.shape[0]
    padded = np.pad(x, ((0, 0), (k // 2, k // 2), (k // 2, k // 2), (0, 0)))
    return sum(np.einsum("bhwc,cd->bhwd", padded[:, i:i + x.shape[1], j:j + x.shape[2]], w[i, j])
               for i in range(k) for j in range(k)) + b


@pytest.mark.slow
def test_vae_up_decoder_matches_numpy_group_norms_and_nearest_upsampling() -> None:
    import numpy as np

    out, (params, x), _ = _run("vae_up_decoder", batch=2, size=4, channels=16,
                               out_channels=8, layers=2, groups=4, colours=3)
    assert out.shape == (2, 8, 8, 3)

    def group_norm(v: Any, scale: Any, bias: Any) -> Any:
        g = v.reshape(*v.shape[:3], 4, v.shape[3] // 4)
        mean = g.mean(axis=(1, 2, 4), keepdims=True)
        var = g.var(axis=(1, 2, 4), keepdims=True)
        return ((g - mean) / np.sqrt(var + 1e-6)).reshape(v.shape) * scale + bias

    def swish(v: Any) -> Any:
        return v * _sigmoid(v)

    assert "w_short" in params["resnets"][0] and "w_short" not in params["resnets"][1]
    for p in params["resnets"]:
        h = _np_conv2d_same(swish(group_norm(x, p["n1_scale"], p["n1_bias"])), p["w1"], p["b1"])
        h = _np_conv2d_same(swish(group_norm(h, p["n2_scale"], p["n2_bias"])), p["w2"], p["b2"])
        short = _np_conv2d_same(x, p["w_short"], p["b_short"]) if "w_short" in p else x
        x = h + short
    x = np.repeat(np.repeat(x, 2, axis=1), 2, axis=2)
    x = _np_conv2d_same(x, params["w_up"], params["b_up"])
    x = swish(group_norm(x, params["out_scale"], params["out_bias"]))
    _close(out, _np_conv2d_same(x, params["w_out"], params["b_out"]), 1e-3)


@pytest.mark.slow
def test_t5_attention_matches_numpy_relative_buckets_and_mask() -> None:
    import math

    import numpy as np

    module = _load("t5_relative_attention")
    # The bucket of each key-minus-query offset, as T5 defines it: 16 buckets a direction,
    # the first 8 exact, then logarithmic up to 128 (seen from the middle of a long sequence).
    offsets = np.array([-250, -128, -127, -20, -8, -7, -1, 0, 1, 7, 8, 20, 127, 128, 250])
    grid = np.asarray(module.relative_buckets(501, 501, 32, 128))
    n = np.abs(offsets)
    large = np.minimum(8 + np.log(np.maximum(n, 1) / 8) / math.log(128 / 8) * 8, 15)
    want = np.where(offsets > 0, 16, 0) + np.where(n < 8, n, large.astype(int))
    np.testing.assert_array_equal(grid[250, 250 + offsets], want)
    assert want.max() == 31 and want.min() == 0

    out, (params, x, lengths), hlo = _run("t5_relative_attention", batch=3, seq=12, width=8,
                                          heads=2, hidden=16, layers=2)
    assert "gather" in hlo  # the bias table is gathered by bucket
    seq, heads = 12, 2
    index = np.arange(seq)
    bucket = np.asarray(module.relative_buckets(seq, seq, 32, 128))
    position = params["relative_bias"][bucket].transpose(2, 0, 1)  # (heads, query, key)
    mask = np.where(index[None, :] < lengths[:, None], 0.0, -3.4e38)[:, None, None, :]

    def rms(v: Any, w: Any) -> Any:
        return w * v / np.sqrt((v ** 2).mean(-1, keepdims=True) + 1e-6)

    def gelu(v: Any) -> Any:
        return 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))

    x = x.astype(np.float64)
    for p in params["layers"]:
        h = rms(x, p["attn_norm"])
        q, k, v = (np.reshape(h @ p[name], (3, seq, heads, -1)) for name in "qkv")
        scores = np.einsum("bqhd,bkhd->bhqk", q, k) + position[None] + mask
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        x = x + np.einsum("bhqk,bkhd->bqhd", weights, v).reshape(3, seq, -1) @ p["o"]
        h = rms(x, p["ff_norm"])
        x = x + (gelu(h @ p["wi_0"]) * (h @ p["wi_1"])) @ p["wo"]
    _close(out, rms(x, params["final_norm"]), 1e-3)
    assert len(set(lengths.tolist())) > 1 and lengths.min() < seq


@pytest.mark.slow
def test_wav2vec2_features_match_numpy_strided_and_grouped_convolutions() -> None:
    import numpy as np

    module = _load("wav2vec2_features")
    out, (params, audio), hlo = _run("wav2vec2_features", batch=2, samples=1600, conv_dim=8,
                                     hidden=12, pos_kernel=6, groups=3)
    assert "feature_group_count=3" in hlo  # the position embedding's grouped convolution

    def conv(v: Any, w: Any, stride: int) -> Any:
        taps = w.shape[0]
        frames = (v.shape[1] - taps) // stride + 1
        return sum(np.einsum("btc,cd->btd", v[:, k:k + stride * (frames - 1) + 1:stride], w[k])
                   for k in range(taps))

    x = audio[:, :, None].astype(np.float64)
    for p, stride in zip(params["convs"], module.STRIDES, strict=True):
        x = _np_gelu_exact(_np_layer_norm(conv(x, p["w"], stride) + p["b"], p["scale"],
                                          p["bias"], 1e-5))
    assert x.shape[1] == 4  # 1600 samples: 319, 159, 79, 39, 19, 9, 4 frames
    x = _np_layer_norm(x, params["proj_scale"], params["proj_bias"], 1e-5)
    x = x @ params["proj_w"] + params["proj_b"]
    v, g = params["pos_v"], params["pos_g"]
    kernel = (v / np.sqrt((v ** 2).sum(axis=(0, 1), keepdims=True)) * g).T  # (taps, in, out)
    padded = np.pad(x, ((0, 0), (3, 3), (0, 0)))
    pos = np.concatenate([conv(padded[:, :, 4 * i:4 * i + 4], kernel[:, :, 4 * i:4 * i + 4], 1)
                          for i in range(3)], axis=-1) + params["pos_b"]
    _close(out, x + _np_gelu_exact(pos[:, :-1]), 1e-3)


@pytest.mark.slow
def test_s5_parallel_scan_matches_a_numpy_recurrence() -> None:
    import numpy as np

    out, (params, x), hlo = _run("s5_scan", batch=2, length=37, features=6, state=4, layers=2)
    assert "c64" in hlo  # the state is complex

    def layer_norm(v: Any, scale: Any, bias: Any) -> Any:
        return _np_layer_norm(v, scale, bias, 1e-6)

    x = x.astype(np.float64)
    for p in params:
        lam = p["lambda_re"] + 1j * p["lambda_im"]
        lam_bar = np.exp(lam * np.exp(p["log_step"]))
        b_bar = ((lam_bar - 1) / lam)[:, None] * (p["b_re"] + 1j * p["b_im"])
        c = p["c_re"] + 1j * p["c_im"]
        u = layer_norm(x, p["norm_scale"], p["norm_bias"])
        state = np.zeros((x.shape[0], lam.shape[0]), complex)
        ys = []
        for k in range(x.shape[1]):  # one step after another, as the recurrence reads
            state = lam_bar * state + u[:, k] @ b_bar.T
            ys.append(2 * (state @ c.T).real + p["d"] * u[:, k])
        h = _np_gelu_exact(np.stack(ys, axis=1))
        x = x + h * _sigmoid(h @ p["w_gate"] + p["b_gate"])
    _close(out, x, 1e-3)


@pytest.mark.slow
def test_perceiver_cross_attention_matches_numpy_attention() -> None:
    import numpy as np

    out, (params, inputs), _ = _run("perceiver_encoder", batch=2, positions=40,
                                    channels=6, index=5, width=8, heads=2, self_attends=2,
                                    repeats=2)

    def norm(v: Any, scale: Any, bias: Any) -> Any:
        return _np_layer_norm(v, scale, bias, 1e-5)

    def gelu(v: Any) -> Any:
        return 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))

    def attend(p: dict[str, Any], q_in: Any, kv_in: Any, heads: int) -> Any:
        def split(v: Any) -> Any:
            return v.reshape(*v.shape[:2], heads, -1)

        q = split(q_in @ p["wq"] + p["bq"])
        k, v = split(kv_in @ p["wk"] + p["bk"]), split(kv_in @ p["wv"] + p["bv"])
        scores = np.einsum("bthd,bThd->bhtT", q, k) / np.sqrt(q.shape[-1])
        w = np.exp(scores - scores.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        return np.einsum("bhtT,bThd->bthd", w, v).reshape(*q_in.shape[:2], -1) @ p["wo"] \
            + p["bo"]

    def mlp(p: dict[str, Any], v: Any) -> Any:
        return gelu(v @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]

    c = params["cross"]
    z = np.broadcast_to(params["latents"], (2, 5, 8)).astype(np.float64)
    z = z + attend(c, norm(z, c["q_scale"], c["q_bias"]),
                   norm(inputs, c["kv_scale"], c["kv_bias"]), 1)
    z = z + mlp(c, norm(z, c["mlp_scale"], c["mlp_bias"]))
    for _ in range(2):
        for s in params["self"]:
            h = norm(z, s["q_scale"], s["q_bias"])
            z = z + attend(s, h, h, 2)
            z = z + mlp(s, norm(z, s["mlp_scale"], s["mlp_bias"]))
    _close(out, z, 1e-3)


def _np_rms_norm(x: Any, weight: Any, eps: float) -> Any:
    import numpy as np

    return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps) * weight


def _np_softmax(x: Any) -> Any:
    import numpy as np

    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _silu(x: Any) -> Any:
    return x * _sigmoid(x)


@pytest.mark.slow
def test_llama_decoder_matches_numpy_rotary_causal_attention_and_swiglu() -> None:
    import numpy as np

    out, (params, _, tokens), hlo = _run("llama_decoder", batch=2, seq=9, width=16,
                                             heads=2, hidden=24, layers=2, vocab=30)
    assert "c64" in hlo  # the rotation is a complex product
    batch, seq, heads, head_dim = 2, 9, 2, 8
    angles = np.outer(np.arange(seq), 10000.0 ** (-np.arange(0, head_dim, 2) / head_dim))
    cos, sin = np.cos(angles)[None, :, None], np.sin(angles)[None, :, None]

    def rotate(v: Any) -> Any:  # pairs (even, odd) turned by the angle of their position
        even, odd = v[..., 0::2], v[..., 1::2]
        turned = np.empty_like(v)
        turned[..., 0::2] = even * cos - odd * sin
        turned[..., 1::2] = even * sin + odd * cos
        return turned

    x = params["embedding"][tokens].astype(np.float64)
    future = np.triu(np.ones((seq, seq), bool), 1)
    for p in params["blocks"]:
        h = _np_rms_norm(x, p["attention_norm"], 1e-6)
        q, k, v = (h @ p[w] for w in ("wq", "wk", "wv"))
        q, k, v = (t.reshape(batch, seq, heads, head_dim) for t in (q, k, v))
        scores = np.einsum("bqhd,bkhd->bhqk", rotate(q), rotate(k)) / np.sqrt(head_dim)
        scores[..., future] = -np.inf
        attended = np.einsum("bhqk,bkhd->bqhd", _np_softmax(scores), v)
        x = x + attended.reshape(batch, seq, -1) @ p["wo"]
        h = _np_rms_norm(x, p["ffn_norm"], 1e-6)
        x = x + (_silu(h @ p["w1"]) * (h @ p["w3"])) @ p["w2"]
    _close(out, _np_rms_norm(x, params["final_norm"], 1e-6) @ params["lm_head"], 1e-3)


@pytest.mark.slow
def test_mamba_selective_scan_matches_a_numpy_recurrence() -> None:
    import numpy as np

    out, (params, tokens), hlo = _run("mamba_selective_scan", batch=2, length=11, width=8,
                                      expand=2, state=3, conv=4, layers=2, vocab=20)
    assert " while(" in hlo  # the recurrence stays a loop over the sequence
    x = params["embedding"][tokens].astype(np.float64)
    for p in params["blocks"]:
        d_inner, d_state = p["a_log"].shape
        dt_rank = p["dt_proj"].shape[0]
        h = _np_rms_norm(x, p["norm"], 1e-5) @ p["in_proj"]
        branch, res = h[..., :d_inner], h[..., d_inner:]
        taps = p["conv_kernel"].shape[0]
        padded = np.pad(branch, ((0, 0), (taps - 1, 0), (0, 0)))  # causal: past steps only
        conv = sum(padded[:, i:i + branch.shape[1]] * p["conv_kernel"][i, 0]
                   for i in range(taps)) + p["conv_bias"]
        u = _silu(conv)
        proj = u @ p["x_proj"]
        delta = np.log1p(np.exp(proj[..., :dt_rank] @ p["dt_proj"] + p["dt_bias"]))
        b, c = proj[..., dt_rank:dt_rank + d_state], proj[..., dt_rank + d_state:]
        a = -np.exp(p["a_log"])
        state = np.zeros((x.shape[0], d_inner, d_state))
        ys = []
        for t in range(x.shape[1]):
            state = (np.exp(delta[:, t, :, None] * a) * state
                     + (delta[:, t] * u[:, t])[:, :, None] * b[:, t, None, :])
            ys.append(np.einsum("bdn,bn->bd", state, c[:, t]) + p["d"] * u[:, t])
        x = x + (np.stack(ys, axis=1) * _silu(res)) @ p["out_proj"]
    logits = _np_rms_norm(x, params["final_norm"], 1e-5) @ params["embedding"].T
    _close(out, logits, 1e-3)


@pytest.mark.slow
def test_swin_shifted_windows_match_numpy_window_attention() -> None:
    import numpy as np

    size, m, heads, channels = 8, 4, 2, 8
    shift = m // 2
    out, (params, _, _, x), hlo = _run("swin_shifted_window", batch=2, size=size,
                                       channels=channels, heads=heads, window=m, blocks=2)
    assert " gather(" in hlo  # the bias is gathered from its table by the pair index

    def region(i: int) -> int:  # the three bands of the rolled image's rows or columns
        return 0 if i < size - m else 1 if i < size - shift else 2

    def block(p: dict[str, Any], x: Any, s: int) -> Any:
        img = _np_layer_norm(x, p["norm1_scale"], p["norm1_bias"], 1e-5)
        img = np.roll(img.reshape(-1, size, size, channels), (-s, -s), axis=(1, 2))
        result = np.empty_like(img)
        d = channels // heads
        for r0 in range(0, size, m):
            for c0 in range(0, size, m):
                win = img[:, r0:r0 + m, c0:c0 + m].reshape(img.shape[0], m * m, channels)
                pos = [(r, c) for r in range(m) for c in range(m)]
                bias = np.array([[p["bias_table"][(a - c + m - 1) * (2 * m - 1) + b - e + m - 1]
                                  for (c, e) in pos] for (a, b) in pos])  # (n, n, heads)
                scores_bias = bias.transpose(2, 0, 1)
                if s:
                    label = [region(r0 + r) * 3 + region(c0 + c) for r, c in pos]
                    scores_bias = scores_bias + np.where(
                        np.array(label)[:, None] != np.array(label)[None, :], -100.0, 0.0)
                qkv = (win @ p["w_qkv"] + p["b_qkv"]).reshape(win.shape[0], m * m, 3, heads, d)
                q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
                w = _np_softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d) + scores_bias)
                o = (w @ v).transpose(0, 2, 1, 3).reshape(win.shape[0], m * m, channels)
                o = o @ p["w_proj"] + p["b_proj"]
                result[:, r0:r0 + m, c0:c0 + m] = o.reshape(-1, m, m, channels)
        x = x + np.roll(result, (s, s), axis=(1, 2)).reshape(x.shape)
        hidden = _np_layer_norm(x, p["norm2_scale"], p["norm2_bias"], 1e-5) @ p["w1"] + p["b1"]
        hidden = 0.5 * hidden * (1 + np.tanh(np.sqrt(2 / np.pi)
                                             * (hidden + 0.044715 * hidden ** 3)))
        return x + hidden @ p["w2"] + p["b2"]

    want = x.astype(np.float64)
    for i, p in enumerate(params):
        want = block(p, want, shift if i % 2 else 0)
    _close(out, want, 1e-3)


@pytest.mark.slow
def test_nerf_loss_matches_numpy_rendering_and_its_gradient_a_difference() -> None:
    import copy

    import numpy as np

    dims = dict(rays=5, coarse=6, fine=7, width=8, depth=6, view_width=4, deg_point=2,
                deg_view=1)
    (value, grads), (params, rays, target), hlo = _run("nerf_render_grad", **dims)
    assert " sort(" in hlo  # the fine depths are sorted in with the coarse ones

    def posenc(v: Any, deg: int) -> Any:
        parts = [f(2.0 ** i * v) for i in range(deg) for f in (np.sin, np.cos)]
        return np.concatenate([v, *parts], axis=-1)

    def dense(layer: dict[str, Any], v: Any) -> Any:
        return v @ layer["w"] + layer["b"]

    def field(p: dict[str, Any], pts: Any, views: Any) -> tuple[Any, Any]:
        h = pts
        for i, layer in enumerate(p["trunk"]):
            h = np.maximum(dense(layer, h), 0)
            if i % 4 == 0 and i > 0:
                h = np.concatenate([h, pts], axis=-1)
        sigma = np.maximum(dense(p["sigma"], h)[..., 0], 0)
        views = np.broadcast_to(views[:, None], (*pts.shape[:2], views.shape[-1]))
        h = np.maximum(dense(p["view"], np.concatenate([dense(p["bottleneck"], h), views], -1)),
                       0)
        return _sigmoid(dense(p["rgb"], h)), sigma

    def render(rgb: Any, sigma: Any, z: Any, dirs: Any) -> tuple[Any, Any]:
        gaps = np.concatenate([np.diff(z, axis=-1), np.full_like(z[:, :1], 1e10)], -1)
        alpha = 1 - np.exp(-sigma * gaps * np.linalg.norm(dirs, axis=-1, keepdims=True))
        trans = np.ones_like(alpha)
        for i in range(1, alpha.shape[1]):  # what still gets through, sample after sample
            trans[:, i] = trans[:, i - 1] * (1 - alpha[:, i - 1] + 1e-10)
        weights = alpha * trans
        return (weights[..., None] * rgb).sum(1) + 1 - weights.sum(1, keepdims=True), weights

    def resample(bins: Any, weights: Any, n: int) -> Any:
        pdf = (weights + 1e-5) / (weights + 1e-5).sum(-1, keepdims=True)
        cdf = np.concatenate([np.zeros((len(pdf), 1)), np.cumsum(pdf, -1)], -1)
        out = np.empty((len(pdf), n))
        for r in range(len(pdf)):
            for j, u in enumerate(np.linspace(0, 1, n)):
                i = min(max(np.searchsorted(cdf[r], u, side="right") - 1, 0), len(cdf[r]) - 2)
                span = cdf[r, i + 1] - cdf[r, i]
                t = (u - cdf[r, i]) / (span if span >= 1e-5 else 1.0)
                out[r, j] = bins[r, i] + t * (bins[r, i + 1] - bins[r, i])
        return out

    def loss(p: dict[str, Any]) -> float:
        o, d = rays[:, :3].astype(np.float64), rays[:, 3:].astype(np.float64)
        views = posenc(d / np.linalg.norm(d, axis=-1, keepdims=True), 1)
        z = np.broadcast_to(np.linspace(2.0, 6.0, 6), (5, 6))

        def one_pass(z: Any) -> tuple[float, Any]:
            rgb, sigma = field(p, posenc(o[:, None] + z[..., None] * d[:, None], 2), views)
            colour, weights = render(rgb, sigma, z, d)
            return float(((colour - target) ** 2).mean()), weights

        coarse, weights = one_pass(z)
        mids = (z[:, 1:] + z[:, :-1]) / 2
        z = np.sort(np.concatenate([z, resample(mids, weights[:, 1:-1], 7)], -1), -1)
        return coarse + one_pass(z)[0]

    assert abs(float(value) - loss(params)) < 1e-4 * max(1.0, loss(params))
    # The colour head's bias moves no density, so no resampled depth: a central difference
    # of the NumPy loss along it is the gradient's.
    step = 1e-4
    assert np.abs(grads["rgb"]["b"]).max() > 1e-3
    for i in range(3):
        up, down = copy.deepcopy(params), copy.deepcopy(params)
        up["rgb"]["b"] = up["rgb"]["b"].astype(np.float64)
        down["rgb"]["b"] = down["rgb"]["b"].astype(np.float64)
        up["rgb"]["b"][i] += step
        down["rgb"]["b"][i] -= step
        assert abs((loss(up) - loss(down)) / (2 * step) - grads["rgb"]["b"][i]) < 1e-3


def test_a_run_measured_in_parts_is_scored_as_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On a TPU the suite runs in two processes sharing one ceilings cache: the parts' results
    are scored together, the same as one run holding both; a program in two parts, or parts
    given for another suite, is a one-line error."""
    everyone = prediction.heldout_names()
    data = results.load(FIXTURES / "cpu_results.json")
    timed = [w for w in data["workloads"] if (w.get("kernel_timing") or {}).get("available")]
    first = {**data, "workloads": [{**timed[0], "name": everyone[0]}]}
    second = {**data, "workloads": [{**timed[1], "name": everyone[1]}]}
    whole = {**data, "workloads": [*first["workloads"], *second["workloads"]]}
    paths = []
    for name, doc in (("a", first), ("b", second), ("whole", whole)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(results.dumps(doc), encoding="utf-8")
    assert prediction.main(["--suite", "heldout", "--from-json", str(paths[0]),
                            str(paths[1])]) == 0
    parts = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert prediction.main(["--suite", "heldout", "--from-json", str(paths[2])]) == 0
    one = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert parts["points"] == 2 and parts == one
    assert prediction.main(["--suite", "heldout", "--from-json", str(paths[0]),
                            str(paths[2])]) == EXIT_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the parts both hold" in err[0]
    assert prediction.main(["--from-json", str(paths[0]), str(paths[1])]) == EXIT_INPUT
    assert "takes one file for the catalog suite" in capsys.readouterr().err


@pytest.mark.slow
def test_a_tpu_run_in_two_parts_scores_every_program_and_names_each_large_miss(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A real TPU v5e run of the whole suite in two parts (quick ceilings measured in the
    first, reused by the second): every program is scored, and each miss of 2x or more,
    either way, carries a cause on its row, never 'unknown'."""
    import gzip

    paths = []
    for part in ("a", "b"):
        packed = FIXTURES / "tpu_v5e_results" / f"heldout_part_{part}.json.gz"
        paths.append(tmp_path / f"{part}.json")
        paths[-1].write_bytes(gzip.decompress(packed.read_bytes()))
    assert prediction.main(["--suite", "heldout", "--from-json", *map(str, paths)]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    # Every held-out program the run recorded (the suite has grown since: the later ones are
    # not in it).
    suite = set(prediction.heldout_names())
    recorded = {w["name"] for path in paths
                for w in json.loads(path.read_text(encoding="utf-8"))["workloads"]
                if w["name"] in suite}
    assert len(recorded) >= 29
    assert out["points"] == len(recorded) and out["kernels"] > 200
    large = [p for p in out["programs"]
             if max(p["predicted_s"] / p["measured_s"], p["measured_s"] / p["predicted_s"]) >= 2]
    assert large, "the run holds misses of 2x or more (the T5 and VAE programs' gathers)"
    for p in large:
        assert p["reason"] and "unknown" not in p["reason"], p["name"]


def test_the_suite_in_parts_holds_every_program_once_with_importable_setups(
        tmp_path: Path) -> None:
    """``--part K/N``'s configs: consecutive slices of the suite that together hold every
    program once, each config valid where it is written (its setups named from the
    repository root), and a bad part a one-line error."""
    from roofline_report.config import load_config

    names: list[str] = []
    for part in (1, 2, 3):
        path = tmp_path / f"part{part}.toml"
        path.write_text(prediction.part_config(part, 3), encoding="utf-8")
        config = load_config(path)
        names += [f"user:{spec.name}" for spec in config.workloads]
        first = config.workloads[0]
        assert str(first.setup).startswith("benchmarks.heldout.")
        assert callable(config.load_setup(first))
    assert names == prediction.heldout_names()
    for bad in ("0/2", "3/2", "1", "a/b"):
        with pytest.raises(InputError, match="--part must be K/N"):
            prediction._part(bad)


@pytest.mark.slow
def test_dcgan_transposed_convolution_is_the_files_scatter_of_patches() -> None:
    """The generator's transposed convolution against its definition in NumPy: each input
    pixel adds its weighted 4x4 patch into the output at stride times its position, less the
    padding (``ConvTranspose2d``), and the step runs its convolutions as XLA convolutions."""
    import jax
    import numpy as np

    module = _load("dcgan_step")
    rng = np.random.default_rng(3)
    for stride, pad, side in ((1, 0, 1), (2, 1, 3)):
        x = rng.standard_normal((2, side, side, 3)).astype(np.float32)
        w = rng.standard_normal((4, 4, 3, 5)).astype(np.float32)
        out = (side - 1) * stride - 2 * pad + 4
        want = np.zeros((2, out + 2 * pad, out + 2 * pad, 5))
        for i in range(side):
            for j in range(side):
                want[:, stride * i:stride * i + 4, stride * j:stride * j + 4] += \
                    np.einsum("nc,abco->nabo", x[:, i, j], w)
        want = want[:, pad:pad + out, pad:pad + out]
        with jax.default_device(jax.devices("cpu")[0]):
            got = np.asarray(module.conv_transpose(x, w, stride, pad))
        _close(got, want)
    out, _args, hlo = _run("dcgan_step", batch=2, latent=8, features=4)
    assert all(np.isfinite(v).all() for v in jax.tree.leaves(out))
    assert "lhs_dilate=2x2" in hlo  # the generator's strided transposed convolutions


@pytest.mark.slow
def test_convnext_block_matches_numpy() -> None:
    """A ConvNeXt block's forward pass (7x7 depthwise convolution padded by 3, layer norm,
    pointwise MLP with an exact GELU, layer scale, residual) against NumPy."""
    import math

    import jax
    import numpy as np

    module = _load("convnext_stage_step")
    _fn, (params, images, _labels) = module.setup(batch=1, size=8, channels_in=4, width=8,
                                                  blocks=1)
    p = jax.tree.map(np.asarray, params["blocks"][0])
    p["gamma"] = np.full_like(p["gamma"], 0.5)  # a layer scale that shows the branch
    x = np.random.default_rng(4).standard_normal((1, 6, 6, 8)).astype(np.float32)
    padded = np.pad(x, ((0, 0), (3, 3), (3, 3), (0, 0)))
    dw = sum(padded[:, a:a + 6, b:b + 6] * p["dw_w"][a, b, 0] for a in range(7)
             for b in range(7)) + p["dw_b"]
    mean = dw.mean(-1, keepdims=True)
    y = (dw - mean) / np.sqrt(((dw - mean) ** 2).mean(-1, keepdims=True) + 1e-6) * p["ln_w"] \
        + p["ln_b"]
    h = y @ p["pw1_w"] + p["pw1_b"]
    h = 0.5 * h * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))
    want = x + p["gamma"] * (h @ p["pw2_w"] + p["pw2_b"])
    with jax.default_device(jax.devices("cpu")[0]):
        got = np.asarray(module.block(jax.tree.map(jax.numpy.asarray, p), x))
    _close(got, want, 1e-3)
    assert np.asarray(images).shape == (1, 8, 8, 4)
