"""``compare --fail-if``: the regression gate, on recorded runs derived from the fixture by
scaling timing statistics (every statistic and sample by one factor, so min <= median <= max and
the quartiles stay consistent)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from roofline_report import cli
from roofline_report.analysis import gate
from roofline_report.analysis.analyse import analyse
from roofline_report.analysis.stats import Stats
from roofline_report.errors import EXIT_INPUT, EXIT_OK, EXIT_REGRESSION, InputError
from roofline_report.results import io as results
from roofline_report.text import n

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "cpu_results.json"
CONDITIONS = ["--fail-if", "time>10%", "--fail-if", "roof<-5pp", "--fail-if", "top5-new"]


def _scale(w: dict[str, Any], factor: float) -> None:
    timing = w["timing"]
    timing["per_call_s"] = [x * factor for x in timing["per_call_s"]]


def _spread(w: dict[str, Any], half_width: float) -> None:
    """Give a workload's timing quartiles at median × (1 ∓ half_width): a noisy measurement
    (five samples whose first and third quartiles, by linear interpolation, are those)."""
    timing = w["timing"]
    med = Stats(timing["per_call_s"]).median
    low, high = med * (1 - half_width), med * (1 + half_width)
    timing["per_call_s"] = [low, low, med, high, high]


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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_faster_or_equal_run_passes(base: str, tmp_path: Path) -> None:
    same = _save(tmp_path / "same", results.load(FIXTURE))
    faster = _save(tmp_path / "faster", _derive({"matmul": 0.5, "softmax": 0.8}))
    for new in (same, faster):
        out = tmp_path / f"gate-{Path(new).parent.name}"
        assert cli.main(["compare", base, new, "--out", str(out), *CONDITIONS]) == EXIT_OK


@pytest.mark.slow
def test_thresholds_are_thresholds(base: str, tmp_path: Path) -> None:
    new = _save(tmp_path / "new", _derive({"matmul": 1.5}))
    out = tmp_path / "gate"
    # 1.5x slower: 50% more time, and a share of roof a third lower (at most 60 points below
    # a share under 180%): neither passes thresholds of 60% and 60 points.
    assert cli.main(["compare", base, new, "--out", str(out), "--fail-if", "time>60%",
                     "--fail-if", "roof<-60pp"]) == EXIT_OK


@pytest.mark.slow
def test_workloads_in_one_run_only_are_listed_not_gated(base: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    data = _derive({"matmul": 1.5})
    data["workloads"] = [w for w in data["workloads"] if w["name"] != "softmax"]
    new = _save(tmp_path / "new", data)
    out = tmp_path / "gate"
    assert cli.main(["compare", base, new, "--out", str(out), *CONDITIONS]) == EXIT_REGRESSION
    err = capsys.readouterr().err
    assert "note: 1 workload only in BASE, not gated: softmax" in err
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "Not gated, only in BASE: softmax." in md
    assert '<a id="w-softmax"></a>softmax(x, axis=-1) | 1 |' in md


def _trace(kernels: list[tuple[str, float]]) -> dict[str, object]:
    """The form a traced run records: per kernel, one sample per traced call."""
    return {"available": True, "source": "host",
            "calls": [{"program_s": 1e-3, "busy_s": 1e-3, "dispatch_s": 0.0,
                       "loop_control_s": 0.0, "gaps_s": 0.0}],
            "kernels": [{"name": n, "launches": [1.0], "busy_s": [t], "span_s": [t]}
                        for n, t in kernels], "unmatched": [], "notes": []}


def test_the_gate_reads_per_kernel_times_where_they_exist() -> None:
    a = results.load(FIXTURE)
    kernels = [(f"fusion.{i}", 1e-4 * (6 - i)) for i in range(6)]
    matmul = next(i for i, w in enumerate(a["workloads"]) if w["name"] == "matmul")
    a["workloads"][matmul]["kernels"]["kernels"] = [
        {**a["workloads"][matmul]["kernels"]["kernels"][0], "name": n} for n, _ in
        [*kernels, ("copy.9", 0.0)]]
    a["workloads"][matmul]["kernel_timing"] = _trace(kernels)
    b = copy.deepcopy(a)
    b["workloads"][matmul]["kernel_timing"] = _trace([*kernels[:4], ("copy.9", 9e-4)])
    c = copy.deepcopy(b)  # a near-tie trading places: copy.9 just above BASE's fifth
    tie = _trace([*kernels[:4], ("copy.9", 2.01e-4)])
    # copy.9's first quartile below BASE's fifth (2e-4): inside the spread.
    tie["kernels"][-1]["busy_s"] = [1.5e-4, 1.5e-4, 2.01e-4, 2.01e-4, 2.5e-4]  # type: ignore[index]
    tie["kernels"][-1]["span_s"] = tie["kernels"][-1]["busy_s"]  # type: ignore[index]
    tie["kernels"][-1]["launches"] = [1.0] * 5  # type: ignore[index]
    c["workloads"][matmul]["kernel_timing"] = tie
    for doc in (a, b, c):
        for i, w in enumerate(doc["workloads"]):
            if i != matmul:
                w["kernel_timing"] = {"available": False, "reason": "not traced"}
    an, bn, cn = analyse(a), analyse(b), analyse(c)
    top5 = gate.parse("top5-new")
    tied = gate.evaluate([top5], an, cn)
    assert tied.findings[0].status == "noise" and "near-ties" in tied.findings[0].why
    found = gate.evaluate([top5], an, bn)
    assert [f.status for f in found.findings][:1] == ["regression"]
    assert found.findings[0].name == "matmul" and "copy.9" in found.findings[0].why
    assert "the 5th longest kernel of BASE" in found.findings[0].why
    matmul_b = bn.program("matmul")
    assert matmul_b is not None and gate.top_kernels(matmul_b, 2) == ["copy.9", "fusion.0"]
    softmax = bn.program("softmax")
    assert softmax is not None and gate.top_kernels(softmax, 5) is None


def test_the_gate_reads_the_traces_a_real_run_records() -> None:
    an = analyse(results.load(FIXTURE))
    p = an.program("softmax")
    assert p is not None and p.kernels is not None
    times = {r.name: r.seconds or 0.0 for r in p.kernels.rows}
    top = gate.top_kernels(p, 2)
    assert top is not None and len(top) == 2
    assert times[top[0]] >= times[top[1]] >= max(t for n, t in times.items() if n not in top)


def test_a_program_that_lost_its_timing_fails_the_gate() -> None:
    base = results.load(FIXTURE)
    new = copy.deepcopy(base)
    w = next(w for w in new["workloads"] if w["name"] == "softmax")
    w["timing"] = {"available": False, "reason": "out of memory"}
    for cond in ("time>10%", "roof<-5pp"):
        found = gate.evaluate([gate.parse(cond)], analyse(base), analyse(new))
        lost = [f for f in found.findings if f.name == "softmax"]
        assert lost and lost[0].status == "regression", cond
        assert "NEW has no timing for it while BASE had one" in lost[0].why


@pytest.mark.slow
def test_a_lost_timing_fires_the_gate_on_the_command_line(base: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    """'--fail-if time>10%' when NEW lost its timing: not 'no regression' and exit 0, but a
    regression, its line on stderr, and exit 4."""
    data = results.load(FIXTURE)
    w = next(w for w in data["workloads"] if w["name"] == "softmax")
    w["timing"] = {"available": False, "reason": "out of memory"}
    new = _save(tmp_path / "new", data)
    out = tmp_path / "gate"
    capsys.readouterr()
    assert cli.main(["compare", base, new, "--out", str(out), "--fail-if", "time>10%"]) \
        == EXIT_REGRESSION
    err = capsys.readouterr().err.splitlines()
    lost = [line for line in err if line.startswith("regression: softmax")]
    assert len(lost) == 1, err
    assert lost[0].startswith("regression: softmax (softmax(x, axis=-1)): time>10%: ")
    assert "-> not measured" in lost[0]
    assert "NEW has no timing for it while BASE had one: a lost measurement is not a pass" \
        in lost[0]
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "No regression" not in md and "workload regressed" in md


def test_the_roof_gate_checks_user_programs() -> None:
    """A user's program (no hand model) is gated on the share of the roof its prediction
    uses: slower in NEW beyond the spread is a regression."""
    base = results.load(FIXTURE)
    base["workloads"][1] = {**base["workloads"][1], "user": True, "name": "user:mine",
                            "analytic": {"available": False, "reason": "no analytic model"}}
    new = copy.deepcopy(base)
    _scale(new["workloads"][1], 2.0)
    found = gate.evaluate([gate.parse("roof<-5pp")], analyse(base), analyse(new))
    mine = [f for f in found.findings if f.name == "user:mine"]
    assert mine and mine[0].status == "regression"


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
    assert "no workload is in both runs" in line and f"NEW {new} has mine" in line
    assert f"BASE {base} has seed_tanh_matmul" in line  # each run named by its path as given


def test_the_gate_takes_exactly_two_runs(base: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    b = _save(tmp_path / "b", results.load(FIXTURE))
    c = _save(tmp_path / "c", results.load(FIXTURE))
    out = tmp_path / "gate"
    assert "exactly two" in _refused(["compare", base, b, c, "--out", str(out), *CONDITIONS],
                                     out, capsys)


def test_the_gate_reads_the_time_the_page_and_the_api_show() -> None:
    """One time per call: the gate's numbers are Program.seconds (the first quartile), the
    time the page, compare and analyze() show, not a second statistic. NEW's slow samples
    move its median 50% but its first quartile 5%: under 'time>10%' a median-based gate
    fires here while the page shows 5%; the gate must not."""
    base = results.load(FIXTURE)
    new = copy.deepcopy(base)
    for data, samples in ((base, [1.0, 1.0, 1.0, 1.0, 1.0]), (new, [1.05, 1.05, 1.5, 1.5, 1.5])):
        w = next(w for w in data["workloads"] if w["name"] == "softmax")
        w["timing"]["per_call_s"] = [x * 1e-3 for x in samples]
    a_base, a_new = analyse(base), analyse(new)
    p_base = next(p for p in a_base.programs if p.name == "softmax")
    p_new = next(p for p in a_new.programs if p.name == "softmax")
    assert p_new.timing is not None and p_new.timing.median == pytest.approx(1.5e-3)
    assert p_new.seconds == pytest.approx(1.05e-3)
    found = gate.evaluate([gate.parse("time>10%")], a_base, a_new)
    assert [f for f in found.findings if f.name == "softmax"] == []
    # Past the threshold by the page's own time, the finding states those very times.
    found = gate.evaluate([gate.parse("time>1%")], a_base, a_new)
    (f,) = [f for f in found.findings if f.name == "softmax"]
    assert f.status == "regression"
    assert f.base.text == n(p_base.seconds, "s", "measured").text
    assert f.new.text == n(p_new.seconds, "s", "measured").text
    assert f.change.text == "+5%"
