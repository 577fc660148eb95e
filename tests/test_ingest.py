"""``roofline-report profile``: traces captured by plain ``jax.profiler.trace`` on this CPU
(tests/fixtures/traces, captured by its capture.py) read into a results document and rendered:
kernel counts, every kernel matched to a time, per-kernel flops equal to the project's count of
the program, hosts and collectives side by side, the roofs chosen, the report's sections, and
bad input as one line with exit code 2 and nothing written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import roofline_report
from roofline_report import cli
from roofline_report.analysis.analyse import analyse
from roofline_report.analysis.kernels import trace_summary
from roofline_report.errors import EXIT_INPUT, EXIT_OK, EXIT_PARTIAL, InputError
from roofline_report.hlo.compiled import collective_records
from roofline_report.hlo.ir import parse_module
from roofline_report.hlo.kernels import kernel_inventory
from roofline_report.ingest.hlo import hlo_text
from roofline_report.ingest.pipeline import Reading, read_profile
from roofline_report.ingest.records import results_document
from roofline_report.kinds import Kind
from roofline_report.report import views
from roofline_report.report.trace_view import lane_timing
from roofline_report.results import io as results_io
from roofline_report.results import schema
from roofline_report.traces.xspace import read_xspace

REPO = Path(__file__).resolve().parent.parent
TRACES = REPO / "tests" / "fixtures" / "traces"
CEILINGS = REPO / "tests" / "fixtures" / "cpu_results.json"


@pytest.fixture(scope="module")
def readings() -> dict[str, Reading]:
    return {name: read_profile(TRACES / name)
            for name in ("transformer", "softmax", "sharded8", "two_hosts", "no_hlo")}


@pytest.fixture(scope="module")
def documents(readings: dict[str, Reading]) -> dict[str, dict[str, Any]]:
    return {name: results_document(r) for name, r in readings.items()}


def _lane_timings(w: dict[str, Any]) -> list[schema.KernelTiming]:
    """Each device's per-kernel samples of a traced workload (its record as results.json
    holds it), in the order of the trace's devices."""
    typed = schema.Workload.model_validate(w)
    assert typed.trace is not None
    timings = [lane_timing(typed, lane) for lane in typed.trace.devices]
    assert all(t is not None for t in timings)
    return [t for t in timings if t is not None]


def _trace_hlo(reading: Reading, host: int = 0) -> str:
    """The chosen program's HLO text, printed again from the trace's own proto."""
    h = reading.programs[host]
    proto = h.host.space.hlo_protos()[int(h.program_id or 0)][1]
    return hlo_text(proto, module=reading.module)


# --- counts and times --------------------------------------------------------------------------


def test_transformer_step_every_kernel_counted_and_timed(readings: dict[str, Reading],
                                                         documents: dict[str, Any]) -> None:
    r = readings["transformer"]
    assert r.module == "jit_train_step" and r.module_choice == "most kernel time"
    assert r.module == r.modules[0].name  # the most kernel time
    (w,) = documents["transformer"]["workloads"]
    inventory = w["kernels"]
    assert inventory["count"] == 150  # the shipped step compiles to about 150 kernels on a CPU
    timing = w["kernel_timing"]
    assert timing["available"] and len(timing["calls"]) == 3 and w["trace"]["per"] == "step"
    names = {k["name"] for k in inventory["kernels"]}
    assert {k["name"] for k in timing["kernels"]} == names  # every kernel matched to a time
    assert timing["unmatched"] == []
    assert len(w["trace"]["steps_s"]) == 3
    summary = trace_summary(schema.KernelTiming.model_validate(timing))
    assert summary is not None and summary.launches == inventory["launches"]


def test_per_kernel_flops_are_the_inventorys(readings: dict[str, Reading],
                                            documents: dict[str, Any]) -> None:
    """The record's kernels are the project's count of the trace's HLO, kernel by kernel, and
    sum to the program's flops."""
    for name in ("transformer", "softmax", "sharded8"):
        (w, *_) = documents[name]["workloads"]
        counted = kernel_inventory(parse_module(_trace_hlo(readings[name])), cwd="/")
        assert [(k["name"], k["flops"], k["bytes_read"], k["bytes_written"])
                for k in w["kernels"]["kernels"]] == \
            [(k["name"], k["flops"], k["bytes_read"], k["bytes_written"])
             for k in counted["kernels"]]
        assert sum(k["flops"] * k["trips"] for k in w["kernels"]["kernels"]) == \
            w["kernels"]["flops"]


