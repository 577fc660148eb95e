"""``compare --fail-if``: the regression gate, on recorded runs derived from the fixture by
scaling timing statistics (every statistic and sample by one factor, so min <= median <= max and
the quartiles stay consistent)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from roofline_report import analysis, cli
from roofline_report.analysis import gate
from roofline_report.errors import EXIT_INPUT, EXIT_OK, EXIT_REGRESSION, InputError
from roofline_report.results import io as results

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "cpu_results.json"
CONDITIONS = ["--fail-if", "time>10%", "--fail-if", "roof<-5pp", "--fail-if", "top5-new"]


def _scale(w: dict[str, Any], factor: float) -> None:
    stats = w["timing"]["per_call"]
    for key in ("min", "max", "mean", "median", "q1", "q3", "iqr"):
        stats[key] *= factor
    stats["samples"] = [x * factor for x in stats["samples"]]


def _spread(w: dict[str, Any], half_width: float) -> None:
    """Give a workload's timing quartiles at median × (1 ∓ half_width): a noisy measurement."""
    stats = w["timing"]["per_call"]
    med = stats["median"]
    stats["q1"], stats["q3"] = med * (1 - half_width), med * (1 + half_width)
    stats["iqr"] = stats["q3"] - stats["q1"]
    stats["min"], stats["max"] = min(stats["min"], stats["q1"]), max(stats["max"], stats["q3"])


def _derive(factors: dict[str, float], *, noisy: dict[str, float] | None = None
            ) -> dict[str, Any]:
    data = results.load(FIXTURE)
    for w in data["workloads"]:
        if noisy and w["name"] in noisy:
            _spread(w, noisy[w["name"]])
        if w["name"] in factors:
            _scale(w, factors[w["name"]])
    results.validate(data)
    return data


def _save(folder: Path, data: dict[str, Any]) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "results.json"
    path.write_text(results.dumps(data), encoding="utf-8")
    return str(path)


@pytest.fixture
def base(tmp_path: Path) -> str:
    return _save(tmp_path / "base", results.load(FIXTURE))


# --- the grammar ----------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "metric", "threshold"), [
    ("time>10%", "time", 0.10), (" TIME > 2.5 % ", "time", 0.025), ("time>0%", "time", 0.0),
    ("roof<-5pp", "roof", 5.0), ("roof < -0.5 pp", "roof", 0.5),
    ("top5-new", "top", 5.0), ("top1-new", "top", 1.0),
])
def test_conditions_parse(text: str, metric: str, threshold: float) -> None:
    c = gate.parse(text)
    assert (c.metric, c.threshold) == (metric, pytest.approx(threshold))
    assert gate.parse(c.text) == c  # the canonical text parses to the same condition


@pytest.mark.parametrize("text", ["", "time", "time>10", "time<10%", "time>-10%", "roof<5pp",
                                  "roof<-5%", "top0-new", "topx-new", "speed>10%",
                                  "time>10%; rm -rf /"])
def test_malformed_conditions_are_one_line(text: str) -> None:
    with pytest.raises(InputError) as exc:
        gate.parse(text)
    message = str(exc.value)
    assert "\n" not in message and "time>P%" in message


# --- the gate on recorded runs -------------------------------------------------------------


