"""``roofline-report compare``: saved runs side by side, refused across schema versions."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from roofline_report import cli
from roofline_report.report import compare
from roofline_report.results import io as results

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "cpu_results.json"


def _save(folder: Path, data: dict[str, Any]) -> Path:
    folder.mkdir(parents=True)
    path = folder / "results.json"
    path.write_text(results.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    cpu = results.load(FIXTURE)
    fast = copy.deepcopy(cpu)
    fast["environment"]["device_kind"] = "faster machine"
    for group in ("compute", "bandwidth"):
        for entry in fast["ceilings"][group]:
            if entry.get("value"):
                entry["value"] *= 2
    for w in fast["workloads"]:
        if (w.get("timing") or {}).get("available"):
            _scale_timing(w["timing"], 0.25)
    # Reading two arrays as fast as one: the doubled-traffic prediction (2x) fails in this run.
    lab = fast["lab"]["experiments"]["doubled_traffic"]
    lab["two_arrays"] = copy.deepcopy(lab["one_array"])
    return _save(tmp_path / "cpu", cpu), _save(tmp_path / "fast", fast)


def _scale_timing(timing: dict[str, Any], factor: float) -> None:
    timing["per_call_s"] = [x * factor for x in timing["per_call_s"]]


@pytest.mark.slow
def test_compare_writes_a_side_by_side_report(two_runs: tuple[Path, Path],
                                              tmp_path: Path) -> None:
    a, b = two_runs
    out = tmp_path / "cmp"
    assert cli.main(["compare", str(a), str(b), "--out", str(out)]) == 0
    html = (out / "report.html").read_text(encoding="utf-8")
    md = (out / "report.md").read_text(encoding="utf-8")
    doc = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    assert (out / "figures" / "compare_roofline.svg").is_file()
    assert "faster machine" in html and "faster machine" in md
    # Ratios to run 1 are computed, not copied: the doubled ceilings read 2.
    assert ">2<" in html.replace('<span class="v">', ">").replace("</span>", "<")
    seed = doc["workloads"]["tanh(a @ b)"]
    assert len(seed) == 2 and seed[0] != seed[1]
    verdicts = doc["verdicts"]
    doubled = next(row for title, row in verdicts.items() if "Doubled" in title)
    assert doubled[0] != doubled[1] and doubled[1].startswith("failed")
    assert "<script" not in html


def test_compare_refuses_mixed_schema_versions(two_runs: tuple[Path, Path], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    a, b = two_runs
    data = json.loads(b.read_text(encoding="utf-8"))
    data["schema_version"] = 99
    b.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "cmp"
    assert cli.main(["compare", str(a), str(b), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "schema version" in err[0] and "99" in err[0]
    assert not out.exists()


def test_compare_needs_two_runs(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    a, _ = two_runs
    assert cli.main(["compare", str(a), "--out", str(tmp_path / "x")]) == 2
    assert cli.main(["compare", str(a), str(tmp_path / "missing.json"),
                     "--out", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()


def test_comparison_is_deterministic(two_runs: tuple[Path, Path]) -> None:
    runs = compare.load_runs([str(p) for p in two_runs])
    assert compare.render_comparison(runs) == compare.render_comparison(runs)


@pytest.mark.slow
def test_runs_with_different_workload_sets_show_each_runs_workloads(
        two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    a, _ = two_runs
    mine = results.load(FIXTURE)
    mine["workloads"] = [dict(mine["workloads"][1], name="my step", title="my model step",
                              user=True)]
    mine["ceilings"] = {"available": False, "reason": "not asked (--no-ceilings)"}
    b = _save(tmp_path / "mine", mine)
    out = tmp_path / "cmp"
    assert cli.main(["compare", str(a), str(b), "--out", str(out)]) == 0
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "No workload is in every run" in md
    some = md[md.index('<a id="workloads-some">'):]
    assert "my model step | 2 | not in this run |" in some
    assert '<a id="w-matmul"></a>a @ b | 1 |' in some
    # Ceilings the second run did not measure say so, with no kind marker.
    assert "| not measured | not measured |" in md and "unknown" not in md
    doc = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    assert doc["only"]["2"] == ["my step"] and len(doc["only"]["1"]) == 21


def test_no_column_is_one_by_construction(two_runs: tuple[Path, Path]) -> None:
    runs = compare.load_runs([str(p) for p in two_runs])
    html, md, _, _ = compare.render_comparison(runs)
    for page in (html, md):
        assert "ratio 1" not in page and "speed-up 1" not in page
        assert "run 2 ÷ run 1" in page and "speed-up, run 2 vs 1" in page
        assert "run 1 ÷ run 1" not in page and "speed-up, run 1" not in page


def test_the_same_file_twice_is_refused(two_runs: tuple[Path, Path], tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    a, _ = two_runs
    out = tmp_path / "cmp"
    via_dots = str(a.parent / ".." / a.parent.name / "results.json")
    for twice in ([str(a), str(a)], [str(a), via_dots]):
        assert cli.main(["compare", *twice, "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "the same file is given twice" in err[0]
        assert not out.exists()


@pytest.mark.slow
def test_compare_takes_a_title_and_names_each_runs_date(two_runs: tuple[Path, Path],
                                                        tmp_path: Path) -> None:
    a, b = two_runs
    data = json.loads(b.read_text(encoding="utf-8"))
    data["generator"]["measured_at"] = "2025-03-04T05:06:07Z"
    b.write_text(json.dumps(data), encoding="utf-8")
    first = json.loads(a.read_text(encoding="utf-8"))
    first["generator"].pop("measured_at", None)  # a run saved before dates were recorded
    a.write_text(json.dumps(first), encoding="utf-8")
    out = tmp_path / "cmp"
    assert cli.main(["compare", str(a), str(b), "--out", str(out), "--title", "Before/after"]) == 0
    md = (out / "report.md").read_text(encoding="utf-8")
    html = (out / "report.html").read_text(encoding="utf-8")
    assert md.startswith("# Before/after\n") and "<title>Before/after</title>" in html
    assert "measured 2025-03-04T05:06:07Z on cpu: faster machine" in md
    assert "measured (date not recorded) on cpu: " in md


V2 = Path(__file__).resolve().parent / "fixtures" / "cpu_results_v2.json"


@pytest.mark.slow
def test_runs_of_schema_versions_2_and_3_compare(two_runs: tuple[Path, Path],
                                                  tmp_path: Path) -> None:
    """A version-2 file is converted on reading: mixing it with a version-3 one is fine."""
    a, _ = two_runs
    out = tmp_path / "cmp"
    assert cli.main(["compare", str(V2), str(a), "--out", str(out)]) == 0
    assert (out / "report.html").is_file()


def _refusal(argv: list[str], out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert cli.main(["compare", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert not out.exists()
    return err[0]


@pytest.mark.parametrize(("change", "quoted"), [
    (lambda d: d.update(schema_version="2"), 'schema_version must be an integer, got "2"'),
    (lambda d: d["workloads"][0].update(user="yes"), 'workloads[0].user: Input should be a '
     'valid boolean (got "yes")'),
    (lambda d: d["workloads"][0].update(dtype=2), "workloads[0].dtype: Input should be a valid "
     "string (got 2)"),
    (lambda d: d["workloads"][2].update(name=d["workloads"][1]["name"]),
     'workloads[2].name "matmul" is also the name of workloads[1]; workload names are '
     "unique in a run"),
])
def test_each_refusal_names_the_file_as_given_and_quotes_the_value_as_written(
        change: Any, quoted: str, two_runs: tuple[Path, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = two_runs
    data = json.loads(b.read_text(encoding="utf-8"))
    change(data)
    b.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    given = str(b.relative_to(tmp_path))  # a relative path, as a user types it
    for argv in ([str(a), given], [given, str(a)]):
        line = _refusal(argv, tmp_path / "cmp", capsys)
        assert line == f"error: {given}: {quoted}"


def test_a_run_with_duplicated_workload_names_is_refused_by_compare_too(
        two_runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = two_runs
    data = json.loads(b.read_text(encoding="utf-8"))
    data["workloads"].append(copy.deepcopy(data["workloads"][0]))
    b.write_text(json.dumps(data), encoding="utf-8")
    line = _refusal([str(a), str(b)], tmp_path / "cmp", capsys)
    assert line.startswith(f"error: {b}: workloads[{len(data['workloads']) - 1}].name "
                           '"seed_tanh_matmul" is also the name of workloads[0]')


def test_usage_refusals_name_the_files(two_runs: tuple[Path, Path], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    a, b = two_runs
    out = tmp_path / "cmp"
    assert str(a) in _refusal([str(a)], out, capsys)
    line = _refusal([str(a), str(b), str(FIXTURE), "--fail-if", "time>10%"], out, capsys)
    assert "exactly two" in line and all(str(p) in line for p in (a, b, FIXTURE))
    line = _refusal([str(a), str(b), "--fail-if", "time > ten'%"], out, capsys)
    assert "--fail-if \"time > ten'%\" is not a condition" in line


def test_the_lede_states_the_kinds_the_page_shows(two_runs: tuple[Path, Path]) -> None:
    """Not "every number here is measured" above predicted rows: the lede follows the kinds
    of the numbers shown. A share-of-roof gate shows measured shares, each run's achieved
    rate against its own roof (the fast run's ceilings doubled while its times fell 4x; BASE
    is the fast run here, so NEW's shares fall)."""
    from roofline_report.analysis import gate

    runs = compare.load_runs([str(p) for p in reversed(two_runs)])
    _, md, _, _ = compare.render_comparison(runs)
    assert "Times, rates and ceilings are measured (M), each on its own machine." in md
    assert "predicted (P)" not in md and "Every number here is measured" not in md
    html, md, _, doc = compare.render_comparison(runs, [gate.parse("roof<-0.1pp")])
    shown = [line for key in ("regressions", "noise") for line in doc["gate"][key]]
    assert shown  # the condition found something to show
    said = "the regression gate's shares of the roof are measured too"
    assert said in md and "predicted (P)" not in md and "marked P" not in md
    assert said in html or said.replace("'", "&#39;") in html


# --- the Python API ----------------------------------------------------------------------------


def test_compare_from_python_returns_the_comparison_and_writes_only_when_asked(
        two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    """roofline_report.compare(): the document comparison.json holds, the folder written only
    with ``out``, the gate with ``fail_if`` (the fast run against the slow one: no workload
    got slower)."""
    import roofline_report

    a, b = two_runs
    doc = roofline_report.compare([a, str(b)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cpu", "fast"]  # nothing written
    assert len(doc["workloads"]["tanh(a @ b)"]) == 2 and "gate" not in doc
    gated = roofline_report.compare([a, b], out=tmp_path / "cmp", fail_if=["time>10%"])
    assert gated["gate"]["regressions"] == []
    written = json.loads((tmp_path / "cmp" / "comparison.json").read_text(encoding="utf-8"))
    assert written == json.loads(json.dumps(gated))
    slower = roofline_report.compare([b, a], fail_if=["time>10%"])
    assert slower["gate"]["regressions"] and doc["workloads"] == compare.render_comparison(
        compare.load_runs([str(a), str(b)]))[3]["workloads"]
    assert roofline_report.compare.__doc__ and "side by side" in roofline_report.compare.__doc__


@pytest.mark.parametrize(("runs", "kwargs", "fragment"), [
    ("one", {}, "compare(): runs must be a list of results.json paths"),
    (["a"], {}, "compare: give at least two results.json files, got one: a"),
    ([], {}, "got none"),
    (None, {}, "compare(): runs must be a list"),
    ("two", {"fail_if": "time>10%"}, "compare(): fail_if= must be a list of strings"),
    ("two", {"fail_if": ["time>ten%"]}, "is not a condition"),
    ("two", {"title": 3}, "compare(): title= must be a string"),
    ("two", {"out": "/"}, "compare(): out='/': "),
])
def test_compare_from_python_refuses_bad_input_with_one_line(
        runs: Any, kwargs: dict[str, Any], fragment: str, two_runs: tuple[Path, Path],
        tmp_path: Path) -> None:
    import roofline_report
    from roofline_report.errors import InputError

    given = list(two_runs) if runs == "two" else runs
    with pytest.raises(InputError) as refused:
        roofline_report.compare(given, **kwargs)
    assert fragment in str(refused.value) and "\n" not in str(refused.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cpu", "fast"]


@pytest.mark.parametrize("mode", ["plain", "auto"])
def test_compare_says_its_steps_with_progress(mode: str, two_runs: tuple[Path, Path],
                                              tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """--progress, shared with the other commands: plain log lines; auto only on a terminal
    (capsys is none), so a log gets the outcome alone."""
    a, b = two_runs
    out = tmp_path / "cmp"
    capsys.readouterr()
    assert cli.main(["compare", str(a), str(b), "--out", str(out), "--progress", mode]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1] == f"wrote {out / 'report.html'} comparing 2 runs"
    steps = [line.split("] ", 1)[1] for line in lines[:-1]]
    assert steps == (["reading 2 runs", "setting the runs side by side", "writing the report"]
                     if mode == "plain" else [])