@pytest.mark.cpu_backend(
    "the fixture's trace was captured on a CPU: this jax compiles that program alike only there")
def test_trace_hlo_is_the_compiled_program_of_this_jax(readings: dict[str, Reading]) -> None:
    """Where this jax is the one that wrote the trace, the HLO the trace holds is the program
    compiled here: the same kernels with the same flops."""
    import jax

    from examples.transformer import setup

    version = read_xspace(readings["transformer"].hosts[0].file.path)
    plane = version.plane("/host:metadata")
    if plane is None or plane.stats.get("jax_version") != jax.__version__:
        pytest.skip("the fixture was captured with another jax version")
    fn, args = setup()
    compiled = jax.jit(fn).lower(*args).compile().as_text()
    ours = kernel_inventory(compiled)
    theirs = kernel_inventory(_trace_hlo(readings["transformer"]))
    assert [(k["name"], k["flops"]) for k in ours["kernels"]] == \
        [(k["name"], k["flops"]) for k in theirs["kernels"]]


def test_softmax_per_call(documents: dict[str, Any]) -> None:
    (w,) = documents["softmax"]["workloads"]
    assert w["trace"]["per"] == "call" and w["trace"]["steps_s"] == []
    assert len(w["kernel_timing"]["calls"]) == 5
    assert {k["name"] for k in w["kernel_timing"]["kernels"]} == \
        {k["name"] for k in w["kernels"]["kernels"]}


def test_sharded_step_devices_and_collectives(readings: dict[str, Reading],
                                              documents: dict[str, Any]) -> None:
    (w,) = documents["sharded8"]["workloads"]
    devices = w["trace"]["devices"]
    assert [d["device"] for d in devices] == [f"CPU:{i}" for i in range(8)]
    assert documents["sharded8"]["environment"]["device_count"] == 8
    records = collective_records(_trace_hlo(readings["sharded8"]))
    assert records and all(r["op"] == "all-reduce" for r in records)
    for lane in _lane_timings(w):  # each device's collectives timed from its own events
        timed = {k.name: k for k in lane.kernels}
        assert {r["instruction"] for r in records} <= set(timed)
        assert all(max(timed[r["instruction"]].busy_s or [0]) > 0 for r in records)
    assert [c["instruction"] for c in w["compiled"]["collectives"]] == \
        [r["instruction"] for r in records]


@pytest.mark.slow
def test_two_hosts_side_by_side(readings: dict[str, Reading],
                                documents: dict[str, Any]) -> None:
    # Two processes of one jax.distributed job wrote the two files.
    assert len({h.metadata("process_id") for h in readings["two_hosts"].hosts}) == 2
    data = documents["two_hosts"]
    assert [h["name"] for h in data["trace"]["hosts"]] == ["host0", "host1"]
    ws = data["workloads"]
    assert [w["trace"]["host"] for w in ws] == ["host0", "host1"]
    assert [w["title"] for w in ws] == [f"{data['trace']['module']} on host0",
                                        f"{data['trace']['module']} on host1"]
    for w in ws:
        assert w["kernel_timing"]["available"] and w["trace"]["per"] == "step"
        timed = {k.name for k in _lane_timings(w)[0].kernels}
        collectives = {k["name"] for k in w["kernels"]["kernels"] if k["category"] == "collective"}
        assert collectives and collectives <= timed  # the gradients' all-reduce
    md = views.render(data).markdown
    assert "time on host0" in md and "time on host1" in md
    assert "Hosts and devices side by side" in md


@pytest.mark.slow
def test_no_hlo_shows_per_op_times_and_says_the_work_is_not_counted(
        documents: dict[str, Any]) -> None:
    data = documents["no_hlo"]
    (w,) = data["workloads"]
    assert w["kernels"]["available"] is False and "no HLO" in w["kernels"]["reason"]
    assert w["kernel_timing"]["available"] and w["kernel_timing"]["kernels"]
    assert any(s["what"].startswith("work of the kernels") for s in data["skipped"])
    md = views.render(data).markdown
    assert "The work cannot be counted" in md and "Per-op times" in md