def test_a_slower_run_fails_the_gate(base: str, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    new = _save(tmp_path / "new", _derive({"matmul": 1.5}))
    out = tmp_path / "gate"
    assert cli.main(["compare", base, new, "--out", str(out), *CONDITIONS]) == EXIT_REGRESSION
    err = capsys.readouterr().err.splitlines()
    lines = [x for x in err if x.startswith("regression: ")]
    assert len(lines) == 2 and all(x.startswith("regression: matmul (a @ b): ") for x in lines)
    assert "time>10%" in lines[0] and "+50%" in lines[0] and "roof<-5pp" in lines[1]
    md = (out / "report.md").read_text(encoding="utf-8")
    html = (out / "report.html").read_text(encoding="utf-8")
    # The offending workloads come first: the gate is the first section, the regression
    # its first table, and the workload leads the table of common workloads.
    assert md.index('<a id="gate">') < md.index('<a id="runs">')
    assert md.index("**1 workload regressed**") < md.index("*Regressions*")
    common = md[md.index('<a id="workloads">'):]
    assert common.split("\n| ", 4)[3].startswith('<a id="w-matmul"></a>a @ b')
    assert "[a @ b](#w-matmul)" in md and 'href="#w-matmul"' in html
    # Both runs hold the traces a real run records: top5-new was checked and found nothing.
    assert "top5-new was not checked" not in md
    doc = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    assert len(doc["gate"]["regressions"]) == 2 and doc["gate"]["conditions"] == [
        "time>10%", "roof<-5pp", "top5-new"]


def test_a_change_inside_the_spread_is_noise(base: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    # scan's IQR is made 48% of its median in both runs: 20% slower is past the threshold,
    # inside the noise.
    base = _save(tmp_path / "noisy-base", _derive({}, noisy={"scan": 0.24}))
    new = _save(tmp_path / "new", _derive({"scan": 1.2}, noisy={"scan": 0.24}))
    out = tmp_path / "gate"
    assert cli.main(["compare", base, new, "--out", str(out), *CONDITIONS]) == EXIT_OK
    assert "regression:" not in capsys.readouterr().err
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "No regression" in md and "inside the noise (not regressions)" in md
    assert "[lax.scan of tanh(c @ x), 10 steps](#w-scan) | `time>10%`" in md
    assert "the interquartile ranges of the samples overlap" in md
    doc = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    assert doc["gate"]["regressions"] == [] and len(doc["gate"]["noise"]) == 2


def test_a_faster_or_equal_run_passes(base: str, tmp_path: Path) -> None:
    same = _save(tmp_path / "same", results.load(FIXTURE))
    faster = _save(tmp_path / "faster", _derive({"matmul": 0.5, "softmax": 0.8}))
    for new in (same, faster):
        out = tmp_path / f"gate-{Path(new).parent.name}"
        assert cli.main(["compare", base, new, "--out", str(out), *CONDITIONS]) == EXIT_OK


def test_thresholds_are_thresholds(base: str, tmp_path: Path) -> None:
    new = _save(tmp_path / "new", _derive({"matmul": 1.5}))
    out = tmp_path / "gate"
    # 1.5x slower: 50% more time, and a share of roof a third lower (at most 60 points below
    # a share under 180%): neither passes thresholds of 60% and 60 points.
    assert cli.main(["compare", base, new, "--out", str(out), "--fail-if", "time>60%",
                     "--fail-if", "roof<-60pp"]) == EXIT_OK


def test_workloads_in_one_run_only_are_listed_not_gated(base: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    data = _derive({"matmul": 1.5})
    data["workloads"] = [w for w in data["workloads"] if w["name"] != "softmax"]
    new = _save(tmp_path / "new", data)
    out = tmp_path / "gate"
    assert cli.main(["compare", base, new, "--out", str(out), *CONDITIONS]) == EXIT_REGRESSION
    err = capsys.readouterr().err
    assert "note: 1 workload(s) only in BASE, not gated: softmax" in err
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "Not gated, only in BASE: softmax." in md
    assert '<a id="w-softmax"></a>softmax(x, axis=-1) | 1 |' in md


def test_the_gate_reads_per_kernel_times_where_they_exist() -> None:
    data = results.load(FIXTURE)
    a = analysis.analyse(data, analysis.assumptions_for(data))
    b = copy.deepcopy(a)
    # The form a traced run records: kernel_timing.kernels, each kernel's time per call.
    def trace(kernels: list[tuple[str, float]]) -> dict[str, object]:
        return {"available": True, "kernels": [
            {"name": n, "launches": 1.0, "total_s": t, "per_launch_s": t, "q1_s": t,
             "q3_s": t, "samples_s": [t]} for n, t in kernels]}

    kernels = [(f"fusion.{i}", 1e-4 * (6 - i)) for i in range(6)]
    a["workloads"][1]["kernel_timing"] = trace(kernels)
    b["workloads"][1]["kernel_timing"] = trace([*kernels[:4], ("copy.9", 9e-4)])
    c = copy.deepcopy(b)  # a near-tie trading places: copy.9 just above BASE's fifth
    c["workloads"][1]["kernel_timing"] = trace([*kernels[:4], ("copy.9", 2.01e-4)])
    c["workloads"][1]["kernel_timing"]["kernels"][-1]["q1_s"] = 1.5e-4
    tied = gate.evaluate([gate.parse("top5-new")], a, c)
    assert tied.findings[0].status == "noise" and "near-ties" in tied.findings[0].why
    for w in (*a["workloads"][2:], *b["workloads"][2:]):
        w["kernel_timing"] = {"available": False, "reason": "not traced"}
    top5 = gate.parse("top5-new")
    found = gate.evaluate([top5], a, b)
    assert [f.status for f in found.findings][:1] == ["regression"]
    assert found.findings[0].name == "matmul" and "copy.9" in found.findings[0].why
    # Workloads without kernel times in one run are skipped with a reason, not silently.
    assert all(f.status == "skipped" for f in found.findings[1:]) or not found.findings[1:]
    assert gate.top_kernels(b["workloads"][1], 2) == ["copy.9", "fusion.0"]
    assert gate.top_kernels(b["workloads"][2], 5) is None


def test_the_gate_reads_the_traces_a_real_run_records() -> None:
    data = results.load(FIXTURE)
    w = next(w for w in data["workloads"] if w["name"] == "softmax")
    times = {k["name"]: k["total_s"] for k in w["kernel_timing"]["kernels"]}
    top = gate.top_kernels(w, 2)
    assert top is not None and len(top) == 2
    assert times[top[0]] >= times[top[1]] >= max(t for n, t in times.items() if n not in top)


# --- bad input: one line, exit 2, nothing written ------------------------------------------


def _refused(args: list[str], out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert cli.main(args) == EXIT_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert not out.exists()
    return err[0]


def test_a_malformed_condition_is_refused(base: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    new = _save(tmp_path / "new", results.load(FIXTURE))
    out = tmp_path / "gate"
    line = _refused(["compare", base, new, "--out", str(out), "--fail-if", "time>ten%"], out,
                    capsys)
    assert "time>ten%" in line


def test_a_baseline_of_another_schema_version_is_refused(base: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    old = json.loads(Path(base).read_text(encoding="utf-8"))
    old["schema_version"] = 1
    old_path = tmp_path / "old" / "results.json"
    old_path.parent.mkdir()
    old_path.write_text(json.dumps(old), encoding="utf-8")
    new = _save(tmp_path / "new", results.load(FIXTURE))
    out = tmp_path / "gate"
    line = _refused(["compare", str(old_path), new, "--out", str(out), *CONDITIONS], out,
                    capsys)
    assert "schema version" in line


def test_a_baseline_of_another_workload_set_is_refused(base: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    data = results.load(FIXTURE)
    data["workloads"] = [dict(data["workloads"][1], name="mine", title="my step")]
    new = _save(tmp_path / "new", data)
    out = tmp_path / "gate"
    line = _refused(["compare", base, new, "--out", str(out), *CONDITIONS], out, capsys)
    assert "no workload is in both runs" in line and "NEW has mine" in line


def test_the_gate_takes_exactly_two_runs(base: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    b = _save(tmp_path / "b", results.load(FIXTURE))
    c = _save(tmp_path / "c", results.load(FIXTURE))
    out = tmp_path / "gate"
    assert "exactly two" in _refused(["compare", base, b, c, "--out", str(out), *CONDITIONS],
                                     out, capsys)