@pytest.mark.slow
def test_results_document_round_trips(documents: dict[str, Any]) -> None:
    for data in documents.values():
        again = results_io.loads(results_io.dumps(data))
        assert views.render(again).markdown == views.render(data).markdown


# --- roofs --------------------------------------------------------------------------------


def _kernel_roofs(data: dict[str, Any]) -> Any:
    return analyse(data).roofs.kernels


@pytest.mark.slow
def test_roofs_in_order_of_preference(documents: dict[str, Any]) -> None:
    data = documents["softmax"]
    roofs = _kernel_roofs(data)  # a CPU: no preset matches, no ceilings given: no roof
    assert roofs.label == "no roof" and not roofs.compute and not roofs.bandwidth
    md = views.render(data).markdown
    assert "No roofs: the machine that ran the trace is cpu" in md
    assert "--preset NAME" in md and "--ceilings FILE" in md
    assert "100 GFLOP/s" not in md and "20 GB/s" not in md  # never the seed's budgets
    # The figure of the programs' achieved rates says it draws no roof, not an empty list.
    assert "Roofs: none." in md and "Roofs: ;" not in md
    with_preset = read_profile(TRACES / "softmax", preset="h200")
    preset_data = results_document(with_preset)
    assert preset_data["options"]["preset"] == "H200"
    assert _kernel_roofs(preset_data).kind is Kind.SPEC_SHEET
    assert "Roofs: the spec sheet of the H200 (chosen by name)" in \
        views.render(preset_data).markdown
    measured = results_document(read_profile(TRACES / "softmax", ceilings=CEILINGS,
                                             preset="h200"))
    assert _kernel_roofs(measured).kind is Kind.MEASURED  # measured ceilings come first
    assert measured["trace"]["ceilings_file"] == CEILINGS.name
    assert "Roofs: the ceilings measured on" in views.render(measured).markdown


def test_ceilings_of_another_backend_are_refused(tmp_path: Path) -> None:
    data = json.loads(CEILINGS.read_text())
    data["ceilings"]["backend"] = "gpu"
    other = tmp_path / "gpu.json"
    other.write_text(json.dumps(data))
    with pytest.raises(InputError, match="measured on the gpu backend"):
        read_profile(TRACES / "softmax", ceilings=other)
    data["ceilings"] = {"available": False, "reason": "skipped with --no-ceilings"}
    other.write_text(json.dumps(data))
    with pytest.raises(InputError, match="were not measured"):
        read_profile(TRACES / "softmax", ceilings=other)


# --- the command line and the API ------------------------------------------------------------


@pytest.mark.slow
def test_cli_writes_the_report(tmp_path: Path) -> None:
    out = tmp_path / "report"
    assert cli.main(["profile", str(TRACES / "transformer"), "--out", str(out)]) == EXIT_OK
    md = (out / "report.md").read_text()
    for section in ("The profile", "Per-kernel roofline", "Where the time goes",
                    "Measured on the machine that ran the trace",
                    "Hosts and devices side by side"):
        assert section in md
    assert "jit\\_train\\_step" in md
    figures = list((out / "figures").glob("kernels_*.svg"))
    assert len(figures) == 1
    saved = results_io.load(out / "results.json")
    assert saved["trace"]["module"] == "jit_train_step"
    html = (out / "report.html").read_text()
    assert 'id="trace"' in html and 'id="kernels"' in html


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "plain", "bar", "none"])
def test_cli_progress(tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str) -> None:
    """Each step as it starts: plain log lines, or a live line cleared before the outcome;
    by default (auto) only on a terminal, so a log or a pipe gets the outcome alone."""
    out = tmp_path / "report"
    argv = ["profile", str(TRACES / "two_hosts"), "--out", str(out), "--progress", mode]
    assert cli.main(argv) == EXIT_OK
    # (the capture reads a carriage return as a line's end)
    err = capsys.readouterr().err.replace("\r", "\n")
    steps = ["reading 2 hosts of run", "jit_step on host0: counting its kernels",
             "jit_step on host1: counting its kernels", "writing the report"]
    assert err.splitlines()[-1].removeprefix("\033[K").startswith("wrote ")
    if mode == "plain":
        lines = err.splitlines()[:-1]
        assert len(lines) == len(steps)
        for line, step in zip(lines, steps, strict=True):
            assert line.startswith("roofline-report: [") and step in line
    elif mode == "bar":  # each step overwrites the last; the line is cleared at the end
        assert all(step in err for step in steps)
        assert err.splitlines()[-1].startswith("\033[Kwrote ")  # cleared, then the outcome
    else:  # capsys is not a terminal: auto says nothing but the outcome
        assert err.count("\n") == 1


@pytest.mark.slow
def test_cli_no_hlo_exits_3_with_the_statement(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    assert cli.main(["profile", str(TRACES / "no_hlo"), "--out", str(out)]) == EXIT_PARTIAL
    assert "not available" in capsys.readouterr().err
    assert "The work cannot be counted" in (out / "report.md").read_text()


def _bad(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    out = tmp_path / "out"
    before = sorted(p.name for p in tmp_path.iterdir())
    assert cli.main(["profile", *argv, "--out", str(out)]) == EXIT_INPUT
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert "Traceback" not in err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == before
    return err


def _logdir(tmp_path: Path, data: bytes, name: str = "host0.xplane.pb") -> Path:
    run = tmp_path / "logs" / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    (run / name).write_bytes(data)
    return tmp_path / "logs"


def test_bad_input_is_one_line_and_writes_nothing(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no profiler trace" in _bad([str(empty)], tmp_path, capsys)
    assert "no such file" in _bad([str(tmp_path / "missing")], tmp_path, capsys)
    err = _bad([str(TRACES / "softmax"), "--module", "jit_nothing"], tmp_path, capsys)
    assert "no such program" in err and "jit__softmax" in err  # the programs present
    err = _bad([str(TRACES / "softmax"), "--run", "2000_01_01_00_00_00"], tmp_path, capsys)
    assert "no such run" in err
    err = _bad([str(TRACES / "softmax"), "--preset", "nonesuch"], tmp_path, capsys)
    assert "unknown chip preset" in err


def test_truncated_corrupt_and_newer_traces(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    import gzip

    raw = gzip.decompress(next((TRACES / "softmax").glob("plugins/profile/*/*.gz")).read_bytes())
    cases = {
        "truncated": (raw[: len(raw) * 2 // 3], "truncated"),
        "corrupt": (b"\x0f" + bytes(range(256)) * 4, "corrupt"),
        # XSpace field 1 (planes) as a varint: a schema this reader does not know.
        "newer": (b"\x08\x01", "newer profiler"),
    }
    for label, (data, fragment) in cases.items():
        case = tmp_path / label
        case.mkdir()
        logs = _logdir(case, data)
        err = _bad([str(logs)], case, capsys)
        assert fragment in err, (label, err)


@pytest.mark.slow
def test_generate_py_profile_in_a_fresh_process(tmp_path: Path) -> None:
    out = tmp_path / "report"
    proc = subprocess.run([sys.executable, str(REPO / "generate.py"), "profile",
                           str(TRACES / "softmax"), "--out", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == EXIT_OK, proc.stderr[-2000:]
    assert (out / "report.html").is_file()


@pytest.mark.slow
def test_python_api(tmp_path: Path) -> None:
    out = tmp_path / "api"
    data = roofline_report.profile(TRACES / "softmax", out=out, module="_softmax")
    assert data["trace"]["module"] == "jit__softmax"
    assert data["trace"]["module_choice"] == "by name"
    assert data["options"]["origin"] == "python"
    assert (out / "report.md").is_file()
    with pytest.raises(InputError, match="profile\\(\\): out= must be a path"):
        roofline_report.profile(TRACES / "softmax", out=3)
    with pytest.raises(InputError, match="module= must be a non-empty string"):
        roofline_report.profile(TRACES / "softmax", module="")


@pytest.mark.slow
def test_a_built_document_the_loader_refuses_is_a_bug_with_or_without_a_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Validated before it is returned, or (with a report to write) while its text is written
    beside it: either way a RuntimeError, and the report already there is left as it was."""
    from roofline_report.ingest import records

    source = records._source

    def misbuilt(reading: Reading) -> dict[str, Any]:
        return {**source(reading), "misspelt": True}

    out = tmp_path / "report"
    roofline_report.profile(TRACES / "softmax", out=out)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    monkeypatch.setattr(records, "_source", misbuilt)
    for where in (None, out):
        with pytest.raises(RuntimeError, match=r"trace\.misspelt: unknown key"):
            roofline_report.profile(TRACES / "softmax", out=where)
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


@pytest.mark.slow
def test_reading_a_trace_imports_jax_only_to_print_hlo() -> None:
    """Decoding, sorting and rendering import no jax; only the HLO printer imports jaxlib."""
    code = (
        "import sys\n"
        "from roofline_report.traces.xspace import read_xspace\n"
        "from roofline_report.ingest import timeline, pipeline, records\n"
        "from roofline_report.report import trace_view\n"
        f"xs = read_xspace({str(next((TRACES / 'no_hlo').glob('plugins/profile/*/*.gz')))!r})\n"
        "timeline.lanes(xs)\n"
        f"r = pipeline.read_profile({str(TRACES / 'no_hlo')!r})\n"
        "d = records.results_document(r)\n"
        "from roofline_report.report import views\n"
        "views.render(d)\n"
        "assert not [m for m in sys.modules if m == 'jax' or m.startswith(('jax.', 'jaxlib'))]\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_the_capture_script_is_kept() -> None:
    script = (TRACES / "capture.py").read_text()
    assert "jax.profiler.trace(" in script
    assert "roofline_report.observe.trace" not in script  # never the project's own tracing
    for name in ("transformer", "softmax", "sharded8", "two_hosts", "no_hlo"):
        assert (TRACES / name).is_dir()
        sizes = [p.stat().st_size for p in (TRACES / name).rglob("*.gz")]
        assert sizes and max(sizes) < 400_000


def test_a_trace_folder_copied_elsewhere_reads_the_same(tmp_path: Path,
                                                        documents: dict[str, Any]) -> None:
    copy = tmp_path / "logs"
    shutil.copytree(TRACES / "softmax", copy)
    run = next((copy / "plugins" / "profile").iterdir())
    again = results_document(read_profile(run))  # the run folder itself
    assert again["workloads"] == documents["softmax"]["workloads"]
    one = results_document(read_profile(next(run.glob("*.gz"))))  # one file
    assert one["workloads"][0]["kernel_timing"] == \
        documents["softmax"]["workloads"][0]["kernel_timing"]


def test_the_newest_run_or_the_one_named(tmp_path: Path) -> None:
    logs = tmp_path / "logs" / "plugins" / "profile"
    logs.mkdir(parents=True)
    shutil.copytree(next((TRACES / "softmax" / "plugins" / "profile").iterdir()),
                    logs / "2026_01_01_00_00_00")
    shutil.copytree(next((TRACES / "transformer" / "plugins" / "profile").iterdir()),
                    logs / "2026_02_01_00_00_00")
    newest = read_profile(tmp_path / "logs")
    assert newest.run.run == "2026_02_01_00_00_00" and newest.module == "jit_train_step"
    assert newest.run.runs == ("2026_01_01_00_00_00", "2026_02_01_00_00_00")
    named = read_profile(tmp_path / "logs", run="2026_01_01_00_00_00")
    assert named.module == "jit__softmax"


def test_every_kernel_of_every_fixture_is_timed(documents: dict[str, Any]) -> None:
    for name in ("transformer", "softmax", "sharded8", "two_hosts"):
        for w in documents[name]["workloads"]:
            inventory = {k["name"] for k in w["kernels"]["kernels"]}
            timed = {k["name"] for k in w["kernel_timing"]["kernels"]}
            assert timed == inventory, (name, w["title"], inventory ^ timed)
            for d, lane in zip(w["trace"]["devices"], _lane_timings(w), strict=True):
                assert len(lane.calls) == len(w["kernel_timing"]["calls"])
                # The chosen device's samples are stored once, as the workload's.
                assert ("timing" in d) == (d["device"] != w["trace"]["device"])
